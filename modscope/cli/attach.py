"""``modscope attach HOST:PORT``: open the TUI on a job that ``modscope record --serve`` runs.

The job's secret is read from the owner-only file the job wrote for this user
(``~/.modscope/attach/PORT.secret``), or from ``--token-file`` (a copy of it, for a job on another
machine reached through an SSH tunnel); never from a command line. Quitting the viewer detaches;
the job goes on, and another ``attach`` may follow.
"""

from __future__ import annotations

import argparse

from .failure import fail


def add_command(subcommands: argparse._SubParsersAction) -> None:
    """Register ``attach``."""
    p = subcommands.add_parser(
        "attach", help="open the TUI on a running job (modscope record --serve)",
        description="Open the TUI on a job started with `modscope record --serve [HOST:]PORT`: the history the job "
                    "kept, then live events. Quitting the viewer detaches; training goes on.",
        epilog="Remote job: ssh -N -L 7010:127.0.0.1:7010 HOST, copy its ~/.modscope/attach/7010.secret here "
               "(chmod 600), then: modscope attach 127.0.0.1:7010 --token-file 7010.secret")
    p.add_argument("address", metavar="[HOST:]PORT", help="where the job serves (HOST defaults to 127.0.0.1)")
    p.add_argument("--token-file", metavar="FILE",
                   help="the job's secret file (default: ~/.modscope/attach/PORT.secret, written by the job)")
    p.set_defaults(run=_run)


def open_source(address: str, token_file: str | None = None):  # noqa: ANN201 - an AttachSource
    """The ``AttachSource`` for ``address``, its secret read from ``token_file`` or the job's
    file; ``ValueError``/``OSError`` (``SecretFileError``, ``ConnectionError``) naming what failed."""
    from ..events.serve import parse_address, read_secret, secret_path
    from ..views.tui.sources import AttachSource

    host, port = parse_address(address)
    secret = read_secret(token_file if token_file else secret_path(port))
    # a job of several ranks serves local rank R on PORT + R: the same --token-file (one secret
    # for the job under --nproc-per-node), else each port's own secret file
    return AttachSource(host, port, secret,
                        secret_for=(lambda _port: secret) if token_file else (lambda p: read_secret(secret_path(p))))


def _run(args: argparse.Namespace) -> int:
    try:
        source = open_source(args.address, args.token_file)
    except (ValueError, OSError) as e:
        return fail("attach", str(e))
    from ..views.tui.app import ModscopeApp
    from ..views.tui.driver import typeahead_driver

    app = ModscopeApp(source)
    typeahead_driver(app)  # keys typed after q reach the shell
    try:
        app.run()
    finally:
        source.stop()
    return 0
