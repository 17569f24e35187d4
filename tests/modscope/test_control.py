"""The traced process's control channel: pause, single step, breakpoints, stop, bad messages; the
training it controls runs on both capture backends (``lib``)."""

from __future__ import annotations

import json
import threading
import time
import warnings

import pytest

import modscope
from modscope.capture.control import ControlError, Controller, parse_command
from tests.modscope.models import nested_model

warnings.filterwarnings("ignore", message="Full backward hook is firing")


def training_thread(lib, controller: Controller, steps: int, nan_at: int | None = None, stats: bool = True):
    """Train in a thread (as the child does) with the controller observing every event."""
    model = nested_model(lib)
    opt = lib.optim.SGD(model.parameters(), lr=0.1)
    tr = modscope.trace(model, stats=stats, observer=controller)  # as the child passes it
    controller.trace = tr
    result: dict = {}

    def run():
        tr.start()
        try:
            for step in range(steps):
                if step == nan_at:
                    with lib.no_grad():
                        model.blk.b.weight[0, 0] = float("nan")
                opt.zero_grad()
                model(lib.randn(3, 4)).pow(2).mean().backward()
                opt.step()
            result["finished"] = True
        except KeyboardInterrupt:
            result["stopped"] = True
        finally:
            tr.stop()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return tr, thread, result


def send(controller: Controller, **msg) -> None:
    controller.handle(json.dumps(msg).encode())


def wait_status(tr, state: str, timeout: float = 10.0) -> dict:
    for _ in range(int(timeout / 0.01)):
        found = [e for e in tr.events if e["kind"] == "status" and e["state"] == state]
        if found:
            return found[-1]
        time.sleep(0.01)
    raise AssertionError(f"no {state} status")


@pytest.mark.parametrize("stats", [True, False])
def test_pause_blocks_training_and_resume_continues(lib, stats):
    c = Controller()
    c.pause_requested = True  # paused from the very first event
    tr, thread, result = training_thread(lib, c, steps=3, stats=stats)
    wait_status(tr, "paused")
    before = len(tr.events)
    time.sleep(0.3)
    assert len(tr.events) == before  # really waiting
    send(c, cmd="resume")
    thread.join(timeout=10)
    assert result == {"finished": True}


@pytest.mark.parametrize("stats", [True, False])
def test_single_step_pauses_at_the_end_of_the_step(lib, stats):
    c = Controller()
    c.pause_requested = True
    tr, thread, result = training_thread(lib, c, steps=5, stats=stats)
    wait_status(tr, "paused")
    send(c, cmd="step")
    paused = None
    for _ in range(500):
        statuses = [e for e in tr.events if e["kind"] == "status" and e["state"] == "paused"]
        if len(statuses) == 2:
            paused = statuses[-1]
            break
        time.sleep(0.01)
    assert paused is not None and paused["reason"] == "stepped: step 0 done"
    send(c, cmd="stop")
    thread.join(timeout=10)
    assert result == {"stopped": True}
    assert tr.events[-1]["kind"] == "end"


@pytest.mark.parametrize("stats", [True, False])
def test_breakpoint_on_a_module_forward(lib, stats):
    c = Controller()
    send(c, cmd="break", modules=["blk.b"])
    tr, thread, _ = training_thread(lib, c, steps=2, stats=stats)
    assert tr.immediate  # a module breakpoint needs each event as it happens
    status = wait_status(tr, "paused")
    assert status["reason"] == "breakpoint: forward of module blk.b"
    assert status["step"] == 0
    assert [e for e in tr.events if e["kind"] == "forward_pre"][-1]["path"] == "blk.b"
    send(c, cmd="break", modules=[])
    assert not tr.immediate
    send(c, cmd="resume")
    thread.join(timeout=10)


