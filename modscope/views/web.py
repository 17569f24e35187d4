"""``modscope web``: the TUI in a browser tab, served by textual-serve (``pip install
'modscope[web]'``).

textual-serve starts one viewer process per browser tab (the command ``viewer_command`` builds:
``modscope replay TRACE``, ``modscope demo``, or ``modscope attach HOST:PORT`` for a running job)
and relays its screen and your keys over a websocket, so every key works as in the terminal (the
viewer's driver, ``tui.web_driver.DiffWebDriver``, sends only the cells that changed, and takes a
lone ESC as the escape key at once). The server binds 127.0.0.1 unless asked otherwise.
Everything that can be wrong is checked before a server starts (``check``, ``check_job``): a
missing or damaged trace (``TraceFileError``, naming it), a port in use or not to be had
(``WebError``, naming the port), textual-serve not installed (``WebError``, saying how), a job
that is not there or does not take its secret (``WebError``).

A tab on a running job is a viewer like ``modscope attach`` in a terminal: its own process,
outside the job, reading the job's secret from the owner-only file (the job's own, or the
``--token-file`` given), never from its command line; the job never waits for it.

The page textual-serve serves asks Google for a web font, and the browser asks for
``/favicon.ico``, which textual-serve does not serve (a 404 in the console); the copy of its
template served here leaves the font out (the terminal uses the font textual-serve ships) and
carries its icon inline, so the page makes no request beyond this server and none fails.
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
# the tab's icon, inline (no request): modscope's magnifier over a module box, in the page's colours
ICON = ('<link rel="icon" href="data:image/svg+xml,'
        "%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 16 16'%3E"
        "%3Crect width='16' height='16' rx='3' fill='%230c181f'/%3E"
        "%3Crect x='2' y='2' width='8' height='6' fill='none' stroke='%2300b4d8'/%3E"
        "%3Ccircle cx='9.5' cy='9.5' r='3' fill='none' stroke='%23ffffff' stroke-width='1.5'/%3E"
        "%3Cpath d='M11.6 11.6L14 14' stroke='%23ffffff' stroke-width='1.5'/%3E%3C/svg%3E\" />")
PROBE_TIMEOUT = 3.0  # seconds a job has to either send its history or close on a wrong secret


class WebError(RuntimeError):
    """``modscope web`` cannot start: the message says why in one line."""


def viewer_command(trace: str | None = None, *, compare: str | None = None, demo: str | None = None,
                   attach: str | None = None, token_file: str | None = None) -> str:
    """The shell command textual-serve runs for each tab: this interpreter's ``modscope replay``
    of ``trace`` (with ``--compare``), ``modscope demo --model DEMO``, or ``modscope attach
    ATTACH`` (with ``--token-file``, as an absolute path: the name of the secret's file, never
    the secret)."""
    argv = [sys.executable, "-m", "modscope"]
    if attach is not None:
        argv += ["attach", attach] + (["--token-file", str(Path(token_file).absolute())] if token_file else [])
    elif demo is not None:
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


def check_job(address: str, token_file: str | None = None, timeout: float = PROBE_TIMEOUT) -> str:
    """That a job serves on ``address`` (``[HOST:]PORT``) and takes its secret (read from
    ``token_file`` or the job's file, as ``modscope attach`` reads it): connects as a viewer
    would and detaches once the job answers with its history, or stays silent for ``timeout``
    seconds (it accepted and has nothing yet). ``WebError`` naming the address, or the secret's
    file, otherwise. Returns ``HOST:PORT``."""
    from ..events.serve import parse_address, read_secret, secret_path

    try:
        host, port = parse_address(address)
        secret = read_secret(token_file if token_file else secret_path(port))
    except (ValueError, OSError) as e:
        raise WebError(str(e)) from None
    where = f"{host}:{port}"
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
    except OSError as e:
        raise WebError(f"no job serves on {where} ({e.strerror or e}): start it with "
                       f"modscope record --serve {port}") from None
    with sock:
        try:
            sock.sendall(secret.encode() + b"\n")
            answered = sock.recv(1) != b""
        except TimeoutError:
            answered = True  # accepted: a job that has sent nothing yet
        except OSError:
            answered = False
    if not answered:
        raise WebError(f"the job on {where} closed the connection: a wrong secret (its file is "
                       f"{token_file or secret_path(port)}), or it has as many viewers as it takes")
    return where


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
    """textual-serve's page template without its web-font link and with the inline icon, in a
    private directory."""
    import textual_serve

    source = Path(textual_serve.__file__).parent / "templates"
    folder = Path(tempfile.mkdtemp(prefix="modscope-web-"))
    for page in source.iterdir():
        if page.is_file():
            html = _FONT_LINK.sub("", page.read_text(encoding="utf-8")).replace("<head>", f"<head>\n    {ICON}", 1)
            (folder / page.name).write_text(html, encoding="utf-8")
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
