"""``autograd_graph``: torchviz's drawing of the backward graph (checked op for op against torch),
nested module clusters, parameter names on leaves, depth collapsing and saved tensors. Every
diagram is laid out by the real dot and read back. The graphs are those of engine models and of
torch models (``lib``, ``models``, ``net``, ``res``: see ``conftest.py``)."""

from __future__ import annotations

import warnings
from collections import Counter

import graphviz
import pytest

from modscope import graph
from modscope.capture.values import is_tensor

from .helpers import laid_out


def _traced_loss(lib, model, *shape):
    with graph.attribute_modules(model):
        out = model(lib.randn(*shape))
    return out.sum()


@pytest.fixture
def loss(lib, net):
    return _traced_loss(lib, net, 2, 8)


def test_op_nodes_sit_in_nested_module_clusters(net, loss):
    layout = laid_out(graph.build_autograd_graph(loss, net))
    blocks, block0, fc1 = "blocks (Sequential)", "blocks.0 (Block)", "blocks.0.fc1 (Linear)"
    assert layout.clusters[blocks]["clusters"] == {block0, "blocks.1 (Block)"}
    assert layout.clusters[block0]["clusters"] == {fc1, "blocks.0.fc2 (Linear)"}
    assert layout.clusters[fc1]["clusters"] == set()
    ops = lambda cluster: sorted(layout.labels[n].split("\n")[0] for n in layout.clusters[cluster]["nodes"])  # noqa: E731
    # The block's own code (relu, the residual add) is in the block, the Linear's ops in the Linear.
    assert ops(block0) == ["AddBackward0", "ReluBackward0", "ReluBackward0"]
    assert ops(fc1) == ["AddmmBackward0", "TBackward0", "blocks.0.fc1.bias", "blocks.0.fc1.weight"]
    assert ops(blocks) == []
    # Made after the model returned: outside every cluster, as is the output.
    assert sorted(layout.labels[n] for n in layout.top_level) == ["SumBackward0\n()", "output\n()"]
    top = {c for c in layout.clusters if not any(c in o["clusters"] for o in layout.clusters.values())}
    assert top == {"inp (Linear)", blocks, "head (Linear)"}


def test_leaves_are_named_by_parameter_path_with_shape(net, loss):
    layout = laid_out(graph.build_autograd_graph(loss, net))
    (weight,) = layout.nodes_labelled("head.weight")
    assert layout.labels[weight] == "head.weight\n(4, 16)"
    assert layout.cluster_of(weight) == "head (Linear)"
    (t,) = [dst for src, dst in layout.edges if src == weight]
    assert layout.labels[t] == "TBackward0\n(16, 4)"
    leaves = [n for n, label in layout.labels.items() if label.split("\n")[0].endswith((".weight", ".bias"))]
    assert len(leaves) == len(list(net.parameters())) == 12


def test_edges_run_from_inputs_to_ops_and_end_at_the_output(net, loss):
    d = graph.build_autograd_graph(loss, net)
    layout = laid_out(d)
    (out,) = layout.nodes_labelled("output")
    (total,) = layout.nodes_labelled("SumBackward0")
    assert (total, out) in layout.edges
    (head_addmm,) = [n for n in layout.clusters["head (Linear)"]["nodes"] if layout.labels[n].startswith("Addmm")]
    assert (head_addmm, total) in layout.edges


