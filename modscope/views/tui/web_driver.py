"""The driver of a TUI in a browser tab (``modscope web``): Textual's web driver, except that each
frame sends only the cells that changed, with a style sequence only where the style changes.

Textual writes a frame as the whole of each region it repaints, every run of text with its full
style and a reset (``ESC[1;38;2;r;g;b;48;2;r;g;bm text ESC[0m``), and a region is repainted
whole when anything in it changed (a table's row for one new number; every cell of the screen
when a dialog opens or closes). In a terminal that is cheap; in a browser tab every byte goes
over the websocket and through xterm.js's parser, and every row written is drawn again: most of
a key's time to reach the screen (a dialog's frame was 38 KB, a training tick's 17 KB, two
thirds of it style sequences).

``ScreenDiff`` keeps what the page's terminal shows, cell by cell (character and style), and
turns each frame Textual writes into one that writes, of each run of text, the part from its
first to its last cell that differs, moving the cursor only where that part does not follow on
and switching style by the shortest sequence from the one in force.
What the terminal ends up showing is exactly what Textual's frame would have drawn (a cell drawn
as ``KEEP`` left as the terminal shows it). Whatever it
does not model (a wide or zero-width character, an escape sequence that may change cells, a
write outside the screen) goes through as written, and the whole screen is taken as unknown
after it (every cell written next is sent); so is a resize (the page's terminal may have
re-flowed).
"""

from __future__ import annotations

import re
from codecs import getincrementaldecoder
from functools import lru_cache
from traceback import format_exc
from typing import Any

from rich.cells import get_character_cell_size
from textual import log
from textual._ansi_sequences import SYNC_END, SYNC_START
from textual._xterm_parser import XTermParser
from textual.drivers._byte_stream import ByteStream
from textual.drivers.web_driver import WebDriver, _ExitInput

# A frame's pieces: a cursor move (CUP), a style (SGR), what changes no cell (a private mode
# switch ESC[?...h/l or the sync-mode query ESC[?2026$p, an OSC such as the pointer shape Textual
# sets as the mouse moves, but not a hyperlink's OSC 8; the bell), a line feed, text, and
# anything else (another escape sequence or control character: it may change cells).
_TOKENS = re.compile(r"\x1b\[(?P<spen>[0-9;]*)m(?P<stext>[^\x00-\x1f\x1b\x7f]+)\x1b\[0m(?P<seg>)"  # a styled run, reset
                     r"|\x1b\[(?P<row>\d*);?(?P<col>\d*)H(?P<cup>)"
                     r"|\x1b\[(?P<sgr>[0-9;]*)m"
                     r"|(?P<mode>\x1b\[\?[0-9;]*(?:h|l|\$p)|\x1b\](?!8;)[^\x07\x1b]*(?:\x07|\x1b\\)|\x07)"
                     r"|(?P<other>\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b\[[0-?]*[ -/]*[@-~]|\x1b.?"
                     r"|[\x00-\x09\x0b-\x1f\x7f])"
                     r"|(?P<newline>\n)"
                     r"|(?P<text>[^\x00-\x1f\x1b\x7f]+)")
