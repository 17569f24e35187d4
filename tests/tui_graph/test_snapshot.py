"""A layout snapshot (pytest-textual-snapshot) of the graph view at one size: the residual
model's graph with the cursor on the first node. Update after an intended change:
``pytest tests/tui_graph --snapshot-update`` (graphviz's layout is part of the picture: a
different graphviz version may need an update too)."""

from __future__ import annotations

from modscope.views.tui.widgets.graph_view import AutogradGraphView

from .conftest import GraphApp, settled


def test_graph_view(snap_compare, residual_events):
    async def show(pilot) -> None:
        view = pilot.app.query_one(AutogradGraphView)
        view.show_graph(*residual_events)
        view.focus()
        await settled(pilot, view)
        await pilot.press("full_stop")
        await pilot.pause(0.1)

    assert snap_compare(GraphApp(), terminal_size=(100, 34), run_before=show)
