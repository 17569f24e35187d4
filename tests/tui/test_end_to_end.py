"""End to end: the app over a real child process and a real socket, as ``modscope run`` does."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from modscope import load_trace
from modscope.views.tui.app import ModscopeApp
from modscope.views.tui.sources import ChildProcess, SocketSource
from modscope.views.tui.widgets.module_tree import ModuleTree

SCRIPT = str(Path(__file__).parent / "train_script.py")


async def wait_for(pilot, condition, timeout=30.0):
    for _ in range(int(timeout / 0.1)):
        await pilot.pause(0.1)
        if condition():
            return
    raise AssertionError("condition not reached in time")


@pytest.mark.asyncio
async def test_live_training_pause_step_and_quit(tmp_path):
    trace_file = tmp_path / "run.jsonl.gz"
    source = SocketSource()
    child = ChildProcess(source, SCRIPT, ["100000"], str(trace_file))
    app = ModscopeApp(source, child=child)
    async with app.run_test(size=(160, 45)) as pilot:
        await wait_for(pilot, lambda: app.state.step > 5 and app.query_one(ModuleTree).modules)
        assert app.state.model_name == "Sequential" and app.state.status == "running"
        await pilot.press("space")
        await wait_for(pilot, lambda: app.state.status == "paused")
        paused_at = app.state.step
        await asyncio.sleep(0.5)
        assert app.state.step == paused_at  # training really waits
        await pilot.press("n")
        await wait_for(pilot, lambda: "stepped" in app.state.status_reason)
        assert app.state.step in (paused_at, paused_at + 1)
        await pilot.press("q")
        await wait_for(pilot, lambda: child.returncode is not None)
    assert child.returncode == 0
    trace = load_trace(trace_file)
    assert trace.events[-1]["kind"] == "end" and not trace.truncated
    assert [e["state"] for e in trace.events if e["kind"] == "status"][:2] == ["paused", "running"]
    assert any("step 0 loss" in line for line in child.log)


@pytest.mark.asyncio
async def test_script_error_is_shown_and_events_kept(tmp_path):
    source = SocketSource()
    child = ChildProcess(source, SCRIPT, ["20", "raise"], str(tmp_path / "err.jsonl"))
    app = ModscopeApp(source, child=child)
    async with app.run_test(size=(160, 45)) as pilot:
        await wait_for(pilot, lambda: app.state.status == "ended")
        await wait_for(pilot, lambda: app.screen is not app.screen_stack[0] and app.screen.query("Static"))
        shown = str(app.screen.query_one("Static").render())
        assert "the script failed on purpose" in shown and "train_script.py" in shown
        assert app.state.step >= 19 and app.state.modules
    assert child.proc.wait(timeout=10) == 1


@pytest.mark.asyncio
async def test_killed_child_leaves_the_viewer_usable(tmp_path):
    source = SocketSource()
    child = ChildProcess(source, SCRIPT, ["100000"], None)
    app = ModscopeApp(source, child=child)
    async with app.run_test(size=(160, 45)) as pilot:
        await wait_for(pilot, lambda: app.state.step > 2)
        child.proc.kill()
        await wait_for(pilot, lambda: app.state.status == "disconnected")
        await pilot.press("slash", "escape", "question_mark", "escape")
        assert app.is_running and "disconnected" in app.title


def test_the_child_leaves_a_core_to_the_viewer_unless_the_user_chose_threads():
    from modscope.views.tui.sources import child_env

    assert child_env({"PATH": "/bin"}, 2)["OMP_NUM_THREADS"] == "1"
    assert child_env({}, 8)["OPENBLAS_NUM_THREADS"] == "7"
    assert child_env({}, 1)["MKL_NUM_THREADS"] == "1"
    mine = child_env({"OMP_NUM_THREADS": "4"}, 8)
    assert mine["OMP_NUM_THREADS"] == "4" and "MKL_NUM_THREADS" not in mine
    assert child_env({}, 2)["PYTHONUNBUFFERED"] == "1"


SLOW_EXIT = """
import atexit, signal, time
import engine as torch
import engine.nn as nn


def slow_exit():  # an interpreter exit as slow as torch's, past where Python handles SIGTERM
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    time.sleep(2.0)


atexit.register(slow_exit)
model = nn.Linear(3, 2)
for step in range(3):
    model(torch.randn(4, 3)).sum().backward()
print("done", flush=True)
"""


@pytest.mark.asyncio
async def test_quit_right_after_the_end_waits_for_the_program_to_exit(tmp_path):
    """``q`` just after "ended", while the program is still exiting (its trace complete, its
    connection closed): it is left to exit, not killed by SIGTERM (exit status 143)."""
    script = tmp_path / "slow_exit.py"
    script.write_text(SLOW_EXIT)
    trace_file = tmp_path / "run.jsonl"
    source = SocketSource()
    child = ChildProcess(source, str(script), [], str(trace_file))
    app = ModscopeApp(source, child=child)
    async with app.run_test(size=(160, 45)) as pilot:
        await wait_for(pilot, lambda: app.state.status in ("ended", "disconnected") and
                       any("done" in line for line in child.log))
        assert child.returncode is None  # still in its atexit sleep
        await pilot.press("q")
        await wait_for(pilot, lambda: not app.is_running)
    assert child.proc.wait(timeout=10) == 0 and app.return_value == 0
    assert load_trace(trace_file).events[-1]["kind"] == "end"