def test_without_stats_the_observer_sees_module_events_at_the_step_end(lib):
    # So a pause asked for from the viewer takes effect between steps, not inside one.
    model = nested_model(lib)
    opt = lib.optim.SGD(model.parameters(), lr=0.1)
    progress = {"backward_done": False}
    seen: list[tuple[str, bool]] = []
    tr = modscope.trace(model, observer=lambda e: seen.append((e["kind"], progress["backward_done"])))
    with tr:
        model(lib.randn(3, 4)).pow(2).mean().backward()
        progress["backward_done"] = True
        opt.step()
    module_events = [done for kind, done in seen if kind in ("forward_pre", "forward", "backward_pre", "backward")]
    assert module_events and all(module_events)
    assert [k for k, _ in seen].index("forward_pre") < [k for k, _ in seen].index("params")  # order kept


def test_breakpoint_on_nan_and_on_grad_norm(lib):
    c = Controller()
    send(c, cmd="break", nan=True)
    tr, thread, _ = training_thread(lib, c, steps=3, nan_at=1)
    assert tr.immediate  # the pause must come at the module where the NaN appears
    status = wait_status(tr, "paused")
    assert status["reason"].startswith("breakpoint: first NaN/Inf") and status["step"] == 1
    send(c, cmd="stop")
    thread.join(timeout=10)

    c2 = Controller()
    send(c2, cmd="break", grad_norm=1e-9)
    tr2, thread2, _ = training_thread(lib, c2, steps=2)
    assert "breakpoint: grad norm" in wait_status(tr2, "paused")["reason"]
    send(c2, cmd="stop")
    thread2.join(timeout=10)


@pytest.mark.parametrize("line,message", [
    (b"not json", "not JSON"), (b'{"cmd": "explode"}', "unknown control message"),
    (b"[1]", "unknown control message"), (b'{"cmd": "break", "nan": "yes"}', "'nan' must be true or false"),
    (b'{"cmd": "break", "grad_norm": "big"}', "'grad_norm' must be a number"),
    (b'{"cmd": "break", "modules": "fc1"}', "'modules' must be a list"),
])
def test_bad_control_messages_are_refused_and_recorded(line, message):
    with pytest.raises(ControlError, match=message):
        parse_command(line)
    c = Controller()
    c.handle(line)  # never raises on the receiver thread
    assert c.rejected and message in c.rejected[0]


@pytest.mark.parametrize("msg", [{"cmd": "pause"}, {"cmd": "step"}, {"cmd": "stop"},
                                 {"cmd": "break", "nan": True}, {"cmd": "break", "grad_norm": 0.0},
                                 {"cmd": "break", "modules": ["blk"]}])
def test_controller_is_idle_until_something_is_asked(msg):
    controller = Controller()
    assert controller.idle
    send(controller, **msg)
    assert not controller.idle
    if msg["cmd"] == "break":  # clearing every breakpoint makes it idle again
        send(controller, cmd="break")
        assert controller.idle


def test_an_idle_observer_is_not_called(lib):
    class Observer:
        idle = True

        def __init__(self):
            self.seen = []

        def __call__(self, event):
            self.seen.append(event["kind"])

    observer = Observer()
    model = nested_model(lib)
    with modscope.trace(model, observer=observer) as tr:
        model(lib.randn(3, 4)).sum().backward()
        tr.step()
        assert observer.seen == []
        observer.idle = False
        model(lib.randn(3, 4)).sum().backward()
        tr.step()
    assert observer.seen[:2] == ["forward_pre", "forward_pre"] and "backward" in observer.seen


# --- pauses are not the model's time; one step number everywhere ----------------------------------

def wait_statuses(tr, state: str, count: int, timeout: float = 10.0) -> list[dict]:
    for _ in range(int(timeout / 0.01)):
        found = [e for e in tr.events if e["kind"] == "status" and e["state"] == state]
        if len(found) >= count:
            return found
        time.sleep(0.01)
    raise AssertionError(f"fewer than {count} {state} statuses")


def folded_state(tr):
    from modscope.views.tui.state import SessionState
    state = SessionState()
    with state.lock:
        for e in list(tr.events):
            state.apply(e)
    return state


PAUSE_S = 0.3


