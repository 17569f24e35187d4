"""Modal screens: help, find a module, breakpoints, jump to a step, errors and the program's log."""

from __future__ import annotations

import heapq
from itertools import islice
from typing import Any

from rich.console import Group, RenderableType
from rich.segment import Segment
from rich.style import Style as RichStyle
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.color import Color
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.css.styles import RulesMap
from textual.geometry import Size
from textual.renderables.background_screen import BackgroundScreen
from textual.screen import ModalScreen, Screen, ScreenResultType
from textual.strip import Strip
from textual.style import Style as VisualStyle
from textual.visual import RenderOptions, Visual
from textual.widgets import Button, Checkbox, Input, Label, OptionList, Static
from textual.widgets.option_list import Option

from .web_driver import KEEP

VIEWS = [
    ("Modules", "named_modules: class, parameters, eval flag, fwd/bwd time (bwd —: no backward of its own, as no "
                "input needs a gradient), grad-norm sparkline, NaN/Inf and dead (all-zero output) badges. Enter "
                "expands; selection links every view."),
    ("Parameters", "the selected module's parameters and buffers, live."),
    ("Hook firing order", "one step's events, indented by nesting, with your own hooks and errors."),
    ("Autograd graph", "laid out by graphviz, clusters per module: arrows/hjk pan, + - zoom, < > collapse or "
                       "expand a depth, . , next/previous node, enter selects its module. The identity nodes "
                       "of module backward hooks (BackwardHook) are hidden: i shows them."),
    ("Training", "status, step, metrics, speed, events and what was dropped."),
]
KEYS = [
    ("space", "pause / resume training (several ranks: every rank, held at one step boundary)"),
    ("n", "run one step, then pause"),
    ("r R", "several ranks: show the next / previous rank in every view (the bar above says each one's last event)"),
    ("b", "breakpoints (NaN/Inf, grad norm, a module's hook)"),
    ("/", "find a module"),
    ("e", "export the module tree or autograd graph"),
    ("[ ]", "previous / next step"),
    ("g", "jump to a step"),
    ("f", "follow the latest step / stay"),
    ("m", "filter the timeline to the selected module"),
    ("i", "show / hide the BackwardHook identity nodes in the autograd graph"),
    ("u", "unfold / fold a big autograd graph (repeated blocks drawn once with a count)"),
    ("1 2 3 4", "show/hide forward, backward, hooks, errors in the timeline"),
    ("x", "errors and tracebacks"),
    ("l", "the program's output"),
    ("tab", "next view (shift+tab back); in a small terminal the views take turns: tab, or click one in "
            "the bar above them"),
    ("z", "maximise the focused view / restore it (escape restores too)"),
    ("ctrl+p", "command palette (every action)"),
    # (d shares a line: the help's height, and so its snapshot, stays as it was)
    ("d", "compare two steps, or each step with a second trace (Δ in the tree and table, ≠ where the orders "
          "part)"),
    ("?", "this help"),
    ("q", "quit (stops the program cleanly; the trace file is complete)"),
]


