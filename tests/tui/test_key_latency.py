"""What keeps keys fast while a model trains (issue 20) and a replay's first frame first
(issue 21): when full garbage collections run, dialogs over a still copy of the views, views
not updated behind a dialog, the params table's caches bounded, the source started after the
first frame. Behaviour only (what runs, what is kept, what is drawn); the timings are
``bench/bench_tui_scale.py``'s."""

from __future__ import annotations

import gc
import re
import time

import pytest
from rich.segment import Segment
from rich.style import Style
from textual.app import App, ComposeResult
from textual.color import Color
from textual.renderables.background_screen import BackgroundScreen
from textual.strip import Strip

from modscope.views.tui import gc_policy
from modscope.views.tui.app import ModscopeApp
from modscope.views.tui.gc_policy import OUT_OF_REACH, GcPolicy
from modscope.views.tui.screens import RECAPTURE_DELAY_S, Dialog, FindScreen, tint
from modscope.views.tui.sources import EventListSource, QueueSource
from modscope.views.tui.state import ParamInfo
from modscope.views.tui.widgets.module_tree import ModuleTree
from modscope.views.tui.widgets.params_table import COLUMNS, ParamsTable
from tests.tui.test_app import drawn, loaded, settle


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture()
def policy():
    """A started policy on a fake clock and a fake count of young collections; its full
    collections are counted, not run (and reset that count, as CPython's do)."""
    clock, runs, count, live = Clock(), [], [0], [70_000]

    def collect() -> None:
        runs.append(clock.now)
        count[0] = 0

    # CPython 3.11's thresholds, whatever this interpreter's are (3.13 raised threshold0 to 2000):
    # the figures below are the policy's arithmetic on them.
    interpreters = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    p = GcPolicy(quiet_s=1.0, busy_factor=4, max_gap_s=60.0, clock=clock, collect=collect,
                 pending=lambda: count[0], survivors=lambda: live[0])
    p.start()
    try:
        yield p, clock, runs, count, live
    finally:
        p.stop()
        gc.set_threshold(*interpreters)


def test_the_policy_freezes_what_is_alive_and_turns_automatic_full_collections_off():
    before = gc.get_threshold()
    p = GcPolicy()
    p.start()
    try:
        assert p.active and gc.get_freeze_count() > 0
        assert gc.get_threshold() == (before[0], before[1], OUT_OF_REACH)
    finally:
        p.stop()
    # (3.12 starts with objects of its own frozen: they are given back with the policy's)
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0 and not p.active


def test_a_program_that_froze_objects_itself_keeps_its_freeze():
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        p = GcPolicy()
        p.start()
        p.stop()
        # not unfrozen by the viewer (a few frozen objects may have been freed meanwhile: 3.13 counts them out)
        assert gc.get_freeze_count() > frozen * 0.9
    finally:
        gc.unfreeze()


def test_a_due_full_collection_waits_for_an_idle_user(policy):
    p, clock, runs, count, _ = policy
    assert p.due == 10  # 70,000 objects: a quarter is under CPython's own threshold2 (10)
    count[0] = 9
    clock.now += 5
    assert not p.tick()  # idle, but not due yet
    count[0] = 10
    p.touch()  # due, but a key just now
    assert not p.tick() and runs == []
    clock.now += 1.1  # idle
    assert p.tick() and runs == [clock.now] and p.collections == 1


def test_while_the_user_is_active_a_collection_waits_for_four_times_its_due(policy):
    p, clock, runs, count, _ = policy
    for pending in (10, 25, 39):
        count[0] = pending
        clock.now += 0.2
        p.touch()
        assert not p.tick()
    count[0] = 40
    assert p.tick() and len(runs) == 1


def test_a_full_collection_runs_after_max_gap_whatever_is_pending(policy):
    p, clock, runs, count, _ = policy
    clock.now += 59
    p.touch()
    assert not p.tick()
    clock.now += 1
    p.touch()
    assert p.tick() and len(runs) == 1


def test_the_due_count_is_counted_in_this_interpreters_young_collections():
    """A quarter of the live heap, in collections of threshold0 * threshold1 allocations each."""
    before = gc.get_threshold()
    try:
        gc.set_threshold(2000, 10, 10)  # CPython 3.13's defaults
        p = GcPolicy(collect=lambda: None, pending=lambda: 0, survivors=lambda: 7_000_000)
        p.start()
        try:
            assert p.due == round(7_000_000 / 4 / (2000 * 10)) == 88
        finally:
            p.stop()
        assert gc.get_threshold() == (2000, 10, 10)
    finally:
        gc.set_threshold(*before)


