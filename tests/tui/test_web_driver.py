"""The browser tab's driver (``web_driver``): frames of the cells that changed draw what Textual's
own frames draw (checked cell by cell on a small terminal emulator, on synthetic frames and on
the app's real ones), much smaller; what it does not model goes through and is forgotten; a lone
ESC from the page is the escape key at once; dialogs in a browser tab do not dim the screen."""

from __future__ import annotations

import asyncio
import re

import pytest

from modscope.views.tui.app import ModscopeApp
from modscope.views.tui.driver import typeahead_driver
from modscope.views.tui.sources import EventListSource
from modscope.views.tui.web_driver import ESCAPE_KEY, KEEP, DiffWebDriver, ScreenDiff, parse_sgr, transition

from .test_app import loaded, settle

_OFFS = {22: (1, 2), 23: (3,), 24: (4, 21), 25: (5, 6), 27: (7,), 28: (8,), 29: (9,), 54: (51, 52), 55: (53,)}
_SEQ = re.compile(r"\x1b\[(\d*);(\d*)H|\x1b\[([0-9;]*)m|(\x1b\[\?[0-9;]*[hl])|(\n)|([^\x1b\n]+)")


class Terminal:
    """Just enough of a terminal for Textual's frames: cursor moves, SGR applied on the style in
    force (as a terminal does), text, line feeds."""

    def __init__(self) -> None:
        self.cells: dict[tuple[int, int], tuple[str, tuple]] = {}
        self.style: dict[str, object] = {"flags": frozenset()}
        self.x = self.y = 0
        self.written = 0  # cells written

    def sgr(self, params: str) -> None:
        codes = [int(c or 0) for c in params.split(";")] if params else [0]
        st, i = self.style, 0
        while i < len(codes):
            c = codes[i]
            if c in (38, 48, 58):
                n = 4 if codes[i + 1] == 2 else 2
                st[{38: "fg", 48: "bg", 58: "ul"}[c]] = tuple(codes[i:i + n + 1])
                i += n + 1
                continue
            i += 1
            if c == 0:
                st.clear()
                st["flags"] = frozenset()
            elif 30 <= c <= 37 or 90 <= c <= 97:
                st["fg"] = (c,)
            elif 40 <= c <= 47 or 100 <= c <= 107:
                st["bg"] = (c,)
            elif c in (39, 49, 59):
                st.pop({39: "fg", 49: "bg", 59: "ul"}[c], None)
            elif c in _OFFS:
                st["flags"] = st["flags"] - set(_OFFS[c])
            else:
                st["flags"] = st["flags"] | {c}

    def feed(self, data: str) -> None:
        for m in _SEQ.finditer(data):
            row, col, sgr, mode, newline, text = m.groups()
            if row is not None:
                self.y, self.x = int(row or 1) - 1, int(col or 1) - 1
            elif sgr is not None:
                self.sgr(sgr)
            elif newline:
                self.y += 1
            elif text:
                key = tuple(sorted((k, v) for k, v in self.style.items()))
                for ch in text:
                    if ch != KEEP:  # (a cell the terminal keeps as it shows it)
                        self.cells[self.y, self.x] = (ch, key)
                        self.written += 1
                    self.x += 1


def draw(frames: list[str], width: int = 40, height: int = 10) -> tuple[dict, dict, list[str], list[int]]:
    """The cells Textual's frames draw, those the diffed frames draw, the diffed frames, and how
    many cells each of them writes."""
    raw, diffed, screen = Terminal(), Terminal(), ScreenDiff(width, height)
    outs, written = [], []
    for frame in frames:
        raw.feed(frame)
        outs.append(screen.feed(frame))
        before = diffed.written
        diffed.feed(outs[-1])
        written.append(diffed.written - before)
        assert KEEP not in outs[-1]  # (never sent to the page)
        assert diffed.cells == raw.cells, len(outs)  # after each frame, not only the last
    return raw.cells, diffed.cells, outs, written


