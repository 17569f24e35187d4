"""End to end on PyTorch: an unmodified torch training script run by a real child process that
streams over a real socket, as ``modscope run`` does (headless: the viewer's source and state,
no app), and the trace file it writes."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from modscope import load_trace
from modscope.views.tui.launch import EXAMPLES_DIR, demo_command, start_child
from modscope.views.tui.sources import ChildProcess, SocketSource
from modscope.views.tui.state import SessionState

pytest.importorskip("torch")

STEPS = 20
# A plain torch script: nothing in it knows about modscope except the one log call.
SCRIPT = f'''
import torch
import torch.nn as nn

import modscope

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
x, y = torch.randn(32, 4), torch.randn(32, 2)
for step in range({STEPS}):
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    modscope.log(loss=loss.item())
print("done", flush=True)
'''
MODULES = {"", "0", "1", "2"}


def run_headless(start: Callable[[SocketSource], ChildProcess], timeout: float = 120.0,
                 ranks: int = 1) -> tuple[int, SessionState, ChildProcess]:
    """Start a child with ``start`` against a fresh socket source (taking ``ranks`` connections)
    folding into a fresh state; wait for it to exit; return its exit status, the state and the child."""
    source, state = SocketSource(ranks=ranks), SessionState()
    source.start(state)
    child = start(source)
    try:
        code = child.proc.wait(timeout=timeout)
        _wait_until(lambda: state.status in ("ended", "disconnected"))
    finally:
        child.stop(source)
        source.stop()
    return code, state, child


def _wait_until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)


def kinds_by_module(events: list[dict]) -> dict[str, set[str]]:
    """Module path -> the module event kinds seen for it."""
    seen: dict[str, set[str]] = {}
    for e in events:
        if e["kind"] in ("forward_pre", "forward", "backward_pre", "backward"):
            seen.setdefault(e["path"], set()).add(e["kind"])
    return seen


def test_unmodified_torch_script_is_traced_end_to_end(tmp_path: Path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    trace_file = tmp_path / "run.jsonl.gz"
    code, state, child = run_headless(lambda s: ChildProcess(s, str(script), [], str(trace_file)))
    assert code == 0, "\n".join(child.log)
    assert "done" in child.log
    trace = load_trace(trace_file)
    events = trace.events
    by_kind = {k: [e for e in events if e["kind"] == k] for k in {e["kind"] for e in events}}
    assert not trace.truncated and events[-1]["kind"] == "end"
    assert "error" not in by_kind, by_kind.get("error")
    assert by_kind["session"][0]["framework"] == "torch"
    assert by_kind["model"][0]["model"] == "Sequential"
    assert kinds_by_module(events) == {p: {"forward_pre", "forward", "backward_pre", "backward"} for p in MODULES}
    assert len(by_kind["step"]) == STEPS and by_kind["step"][0]["optimizer"] == "SGD"
    assert by_kind["params"] and {i["path"] for i in by_kind["params"][-1]["items"]} == {
        "0.weight", "0.bias", "2.weight", "2.bias"}
    losses = [e["values"]["loss"] for e in by_kind["metric"]]
    assert len(losses) == STEPS and losses[-1] < losses[0]
    assert state.model_name == "Sequential" and state.step >= STEPS - 1  # what the viewer folded live


def test_torch_demo_traces_torch_not_the_engine(tmp_path: Path):
    """The demo's path: an engine example told ``--backend torch`` and a child told to trace torch
    (with tensor statistics, as the demo has them)."""
    script, args = demo_command("simple", "torch")
    args = [a if a != "1000" else "1" for a in args] + ["--train-size", "128", "--test-size", "64"]
    trace_file = tmp_path / "demo.jsonl"
    code, _, child = run_headless(lambda s: start_child(s, str(script), args, str(trace_file), stats=True,
                                                        backend="torch"))
    assert code == 0, "\n".join(child.log)
    assert child.proc.args[child.proc.args.index("--backend") + 1] == "torch"
    assert str(script).startswith(str(EXAMPLES_DIR))
    events = load_trace(trace_file).events
    assert next(e for e in events if e["kind"] == "session")["framework"] == "torch"
    assert not [e for e in events if e["kind"] == "error"]
    assert {"step", "params", "metric", "end"} <= {e["kind"] for e in events}
    model = next(e for e in events if e["kind"] == "model")
    assert kinds_by_module(events).keys() >= {m["path"] for m in model["modules"]}