def test_the_due_count_follows_the_live_heap(policy):
    p, clock, runs, count, live = policy
    live[0] = 7_000_000  # after this collection: a quarter of it is 250 young collections
    count[0] = 10
    clock.now += 2
    assert p.tick() and p.due == 250
    count[0] = 249
    clock.now += 2
    assert not p.tick()
    count[0] = 250
    assert p.tick()


def test_one_policy_per_process_and_none_while_the_collector_is_off(policy):
    second = GcPolicy(collect=lambda: pytest.fail("an inactive policy collected"))
    second.start()
    assert not second.active and not second.tick()
    second.stop()  # does not undo the first one's settings
    assert gc.get_threshold()[2] == OUT_OF_REACH and policy[0].active
    policy[0].stop()
    gc.disable()
    try:
        third = GcPolicy()
        third.start()
        assert not third.active and gc_policy._active is None
    finally:
        gc.enable()


@pytest.mark.asyncio
async def test_the_app_runs_the_policy_and_a_key_counts_as_the_user_being_there(events):
    before = gc.get_threshold()
    app = ModscopeApp(EventListSource(events))
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot, app, lambda a: a.source_started)  # with the source, after the first frame
        assert app.gc_policy.active and gc.get_threshold()[2] == OUT_OF_REACH
        app.gc_policy.last_input = -1.0
        await pilot.press("down")
        assert app.gc_policy.last_input > 0
    assert not app.gc_policy.active and gc.get_threshold() == before


# --- dialogs ----------------------------------------------------------------------------------

def test_tint_tints_as_textual_does():
    segments = [Segment("ab", Style(color="red", bgcolor="blue", bold=True)), Segment("c", None),
                Segment("", Style(), control=[(1,)]),
                Segment("d", Style(color="red", bgcolor="blue", bold=True, link="x"))]
    for color in (Color(10, 20, 30, 0.6), Color(0, 0, 0, 0)):
        for base in (Style(), Style(bgcolor="green", italic=True)):  # the dialog's own style beneath
            expected = [s if s.control else Segment(s.text, base + s.style if base else s.style)
                        for s in BackgroundScreen.process_segments(segments, color)]
            assert list(tint(Strip(segments), color, base, {})) == expected


def step_events(step: int, seq: int) -> list[dict]:
    """A further training step (a metric and the step itself) after the fixture's last."""
    return [{"v": 1, "kind": "metric", "seq": seq, "t": seq * 1000, "step": step, "values": {"loss": 0.5}},
            {"v": 1, "kind": "step", "seq": seq + 1, "t": seq * 1000 + 1, "step": step, "optimizer": "SGD",
             "index": step, "lrs": [0.1]}]


def screen_lines(app: ModscopeApp) -> list[str]:
    """The main screen's text, line by line (what a terminal beneath the dialog shows)."""
    return [strip.text for strip in app.screen_stack[0]._compositor.render_strips()]


def training_step_line(app: ModscopeApp) -> str:
    return next(line for line in screen_lines(app) if re.search(r"│ step\s+\d", line) and "SGD" in line)


async def training_to_step_5(pilot, app: ModscopeApp, source: QueueSource, events: list[dict]) -> None:
    """The fixture run, still going (no ``end``), fed in and drawn up to its step 5."""
    for e in [e for e in events if e["kind"] != "end"]:
        source.sink.write(e)
    await settle(pilot, app, lambda a: a.state.step == 5 and drawn(a))


@pytest.mark.asyncio
async def test_a_dialog_shows_a_still_copy_and_the_views_catch_up_when_it_closes(events):
    source = QueueSource()
    app = ModscopeApp(source)
    async with app.run_test(size=(160, 45)) as pilot:
        await training_to_step_5(pilot, app, source, events)
        assert re.search(r"step\s+5\s", training_step_line(app))
        await pilot.press("slash")
        await settle(pilot, app, lambda a: isinstance(a.screen, FindScreen) and a.screen.backdrop is not None)
        dialog = app.screen
        assert isinstance(dialog, Dialog)
        await pilot.pause(0.5)  # the screen beneath settles (its footer shows the dialog's keys)
        renders, seen = dialog.backdrop.renders, dict(app._seen)
        for step in range(6, 9):  # training goes on behind the dialog
            for e in step_events(step, 1000 + 10 * step):
                source.sink.write(e)
        await settle(pilot, app, lambda a: a.state.step == 8)
        await pilot.pause(0.5)  # five ticks
        assert app._seen == seen  # not drawn behind the dialog
        assert dialog.backdrop.renders == renders  # the copy beneath was not composited again
        await pilot.resize_terminal(150, 44)  # a new size: the screen beneath is composited anew
        await settle(pilot, app, lambda a: any(width == 150 for width, _ in dialog.backdrop._strips))
        assert dialog.backdrop.renders > renders
        await pilot.press("escape")
        await settle(pilot, app, lambda a: not isinstance(a.screen, FindScreen) and drawn(a))
        assert app._seen != seen and re.search(r"step\s+8\s", training_step_line(app))
        assert dialog.backdrop is None  # the closed dialog's copy is freed at once, not by the collector


