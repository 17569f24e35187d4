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