class Backdrop(Visual):
    """The screen beneath a dialog, composited and dimmed once per size: the dialog's background.

    A Textual ``Visual`` made of the screen beneath's own strips (its compositor's), each run's
    style tinted as Textual's ``BackgroundScreen`` tints it (worked out once per distinct style,
    not once per cell) under the dialog's base style, as Textual's rich path applies it. Drawn
    through that path (``BackgroundScreen``, a rich renderable) the strips were flattened into
    segments and split into lines again on every opening: most of the time a dialog took to
    open, in a terminal and in a browser tab alike.

    In a browser tab (``keep``: the size of the screen beneath as the page shows it) nothing is
    composited: at that size the backdrop is cells the page keeps as it shows them
    (``web_driver.KEEP``), the screen beneath, undimmed; at another size (the tab was resized
    while the dialog is open: the page's terminal shows no screen at the new size) it is the
    copy, undimmed, as in a terminal."""

    def __init__(self, beneath: BackgroundScreen, keep: Size | None = None) -> None:
        self.beneath = beneath
        self.keep = keep
        self.renders = 0  # times the screen beneath was composited (the tests count them)
        self._strips: dict[tuple[int, int | None], tuple[RichStyle, list[Strip]]] = {}  # (base, strips) per size
        self._tints: dict[tuple[RichStyle, RichStyle | None], RichStyle] = {}

    def render_strips(self, width: int, height: int | None, style: VisualStyle,
                      options: RenderOptions) -> list[Strip]:
        key, base = (width, height), style.rich_style
        keep = self.keep
        if keep is not None:
            if width == keep.width and (height or keep.height) == keep.height:
                return [Strip([Segment(KEEP * width, base)], width)] * keep.height
            self.keep = None  # (resized: what the page shows is no longer the screen beneath, at any size)
        cached = self._strips.get(key)
        if cached is None or cached[0] != base:
            cached = self._strips[key] = (base, self._composite(width, height, base))
        return cached[1]

    def get_optimal_width(self, rules: RulesMap, container_width: int) -> int:
        return container_width

    def get_height(self, rules: RulesMap, width: int) -> int:
        return self.beneath.screen.size.height

    def _composite(self, width: int, height: int | None, base: RichStyle) -> list[Strip]:
        """The screen beneath as ``width`` x ``height`` strips (cropped, as rich cropped them),
        tinted."""
        self.renders += 1
        strips = self.beneath.screen._compositor.render_strips()[:height]
        return [tint(strip.crop(0, width) if strip.cell_length > width else strip, self.beneath.color, base,
                     self._tints) for strip in strips]

    def recapture(self) -> bool:
        """Composite the screen beneath again at each size drawn so far; True if it looks
        different now (then the dialog is to be repainted)."""
        changed = False
        for (width, height), (base, strips) in self._strips.items():
            new = self._composite(width, height, base)
            if new != strips:
                self._strips[width, height] = (base, new)
                changed = True
        return changed


def tint(strip: Strip, color: Color, base: RichStyle,
         tints: dict[tuple[RichStyle, RichStyle | None], RichStyle]) -> Strip:
    """``strip`` as Textual draws it behind a translucent screen of ``color`` whose own style is
    ``base``: each segment's style tinted by ``BackgroundScreen.process_segments`` (links and meta
    cleared), under ``base``. ``tints`` keeps each distinct style's result."""
    out = []
    for segment in strip:
        text, style, control = segment
        if control:
            out.append(segment)
            continue
        new = tints.get((base, style))
        if new is None:
            tinted = next(iter(BackgroundScreen.process_segments([Segment(" ", style)], color))).style
            new = tints[base, style] = base + tinted if base else tinted
        out.append(Segment(text, new))
    return Strip(out, strip.cell_length)


UNDIMMED = Color(0, 0, 0, 0)  # the backdrop's tint in a browser tab (``Dialog.render``)
RECAPTURE_DELAY_S = 0.05  # layouts beneath closer together than this share one copy


