"""The diagrams drawn from events (plain data): the autograd graph from a ``graph`` event and
the module tree from a ``model`` event, the same drawings as from live tensors and modules; the
events are recorded from engine models and from torch models (``lib``, ``lib_models``,
``traced_residual``: see ``conftest.py``)."""

from __future__ import annotations

import json

import pytest

import modscope
from modscope import events, graph
from modscope.capture.backends import load
from modscope.capture.diagrams import model_event_fields


def _shape(diagram) -> tuple:
    """Everything a diagram draws, independent of node ids."""
    label = {n.id: (n.kind, tuple(n.lines), n.cluster) for n in diagram.nodes.values()}
    clusters = {c.id: (c.label, c.parent) for c in diagram.clusters.values()}
    edges = sorted((label[e.source], label[e.target], e.kind, e.label) for e in diagram.edges)
    return sorted(label.values()), clusters, edges


def _residual_loss(lib, models):
    lib.manual_seed(0)
    model = models.Residual()
    with graph.attribute_modules(model):
        out = model(lib.randn(2, 4))
    return model, out.sum()


def test_the_live_builder_goes_through_the_event_fields(lib, lib_models, monkeypatch):
    model, loss = _residual_loss(lib, lib_models)
    calls = []
    backend = load(lib.__name__)
    real = backend.graph_event_fields
    monkeypatch.setattr(backend, "graph_event_fields", lambda *a: calls.append(a) or real(*a))
    graph.build_autograd_graph(loss, model)
    assert len(calls) == 1


@pytest.mark.parametrize("depth, show_saved", [(None, False), (None, True), (1, False), (2, False)])
def test_an_event_sent_as_json_draws_the_same_diagram(lib, lib_models, depth, show_saved):
    model, loss = _residual_loss(lib, lib_models)
    fields = load(lib.__name__).graph_event_fields([loss], dict(model.named_parameters()))
    received = json.loads(events.dumps(events.make("graph", 0, 0, 0, **fields)))
    events.validate(received)
    model_event = json.loads(json.dumps(model_event_fields(model)))
    from_event = graph.build_autograd_graph_from_event(received, model_event, depth=depth, show_saved=show_saved)
    live = graph.build_autograd_graph(loss, model, depth=depth, show_saved=show_saved)
    assert _shape(from_event) == _shape(live)
    assert from_event.name == "Residual"


def test_the_tracers_event_has_call_clusters_saved_tensors_and_outputs(traced_residual):
    graph_event, model_event = traced_residual
    assert graph_event["outputs"] == [{"id": 0, "shape": [2, 2]}]
    d = graph.build_autograd_graph_from_event(graph_event, model_event, show_saved=True)
    labels = {c.label for c in d.clusters.values()}
    assert {"block.act (Act) [call 1]", "block.act (Act) [call 2]", "block.fc1 (Linear)"} <= labels
    relu = next(n for n in d.nodes.values() if n.lines[0] == "ReluBackward0")
    (saved,) = [e.source for e in d.edges if e.target == relu.id and e.kind == "saved"]
    assert d.nodes[saved].lines == ["saved output", "(2, 8)"]


def test_an_event_recorded_before_the_extra_fields_still_draws(traced_residual):
    graph_event, model_event = traced_residual
    old = dict(graph_event, nodes=[{k: v for k, v in n.items() if k in ("id", "op", "module", "shape", "saved_bytes",
                                                                     "inputs")} for n in graph_event["nodes"]])
    del old["outputs"]
    d = graph.build_autograd_graph_from_event(old, model_event, show_saved=True)
    new = graph.build_autograd_graph_from_event(graph_event, model_event)
    assert sorted(n.lines[0] for n in d.nodes.values()) == sorted(n.lines[0] for n in new.nodes.values())
    assert [n.lines for n in d.nodes.values() if n.kind == "output"] == [["output", "(2, 2)"]]
    assert "block.act" in d.clusters and not any("[call" in c.label for c in d.clusters.values())
    assert not [n for n in d.nodes.values() if n.kind == "saved"]


