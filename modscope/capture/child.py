"""Runs a user's training script under tracing, streaming to a viewer: the child of
``modscope run`` / ``modscope demo``. Not meant to be started by hand.

    MODSCOPE_TOKEN=TOKEN python -m modscope.capture.child --connect SOCKET [--trace-file F] [--stats] SCRIPT [ARGS...]

The session's token comes in the environment (``MODSCOPE_TOKEN``), never on the command line
(``/proc/PID/cmdline`` is readable by every local user), and is taken out of ``os.environ``
before the user's script runs, so neither the script nor the processes it starts see it.

The script runs as ``__main__`` with its own ``sys.argv``; the framework's global module hooks
find every model that runs (``modscope.watch(model)`` in the script narrows it to one). Which
framework: ``--backend``, or by default torch when the script imports torch (``import torch``,
``from torch ...``), else the bundled engine. On exit,
normal or not, the trace is closed so the trace file is complete; an exception in the script
becomes an ``error`` event with its traceback (and exit code 1). SIGTERM and SIGHUP (the terminal
closed) stop the script like Ctrl-C: the trace is closed, the trace file complete.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import runpy
import signal
import sys
import traceback
from collections.abc import MutableMapping

from ..events.sinks import TOKEN_VARIABLE, BackgroundSink, JsonlSink, SocketSink, TeeSink
from ..events.trace_paths import rank_path
from ..install_hints import TORCH_INSTALL
from . import session  # noqa: F401 - the process-wide trace lives there
from .compiled import eager_from_env
from .control import Controller
from .params import exact_stats_from_env
from .ranks import RankEnvironmentError, rank_from_env
from .recorder import Recorder
from .sampling import DEFAULT_EVERY, ENV_VARIABLE, DetailPolicy

# ``import torch``, ``import torch.nn as nn``, ``from torch import nn`` at the start of a line.
_TORCH_IMPORT = re.compile(r"^\s*(import|from)\s+torch(?=[\s.,]|$)", re.MULTILINE)


def script_framework(path: str) -> str:
    """``"torch"`` when the script at ``path`` imports torch, else ``"engine"``."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            source = f.read()
    except OSError:
        return "engine"  # runpy reports the missing file
    return "torch" if _TORCH_IMPORT.search(source) else "engine"


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m modscope.capture.child")
    parser.add_argument("--connect", required=True, help="the viewer's Unix socket path (the session's token "
                                                         f"comes in ${TOKEN_VARIABLE})")
    parser.add_argument("--trace-file")
    parser.add_argument("--stats", action="store_true")
    parser.add_argument("--backend", choices=("auto", "engine", "torch"), default="auto")
    parser.add_argument("script")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    return parser.parse_args(argv)


_stopped_by: list[int] = []  # the signal that stopped the script, if one did


def _interrupt(signum: int, frame: object) -> None:
    if not _stopped_by:
        _stopped_by.append(signum)
    raise KeyboardInterrupt(f"signal {signum}")


def take_token(environ: MutableMapping[str, str] = os.environ) -> str | None:
    """The session's token, removed from ``environ`` (for ``os.environ`` this unsets it in the
    process too, so the processes the script starts do not inherit it)."""
    return environ.pop(TOKEN_VARIABLE, None) or None