def test_a_pause_at_a_breakpoint_is_not_forward_time(lib):
    c = Controller()
    send(c, cmd="break", modules=["blk.b"])
    tr, thread, result = training_thread(lib, c, steps=1)
    wait_status(tr, "paused")
    time.sleep(PAUSE_S)
    send(c, cmd="break", modules=[])
    send(c, cmd="resume")
    thread.join(timeout=10)
    assert result == {"finished": True}
    fwd = {e["path"]: e for e in tr.events if e["kind"] == "forward" and e["call"] == 0}
    pre = {e["path"]: e for e in tr.events if e["kind"] == "forward_pre" and e["call"] == 0}
    for path in ("", "blk", "blk.b"):  # the paused call and the calls around it
        assert fwd[path]["dur_ns"] < PAUSE_S * 1e9 / 2, (path, fwd[path]["dur_ns"])
        assert fwd[path]["dur_ns"] >= 0
    assert fwd[""]["t"] - pre[""]["t"] >= PAUSE_S * 1e9  # events' times stay wall time


def test_a_pause_inside_backward_is_not_backward_time(lib):
    model = nested_model(lib)

    def observer(event):
        if event["kind"] == "backward_pre" and event["path"] == "blk.b":
            time.sleep(PAUSE_S)

    with modscope.trace(model, observer=observer) as tr:
        tr.immediate = True  # as a breakpoint makes it: the observer sees each event in its hook
        model(lib.randn(3, 4)).pow(2).mean().backward()
    bwd = {e["path"]: e for e in tr.events if e["kind"] == "backward"}
    assert "blk" in bwd and "blk.b" in bwd
    for path, e in bwd.items():
        assert 0 <= e["dur_ns"] < PAUSE_S * 1e9 / 2, (path, e["dur_ns"])


def test_paused_at_a_breakpoint_every_view_shows_the_paused_step(lib):
    c = Controller()
    send(c, cmd="break", modules=["blk.b"])
    tr, thread, result = training_thread(lib, c, steps=6)
    for pause in range(1, 6):  # blk.b runs twice a step: its breakpoint fires twice in each
        step = (pause - 1) // 2
        paused = wait_statuses(tr, "paused", pause)[-1]
        assert paused["step"] == step and paused["reason"] == "breakpoint: forward of module blk.b"
        state = folded_state(tr)
        assert state.status == "paused" and state.step == step
        shown, events, _ = state.step_events(None)  # the timeline, following
        assert shown == step and events[-1]["kind"] == "forward_pre" and events[-1]["path"] == "blk.b"
        if pause < 5:
            send(c, cmd="resume")
    send(c, cmd="break", modules=[])
    send(c, cmd="step")  # n: the step paused in runs to its end
    stepped = wait_statuses(tr, "paused", 6)[-1]
    assert stepped["reason"] == "stepped: step 2 done" and stepped["step"] == 2
    state = folded_state(tr)
    shown, events, _ = state.step_events(None)
    assert state.step == 2 and shown == 2 and any(e["kind"] == "backward" for e in events)
    send(c, cmd="step")
    stepped = wait_statuses(tr, "paused", 7)[-1]
    assert stepped["reason"] == "stepped: step 3 done" and stepped["step"] == 3
    assert folded_state(tr).step_events(None)[0] == 3
    send(c, cmd="stop")
    thread.join(timeout=10)
    assert result == {"stopped": True}


def test_a_nan_breakpoint_shows_the_step_it_fired_in(lib):
    c = Controller()
    send(c, cmd="break", nan=True)
    tr, thread, _ = training_thread(lib, c, steps=6, nan_at=3)
    paused = wait_status(tr, "paused")
    error = next(e for e in tr.events if e["kind"] == "error")
    assert error["step"] == paused["step"] == 3
    state = folded_state(tr)
    shown, events, _ = state.step_events(None)
    assert state.step == 3 and shown == 3 and events[-1]["kind"] == "error"
    assert [e["step"] for e in state.errors] == [3]
    send(c, cmd="stop")
    thread.join(timeout=10)


