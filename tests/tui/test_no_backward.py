"""Modules with no backward of their own (none of their inputs needs a gradient: torch runs their
backward hook as soon as their output's gradient arrives) show "—" for their backward time in the
module tree, live and on a step the timeline stays on, not a time."""

from __future__ import annotations

import modscope
from modscope.views.tui.sources import fold
from modscope.views.tui.state import SessionState
from modscope.views.tui.step_values import step_values
from modscope.views.tui.widgets.module_tree import label_parts


def _traced(lib, needs_grad: bool):
    model = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.ReLU(), lib.nn.Linear(4, 2))
    x = lib.randn(5, 3)
    if needs_grad:
        x.requires_grad_()
    with modscope.trace(model) as tr:
        for _ in range(2):
            model(x).sum().backward()
            tr.step()
    return tr.events


def _bwd_label(m) -> str:
    return "".join(text for text, _ in label_parts(m, "Sequential")).split("ms", 1)[1]


def test_the_tree_says_no_backward_where_no_input_needs_a_gradient(lib):
    events = _traced(lib, needs_grad=False)
    state = SessionState()
    fold(state, events)
    assert {p for p, m in state.modules.items() if m.no_backward} == {"", "0"}
    assert _bwd_label(state.modules[""]).startswith("/—") and _bwd_label(state.modules["0"]).startswith("/—")
    assert _bwd_label(state.modules["2"]).startswith("/") and "—" not in _bwd_label(state.modules["2"])
    values = step_values(events, 0)
    assert values.no_backward == {"", "0"}
    assert values.module(state.modules["2"]).no_backward is False and values.module(state.modules[""]).no_backward


def test_every_module_has_a_backward_when_the_input_needs_a_gradient(lib):
    events = _traced(lib, needs_grad=True)
    state = SessionState()
    fold(state, events)
    assert not any(m.no_backward for m in state.modules.values())
    assert step_values(events, 1).no_backward == frozenset()
