"""``module_tree``: one node per module with class, extra_repr and parameter count; shared
modules once with an edge per registration; ``depth`` cuts the tree. Laid out by the real dot; the
models are built with the engine and with torch (``models``, ``net``: see ``conftest.py``)."""

from __future__ import annotations

import graphviz
import pytest

from modscope import graph

from .helpers import laid_out


def _by_path(layout, path):
    (name,) = [n for n, label in layout.labels.items() if label.split("\n")[0] == path]
    return name


def test_nodes_show_path_class_extra_repr_and_parameter_count(net):
    layout = laid_out(graph.build_module_tree(net))
    assert layout.labels[_by_path(layout, "inp")] == \
        "inp\nLinear(in_features=8, out_features=16, bias=True)\n144 params"
    # A container: its class alone, the parameters of its whole subtree.
    assert layout.labels[_by_path(layout, "blocks.0")] == "blocks.0\nBlock\n544 params"
    # The root: no path, every parameter once (the shared head counted once).
    root = [n for n, label in layout.labels.items() if label.startswith("Net\n")]
    assert len(root) == 1 and layout.labels[root[0]] == f"Net\n{sum(p.numel() for p in net.parameters()):,} params"
    assert len(layout.labels) == len(list(net.modules()))


def test_edges_follow_registration_with_attribute_names(net):
    d = graph.build_module_tree(net)
    layout = laid_out(d)
    names = {n.data["path"]: n.id for n in d.nodes.values()}
    edges = {(e.source, e.target): e.label for e in d.edges}
    assert edges[(names[""], names["blocks"])] == "blocks"
    assert edges[(names["blocks"], names["blocks.0"])] == "0"
    assert edges[(names["blocks.0"], names["blocks.0.fc2"])] == "fc2"
    assert set(layout.edges) == set(edges)


def test_module_shared_by_two_parents_is_drawn_once_with_an_edge_from_each(models):
    model = models.TwoParents()
    d = graph.build_module_tree(model)
    layout = laid_out(d)
    shared = _by_path(layout, "left.0")
    assert "also right.1" in layout.labels[shared]
    parents = {src for src, dst in layout.edges if dst == shared}
    assert parents == {_by_path(layout, "left"), _by_path(layout, "right")}
    assert len(layout.labels) == len(list(model.modules())) == 6


def test_module_registered_twice_in_one_parent_gets_an_edge_per_name(net):
    d = graph.build_module_tree(net)
    head = next(n for n in d.nodes.values() if n.data["path"] == "head")
    labels = sorted(e.label for e in d.edges if e.target == head.id)
    assert labels == ["alias", "head"]
    assert head.data["aliases"] == ["alias"]
    assert len(laid_out(d).labels) == len(list(net.modules()))


@pytest.mark.parametrize("depth, paths", [
    (0, {""}),
    (1, {"", "inp", "blocks", "head"}),
    (2, {"", "inp", "blocks", "blocks.0", "blocks.1", "head"}),
])
def test_depth_keeps_the_top_levels_and_counts_what_it_cut(net, depth, paths):
    d = graph.build_module_tree(net, depth=depth)
    assert {n.data["path"] for n in d.nodes.values()} == paths
    layout = laid_out(d)
    assert len(layout.labels) == len(paths)
    cut = {n.data["path"]: n.data["hidden_submodules"] for n in d.nodes.values()}
    if depth == 1:
        assert cut == {"": 0, "inp": 0, "blocks": 6, "head": 0}
        assert layout.labels[_by_path(layout, "blocks")].endswith("+6 submodules")
    if depth == 0:
        assert cut == {"": 9}


def test_shared_module_counts_at_its_shallowest_depth(models):
    class Outer(models.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = models.nn.Sequential(models.nn.Sequential(models.nn.Linear(2, 2)))
            self.direct = self.inner[0][0]  # depth 3 under inner, depth 1 here

    d = graph.build_module_tree(Outer(), depth=1)
    assert {n.data["path"] for n in d.nodes.values()} == {"", "inner", "inner.0.0"}
    assert {e.label for e in d.edges} == {"inner", "direct"}


def test_long_extra_repr_is_shortened_to_one_line(models):
    class Wordy(models.nn.Module):
        def extra_repr(self):
            return "a=1,\n" + "b" * 200

    d = graph.build_module_tree(Wordy())
    (node,) = d.nodes.values()
    assert "\n" not in node.lines[0] and node.lines[0].endswith("...)") and len(node.lines[0]) < 80
    assert node.data["extra_repr"].startswith("a=1,\nbbb")


def test_module_tree_returns_a_digraph_and_checks_arguments(net):
    dot = graph.module_tree(net)
    assert isinstance(dot, graphviz.Digraph)
    assert hasattr(dot, "_repr_mimebundle_")  # notebooks render it inline
    with pytest.raises(ValueError, match="depth must be None or an integer >= 0"):
        graph.module_tree(net, depth=-1)
    with pytest.raises(TypeError, match="expected an nn.Module, got list"):
        graph.module_tree([net])
