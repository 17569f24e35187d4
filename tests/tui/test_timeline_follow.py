"""The hook timeline, following a fast run, ends on the newest step even when nothing comes after
it (training paused at a breakpoint must show the step it paused in)."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult

from modscope.views.tui.widgets.timeline import FOLLOW_REDRAW_S, HookTimeline


class TimelineApp(App):
    def compose(self) -> ComposeResult:
        yield HookTimeline()


@pytest.mark.asyncio
async def test_a_throttled_redraw_is_drawn_when_the_interval_is_over(events):
    by_step: dict[int, list] = {}
    for e in events:
        if e["kind"] in ("forward_pre", "forward", "backward_pre", "backward"):
            by_step.setdefault(e["step"], []).append(e)
    app = TimelineApp()
    async with app.run_test(size=(120, 30)) as pilot:
        timeline = app.query_one(HookTimeline)
        timeline.render_step(0, by_step[0], 0, [0])
        timeline.render_step(1, by_step[1], 0, [0, 1])  # within the interval: left for later
        timeline.render_step(2, by_step[2][:5], 0, [0, 1, 2])  # the last word: then nothing more
        assert "step 0" in timeline.border_title
        await pilot.pause(FOLLOW_REDRAW_S * 3)
        for _ in range(50):  # the held-back redraw's timer: late on a busy machine, never skipped
            if "step 2" in timeline.border_title:
                break
            await pilot.pause(0.1)
        assert "step 2" in timeline.border_title and timeline.line_count == 5
