"""Starting the TUI: ``modscope run`` (a script in a child process), ``replay`` (a trace file) and
``demo`` (an example). Each builds a source, and the same app runs over it.

The child traces the framework ``backend`` names: ``"auto"`` (torch when the script imports
torch, else the bundled engine; the child decides), ``"engine"`` or ``"torch"``. The demos run
under either: an example given ``--backend torch`` swaps its engine imports for torch's (see
``modscope/examples/_backend.py``), so the child is told to trace torch.

``run`` leaves nothing behind on any way out (``Teardown``): the app quitting, an exception,
SIGHUP (the terminal closed), SIGTERM or the interpreter exiting all stop the child (its trace
file complete) and remove the socket's private directory. Its exit status is the child's, as a
shell reports it: 137 for a child killed by SIGKILL (128 + the signal's number); 129 or 143 when
``modscope`` itself got SIGHUP or SIGTERM.
"""

from __future__ import annotations

import asyncio
import atexit
import importlib.util
import os
import signal
import sys
import termios
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

from ...events.files import TraceFileError
from ...examples import EXAMPLES_DIR
from ...install_hints import TORCH_INSTALL
from .app import ModscopeApp
from .compare import OtherTrace
from .driver import typeahead_driver
from .exit_report import print_exit_report
from .sources import ChildProcess, ReplaySource, SocketSource

EXIT_SIGNALS = (signal.SIGHUP, signal.SIGTERM)  # the terminal closed; asked to terminate

BACKENDS = ("auto", "engine", "torch")
DEMO_BACKENDS = ("engine", "torch")

# demo name -> (example script, arguments that keep it training until you quit)
DEMOS: dict[str, tuple[str, list[str]]] = {
    "net": ("mnist_net.py", ["--epochs", "1000"]),
    "simple": ("simple_net.py", ["--epochs", "1000"]),
    "rnn": ("rnn.py", ["--epochs", "1000"]),
    "resnet": ("resnet_tiny.py", ["--epochs", "1000"]),
    "transformer": ("transformer_tiny.py", ["--epochs", "1000"]),
    "mlp": ("mlp.py", ["--epochs", "1000"]),
}


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
                stats: bool = False, backend: str = "auto", nproc: int | None = None, nice: int = 0) -> ChildProcess:
    """Start the traced child for ``script``: it connects to ``source`` and traces ``backend``
    (``nproc``: that many ranks through torch's elastic launcher; the viewer follows rank 0;
    ``nice``: the demo's lower priority, ``DEMO_NICE``)."""
    if backend not in BACKENDS:
        raise LaunchError(f"unknown backend {backend!r} (choose from {', '.join(BACKENDS)})")
    return ChildProcess(source, script, args, trace_file, stats=stats, backend=backend, nproc=nproc, nice=nice)


class Teardown:
    """Stops the child (asking it first, so its trace file is complete) and closes the socket
    source (removing its private directory): once, on whichever way out comes first. ``signum``
    is the exit signal that started it, if one did."""

    def __init__(self, source: SocketSource, child: ChildProcess) -> None:
        self.source, self.child = source, child
        self.started = False
        self.code: int | None = None
        self.signum: int | None = None

    def __call__(self) -> int | None:
        if self.started:  # (no lock: a signal handler runs on the main thread, which may be in here)
            return self.code
        self.started = True
        try:
            self.code = self.child.stop(self.source)
        finally:
            self.source.stop()
        return self.code


@contextmanager
def exit_signals(handler: Callable[[int, FrameType | None], None]) -> Iterator[None]:
    """``handler`` for ``EXIT_SIGNALS`` while the block runs (the previous handlers after)."""
    previous = {sig: signal.signal(sig, handler) for sig in EXIT_SIGNALS}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _leave_on_signal(app: ModscopeApp, teardown: Teardown) -> Callable[[int, FrameType | None], None]:
    """The handler of an exit signal: tear down first (nothing must be left behind, whatever
    happens to the terminal next), then let the app leave the terminal as it found it."""

    def handler(signum: int, frame: FrameType | None) -> None:
        if teardown.signum is None:
            teardown.signum = signum
        if teardown.started:
            return  # the main thread is tearing down already and exits right after
        teardown()
        if signum == signal.SIGHUP and not _terminal_alive():
            # The terminal hung up: there is nothing to restore, and Textual must not try (its
            # writer thread dies of EIO on a hung-up terminal, and its shutdown then blocks
            # forever on the writer's full queue). Everything that matters is done above.
            os._exit(128 + signum)
        try:  # the app's loop, when the signal came while it runs: it leaves the terminal tidy
            asyncio.get_running_loop().call_soon_threadsafe(app.exit, None, 128 + signum)
        except RuntimeError:  # no loop (yet, or any more): leave from here
            raise SystemExit(128 + signum) from None

    return handler


