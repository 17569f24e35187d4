"""``graph_layout``: a diagram laid out by the real ``dot`` and drawn into character cells."""

from __future__ import annotations

import re

import pytest

from modscope.graph import build_autograd_graph_from_event
from modscope.views.diagrams.dot import DotMissing
from modscope.views.tui import graph_layout as gl


@pytest.fixture(scope="module")
def residual_layout(residual_events):
    graph, model = residual_events
    diagram = build_autograd_graph_from_event(graph, model)
    return diagram, gl.layout(diagram)


def _rows(canvas, rect):
    left, top, right, bottom = rect
    return [line[left:right + 1] for line in canvas.text()[top:bottom + 1]]


def test_every_node_is_a_box_with_its_label(residual_layout):
    diagram, laid = residual_layout
    canvas = gl.rasterise(laid)
    assert set(canvas.boxes) == set(diagram.nodes)
    for nid, rect in canvas.boxes.items():
        top, middle, bottom = _rows(canvas, rect)
        corners = "╔╗╚╝" if diagram.nodes[nid].kind == "collapsed" else "┌┐└┘"
        assert (top[0], top[-1], bottom[0], bottom[-1]) == tuple(corners)
        assert middle[1:-1].strip() == laid.nodes[nid].label
    text = "\n".join(canvas.text())
    assert "AddmmBackward0 2×8" in text and "inp.weight 8×4" in text and "output 2×2" in text


def test_boxes_do_not_overlap_and_sit_inside_their_cluster(residual_layout):
    diagram, laid = residual_layout
    canvas = gl.rasterise(laid)
    boxes = list(canvas.boxes.values())
    for i, (l1, t1, r1, b1) in enumerate(boxes):
        for l2, t2, r2, b2 in boxes[i + 1:]:
            assert r1 < l2 or r2 < l1 or b1 < t2 or b2 < t1
    for nid, node in diagram.nodes.items():
        if node.cluster is None:
            continue
        left, top, right, bottom = canvas.boxes[nid]
        fl, ft, fr, fb = canvas.frames[node.cluster]
        assert fl < left and right < fr and ft < top and bottom < fb  # strictly inside the frame


def test_cluster_frames_are_titled_with_the_module(residual_layout):
    _, laid = residual_layout
    canvas = gl.rasterise(laid)
    titles = {c.title for c in laid.clusters}
    assert {"inp (Linear)", "block (Block)", "block.fc1 (Linear)", "block.act (Act) [call 1]",
            "block.act (Act) [call 2]", "head (Linear)"} <= titles
    for c in laid.clusters:
        left, top, right, _ = canvas.frames[c.id]
        row = canvas.text()[top][left:right + 1]
        assert row.startswith(f"┌ {c.title} ┄") and row.endswith("┐")


def test_every_edge_ends_in_an_arrowhead_next_to_its_target(residual_layout):
    diagram, laid = residual_layout
    canvas = gl.rasterise(laid)
    text = canvas.text()
    assert canvas.edges_drawn == len(diagram.edges)
    for edge in diagram.edges:
        left, top, right, bottom = canvas.boxes[edge.target]
        above = text[top - 1][left:right + 1]
        sides = text[top + 1][left - 1] + text[top + 1][right + 1] + text[bottom + 1][left:right + 1]
        assert "▼" in above or set("►◄▲") & set(sides), edge
    # Edges are drawn with line characters only: no stray glyphs outside boxes and titles.
    outside = "".join(_blank_boxes_and_titles(canvas, laid))
    assert set(outside) <= set(" │─╭╮╰╯├┤┬┴┼▼▲►◄┌┐└┘┄┆")


def _blank_boxes_and_titles(canvas, laid):
    rows = [list(line) for line in canvas.text()]
    for left, top, right, bottom in canvas.boxes.values():
        for y in range(top, bottom + 1):
            rows[y][left:right + 1] = " " * (right - left + 1)
    for c in laid.clusters:
        left, top, right, _ = canvas.frames[c.id]
        rows[top][left + 1:left + 3 + len(c.title)] = " " * (len(c.title) + 2)
    return ["".join(r) for r in rows]