ESCAPE_KEY = "\x1b[27u"  # the escape key as the kitty keyboard protocol sends it: the parser waits for nothing
# How often the live views are redrawn in a browser tab (``ModscopeApp.on_mount``; 0.1 s in a
# terminal): each live frame, however few its cells, cost headless Chromium ~70 ms of CPU to draw
# on the loaded 2-core machine (xterm.js draws every row between the first and the last written,
# and a tick writes rows from the top to the bottom of the screen), on the machine that also
# trains and runs the viewer. Keys draw what they change at once, whatever this is.
WEB_REFRESH_S = 0.25
# How often, at most, the live values are redrawn in a browser tab (``ModscopeApp._hold_live``;
# ``LIVE_REDRAW_S`` in a terminal). A key pressed while the page draws a live frame waits for it:
# at two or three live frames a second, each ~80-100 ms of the page's CPU, a third of the keys
# did, and they made the p95 of key -> screen (``bench/bench_web_keys.py``). Keys and what they
# change are drawn at once, whatever this is.
WEB_LIVE_REDRAW_S = 1.0
# While the user types in a browser tab (a key less than ``WEB_TYPING_S`` ago) live values are not
# redrawn at all (``ModscopeApp._hold_live``), for up to ``WEB_TYPING_MAX_HOLD_S`` since they were
# last drawn: at one live frame a second, a key pressed 0.3-0.6 s after the one before still
# found the page drawing one now and then (~100 ms of the page's CPU, the p95 of key -> screen).
# They catch up at the first tick after the typing stops, or after the longest hold.
WEB_TYPING_S = 1.5
WEB_TYPING_MAX_HOLD_S = 5.0
# SGR attributes that switch off a flag, and the flags each of them switches off
_OFF = {1: 22, 2: 22, 3: 23, 4: 24, 21: 24, 5: 25, 6: 25, 7: 27, 8: 28, 9: 29, 51: 54, 52: 54, 53: 55}
_CLEARS = {22: (1, 2), 24: (4, 21), 25: (5, 6), 54: (51, 52)}
Pen = tuple[str | None, str | None, str | None, frozenset[int]]  # fg, bg, underline colour, flags


def parse_sgr(params: str) -> Pen | None:
    """The style an SGR's parameters set from the default one (fg, bg, underline colour as their
    parameters, and the flags); None for a parameter this does not model."""
    codes = params.split(";") if params else []
    fg = bg = ul = None
    flags: set[int] = set()
    i = 0
    while i < len(codes):
        try:
            c = int(codes[i] or 0)
        except ValueError:
            return None
        if c in (38, 48, 58):
            if i + 1 >= len(codes):
                return None
            n = {"2": 4, "5": 2}.get(codes[i + 1])
            if n is None or i + n >= len(codes):
                return None
            spec = ";".join(codes[i:i + n + 1])
            i += n + 1
            if c == 38:
                fg = spec
            elif c == 48:
                bg = spec
            else:
                ul = spec
            continue
        i += 1
        if c == 0:
            fg = bg = ul = None
            flags.clear()
        elif 30 <= c <= 37 or 90 <= c <= 97:
            fg = str(c)
        elif 40 <= c <= 47 or 100 <= c <= 107:
            bg = str(c)
        elif c == 39:
            fg = None
        elif c == 49:
            bg = None
        elif c == 59:
            ul = None
        elif c in _OFF:
            flags.add(c)
        elif c in _CLEARS:
            flags.difference_update(_CLEARS[c])
        else:
            return None
    return fg, bg, ul, frozenset(flags)


def transition(old: str, new: str) -> str:
    """The shortest SGR sequence that switches the style set by SGR parameters ``old`` (from the
    default style) to that set by ``new``."""
    full = "\x1b[0m" if not new else f"\x1b[0;{new}m"
    a, b = parse_sgr(old), parse_sgr(new)
    if a is None or b is None:
        return full
    parts: list[str] = []
    removed = a[3] - b[3]
    offs = sorted({_OFF[f] for f in removed})
    parts += map(str, offs)
    cleared = {f for off in offs for f in _CLEARS.get(off, (off,))}
    parts += [str(f) for f in sorted(b[3] - (a[3] - cleared))]
    for was, now, default in ((a[0], b[0], "39"), (a[1], b[1], "49"), (a[2], b[2], "59")):
        if was != now:
            parts.append(now if now is not None else default)
    if not parts:
        return ""
    diff = f"\x1b[{';'.join(parts)}m"
    return diff if len(diff) < len(full) else full


def _after(pen: str, sgr: str) -> str:
    """The style in force (SGR parameters from the default style) after ``ESC[{sgr}m`` over ``pen``."""
    if sgr in ("", "0"):
        return ""
    if sgr.startswith("0;"):
        return sgr[2:]
    return f"{pen};{sgr}" if pen else sgr


