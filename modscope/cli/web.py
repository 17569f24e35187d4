"""``modscope web [--port P] TRACE``, ``modscope web --demo`` and ``modscope web --attach
[HOST:]PORT``: the TUI in a browser tab (``views.web``; needs ``pip install 'modscope[web]'``).

Exit status 2 for bad input, with one line on stderr and no server started: a missing or
damaged trace (naming it), a port in use (naming it), textual-serve not installed, no job on the
attach address or one that refuses the secret (naming the address or the secret's file).
"""

from __future__ import annotations

import argparse
import sys

from .failure import fail


def add_command(subcommands: argparse._SubParsersAction) -> None:
    """Register ``web``."""
    from ..views.tui.launch import DEMOS
    from ..views.web import DEFAULT_HOST, DEFAULT_PORT

    p = subcommands.add_parser(
        "web", help="serve the TUI to a browser tab (a trace, the demo, or a running job)",
        description="Serve the TUI to a browser tab with textual-serve: each tab opened on the address runs its own "
                    "viewer (modscope replay TRACE, the demo training, or modscope attach to a job that "
                    "modscope record --serve runs), and every key works as in the terminal. Binds 127.0.0.1 unless "
                    "--host says otherwise. Needs: pip install 'modscope[web]'.",
        epilog="Exit status 2 on bad input (a missing or damaged trace, a port in use), before any server starts.")
    p.add_argument("trace", metavar="TRACE", nargs="?", help="the trace file to replay (.jsonl or .jsonl.gz)")
    p.add_argument("--compare", metavar="B", help="compare each step with the same step of trace B (as replay)")
    p.add_argument("--demo", nargs="?", const="net", choices=list(DEMOS), metavar="MODEL",
                   help=f"serve the demo instead of a trace (training MODEL, default net; one of {', '.join(DEMOS)})")
    p.add_argument("--attach", metavar="[HOST:]PORT",
                   help="serve a live view of the job that `modscope record --serve` runs there (each tab attaches "
                        "to it as `modscope attach` does; the job goes on when the tab closes)")
    p.add_argument("--token-file", metavar="FILE",
                   help="with --attach: the job's secret file (default: ~/.modscope/attach/PORT.secret)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port to listen on (default {DEFAULT_PORT})")
    p.add_argument("--host", default=DEFAULT_HOST,
                   help=f"address to listen on (default {DEFAULT_HOST}: this machine only)")
    p.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    from ..events.files import TraceFileError
    from ..views.web import WebError, check, check_job, serve, viewer_command

    if sum(x is not None for x in (args.trace, args.demo, args.attach)) != 1:
        return fail("web", "give a TRACE file, --demo or --attach (one of them)")
    if args.compare and args.trace is None:
        return fail("web", "--compare goes with a TRACE, not with --demo or --attach")
    if args.token_file and args.attach is None:
        return fail("web", "--token-file goes with --attach")
    try:
        check(args.trace, args.compare, args.host, args.port)
        job = check_job(args.attach, args.token_file) if args.attach is not None else None
    except (TraceFileError, WebError) as e:
        return fail("web", str(e))
    command = viewer_command(args.trace, compare=args.compare, demo=args.demo, attach=job, token_file=args.token_file)
    what = f"the demo ({args.demo})" if args.demo is not None else f"the job on {job}" if job else args.trace
    print(f"modscope web: serving {what} on http://{args.host}:{args.port} (each tab runs its own viewer; "
          "ctrl+c stops)", file=sys.stderr, flush=True)
    serve(command, host=args.host, port=args.port, title=f"modscope: {what}")
    return 0