class Dialog(ModalScreen[ScreenResultType]):
    """A modal screen over a still, dimmed copy of the screen beneath it.

    Textual draws a modal screen's translucent background by compositing the whole screen
    beneath and tinting every cell, on each repaint of the dialog: three as the find dialog
    opened (its mount, its list's new height, the layout of the screen beneath that its
    Resize event asks for), and one more per live update beneath (ten a second while
    training). That was most of a dialog's time to open. Here the copy is made again only
    when the screen beneath is laid out anew (its footer shows the dialog's keys a moment
    after it opens), and the dialog repainted only if the copy changed: the live values behind
    the dim stay as they were; they are current again once the dialog is closed. In a browser
    tab (``modscope web``) the screen beneath is not dimmed, nor copied: the page keeps showing
    it (see ``render`` and ``Backdrop``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.backdrop: Backdrop | None = None
        self._watching: Screen | None = None
        self._recapture_due = False  # a copy of the screen beneath is to be made (``_recapture``)

    def render(self) -> RenderableType | Visual:
        renderable = super().render()
        if not isinstance(renderable, BackgroundScreen):
            return renderable  # an opaque background (ansi themes): nothing is composited
        if self.app.is_web:
            # In a browser tab the screen beneath is not dimmed: a dimmed copy changes every cell
            # of the screen, and the page's terminal would be sent and would draw all of them as
            # the dialog opens and again as it closes; undimmed, only the dialog's cells change
            # (the tab's driver sends only those, see web_driver). The dialog's border marks it.
            # Nor is the screen beneath composited: the page shows it (``Backdrop.keep``).
            renderable = BackgroundScreen(renderable.screen, UNDIMMED)
        backdrop = self.backdrop
        if backdrop is None or backdrop.beneath.screen is not renderable.screen or \
                backdrop.beneath.color != renderable.color:
            # (in a tab the page shows the screen beneath, at its size, as the dialog opens)
            backdrop = self.backdrop = Backdrop(renderable, renderable.screen.size if self.app.is_web else None)
            self._watch(renderable.screen)
        return backdrop

    def on_unmount(self) -> None:
        # The copy is large (every cell of the screen); a closed dialog is freed by the cyclic
        # collector, which runs while the user is idle (see gc_policy): its copy is freed now.
        self.backdrop = None

    def on_screen_suspend(self) -> None:
        # Closed, but kept to be opened again (find): the copy is of a screen that will have
        # changed by then; made anew when the dialog is drawn again.
        self.backdrop = None

    def _watch(self, beneath: Screen) -> None:
        if beneath is not self._watching:
            self._watching = beneath
            beneath.screen_layout_refresh_signal.subscribe(self, self._beneath_laid_out, immediate=True)

    def _beneath_laid_out(self, _screen: Screen) -> None:
        # Opening a dialog lays the screen beneath out two or three times within a few frames
        # (the dialog's Resize, the footer showing its keys): one copy after they settle, not
        # one each (a copy composites and dims the whole screen).
        if self.backdrop is not None and not self._recapture_due:
            self._recapture_due = True
            self.set_timer(RECAPTURE_DELAY_S, self._recapture)

    def _recapture(self) -> None:
        # (a layout that changed nothing visible, as the one the dialog's Resize asks for,
        # costs no repaint of the dialog)
        self._recapture_due = False
        if self.backdrop is not None and self.backdrop.recapture():
            self.refresh()


def help_text() -> Group:
    """The help as two tables whose descriptions wrap under themselves at any width."""
    parts: list[Any] = []
    for title, rows, style in (("modscope — what you see", VIEWS, "bold"), ("keys", KEYS, "bold cyan")):
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style=style, no_wrap=True)
        grid.add_column(ratio=1)
        for term, text in rows:
            grid.add_row(term, text)
        parts += [Text(title, style="bold"), grid, Text("")]
    return Group(*parts[:-1])


class HelpScreen(Dialog[None]):
    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "close")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 104; max-width: 95%; height: auto; max-height: 90%;
        border: thick $accent; background: $surface; padding: 1 2; }
    """

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(help_text())


