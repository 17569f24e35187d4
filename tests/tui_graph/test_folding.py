"""The graph pane folds a big graph's repeated blocks (``diagrams.fold``, the same folding as an
export): what it folds, what its title says, ``u`` to unfold and fold again, and a small graph
left as it is. ``FOLD_NODES`` is lowered to make the fixture models "big"."""

from __future__ import annotations

import pytest

from modscope.views.diagrams.diagram import Diagram, Node
from modscope.views.tui.widgets import graph_view
from modscope.views.tui.widgets.graph_view import fold_titles

from .conftest import GraphApp, settled
from .test_graph_view import shown

pytestmark = pytest.mark.asyncio


def runs(view) -> list[str]:
    return sorted(n.data["run"] for n in view.diagram.nodes.values() if "run" in n.data)


async def test_a_small_graph_is_not_folded(deep_events):
    async with GraphApp().run_test(size=(120, 40)) as pilot:
        view = await shown(pilot, deep_events)
        assert runs(view) == [] and "folded" not in view.border_title and view.diagram.notes == []


async def test_a_big_graph_folds_its_repeated_blocks_and_says_so(deep_events, monkeypatch):
    monkeypatch.setattr(graph_view, "FOLD_NODES", 60)
    async with GraphApp().run_test(size=(140, 40)) as pilot:
        view = await shown(pilot, deep_events)
        # 4 identical stages of 3 identical blocks: stage 0 drawn, its blocks 1-2 and stages 1-3 folded
        assert runs(view) == ["(1-3): 3 × Sequential (as 0)", "0 (1-2): 2 × Sequential (as 0.0)"]
        assert len(view.diagram.nodes) <= 60 and view.depth is None
        assert "· 2 runs folded: 0 (1-2): 2 × Sequential (as 0.0), … (u: unfold) ·" in view.border_title
        assert "(1-3): 3 × Sequential (as 0) · " in "\n".join(view.canvas.text())
        folded = len(view.diagram.nodes)

        await pilot.press("u")
        await settled(pilot, view)
        assert runs(view) == [] and len(view.diagram.nodes) > 60 and "unfolded (u)" in view.border_title

        await pilot.press("u")
        await settled(pilot, view)
        assert len(view.diagram.nodes) == folded and "2 runs folded" in view.border_title


async def test_folding_comes_before_the_automatic_depth(deep_events, monkeypatch):
    monkeypatch.setattr(graph_view, "FOLD_NODES", 60)
    monkeypatch.setattr(graph_view, "AUTO_DEPTH_NODES", 60)
    async with GraphApp().run_test(size=(120, 40)) as pilot:
        view = await shown(pilot, deep_events)
        assert view.depth is None and runs(view)  # folded, it fits whole: no depth collapse
        await pilot.press("less_than_sign")
        await settled(pilot, view)
        assert view.depth is not None and len(view.diagram.nodes) < 60


async def test_selecting_a_folded_run_selects_its_first_module(deep_events, monkeypatch):
    monkeypatch.setattr(graph_view, "FOLD_NODES", 60)
    async with GraphApp().run_test(size=(140, 40)) as pilot:
        view = await shown(pilot, deep_events)
        run = next(n for n in view.diagram.nodes.values() if n.data.get("run", "").startswith("(1-3)"))
        assert view.node_module(run.id) == "1"
        view._move_cursor(run.id)
        await pilot.pause()
        assert pilot.app.selected[-1] == "1"


async def test_fold_titles():
    d = Diagram("autograd", "m")
    assert fold_titles(d, True) == [] and fold_titles(d, False) == ["unfolded (u)"]
    d.add_node(Node("g1", ["+30 more"], "collapsed", None, {"module": None, "fanout_of": "n0"}))
    assert fold_titles(d, True) == ["1 fan-out grouped (u: unfold)"]
    d.add_node(Node("g2", ["x"], "collapsed", None, {"run": "layers (1-99): 99 × VeryLongBlockNameIndeed (as layers.0)"}))
    assert fold_titles(d, True) == ["1 run folded: layers (1-99): 99 × VeryLongBlockNameIn…",
                                    "1 fan-out grouped (u: unfold)"]


async def test_u_on_a_graph_with_nothing_folded_says_so_and_changes_nothing(deep_events):
    async with GraphApp().run_test(size=(120, 40)) as pilot:
        view = await shown(pilot, deep_events)
        title, nodes = view.border_title, len(view.diagram.nodes)
        view.focus()
        await pilot.press("u")
        await settled(pilot, view)
        assert view.fold and view.border_title == title and len(view.diagram.nodes) == nodes  # not "unfolded (u)"
        notes = [n.message for n in pilot.app._notifications]
        assert any(f"nothing to fold: this graph has {nodes} nodes" in m for m in notes), notes


async def test_u_before_any_graph_says_there_is_none():
    from modscope.views.tui.widgets.graph_view import AutogradGraphView

    async with GraphApp().run_test(size=(120, 40)) as pilot:
        view = pilot.app.query_one(AutogradGraphView)
        view.focus()
        await pilot.press("u")
        await pilot.pause(0.1)
        assert view.fold and any("no autograd graph yet" in n.message for n in pilot.app._notifications)