def _torch_graph(root):
    """Op names and (input op -> op) name pairs of a torch graph, leaves as AccumulateGrad."""
    names, edges, seen, stack = Counter(), Counter(), set(), [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        names[type(node).__name__] += 1
        for nxt, _ in node.next_functions:
            if nxt is not None:
                edges[(type(nxt).__name__, type(node).__name__)] += 1
                stack.append(nxt)
    return names, edges


def test_same_ops_and_edges_as_torch(torch, lib, models):
    class Block(torch.nn.Module):
        def __init__(self, d=16):
            super().__init__()
            self.fc1, self.fc2 = torch.nn.Linear(d, d), torch.nn.Linear(d, d)

        def forward(self, x):
            return torch.nn.functional.relu(self.fc2(torch.nn.functional.relu(self.fc1(x))) + x)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inp = torch.nn.Linear(8, 16)
            self.blocks = torch.nn.Sequential(Block(), Block())
            self.head = torch.nn.Linear(16, 4)

        def forward(self, x):
            return self.head(self.blocks(self.inp(x)))

    expected_names, expected_edges = _torch_graph(Net()(torch.randn(2, 8)).sum().grad_fn)
    model = models.Net()
    d = graph.build_autograd_graph(_traced_loss(lib, model, 2, 8), model)
    kind = {n.id: ("AccumulateGrad" if n.kind == "leaf" else n.lines[0]) for n in d.nodes.values() if n.kind != "output"}
    assert Counter(kind.values()) == expected_names
    assert Counter((kind[e.source], kind[e.target]) for e in d.edges if e.target in kind) == expected_edges


@pytest.mark.parametrize("depth", [1, 2])
def test_depth_collapses_each_module_at_that_depth_into_one_node(net, loss, depth):
    d = graph.build_autograd_graph(loss, net, depth=depth)
    layout = laid_out(d)
    collapsed = {n.data["module"]: n for n in d.nodes.values() if n.kind == "collapsed"}
    if depth == 2:
        assert set(collapsed) == {"blocks.0", "blocks.1"}
        assert layout.labels[collapsed["blocks.0"].id] == "blocks.0\nBlock\n7 ops, 4 params"
        assert layout.cluster_of(collapsed["blocks.0"].id) == "blocks (Sequential)"
        assert set(layout.clusters) == {"inp (Linear)", "blocks (Sequential)", "head (Linear)"}
        (inp_addmm,) = [n for n in layout.clusters["inp (Linear)"]["nodes"] if layout.labels[n].startswith("Addmm")]
        chain = [(inp_addmm, collapsed["blocks.0"].id), (collapsed["blocks.0"].id, collapsed["blocks.1"].id)]
        assert all(edge in layout.edges for edge in chain)
    else:
        assert set(collapsed) == {"inp", "blocks", "head"}
        assert layout.labels[collapsed["blocks"].id] == "blocks\nSequential\n14 ops, 8 params"
        assert layout.labels[collapsed["head"].id] == "head\nLinear\n2 ops, 2 params"
        assert layout.clusters == {}
        assert layout.edges.count((collapsed["inp"].id, collapsed["blocks"].id)) == 1  # one arrow per pair
    # Nothing below the depth is drawn on its own.
    assert not [label for label in layout.labels.values() if label.startswith(("blocks.0.fc", "blocks.1.fc"))]


def test_depth_zero_collapses_the_whole_model(net, loss):
    layout = laid_out(graph.build_autograd_graph(loss, net, depth=0))
    assert sorted(layout.labels.values()) == ["(model)\nNet\n18 ops, 12 params", "SumBackward0\n()", "output\n()"]


def test_show_saved_adds_each_saved_tensor_with_its_shape(net, loss):
    d = graph.build_autograd_graph(loss, net, show_saved=True)
    layout = laid_out(d)
    saved = [n for n in d.nodes.values() if n.kind == "saved"]
    ops = [n for n in d.nodes.values() if n.kind == "op"]
    assert len(saved) == sum(len(_node_saved(loss, n.data["seq"])) for n in ops) > 0
    relu = [n for n in d.nodes.values() if n.lines[0] == "ReluBackward0"][0]
    (relu_saved,) = [e.source for e in d.edges if e.target == relu.id and e.kind == "saved"]
    assert layout.labels[relu_saved] == "saved output\n(2, 16)"
    assert layout.cluster_of(relu_saved) == layout.cluster_of(relu.id)
    assert f'{relu_saved} -> {relu.id} [style="dashed"' in d.to_digraph().source
    assert not [n for n in graph.build_autograd_graph(loss, net).nodes.values() if n.kind == "saved"]


def _node_saved(root, seq):
    """The tensors the node numbered ``seq`` saved for backward: the engine's ``_saved``, the
    tensors among torch's ``_saved_*`` properties."""
    stack, seen = [root.grad_fn], set()
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if node._sequence_nr() == seq:
            if hasattr(node, "_saved"):
                return node._saved
            values = [getattr(node, name) for name in dir(type(node)) if name.startswith("_saved_")]
            return [v for v in values if is_tensor(v)]
        stack.extend(n for n, _ in node.next_functions)
    raise AssertionError(seq)


def test_without_model_leaves_go_to_their_consumers_cluster(net, loss):
    layout = laid_out(graph.build_autograd_graph(loss))
    assert "blocks.0.fc1" in layout.clusters and "blocks" in layout.clusters  # paths only
    fc1 = layout.clusters["blocks.0.fc1"]["nodes"]
    assert sorted(layout.labels[n] for n in fc1) == \
        ["(16, 16)", "(16,)", "AddmmBackward0\n(2, 16)", "TBackward0\n(16, 16)"]


def test_unattributed_graph_without_a_model_has_no_clusters_and_says_why(lib, net):
    loss = net(lib.randn(2, 8)).sum()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an op graph was asked for, and drawn
        d = graph.build_autograd_graph(loss)
    layout = laid_out(d)
    assert layout.clusters == {} and d.notes == []
    assert len(layout.top_level) == len(layout.labels)
    with pytest.warns(UserWarning, match="no module clusters: the forward ran outside .*attribute_modules "
                                         r"and no model was given.*\(depth=1 has nothing to collapse\)"):
        d = graph.build_autograd_graph(loss, depth=1)
    assert d.notes[0].startswith("no module clusters") and "attribute_modules(model)" in d.notes[1]
    assert laid_out(d).clusters == {}


def test_several_outputs_and_a_leaf_output(lib):
    x = lib.randn(3, requires_grad=True)
    a, b = x.exp(), x * 2
    layout = laid_out(graph.build_autograd_graph((a, b)))
    assert sorted(n for n in layout.labels.values() if n.startswith("output")) == ["output 0\n(3,)", "output 1\n(3,)"]
    (leaf,) = layout.nodes_labelled("(3,)")
    assert len([e for e in layout.edges if e[0] == leaf]) == 2
    layout = laid_out(graph.build_autograd_graph(x))
    assert sorted(layout.labels.values()) == ["(3,)", "output\n(3,)"]


def test_errors_name_the_problem(lib):
    with pytest.raises(ValueError, match="output 0 does not require grad"):
        graph.autograd_graph(lib.ones(2))
    with pytest.raises(ValueError, match="expected a tensor"):
        graph.autograd_graph([1, 2])
    with pytest.raises(ValueError, match="depth must be"):
        graph.autograd_graph(lib.ones(2, requires_grad=True), depth=1.5)


def test_autograd_graph_returns_a_digraph_with_torchviz_colours(net, loss):
    dot = graph.autograd_graph(loss, net)
    assert isinstance(dot, graphviz.Digraph)
    src = dot.source
    assert 'label="head.weight\\n(4, 16)" fillcolor="lightblue"' in src
    assert 'label="SumBackward0\\n()" fillcolor="lightgrey"' in src
    assert 'label="output\\n()" fillcolor="darkolivegreen1"' in src


def test_a_graph_deeper_than_the_recursion_limit_builds(lib):
    x = lib.randn(2, requires_grad=True)
    y = x
    for _ in range(1_000):
        y = (y * 1.0001).tanh()
    src = graph.autograd_graph(y.sum()).source
    assert src.count("TanhBackward0") == 1_000


def test_each_call_of_a_reused_module_gets_its_own_cluster(lib, res):
    layout = laid_out(graph.build_autograd_graph(_traced_loss(lib, res, 3, 4), res))
    calls = {label: c for label, c in layout.clusters.items() if label.startswith("act")}
    assert set(calls) == {"act (Act) [call 1]", "act (Act) [call 2]"}
    assert all([layout.labels[n].split("\n")[0] for n in c["nodes"]] == ["ReluBackward0"] for c in calls.values())
    (relu1,) = calls["act (Act) [call 1]"]["nodes"]
    (l2_addmm,) = [n for n in layout.clusters["l2 (Linear)"]["nodes"] if layout.labels[n].startswith("Addmm")]
    assert (relu1, l2_addmm) in layout.edges


def test_a_reused_module_with_parameters_keeps_them_outside_its_call_clusters(lib):
    class Twice(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.body = lib.nn.Sequential(lib.nn.Linear(3, 3))

        def forward(self, x):
            return self.body[0](self.body[0](x))

    model = Twice()
    layout = laid_out(graph.build_autograd_graph(_traced_loss(lib, model, 2, 3), model))
    assert set(layout.clusters) == {"body (Sequential)", "body.0 (Linear) [call 1]", "body.0 (Linear) [call 2]"}
    assert layout.clusters["body (Sequential)"]["clusters"] == {"body.0 (Linear) [call 1]", "body.0 (Linear) [call 2]"}
    params = sorted(layout.labels[n] for n in layout.clusters["body (Sequential)"]["nodes"])
    assert params == ["body.0.bias\n(3,)", "body.0.weight\n(3, 3)"]
    for call in ("body.0 (Linear) [call 1]", "body.0 (Linear) [call 2]"):
        assert sorted(layout.labels[n].split("\n")[0] for n in layout.clusters[call]["nodes"]) == \
            ["AddmmBackward0", "TBackward0"]
    # Collapsing to depth 1 merges both calls into the one "body" node again.
    collapsed = graph.build_autograd_graph(_traced_loss(lib, model, 2, 3), model, depth=1)
    assert [n.lines for n in collapsed.nodes.values() if n.kind == "collapsed"] == [["body", "Sequential", "4 ops, 2 params"]]
