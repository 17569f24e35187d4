"""One step number everywhere: an event's ``step`` is the 0-based iteration of the training loop
it happened in, also after ``optimizer.step()`` (a metric logged, an error raised there)."""

from __future__ import annotations

import warnings

import pytest

import modscope
from modscope.views.tui.state import SessionState
from tests.modscope.models import nested_model

warnings.filterwarnings("ignore", message="Full backward hook is firing")


def steps_of(tr, kind):
    return [e["step"] for e in tr.events if e["kind"] == kind]


def test_what_follows_the_optimizer_step_is_the_same_iteration(lib):
    model = nested_model(lib)
    opt = lib.optim.SGD(model.parameters(), lr=0.1)
    tr = modscope.trace(model)
    with pytest.raises(RuntimeError), tr:
        for iteration in range(5):
            opt.zero_grad()
            model(lib.randn(3, 4)).pow(2).mean().backward()
            opt.step()
            tr.log(iteration=iteration)
            if iteration == 3:
                raise RuntimeError("the script failed at iteration 3")
    metrics = [(e["step"], e["values"]["iteration"]) for e in tr.events if e["kind"] == "metric"]
    assert metrics == [(i, i) for i in range(4)]
    assert steps_of(tr, "params") == [0, 1, 2, 3]
    assert sorted(set(steps_of(tr, "forward"))) == [0, 1, 2, 3]
    error = next(e for e in tr.events if e["kind"] == "error")
    assert error["step"] == 3 and error["where"] == "traced code"
    state = SessionState()
    with state.lock:
        for e in tr.events:
            state.apply(e)
    assert state.step == 3 and [e["step"] for e in state.errors] == [3]
    assert state.step_events(None)[0] == 3 and state.steps_available() == [0, 1, 2, 3]


def test_manual_steps_and_both_kinds_of_step_together(lib):
    with modscope.trace(backend=lib.__name__) as tr:  # metrics alone, steps marked by hand
        for i in range(3):
            tr.log(i=i)
            tr.step()
    assert steps_of(tr, "metric") == [0, 1, 2]

    model = nested_model(lib)
    opt = lib.optim.SGD(model.parameters(), lr=0.1)
    with modscope.trace(model) as tr:
        for i in range(3):  # an optimizer step and a manual one: still one step an iteration
            model(lib.randn(3, 4)).sum().backward()
            opt.step()
            tr.log(i=i)
            tr.step()
    assert steps_of(tr, "metric") == [0, 1, 2] and steps_of(tr, "params") == [0, 1, 2]
    assert sorted(set(steps_of(tr, "forward"))) == [0, 1, 2]