def _terminal_alive() -> bool:
    """Whether the terminal the app draws on is still there (after a hangup its attributes
    cannot be read: EIO)."""
    for stream in (sys.__stderr__, sys.__stdout__, sys.__stdin__):
        try:
            termios.tcgetattr(stream.fileno())
        except (termios.error, OSError, ValueError, AttributeError):
            continue
        return True
    return False


def run_script(script: str, args: list[str], trace_file: str | None = None, stats: bool = False,
               backend: str = "auto", trace_tag: str = "", nproc: int | None = None, nice: int = 0) -> int:
    """Train ``script`` in a child process and watch it. Returns the child's exit status (128 +
    N for a child killed by signal N), or 128 + N when an exit signal N stopped ``modscope``.
    ``nproc``: start that many ranks through torch's elastic launcher (torch needed); the viewer
    follows rank 0, every rank records its own file beside the trace file."""
    if not Path(script).is_file():
        raise LaunchError(f"no such script: {script}")
    check_framework(backend)
    if nproc:
        check_framework("torch")  # torch.distributed.run starts the ranks
    trace_path = Path(trace_file) if trace_file else default_trace_path(script, trace_tag)
    try:
        trace_path.parent.mkdir(parents=True, exist_ok=True)
        trace_path.touch()
    except OSError as e:
        raise LaunchError(f"cannot write the trace file {trace_path}: {e.strerror}") from None
    source = SocketSource(ranks=nproc or 1)  # every rank connects, each with the session's token
    source.description = f"live {Path(script).name}" + (f" ({backend})" if backend != "auto" else "")
    try:
        child = start_child(source, script, args, str(trace_path), stats=stats, backend=backend, nproc=nproc,
                            nice=nice)
    except BaseException:
        source.stop()
        raise
    teardown = Teardown(source, child)
    atexit.register(teardown)
    app = ModscopeApp(source, child=child)
    typeahead_driver(app)  # keys typed after q reach the shell
    try:
        with exit_signals(_leave_on_signal(app, teardown)):
            app.run()
    finally:
        code = teardown()
        atexit.unregister(teardown)
    if app.return_code and teardown.signum is None:  # the viewer itself failed (Textual printed why)
        _say(f"modscope: the viewer stopped on an error; the training program was stopped and its trace "
             f"written to {trace_path}")
        return app.return_code
    if teardown.signum is not None:
        name = signal.Signals(teardown.signum).name
        _say(f"modscope: stopped by {name}; the training program was stopped and its trace written to {trace_path}")
        return 128 + teardown.signum
    code = 0 if code is None else code
    with app.state.lock:
        errors = list(app.state.errors)
    print_exit_report(script, list(child.log), errors)  # the TUI took the screen: its output and traceback
    raw = child.returncode  # negative: killed by that signal
    if raw is not None and raw < 0:
        _say(f"modscope: the training program was killed by {_signal_name(-raw)} (exit status {code}); its "
             f"trace {trace_path} ends where it was cut off")
    else:
        _say(f"modscope: trace written to {trace_path}")
    return code


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def _say(message: str) -> None:
    """One line on stderr, if there still is one (after SIGHUP the terminal is gone)."""
    try:
        print(message, file=sys.stderr, flush=True)
    except OSError:
        pass


def replay(path: str, compare: str | None = None) -> int:
    """Open the TUI on trace ``path``; with ``compare``, each step shown is compared with the same
    step of that trace (``CompareError`` naming it when it cannot be read: checked before the app starts)."""
    try:
        source = ReplaySource(path)
    except TraceFileError as e:
        raise LaunchError(str(e)) from None
    other = OtherTrace(compare) if compare is not None else None
    app = ModscopeApp(source, compare=other)
    typeahead_driver(app)
    app.run()
    return app.return_code or 0  # non-zero: the viewer failed, and Textual printed why


# The demo's training runs at this niceness (``os.setpriority``), a user's program never. The demo
# is there to show the viewer: its training has no speed to keep, and on 2 cores it took one
# whole core while a key's screen needed the viewer, and under ``modscope web --demo`` also
# textual-serve and the browser, at once. At niceness 10 it runs on what they leave (and yields
# to the machine's other work too, which for a demo is no loss). A user's training keeps its
# priority: there the viewer yields (``key_window``), and training never waits for it.
DEMO_NICE = 10


def demo_command(name: str, backend: str = "engine") -> tuple[Path, list[str]]:
    """The example script of demo ``name`` and its arguments under ``backend``; ``LaunchError``
    for an unknown demo or backend, or a demo that cannot run under ``backend``."""
    if name not in DEMOS:
        raise LaunchError(f"unknown demo model {name!r} (choose from {', '.join(DEMOS)})")
    if backend not in DEMO_BACKENDS:
        raise LaunchError(f"unknown demo backend {backend!r} (choose from {', '.join(DEMO_BACKENDS)})")
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
    return run_script(str(path), args, trace_file, stats=stats, backend=backend, trace_tag=tag, nice=DEMO_NICE)
