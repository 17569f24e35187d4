"""``dataflow``: module calls as nodes with shapes, edges following tensor ids, from a real trace
and from hand-written event lists (the protocol is the contract). Laid out by the real dot. The
traces are of engine models and of torch models (``lib``, ``net``, ``res``: see ``conftest.py``)."""

from __future__ import annotations

import pytest

import modscope
from modscope import graph
from modscope.events import make

from .helpers import laid_out


def _trace(lib, model, *shape):
    with modscope.trace(model, graph=False) as tr:
        model(lib.randn(*shape))
    return tr


def _edges_by_title(layout):
    title = {n: label.split("\n")[0] for n, label in layout.labels.items()}
    return sorted((title[a], title[b]) for a, b in layout.edges)


def test_residual_connection_and_reused_module(lib, res):
    layout = laid_out(graph.build_dataflow(_trace(lib, res, 3, 4)))
    assert _edges_by_title(layout) == sorted([
        ("input", "l1: Linear"),
        ("l1: Linear", "act: Act [call 1]"),
        ("act: Act [call 1]", "l2: Linear"),
        ("l2: Linear", "act: Act [call 2]"),
        ("act: Act [call 1]", "merge: Merge"),  # the residual: a tensor used twice
        ("act: Act [call 2]", "merge: Merge"),
        ("merge: Merge", "out: Linear"),
        ("out: Linear", "output"),
    ])
    (merge,) = layout.nodes_labelled("merge: Merge")
    assert layout.labels[merge] == "merge: Merge\nin: (3, 8), (3, 8)\nout: (3, 8)"
    (inp,) = layout.nodes_labelled("input")
    assert layout.labels[inp] == "input\n(3, 4)"
    assert layout.clusters == {}


def test_calls_inside_calls_are_clustered_and_own_code_tensors_sit_in_their_module(lib, net):
    d = graph.build_dataflow(_trace(lib, net, 2, 8))
    layout = laid_out(d)
    assert layout.clusters["blocks (Sequential)"]["clusters"] == {"blocks.0 (Block)", "blocks.1 (Block)"}
    block0 = layout.clusters["blocks.0 (Block)"]["nodes"]
    titles = sorted(layout.labels[n] for n in block0)
    assert titles == ["blocks.0.fc1: Linear\nin: (2, 16)\nout: (2, 16)", "blocks.0.fc2: Linear\nin: (2, 16)\nout: (2, 16)",
                      "tensor\n(2, 16)", "tensor\n(2, 16)"]
    edges = _edges_by_title(layout)
    assert ("inp: Linear", "blocks.0.fc1: Linear") in edges
    assert ("tensor", "blocks.0.fc2: Linear") in edges  # relu(fc1(x)) is computed by Block's own code
    assert ("head: Linear", "output") in edges
    tensors = [n for n in d.nodes.values() if n.kind == "tensor"]
    assert len(tensors) == 4 and all(n.data["tid"] is not None for n in tensors)


@pytest.mark.parametrize("depth, nodes", [
    (0, ["(model): Net", "input", "output"]),
    (1, ["blocks: Sequential", "head: Linear", "inp: Linear", "input", "output"]),
])
def test_depth_draws_modules_at_that_depth_as_single_nodes(lib, net, depth, nodes):
    d = graph.build_dataflow(_trace(lib, net, 2, 8), depth=depth)
    layout = laid_out(d)
    assert sorted(label.split("\n")[0] for label in layout.labels.values()) == nodes
    assert layout.clusters == {}
    if depth == 1:
        assert _edges_by_title(layout) == sorted([("input", "inp: Linear"), ("inp: Linear", "blocks: Sequential"),
                                                  ("blocks: Sequential", "head: Linear"), ("head: Linear", "output")])
        (blocks,) = [n for n in d.nodes.values() if n.data.get("path") == "blocks"]
        assert blocks.kind == "collapsed"


def test_depth_two_keeps_the_sequential_as_a_cluster(lib, net):
    layout = laid_out(graph.build_dataflow(_trace(lib, net, 2, 8), depth=2))
    assert set(layout.clusters) == {"blocks (Sequential)"}
    assert _edges_by_title(layout) == sorted([
        ("input", "inp: Linear"), ("inp: Linear", "blocks.0: Block"), ("blocks.0: Block", "blocks.1: Block"),
        ("blocks.1: Block", "head: Linear"), ("head: Linear", "output")])


