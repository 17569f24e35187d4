"""Graph view fixtures: traced events of small models (built once per session; the tests may
use the engine, the TUI code under test may not) and a test app holding only the view.

The view tests draw the engine's events (the view reads plain events: what it does with them does
not depend on the backend); ``traced_residual`` gives the ``Residual``'s events on both capture
backends, for the tests of the events themselves (``test_event_builders.py``)."""

from __future__ import annotations

import shutil

import pytest
from textual.app import App, ComposeResult
from textual.widgets import Footer

import engine
from modscope.views.tui.widgets.graph_view import AutogradGraphView

from . import models


@pytest.fixture(scope="session")
def mlp_events() -> tuple[dict, dict]:
    engine.manual_seed(0)
    return models.traced(engine, models.Mlp(), 2, 4)


@pytest.fixture(scope="session")
def residual_events() -> tuple[dict, dict]:
    engine.manual_seed(0)
    return models.traced(engine, models.Residual(), 2, 4)


@pytest.fixture(scope="session")
def deep_events() -> tuple[dict, dict]:
    engine.manual_seed(0)
    return models.traced(engine, models.deep(4), 4, 16)


@pytest.fixture(scope="session")
def lib_models(lib):
    """``models.define(lib)``: the models' classes for this backend."""
    return models.define(lib)


@pytest.fixture(scope="session")
def traced_residual(lib, lib_models) -> tuple[dict, dict]:
    """``residual_events`` on both backends: the ``Residual`` built and traced with ``lib``."""
    lib.manual_seed(0)
    return models.traced(lib, lib_models.Residual(), 2, 4)


@pytest.fixture(autouse=True)
def _needs_dot() -> None:
    # Tests of the no-dot paths take dot off PATH themselves, after this check.
    assert shutil.which("dot"), "graphviz's dot must be on PATH (make setup installs it)"


class GraphApp(App[None]):
    """Only the graph view (and a footer, to show its keys); records what it posts."""

    def __init__(self) -> None:
        super().__init__()
        self.selected: list[str] = []

    def compose(self) -> ComposeResult:
        yield AutogradGraphView(id="graph")
        yield Footer()

    def on_autograd_graph_view_selected(self, message: AutogradGraphView.Selected) -> None:
        self.selected.append(message.path)


async def settled(pilot, view: AutogradGraphView, timeout: float = 20.0) -> None:
    """Wait until the view is not laying out (graphviz runs in a worker thread) and has
    scrolled the new drawing into place."""
    for _ in range(int(timeout / 0.02)):
        await pilot.pause(0.02)
        if view.settled:
            return
    raise AssertionError(f"the layout did not finish in {timeout} s")
