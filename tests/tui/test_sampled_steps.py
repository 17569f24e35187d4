"""A sampled run in the TUI (``capture.sampling``): the training panel says whether the latest
step was light (and which step was the last full one) or full, the loss the program's backward
started from shows without ``modscope.log``, and ``F`` asks the program for a full step."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

import engine
import modscope
from modscope.views.tui.app import ModscopeApp
from modscope.views.tui.sources import EventListSource
from modscope.views.tui.widgets.training import TrainingPanel
from tests.modscope.models import nested_model
from tests.tui.test_app import settle


def sampled_events(steps: int, every: int | None) -> list[dict]:
    model = nested_model(engine)
    opt = engine.optim.SGD(model.parameters(), lr=0.01)
    x = engine.randn(3, 4)
    with modscope.trace(model, every=every, first=1) as tr:
        for _ in range(steps):
            opt.zero_grad()
            model(x).pow(2).mean().backward()
            opt.step()
    return tr.events


class LiveEvents(EventListSource):
    """A recorded session posing as a live program: records what the viewer sends it."""

    live = True

    def __init__(self, events):
        super().__init__(events)
        self.sent = []

    def control(self, message):
        self.sent.append(message)
        return True


def panel_text(app) -> str:
    console = Console(width=120, record=True, file=io.StringIO())
    console.print(app.query_one(TrainingPanel).content)
    return console.export_text()


@pytest.mark.asyncio
@pytest.mark.parametrize(("steps", "marker"), [(4, "3 · light (full: 2)"), (3, "2 · full")])
async def test_the_training_panel_says_which_steps_are_light_and_shows_the_loss(steps, marker):
    app = ModscopeApp(EventListSource(sampled_events(steps, every=2)))
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot, app, lambda a: a.state.status == "ended" and marker in panel_text(a))
        text = panel_text(app)
        assert "loss" in text  # no modscope.log: the loss backward started from
        assert len(app.state.metrics["loss"]) == steps


@pytest.mark.asyncio
async def test_a_run_watching_every_step_in_full_has_no_marker():
    app = ModscopeApp(EventListSource(sampled_events(3, every=None)))
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot, app, lambda a: a.state.status == "ended" and "loss" in panel_text(a))
        assert "· full" not in panel_text(app) and "light" not in panel_text(app)


@pytest.mark.asyncio
async def test_f_asks_the_program_for_a_full_step():
    source = LiveEvents(sampled_events(2, every=2))
    app = ModscopeApp(source)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot, app, lambda a: a.state.status == "ended")
        await pilot.press("F")
        await settle(pilot, app, lambda a: source.sent == [{"cmd": "full"}])



def panel_lines(app) -> list[str]:
    panel = app.query_one(TrainingPanel)
    return [line.text for line in panel.render_lines(panel.region.reset_offset)]


@pytest.mark.asyncio
@pytest.mark.parametrize("size", [(200, 55), (100, 30), (80, 24)])
async def test_the_panel_wraps_what_it_cannot_fit(size):
    """A light step's line and the learning rate were cropped without a mark at 200x55 (``AdamW
    lr 6.85e``), the speed row at 100x30 (``210.2 steps/s   3,``) and ``threads`` in the names
    column (``threa…``): a row wider than the panel goes on lines of its own, wrapped, the
    learning rates below the step."""
    model = nested_model(engine)
    opt = engine.optim.AdamW(model.parameters(), lr=0.00685123)
    x = engine.randn(3, 4)
    with modscope.trace(model, every=2, first=1) as tr:
        for _ in range(4):
            opt.zero_grad()
            model(x).pow(2).mean().backward()
            opt.step()
    app = ModscopeApp(EventListSource(tr.events))
    wholes = ("3 · light (full: 2)", "AdamW lr 0.00685", "steps/s", "events/s", "74 events")

    def values(a) -> str:  # the value column's text, each line's runs of spaces as one
        lines = [line.strip("│╭╮╰╯─")[1:].rstrip() for line in panel_lines(a)]
        return " ".join(" ".join(line[7:].split()) for line in lines if line)  # names: 6 wide, a gap

    async with app.run_test(size=size) as pilot:
        # (the panel's width settles with the layout: each width re-fits the rows)
        await settle(pilot, app, lambda a: a.state.status == "ended" and all(w in values(a) for w in wholes))
        width = app.query_one(TrainingPanel).content_region.width
        assert all(len(line.strip("│╭╮╰╯─")[1:].rstrip()) <= width for line in panel_lines(app))
        assert "threads" not in values(app)  # (EventListSource: no child, no thread note)
