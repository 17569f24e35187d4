"""``modscope web [--port P] TRACE`` and ``modscope web --demo``: the TUI in a browser tab
(``views.web``; needs ``pip install 'modscope[web]'``).

Exit status 2 for bad input, with one line on stderr and no server started: a missing or
damaged trace (naming it), a port in use (naming it), textual-serve not installed.
"""

from __future__ import annotations

import argparse
import sys


def add_command(subcommands: argparse._SubParsersAction) -> None:
    """Register ``web``."""
    from ..views.tui.launch import DEMOS
    from ..views.web import DEFAULT_HOST, DEFAULT_PORT

    p = subcommands.add_parser(
        "web", help="serve the TUI to a browser tab (a trace, or the demo)",
        description="Serve the TUI to a browser tab with textual-serve: each tab opened on the address runs its own "
                    "viewer (modscope replay TRACE, or the demo training), and every key works as in the terminal. "
                    "Binds 127.0.0.1 unless --host says otherwise. Needs: pip install 'modscope[web]'.",
        epilog="Exit status 2 on bad input (a missing or damaged trace, a port in use), before any server starts.")
    p.add_argument("trace", metavar="TRACE", nargs="?", help="the trace file to replay (.jsonl or .jsonl.gz)")
    p.add_argument("--compare", metavar="B", help="compare each step with the same step of trace B (as replay)")
    p.add_argument("--demo", nargs="?", const="net", choices=list(DEMOS), metavar="MODEL",
                   help=f"serve the demo instead of a trace (training MODEL, default net; one of {', '.join(DEMOS)})")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port to listen on (default {DEFAULT_PORT})")
    p.add_argument("--host", default=DEFAULT_HOST,
                   help=f"address to listen on (default {DEFAULT_HOST}: this machine only)")
    p.set_defaults(run=_run)


def _error(message: str) -> int:
    print(f"modscope web: error: {message}", file=sys.stderr)
    return 2


def _run(args: argparse.Namespace) -> int:
    from ..events.files import TraceFileError
    from ..views.web import WebError, check, serve, viewer_command

    if (args.trace is None) == (args.demo is None):
        return _error("give a TRACE file or --demo (one of them)")
    if args.compare and args.demo is not None:
        return _error("--compare goes with a TRACE, not with --demo")
    try:
        check(args.trace, args.compare, args.host, args.port)
    except (TraceFileError, WebError) as e:
        return _error(str(e))
    command = viewer_command(args.trace, compare=args.compare, demo=args.demo)
    what = f"the demo ({args.demo})" if args.demo is not None else args.trace
    print(f"modscope web: serving {what} on http://{args.host}:{args.port} (each tab runs its own viewer; "
          "ctrl+c stops)", file=sys.stderr, flush=True)
    serve(command, host=args.host, port=args.port, title=f"modscope: {what}")
    return 0