class FindScreen(Dialog[str | None]):
    """Type part of a module path or class; up and down move through the matches while typing,
    Enter picks the highlighted one. Modules whose name or path matches come before those only
    whose class does (``conv2``: the module ``conv2`` first, not every ``Conv2d``). The app keeps
    one, opened again with ``reopen``."""

    BINDINGS = [
        Binding("escape", "dismiss_none", "cancel"),
        Binding("down", "move(1)", "next match", show=False),
        Binding("up", "move(-1)", "previous match", show=False),
        Binding("pagedown", "move(10)", "next page", show=False),
        Binding("pageup", "move(-10)", "previous page", show=False),
    ]
    DEFAULT_CSS = """
    FindScreen { align: center top; }
    FindScreen > Vertical { width: 80; max-width: 95%; height: auto; max-height: 80%; margin-top: 3;
        border: thick $accent; background: $surface; padding: 0 1; }
    FindScreen OptionList { height: auto; max-height: 20; }
    """

    def __init__(self, modules: list[tuple[str, str]]) -> None:
        super().__init__()
        self.modules = modules  # (path, class)
        self._query = ""  # what the list shows matches for
        self._lowered: tuple[Any, list[tuple[str, str]]] = (None, [])  # (modules, their lower-case (path, class))

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("Find a module (path or class)")
            yield Input(placeholder="e.g. conv2 or Linear", id="query")
            # The first matches are there from the start: filled after mounting, the list would
            # grow from empty and cost the dialog a second layout and paint.
            yield OptionList(*self._options(""), id="matches")

    def on_mount(self) -> None:
        options = self.query_one("#matches", OptionList)
        if options.option_count:
            options.highlighted = 0

    def reopen(self, modules: list[tuple[str, str]]) -> None:
        """Opened again (the app keeps one dialog): an empty query over ``modules``, the first
        match highlighted, the list at its top. The query is emptied when the dialog closes;
        the matches are made again here only if ``modules`` is another list (a new model)."""
        self.query_one("#query", Input).value = ""
        if modules is not self.modules or self._query:
            self.modules = modules
            self._update("")
        options = self.query_one("#matches", OptionList)
        if options.option_count:
            options.highlighted = 0
        options.scroll_home(animate=False)

    def on_screen_suspend(self) -> None:
        # Closed (Dialog's handler runs too: Textual calls each class's own): the next opening
        # starts from an empty query, emptied now, while nothing waits for it.
        self.query_one("#query", Input).value = ""
        if self._query:
            self._update("")

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.value != self._query:
            self._update(event.value)

    def _options(self, query: str) -> list[Option]:
        """The first ``MAX_MATCHES`` modules whose path or class contains ``query`` (any case),
        best first (``match_rank``), in model order within a rank."""
        q = query.lower()
        if not q:
            matches = list(islice(self.modules, MAX_MATCHES))
        else:
            if self._lowered[0] is not self.modules:  # once per model, not per key typed
                self._lowered = (self.modules, [(p.lower(), c.lower()) for p, c in self.modules])
            hits = [(match_rank(q, p, c), i) for i, (p, c) in enumerate(self._lowered[1]) if q in p or q in c]
            matches = [self.modules[i] for _, i in heapq.nsmallest(MAX_MATCHES, hits)]
        return [Option(Text.assemble((p or "(root)", "bold"), f"  {c}"), id=f"m:{p}") for p, c in matches]

    def action_move(self, delta: int) -> None:
        """Move the highlight through the matches (the query keeps the focus)."""
        options = self.query_one("#matches", OptionList)
        if not options.option_count:
            return
        current = options.highlighted if options.highlighted is not None else -1
        options.highlighted = max(0, min(options.option_count - 1, current + delta))

    def _update(self, query: str) -> None:
        self._query = query
        options = self.query_one("#matches", OptionList)
        options.clear_options()
        options.add_options(self._options(query))
        if options.option_count:
            options.highlighted = 0

    def on_input_submitted(self, event: Input.Submitted) -> None:
        options = self.query_one("#matches", OptionList)
        option = options.highlighted_option
        self.dismiss(option.id[2:] if option is not None and option.id else None)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id[2:] if event.option.id else None)

    def action_dismiss_none(self) -> None:
        self.dismiss(None)


MAX_MATCHES = 200  # matches listed: more is typing another letter
NO_MATCH = 6


def match_rank(query: str, path: str, cls: str) -> int:
    """How well module ``path`` of class ``cls`` matches ``query`` (all three in lower case;
    smaller is better): its name is the query, its name starts with it, its path contains it,
    its class is the query, its class contains it; ``NO_MATCH`` when neither contains it."""
    p, c = path, cls
    name = p.rsplit(".", 1)[-1]
    if name == query or p == query:
        return 0
    if name.startswith(query):
        return 1
    if query in p:
        return 2
    if c == query:
        return 3
    if query in c:
        return 4
    return NO_MATCH


