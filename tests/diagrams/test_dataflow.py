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


# --- through functional ops, with the trace's ``graph`` event ----------------------------------


def _graph_trace(lib, model, *shape, graph_=True):
    with modscope.trace(model, graph=graph_) as tr:
        model(lib.randn(*shape))
    return tr


def _labelled_edges(d):
    title = {n.id: n.lines[0] for n in d.nodes.values()}
    return sorted((title[e.source], title[e.target], e.label) for e in d.edges)


def _pieces(d) -> int:
    """How many connected pieces the diagram is in (edges taken both ways)."""
    near: dict[str, set[str]] = {n: set() for n in d.nodes}
    for e in d.edges:
        near[e.source].add(e.target)
        near[e.target].add(e.source)
    seen: set[str] = set()
    pieces = 0
    for start in near:
        if start in seen:
            continue
        pieces += 1
        todo = [start]
        while todo:
            n = todo.pop()
            if n not in seen:
                seen.add(n)
                todo.extend(near[n] - seen)
    return pieces


def _assert_one_piece(d):
    laid_out(d)  # dot lays it out
    d.check()
    assert _pieces(d) == 1
    assert [n.kind for n in d.nodes.values() if n.kind in ("input", "tensor")] == ["input"]


def _mini(lib):
    nn, F = lib.nn, lib.nn.functional

    class Mini(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc1 = nn.Linear(4, 8)
            self.fc2 = nn.Linear(8, 8)
            self.out = nn.Linear(8, 2)

        def forward(self, x):
            h = F.relu(self.fc1(x))
            return self.out(self.fc2(h) + h)

    lib.manual_seed(0)
    return Mini()


def test_functional_ops_between_modules_become_labelled_edges(lib):
    d = graph.build_dataflow(_graph_trace(lib, _mini(lib), 3, 4))
    _assert_one_piece(d)
    assert _labelled_edges(d) == sorted([
        ("input", "fc1: Linear", None),
        ("fc1: Linear", "fc2: Linear", "relu"),
        ("fc2: Linear", "out: Linear", "+"),
        ("fc1: Linear", "out: Linear", "relu, +"),  # the residual, through relu then the add
        ("out: Linear", "output", None),
    ])


def test_without_a_graph_event_functional_results_stay_tensor_nodes(lib):
    d = graph.build_dataflow(_graph_trace(lib, _mini(lib), 3, 4, graph_=False))
    assert sorted(n.kind for n in d.nodes.values() if n.kind in ("input", "tensor")) == ["input", "tensor", "tensor"]
    assert _pieces(d) > 1
    assert all(e.label is None for e in d.edges)


def test_the_graph_only_speaks_for_its_own_step(lib):
    model = _mini(lib)
    with modscope.trace(model) as tr:
        model(lib.randn(3, 4))
        tr.step()
        model(lib.randn(3, 4))
    assert _pieces(graph.build_dataflow(tr)) == 1
    later = graph.build_dataflow(tr, step=1)  # the graph event is step 0's: as without one
    assert sum(n.kind == "tensor" for n in later.nodes.values()) == 2


def test_tensor_ids_still_connect_where_they_can(lib, res, net):
    d = graph.build_dataflow(_graph_trace(lib, res, 3, 4))
    assert _labelled_edges(graph.build_dataflow(_trace(lib, res, 3, 4))) == _labelled_edges(d)
    assert all(e.label is None for e in d.edges)  # every tensor here is a module's output
    d = graph.build_dataflow(_graph_trace(lib, net, 2, 8))
    _assert_one_piece(d)
    edges = _labelled_edges(d)
    assert ("inp: Linear", "blocks.0.fc1: Linear", None) in edges
    assert ("blocks.0.fc1: Linear", "blocks.0.fc2: Linear", "relu") in edges
    assert ("blocks.0.fc2: Linear", "blocks.1.fc1: Linear", "+, relu") in edges
    assert ("blocks.1.fc2: Linear", "head: Linear", "+, relu") in edges


def test_a_residual_stream_links_each_block_to_its_near_predecessors_only(lib):
    nn = lib.nn

    class Stream(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inp = nn.Linear(4, 4)
            self.fcs = nn.ModuleList(nn.Linear(4, 4) for _ in range(8))

        def forward(self, x):
            x = self.inp(x)
            for fc in self.fcs:
                x = x + fc(x)
            return x

    lib.manual_seed(0)
    d = graph.build_dataflow(_graph_trace(lib, Stream(), 2, 4))
    assert _pieces(d) == 1
    into: dict[str, int] = {}
    for e in d.edges:
        into[e.target] = into.get(e.target, 0) + 1
        assert e.label is None or e.label.count(",") < 3
    assert max(into.values()) <= 4  # not one edge from every earlier block (nine calls in all)
    assert len(d.edges) < 30


def _resnet_classes(lib):
    nn, F = lib.nn, lib.nn.functional

    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, stride=1):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.shortcut = nn.Sequential()
            if stride != 1 or cin != cout:
                self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            out += self.shortcut(x)
            return F.relu(out)

    class ResNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 4, 3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(4)
            self.layer1 = nn.Sequential(BasicBlock(4, 4))
            self.layer2 = nn.Sequential(BasicBlock(4, 8, stride=2))
            self.linear = nn.Linear(8, 3)

        def forward(self, x):
            out = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
            out = self.layer2(self.layer1(out))
            return self.linear(lib.flatten(F.adaptive_avg_pool2d(out, 1), 1))

    return ResNet


def test_a_resnet_written_with_functional_ops_is_one_piece(lib):
    lib.manual_seed(0)
    d = graph.build_dataflow(_graph_trace(lib, _resnet_classes(lib)(), 2, 1, 8, 8))
    _assert_one_piece(d)
    edges = _labelled_edges(d)
    assert ("bn1: BatchNorm2d", "layer1.0.conv1: Conv2d", "relu, max_pool2d") in edges
    assert ("layer1.0.bn1: BatchNorm2d", "layer1.0.conv2: Conv2d", "relu") in edges
    assert ("layer1.0.bn2: BatchNorm2d", "layer2.0.conv1: Conv2d", "+, relu") in edges
    # the identity shortcut makes no autograd node (torch) but returns its input: the add's
    # other operand comes through it, as its tensor id says
    assert ("bn1: BatchNorm2d", "layer1.0.shortcut: Sequential", "relu, max_pool2d") in edges
    assert ("layer1.0.shortcut: Sequential", "layer2.0.conv1: Conv2d", "+, relu") in edges
    assert '"relu, max_pool2d"' in d.to_mermaid() and "relu, max_pool2d" in d.to_digraph().source
    # more than FEW_OPS ops: the first few and how many
    (pool,) = {label for a, b, label in edges if a == "layer2.0.bn2: BatchNorm2d" and b == "linear: Linear"}
    assert pool.startswith("+, relu, ") and pool.endswith(", ... (4 ops)")
    shallow = graph.build_dataflow(_graph_trace(lib, _resnet_classes(lib)(), 2, 1, 8, 8), depth=1)
    _assert_one_piece(shallow)
    assert ("bn1: BatchNorm2d", "layer1: Sequential", "relu, max_pool2d") in _labelled_edges(shallow)
    assert ("layer1: Sequential", "layer2: Sequential", None) in _labelled_edges(shallow)


@pytest.mark.parametrize("depth", [None, 1, 2])
def test_the_bundled_resnet_example_is_one_piece(depth):
    from modscope.capture.target import load_target

    target = load_target("resnet")
    with modscope.trace(target.model) as tr:
        target.model(target.example_input())
    d = graph.build_dataflow(tr, depth=depth)
    _assert_one_piece(d)
    edges = _labelled_edges(d)
    if depth is None:
        assert ("bn1: BatchNorm2d", "layer1.0.conv1: Conv2d", "relu") in edges
        assert ("layer1.0.bn2: BatchNorm2d", "layer2.0.conv1: Conv2d", "+, relu") in edges
        assert ("avgpool: AdaptiveAvgPool2d", "linear: Linear", "view") in edges
        assert ("linear: Linear", "output", None) in edges
    elif depth == 1:
        assert ("bn1: BatchNorm2d", "layer1: Sequential", "relu") in edges


def test_op_labels():
    from modscope.views.diagrams.dataflow import _op_label

    assert _op_label("ReluBackward0") == "relu"
    assert _op_label("AddBackward0") == "+"
    assert _op_label("MaxPool2DWithIndicesBackward0") == "max_pool2d"
    assert _op_label("AdaptiveAvgPool2DBackward0") == "adaptive_avg_pool2d"
    assert _op_label("LogSoftmaxBackward0") == "log_softmax"
    assert _op_label("BackwardHookFunctionBackward") is None
    assert _op_label("torch::autograd::AccumulateGrad") is None