def test_an_edge_leaves_its_source_through_a_tee(mlp_events):
    graph, model = mlp_events
    diagram = build_autograd_graph_from_event(graph, model)
    canvas = gl.rasterise(gl.layout(diagram))
    text = canvas.text()
    for edge in diagram.edges:
        left, _, right, bottom = canvas.boxes[edge.source]
        assert "┬" in text[bottom][left:right + 1]


def test_zoom_scales_the_canvas_and_shrinks_nodes_to_chips_below_one(residual_layout):
    _, laid = residual_layout
    sizes = {z: gl.rasterise(laid, z) for z in gl.ZOOMS}
    widths = [sizes[z].width for z in gl.ZOOMS]
    heights = [sizes[z].height for z in gl.ZOOMS]
    assert widths == sorted(widths) and heights == sorted(heights) and len(set(heights)) == len(gl.ZOOMS)
    half = sizes[0.5]
    assert all(top == bottom for _, top, _, bottom in half.boxes.values())  # one-row chips
    assert "┌" not in "".join(half.text()[t][l] for l, t, _, _ in half.boxes.values())
    assert sizes[2.0].boxes.keys() == sizes[1.0].boxes.keys()


def test_collapsed_modules_are_double_boxes(residual_events):
    graph, model = residual_events
    diagram = build_autograd_graph_from_event(graph, model, depth=1)
    canvas = gl.rasterise(gl.layout(diagram))
    collapsed = [n for n in diagram.nodes.values() if n.kind == "collapsed"]
    assert {n.data["module"] for n in collapsed} == {"inp", "block", "head"}
    text = "\n".join(canvas.text())
    assert re.search(r"║ block \(Block\) · \d+ ops, 4 params ║", text)


def test_labels_are_one_line_with_shapes_and_short_hook_names():
    from modscope.views.diagrams.diagram import Node

    assert gl.node_label(Node("a", [], "op", None, {"op": "AddmmBackward0", "shape": [[64, 10]]})) == \
        "AddmmBackward0 64×10"
    assert gl.node_label(Node("b", [], "op", None, {"op": "BackwardHookFunctionBackward", "shape": [[2], []]})) == \
        "BackwardHook 2, scalar"
    assert gl.node_label(Node("c", [], "leaf", None, {"path": "fc.weight", "shape": [3, 4]})) == "fc.weight 3×4"
    assert gl.node_label(Node("d", [], "leaf", None, {"path": None, "shape": [5]})) == "5"
    assert len(gl.node_label(Node("e", [], "op", None, {"op": "X" * 100, "shape": [[1]]}))) == gl.MAX_LABEL
    assert gl.node_label(Node("f", [], "leaf", None, {"path": "层.weight", "shape": [1]})) == "?.weight 1"


def test_layout_source_sizes_nodes_in_cells(residual_layout):
    diagram, _ = residual_layout
    labels = {nid: gl.node_label(n) for nid, n in diagram.nodes.items()}
    source = gl.layout_source(diagram, labels)
    nid = next(iter(diagram.nodes))
    width = (len(labels[nid]) + gl.LABEL_PAD) * gl.COL_PT / 72
    assert f'"{nid}" [width={width:.4f} height=0.6000]' in source
    assert source.count("subgraph cluster_") == len(diagram.clusters)


def test_missing_dot_and_failing_dot_raise_clear_errors(residual_layout, monkeypatch, tmp_path):
    diagram, _ = residual_layout
    with pytest.raises(gl.LayoutError, match="graphviz failed: .*syntax error"):
        gl.run_dot("digraph { a -> }")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(DotMissing, match="`dot` was not found: install graphviz .*apt-get install graphviz"):
        gl.layout(diagram)