class _EnterApplies(Checkbox, inherit_bindings=False):
    """A checkbox that space toggles; Enter goes to the dialog (it applies it)."""

    BINDINGS = [Binding("space", "toggle_button", "toggle", show=False)]


class BreakpointsScreen(Dialog[dict[str, Any] | None]):
    """Pause on NaN/Inf, on a gradient norm above a threshold, on a module's forward. Enter
    (in a field or on the checkbox) applies, as the Apply button does; Escape cancels."""

    BINDINGS = [Binding("escape", "dismiss_none", "cancel"), Binding("enter", "apply", "apply")]
    DEFAULT_CSS = """
    BreakpointsScreen { align: center middle; }
    BreakpointsScreen > Vertical { width: 76; max-width: 95%; height: auto; border: thick $accent;
        background: $surface; padding: 1 2; }
    BreakpointsScreen Input { margin-bottom: 1; }
    BreakpointsScreen #error { color: $error; height: auto; }
    """

    def __init__(self, current: dict[str, Any], selected: str) -> None:
        super().__init__()
        self.current, self.selected = current, selected

    def compose(self) -> ComposeResult:
        grad = self.current.get("grad_norm")
        with Vertical():
            yield Label("[b]Breakpoints[/b] — training pauses when one is hit")
            yield _EnterApplies("pause on the first NaN/Inf (needs --stats)", self.current.get("nan", False), id="nan")
            yield Label("pause when a parameter's grad norm exceeds (empty: off)")
            yield Input(value="" if grad is None else f"{grad:g}", id="grad", placeholder="e.g. 10")
            yield Label("pause on the forward of these modules (comma-separated paths)")
            # Never filled in with the selected module: asking for a grad-norm threshold alone
            # armed a forward breakpoint on it too. The placeholder names it, to type.
            modules = ", ".join(self.current.get("modules", []))
            example = f"e.g. {self.selected} (the selected module)" if self.selected else "e.g. conv2, fc1"
            yield Input(value=modules, id="modules", placeholder=example)
            yield Static("", id="error")
            with Horizontal():
                yield Button("Apply", variant="primary", id="apply")
                yield Button("Clear all", id="clear")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "clear":
            self.dismiss({"cmd": "break", "nan": False, "grad_norm": None, "modules": []})
            return
        self.action_apply()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_apply()

    def action_apply(self) -> None:
        raw = self.query_one("#grad", Input).value.strip()
        try:
            grad = float(raw) if raw else None
        except ValueError:
            self.query_one("#error", Static).update(f"grad norm must be a number, got {raw!r}")
            return
        modules = [m.strip() for m in self.query_one("#modules", Input).value.split(",") if m.strip()]
        self.dismiss({"cmd": "break", "nan": self.query_one("#nan", Checkbox).value, "grad_norm": grad,
                      "modules": modules})

    def action_dismiss_none(self) -> None:
        self.dismiss(None)


class StepScreen(Dialog[int | None]):
    BINDINGS = [Binding("escape", "dismiss_none", "cancel")]
    DEFAULT_CSS = """
    StepScreen { align: center middle; }
    StepScreen > Vertical { width: 50; height: auto; border: thick $accent; background: $surface; padding: 1 2; }
    StepScreen #error { color: $error; }
    """

    def __init__(self, steps: list[int]) -> None:
        super().__init__()
        self.steps = steps

    def compose(self) -> ComposeResult:
        with Vertical():
            span = f"{self.steps[0]}–{self.steps[-1]}" if self.steps else "none yet"
            yield Label(f"Jump to step (kept: {span})")
            yield Input(id="step", placeholder="step number")
            yield Static("", id="error")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        try:
            step = int(event.value)
        except ValueError:
            self.query_one("#error", Static).update(f"not a step number: {event.value!r}")
            return
        if step not in self.steps:
            self.query_one("#error", Static).update(f"step {step} is not kept (kept: {self.steps[0]}–{self.steps[-1]})"
                                                    if self.steps else "no steps yet")
            return
        self.dismiss(step)

    def action_dismiss_none(self) -> None:
        self.dismiss(None)


