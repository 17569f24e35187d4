"""Starting the TUI: ``modscope run`` (a script in a child process), ``replay`` (a trace file) and
``demo`` (an example). Each builds a source, and the same app runs over it."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from ...events.files import TraceFileError
from .app import ModscopeApp
from .sources import ChildProcess, ReplaySource, SocketSource

EXAMPLES_DIR = Path(__file__).resolve().parents[2] / "examples"

# demo name -> (example script, arguments that keep it training until you quit)
DEMOS: dict[str, tuple[str, list[str]]] = {
    "net": ("mnist_net.py", ["--epochs", "1000"]),
    "simple": ("simple_net.py", ["--epochs", "1000"]),
    "rnn": ("rnn.py", ["--epochs", "1000"]),
    "resnet": ("resnet_tiny.py", ["--epochs", "1000"]),
    "transformer": ("transformer_tiny.py", ["--epochs", "1000"]),
    "mlp": ("mlp_mnist.py", ["--epochs", "1000"]),
}


class LaunchError(RuntimeError):
    """A problem found before the TUI starts (missing script, bad trace file): one clear line."""


def default_trace_path(script: str) -> Path:
    folder = Path.cwd() / "modscope-traces"
    folder.mkdir(exist_ok=True)
    return folder / f"{Path(script).stem}-{time.strftime('%Y%m%d-%H%M%S')}.jsonl.gz"


def run_script(script: str, args: list[str], trace_file: str | None = None, stats: bool = False) -> int:
    """Train ``script`` in a child process and watch it. Returns the child's exit status."""
    if not Path(script).is_file():
        raise LaunchError(f"no such script: {script}")
    trace_path = Path(trace_file) if trace_file else default_trace_path(script)
    try:
        trace_path.parent.mkdir(parents=True, exist_ok=True)
        trace_path.touch()
    except OSError as e:
        raise LaunchError(f"cannot write the trace file {trace_path}: {e.strerror}") from None
    source = SocketSource()
    source.description = f"live {Path(script).name}"
    child = ChildProcess(source, script, args, str(trace_path), stats=stats)
    app = ModscopeApp(source, child=child)
    try:
        app.run()
    finally:
        code = child.stop(source)
        source.stop()
    print(f"modscope: trace written to {trace_path}", file=sys.stderr)
    return code


def replay(path: str) -> int:
    try:
        source = ReplaySource(path)
    except TraceFileError as e:
        raise LaunchError(str(e)) from None
    ModscopeApp(source).run()
    return 0


def demo(name: str, trace_file: str | None = None, stats: bool = True) -> int:
    if name not in DEMOS:
        raise LaunchError(f"unknown demo model {name!r} (choose from {', '.join(DEMOS)})")
    script, args = DEMOS[name]
    path = EXAMPLES_DIR / script
    if not path.is_file():
        raise LaunchError(f"the example {path} is missing")
    return run_script(str(path), args, trace_file, stats=stats)