def test_the_first_single_step_after_a_pause_from_the_viewer_runs_the_next_step(lib):
    # Without breakpoints a step's module events reach the controller at the step's end: a pause
    # asked for then takes effect after the whole step, which is the step paused in; ``n`` then
    # runs the next one (not the rest of a step that has already run).
    c = Controller()
    send(c, cmd="step")
    tr, thread, result = training_thread(lib, c, steps=200, stats=False)
    first = wait_statuses(tr, "paused", 1)[-1]
    assert first["reason"] == "stepped: step 0 done"
    send(c, cmd="resume")
    send(c, cmd="pause")
    paused = wait_statuses(tr, "paused", 2)[-1]
    assert paused["reason"] == "paused from the viewer"
    step = paused["step"]
    state = folded_state(tr)
    shown, events, _ = state.step_events(None)
    assert state.step == step and shown == step and events[-1]["kind"] == "backward"  # the whole step
    send(c, cmd="step")
    stepped = wait_statuses(tr, "paused", 3)[-1]
    assert stepped["reason"] == f"stepped: step {step + 1} done" and stepped["step"] == step + 1
    send(c, cmd="stop")
    thread.join(timeout=10)
    assert result == {"stopped": True}


def test_resume_until_pauses_again_at_the_end_of_that_step(lib):
    # what the viewer of several ranks sends a rank stopped behind the others (views.tui.ranks.RankHold)
    c = Controller()
    send(c, cmd="resume", until=2)
    assert not c.idle
    tr, thread, result = training_thread(lib, c, steps=6, stats=False)
    paused = wait_status(tr, "paused")
    assert paused["reason"] == "held at the end of step 2 with the other ranks" and paused["step"] == 2
    assert c.idle  # held once: a resume goes on for good
    send(c, cmd="resume")
    thread.join(timeout=10)
    assert result == {"finished": True}


@pytest.mark.parametrize("msg", [{"cmd": "resume", "until": -1}, {"cmd": "resume", "until": "3"},
                                 {"cmd": "resume", "until": True}, {"cmd": "pause", "until": 3}])
def test_until_is_a_step_number_on_resume_only(msg):
    with pytest.raises(ControlError, match="'until' is a step number"):
        parse_command(json.dumps(msg))


def test_a_pause_from_the_viewer_waits_for_the_steps_parameters():
    # the optimizer's step event is followed at once by its params event: the step boundary
    # (where ranks are held, and after which n runs a whole step) is after the params
    c = Controller()
    c.trace = type("Trace", (), {"_batch_rest": 0, "immediate": False})()
    send(c, cmd="pause")
    assert c._reason({"kind": "step", "step": 4, "optimizer": "SGD", "index": 4, "lrs": [0.1]}) == ""
    assert c._reason({"kind": "params", "step": 4, "items": []}) == "paused from the viewer"


def test_resume_until_holds_at_a_light_steps_step_event():
    # a light step (capture.sampling) sends no params event: its step event ends it
    c = Controller()
    c.trace = type("Trace", (), {"_batch_rest": 0, "immediate": False})()
    send(c, cmd="resume", until=5)
    light = {"kind": "step", "optimizer": "SGD", "index": 0, "lrs": [0.1], "detail": "light"}
    assert c._reason({**light, "step": 4}) == ""
    assert c._reason({**light, "step": 5}) == "held at the end of step 5 with the other ranks"


def test_a_ranks_light_step_ends_at_its_params_event():
    # a rank of several sends a light step's fingerprints in a params event after its step event:
    # the step boundary (where every rank is held) is after it
    c = Controller()
    c.trace = type("Trace", (), {"_batch_rest": 0, "immediate": False, "_fingerprints": True})()
    send(c, cmd="pause")
    light = {"kind": "step", "step": 4, "optimizer": "SGD", "index": 4, "lrs": [0.1], "detail": "light"}
    assert c._reason(light) == ""
    assert c._reason({"kind": "params", "step": 4, "items": []}) == "paused from the viewer"
