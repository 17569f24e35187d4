"""SessionState: folding events into bounded per-view data."""

from __future__ import annotations

from modscope.views.tui.sources import fold
from modscope.views.tui.state import EVENTS_PER_STEP, STEPS_KEPT, SessionState


def folded(events, budget=None):
    state = SessionState()
    fold(state, events, budget=budget)
    return state


def test_model_params_and_figures(events):
    s = folded(events)
    assert s.model_name == "Net" and s.order == ["", "blk", "blk.a", "blk.b", "head"]
    assert s.modules[""].total_params == 50 and s.modules["blk"].total_params == 40
    assert s.modules["head"].own_params == 10 and s.modules["blk"].own_params == 0
    assert [p.path for p in s.params_of("blk.a")] == ["blk.a.weight", "blk.a.bias"]
    w = s.params["blk.a.weight"]
    assert w.grad_norm > 0 and 0 < w.update_ratio < 1
    assert len(s.modules["blk.a"].grad_norms) == 6 and s.modules["blk.a"].fwd_ns > 0
    assert s.metrics["loss"][-1] is not None and s.optimizer == "SGD" and s.lrs == [0.1]
    assert s.status == "ended" and s.dropped == 0 and s.graph is not None


def test_timeline_keeps_steps_and_follows_the_last_complete_one(events):
    s = folded(events)
    assert s.steps_available() == [0, 1, 2, 3, 4, 5, 6] or s.steps_available()[-1] >= 5
    step, evs, overflow = s.step_events(2)
    assert step == 2 and overflow == 0 and evs[0]["kind"] == "forward_pre"
    partial = folded([e for e in events if not (e["step"] == 5 and e["kind"] in ("backward", "backward_pre"))
                      and e["kind"] != "end"])
    assert partial.status == "running"
    assert partial.step_events(None)[0] == 4  # step 5 is still in progress: show 4


def test_seq_gaps_count_as_dropped(events):
    s = folded([e for i, e in enumerate(events) if i not in (10, 11, 12)])
    assert s.gaps == 3 and s.dropped == 3


def test_viewer_samples_when_behind_and_says_so(events):
    s = folded(events, budget=20)
    assert s.skipped > 0 and s.dropped >= s.skipped
    assert s.params["blk.a.weight"].norm is not None  # structural events are never skipped


def test_memory_is_bounded_over_many_steps(events):
    body = [e for e in events if e["kind"] in ("forward_pre", "forward", "hook")]
    s = SessionState()
    seq = 0
    with s.lock:
        for step in range(STEPS_KEPT * 3):
            for e in body[:30]:
                s.apply({**e, "step": step, "seq": seq})
                seq += 1
    assert len(s.steps) == STEPS_KEPT
    huge = SessionState()
    with huge.lock:
        for i in range(EVENTS_PER_STEP + 50):
            huge.apply({**body[0], "seq": i, "step": 0})
    assert huge.step_events(0)[2] == 50


def test_disconnect_is_remembered(events):
    s = folded(events[:50])
    s.mark_disconnected("the training process disconnected")
    assert s.status == "disconnected"
    ended = folded(events)
    ended.mark_disconnected("late")
    assert ended.status == "ended"


def test_paused_the_timeline_follows_the_step_paused_in(events):
    # As a breakpoint in the forward of step 5 leaves it: step 5 partly run, then a status event.
    first = next(i for i, e in enumerate(events) if e["step"] == 5 and e["kind"] == "forward")
    s = folded(events[:first])
    assert s.step == 5 and s.step_events(None)[0] == 4  # running: the last complete step
    last = events[first - 1]
    timeline_rev = s.rev.timeline
    with s.lock:
        s.apply({"v": last["v"], "kind": "status", "seq": last["seq"] + 1, "t": last["t"], "step": 5,
                 "state": "paused", "reason": "breakpoint: forward of module blk.b"})
    assert s.rev.timeline > timeline_rev  # the shown step depends on the status: redraw
    step, evs, _ = s.step_events(None)
    assert step == 5 == s.step and evs[-1]["seq"] == last["seq"]
    with s.lock:
        s.apply({"v": last["v"], "kind": "status", "seq": last["seq"] + 2, "t": last["t"], "step": 5,
                 "state": "running", "reason": ""})
    assert s.step_events(None)[0] == 4