@pytest.mark.asyncio
async def test_layouts_beneath_a_dialog_close_together_make_one_copy(events):
    app = ModscopeApp(QueueSource())
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("slash")
        await settle(pilot, app, lambda a: isinstance(a.screen, FindScreen) and a.screen.backdrop is not None)
        dialog = app.screen
        await pilot.pause(0.5)
        await settle(pilot, app, lambda a: not dialog._recapture_due)  # the opening's own copy made
        renders = dialog.backdrop.renders
        beneath = app.screen_stack[0]
        for _ in range(3):  # three layouts of the screen beneath within a few milliseconds
            beneath.screen_layout_refresh_signal.publish(beneath)
        assert dialog.backdrop.renders == renders  # none copied yet
        await settle(pilot, app, lambda a: dialog.backdrop.renders > renders)  # the timer, however late
        await pilot.pause(RECAPTURE_DELAY_S * 4)
        assert dialog.backdrop.renders == renders + 1  # one copy for the three


# --- the params table -------------------------------------------------------------------------

class TableApp(App):
    def compose(self) -> ComposeResult:
        yield ParamsTable()


def params(value: float) -> list[ParamInfo]:
    return [ParamInfo(path=f"lin.{name}", shape=[4, 4], dtype="float32", numel=16,
                      requires_grad=True, is_buffer=False, persistent=True, norm=value, grad_norm=value / 2,
                      update_ratio=1e-3, mean=value / 10, std=value / 5)
            for name in ("weight", "bias")]


@pytest.mark.asyncio
async def test_the_params_tables_render_caches_hold_what_is_on_screen_not_every_update():
    app = TableApp()
    async with app.run_test(size=(160, 20)) as pilot:
        table = app.query_one(ParamsTable)
        for i in range(40):  # live values: every cell of the norms changes each time
            table.show("lin", params(1.0 + i))
            await pilot.pause()
        assert table.get_cell("lin.weight", table.ordered_columns[6].key) == "40"
        # what one screen of the table needs (2 rows and the header), not 40 updates of it
        assert len(table._cell_render_cache) <= 3 * len(COLUMNS)
        assert len(table._row_render_cache) <= 3


@pytest.mark.asyncio
async def test_a_new_module_sizes_the_params_table_at_once_not_when_idle():
    app = TableApp()
    async with app.run_test(size=(160, 20)) as pilot:
        await pilot.pause()
        table = app.query_one(ParamsTable)
        table.show("lin", params(1.0))  # no await: nothing has run since, no idle, no paint
        name = table.ordered_columns[0]
        assert name.content_width >= len("weight")  # the header alone is 4 wide ("name")
        assert table.virtual_size.height == 3  # the header and two rows: laid out with this paint


# --- the first frame --------------------------------------------------------------------------

class RecordingSource(EventListSource):
    def __init__(self, events, log) -> None:
        super().__init__(events)
        self.log = log
        self.starts = 0

    def start(self, state) -> None:
        self.starts += 1
        self.log.append("source started")
        super().start(state)


@pytest.mark.asyncio
async def test_the_first_frame_comes_before_the_source_starts(events):
    log: list[str] = []
    source = RecordingSource(events, log)
    app = ModscopeApp(source)
    display = app._display

    def recording_display(screen, renderable) -> None:
        display(screen, renderable)
        if "first frame" not in log:
            log.append("first frame")

    app._display = recording_display
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot, app, lambda a: a.state.status == "ended" and drawn(a))
        assert log[:2] == ["first frame", "source started"] and app.source_started
    app._start_source()  # a call still queued at shutdown: the source is not started again
    assert source.starts == 1


# --- live values at most every LIVE_REDRAW_S --------------------------------------------------

