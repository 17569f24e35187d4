"""modscope.trace: firing order against torch's, hooks removed on exit, events and their content,
user hooks, optimizer steps, stats and NaN detection, robustness. Each test that takes ``lib``
runs on both capture backends (models built with the engine, then with torch)."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest

import engine
import modscope
from modscope.capture.backends import load
from modscope.events import validate
from modscope.testing import assert_firing_order, assert_no_hooks, hooks_on
from tests.modscope.fakes import RecordingSink
from tests.modscope.models import comparable_events, hook_order, nested_model, sequential_model, sgd_steps

warnings.filterwarnings("ignore", message="Full backward hook is firing")


def run(lib, model, grad_input=True, seed=1, **trace_kw):
    with modscope.trace(model, **trace_kw) as tr:
        lib.manual_seed(seed)
        model(lib.randn(3, 4, requires_grad=grad_input)).sum().backward()
    return tr


@pytest.mark.parametrize("build", [nested_model, sequential_model], ids=["nested", "sequential"])
@pytest.mark.parametrize("grad_input", [True, False])
def test_firing_order_matches_torch(torch, lib, build, grad_input):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = hook_order(torch, build(torch), grad_input)
    tr = run(lib, build(lib), grad_input)
    assert_firing_order(tr, expected)


def test_global_mode_traces_every_module_that_runs(torch, lib):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = hook_order(torch, nested_model(torch), True)
    model = nested_model(lib)
    with modscope.trace(backend=lib.__name__) as tr:  # both are imported: torch must be asked for
        lib.manual_seed(1)
        model(lib.randn(3, 4, requires_grad=True)).sum().backward()
    assert_firing_order(tr, expected)
    assert [e["model"] for e in tr.events if e["kind"] == "model"] == ["Net"]
    assert tr.events[0]["framework"] == lib.__name__


def test_every_event_is_valid_and_numbered(lib):
    tr = run(lib, nested_model(lib), stats=True)
    events = tr.events
    assert [e["seq"] for e in events] == list(range(len(events)))
    for e in events:
        validate(e)
    assert events[0]["kind"] == "session" and events[1]["kind"] == "model" and events[-1]["kind"] == "end"


def test_model_event_describes_the_tree(lib):
    tr = run(lib, nested_model(lib))
    model = next(e for e in tr.events if e["kind"] == "model")
    mods = {m["path"]: m for m in model["modules"]}
    assert list(mods) == ["", "blk", "blk.a", "blk.b", "head"]
    assert mods[""]["children"] == ["blk", "head", "alias"] and mods["head"]["aliases"] == ["alias"]
    assert mods["blk.a"]["extra_repr"] == "in_features=4, out_features=4, bias=True"
    assert [p["path"] for p in model["params"]][:2] == ["blk.a.weight", "blk.a.bias"]
    assert sum(p["numel"] for p in model["params"]) == 50  # the shared head counted once


def test_call_indices_count_reuse_within_a_step(lib):
    tr = run(lib, nested_model(lib))
    calls = [(e["path"], e["call"]) for e in tr.events if e["kind"] == "forward_pre"]
    assert calls == [("", 0), ("blk", 0), ("blk.a", 0), ("blk.b", 0), ("blk", 1), ("blk.a", 1), ("blk.b", 1),
                     ("head", 0)]


def test_summaries_follow_tensors_between_modules(lib):
    tr = run(lib, sequential_model(lib))
    fwd = {(e["path"], e["kind"]): e for e in tr.events if e["kind"] in ("forward_pre", "forward")}
    assert fwd[("0", "forward")]["outputs"][0]["tid"] == fwd[("1", "forward_pre")]["inputs"][0]["tid"]
    assert fwd[("0", "forward")]["outputs"][0]["shape"] == [3, 8]
    assert fwd[("0", "forward")]["outputs"][0]["dtype"] == "float32"
    assert fwd[("0", "forward")]["dur_ns"] > 0


def test_summaries_follow_tensors_through_a_users_full_backward_hook(lib):
    """With backward hooks of the user's on a module, its output reaches the next module through
    torch's identity ``BackwardHookFunction`` (a new tensor on the same data): still one tensor."""
    from modscope import graph

    model = sequential_model(lib)
    model[0].register_full_backward_hook(lambda m, gi, go: None)
    tr = run(lib, model)
    fwd = {(e["path"], e["kind"]): e for e in tr.events if e["kind"] in ("forward_pre", "forward")}
    flow = graph.build_dataflow(tr)
    edges = {(flow.nodes[e.source].lines[0], flow.nodes[e.target].lines[0]) for e in flow.edges}
    assert ("0: Linear", "1: ReLU") in edges and not [n for n in flow.nodes.values() if n.kind == "tensor"]
    assert fwd[("0", "forward")]["outputs"][0]["tid"] == fwd[("1", "forward_pre")]["inputs"][0]["tid"]