def changed_span(before: str, after: str, width: int, height: int) -> int:
    """Of the screen ``after`` draws over ``before``, the cells from each row's first changed cell
    to its last."""
    first, second = Terminal(), Terminal()
    first.feed(before)
    second.feed(before)
    second.feed(after)
    rows: dict[int, list[int]] = {}
    for (row, col), cell in second.cells.items():
        if first.cells.get((row, col)) != cell:
            rows.setdefault(row, []).append(col)
    return sum(max(cols) - min(cols) + 1 for cols in rows.values())


def seg(text: str, style: str = "") -> str:
    """A run of text as Textual writes it: its full style, then a reset."""
    return f"\x1b[{style}m{text}\x1b[0m" if style else text


WHITE_ON_BLUE = "38;2;255;255;255;48;2;0;0;255"
BOLD_WHITE_ON_BLUE = "1;" + WHITE_ON_BLUE


def test_the_same_frame_again_sends_nothing():
    frame = "\x1b[1;1H" + seg("hello", WHITE_ON_BLUE) + seg(" world", BOLD_WHITE_ON_BLUE) + "\n\x1b[2;1H" + seg("x")
    raw, diffed, outs, _ = draw([frame, frame])
    assert raw == diffed
    assert outs[1] == ""


def test_only_the_changed_cells_are_sent_with_one_style_switch():
    before = "\x1b[3;1H" + seg("loss 0.512  ", WHITE_ON_BLUE) + seg("step 41", BOLD_WHITE_ON_BLUE)
    after = "\x1b[3;1H" + seg("loss 0.498  ", WHITE_ON_BLUE) + seg("step 42", BOLD_WHITE_ON_BLUE)
    raw, diffed, outs, _ = draw([before, after])
    assert raw == diffed
    # "512" -> "498" (from the first to the last differing cell), then the "2" of the step
    assert outs[1] == f"\x1b[3;8H\x1b[{WHITE_ON_BLUE}m498\x1b[3;19H\x1b[1m2\x1b[0m"


def test_runs_that_follow_on_need_no_cursor_move_and_equal_styles_merge():
    frame = "\x1b[1;1H" + seg("ab", WHITE_ON_BLUE) + seg("cd", WHITE_ON_BLUE) + seg("ef", BOLD_WHITE_ON_BLUE)
    raw, diffed, outs, _ = draw([frame])
    assert raw == diffed
    assert outs[0] == f"\x1b[1;1H\x1b[{WHITE_ON_BLUE}mabcd\x1b[1mef\x1b[0m"


@pytest.mark.parametrize("old,new", [
    ("1;2;38;2;1;2;3", "2;38;2;1;2;3"),  # bold off, dim kept (22 switches both off)
    ("4;21", "21"), ("3;9;7", ""), ("", "1;3;4;7;9"), ("38;5;200;48;2;1;1;1", "48;2;1;1;1"),
    ("31;42", "91;102"), ("38;2;1;1;1", "39"), ("4;58;2;9;9;9", "4"), ("53", "51"),
])
def test_each_style_switch_lands_on_the_new_style(old, new):
    t = Terminal()
    t.sgr(old)
    t.sgr(transition(old, new).removeprefix("\x1b[").removesuffix("m"))
    expected = Terminal()
    expected.sgr(new)
    assert t.style == expected.style
    assert len(transition(old, new)) <= len(f"\x1b[0;{new}m")


def test_an_unmodelled_sgr_parameter_resets_and_sets_in_full():
    assert parse_sgr("38;2;1;2") is None and parse_sgr("73") is None
    assert transition("1", "73") == "\x1b[0;73m"


@pytest.mark.parametrize("odd", ["\x1b[2J", "\x1b]8;;https://x\x1b\\", "\t", "\x1b[?1049h"])
def test_what_it_does_not_model_goes_through_and_is_forgotten(odd):
    frame = "\x1b[1;1H" + seg("hello", WHITE_ON_BLUE)
    screen = ScreenDiff(20, 5)
    screen.feed(frame)
    odd_frame = "\x1b[2;1H" + seg("x") + odd
    assert screen.feed(odd_frame).startswith(odd_frame)
    assert screen.passed_through == 1
    assert screen.feed(frame) != ""  # every cell unknown again: the same frame is sent again