@pytest.mark.asyncio
async def test_live_values_wait_for_their_turn_but_keys_status_and_a_new_model_do_not(events, monkeypatch):
    from modscope.views.tui import app as app_module
    source = QueueSource()
    app = ModscopeApp(source)
    async with app.run_test(size=(160, 45)) as pilot:
        await training_to_step_5(pilot, app, source, events)
        monkeypatch.setattr(app_module, "LIVE_REDRAW_S", 1000.0)  # from now on live values wait
        app._live_drawn_at = time.monotonic()
        seen = dict(app._seen)
        for e in step_events(6, 1000):
            source.sink.write(e)
        await settle(pilot, app, lambda a: a.state.step == 6)
        await pilot.pause(0.5)  # five ticks
        assert app._seen == seen and re.search(r"step\s+5\s", training_step_line(app))  # held
        with app.state.lock:
            assert app._hold_live({"training", "params"}) and not app._hold_live({"training", "status"})
            assert not app._hold_live(set())
        await pilot.press("right_square_bracket")  # a key's redraw (the timeline) is not held
        await settle(pilot, app, lambda a: a._seen["timeline"] == a.state.rev.timeline)
        assert re.search(r"step\s+6\s", training_step_line(app))  # drawn with it
        source.sink.write({"v": 1, "kind": "end", "seq": 2000, "t": 2_000_000, "step": 7, "status": "ok",
                           "dropped": 0})
        await settle(pilot, app, lambda a: drawn(a) and "ended" in a.title)  # a status change: at once
        app._seen["tree"] = -1  # as if the tree changed: held while it is the same model
        with app.state.lock:
            assert app._hold_live({"tree"})
            app.query_one(ModuleTree).modules = {}  # a model the tree does not show yet: not held
            assert not app._hold_live({"tree"})


@pytest.mark.asyncio
async def test_in_a_browser_tab_live_values_wait_longer(events, monkeypatch):
    """In a tab each live frame costs the page's CPU, and a key pressed while it draws one waits:
    live values are drawn at most every WEB_LIVE_REDRAW_S there (LIVE_REDRAW_S in a terminal)."""
    from modscope.views.tui import app as app_module
    source = QueueSource()
    app = ModscopeApp(source)
    async with app.run_test(size=(160, 45)) as pilot:
        await training_to_step_5(pilot, app, source, events)
        since = (app_module.LIVE_REDRAW_S + app_module.WEB_LIVE_REDRAW_S) / 2  # between the two
        with app.state.lock:
            app._live_drawn_at = time.monotonic() - since
            assert not app._hold_live({"training", "params"})  # a terminal: due again
            monkeypatch.setattr(ModscopeApp, "is_web", property(lambda self: True))
            assert app._hold_live({"training", "params"})  # a tab: not yet
            app._live_drawn_at = time.monotonic() - app_module.WEB_LIVE_REDRAW_S
            assert not app._hold_live({"training", "params"})


@pytest.mark.asyncio
async def test_in_a_browser_tab_live_values_wait_while_the_user_types(events, monkeypatch):
    """In a tab live values are not drawn while keys come (one less than WEB_TYPING_S ago), for up
    to WEB_TYPING_MAX_HOLD_S since they were last drawn; in a terminal a key holds nothing."""
    from modscope.views.tui import app as app_module
    source = QueueSource()
    app = ModscopeApp(source)
    async with app.run_test(size=(160, 45)) as pilot:
        await training_to_step_5(pilot, app, source, events)
        before = time.monotonic()
        await pilot.press("down")
        assert app._key_at >= before  # a key is timed as it arrives
        live = {"training", "params"}
        with app.state.lock:
            now = time.monotonic()
            app._key_at = now
            app._live_drawn_at = now - app_module.LIVE_REDRAW_S
            assert not app._hold_live(live)  # a terminal: a key holds nothing
            monkeypatch.setattr(ModscopeApp, "is_web", property(lambda self: True))
            app._live_drawn_at = now - app_module.WEB_LIVE_REDRAW_S  # due, but a key came just now
            assert app._hold_live(live) and not app._hold_live({"training", "status"})
            app._key_at = now - app_module.WEB_TYPING_S  # the typing stopped: due
            assert not app._hold_live(live)
            app._key_at = now  # typing on, but held for as long as it may be: due
            app._live_drawn_at = now - app_module.WEB_TYPING_MAX_HOLD_S
            assert not app._hold_live(live)


# --- tab: the focus moves without a repaint of the whole screen -----------------------------

class _Touched(dict):
    """A terminal's cells that records which of them were written."""

    def __init__(self, *args) -> None:
        super().__init__(*args)
        self.touched: set = set()

    def __setitem__(self, key, value) -> None:
        self.touched.add(key)
        super().__setitem__(key, value)