class CompareScreen(Dialog[dict[str, Any] | None]):
    """Pick two kept steps to compare (defaults: the step on screen and the one before it), or,
    with a second trace open (``replay --compare``), compare each step shown with the same step
    of it; Clear turns the comparison off. Enter applies, Escape cancels. Dismisses with
    ``{"mode": "steps", "a": int, "b": int}``, ``{"mode": "trace"}``, ``{"mode": "off"}`` or None."""

    BINDINGS = [Binding("escape", "dismiss_none", "cancel"), Binding("enter", "apply", "apply")]
    DEFAULT_CSS = """
    CompareScreen { align: center middle; }
    CompareScreen > Vertical { width: 76; max-width: 95%; height: auto; border: thick $accent;
        background: $surface; padding: 1 2; }
    CompareScreen Input { margin-bottom: 1; }
    CompareScreen #error { color: $error; height: auto; }
    """

    def __init__(self, steps: list[int], step_a: int | None, step_b: int | None, other: str | None = None) -> None:
        super().__init__()
        self.steps, self.step_a, self.step_b, self.other = steps, step_a, step_b, other

    def compose(self) -> ComposeResult:
        span = f"{self.steps[0]}–{self.steps[-1]}" if self.steps else "none yet"
        with Vertical():
            yield Label(f"[b]Compare two steps[/b] (kept: {span}) — Δ badges, a Δ column, ≠ where the orders part")
            yield Label("step A (the timeline shows it)")
            yield Input(value="" if self.step_a is None else str(self.step_a), id="a", placeholder="step number")
            yield Label("step B (compared with A)")
            yield Input(value="" if self.step_b is None else str(self.step_b), id="b", placeholder="step number")
            yield Static("", id="error")
            with Horizontal():
                yield Button("Compare", variant="primary", id="apply")
                if self.other is not None:
                    yield Button(f"Each step with {self.other}", id="trace")
                yield Button("Clear", id="clear")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "clear":
            self.dismiss({"mode": "off"})
        elif event.button.id == "trace":
            self.dismiss({"mode": "trace"})
        else:
            self.action_apply()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_apply()

    def action_apply(self) -> None:
        picked = []
        for field in ("a", "b"):
            raw = self.query_one(f"#{field}", Input).value.strip()
            try:
                step = int(raw)
            except ValueError:
                self.query_one("#error", Static).update(f"step {field.upper()}: not a step number: {raw!r}")
                return
            if step not in self.steps:
                kept = f"kept: {self.steps[0]}–{self.steps[-1]}" if self.steps else "no steps yet"
                self.query_one("#error", Static).update(f"step {step} is not kept ({kept})")
                return
            picked.append(step)
        self.dismiss({"mode": "steps", "a": picked[0], "b": picked[1]})

    def action_dismiss_none(self) -> None:
        self.dismiss(None)


class TextScreen(Dialog[None]):
    """A scrollable text: errors with tracebacks, or the program's output."""

    BINDINGS = [Binding("escape,q", "dismiss", "close")]
    DEFAULT_CSS = """
    TextScreen { align: center middle; }
    TextScreen > VerticalScroll { width: 95%; height: 90%; border: thick $error; background: $surface;
        padding: 0 1; }
    """

    def __init__(self, title: str, body: Text) -> None:
        super().__init__()
        self.title_text, self.body = title, body

    def compose(self) -> ComposeResult:
        scroll = VerticalScroll()
        scroll.border_title = self.title_text
        with scroll:
            yield Static(self.body)
