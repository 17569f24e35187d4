"""The three forms of a diagram (graphviz, Mermaid, JSON node-link) show the same graph;
rendering with dot, and the missing-dot path (DOT source written, install hint raised). The
diagrams drawn from models are drawn from engine models and from torch models (``lib``)."""

from __future__ import annotations

import json
import re

import pytest

import modscope
from modscope import graph
from modscope.graph import Cluster, Diagram, DotNotFoundError, Node
from modscope.views.diagrams.dot import DotMissing

from .helpers import laid_out


@pytest.fixture
def clustered(lib, net):
    with graph.attribute_modules(net):
        out = net(lib.randn(2, 8))
    return graph.build_autograd_graph(out.sum(), net, depth=2)


def _all_three(lib, net, clustered, res):
    with modscope.trace(res, graph=False) as tr:
        res(lib.randn(3, 4))
    return [graph.build_module_tree(net), clustered, graph.build_dataflow(tr)]


def test_mermaid_has_every_node_edge_and_nested_subgraph(clustered):
    text = clustered.to_mermaid()
    lines = text.splitlines()
    assert lines[0] == "flowchart TB"
    for node in clustered.nodes.values():
        assert re.search(rf"^\s+{node.id}[\[(]", text, re.M), node.id
    arrows = [line.strip() for line in lines if "-->" in line or "-.-" in line]
    assert sorted(arrows) == sorted(f"{e.source} --> {e.target}" for e in clustered.edges)
    # Nesting: the collapsed blocks sit in the blocks subgraph, between its subgraph and end lines.
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("subgraph") and "blocks (Sequential)" in line)
    end = next(i for i in range(start, len(lines)) if lines[i].strip() == "end")
    inside = "\n".join(lines[start:end])
    collapsed = [n.id for n in clustered.nodes.values() if n.kind == "collapsed"]
    assert len(collapsed) == 2 and all(f"{c}[" in inside for c in collapsed)
    assert lines.count("    end") == 3  # three top-level subgraphs: inp, blocks, head
    assert f"class {','.join(collapsed)} collapsed" in text


def test_mermaid_nests_subgraphs_and_escapes_labels():
    d = Diagram("autograd", "t")
    d.add_cluster(Cluster("a", 'outer "A"'))
    d.add_cluster(Cluster("a.b", "inner <B>", parent="a"))
    d.add_node(Node("n0", ['say "hi"', "<lambda> & co"], "op", "a.b"))
    d.add_node(Node("n1", ["plain"], "input"))
    d.add_edge("n1", "n0", label='x"y')
    text = d.to_mermaid()
    assert '    subgraph c0["outer #quot;A#quot;"]\n        subgraph c1["inner #lt;B#gt;"]\n' \
           '            n0["say #quot;hi#quot;<br/>#lt;lambda#gt; #amp; co"]\n        end\n    end\n' in text
    assert '    n1(["plain"])' in text
    assert '    n1 -->|"x#quot;y"| n0' in text


def test_node_link_is_json_with_clusters_and_every_edge(lib, net, clustered, res):
    for d in _all_three(lib, net, clustered, res):
        data = json.loads(json.dumps(d.to_node_link()))
        assert data["directed"] is True and data["multigraph"] is False
        assert data["graph"]["kind"] == d.kind
        ids = [n["id"] for n in data["nodes"]]
        assert ids == list(d.nodes)
        assert [(link["source"], link["target"]) for link in data["links"]] == [(e.source, e.target) for e in d.edges]
        clusters = {c["id"]: c["parent"] for c in data["graph"]["clusters"]}
        assert all(n["cluster"] is None or n["cluster"] in clusters for n in data["nodes"])
        assert all(p is None or p in clusters for p in clusters.values())
    tree = graph.build_module_tree(net).to_node_link()
    head = next(n for n in tree["nodes"] if n["path"] == "head")
    assert head["cls"] == "Linear" and head["params"] == 68 and head["aliases"] == ["alias"]
    assert {"label": "alias", "kind": "child"}.items() <= next(
        link for link in tree["links"] if link.get("label") == "alias").items()
    leaf = next(n for n in clustered.to_node_link()["nodes"] if n["kind"] == "leaf")
    assert leaf["path"].endswith(("weight", "bias")) and isinstance(leaf["shape"], list)