def test_a_sampled_update_ratio_is_shown_as_an_estimate(events):
    """``update_sampled`` on a ``params`` item (a large tensor's ratio, measured on a sample):
    the parameter table writes ``≈`` before the ratio; an item without it (an older trace, or an
    exact ratio) shows the plain number."""
    from modscope.views.tui.state import ParamInfo
    from modscope.views.tui.step_values import step_values
    from modscope.views.tui.widgets.params_table import COLUMNS, row_cells

    s = folded(events)  # a trace from before the field: every ratio exact, shown plain
    update = COLUMNS.index("update")
    w = s.params["blk.a.weight"]
    assert w.update_sampled is None and not str(row_cells(w)[update]).startswith("≈")
    last = next(e for e in reversed(events) if e["kind"] == "params")
    fold(s, [{**last, "seq": 10**6, "items": [{**i, "update_sampled": 7} for i in last["items"]]}])
    assert s.params["blk.a.weight"].update_sampled == 7 and str(row_cells(s.params["blk.a.weight"])[update])[0] == "≈"

    item = {"path": "a.w", "norm": 2.0, "grad_norm": None, "update_ratio": 2.5e-3, "mean": 0.0, "std": 1.0,
            "nan": 0, "inf": 0}
    old = ParamInfo("a.w", [2], "float32", 2, True)
    exact = step_values([{"kind": "params", "step": 1, "items": [item]}], 1).param(old)
    sampled = step_values([{"kind": "params", "step": 1, "items": [{**item, "update_sampled": 65_536}]}], 1).param(old)
    assert (exact.update_sampled, sampled.update_sampled) == (None, 65_536)
    assert str(row_cells(exact)[update]) == "2.50e-03" and str(row_cells(sampled)[update]) == "≈2.50e-03"
    none = step_values([{"kind": "params", "step": 1, "items": [{**item, "update_ratio": None,
                                                                 "update_sampled": 65_536}]}], 1).param(old)
    assert str(row_cells(none)[update]) == "–"  # no ratio (no snapshot): nothing to estimate


def test_sampled_values_figures_are_shown_as_estimates(events):
    """``stats_sampled`` on a ``params`` item (a large tensor's norm, mean, std and NaN/Inf
    counts taken on its update's sample): ``≈`` before each of them, live and for a step gone
    back to; the gradient norm (always exact) and an item without the key stay plain."""
    from modscope.views.tui.state import ParamInfo
    from modscope.views.tui.step_values import step_values
    from modscope.views.tui.widgets.params_table import COLUMNS, row_cells

    figures = [COLUMNS.index(c) for c in ("norm", "mean", "std")]
    s = folded(events)
    w = s.params["blk.a.weight"]
    assert w.stats_sampled is None and not any(str(row_cells(w)[i]).startswith("≈") for i in figures)
    last = next(e for e in reversed(events) if e["kind"] == "params")
    fold(s, [{**last, "seq": 10**6, "items": [{**i, "update_sampled": 7, "stats_sampled": 7} for i in last["items"]]}])
    cells = row_cells(s.params["blk.a.weight"])
    assert s.params["blk.a.weight"].stats_sampled == 7
    assert all(str(cells[i])[0] == "≈" for i in figures)
    item = {"path": "a.w", "norm": 2.0, "grad_norm": 0.5, "update_ratio": 2.5e-3, "mean": 0.25, "std": 1.0,
            "nan": 0, "inf": 0}
    old = ParamInfo("a.w", [2], "float32", 2, True)
    sampled = step_values([{"kind": "params", "step": 1, "items": [{**item, "update_sampled": 65_536,
                                                                    "stats_sampled": 65_536}]}], 1).param(old)
    cells = [str(c) for c in row_cells(sampled)]
    assert [cells[i] for i in figures] == ["≈2", "≈0.25", "≈1"]
    assert cells[COLUMNS.index("grad norm")] == "0.5"
    exact = step_values([{"kind": "params", "step": 1, "items": [{**item, "update_sampled": 65_536}]}], 1).param(old)
    assert exact.stats_sampled is None and [str(row_cells(exact)[i]) for i in figures] == ["2", "0.25", "1"]
    nan = step_values([{"kind": "params", "step": 1, "items": [{**item, "norm": None, "std": None, "nan": 3,
                                                                "stats_sampled": 65_536}]}], 1).param(old)
    name = str(row_cells(nan)[COLUMNS.index("name")])
    assert name == "w ≈3 NaN 0 Inf" and str(row_cells(nan)[COLUMNS.index("norm")]) == "–"