def test_graph_events_that_cannot_be_drawn_say_why(traced_residual):
    graph_event, model_event = traced_residual
    with pytest.raises(ValueError, match="the graph is empty"):
        graph.build_autograd_graph_from_event(dict(graph_event, nodes=[], leaves=[], edges=[]))
    bad_input = dict(graph_event, nodes=[dict(graph_event["nodes"][0], inputs=[None, 77])])
    with pytest.raises(ValueError, match="node 0 has input 77, which is not a node"):
        graph.build_autograd_graph_from_event(bad_input)
    with pytest.raises(ValueError, match="output node 5 is not a node"):
        graph.build_autograd_graph_from_event(dict(graph_event, outputs=[{"id": 5, "shape": []}],
                                                   nodes=[dict(graph_event["nodes"][0], inputs=[])]))
    with pytest.raises(ValueError, match="depth must be"):
        graph.build_autograd_graph_from_event(graph_event, depth=-1)


def test_graph_event_fields_are_json_and_name_leaf_outputs(lib):
    graph_event_fields = load(lib.__name__).graph_event_fields
    x = lib.randn(3, requires_grad=True)
    fields = graph_event_fields([x, x.exp()], {})
    json.dumps(fields, allow_nan=False)
    # the engine names a leaf's node AccumulateGrad, torch torch::autograd::AccumulateGrad
    leaf = next(n for n in fields["nodes"] if n["op"].endswith("AccumulateGrad"))
    assert leaf["seq"] is None and fields["outputs"][0] == {"id": leaf["id"], "shape": [3]}
    assert graph_event_fields(lib.ones(2), {}) == {"nodes": [], "edges": [], "leaves": [], "outputs": []}
    # A saved parameter is named by its path, as the diagram labels it.
    w = lib.nn.Parameter(lib.ones(3))
    fields = graph_event_fields((w * x).sum(), {"w": w})
    mul = next(n for n in fields["nodes"] if n["op"] == "MulBackward0")
    assert {"shape": [3], "output": False, "param": "w"} in mul["saved"]
    d = graph.build_autograd_graph_from_event(fields, show_saved=True)
    assert ["w", "(3,)"] in [n.lines for n in d.nodes.values() if n.kind == "saved"]


def _tied(nn):
    class Tied(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.enc = nn.Linear(3, 3)
            self.dec = nn.Linear(3, 3)
            self.dec.weight = self.enc.weight  # tied: one parameter in two modules

    return Tied()


def _shared(nn):
    class Shared(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            shared = nn.Linear(2, 2)
            self.left = nn.Sequential(shared, nn.Linear(2, 2))
            self.right = nn.Sequential(nn.Linear(2, 2), shared)
            self.alias = self.left

    return Shared()


def _traced_model_event(model) -> dict:
    with modscope.trace(model, graph=False) as tr:
        pass
    return next(e for e in tr.events if e["kind"] == "model")


def test_the_tree_from_the_tracers_model_event_is_the_live_tree(lib, lib_models):
    for model in (_shared(lib.nn), lib_models.Residual()):
        event = _traced_model_event(model)
        for depth in (None, 0, 1, 2):
            assert _shape(graph.build_module_tree_from_event(event, depth)) == \
                _shape(graph.build_module_tree(model, depth))


def test_a_tied_parameter_counts_in_both_modules_when_the_event_lists_its_aliases(lib):
    model = _tied(lib.nn)
    live = {n.data["path"]: n.data["params"] for n in graph.build_module_tree(model).nodes.values()}
    assert live == {"": 15, "enc": 12, "dec": 12}  # the tied weight once in the root
    fields = model_event_fields(model)
    assert fields["params"][0]["aliases"] == ["dec.weight"]
    events.validate(events.make("model", 0, 0, 0, **fields))
    # The tracer's event does not list parameter aliases: the tied weight counts at its first owner.
    traced = graph.build_module_tree_from_event(_traced_model_event(model))
    assert {n.data["path"]: n.data["params"] for n in traced.nodes.values()} == {"": 15, "enc": 12, "dec": 3}


def test_a_model_event_without_modules_is_an_error():
    with pytest.raises(ValueError, match="lists no modules"):
        graph.build_module_tree_from_event({"model": "m", "modules": [], "params": [], "buffers": []})
    with pytest.raises(TypeError, match="expected an nn.Module"):
        model_event_fields([1])