def test_no_hooks_left_after_exit_even_when_code_raises(lib):
    model = nested_model(lib)
    user_handle = model.head.register_forward_hook(lambda m, a, o: None)
    before = hooks_on(model)
    with pytest.raises(ZeroDivisionError), modscope.trace(model) as tr:
        model(lib.randn(3, 4)).sum()
        1 / 0  # noqa: B018
    assert_no_hooks(model, allowed=before)
    assert model.head._forward_hooks[user_handle.id] is not None
    assert not isinstance(model.head._forward_hooks[user_handle.id], type(model.head._forward_hooks))
    error = next(e for e in tr.events if e["kind"] == "error")
    assert error["etype"] == "ZeroDivisionError" and "1 / 0" in error["traceback"]
    assert tr.events[-1] == {**tr.events[-1], "kind": "end", "status": "error"}
    m = lib.nn.modules.module
    assert not m._global_forward_hooks and not m._global_forward_pre_hooks


def test_user_hooks_become_hook_events_and_keep_their_effect(lib):
    model = nested_model(lib)

    def double_output(mod, args, out):
        return out * 2

    model.head.register_forward_hook(double_output)
    lib.manual_seed(1)
    x = lib.randn(3, 4)
    expected = model(x).detach().numpy()
    with modscope.trace(model) as tr:
        got = model(x).detach().numpy()
    np.testing.assert_allclose(got, expected)
    hook = next(e for e in tr.events if e["kind"] == "hook")
    assert hook["qualname"].endswith("double_output") and hook["target"] == "head"
    assert hook["hook_kind"] == "forward" and hook["replaced"] is True
    assert model.head._forward_hooks and all(f is double_output for f in model.head._forward_hooks.values())


def test_a_user_hook_that_raises_is_reported_and_still_raises(lib):
    model = nested_model(lib)

    def broken(mod, args):
        raise KeyError("boom")

    model.blk.a.register_forward_pre_hook(broken)
    with pytest.raises(KeyError), modscope.trace(model) as tr:
        model(lib.randn(3, 4))
    errors = [e for e in tr.events if e["kind"] == "error"]
    assert errors[0]["where"].startswith("forward_pre hook") and errors[0]["module"] == "blk.a"


@pytest.mark.parametrize("stats", [False, True])
def test_a_failure_inside_the_tracer_never_breaks_training(monkeypatch, lib, stats):
    def explode(*a, **k):
        raise RuntimeError("tracer bug")

    monkeypatch.setattr(load(lib.__name__), "capture_all", explode)  # every summary goes through it
    model = nested_model(lib)
    tr = run(lib, model, stats=stats)  # no exception reaches the training code
    errors = [e for e in tr.events if e["kind"] == "error"]
    assert errors and all(e["message"] == "tracer bug" for e in errors)


def test_include_exclude_globs(lib):
    tr = run(lib, nested_model(lib), include=["blk*"], exclude=["*.b"])
    assert {p for _, p in tr.firing_order()} == {"blk", "blk.a"}


def test_max_events_keeps_headers_and_counts_drops(lib):
    model = nested_model(lib)
    with modscope.trace(model, max_events=5) as tr:
        for _ in range(3):
            model(lib.randn(3, 4)).sum().backward()
    kinds = [e["kind"] for e in tr.events]
    assert kinds[:2] == ["session", "model"] and len(kinds) == 8 and tr.dropped > 0
    assert tr.events[-1]["kind"] == "end" and tr.events[-1]["dropped"] == tr.dropped


