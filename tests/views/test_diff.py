"""``modscope.diff`` on hand-made traces, each with one known difference of each kind (structure,
firing order, numbers, graph, steps), and the testing helpers built on it. The traces are the
events of a small ``Net`` (``fc1``, ``act``, ``fc2``) built without any framework."""

from __future__ import annotations

import copy
from typing import Any

MODULES = ["", "fc1", "act", "fc2"]
CLASSES = {"": "Net", "fc1": "Linear", "act": "ReLU", "fc2": "Linear"}
EXTRA = {"": "", "fc1": "in_features=4, out_features=8, bias=True", "act": "",
         "fc2": "in_features=8, out_features=2, bias=True"}
PARAMS = {"fc1.weight": [8, 4], "fc1.bias": [8], "fc2.weight": [2, 8], "fc2.bias": [2]}
SHAPES = {"": [3, 2], "fc1": [3, 8], "act": [3, 8], "fc2": [3, 2]}


def summary(shape: list[int], base: float, tid: int | None = None) -> dict[str, Any]:
    """A tensor summary with statistics around ``base`` (mean ``base``, absmax ``2 base + 1``)."""
    s: dict[str, Any] = {"shape": list(shape), "dtype": "float32", "mean": base, "std": 0.5 + base / 10,
                         "min": -1.0 - base, "max": 1.0 + 2 * base, "absmax": 1.0 + 2 * base, "zeros": 0.25,
                         "nan": 0, "inf": 0}
    if tid is not None:
        s["tid"] = tid
    return s