def test_wide_characters_and_writes_beyond_the_screen_go_through():
    screen = ScreenDiff(10, 3)
    for frame in ("\x1b[1;1H" + seg("界"), "\x1b[1;8H" + seg("toolong"), "\x1b[5;1H" + seg("x"), seg("no cursor")):
        assert screen.feed(frame).startswith(frame)
    assert screen.passed_through == 4
    narrow = "\x1b[1;1H" + seg("─│▁█—Δ≠…")  # box, block and punctuation characters: one cell each
    assert screen.feed(narrow) != "" and screen.passed_through == 4


def test_cells_drawn_as_keep_are_left_as_the_terminal_shows_them():
    first = "\x1b[1;1H" + seg("hello world", WHITE_ON_BLUE)
    second = "\x1b[1;1H" + seg("HE" + KEEP * 7 + "LD", WHITE_ON_BLUE) + "\x1b[2;1H" + seg(KEEP * 5)
    raw, diffed, outs, written = draw([first, second])
    assert written[1] == 4 and "".join(diffed[0, x][0] for x in range(11)) == "HEllo worLD"
    assert (1, 0) not in diffed  # a row it keeps whole: nothing written there
    screen = ScreenDiff(20, 2)  # what it does not model goes through, the kept cells stepped over
    out = screen.feed("\x1b[1;1H" + seg("ab" + KEEP * 3 + "c") + "\x1b[5n")
    assert KEEP not in out and "ab\x1b[3Cc" in out and screen.passed_through == 1


def test_a_resize_forgets_the_screen():
    screen = ScreenDiff(20, 5)
    frame = "\x1b[1;1H" + seg("hello")
    screen.feed(frame)
    assert screen.feed(frame) == ""
    screen.resize(30, 6)
    assert screen.feed(frame) == "\x1b[1;1Hhello"


@pytest.mark.parametrize("kept", ["\x1b[?2026h", "\x1b[?1003l", "\x1b]22;pointer\x07", "\x1b]52;c;aGk=\x07", "\x07"])
def test_what_changes_no_cell_is_kept_in_place_and_the_screen_remembered(kept):
    """Mode switches, the pointer shape Textual sets as the mouse moves, the clipboard, the bell."""
    screen = ScreenDiff(10, 2)
    frame = "\x1b[1;1H" + seg("hi", WHITE_ON_BLUE)
    screen.feed(frame)
    assert screen.feed(kept) == kept
    assert screen.feed(frame) == "" and screen.passed_through == 0