def main(argv: list[str] | None = None) -> int:
    token = take_token()  # first: nothing below may leave it in the environment
    opts = _parse(sys.argv[1:] if argv is None else argv)
    if token is None:
        print(f"modscope: no session token: ${TOKEN_VARIABLE} is not set (this process is started by "
              "`modscope run`, which sets it)", file=sys.stderr)
        return 2
    try:
        origin = rank_from_env()
    except RankEnvironmentError as e:
        print(f"modscope: {e}", file=sys.stderr)
        return 2
    # Ranks (``modscope run --nproc-per-node``): every rank streams to the viewer and takes its
    # controls (the viewer holds them all at one step boundary, ``views.tui.ranks.RankHold``), and
    # records its own file beside the trace file (``events.trace_paths``).
    controller = Controller()
    try:
        socket_sink = SocketSink(opts.connect, token, on_control=controller.handle)
    except ConnectionError as e:
        print(f"modscope: {e}", file=sys.stderr)
        return 2
    trace_file = rank_path(opts.trace_file, origin["rank"]) if opts.trace_file and origin else opts.trace_file
    # The trace file is written on a thread of its own: compression and disk I/O stay out of
    # the training loop (the viewer shows everything live anyway).
    file_sink = BackgroundSink(JsonlSink(trace_file)) if trace_file else None
    try:
        backend = import_framework(opts.script, opts.backend)
        # which steps to watch in full: `modscope run --every/--full`, passed in the environment
        # (torch's launcher hands it on to every rank); unset: modscope's defaults
        policy = DetailPolicy.from_env(os.environ.pop(ENV_VARIABLE, None)) or DetailPolicy(DEFAULT_EVERY)
        eager = eager_from_env()  # `modscope run --eager-full`
        exact_stats = exact_stats_from_env()  # `modscope run --exact-stats`
    except (ImportError, ValueError) as e:
        print(f"modscope: {e}", file=sys.stderr)
        return 2
    tr = Recorder(None, stats=opts.stats, sink=TeeSink(socket_sink, file_sink), max_events=1000,
                  observer=controller, backend=backend, every=policy.every, first=policy.first, eager=eager,
                  exact_stats=exact_stats)
    controller.trace = tr
    code, _ = run_traced(tr, opts.script, opts.args)
    return code


def import_framework(script: str, backend: str = "auto") -> str:
    """The framework to trace for ``script`` (``backend``, or for ``"auto"`` torch when the
    script imports torch, else the engine), imported now: its global hooks must exist before
    the script runs. ``ImportError`` saying how to install it when it cannot be imported."""
    framework = script_framework(script) if backend == "auto" else backend
    try:
        importlib.import_module(framework)
    except ImportError as e:
        raise ImportError(f"the script needs {framework}, which cannot be imported ({e}); "
                          "install it with: " + TORCH_INSTALL) from None
    return framework


def run_traced(tr: Recorder, script: str, args: list[str], *,
               stop_signals: tuple[int, ...] = ()) -> tuple[int, int | None]:
    """Run ``script`` as ``__main__`` with ``args`` under ``tr`` (the process-wide session of
    ``modscope.watch``/``log``), started here and closed on every way out so its files are
    complete. SIGTERM and SIGHUP (the terminal closed), and ``stop_signals``, stop the script as
    Ctrl-C does. Returns ``(exit code, signal)``: the script's exit code (1 for an exception, whose
    traceback becomes an ``error`` event and is printed; 0 when stopped), and the signal that
    stopped it, if one did."""
    session.active = tr
    _stopped_by.clear()
    for signum in (signal.SIGTERM, *stop_signals):
        signal.signal(signum, _interrupt)
    if signal.getsignal(signal.SIGHUP) is not signal.SIG_IGN:  # (under nohup it stays ignored)
        signal.signal(signal.SIGHUP, _interrupt)  # the terminal closed: end the trace cleanly too
    script = os.path.abspath(script)
    sys.argv = [script, *args]
    sys.path.insert(0, os.path.dirname(script))
    code = 0
    tr.start()
    try:
        runpy.run_path(script, run_name="__main__")
    except KeyboardInterrupt:
        pass  # stopped by the viewer, a signal or Ctrl-C: a clean end
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException as e:  # noqa: BLE001 - report anything the script raises
        tr._emit_error(e, where="user script", module=tr._current_path())
        traceback.print_exc()
        code = 1
    finally:
        tr.close()
    return code, (_stopped_by[0] if _stopped_by else None)


if __name__ == "__main__":
    raise SystemExit(main())
