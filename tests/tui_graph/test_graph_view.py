"""``AutogradGraphView`` in a test app of its own (Textual's run_test / Pilot): what it draws,
its keys and mouse, and its messages. The view's drawing is read from its cached canvas."""

from __future__ import annotations

import pytest

from modscope.views.tui.graph_layout import ZOOMS
from modscope.views.tui.widgets import graph_view
from modscope.views.tui.widgets.graph_view import HIGHLIGHT, NO_GRAPH, AutogradGraphView

from .conftest import GraphApp, settled

pytestmark = pytest.mark.asyncio


async def shown(pilot, events, size=None) -> AutogradGraphView:
    view = pilot.app.query_one(AutogradGraphView)
    view.show_graph(*events)
    view.focus()
    await settled(pilot, view)
    assert view.status == "ready", view.message
    return view


def visible_text(view: AutogradGraphView) -> str:
    """What the view shows on screen now (its rendered lines)."""
    region = view.scrollable_content_region
    return "\n".join(view.render_line(y).text for y in range(region.height))


async def test_nodes_cluster_titles_and_edges_are_drawn(residual_events):
    async with GraphApp().run_test(size=(140, 50)) as pilot:
        view = await shown(pilot, residual_events)
        text = "\n".join(view.canvas.text())
        for label in ("AddmmBackward0 2×8", "ReluBackward0 2×8", "AddBackward0 2×8", "head.weight 2×8", "output 2×2"):
            assert label in text
        for title in ("┌ inp (Linear) ┄", "┌ block (Block) ┄", "┌ block.act (Act) [call 2] ┄"):
            assert title in text
        assert text.count("▼") >= len(view.diagram.edges) - 2 and "│" in text and "┬" in text
        assert view.border_title == f"Autograd graph · {len(view.diagram.nodes)} nodes · depth all · zoom 100% · " \
            "13 hook nodes hidden (i)"
        # The first view shows the start of the forward: the first node is on screen.
        first = view.node_label(view.canvas.order[0])
        assert first in visible_text(view)


async def test_no_graph_message_and_a_graph_replacing_it(mlp_events):
    async with GraphApp().run_test(size=(100, 30)) as pilot:
        view = pilot.app.query_one(AutogradGraphView)
        await pilot.pause()
        assert view.status == "empty" and visible_text(view).splitlines()[0].strip() == NO_GRAPH
        view.show_graph({"v": 1, "kind": "graph", "seq": 0, "t": 0, "step": 0, "nodes": [], "edges": [], "leaves": []})
        assert view.status == "empty"
        await shown(pilot, mlp_events)
        assert "AddmmBackward0 2×3" in "\n".join(view.canvas.text())
        view.show_graph(None)
        assert view.canvas is None and NO_GRAPH in visible_text(view)