def test_a_model_met_mid_step_in_global_mode_stays_a_kept_header(lib):
    """In global mode a second root model that first runs in the middle of a step emits its
    ``model`` event behind that step's recorded module events: delivered in one batch with
    them, it must still land among the headers a bounded trace never evicts."""
    first, second = nested_model(lib), lib.nn.Linear(2, 2)
    with modscope.trace(max_events=3, backend=lib.__name__) as tr:
        second(first(lib.randn(3, 4))).sum().backward()  # the second root, mid-step
        for _ in range(3):  # enough events to evict everything but the headers
            first(lib.randn(3, 4)).sum().backward()
    models = [e for e in tr.events if e["kind"] == "model"]
    assert len(models) == 2 and tr.dropped > 0
    assert [e["kind"] for e in tr.events].count("session") == 1


def test_with_a_sink_the_end_event_counts_what_the_sinks_dropped(lib):
    """``modscope run`` keeps a small in-memory window next to its viewer and file sinks: what
    the window evicted reached the sinks, so the end event (which the viewer shows as dropped)
    does not count it."""
    sink = RecordingSink()
    model = nested_model(lib)
    with modscope.trace(model, max_events=5, sink=sink) as tr:
        for _ in range(3):
            model(lib.randn(3, 4)).sum().backward()
    assert tr.dropped > 0 and sink.events[-1]["kind"] == "end" and sink.events[-1]["dropped"] == 0
    assert [e["seq"] for e in sink.events] == list(range(len(sink.events)))
    sink = RecordingSink()
    with modscope.trace(model, max_events=5, sink=sink):
        sink.dropped = 7  # a sink that had to drop some (a viewer far behind)
    assert sink.events[-1]["dropped"] == 7


def test_optimizer_steps_advance_the_step_and_report_params(lib):
    model = nested_model(lib)
    opt = lib.optim.SGD(model.parameters(), lr=0.1)
    with modscope.trace(model) as tr:
        for _ in range(2):
            opt.zero_grad()
            loss = model(lib.randn(3, 4)).pow(2).mean()
            loss.backward()
            tr.log(loss=loss.item(), nan=float("nan"))
            opt.step()
    steps = [e for e in tr.events if e["kind"] == "step"]
    assert [(s["step"], s["index"], s["lrs"]) for s in steps] == [(0, 0, [0.1]), (1, 1, [0.1])]
    params = [e for e in tr.events if e["kind"] == "params"]
    assert len(params) == 2 and params[0]["items"][0]["path"] == "blk.a.weight"
    item = params[0]["items"][0]
    assert item["grad_norm"] > 0 and 0 < item["update_ratio"] < 1 and item["nan"] == 0
    metric = next(e for e in tr.events if e["kind"] == "metric")
    assert metric["values"]["nan"] is None and isinstance(metric["values"]["loss"], float)
    assert {e["step"] for e in tr.events if e["kind"] == "forward"} == {0, 1}


def test_manual_step_without_optimizer(lib):
    model = nested_model(lib)
    with modscope.trace(model) as tr:
        model(lib.randn(3, 4)).sum().backward()
        tr.step()
        tr.step()  # nothing happened since: not a new step
        model(lib.randn(3, 4))
    assert max(e["step"] for e in tr.events) == 1
    assert next(e for e in tr.events if e["kind"] == "params")["items"][0]["update_ratio"] is None


def test_stats_and_first_nan_is_reported_with_its_module(lib):
    model = nested_model(lib)
    with lib.no_grad():
        model.blk.b.weight[0, 0] = float("nan")
    tr = run(lib, model, stats=True)
    out = next(e for e in tr.events if e["kind"] == "forward" and e["path"] == "blk.a")["outputs"][0]
    assert {"mean", "std", "min", "max", "absmax", "zeros", "nan", "inf"} <= out.keys()
    nan_errors = [e for e in tr.events if e["kind"] == "error" and e["etype"] == "NonFiniteValue"]
    assert nan_errors[0]["module"] == "blk.b" and nan_errors[0]["where"] == "forward output"


