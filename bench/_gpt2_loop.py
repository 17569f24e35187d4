"""The GPT-2 training loop of the long-run benchmarks (``bench_long_run``, ``bench_first_step``,
issue 31), and how they launch a script that runs it: plain, under ``modscope record``, and as
``modscope run``'s child streaming to the TUI's state.

``gpt2_step()`` builds the model and returns one training step; a launched script imports it from
this folder (``LOOP_IMPORT``, pasted at the top of the script) so that every benchmark times the
same loop. Launches read compiled bytecode, as an installed package does (``BYTECODE``).
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

# The first lines of a launched script: this folder on its path, for ``from _gpt2_loop import gpt2_step``.
LOOP_IMPORT = f"import sys; sys.path.insert(0, {str(HERE)!r})\n"


def gpt2_step(seed: int = 0) -> tuple[Any, Callable[[], None]]:
    """``(model, step)``: transformers' ``GPT2LMHeadModel`` with a small config (2 layers, 128 wide,
    4 heads, vocabulary 1,000, random weights), AdamW, one batch of 8 x 64 tokens, one torch
    thread; ``step()`` runs forward with the loss, ``zero_grad``, backward and the optimizer step."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel
    from transformers.utils import logging

    logging.set_verbosity_error()
    torch.set_num_threads(1)
    torch.manual_seed(seed)
    model = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=128, n_head=4, n_positions=64, vocab_size=1000))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randint(0, 1000, (8, 64))

    def step() -> None:
        out = model(x, labels=x)
        opt.zero_grad()
        out.loss.backward()
        opt.step()

    return model, step


# Imports read compiled bytecode, as from an installed package (pip compiles it): a session
# environment with PYTHONDONTWRITEBYTECODE=1 would have every launch compile modscope's and the
# script's sources again (tens of ms, counted in the first step when the import is lazy).
BYTECODE = {"PYTHONPYCACHEPREFIX": os.path.join(tempfile.gettempdir(), "modscope-bench-pycache"),
            "PYTHONDONTWRITEBYTECODE": ""}


def env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """A launch's environment: bytecode as installed, one BLAS thread, this tree's modscope
    (``extra={"PYTHONPATH": DIR}``: another tree's), no detail policy left over."""
    out = dict(os.environ)
    out.update(BYTECODE)
    out.update({"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                "PYTHONPATH": str(ROOT)})
    out.pop("MODSCOPE_DETAIL", None)
    out.update(extra or {})
    return out


# `modscope record`'s closing line: "modscope record: trace F: 6 steps (2 full, 4 light), 31 modules, ..."
_RECORDED = re.compile(r"^modscope record: trace .*?, (\d+) modules,", re.MULTILINE)


def launch(cmd: list[str], what: str, parse: Callable[[str, str], Any], source: str | None = None) -> Any:
    """Run ``cmd`` and read its figures with ``parse(output, what)``; ``source``: a modscope tree
    to import instead of this one (a benchmark's ``--base``). A ``modscope record`` launch that
    traced no module fails (a trace of the wrong framework times nothing: ``--backend``)."""
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env({"PYTHONPATH": source} if source else None),
                          timeout=1800)
    output = proc.stdout + proc.stderr
    if proc.returncode != 0:
        raise RuntimeError(f"{what} failed ({proc.returncode}):\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    if "record" in cmd:
        recorded = _RECORDED.search(output)
        if recorded is None or recorded.group(1) == "0":
            raise RuntimeError(f"{what}: the trace recorded no module:\n{output[-2000:]}")
    return parse(output, what)


def launch_live(script: str, args: list[str], trace: str, detail: str, parse: Callable[[str, str], Any],
                source: str | None = None, backend: str = "auto") -> Any:
    """``modscope run`` without its screen: the child streaming to a socket source folding
    every event into the TUI's state, as the app's source does; ``parse(output, what)`` reads
    the figures from the child's output. ``source``: the child imports the modscope tree there
    (the viewer's side stays this tree's). Fails when the viewer saw no model."""
    from modscope.views.tui.sources import ChildProcess, SocketSource
    from modscope.views.tui.state import SessionState

    source_ = SocketSource()
    state = SessionState()
    source_.start(state)
    saved = dict(os.environ)
    os.environ.update(env({"MODSCOPE_DETAIL": detail, **({"PYTHONPATH": source} if source else {})}))
    try:
        child = ChildProcess(source_, script, args, trace, backend=backend)
        child.proc.wait(timeout=1800)
        done = threading.Event()
        threading.Timer(0.5, done.set).start()  # the reader thread takes the last lines
        done.wait()
        output = "\n".join(child.log)
    finally:
        os.environ.clear()
        os.environ.update(saved)
        source_.stop()
    what = f"run ({detail})" + (f" [{source}]" if source else "")
    if child.proc.returncode != 0:
        raise RuntimeError(f"{what} failed ({child.proc.returncode}):\n{output[-2000:]}")
    if state.models == 0:
        raise RuntimeError(f"{what}: the viewer's state folded no model (a trace of the wrong framework?)")
    return parse(output, what)