class Builder:
    """Appends events with consecutive ``seq`` numbers."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def add(self, kind: str, step: int, **fields: Any) -> dict[str, Any]:
        e = {"v": 1, "kind": kind, "seq": len(self.events), "t": 1000 * len(self.events), "step": step, **fields}
        self.events.append(e)
        return e


def model_event(modules: list[str] = MODULES, params: dict[str, list[int]] = PARAMS) -> dict[str, Any]:
    return {"model": "Net",
            "modules": [{"path": p, "cls": CLASSES.get(p, "Linear"), "extra_repr": EXTRA.get(p, ""), "training": True,
                         "children": [c for c in modules if c and "." not in c] if p == "" else [],
                         "aliases": []} for p in modules],
            "params": [{"path": p, "shape": s, "dtype": "float32", "numel": 1, "requires_grad": True}
                       for p, s in params.items()],
            "buffers": []}


def make(steps: int = 2, *, framework: str = "engine", end: bool = True, graph: bool = True) -> list[dict[str, Any]]:
    """A complete trace: session, model, then per step forward (fc1, act, fc2 inside the root),
    a graph (step 0), backward in reverse, an optimizer step and the params event."""
    b = Builder()
    b.add("session", 0, schema=1, engine_version="0", framework=framework, modscope_version="0", pid=1,
          started="now", argv=[])
    b.add("model", 0, **model_event())
    for step in range(steps):
        v = 0.1 * (step + 1)
        b.add("forward_pre", step, path="", call=0, inputs=[summary([3, 4], v, 1)])
        for i, path in enumerate(MODULES[1:]):
            b.add("forward_pre", step, path=path, call=0, inputs=[summary([3, 4] if i == 0 else [3, 8], v + i, 1 + i)])
            b.add("forward", step, path=path, call=0, outputs=[summary(SHAPES[path], v + i + 1, 2 + i)],
                  dur_ns=1000 + i)
        b.add("forward", step, path="", call=0, outputs=[summary([3, 2], v + 3, 4)], dur_ns=5000)
        if graph and step == 0:
            b.add("graph", step, nodes=[
                {"id": 0, "op": "AddmmBackward0", "module": "fc2", "shape": [3, 2], "saved_bytes": 8, "inputs": [1]},
                {"id": 1, "op": "ReluBackward0", "module": "act", "shape": [3, 8], "saved_bytes": 8, "inputs": [2]},
                {"id": 2, "op": "AddmmBackward0", "module": "fc1", "shape": [3, 8], "saved_bytes": 8, "inputs": [3]},
                {"id": 3, "op": "AccumulateGrad", "module": None, "shape": [8], "saved_bytes": 0, "inputs": []},
                {"id": 4, "op": "SumBackward0", "module": None, "shape": [], "saved_bytes": 0, "inputs": [0]}],
                edges=[[1, 0], [2, 1], [3, 2], [0, 4]], leaves=[{"id": 3, "path": "fc1.bias", "shape": [8]}])
        b.add("backward_pre", step, path="", call=0, grad_outputs=[summary([3, 2], -v)])
        for i, path in enumerate(reversed(MODULES[1:])):
            b.add("backward_pre", step, path=path, call=0, grad_outputs=[summary(SHAPES[path], -v - i)])
            b.add("backward", step, path=path, call=0, grad_inputs=[summary([3, 4], -v - i - 1)], dur_ns=2000 + i)
        b.add("backward", step, path="", call=0, grad_inputs=[None], dur_ns=7000)
        b.add("step", step, optimizer="SGD", index=step, lrs=[0.1])
        b.add("params", step, items=[{"path": p, "norm": 1.0 + k + v, "grad_norm": 0.5 + k, "update_ratio": 0.01 * (k + 1),
                                      "mean": 0.0, "std": 0.1, "nan": 0, "inf": 0}
                                     for k, p in enumerate(PARAMS)])
    if end:
        b.add("end", steps, status="ok", dropped=0)
    return b.events


def clone(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return copy.deepcopy(events)


def find(events: list[dict[str, Any]], kind: str, path: str | None = None, step: int = 0, call: int = 0) -> dict[str, Any]:
    """The event of ``kind`` (of module ``path``, ``call``) in ``step``."""
    return next(e for e in events if e["kind"] == kind and e["step"] == step
                and (path is None or (e.get("path") == path and e.get("call") == call)))


# --- the tests -----------------------------------------------------------------------------------

import json  # noqa: E402
import math  # noqa: E402

import pytest  # noqa: E402

import modscope  # noqa: E402
from modscope.testing import assert_close_traces, assert_same_firing_order  # noqa: E402
from modscope.views.diff import DiffInputError, diff, rel_diff  # noqa: E402
from modscope.views.diff.compute import step_ranges  # noqa: E402


def _json(d) -> dict:
    """The plain data, through strict JSON (no NaN/Infinity) and back."""
    return json.loads(json.dumps(d.to_dict(), allow_nan=False))


def test_identical_traces_do_not_differ_and_their_plain_data_is_json():
    a = make()
    d = diff(a, clone(a))
    assert not d.diverged and d.exit_code == 0 and d.first is None
    assert [(s.step_a, s.step_b) for s in d.steps] == [(0, 0), (1, 1)]
    assert all(s.max_rel == 0 for s in d.steps)
    assert [m.path for m in d.modules] == MODULES
    plain = _json(d)
    assert plain["diverged"] is False and plain["rtol"] == 1e-3
    assert plain["steps"][0]["modules"]["fc1"]["worst"]["output"]["rel"] == 0.0
    assert "no difference beyond rtol 0.001" in str(d)


def test_session_times_seqs_and_tensor_ids_are_not_differences():
    a, b = make(framework="engine"), make(framework="torch")
    for e in b:
        e["t"] += 12345
        e["seq"] += 7
        for s in e.get("inputs", []) + e.get("outputs", []):
            if s:
                s["tid"] += 100
        if "dur_ns" in e:
            e["dur_ns"] *= 3  # timings never decide unless asked
    b[0].update(pid=99, started="later", argv=["x"], engine_version="2.13")
    d = diff(a, b)
    assert not d.diverged, d.first
    assert d.a.framework == "engine" and d.b.framework == "torch"
    fc1 = d.steps[0].modules["fc1"]
    assert fc1.worst["fwd_time"].rel == pytest.approx(2 / 3) and not fc1.worst["fwd_time"].diverged


def test_relative_difference_definition():
    assert rel_diff(1.0, 1.0) == 0.0
    assert rel_diff(1.0, 1.1) == pytest.approx(0.1 / 1.1)
    assert rel_diff(-2.0, 2.0) == pytest.approx(2.0)
    assert rel_diff(1e-9, 3e-9, scale=1.0) == pytest.approx(2e-9)  # noise in a tensor of magnitude 1
    assert rel_diff(0.0, 1e-20) == pytest.approx(1e-8)  # max(|a|, |b|, 1e-12)
    assert rel_diff(None, None) == 0.0 and rel_diff(None, 1.0) == math.inf


def test_an_output_statistic_names_its_module_step_and_numbers():
    a = make()
    b = clone(a)
    find(b, "forward", "fc2", step=1)["outputs"][0]["mean"] += 0.05
    d = diff(a, b)
    assert d.diverged and d.exit_code == 1
    f = d.first
    assert (f.kind, f.path, f.step_a, f.step_b) == ("number", "fc2", 1, 1)
    n = f.number
    assert n.category == "output" and n.what == "forward output[0] mean"
    base = 0.2 + 3  # step 1, fc2 (third child): base 3.2, absmax 1 + 2 base
    assert n.a == pytest.approx(base) and n.b == pytest.approx(base + 0.05)
    assert n.rel == pytest.approx(0.05 / (1 + 2 * base))
    assert n.seq_a == find(a, "forward", "fc2", step=1)["seq"]
    assert not d.steps[0].diverged and d.steps[1].diverged
    assert d.steps[1].modules["fc2"].diverged == 1 and d.steps[1].modules["fc1"].diverged == 0
    text = str(d)
    assert "diverged at step 1 in module fc2" in text.replace("\n", " ")
    assert "fc2 Linear ◀ first" in text


def test_the_threshold_decides():
    a = make()
    b = clone(a)
    find(b, "forward", "fc1")["outputs"][0]["std"] += 0.005  # rel 0.005 / absmax 3.2 ≈ 1.6e-3
    assert diff(a, b).diverged
    assert not diff(a, b, rtol=1e-2).diverged
    with pytest.raises(ValueError, match="rtol must be >= 0"):
        diff(a, b, rtol=-1)


def test_a_mean_near_zero_is_compared_to_the_tensors_magnitude():
    a = make()
    b = clone(a)
    find(a, "forward", "fc1")["outputs"][0]["mean"] = 1e-9
    find(b, "forward", "fc1")["outputs"][0]["mean"] = 3e-9
    assert not diff(a, b, rtol=1e-6).diverged


def test_nan_counts_must_be_equal():
    a = make()
    b = clone(a)
    find(b, "backward", "act")["grad_inputs"][0].update(nan=1, mean=None, std=None)
    d = diff(a, b, rtol=10.0)  # any threshold: a NaN that one side has is a difference
    assert d.first.path == "act" and d.first.number.category == "grad_input"
    assert d.first.number.what == "backward grad_input[0] mean"  # mean None vs a number comes first


def test_shape_and_dtype_changes_of_a_value():
    a = make()
    b = clone(a)
    find(b, "forward", "act")["outputs"][0]["shape"] = [3, 9]
    d = diff(a, b)
    assert d.first.path == "act" and d.first.number.category == "shape"
    assert d.first.number.a == "[3, 8] float32" and d.first.number.b == "[3, 9] float32"
    b = clone(a)
    find(b, "forward_pre", "fc1")["inputs"][0]["dtype"] = "float64"
    d = diff(a, b)
    assert d.first.path == "fc1" and "float64" in d.first.message


def test_structure_added_removed_changed():
    a = make()
    b = clone(a)
    model = find(b, "model")
    model["modules"].append({"path": "extra", "cls": "Dropout", "extra_repr": "p=0.5", "training": True,
                             "children": [], "aliases": []})
    fc2 = next(m for m in model["modules"] if m["path"] == "fc2")
    fc2["extra_repr"] = "in_features=8, out_features=3, bias=True"
    model["params"] = [p for p in model["params"] if p["path"] != "fc1.bias"]
    next(p for p in model["params"] if p["path"] == "fc2.weight")["shape"] = [3, 8]
    model["buffers"].append({"path": "fc1.scale", "shape": [1], "dtype": "float32", "numel": 1, "persistent": True})
    d = diff(a, b)
    changes = {(c.what, c.name, c.change, c.path) for c in d.structure}
    assert changes == {("module", "extra", "added", "extra"), ("module", "fc2", "changed", "fc2"),
                       ("parameter", "fc1.bias", "removed", "fc1"), ("parameter", "fc2.weight", "changed", "fc2"),
                       ("buffer", "fc1.scale", "added", "fc1")}
    assert d.first.kind == "structure" and d.first.step_a is None
    assert [m.path for m in d.modules] == MODULES + ["extra"]
    assert d.modules[-1].cls_a is None and d.modules[-1].cls_b == "Dropout"
    text = str(d)
    assert "Structure" in text and "only in B" in text and "out_features=3" in text


def test_a_model_of_another_class_is_a_structure_difference():
    a = make()
    b = clone(a)
    find(b, "model")["model"] = "Other"
    d = diff(a, b)
    assert d.first.kind == "structure" and "model (root) is Net in A, Other in B" in d.first.message


def test_firing_order_split_with_context():
    a = make()
    b = clone(a)
    evs = [e for e in b if e["step"] == 1]
    i = next(k for k, e in enumerate(evs) if e["kind"] == "backward_pre" and e["path"] == "fc2")
    j = next(k for k, e in enumerate(evs) if e["kind"] == "backward" and e["path"] == "fc2")
    pi, pj = b.index(evs[i]), b.index(evs[j])
    b[pi:pj + 1] = [b[pi + 1], b[pi]] + b[pi + 2:pj + 1]  # backward fires before backward_pre (a mutilated order)
    d = diff(a, b)
    o = d.steps[1].order
    assert o is not None and d.steps[0].order is None
    assert o.a == ["backward_pre", "fc2", 0] and o.b == ["backward", "fc2", 0]
    assert o.position == 9  # 8 forward events, the root's backward_pre, then fc2
    assert o.start == 6 and o.context_a[3] == o.a and o.context_b[3] == o.b
    assert o.seq_a == find(a, "backward_pre", "fc2", step=1)["seq"]
    assert d.first.kind == "order" and d.first.step_a == 1 and d.first.path == "fc2"
    assert "Firing order parts at event 9" in str(d)
    with pytest.raises(AssertionError, match=r"step 1, event 9: a has \('backward_pre', 'fc2', 0\), "
                                             r"b has \('backward', 'fc2', 0\)"):
        assert_same_firing_order(a, b)
    assert_same_firing_order(a, clone(a))


def test_an_order_that_ends_early_and_a_call_on_one_side_only():
    a = make(steps=1)
    b = clone(a)
    b.insert(b.index(find(b, "forward", "")), {**find(b, "forward_pre", "act"), "call": 1})
    b.insert(b.index(find(b, "forward", "")), {**find(b, "forward", "act"), "call": 1})
    d = diff(a, b)
    assert d.steps[0].order.position == 7 and d.steps[0].order.a == ["forward", "", 0]
    assert d.steps[0].order.b == ["forward_pre", "act", 1]
    calls = d.steps[0].modules["act"].worst["calls"]
    assert (calls.what, calls.a, calls.b) == ("forward call 1", "not called", "called")
    # the split comes first in A's order (position 7), before the extra call (after A's events)
    assert d.first.kind == "order"
    b = clone(a)
    cut = b.index(find(b, "backward", ""))
    d = diff(a, b[:cut] + b[cut + 1:])
    o = d.steps[0].order
    assert o.b is None and o.a == ["backward", "", 0] and "(the order ends)" in str(d)


def test_graph_ops_added_removed_and_noise_ignored():
    a = make()
    b = clone(a)
    g = find(b, "graph")
    g["nodes"][1]["op"] = "GeluBackward0"
    g["nodes"].append({"id": 9, "op": "BackwardHookFunctionBackward", "module": "fc1", "shape": [3, 8],
                       "saved_bytes": 0, "inputs": []})
    g["nodes"][3]["op"] = "torch::autograd::AccumulateGrad"
    d = diff(a, b)
    assert [(c.path, c.added, c.removed) for c in d.graph] == [("act", {"GeluBackward0": 1}, {"ReluBackward0": 1})]
    assert d.first.kind == "graph" and d.first.path == "act"
    assert "+GeluBackward0, -ReluBackward0" in d.first.message
    assert "Autograd ops" in str(d)
    # no graph on one side (graph=False when recording): not compared
    assert not diff(a, make(graph=False)).graph


def test_parameter_numbers_belong_to_their_module():
    a = make()
    b = clone(a)
    item = next(i for i in find(b, "params", step=0)["items"] if i["path"] == "fc2.bias")
    item["update_ratio"] *= 1.5
    d = diff(a, b)
    n = d.first.number
    assert (d.first.path, n.category, n.what) == ("fc2", "update_ratio", "fc2.bias update_ratio")
    assert d.first.step_a == 0
    b = clone(a)
    find(b, "params", step=0)["items"].pop()
    d = diff(a, b)
    assert d.first.path == "fc2" and d.first.number.category == "params"


def test_the_first_divergence_is_the_earliest_in_firing_order():
    a = make()
    b = clone(a)
    find(b, "forward", "fc2")["outputs"][0]["max"] += 1.0
    find(b, "forward", "fc1")["outputs"][0]["max"] += 1.0  # fires before fc2
    find(b, "backward", "fc2", step=1)["grad_inputs"][0]["max"] += 1.0
    d = diff(a, b)
    assert (d.first.path, d.first.step_a) == ("fc1", 0)
    assert [s.first.path for s in d.steps] == ["fc1", "fc2"]


def test_timings_count_only_when_asked():
    a = make()
    b = clone(a)
    find(b, "forward", "act")["dur_ns"] *= 10
    assert not diff(a, b).diverged
    d = diff(a, b, timing=0.5)
    assert d.first.path == "act" and d.first.number.category == "fwd_time"


def test_steps_on_one_side_only():
    a, b = make(steps=3), make(steps=2)
    d = diff(a, b)
    assert d.only_a == [2] and d.only_b == []
    assert d.first.kind == "steps" and d.first.message == "steps 2 only in A" and d.first.step_a == 2
    assert "note: steps 2 only in A" in str(d)


def test_a_truncated_trace_is_compared_as_far_as_it_goes():
    a = make(steps=3)
    b = make(steps=3, end=False)
    cut = b.index(find(b, "backward", "fc1", step=1))
    b = b[:cut]  # killed during step 1's backward
    d = diff(a, b)
    assert not d.b.truncated  # a list of events does not say; a loaded trace does (see the CLI tests)
    d = diff(a, modscope.views.trace.RecordedTrace(b, "cut.jsonl", truncated=True))
    assert d.b.truncated and d.only_a == [2]
    assert d.steps[1].partial and not d.steps[0].partial
    assert any("was cut off" in n for n in d.notes)
    # what is there agrees; what is missing after the cut is no difference
    assert d.steps[0].first is None
    assert d.steps[1].first.number.category == "calls"  # fc1's backward was cut: named, and the run differs
    assert d.first.step_a == 1


def test_two_steps_of_one_trace_and_a_missing_step():
    a = make(steps=3)
    d = diff(a, a, step=(0, 2))
    assert [(s.step_a, s.step_b) for s in d.steps] == [(0, 2)]
    assert d.first.path == "" and d.first.number.what == "forward input[0] mean"
    assert "at step 0 of A / 2 of B" in str(d)
    assert not diff(a, a, step=1).diverged
    with pytest.raises(DiffInputError, match=r"^events: no step 7 in this trace \(it has steps 0-2\)$"):
        diff(a, a, step=(0, 7))
    with pytest.raises(TypeError, match="step must be an int or a pair"):
        diff(a, a, step="1")


def test_step_ranges():
    assert step_ranges([0, 1, 2, 5, 7, 8]) == "0-2, 5, 7-8"
    assert step_ranges([]) == ""


def test_assert_close_traces_names_the_first_module():
    a = make()
    assert_close_traces(a, clone(a))
    b = clone(a)
    find(b, "forward", "act", step=1)["outputs"][0]["std"] *= 2
    with pytest.raises(AssertionError, match=r"traces differ at step 1 in module 'act' \(rtol 0.001\): "
                                             r"forward output\[0\] std"):
        assert_close_traces(a, b)
    assert_close_traces(a, b, step=0)
    assert_close_traces(a, b, rtol=1.0)


def test_diff_is_public():
    assert modscope.diff is diff and "diff" in modscope.__all__
    with pytest.raises(TypeError, match="not int"):
        diff(1, 2)


def test_per_parameter_numbers_for_a_parameter_table():
    a = make()
    b = clone(a)
    next(i for i in find(b, "params", step=1)["items"] if i["path"] == "fc1.weight")["grad_norm"] *= 1.1
    d = diff(a, b)
    params = d.steps[1].params
    assert set(params) == set(PARAMS) and set(params["fc1.bias"]) == {"norm", "grad_norm", "update_ratio", "nan", "inf"}
    assert params["fc1.weight"]["grad_norm"].diverged and not params["fc1.weight"]["norm"].diverged
    assert not any(n.diverged for p, ns in params.items() if p != "fc1.weight" for n in ns.values())
    assert _json(d)["steps"][1]["params"]["fc1.weight"]["grad_norm"]["diverged"] is True


def test_steps_a_trace_lost_while_recording_are_a_note():
    a = make(steps=3)
    b = [e for e in make(steps=3) if e["step"] != 0 or e["kind"] in ("session", "model")]  # step 0 evicted
    find(b, "end", step=3)["dropped"] = 21
    d = diff(a, b)
    assert d.only_a == [0] and not d.diverged
    assert "B (events) lost 21 events while recording (the recorder's memory bound): it holds steps 1-2" in d.notes
    assert "steps 0 only in A (events lost events)" in d.notes
    assert d.diverged is diff(b, a).diverged is False