async def _steady_frame(pilot, app, timeout: float = 10.0) -> str:
    """The screen once two frames 0.1 s apart agree: a frame taken while the views still settle
    (the modules column widening as its labels fold in) carries changes of its own into the next,
    and the cells counted were the screen beneath as well as the dialog's (a fresh-clone run)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    frame = _frame(app)
    while True:
        await pilot.pause(0.1)
        again = _frame(app)
        if again == frame:
            return frame
        assert loop.time() < end, "the screen never settled"
        frame = again


def _frame(app) -> str:
    return app.screen._compositor.render_update(full=True).render_segments(app.console)


@pytest.mark.asyncio
async def test_the_apps_real_frames_draw_the_same_screen_and_shrink(events, monkeypatch):
    monkeypatch.setattr(ModscopeApp, "is_web", property(lambda self: True))  # dialogs as in a browser tab
    app = ModscopeApp(EventListSource(events))
    frames = []
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot, app, loaded)
        frames.append(await _steady_frame(pilot, app))
        await pilot.press("down", "down")
        frames.append(await _steady_frame(pilot, app))
        await pilot.press("question_mark")
        await settle(pilot, app, lambda a: "pause / resume training" in _frame(a))
        frames.append(await _steady_frame(pilot, app))
        await pilot.press("escape")
        await settle(pilot, app, lambda a: a.screen is a.screen_stack[0])
        frames.append(await _steady_frame(pilot, app))
    raw, diffed, outs, written = draw(frames, 120, 36)
    assert raw == diffed
    assert written[0] == 120 * 36 and len(outs[0]) < len(frames[0]) * 0.75  # every cell, fewer style switches
    # What a frame changes, row by row from its first to its last changed cell: the most the driver
    # may write. (After the snapshot tests in one run the dialog's backdrop differed and the whole
    # screen changed with it; a fixed bound for the help alone then failed while the driver wrote
    # no more than changed.)
    spans = [changed_span(frames[i - 1], frames[i], 120, 36) for i in range(1, len(frames))]
    assert all(w <= span for w, span in zip(written[1:], spans, strict=True)), (written, spans)
    assert len(outs[2]) < len(frames[2]) * 0.75 and len(outs[3]) < len(frames[3]) * 0.75


class _App:
    """What the driver needs of an app, recording what is posted."""

    def __init__(self) -> None:
        self.posted = []

    def post_message(self, message) -> None:
        self.posted.append(message)


class _Reader:
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    def __iter__(self):
        yield from self.chunks

    def close(self) -> None:
        pass


def packet(payload: bytes) -> bytes:
    return b"D" + len(payload).to_bytes(4, "big") + payload


@pytest.mark.asyncio  # (a driver is made in a running event loop)
async def test_a_lone_escape_from_the_page_is_the_escape_key_at_once(monkeypatch):
    from textual.drivers import web_driver

    app = _App()
    # what the page sends, and no tick after it: Textual's parser would wait for more of a sequence
    chunks = [packet(b"\x1b"), packet(b"\x1b[A"), packet(b"\x1b")]
    monkeypatch.setattr(web_driver, "InputReader", lambda: _Reader(chunks))
    driver = DiffWebDriver(app, size=(80, 24))  # type: ignore[arg-type]
    driver.process_message = app.post_message  # type: ignore[method-assign]
    driver.run_input_thread()
    keys = [getattr(m, "key", None) for m in app.posted]
    assert keys == ["escape", "up", "escape"], keys  # (an ESC that begins a sequence is not the key)
    assert ESCAPE_KEY == "\x1b[27u"


def test_the_web_driver_is_chosen_in_a_browser_tab(monkeypatch):
    from textual.drivers.web_driver import WebDriver

    class Stub:
        driver_class = WebDriver

    app = Stub()
    typeahead_driver(app)
    assert app.driver_class is DiffWebDriver


@pytest.mark.asyncio
@pytest.mark.parametrize("web", [False, True])
async def test_dialogs_dim_the_screen_except_in_a_browser_tab(events, monkeypatch, web):
    from modscope.views.tui.screens import HelpScreen

    monkeypatch.setattr(ModscopeApp, "is_web", property(lambda self: web))
    app = ModscopeApp(EventListSource(events))
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot, app, loaded)
        await pilot.press("question_mark")
        await settle(pilot, app, lambda a: isinstance(a.screen, HelpScreen) and a.screen.backdrop is not None)
        assert (app.screen.backdrop.beneath.color.a == 0) is web


def cells(strips) -> list[list[tuple[str, object]]]:
    """Each row's characters with their styles, however the strips split their runs."""
    return [[(c, style) for text, style, _ in strip for c in text] for strip in strips]


@pytest.mark.asyncio
@pytest.mark.parametrize("web", [False, True])
async def test_a_dialog_backdrop_draws_what_textual_draws_behind_a_modal_screen(events, monkeypatch, web):
    """The backdrop (the screen beneath's strips, tinted) is cell for cell Textual's own
    ``BackgroundScreen`` drawn through its rich path, dimmed in a terminal and not in a tab (there
    once the tab was resized with the dialog open: before that the page keeps what it shows)."""
    from textual.renderables.background_screen import BackgroundScreen
    from textual.visual import RichVisual, Visual

    from modscope.views.tui.screens import HelpScreen

    monkeypatch.setattr(ModscopeApp, "is_web", property(lambda self: web))
    app = ModscopeApp(EventListSource(events))
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot, app, loaded)
        await pilot.press("down", "question_mark")
        await settle(pilot, app, lambda a: isinstance(a.screen, HelpScreen) and a.screen.backdrop is not None)
        await pilot.pause(0.2)
        if web:
            assert app.screen.backdrop.keep is not None and app.screen.backdrop.renders == 0
            await pilot.resize_terminal(124, 38)
            await settle(pilot, app, lambda a: a.screen.size == (124, 38) and a.screen.backdrop.keep is None)
            await pilot.pause(0.3)
        dialog, beneath = app.screen, app.screen_stack[0]
        width, height = dialog.size
        ours = Visual.to_strips(dialog, dialog.backdrop, width, height, dialog.visual_style)
        textual = Visual.to_strips(dialog, RichVisual(dialog, BackgroundScreen(beneath, dialog.backdrop.beneath.color)),
                                   width, height, dialog.visual_style)
        assert len(ours) == height and cells(ours) == cells(textual)
        plain = [strip.text for strip in beneath._compositor.render_strips()]
        assert [strip.text for strip in ours] == plain and any("Modules" in line for line in plain)


