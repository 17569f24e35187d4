"""``modscope web``: the TUI in a browser tab, served by textual-serve (``pip install
'modscope[web]'``).

textual-serve starts one viewer process per browser tab (the command ``viewer_command`` builds:
``modscope replay TRACE`` or ``modscope demo``) and relays its screen and your keys over a
websocket, so every key works as in the terminal. The server binds 127.0.0.1 unless asked
otherwise. Everything that can be wrong is checked before a server starts (``check``): a missing
or damaged trace (``TraceFileError``, naming it), a port in use or not to be had
(``WebError``, naming the port), textual-serve not installed (``WebError``, saying how).

The page textual-serve serves asks Google for a web font; the copy of its template served here
leaves that out (the terminal uses the font textual-serve ships), so the page makes no request
beyond this server.
"""

from __future__ import annotations

import errno
import importlib.util
import re
import shlex
import socket
import sys
import tempfile
from pathlib import Path

from ..events.files import TraceFileError  # noqa: F401  (what ``check`` raises for a bad trace)
from .trace import load_trace

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
INSTALL = "pip install 'modscope[web]'"
_FONT_LINK = re.compile(r"<link\b[^>]*fonts\.googleapis\.com[^>]*>", re.S)


class WebError(RuntimeError):
    """``modscope web`` cannot start: the message says why in one line."""


def viewer_command(trace: str | None = None, *, compare: str | None = None, demo: str | None = None) -> str:
    """The shell command textual-serve runs for each tab: this interpreter's ``modscope replay``
    of ``trace`` (with ``--compare``), or ``modscope demo --model DEMO``."""
    argv = [sys.executable, "-m", "modscope"]
    if demo is not None:
        argv += ["demo", "--model", demo]
    else:
        argv += ["replay", str(trace)] + (["--compare", str(compare)] if compare else [])
    return shlex.join(argv)


def check(trace: str | None, compare: str | None, host: str, port: int) -> None:
    """Everything ``serve`` needs, checked before it starts: textual-serve importable, the traces
    complete (``TraceFileError`` naming the file), the port free on ``host`` (``WebError``)."""
    if importlib.util.find_spec("textual_serve") is None:
        raise WebError(f"this needs textual-serve, which is not installed: {INSTALL}")
    for path in (trace, compare):
        if path is not None:
            load_trace(path)
    check_port(host, port)


def check_port(host: str, port: int) -> None:
    """``WebError`` naming ``port`` when it cannot be bound on ``host`` (in use, or not allowed)."""
    if not 0 < port < 65536:
        raise WebError(f"port {port} is not a TCP port (1-65535)")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as e:
        raise WebError(f"cannot listen on {host}: {e.strerror}") from None
    family, _, _, _, address = infos[0]
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as aiohttp binds: TIME_WAIT is no conflict
        try:
            s.bind(address)
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                raise WebError(f"port {port} on {host} is in use: choose another with --port") from None
            raise WebError(f"cannot listen on {host} port {port}: {e.strerror}") from None


def _templates() -> Path:
    """textual-serve's page template without its web-font link, in a private directory."""
    import textual_serve

    source = Path(textual_serve.__file__).parent / "templates"
    folder = Path(tempfile.mkdtemp(prefix="modscope-web-"))
    for page in source.iterdir():
        if page.is_file():
            (folder / page.name).write_text(_FONT_LINK.sub("", page.read_text(encoding="utf-8")), encoding="utf-8")
    return folder


def serve(command: str, *, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, title: str = "modscope") -> None:
    """Serve ``command`` (one process per tab) on ``http://host:port`` until interrupted."""
    from textual_serve.server import Server

    templates = _templates()
    try:
        Server(command, host=host, port=port, title=title, templates_path=str(templates)).serve()
    finally:
        for page in templates.iterdir():
            page.unlink()
        templates.rmdir()
