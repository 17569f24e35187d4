"""Starting the TUI: ``modscope run`` (a script in a child process), ``replay`` (a trace file) and
``demo`` (an example). Each builds a source, and the same app runs over it.

The child traces the framework ``backend`` names: ``"auto"`` (torch when the script imports
torch, else the bundled engine; the child decides), ``"engine"`` or ``"torch"``. The demos run
under either: an example given ``--backend torch`` swaps its engine imports for torch's (see
``examples/_backend.py``), so the child is told to trace torch.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

from ...events.files import TraceFileError
from .app import ModscopeApp
from .sources import ChildProcess, ReplaySource, SocketSource

EXAMPLES_DIR = Path(__file__).resolve().parents[3] / "examples"  # the repository's examples/

BACKENDS = ("auto", "engine", "torch")
DEMO_BACKENDS = ("engine", "torch")
TORCH_INSTALL = "pip install 'modscope[torch]'"

# demo name -> (example script, arguments that keep it training until you quit)
DEMOS: dict[str, tuple[str, list[str]]] = {
    "net": ("mnist_net.py", ["--epochs", "1000"]),
    "simple": ("simple_net.py", ["--epochs", "1000"]),
    "rnn": ("rnn.py", ["--epochs", "1000"]),
    "resnet": ("resnet_tiny.py", ["--epochs", "1000"]),
    "transformer": ("transformer_tiny.py", ["--epochs", "1000"]),
    "mlp": ("mlp_mnist.py", ["--epochs", "1000"]),
}
# Demos without nn.Module models or a --backend flag: they run on the engine only.
ENGINE_ONLY_DEMOS = frozenset({"mlp"})


class LaunchError(RuntimeError):
    """A problem found before the TUI starts (missing script, bad trace file): one clear line."""


def torch_installed() -> bool:
    """Whether PyTorch can be imported (found without importing it)."""
    return importlib.util.find_spec("torch") is not None


def check_framework(framework: str) -> None:
    """``LaunchError`` saying how to install PyTorch when ``framework`` is torch and it is missing."""
    if framework == "torch" and not torch_installed():
        raise LaunchError(f"this needs PyTorch, which is not installed: {TORCH_INSTALL}")


def default_trace_path(script: str, tag: str = "") -> Path:
    """``modscope-traces/SCRIPT[-TAG]-TIME.jsonl.gz`` under the current directory (created)."""
    folder = Path.cwd() / "modscope-traces"
    folder.mkdir(exist_ok=True)
    stem = Path(script).stem + (f"-{tag}" if tag else "")
    return folder / f"{stem}-{time.strftime('%Y%m%d-%H%M%S')}.jsonl.gz"


def start_child(source: SocketSource, script: str, args: list[str], trace_file: str | None,
                stats: bool = False, backend: str = "auto") -> ChildProcess:
    """Start the traced child for ``script``: it connects to ``source`` and traces ``backend``."""
    if backend not in BACKENDS:
        raise LaunchError(f"unknown backend {backend!r} (choose from {', '.join(BACKENDS)})")
    return ChildProcess(source, script, args, trace_file, stats=stats, backend=backend)


def run_script(script: str, args: list[str], trace_file: str | None = None, stats: bool = False,
               backend: str = "auto", trace_tag: str = "") -> int:
    """Train ``script`` in a child process and watch it. Returns the child's exit status."""
    if not Path(script).is_file():
        raise LaunchError(f"no such script: {script}")
    check_framework(backend)
    trace_path = Path(trace_file) if trace_file else default_trace_path(script, trace_tag)
    try:
        trace_path.parent.mkdir(parents=True, exist_ok=True)
        trace_path.touch()
    except OSError as e:
        raise LaunchError(f"cannot write the trace file {trace_path}: {e.strerror}") from None
    source = SocketSource()
    source.description = f"live {Path(script).name}" + (f" ({backend})" if backend != "auto" else "")
    child = start_child(source, script, args, str(trace_path), stats=stats, backend=backend)
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


def demo_command(name: str, backend: str = "engine") -> tuple[Path, list[str]]:
    """The example script of demo ``name`` and its arguments under ``backend``; ``LaunchError``
    for an unknown demo or backend, or a demo that cannot run under ``backend``."""
    if name not in DEMOS:
        raise LaunchError(f"unknown demo model {name!r} (choose from {', '.join(DEMOS)})")
    if backend not in DEMO_BACKENDS:
        raise LaunchError(f"unknown demo backend {backend!r} (choose from {', '.join(DEMO_BACKENDS)})")
    if backend != "engine" and name in ENGINE_ONLY_DEMOS:
        usable = ", ".join(d for d in DEMOS if d not in ENGINE_ONLY_DEMOS)
        raise LaunchError(f"the {name} demo runs on the engine only (no nn.Module); under {backend} choose "
                          f"from {usable}")
    script, args = DEMOS[name]
    path = EXAMPLES_DIR / script
    if not path.is_file():
        raise LaunchError(f"the example {path} is missing")
    return path, [*args, "--backend", backend] if backend != "engine" else list(args)


def demo(name: str, trace_file: str | None = None, stats: bool = True, backend: str = "engine") -> int:
    """Train demo ``name`` under ``backend`` (``"engine"`` or ``"torch"``) with the live TUI."""
    path, args = demo_command(name, backend)
    check_framework(backend)
    tag = backend if backend != "engine" else ""
    return run_script(str(path), args, trace_file, stats=stats, backend=backend, trace_tag=tag)