def test_graph_event_labels_nodes_with_their_module(lib):
    tr = run(lib, nested_model(lib))
    graph = next(e for e in tr.events if e["kind"] == "graph")
    ops = {(n["op"], n["module"]) for n in graph["nodes"]}
    assert ("AddmmBackward0", "head") in ops and ("ReluBackward0", "blk") in ops
    assert ("AddBackward0", "blk") in ops  # the residual add belongs to the block, not a Linear
    leaves = {leaf["path"] for leaf in graph["leaves"]}
    assert {"head.weight", "blk.a.weight", "blk.b.bias"} <= leaves


def test_deprecated_backward_hook_module_is_skipped_not_broken():
    # engine only: its tracer's full hooks cannot join a non-full one; torch's uses none (test below)
    model = nested_model(engine)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.head.register_backward_hook(lambda m, gi, go: None)
    with pytest.warns(FutureWarning, match="non-full backward hook"):  # torch warns too for a Linear
        tr = run(engine, model)
    assert any(e["kind"] == "error" and e["etype"] == "TracingSkipped" and e["module"] == "head" for e in tr.events)
    assert ("forward", "head") in tr.firing_order()


def test_deprecated_backward_hook_is_a_hook_event_on_torch(torch):
    model = nested_model(torch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.head.register_backward_hook(lambda m, gi, go: None)
        tr = run(torch, model)
    assert not [e for e in tr.events if e["kind"] == "error"]
    order = tr.firing_order()
    assert order.index(("backward_pre", "head")) < order.index(("backward", "head"))
    assert [(e["target"], e["hook_kind"]) for e in tr.events if e["kind"] == "hook"] == [("head", "backward")]


def test_reports_render(lib):
    from rich.console import Console

    tr = run(lib, nested_model(lib))
    console = Console(width=160, record=True)
    console.print(tr.summary())
    console.print(tr.tree())
    console.print(tr.timeline())
    text = console.export_text()
    assert "Mult-adds" in text and "216" in text  # 2 x (2 x 48) + 24 multiply-adds
    assert "shared with alias" in text and "▶ forward_pre  blk.a" in text


def test_trace_cannot_start_twice(lib):
    tr = modscope.trace(nested_model(lib)).start()
    with pytest.raises(RuntimeError, match="already running"):
        tr.start()
    tr.stop()


def test_testing_helpers_fail_with_a_useful_message(lib):
    tr = run(lib, nested_model(lib))
    with pytest.raises(AssertionError, match="differs at position 1"):
        assert_firing_order(tr, [("forward_pre", ""), ("forward_pre", "head")], kinds=("forward_pre",))
    with pytest.raises(AssertionError, match="has 8 events, expected 1"):
        assert_firing_order(tr, [("forward_pre", "")], kinds=("forward_pre",))
    model = nested_model(lib)
    model.blk.register_forward_hook(lambda m, a, o: None)
    with pytest.raises(AssertionError, match=r"hooks left on the model: \{'blk': \{'forward_hooks': 1\}\}"):
        assert_no_hooks(model)


def test_tracing_never_forbids_inplace_updates_of_module_outputs(lib):
    """torch refuses ``out += x`` on an output behind full backward hooks; the tracer's hooks are
    observers, so a ResNet-style block still trains (with the same gradients) while traced."""

    def build(lib):
        lib.manual_seed(0)

        class Block(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = lib.nn.Linear(4, 4)
                self.act = lib.nn.ReLU()

            def forward(self, x):
                out = self.fc(x)
                out += x  # in place on a hooked module output
                return self.act(out)

        return Block()

    model = build(lib)
    x = lib.randn(3, 4, requires_grad=True)
    model(x).sum().backward()
    expected = model.fc.weight.grad.numpy().copy()
    model.zero_grad()
    with modscope.trace(model) as tr:
        model(x).sum().backward()
    np.testing.assert_allclose(model.fc.weight.grad.numpy(), expected, rtol=1e-6)
    assert ("backward", "fc") in tr.firing_order()
    # A user's own full backward hook keeps torch's rule.
    model.fc.register_full_backward_hook(lambda m, gi, go: None)
    with pytest.raises(RuntimeError, match="is a view and is being modified inplace"):
        model(x)


def test_session_log_and_watch_outside_and_inside_a_session(lib):
    from modscope.capture import session

    modscope.log(loss=1.0)  # no session: nothing happens, nothing raises
    model = nested_model(lib)
    tr = modscope.watch(model)
    assert tr.model is model and tr._running
    tr.stop()
    outer = modscope.trace(backend=lib.__name__).start()
    session.active = outer
    try:
        modscope.log(loss=0.5)
        narrowed = modscope.watch(model)
        model(lib.randn(3, 4))
    finally:
        session.active = None
        outer.stop()
    assert narrowed is outer and outer.model is model
    assert any(e["kind"] == "metric" and e["values"] == {"loss": 0.5} for e in outer.events)
    assert ("forward", "blk.a") in outer.firing_order()


def test_log_takes_a_tensor_that_requires_grad_without_a_warning_and_names_a_bad_metric(lib):
    model = nested_model(lib)
    x = lib.randn(3, 4)
    with modscope.trace(model) as tr:
        loss = model(x).pow(2).mean()
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # float() of a tensor that requires grad warns in torch
            tr.log(loss=loss, lr=0.1)
        with pytest.raises(TypeError, match=r"metric 'acc' must be a number or a one-element tensor, not str"):
            tr.log(acc="high")
        with pytest.raises(TypeError, match=r"metric 'acc' must be a number .* not Tensor"):
            tr.log(acc=lib.ones(3))
    metrics = [e["values"] for e in tr.events if e["kind"] == "metric"]
    assert metrics == [{"loss": pytest.approx(float(loss.detach()), rel=1e-6), "lr": 0.1}]


def test_tensor_hooks_become_hook_events():
    # engine only: the engine's tracer wraps the user's tensor hooks; torch's tensor hooks are not timed
    model = nested_model(engine)
    seen = []

    def halve(grad):
        seen.append(tuple(grad.shape))
        return grad * 0.5

    model.head.weight.register_hook(halve)
    with modscope.trace(model) as tr:
        x = engine.randn(3, 4)
        hidden = model.blk(x)
        hidden.register_hook(lambda g: None)  # on an intermediate tensor of this step
        model.head(hidden).sum().backward()
    hooks = [e for e in tr.events if e["kind"] == "hook" and e["hook_kind"] == "tensor"]
    targets = {(e["target"], e["replaced"]) for e in hooks}
    assert ("head.weight", True) in targets and seen == [(2, 4)]
    assert any(not replaced for _, replaced in targets)
    assert all(not hasattr(h, "fn") for h in model.head.weight._backward_hooks.values())  # unwrapped


def test_a_model_trace_ignores_other_models_optimizers(lib):
    traced_model, other = nested_model(lib), nested_model(lib, seed=1)
    other_opt = lib.optim.SGD(other.parameters(), lr=0.1)
    with modscope.trace(traced_model) as tr:
        other(lib.randn(3, 4)).sum().backward()
        other_opt.step()
    assert not [e for e in tr.events if e["kind"] in ("step", "params")]
    assert tr.events[-1]["step"] == 0


def test_a_sink_without_write_many_gets_every_event_in_order(lib):
    sink = RecordingSink()
    model = nested_model(lib)
    opt = lib.optim.SGD(model.parameters(), lr=0.1)
    with modscope.trace(model, sink=modscope.events.sinks.TeeSink(sink)) as tr:
        model(lib.randn(3, 4)).sum().backward()
        opt.step()
    assert sink.events == tr.events


@pytest.mark.parametrize("fail_on", ["session", "forward"], ids=["immediate", "batched"])
def test_a_broken_sink_is_detached_with_an_error_and_training_goes_on(lib, fail_on):
    sink = RecordingSink(fail_on=fail_on)
    model = nested_model(lib)
    with modscope.trace(model, sink=sink) as tr:
        sgd_steps(lib, model, 2)
    errors = [e for e in tr.events if e["kind"] == "error"]
    assert len(errors) == 1 and errors[0]["where"] == "sink RecordingSink (detached)"
    assert errors[0]["message"] == "disk full"
    assert sum(e["kind"] == "params" for e in tr.events) == 2  # the trace itself carried on
    assert not any(e["kind"] == fail_on for e in sink.events)


def test_tracing_a_first_layer_whose_input_needs_no_grad_shows_no_warning(lib):
    # The tracer's backward hooks are transparent observers: torch's warning that backward hooks
    # fire without grad_input is for hooks that expect one, so the user never sees it because of us.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tr = run(lib, nested_model(lib), grad_input=False)
    assert ("backward", "") in tr.firing_order()


def test_gradient_statistics_see_a_user_hook_that_changes_a_gradient_in_place():
    # engine only: its tracer's hook runs before the user's; torch's backward event follows the user's hooks
    engine.manual_seed(0)
    model = engine.nn.Sequential(engine.nn.Linear(4, 4), engine.nn.Linear(4, 4))  # 0's output is 1's input

    def double_in_place(module, grad_input, grad_output):
        grad_input[0].mul_(2.0)  # allowed on a full backward hook's grad_input

    with modscope.trace(model, stats=True) as tr:
        model[1].register_full_backward_hook(double_in_place)  # runs after the tracer's own hook
        for _ in range(2):  # (the hook is timed, as a ``hook`` event, from its second call)
            model(engine.randn(3, 4, requires_grad=True)).sum().backward()
            tr.step()
    assert any(e["kind"] == "hook" and e["qualname"].endswith("double_in_place") for e in tr.events)
    events = {(e["kind"], e["path"]): e for e in tr.events if e["kind"] in ("backward", "backward_pre")}
    grad_in_1 = events[("backward", "1")]["grad_inputs"][0]
    grad_out_0 = events[("backward_pre", "0")]["grad_outputs"][0]
    # the same array: layer 1's event was recorded before the user's hook doubled it, layer 0's after
    assert grad_out_0["absmax"] == pytest.approx(2 * grad_in_1["absmax"])


def test_an_inference_loop_without_steps_still_delivers_as_it_goes(lib):
    # No optimizer step ends a step here: recorded events are delivered every 512 at the latest.
    sink = RecordingSink()
    model = nested_model(lib)
    with modscope.trace(model, sink=sink), lib.no_grad():
        for _ in range(100):  # 8 module calls a forward: 1,600 module events
            model(lib.randn(3, 4))
        delivered_before_exit = len(sink.events)
    assert len(sink.events) == 2 + 1600 + 1  # session, model, ..., end
    assert delivered_before_exit >= 2 + 1600 - 512
    assert [e["seq"] for e in sink.events] == list(range(len(sink.events)))


@pytest.mark.parametrize("stats", [False, True])
def test_deferred_and_immediate_delivery_give_the_same_events(lib, stats):
    def events(immediate):
        model = nested_model(lib)
        tr = modscope.trace(model, stats=stats)
        tr.immediate = immediate
        with tr:
            sgd_steps(lib, model, 2, seed=3, grad_input=True)
        return comparable_events(tr.events)

    deferred, immediate = events(False), events(True)
    assert deferred == immediate
    assert any(e["kind"] == "forward" for e in deferred)


@pytest.mark.parametrize("stats", [False, True])
def test_recorded_events_leave_the_garbage_collectors_lists(lib, stats):
    """A trace keeps thousands of recorded module events; the collector must not walk them at
    every full collection (it did, ~1% of a step, while summaries were lists and dicts)."""
    import gc

    model = nested_model(lib)
    with modscope.trace(model, stats=stats) as tr:
        sgd_steps(lib, model, 3, grad_input=True)
        for _ in range(2):  # a record holds its values' summary tuples: one level goes per pass
            gc.collect()
        records = [r for r in tr._memory.body if type(r) is tuple]
        assert len(records) > 20
        assert [r for r in records if gc.is_tracked(r)] == []


def test_reports_print_as_text_and_render_in_rich(lib):
    from rich.console import Console

    tr = run(lib, nested_model(lib))
    for report in (tr.summary(), tr.tree(), tr.timeline()):
        text = str(report)
        assert "<rich" not in text and "blk" in text
        console = Console(width=100, record=True, file=io.StringIO())
        console.print(report)
        assert "blk" in console.export_text()
    assert "Total" in str(tr.summary())