def test_graphviz_form_agrees_with_the_diagram(lib, net, clustered, res):
    for d in _all_three(lib, net, clustered, res):
        d.check()
        layout = laid_out(d)
        assert set(layout.labels) == set(d.nodes)
        assert sorted(layout.edges) == sorted((e.source, e.target) for e in d.edges)
        assert {label for label in layout.clusters} == {c.label for c in d.clusters.values()}


def test_labels_with_quotes_backslashes_and_angle_brackets_survive_dot(tmp_path):
    d = Diagram("autograd", "t")
    d.add_cluster(Cluster("c", 'cl "x" \\ <y>'))
    d.add_node(Node("n0", ['a "quoted" \\n word', "<lambda>"], "op", "c"))
    d.add_node(Node("n1", ["end\\"], "output"))
    d.add_edge("n0", "n1", label='e "1"')
    svg = graph.render(d, tmp_path / "odd.svg").read_text()
    texts = re.findall(r"<text[^>]*>([^<]*)</text>", svg)
    # Each line as written: the backslash-n stays two characters, not a line break.
    assert sorted(texts) == sorted(["cl &quot;x&quot; \\ &lt;y&gt;", "a &quot;quoted&quot; \\n word", "&lt;lambda&gt;",
                                    "end\\", "e &quot;1&quot;"])


@pytest.mark.parametrize("fmt, magic", [("svg", b"<?xml"), ("png", b"\x89PNG"), ("pdf", b"%PDF")])
def test_render_writes_each_format_with_dot(lib, clustered, tmp_path, fmt, magic):
    path = graph.render(clustered, tmp_path / f"g.{fmt}")
    assert path.read_bytes().startswith(magic)
    # A Digraph renders too, and an explicit format overrides the suffix.
    other = graph.render(graph.module_tree(lib.nn.Linear(2, 2)), tmp_path / "tree.out", fmt)
    assert other.read_bytes().startswith(magic)


def test_render_rejects_an_unknown_format(clustered, tmp_path):
    with pytest.raises(ValueError, match="cannot render format 'gif': choose one of svg, png, pdf"):
        graph.render(clustered, tmp_path / "g.gif")


def test_without_dot_the_source_is_written_and_the_error_says_how_to_install(clustered, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))  # no dot anywhere on PATH
    with pytest.raises(DotNotFoundError) as info:
        graph.render(clustered, tmp_path / "g.svg")
    message = str(info.value)
    assert "apt-get install graphviz" in message and str(tmp_path / "g.dot") in message
    assert "\n" not in message
    assert info.value.source_path.read_text() == clustered.to_digraph().source
    assert not (tmp_path / "g.svg").exists()
    # one "dot is missing" error for every caller: the TUI's graph pane catches the same class
    assert isinstance(info.value, DotMissing)


def test_a_failing_dot_names_what_graphviz_said():
    from modscope.views.diagrams.dot import DotFailed, run_dot

    with pytest.raises(DotFailed, match="graphviz failed: .*syntax error"):
        run_dot("digraph { a -> }", "svg")


def test_check_names_dangling_references():
    d = Diagram("autograd", "t")
    d.add_node(Node("n0", ["x"], "op", cluster="missing"))
    with pytest.raises(ValueError, match="node n0: no cluster 'missing'"):
        d.check()
    d = Diagram("autograd", "t")
    d.add_node(Node("n0", ["x"], "op"))
    d.add_edge("n0", "n9")
    with pytest.raises(ValueError, match="no node 'n9'"):
        d.check()
    d = Diagram("autograd", "t")
    d.add_cluster(Cluster("a", "a", parent="zz"))
    with pytest.raises(ValueError, match="cluster a: no parent cluster 'zz'"):
        d.check()