def _summary(tid, *shape):
    return {"shape": list(shape), "dtype": "float32", "tid": tid}


def _events(*calls, step=0):
    """Events from ``(kind, path, call, summaries)`` tuples."""
    out = []
    for i, (kind, path, call, summaries) in enumerate(calls):
        field = {"inputs": summaries} if kind == "forward_pre" else {"outputs": summaries, "dur_ns": 1}
        out.append(make(kind, i, i, step, path=path, call=call, **field))
    return out


def test_plain_event_list_without_a_model_event():
    events = _events(
        ("forward_pre", "", 0, [_summary(1, 2, 3), None]),
        ("forward_pre", "enc", 0, [_summary(1, 2, 3)]),
        ("forward", "enc", 0, [_summary(2, 2, 5)]),
        ("forward_pre", "dec", 0, [_summary(2, 2, 5), _summary(1, 2, 3)]),
        ("forward", "dec", 0, [_summary(3, 2, 3)]),
        ("forward", "", 0, [_summary(3, 2, 3)]),
    )
    d = graph.build_dataflow(events)
    assert d.name == "dataflow"
    layout = laid_out(d)
    assert _edges_by_title(layout) == sorted([("input", "enc"), ("enc", "dec"), ("input", "dec"), ("dec", "output")])
    (dec,) = layout.nodes_labelled("dec")
    assert layout.labels[dec] == "dec\nin: (2, 5), (2, 3)\nout: (2, 3)"


def test_a_call_that_raised_is_still_drawn_and_its_parent_closes():
    events = _events(
        ("forward_pre", "", 0, [_summary(1, 4)]),
        ("forward_pre", "a", 0, [_summary(1, 4)]),
        ("forward_pre", "a.inner", 0, [_summary(1, 4)]),  # raised: no forward event
        ("forward", "a", 0, [_summary(2, 4)]),
        ("forward", "", 0, [_summary(2, 4)]),
    )
    layout = laid_out(graph.build_dataflow(events))
    (inner,) = layout.nodes_labelled("a.inner")
    assert layout.labels[inner] == "a.inner\nin: (4,)\nout: -"
    assert layout.cluster_of(inner) == "a"
    # a's output came from a's own code: a tensor node inside a.
    (tensor,) = layout.nodes_labelled("tensor")
    assert layout.cluster_of(tensor) == "a" and ("tensor", "output") in _edges_by_title(layout)


def test_step_selects_which_forward_is_drawn_and_trace_objects_work(lib, res):
    with modscope.trace(res, graph=False) as tr:
        res(lib.randn(3, 4))
        tr.step()
        res(lib.randn(5, 4))
    first = graph.build_dataflow(tr)
    second = graph.build_dataflow(tr, step=1)
    assert [n.lines for n in first.nodes.values() if n.kind == "input"] == [["input", "(3, 4)"]]
    assert [n.lines for n in second.nodes.values() if n.kind == "input"] == [["input", "(5, 4)"]]
    assert len(first.nodes) == len(second.nodes)
    with pytest.raises(ValueError, match="no module calls .* in step 7"):
        graph.build_dataflow(tr, step=7)
    with pytest.raises(ValueError, match="no module calls"):
        graph.dataflow([])


def test_a_saved_and_reloaded_trace_draws_the_same(lib, res, tmp_path):
    tr = _trace(lib, res, 3, 4)
    tr.save(tmp_path / "t.jsonl")
    loaded = modscope.load_trace(tmp_path / "t.jsonl")
    assert graph.build_dataflow(loaded).to_node_link() == graph.build_dataflow(tr).to_node_link()


def test_dataflow_returns_a_digraph_and_checks_depth(lib, res):
    tr = _trace(lib, res, 3, 4)
    assert "merge: Merge" in graph.dataflow(tr).source
    with pytest.raises(ValueError, match="depth must be"):
        graph.dataflow(tr, depth=-2)