@pytest.mark.asyncio
async def test_a_frame_is_one_message_and_a_frame_that_changes_nothing_is_none(monkeypatch):
    from textual._ansi_sequences import SYNC_END, SYNC_START
    from textual.drivers import web_driver

    monkeypatch.setattr(web_driver, "InputReader", lambda: _Reader([]))
    driver = DiffWebDriver(_App(), size=(20, 5))  # type: ignore[arg-type]
    sent: list[bytes] = []
    driver._write = sent.append  # type: ignore[method-assign]
    frame = "\x1b[1;1H" + seg("hello", WHITE_ON_BLUE)
    for _ in range(2):
        for piece in (SYNC_START, frame, SYNC_END):
            driver.write(piece)
    assert sent == [packet(f"{SYNC_START}\x1b[1;1H\x1b[{WHITE_ON_BLUE}mhello\x1b[0m{SYNC_END}".encode())]
    driver.on_meta("resize", {"width": 30, "height": 6})  # the page's terminal changed size: all sent again
    for piece in (SYNC_START, frame, SYNC_END):
        driver.write(piece)
    assert len(sent) == 2 and sent[1] == sent[0]
    driver.write("\x1b[?25l")  # outside a frame: at once
    assert sent[2] == packet(b"\x1b[?25l")


@pytest.mark.asyncio
async def test_in_a_browser_tab_a_dialog_frame_is_its_own_cells_and_nothing_is_composited(events, monkeypatch):
    """In a tab the page shows the screen beneath as a dialog opens: the dialog's backdrop is
    cells the page keeps (``KEEP``, never sent), no copy of the screen beneath is composited, and
    the frames sent as it opens and closes write the dialog's cells only; the page shows the
    screen beneath around the dialog, and the screen beneath again after it."""
    from modscope.views.tui.screens import HelpScreen

    monkeypatch.setattr(ModscopeApp, "is_web", property(lambda self: True))
    app = ModscopeApp(EventListSource(events))
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot, app, loaded)
        before = await _steady_frame(pilot, app)
        await pilot.press("question_mark")
        await settle(pilot, app, lambda a: isinstance(a.screen, HelpScreen) and a.screen.backdrop is not None)
        opened = await _steady_frame(pilot, app)
        dialog = app.screen
        box = dialog.query_one("VerticalScroll").region
        assert dialog.backdrop.renders == 0 and KEEP in opened
        await pilot.press("escape")
        await settle(pilot, app, lambda a: a.screen is a.screen_stack[0])
        after = await _steady_frame(pilot, app)
    raw, diffed, outs, written = draw([before, opened, after], 120, 36)  # (draw: no KEEP sent)
    assert 0 < written[1] <= box.area and 0 < written[2] <= box.area, (written, box)
    _, open_shown, _, _ = draw([before, opened], 120, 36)
    beneath = Terminal()
    beneath.feed(before)
    outside = {cell for cell in beneath.cells if not box.contains(cell[1], cell[0])}
    assert outside and all(open_shown[cell] == beneath.cells[cell] for cell in outside)
    assert any(open_shown[cell] != beneath.cells[cell] for cell in beneath.cells if cell not in outside)
    beneath.feed(after)
    assert diffed == beneath.cells