@lru_cache(maxsize=4096)  # (a screen's runs of text recur from frame to frame)
def _wide(text: str) -> bool:
    """Whether some character of ``text`` (not ASCII) takes other than one cell."""
    return any(get_character_cell_size(c) != 1 for c in set(text))


UNKNOWN = "\x00"  # a cell whose character is not known (never in a frame's text)
# A cell the page's terminal is to keep as it shows it (a private-use character no font is asked
# to draw: never written to the page). A dialog in a browser tab draws its backdrop with it
# (``screens.Dialog``): the page shows the screen beneath already, so the dialog's frame carries
# its own cells only, and the viewer composites no copy of the screen beneath.
KEEP = "\ue000"
_PIECES = re.compile(f"[^{KEEP}]+")  # a run's parts between the cells it keeps
_KEPT = re.compile(f"{KEEP}+")


class ScreenDiff:
    """What a terminal of ``width`` x ``height`` cells shows, and the frames that change it
    (see the module docstring): per row, its characters as a string (``UNKNOWN``: not known)
    and each cell's style as SGR parameters from the default style (``None``: not known)."""

    def __init__(self, width: int, height: int) -> None:
        self.resize(width, height)
        self._transitions: dict[tuple[str, str], str] = {}
        self.passed_through = 0  # frames sent as written (the tests count them)

    def resize(self, width: int, height: int) -> None:
        """A terminal of another size, or one whose cells are no longer known."""
        self.width, self.height = width, height
        self.chars: list[str] = [UNKNOWN * width for _ in range(height)]
        self.pens: list[list[str | None]] = [[None] * width for _ in range(height)]

    def feed(self, data: str) -> str:
        """``data`` as Textual wrote it, made into the frame that changes what the terminal shows
        the same way: each run of text is compared with the cells it covers, and only its part
        from the first to the last cell that differs is written."""
        chars, pens, transitions = self.chars, self.pens, self._transitions
        out: list[str] = []
        x = y = -1  # the cursor as ``data`` moves it (-1: not known)
        pen = ""  # the style ``data`` has set, and the one the output has
        current = ""
        at = (-1, -1)  # where the output leaves the cursor
        for m in _TOKENS.finditer(data):
            kind = m.lastgroup
            if kind == "seg" or kind == "text":
                if kind == "seg":  # (most of a frame: a style, a run of text, a reset)
                    sgr, text = m.group("spen", "stext")
                    after = ""
                    pen = _after(pen, sgr)
                else:
                    text = m.group("text")
                    after = pen
                n = len(text)
                if y < 0 or x < 0 or x + n > self.width or y >= self.height or not text.isascii() and _wide(text):
                    return self._passthrough(data)
                # (the cells a run keeps are neither written nor changed: its other parts are
                # compared, each on its own)
                pieces = ((0, text),) if text.isascii() or KEEP not in text else \
                    [(p.start(), p.group()) for p in _PIECES.finditer(text)]
                for offset, piece in pieces:
                    px, k = x + offset, len(piece)
                    row, row_pens = chars[y], pens[y]
                    same_pen = row_pens[px:px + k] == [pen] * k
                    if same_pen and row[px:px + k] == piece:
                        continue
                    start, end = 0, k
                    if same_pen:
                        while piece[start] == row[px + start]:
                            start += 1
                        while piece[end - 1] == row[px + end - 1]:
                            end -= 1
                    else:
                        while start < k and piece[start] == row[px + start] and row_pens[px + start] == pen:
                            start += 1
                        while end > start and piece[end - 1] == row[px + end - 1] and row_pens[px + end - 1] == pen:
                            end -= 1
                    if at != (y, px + start):
                        out.append(f"\x1b[{y + 1};{px + start + 1}H")
                    if pen != current:
                        seq = transitions.get((current, pen))
                        if seq is None:
                            seq = transitions[current, pen] = transition(current, pen)
                        out.append(seq)
                        current = pen
                    out.append(piece[start:end])
                    at = (y, px + end)
                    chars[y] = row[:px] + piece + row[px + k:]
                    row_pens[px:px + k] = [pen] * k
                x += n
                pen = after
            elif kind == "sgr":
                pen = _after(pen, m.group("sgr"))
            elif kind == "cup":
                y, x = int(m.group("row") or 1) - 1, int(m.group("col") or 1) - 1
            elif kind == "newline":
                y += 1
                x = -1  # (where a line feed leaves the column depends on the terminal's modes)
            elif kind == "mode":
                mode = m.group("mode")
                if mode.startswith("\x1b[?") and any(code in mode for code in ("1049", "?47", "1047")):
                    # another screen: its cells are not known
                    return self._passthrough(data)
                out.append(mode)
            else:  # another escape sequence or control character: it may change cells
                return self._passthrough(data)
        if current:
            out.append("\x1b[0m")
        if x >= 0 and y >= 0 and at != (y, x) and out:  # where Textual leaves the cursor
            out.append(f"\x1b[{y + 1};{x + 1}H")
        return "".join(out)

    def _passthrough(self, data: str) -> str:
        """``data`` as it is (the cells it keeps stepped over: a cursor move right); every cell
        unknown after it."""
        self.passed_through += 1
        self.resize(self.width, self.height)
        if KEEP in data:
            data = _KEPT.sub(lambda m: f"\x1b[{len(m.group())}C", data)
        return data + "\x1b[0m"