@pytest.mark.asyncio
@pytest.mark.parametrize("size", [(160, 45), (80, 24)], ids=["wide", "paged"])
async def test_tab_repaints_what_its_focus_changes_and_the_frames_add_up_to_the_screen(events, size):
    """Each tab moves the focus to the next view: in the wide layout the frames written repaint
    the two views whose focus changed (and the footer's keys), not every cell (Textual repainted
    the whole screen on a focus move, and the paged layouts' classes, set on the screen, restyled
    every node); in every layout the frames written, one after the other, draw the screen a
    full frame draws."""
    from textual._compositor import CompositorUpdate

    from .test_web_driver import Terminal

    app = ModscopeApp(EventListSource(events))
    frames: list[str] = []
    display = app._display

    def recording_display(screen, renderable) -> None:
        if isinstance(renderable, CompositorUpdate) and not app._batch_count:
            frames.append(renderable.render_segments(app.console))
        display(screen, renderable)

    def full_frame() -> str:
        return app.screen._compositor.render_update(full=True).render_segments(app.console)

    async with app.run_test(size=size) as pilot:
        await settle(pilot, app, loaded)
        await pilot.pause(0.3)
        shown = Terminal()
        shown.feed(full_frame())
        app._display = recording_display
        width, height = size
        for _ in range(6):  # round every view and back
            before = app.focused
            frames.clear()
            await pilot.press("tab")
            await settle(pilot, app, lambda a: a.focused is not before)  # noqa: B023
            await pilot.pause(0.3)
            shown.cells = _Touched(shown.cells)
            for frame in frames:
                shown.feed(frame)
            if size == (160, 45):  # the two views (their scroll bars within), the footer's row
                most = before.region.area + app.focused.region.area + width
                assert 0 < len(shown.cells.touched) <= most < width * height, (len(shown.cells.touched), app.focused)
            expected = Terminal()
            expected.feed(full_frame())
            assert shown.cells == expected.cells, app.focused


# --- the app's focus (a browser tab's): only what reads it is restyled ------------------------

@pytest.mark.asyncio
async def test_the_apps_focus_restyles_what_reads_it_and_looks_as_a_whole_restyle(events):
    """A browser tab that loses the focus blurs the app (textual-serve's page says so): Textual
    restyled every node of the screen each time; here only the header's title (the one rule that
    reads it, Textual's, fades it), and the screen looks as after Textual's whole restyle, the
    focused view unfocused and focused again."""
    from modscope.views.tui.app import app_focus_readers
    from modscope.views.tui.widgets.header import TitleLine

    from .test_web_driver import cells

    app = ModscopeApp(EventListSource(events))
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot, app, loaded)
        await pilot.pause(0.2)
        focused = app.focused
        assert focused is not None
        assert [type(node) for node in app_focus_readers(app, app.screen)] == [TitleLine]
        for focus in (False, True):
            app.app_focus = focus
            await pilot.pause(0.3)
            ours = cells(app.screen._compositor.render_strips())
            assert (app.focused is focused) is focus and (app.query_one(TitleLine).styles.text_opacity == 0.5) is not focus
            app.screen.update_node_styles()  # Textual's: every node of the screen
            await pilot.pause(0.3)
            assert cells(app.screen._compositor.render_strips()) == ours


@pytest.mark.asyncio
@pytest.mark.parametrize("web", [True, False], ids=["tab", "terminal"])
async def test_in_a_browser_tab_the_focus_moves_by_the_views_titles_not_their_borders(events, monkeypatch, web):
    """In a browser tab the page draws every row from the first to the last cell a frame changes:
    a focused view's border (its full height) made tab's frame redraw every row of the screen.
    There the focus is marked by the view's title instead, and tab changes a few rows of the views
    (their titles, their cursors) besides the footer's keys; a terminal keeps the border."""
    from .test_web_driver import Terminal

    monkeypatch.setattr(ModscopeApp, "is_web", property(lambda self: web))
    app = ModscopeApp(EventListSource(events))

    def screen() -> dict:
        shown = Terminal()
        shown.feed(app.screen._compositor.render_update(full=True).render_segments(app.console))
        return shown.cells

    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot, app, loaded)
        await pilot.pause(0.3)
        footer_rows = {44}
        for _ in range(4):  # round every view of the wide layout
            before, focused = screen(), app.focused
            await pilot.press("tab")
            await settle(pilot, app, lambda a: a.focused is not focused)  # noqa: B023
            await pilot.pause(0.3)
            after = screen()
            rows = {y for (y, x), cell in after.items() if before.get((y, x)) != cell} - footer_rows
            if web:
                assert 0 < len(rows) <= 4, (sorted(rows), app.focused)
                assert app.focused.styles.border_title_background.a > 0  # the title marks it
            else:
                assert len(rows) > 20, (sorted(rows), app.focused)  # the borders' full height
