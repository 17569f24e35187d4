"""Replaying a long trace: every step reachable, read back from the file on demand, in bounded memory."""

from __future__ import annotations

import gzip
import json

import pytest

from modscope.events.files import TraceStream
from modscope.views.tui.app import ModscopeApp
from modscope.views.tui.sources import ReplaySource
from modscope.views.tui.state import EVENTS_PER_STEP, TIMELINE_KINDS, SessionState
from modscope.views.tui.widgets.timeline import HookTimeline
from tests.tui.conftest import TRACE

STEPS = 300


def long_trace(steps: int = STEPS) -> list[dict]:
    """The small fixture's step 0 (session, model, graph...), then its step 1 again as steps 1..steps-1, then its end."""
    events = [json.loads(line) for line in TRACE.read_text().splitlines()]
    head = [e for e in events if e["step"] == 0]
    block = [e for e in events if e["step"] == 1]
    end = events[-1]
    assert end["kind"] == "end"
    out = list(head)
    for step in range(1, steps):
        out += [{**e, "step": step, "t": e["t"] + step * 1_000_000} for e in block]
    out.append({**end, "step": steps, "t": end["t"] + steps * 1_000_000})
    return [{**e, "seq": i} for i, e in enumerate(out)]


def write(path, events, gz=False):
    data = b"".join(json.dumps(e).encode() + b"\n" for e in events)
    if gz:
        data = gzip.compress(data[:len(data) // 2]) + gzip.compress(data[len(data) // 2:])  # two members
    path.write_bytes(data)
    return path


def timeline_of(events, step):
    return [e for e in events if e["step"] == step and e["kind"] in TIMELINE_KINDS][:EVENTS_PER_STEP]


def replay(source: ReplaySource) -> SessionState:
    state = SessionState()
    source.start(state)
    source.thread.join(30)
    assert not source.thread.is_alive()
    return state


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
def test_every_step_of_a_long_replay_is_reachable_in_bounded_memory(tmp_path, monkeypatch, gz):
    monkeypatch.setattr(TraceStream, "CHECKPOINT_SPACING", 1 << 16)  # many checkpoints in a small file
    events = long_trace()
    path = write(tmp_path / ("long.jsonl.gz" if gz else "long.jsonl"), events, gz)
    source = ReplaySource(path, check_bytes=4096, cache_events=200)  # checks the start, reads the rest later
    assert source.truncated is None and source.description == f"replay {path.name}"
    state = replay(source)
    assert state.status == "ended" and source.truncated is False
    assert state.steps_available() == list(range(STEPS))  # not the last STEPS_KEPT (64) only
    per_step = len(timeline_of(events, 1))
    bound = 200 + 2 * per_step  # the cache, the step being shown and the last one folded at most
    assert source.steps.held <= bound
    if gz:
        assert len(source.stream.checkpoints) > 10
    for step in (5, 299, 0, 150, *range(STEPS)):
        got_step, got, overflow = state.step_events(step)
        assert (got_step, got, overflow) == (step, timeline_of(events, step), 0)
        assert source.steps.held <= bound
    assert source.steps.loads >= STEPS - 200 // per_step  # read back from the file, not kept
    assert state.step_events(None)[0] == STEPS - 1


def test_a_big_step_reads_back_as_the_state_kept_it(tmp_path):
    events = long_trace(3)
    one = [e for e in events if e["step"] == 1 and e["kind"] == "forward"][0]
    big = [e for e in events if e["step"] != 2 and e["kind"] != "end"]
    big += [{**one, "step": 2, "call": i} for i in range(EVENTS_PER_STEP + 50)] + [{**events[-1], "step": 3}]
    big = [{**e, "seq": i} for i, e in enumerate(big)]
    source = ReplaySource(write(tmp_path / "big.jsonl", big), cache_events=0)
    state = replay(source)
    state.step_events(0)  # evicts step 2
    step, got, overflow = state.step_events(2)
    assert step == 2 and len(got) == EVENTS_PER_STEP and overflow == 50 and got[-1]["call"] == EVENTS_PER_STEP - 1


def test_a_bad_line_past_the_checked_start_stops_the_replay_with_a_clear_error(tmp_path):
    events = long_trace()
    path = write(tmp_path / "corrupt.jsonl", events)
    lines = path.read_bytes().splitlines(keepends=True)
    lines[5000] = b'{"v": 1, "kind": "forw\n'
    path.write_bytes(b"".join(lines))
    source = ReplaySource(path, check_bytes=4096, cache_events=100)
    state = replay(source)
    assert state.status == "disconnected"
    assert state.status_reason.startswith(f"replay stopped at a bad line: {path}:5001: not valid JSON")
    assert state.errors[-1]["etype"] == "TraceFileError" and f"{path}:5001" in state.errors[-1]["message"]
    last = events[4999]["step"]
    assert state.steps_available()[-1] == last and state.step_events(5)[1] == timeline_of(events, 5)
    before_bad = [e for e in events[:5000] if e["step"] == last and e["kind"] in TIMELINE_KINDS]
    for step in state.steps_available()[:-1]:
        state.step_events(step)  # the last step is evicted, then read back up to the bad line
    kept = [e for e in state.step_events(last)[1] if e.get("etype") != "TraceFileError"]  # (the viewer's note)
    assert kept == before_bad and not source.steps.error
    with pytest.raises(Exception, match="corrupt.jsonl:5001: not valid JSON"):
        ReplaySource(path)  # within the checked start: refused before the app starts, as before


def test_a_cut_gzip_replay_says_so_when_it_gets_there(tmp_path):
    events = long_trace()
    data = gzip.compress(b"".join(json.dumps(e).encode() + b"\n" for e in events))
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(data[:len(data) // 2])
    source = ReplaySource(path, check_bytes=4096)
    assert source.truncated is None
    state = replay(source)
    assert source.truncated and state.status == "disconnected" and "cut off" in state.status_reason
    steps = state.steps_available()
    assert steps[0] == 0 and 50 < steps[-1] < STEPS
    assert state.step_events(steps[-2])[1] == timeline_of(events, steps[-2])
    assert "(cut off)" in ReplaySource(path).description  # checked whole before the app starts


@pytest.mark.asyncio
async def test_the_timeline_of_a_replay_goes_to_any_step(tmp_path):
    events = long_trace()
    source = ReplaySource(write(tmp_path / "long.jsonl.gz", events, gz=True), cache_events=100)
    app = ModscopeApp(source)
    async with app.run_test(size=(160, 45)) as pilot:
        for _ in range(400):
            await pilot.pause(0.05)
            if app.state.status == "ended" and len(app.state.steps_available()) == STEPS:
                break
        timeline = app.query_one(HookTimeline)
        for target in ("5", "299", "0"):
            await pilot.press("g")
            await pilot.pause(0.1)
            for key in target:
                await pilot.press(key)
            await pilot.press("enter")
            for _ in range(40):
                await pilot.pause(0.05)
                if timeline.step == int(target):
                    break
            assert timeline.step == int(target)
        await pilot.press("right_square_bracket")
        for _ in range(40):
            await pilot.pause(0.05)
            if timeline.step == 1:
                break
        assert timeline.step == 1
        with app.state.lock:
            assert app.state.step_events(1)[1] == timeline_of(events, 1)
        assert source.steps.held <= 100 + 2 * len(timeline_of(events, 1))