class DiffWebDriver(WebDriver):
    """Textual's ``WebDriver`` writing each frame through a ``ScreenDiff``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        width, height = self._size or (80, 24)
        self.screen = ScreenDiff(width, height)
        self._resized: tuple[int, int] | None = None  # set by the input thread, taken by ``write``
        self._frame: list[str] | None = None  # a frame's pieces, between its sync-mode start and end

    def write(self, data: str) -> None:
        """Textual writes each frame as three pieces (the sync-mode start, the frame, the end):
        sent as one message, or none when no cell changed."""
        resized = self._resized
        if resized is not None:
            self._resized = None
            self.screen.resize(*resized)
        if data == SYNC_START:
            self._frame = []
            return
        if data == SYNC_END and self._frame is not None:
            body, self._frame = "".join(self._frame), None
            if body:
                super().write(SYNC_START + body + SYNC_END)
            return
        out = self.screen.feed(data)
        if self._frame is not None:
            self._frame.append(out)
        elif out:
            super().write(out)

    def run_input_thread(self) -> None:
        """Textual's (read the page's packets, parse the keys, post them), except that a packet
        that is a lone ESC is the escape key at once: Textual's parser waits ``ESCDELAY`` (100
        ms) for more of a sequence and is asked again only when its reader's 0.1 s select times
        out, so a dialog's escape came 100-200 ms late. The page's terminal sends each key's
        whole sequence in one message (an alt+key is ESC and the key together), so a lone ESC
        is the key."""
        parser = XTermParser(debug=self._debug)
        decode = getincrementaldecoder("utf-8")().decode
        byte_stream = ByteStream()
        try:
            for data in self._input_reader:
                if data:
                    for packet_type, payload in byte_stream.feed(data):
                        if packet_type == "D":
                            for event in parser.feed(ESCAPE_KEY if payload == b"\x1b" else decode(payload)):
                                self.process_message(event)
                        else:
                            self._on_meta(packet_type, payload)
                for event in parser.tick():
                    self.process_message(event)
        except _ExitInput:
            pass
        except Exception:  # noqa: BLE001  (as Textual's: logged, and the input thread ends)
            log(format_exc())
        finally:
            self._input_reader.close()

    def on_meta(self, packet_type: str, payload: dict[str, object]) -> None:
        if packet_type == "resize":
            self._resized = (int(payload["width"]), int(payload["height"]))  # type: ignore[call-overload]
        super().on_meta(packet_type, payload)