async def test_missing_dot_says_how_to_install_graphviz(mlp_events, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    async with GraphApp().run_test(size=(100, 30)) as pilot:
        view = pilot.app.query_one(AutogradGraphView)
        view.show_graph(*mlp_events)
        await settled(pilot, view)
        assert view.status == "no dot"
        line = visible_text(view).splitlines()[0]
        assert "graphviz's `dot` was not found: install graphviz (Debian/Ubuntu: `apt-get install graphviz`" in line
        await pilot.press("plus", "less_than_sign", "full_stop", "enter")  # keys do nothing, nothing breaks
        assert view.status == "no dot" and pilot.app.selected == []


async def test_a_malformed_graph_is_a_message_not_a_crash(mlp_events):
    graph, model = mlp_events
    broken = dict(graph, nodes=[dict(graph["nodes"][0], inputs=[999])])
    async with GraphApp().run_test(size=(100, 30)) as pilot:
        view = pilot.app.query_one(AutogradGraphView)
        view.show_graph(broken, model)
        await settled(pilot, view)
        assert view.status == "error"
        assert "cannot draw the graph: graph: node 0 has input 999, which is not a node" in visible_text(view)


async def test_zoom_out_shrinks_the_canvas_and_keeps_the_centre(deep_events):
    async with GraphApp().run_test(size=(120, 40)) as pilot:
        view = await shown(pilot, deep_events)
        before = (view.canvas.width, view.canvas.height)
        view.scroll_to(40, 200, animate=False, immediate=True)
        await pilot.pause()
        region = view.scrollable_content_region
        centre_row = view.scroll_offset.y + region.height / 2
        await pilot.press("minus")
        await settled(pilot, view)
        assert view.zoom == 0.75 and view.virtual_size.height == view.canvas.height
        assert view.canvas.width < before[0] and view.canvas.height < before[1]
        assert abs((view.scroll_offset.y + region.height / 2) / 0.75 - centre_row) <= 2  # the same rows in view
        assert "zoom 75%" in view.border_title


async def test_zoom_steps_through_the_levels_and_stops_at_the_ends(mlp_events):
    async with GraphApp().run_test(size=(120, 40)) as pilot:
        view = await shown(pilot, mlp_events)
        heights = {}
        for key in ["minus"] * 3 + ["plus"] * 5:
            await pilot.press(key)
            await settled(pilot, view)
            heights[view.zoom] = view.canvas.height
        assert view.zoom == ZOOMS[-1] and "zoom 200%" in view.border_title
        assert [heights[z] for z in ZOOMS] == sorted(heights[z] for z in ZOOMS)
        assert len(set(heights.values())) == len(ZOOMS)


async def test_collapsing_reduces_nodes_and_shows_module_boxes(residual_events):
    async with GraphApp().run_test(size=(140, 50)) as pilot:
        view = await shown(pilot, residual_events)
        full = len(view.diagram.nodes)
        assert view.depth is None and view.max_depth == 2
        await pilot.press("less_than_sign")
        await settled(pilot, view)
        assert view.depth == 2 and "depth 2/2" in view.border_title
        counts = [full, len(view.diagram.nodes)]
        await pilot.press("less_than_sign")
        await settled(pilot, view)
        counts.append(len(view.diagram.nodes))
        assert counts[0] > counts[1] > counts[2]
        text = "\n".join(view.canvas.text())
        assert "║ block (Block) · " in text and "╔" in text and "block.fc1" not in text
        await pilot.press("less_than_sign", "less_than_sign")  # down to 0: the whole model, then no further
        await settled(pilot, view)
        assert view.depth == 0 and "║ (model) (Residual) · " in "\n".join(view.canvas.text())
        for _ in range(3):
            await pilot.press("greater_than_sign")
            await settled(pilot, view)
        assert view.depth is None and len(view.diagram.nodes) == full


async def test_tab_cycles_nodes_and_posts_their_module(residual_events):
    async with GraphApp().run_test(size=(140, 50)) as pilot:
        view = await shown(pilot, residual_events)
        order = view.canvas.order
        await pilot.press("full_stop")
        assert view.cursor == order[0]
        await pilot.press("full_stop", "full_stop")
        assert view.cursor == order[2]
        await pilot.press("comma")
        assert view.cursor == order[1]
        await pilot.pause()
        expected = [view.node_module(n) for n in order[:3] + order[1:2]]
        assert pilot.app.selected == [m for m in expected if m is not None]
        # Tab wraps around; nodes outside every module (the output) post nothing.
        await pilot.press("comma", "comma")
        assert view.cursor == order[-1] and view.node_module(order[-1]) is None
        posted = len(pilot.app.selected)
        await pilot.press("enter")
        await pilot.pause()
        assert len(pilot.app.selected) == posted
        # The cursor's box is on screen and drawn with the cursor style.
        left, top, right, _ = view.canvas.boxes[view.cursor]
        y = top - view.scroll_offset.y
        strip = view.render_line(y)
        assert 0 <= y < view.scrollable_content_region.height
        assert any(seg.style and seg.style.bgcolor for seg in strip)


async def test_a_parameter_selects_its_owner_and_enter_posts_again(mlp_events):
    async with GraphApp().run_test(size=(120, 40)) as pilot:
        view = await shown(pilot, mlp_events)
        weight = next(n for n, node in view.diagram.nodes.items() if node.data.get("path") == "fc2.weight")
        while view.cursor != weight:
            await pilot.press("full_stop")
        await pilot.press("enter")
        await pilot.pause()
        assert pilot.app.selected[-2:] == ["fc2", "fc2"]


async def test_click_selects_a_node_and_a_cluster_title(mlp_events):
    async with GraphApp().run_test(size=(120, 40)) as pilot:
        view = await shown(pilot, mlp_events)
        addmm = next(n for n, node in view.diagram.nodes.items()
                     if node.data.get("op") == "AddmmBackward0" and node.data["module"] == "fc1")
        left, top, right, bottom = view.canvas.boxes[addmm]
        view.scroll_to_region(view.box_region(addmm), animate=False, immediate=True)
        await pilot.pause()
        gx, gy = view.gutter.top_left  # the border
        x, y = left + 3 - view.scroll_offset.x, top + 1 - view.scroll_offset.y
        await pilot.click(AutogradGraphView, offset=(x + gx, y + gy))
        await pilot.pause()
        assert view.cursor == addmm and pilot.app.selected[-1] == "fc1" and view.has_focus
        frame = view.canvas.frames["fc2"]
        view.scroll_to(frame[0], frame[1], animate=False, immediate=True)
        await pilot.pause()
        x, y = frame[0] + 3 - view.scroll_offset.x, frame[1] - view.scroll_offset.y
        await pilot.click(AutogradGraphView, offset=(x + gx, y + gy))
        await pilot.pause()
        assert pilot.app.selected[-1] == "fc2" and view.cursor == addmm


async def test_highlight_module_restyles_and_scrolls_it_into_view(deep_events):
    async with GraphApp().run_test(size=(120, 40)) as pilot:
        view = await shown(pilot, deep_events)
        target = "3.2"  # a block near the end: off screen at first
        left, top, right, bottom = view.canvas.frames[target]
        assert top > view.scroll_offset.y + view.scrollable_content_region.height
        view.highlight_module(target)
        await pilot.pause()
        region = view.scrollable_content_region
        assert view.scroll_offset.y <= top < view.scroll_offset.y + region.height
        strip = view.render_line(top - view.scroll_offset.y)
        styled = [seg for seg in strip if seg.style and seg.style.color == HIGHLIGHT.color]
        assert "".join(seg.text for seg in styled).startswith("┌ 3.2 (Sequential) ┄")
        inside = [n for n in view.canvas.order if (view.node_module(n) or "").startswith("3.2.")]
        assert inside and all(n in view.highlighted_nodes() for n in inside)
        # A module inside a collapsed one highlights the collapsed node.
        await pilot.press("less_than_sign", "less_than_sign")
        await settled(pilot, view)
        view.highlight_module("3.2.0")
        (node,) = view.highlighted_nodes()
        assert view.diagram.nodes[node].data["module"] == "3.2"
        view.highlight_module(None)
        assert view.highlighted_nodes() == []


async def test_panning_moves_the_view(deep_events):
    async with GraphApp().run_test(size=(100, 30)) as pilot:
        view = await shown(pilot, deep_events)
        view.scroll_to(0, 0, animate=False, immediate=True)
        await pilot.pause()
        await pilot.press("down", "j", "right")
        await pilot.pause()
        assert view.scroll_offset.y == 6 and view.scroll_offset.x == 8
        await pilot.press("k", "left", "h")
        await pilot.pause()
        assert (view.scroll_offset.x, view.scroll_offset.y) == (0, 3)


async def test_a_large_graph_lays_out_off_the_ui_thread_and_draws_from_its_raster(deep_events, monkeypatch):
    async with GraphApp().run_test(size=(120, 40)) as pilot:
        view = pilot.app.query_one(AutogradGraphView)
        view.show_graph(*deep_events)  # returns at once: graphviz runs in a worker thread
        assert view.status == "laying out" and "laying out the graph…" in visible_text(view)
        await settled(pilot, view)
        assert len(view.diagram.nodes) > 100 and view.canvas.height > 3 * view.size.height
        view.highlight_module("2")
        # A frame is slices of the raster made once: each highlighted row is restyled once,
        # whatever the number of frames drawn (speed itself is measured in bench/, not here).
        restyled = []
        original = graph_view._restyled
        monkeypatch.setattr(graph_view, "_restyled", lambda strip, spans: restyled.append(1) or original(strip, spans))
        canvas, height = view.canvas, view.scrollable_content_region.height
        for _ in range(5):
            lines = [view.render_line(y) for y in range(height)]
        top = view.scroll_offset[1]
        highlighted_rows = [y for y in range(height) if top + y in view._spans]
        assert view.canvas is canvas and highlighted_rows and len(restyled) == len(highlighted_rows)
        assert all(line.cell_length == view.scrollable_content_region.width for line in lines)


async def test_keys_are_in_the_footer_when_focused_and_leave_the_apps_keys_alone(mlp_events):
    async with GraphApp().run_test(size=(120, 30)) as pilot:
        await shown(pilot, mlp_events)
        shown_keys = {key: active.binding.description for key, active in pilot.app.active_bindings.items()
                      if active.binding.show}
        assert {"plus": "zoom in", "minus": "zoom out", "less_than_sign": "collapse", "greater_than_sign": "expand",
                "full_stop": "next node", "enter": "select"}.items() <= shown_keys.items()
    apps_keys = {"left_square_bracket", "right_square_bracket", "e", "space", "n", "b", "slash", "g", "f", "m",
                 "1", "2", "3", "4", "x", "l", "q", "question_mark"}
    ours = {key for binding in AutogradGraphView.BINDINGS for key in binding.key.split(",")}
    assert not ours & apps_keys


async def test_the_cursor_follows_its_module_through_collapse_and_expand(residual_events):
    async with GraphApp().run_test(size=(140, 50)) as pilot:
        view = await shown(pilot, residual_events)
        while view.node_module(view.cursor) != "block.fc1":
            await pilot.press("full_stop")
        await pilot.press("less_than_sign", "less_than_sign")  # depth 1: block is one node
        await settled(pilot, view)
        assert view.depth == 1 and view.diagram.nodes[view.cursor].data["module"] == "block"
        assert view.diagram.nodes[view.cursor].kind == "collapsed"
        await pilot.press("greater_than_sign", "greater_than_sign")
        await settled(pilot, view)
        assert view.depth is None and view.node_module(view.cursor) == "block.fc1"
        region = view.box_region(view.cursor)
        assert view.scroll_offset.y <= region.y < view.scroll_offset.y + view.scrollable_content_region.height


async def test_a_graph_too_large_to_draw_whole_opens_collapsed(residual_events, monkeypatch):
    import modscope.views.tui.widgets.graph_view as graph_view

    monkeypatch.setattr(graph_view, "AUTO_DEPTH_NODES", 12)
    async with GraphApp().run_test(size=(120, 40)) as pilot:
        view = await shown(pilot, residual_events)
        assert view.depth == 1 and len(view.diagram.nodes) <= 12  # depth 2 still has more than 12
        assert "depth 1/2" in view.border_title
        await pilot.press("greater_than_sign", "greater_than_sign")
        await settled(pilot, view)
        assert view.depth is None and len(view.diagram.nodes) > 12  # the user may still expand it all


async def test_a_layout_finishing_after_the_app_stopped_is_dropped(mlp_events):
    async with GraphApp().run_test(size=(120, 40)) as pilot:
        view = await shown(pilot, mlp_events)
        job = graph_view_job(view)

        def closed(*args, **kwargs):
            raise RuntimeError("the app is not running")

        pilot.app.call_from_thread = closed
        view._run(job, view._generation)  # no exception escapes the worker


def graph_view_job(view):
    from modscope.views.tui.widgets.graph_view import _Job

    return _Job(view.graph_event, view.model_event, None, 1.0, False, view.max_depth, {}, {})


async def test_hook_identity_nodes_are_hidden_with_their_edges_joined_and_can_be_shown(residual_events):
    graph, _ = residual_events
    hooks = sum(n["op"] == "BackwardHookFunctionBackward" for n in graph["nodes"])
    assert hooks == 13
    async with GraphApp().run_test(size=(140, 50)) as pilot:
        view = await shown(pilot, residual_events)
        labels = [view.node_label(n) for n in view.canvas.order]
        assert not any(label.startswith("BackwardHook") for label in labels)
        assert view.hidden_hook_nodes == 13 and "13 hook nodes hidden (i)" in view.border_title
        hidden = view.diagram
        # Joined through: every op still reaches the output, as with the hook nodes drawn.
        assert _reach_output(hidden) == {n for n, node in hidden.nodes.items() if node.kind != "saved"}
        while view.node_module(view.cursor) != "block.fc2":
            await pilot.press("full_stop")
        view.toggle_hook_nodes()
        await settled(pilot, view)
        assert view.show_hook_nodes and "hook nodes shown (i)" in view.border_title
        labels = [view.node_label(n) for n in view.canvas.order]
        assert sum(label.startswith("BackwardHook") for label in labels) == 13
        assert len(view.diagram.nodes) == len(hidden.nodes) + 13
        assert view.node_module(view.cursor) == "block.fc2"  # the cursor stays on its module
        view.toggle_hook_nodes()
        await settled(pilot, view)
        assert len(view.diagram.nodes) == len(hidden.nodes) and "hidden" in view.border_title


def _reach_output(diagram) -> set[str]:
    into: dict[str, list[str]] = {}
    for e in diagram.edges:
        into.setdefault(e.target, []).append(e.source)
    seen, todo = set(), [n for n, node in diagram.nodes.items() if node.kind == "output"]
    while todo:
        n = todo.pop()
        if n not in seen:
            seen.add(n)
            todo.extend(into.get(n, ()))
    return seen


async def test_without_hook_nodes_joins_chains_tuples_and_outputs():
    def node(i, op, inputs):
        return {"id": i, "op": op, "module": "m", "shape": [2], "inputs": inputs}

    hook = "BackwardHookFunctionBackward"
    event = {"v": 1, "kind": "graph", "seq": 0, "t": 0, "step": 0, "leaves": [{"id": 5, "path": "w", "shape": [2]}],
             "nodes": [node(0, hook, [1]), node(1, hook, [2, 3]), node(2, "MulBackward0", [5, None]),
                       node(3, "AddBackward0", [4]), node(4, hook, [None]), node(5, "AccumulateGrad", [])],
             "outputs": [{"id": 0, "shape": [2]}, {"id": 4, "shape": [2]}]}
    new, hidden = graph_view.without_hook_nodes(event)
    assert hidden == 2  # 0 and 1; 4 passes nothing on but is an output: it stays
    assert [n["id"] for n in new["nodes"]] == [2, 3, 4, 5]
    assert {n["id"]: n["inputs"] for n in new["nodes"]}[3] == [4]
    assert new["outputs"] == [{"id": 2, "shape": [2]}, {"id": 4, "shape": [2]}]
    assert event["nodes"][0]["op"] == hook and len(event["nodes"]) == 6  # the event is not changed
    plain = dict(event, nodes=[node(0, "MulBackward0", [])], outputs=[{"id": 0, "shape": [2]}])
    assert graph_view.without_hook_nodes(plain) == (plain, 0)
