"""The modscope TUI: one screen of linked views over an event source.

Data flows one way: a ``Source`` folds events into ``SessionState`` on its own thread; a timer
here (``refresh_views``) reads the revision counters and redraws only the views whose data
changed, inside one ``batch_update``. Selections flow back as messages (``ModuleTree.Selected``,
``HookTimeline.Selected``) and are pushed down to every view (``_select``).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from collections.abc import Iterable
from typing import Any

from rich.text import Text
from textual import events, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.css.model import SelectorType
from textual.css.query import NoMatches
from textual.reactive import Reactive
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Footer, Static

from .compare import (
    CompareError,
    Comparison,
    OtherTrace,
    compare_steps,
    session_step_events,
    session_step_whole,
)
from .exit_report import own_frames
from .export import describe_export, model_event_of, snapshot_export, write_export
from .gc_policy import GcPolicy
from .key_window import KEYS
from .ranks import RankHold
from .screens import BreakpointsScreen, CompareScreen, FindScreen, HelpScreen, StepScreen, TextScreen
from .sources import THREAD_VARIABLES, ChildProcess, Source, child_env
from .state import ParamInfo, SessionState
from .step_values import StepValues, step_values
from .web_driver import WEB_LIVE_REDRAW_S, WEB_REFRESH_S, WEB_TYPING_MAX_HOLD_S, WEB_TYPING_S
from .widgets.footer import KeyFooter
from .widgets.graph_view import AutogradGraphView
from .widgets.header import ViewerHeader
from .widgets.module_tree import ModuleTree
from .widgets.params_table import ParamsTable, spread_cells
from .widgets.rank_bar import RankBar
from .widgets.timeline import HookTimeline
from .widgets.training import TrainingPanel

MIN_WIDTH, MIN_HEIGHT = 80, 24
# Below these every pane no longer fits at once: the right column shows one view at a time
# (tab cycles, the view bar above names them); below SIDE_WIDTH the modules pane is a page too.
WIDE_WIDTH, WIDE_HEIGHT = 120, 30
SIDE_WIDTH = 100
LEFT_MIN, LEFT_MAX_SHARE = 30, 0.42 # the modules column: as wide as its widest label, within these
VIEWS = ("tree", "params", "timeline", "graph")
VIEW_NAMES = {"tree": "Modules", "params": "Parameters", "timeline": "Hooks", "graph": "Graph"}
LIVE_PARTS = frozenset({"tree", "params", "timeline", "training"})  # live values (see _hold_live)
AFTER_A_KEY = frozenset({"tree", "params", "timeline"})  # live parts a key's paint leaves for the next
LIVE_REDRAW_S = 0.3  # drawn at most this often when nothing else changed
FORCED_RETRY_S = 0.005  # a part asked for now, found the state locked (folding): tried again this soon
PAUSING = "at the end of this step"  # where a pause from the viewer stops (capture.control)
PAUSING_RANKS = "every rank, at one step boundary"
EXIT_GRACE = 5.0  # seconds a program that ended (or disconnected) has to exit before q stops it
NO_MODEL_GRACE = 3.0  # seconds of output alone (no steps, no metrics) before the viewer says no model came
NO_MODEL_HINT = ("modscope traces nn.Module calls: this program ran none. Call modscope.watch(model) in the "
                 "script, or run a script that builds an nn.Module and calls it.")


class MainScreen(Screen):
    """The viewer's screen: tab and shift+tab go to the next view (in a paged layout, showing it),
    and the footer lists the keys a user needs first (quit, help, views, maximise) before the
    focused view's own, so a narrow terminal cuts the least useful ones."""

    BINDINGS = [
        Binding("tab", "app.next_view(1)", "next view", show=True),
        Binding("shift+tab", "app.next_view(-1)", "previous view", show=False),
    ]
    FIRST = ("q", "question_mark", "tab", "z")
    # Textual's ``Screen.focused`` repaints the whole screen when the focus moves. What shows the
    # focus here is each view's style (its ``:focus`` border, the tree's and the table's cursor,
    # read as the timeline draws), and Textual restyles the widgets that lose and gain the focus
    # (``Screen._update_focus_styles``), which repaints those two: the rest of the screen was
    # composed again for nothing, most of tab's time in the viewer (a full frame each time).
    focused: Reactive[Any] = Reactive(None, repaint=False)

    def _watch_maximized(self, previously_maximized: Any, maximized: Any) -> None:
        """As Textual's own, but for the screen's ``-maximized-view`` class, which is not set.
        Textual's rule for it (``Screen.-maximized-view``) sets the screen's layout and overflow
        to what they are already (vertical, auto), centres the maximised widget and hatches
        around it; a maximised view here fills the space between the header and the footer
        (``app.tcss``), so there is nothing around it to hatch or centre. Setting the class
        restyled the screen, and so marked every node under it for a repaint: ~15 ms of ``z``'s
        UI-thread time while training (issue 30). Only the maximised widget's own class changes."""
        if previously_maximized is not None:
            previously_maximized.remove_class("-maximized")
        if maximized is not None:
            maximized.add_class("-maximized")

    @property
    def active_bindings(self) -> dict:
        bindings = super().active_bindings
        first = {k: bindings[k] for k in self.FIRST if k in bindings}
        return {**first, **{k: v for k, v in bindings.items() if k not in first}}


def app_focus_readers(app: App, screen: Screen) -> list[Any] | None:
    """The nodes of ``screen`` that a CSS rule styles by the app's focus (``App:blur X``: only
    Textual's own, which fades the header's title), or None when a rule reads it for something
    other than a type of widget (then the whole screen is restyled, as Textual does)."""
    names: set[str] = set()
    for rule in app.stylesheet.rules:
        for selectors in rule.selector_set:
            if any(s.name == "App" and s.pseudo_classes & {"focus", "blur"} for s in selectors.selectors[:-1]):
                last = selectors.selectors[-1]
                if last.type is not SelectorType.TYPE:
                    return None
                names.add(last.name)
    return [node for node in screen.walk_children(with_self=True) if names & node._css_type_names]


class ModscopeApp(App[int]):
    """Watch a model train. ``source`` feeds events; ``child`` is the training process, if any."""

    CSS_PATH = "app.tcss"
    TITLE = "modscope"
    # Textual's App repaints the whole screen when its title changes; the title says the status
    # here (space: "pausing", then "paused"), and only the header shows it, which redraws its
    # own line (widgets/header.py): issue 30
    title: Reactive[str] = Reactive("", compute=False, repaint=False)
    sub_title: Reactive[str] = Reactive("", compute=False, repaint=False)
    ALLOW_IN_MAXIMIZED_VIEW = "Header, Footer"
    BINDINGS = [
        # priority: the tree would take space (expand) otherwise; check_action gives it back to dialogs
        Binding("space", "toggle_pause", "pause/resume", priority=True),
        Binding("n", "step", "step"),
        Binding("F", "full_step", "full detail on the next step", show=False),
        Binding("b", "breakpoints", "breakpoints"),
        Binding("slash", "find", "find"),
        Binding("e", "export", "export"),
        Binding("left_square_bracket", "prev_step", "prev step", show=False),
        Binding("right_square_bracket", "next_step", "next step", show=False),
        Binding("g", "goto_step", "go to step", show=False),
        Binding("f", "follow", "follow", show=False),
        Binding("m", "filter_module", "timeline: only the selected module", show=False),
        Binding("i", "toggle_hook_nodes", "show/hide hook nodes in the graph", show=False),
        Binding("1", "toggle_kind('forward')", "timeline: show/hide forward events", show=False),
        Binding("2", "toggle_kind('backward')", "timeline: show/hide backward events", show=False),
        Binding("3", "toggle_kind('hooks')", "timeline: show/hide user hook events", show=False),
        Binding("4", "toggle_kind('errors')", "timeline: show/hide error events", show=False),
        Binding("d", "compare", "compare two steps", show=False),
        Binding("r", "next_rank(1)", "ranks: show the next rank", show=False),
        Binding("R", "next_rank(-1)", "ranks: show the previous rank", show=False),
        Binding("x", "errors", "errors: the error panel", show=False),
        Binding("l", "log", "log: the program's output", show=False),
        Binding("question_mark", "help", "help"),
        Binding("z", "maximize", "maximise/restore"),
        Binding("escape", "restore", "restore", show=False),
        # priority: q quits from every screen (the error panel opens by itself when the script
        # raises), except while a text field has focus: it types there (Textual filters it out)
        Binding("q", "quit", "quit", priority=True),
    ]
    ALWAYS = frozenset({"quit", "command_palette"})  # actions that work on dialogs too

    def __init__(self, source: Source, *, child: ChildProcess | None = None, refresh_interval: float = 0.1,
                 state: SessionState | None = None, compare: OtherTrace | None = None) -> None:
        super().__init__()
        self.source = source
        self.child = child
        self.state = state or SessionState()
        # A run of several ranks: ``root`` folds every rank (``ranks``), ``state`` is the rank the
        # views show (``r`` switches); ``hold`` keeps a paused run's ranks at one step boundary.
        self.root = self.state
        self.hold = RankHold()
        self._ranks_seen: Any = None  # what the rank bar and the rank column last drew
        self._ranks_drawn_at = 0.0
        self.refresh_interval = refresh_interval
        self.selected = ""
        self.breakpoints: dict[str, Any] = {}
        self._seen: dict[str, int] = {}
        self._errors_shown = 0
        self._stopping = False
        self._checked_size: Any = None
        self.started_at = time.perf_counter()
        self.first_model_at: float | None = None
        self._auto_selected = False  # the first module with parameters was selected when the model came
        self._no_model_key: Any = None  # what the "no model" panel shows now (None: hidden)
        self._output_seen_at: float | None = None  # when the program's first output line was seen
        self.layout_mode = "wide"  # "wide": every pane; "side": modules + one view; "narrow": one view
        self.view = "tree"  # the view shown (paged layouts) or focused (wide)
        self._page = "params"  # the right column's view in the paged layouts
        self._viewbar: Text | None = None  # what the view bar shows (``_apply_view``)
        self._left_width: int | None = -1  # -1: not set yet
        self.sub_title = source.description
        self.other = compare  # a second trace: each step shown is compared with the same step of it
        # what to compare (``d``): {"mode": "steps", "a", "b"} or {"mode": "trace"}; None: nothing
        self.compare_mode: dict[str, Any] | None = {"mode": "trace"} if compare is not None else None
        self.comparison: Comparison | None = None  # the last result shown
        self._compare_key: Any = None  # the pair asked of the worker (a result for another is stale)
        self.gc_policy = GcPolicy()  # full collections while the user is idle, not mid-key
        self.source_started = False  # after the first frame (``on_mount``)
        self._live_drawn_at = 0.0  # when the views last drew a change (``_hold_live``)
        self._key_at = 0.0  # when the last key arrived (``_hold_live``: in a browser tab)
        self._forced: set[str] = set()  # parts a key asked to redraw now
        self._due_after_key: set[str] = set()  # parts left for the paint after a key's (``_after_the_key``)
        self._title_ranks = 1  # the ranks the title counts (``_refresh_title``)
        self._retry_due = False  # a redraw of forced parts is due in FORCED_RETRY_S (the state was locked)
        self._unmounted = False
        self._ticker: Timer | None = None  # set on mount: an app that failed to start has none
        self._find_screen: FindScreen | None = None  # the find dialog, kept between openings
        self._help_screen: HelpScreen | None = None  # the help, kept between openings
        self._find_list: tuple[int, list[tuple[str, str]]] = (-1, [])  # (state.models, find's modules)
        # the numbers of the step the timeline stays on (``g``, ``[``, ``]``), shown by the tree
        # and the parameter table; None: the latest, as they arrive
        self.step_values: StepValues | None = None
        # what modscope chose of the program's threads (None: no program, or the user chose)
        self.threads = child_threads(os.environ, os.cpu_count() or 1) if child is not None else None
        self._step_values_key: int | None = None  # the step asked of the worker
        # a pause asked for and not yet confirmed by the program (it stops at its step's end):
        # the status says "pausing" until then (``_start_pausing``)
        self._pausing = False
        self._pausing_state: SessionState | None = None  # the state told to say when its status comes

    # --- layout -------------------------------------------------------------------------------

    def get_default_screen(self) -> Screen:
        return MainScreen(id="_default")

    def compose(self) -> ComposeResult:
        yield ViewerHeader()  # (its title says the status: redrawn without a layout)
        yield RankBar(id="ranks")
        yield Static(id="viewbar")
        with Horizontal(id="main"):
            with Vertical(id="left"):
                yield ModuleTree(id="tree")
                no_model = Static(id="no-model")
                no_model.border_title = "Modules"
                yield no_model
                yield TrainingPanel(id="training")
            with Vertical(id="right"):
                yield ParamsTable(id="params")
                with Horizontal(id="lower"):
                    yield HookTimeline(id="timeline")
                    yield AutogradGraphView(id="graph")
        yield Static(id="too-small")
        yield KeyFooter()

    def _watch_app_focus(self, focus: bool) -> None:
        """Textual's (the focused view loses the focus with the app's and gets it back), except
        that only the nodes a rule styles by the app's focus are restyled (``app_focus_readers``),
        not every node of the screen: 30-150 ms of the UI thread on the loaded machine each time
        a browser tab lost or gained the focus, and a key pressed as the tab gained it waited."""
        screen = self.screen
        readers = app_focus_readers(self, screen)
        if readers is None:
            super()._watch_app_focus(focus)
            return
        screen.update_node_styles = lambda animate=True: self.stylesheet.update_nodes(readers, animate=animate)
        try:
            super()._watch_app_focus(focus)
        finally:
            del screen.update_node_styles

    def on_mount(self) -> None:
        # In a browser tab the focused view is marked by its title, not its border (app.tcss)
        self.set_class(self.is_web, "-web")
        # (in a browser tab each live frame costs the page tens of ms of CPU to draw: see WEB_REFRESH_S)
        interval = max(self.refresh_interval, WEB_REFRESH_S) if self.is_web else self.refresh_interval
        self._ticker = self.set_interval(interval, self.refresh_views)
        self._check_size()
        # The source starts once the first frame is on screen: a replay's reading thread (a
        # million events folded in Python) took the UI thread's turns while it drew that frame.
        # So does the garbage collection policy (it counts the objects alive: O(heap)).
        self.call_after_refresh(self._start_source)

    def _start_source(self) -> None:
        if self.source_started or self._unmounted:
            return
        self.source_started = True
        self.gc_policy.start()
        self.source.start(self.root)

    def on_unmount(self) -> None:
        self._unmounted = True
        self._end_pausing_watch()  # (the loop it would call into is going)
        if self._ticker is not None:
            self._ticker.stop()
        self.source.stop()
        self.gc_policy.stop()

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, (events.Key, events.MouseEvent)):
            self.gc_policy.touch()  # the user is here: no full collection for a moment
        if isinstance(event, events.Key):
            KEYS.press()  # background work waits until the key's screen is painted (key_window)
            self._key_at = time.monotonic()
        await super().on_event(event)
        if isinstance(event, events.Key):
            self.call_after_refresh(KEYS.painted)

    def _check_size(self) -> None:
        """Show a message instead of a broken layout when the terminal is too small (checked on
        every tick: resizes arrive as screen events that the app does not always see)."""
        if self.size == self._checked_size:
            return
        self._checked_size = self.size
        w, h = self.size
        small = w < MIN_WIDTH or h < MIN_HEIGHT
        main = self.screen_stack[0]
        main.set_class(small, "too-small")
        if small:
            self.query_one("#too-small", Static).update(
                f"The terminal is too small for modscope: {w}×{h}.\nMake it at least {MIN_WIDTH}×{MIN_HEIGHT}.")
        if w >= WIDE_WIDTH and h >= WIDE_HEIGHT:
            mode = "wide"
        else:
            mode = "side" if w >= SIDE_WIDTH else "narrow"
        self.layout_mode = mode
        for name in ("wide", "side", "narrow"):
            main.set_class(mode == name, f"layout-{name}")
        main.set_class(mode != "wide", "paged")
        footer = self.query_one(Footer)
        footer.compact = mode != "wide"
        footer.show_command_palette = mode == "wide"  # ctrl+p still opens it; the keys matter more
        self._left_width = -1
        self._apply_view()

    # --- responsive layout --------------------------------------------------------------------

    def visible_views(self) -> list[str]:
        """The views on screen now (every one in the wide layout)."""
        if self.layout_mode == "wide":
            return list(VIEWS)
        if self.layout_mode == "side":
            return ["tree", self._page]
        return [self.view]

    def _apply_view(self) -> None:
        """Show ``self.view`` (paged layouts) and redraw the view bar that names the views."""
        main = self.screen_stack[0]
        if self.view != "tree":
            self._page = self.view
        if self.layout_mode != "wide":
            # (only the paged layouts' rules read these classes; a class changed on the screen
            # restyles every node under it, and in the wide layout, where every view shows, that
            # was most of tab's time: set when the layout becomes paged, ``_check_size``)
            for name in VIEWS[1:]:
                main.set_class(self._page == name, f"page-{name}")
            main.set_class(self.view == "tree", "show-left")
        bar = Text()
        if self.layout_mode != "wide":
            shown = set(self.visible_views())
            for name in VIEWS:
                label = f" {VIEW_NAMES[name]} "
                style = "bold reverse" if name == self.view or (name in shown and self.layout_mode == "narrow") \
                    else ("bold" if name in shown else "dim")
                bar.append_text(Text.from_markup(f"[@click=app.show_view('{name}')]{label}[/]", style=style))
                bar.append("│", style="dim")
            bar.append("  tab next view · z maximise", style="dim")
        if bar != self._viewbar:  # (an update lays the screen out again, even hidden, as in the wide layout)
            self._viewbar = bar
            self.query_one("#viewbar", Static).update(bar)
        self._fit_left()

    def _fit_left(self) -> None:
        """The modules column as wide as its widest label (within LEFT_MIN and a share of the
        screen); the whole width when it is a page of its own.

        It grows and never shrinks until the terminal is resized: labels change width as the
        timings tick and a collapse hides wide lines, and every change of this width lays the
        whole screen out again (the graph pane included), which was most of a key press's time
        while training."""
        left = self.query_one("#left")
        if self.layout_mode == "narrow":
            width = None
        else:
            tree = self.query_one(ModuleTree)
            _ = tree._tree_lines  # lays the lines out now (sets virtual_size), not at the next render
            want = tree.virtual_size.width + 2 + 2  # the border, the scrollbar
            width = max(LEFT_MIN, min(want, int(self.size.width * LEFT_MAX_SHARE)))
            if isinstance(self._left_width, int) and self._left_width > width:
                return
        if width != self._left_width:
            self._left_width = width
            left.styles.width = width if width is not None else "1fr"

    def action_show_view(self, name: str) -> None:
        """Bring ``name`` on screen (paged layouts) and focus it."""
        if name not in VIEWS:
            return
        self.screen_stack[0].minimize()
        self.view = name
        self._apply_view()
        self.call_after_refresh(self._focus_view, name)  # once it is displayed: hidden widgets take no focus

    def _focus_view(self, name: str) -> None:
        if self.view == name:  # not if another view was asked for meanwhile
            self.query_one(f"#{name}").focus()

    def action_next_view(self, delta: int) -> None:
        """tab / shift+tab: the next view, shown if it is not (every layout has the same order)."""
        focused = self.focused
        current = focused.id if focused is not None and focused.id in VIEWS else self.view
        self.action_show_view(VIEWS[(VIEWS.index(current) + delta) % len(VIEWS)])

    def action_maximize(self) -> None:
        """z: the focused view fills the screen; z (or escape) again restores the layout."""
        screen = self.screen_stack[0]
        if screen.maximized is not None:
            screen.minimize()
            return
        focused = self.focused
        if focused is None or not screen.maximize(focused):
            self.notify("focus a view (tab) to maximise it", timeout=3)

    def action_restore(self) -> None:
        self.screen_stack[0].minimize()

    def on_descendant_focus(self, event: Any) -> None:
        widget = event.widget
        if not self.screen_stack:  # a focus that lands while the app shuts down: no screen to page
            return
        if widget.id in VIEWS and widget.id != self.view:
            self.view = widget.id
            if self.layout_mode != "wide":
                self._apply_view()

    # --- refreshing ---------------------------------------------------------------------------

    def refresh_views(self) -> None:
        """Redraw what changed since the last tick (timer callback on the UI thread)."""
        try:
            self._refresh_views()
            self._refresh_ranks()
            self._update_compare()
            self._update_step_values()
        except NoMatches:
            pass  # a tick during shutdown, after the views were removed: nothing left to draw
        if not KEYS.open:  # never between a key and its screen
            self.gc_policy.tick()

    def _refresh_views(self) -> None:
        self._check_size()
        stack = self.screen_stack
        if not stack or stack[-1] is not stack[0]:
            # A dialog covers the views and shows them as they were when it opened (see
            # screens.Dialog): updating them now would only cost the dialog repaints. The
            # revisions not seen yet are drawn at the first tick after it closes.
            return
        self._fit_left()
        state = self.state
        if not state.lock.acquire(blocking=False):
            # a source is folding right now: never block the UI; try again at the next tick, or
            # in a moment when a key (or a status the viewer waits for) asked for a part now: the
            # status event that confirms a pause is folded under this lock, and tells the UI
            # thread from there (``_start_pausing``)
            if self._forced and not self._retry_due:
                self._retry_due = True
                self.set_timer(FORCED_RETRY_S, self._retry_forced)
            return
        try:
            revs = state.rev.as_dict()
            changed = {k for k, v in revs.items() if self._seen.get(k) != v}
            if len(self.root.rank_states) + 1 != self._title_ranks:
                changed.add("training")  # another rank came in (its file folded beside): the title counts it
            held = self._hold_live(changed)
            later = set() if held else self._after_the_key(changed)
            changed -= later
            snap = self._snapshot(set() if held else changed)
        finally:
            state.lock.release()
        self._check_no_model(snap)
        if held:
            return  # drawn at a later tick: the revisions stay unseen
        self._seen = {**revs, **{part: self._seen.get(part) for part in later}}  # (``later``: still unseen)
        self._forced.clear()
        self._due_after_key = later
        if later:
            self.call_after_refresh(self.refresh_views)  # once the key's own parts are on screen
        if not changed:
            return
        self._live_drawn_at = time.monotonic()
        with self.batch_update():
            if "tree" in changed:
                self._refresh_tree(snap)
            if "params" in changed or "tree" in changed:
                self._show_params(self.selected, snap["params"])
            if "timeline" in changed:
                self._refresh_timeline(snap)
            if "graph" in snap:
                self.query_one(AutogradGraphView).show_graph(*snap["graph"])
            if changed & {"training", "status", "errors"}:
                self.query_one(TrainingPanel).show(snap["training"])
                self._refresh_title(snap["training"])
            if "errors" in changed:
                self._announce_errors(snap["errors"])

    def _retry_forced(self) -> None:
        self._retry_due = False
        if self._forced:
            self.refresh_views()

    def _after_the_key(self, changed: set[str]) -> set[str]:
        """The live parts that changed but that a key (or a status the viewer waits for) did
        not ask for, while it waits for its own (``_force``): drawn right after its screen is
        painted, not in the same paint. A status that says "paused" changes the timeline, the
        tree and the parameter table as well (the step's last events come with it); drawn
        together they took the status line's paint several times as long (issue 30). (The
        training panel is drawn with the status: it says it.)"""
        if not self._forced:
            return set()
        return (changed & AFTER_A_KEY) - self._forced

    def _hold_live(self, changed: set[str]) -> bool:
        """True when only live values changed (metrics, parameter norms, module timings, the
        followed timeline: ``LIVE_PARTS``), none of them asked for by a key (``_force``), and
        they were drawn less than ``LIVE_REDRAW_S`` ago (``WEB_LIVE_REDRAW_S`` in a browser tab,
        or, there, while the user types: a key less than ``WEB_TYPING_S`` ago, for up to
        ``WEB_TYPING_MAX_HOLD_S``): they wait for a later tick. Each draw
        repaints most of the screen; at ten a second those paints were most of the UI thread's
        time while training, and a key pressed during one waited for it. Nor are they drawn
        between a key and its screen (``key_window``). A new model is drawn at once (caller
        holds the state lock)."""
        now = time.monotonic()
        since = now - self._live_drawn_at
        if self.is_web:
            due = since >= (WEB_TYPING_MAX_HOLD_S if now - self._key_at < WEB_TYPING_S else WEB_LIVE_REDRAW_S)
        else:
            due = since >= LIVE_REDRAW_S
        if not changed or not changed <= LIVE_PARTS or changed & (self._forced | self._due_after_key) or \
                (due and not KEYS.open):
            return False
        tree = self.query_one(ModuleTree)
        return len(tree.modules) == len(self.state.modules) and tree.root_name == self.state.model_name

    def _snapshot(self, changed: set[str]) -> dict[str, Any]:
        """Copy what the changed views need (caller holds the state lock; keep it short)."""
        s = self.state
        snap: dict[str, Any] = {"params": s.params_of(self.selected)}
        if "tree" in changed:
            snap["tree"] = (s.modules, list(s.order), s.model_name, len(s.modules))
        if "graph" in changed:  # model_event_of is O(modules): only when the graph is new
            snap["graph"] = (s.graph, model_event_of(s))
        if "timeline" in changed:
            timeline = self.query_one(HookTimeline)
            step = None if timeline.follow else timeline.step
            snap["timeline"] = (*s.step_events(step), s.steps_available())
        steps_s, events_s = s.rates()
        if self._pausing and s.status != "running":
            self._end_pausing()  # confirmed (paused), or the program ended: the status says which
        pausing = self._pausing and s.status == "running"
        snap["training"] = {
            "status": "pausing" if pausing else s.status,
            "reason": (PAUSING_RANKS if self.root.rank_states else PAUSING) if pausing else s.status_reason,
            "step": s.step, "optimizer": s.optimizer,
            "detail": s.detail, "last_full": s.last_full,
            "lrs": list(s.lrs), "metrics": {k: list(v) for k, v in s.metrics.items()}, "steps_s": steps_s,
            "events_s": events_s, "events": s.events_total, "dropped": s.dropped, "skipped": s.skipped,
            "errors": len(s.errors), "model": s.model_name,
            "threads": threads_row(*self.threads) if self.threads is not None else ""}
        snap["errors"] = list(s.errors)
        snap["has_model"] = bool(s.modules)
        return snap

    def _refresh_tree(self, snap: dict[str, Any]) -> None:
        tree = self.query_one(ModuleTree)
        modules, order, name, count = snap["tree"]
        if count != tree.built_with or tree.root_name != name or tree.modules is not modules:  # (or another rank)
            tree.set_model(modules, order, name)
            if self.first_model_at is None and count:
                self.first_model_at = time.perf_counter()
            if count and not self._auto_selected:
                self._auto_selected = True
                if not self.selected:  # the user chose nothing yet: start where there is something to see
                    self.call_after_refresh(self._select_first_with_params)
        else:
            tree.refresh_labels()
        self._fit_left()  # in the same update as the labels: the other panes are laid out once

    def _select_first_with_params(self) -> None:
        """Select the first module (in ``named_modules`` order) that owns parameters, else one
        that owns buffers: the root usually owns none, and an empty table is a poor first view."""
        with self.state.lock:
            order = list(self.state.order)
            owners = [p.owner for p in self.state.params.values() if not p.is_buffer]
            buffer_owners = {p.owner for p in self.state.params.values() if p.is_buffer}
        owning = set(owners)
        path = next((p for p in order if p in owning), None)
        if path is None:
            path = next((p for p in order if p in buffer_owners), None)
        if path is not None and not self.selected:
            self._select(path)  # may run after a shutdown removed the views: then it does nothing

    def _check_no_model(self, snap: dict[str, Any]) -> None:
        """Say so when the program runs (steps, metrics, output) or ended without a module ever
        appearing: otherwise the tree would wait for a model for good."""
        if snap["has_model"]:
            key = None
        else:
            key = self._no_model_facts(snap["training"])
        if key == self._no_model_key:
            return
        self._no_model_key = key
        self.query_one("#left").set_class(key is not None, "no-model")
        if key is not None:
            self.query_one("#no-model", Static).update(no_model_text(*key))

    def _no_model_facts(self, t: dict[str, Any]) -> tuple | None:
        """What the program did without a model (``None``: nothing worth a word yet)."""
        log = list(self.child.log)[-8:] if self.child is not None else []
        code = self.child.returncode if self.child is not None else None
        over = t["status"] in ("ended", "disconnected") or code is not None
        metrics = {k: next((x for x in reversed(v) if x is not None), None) for k, v in t["metrics"].items()}
        busy = t["step"] > 0 or bool(metrics)
        if log and self._output_seen_at is None:
            self._output_seen_at = time.perf_counter()
        waited = self._output_seen_at is not None and time.perf_counter() - self._output_seen_at >= NO_MODEL_GRACE
        if not (over or busy or (log and waited)):
            return None
        return (over, t["status"], t["reason"], t["step"], tuple(metrics.items()), tuple(log), code)

    def _refresh_timeline(self, snap: dict[str, Any]) -> None:
        timeline = self.query_one(HookTimeline)
        step, events, overflow, steps = snap["timeline"]
        timeline.step = step
        c = self.comparison
        shown = c is not None and self.compare_mode is not None and c.step_a == step
        timeline.set_compare(c.split_seq() if shown else None, c.order_note() if shown else "")
        timeline.render_step(step, events, overflow, steps)

    def _refresh_title(self, t: dict[str, Any]) -> None:
        ranks = self._title_ranks = len(self.root.rank_states) + 1
        rank = f" · rank {self.state.rank} of {ranks}" if ranks > 1 else ""
        self.title = f"modscope · {t['model'] or 'waiting'} · {t['status']}{rank}"
        if self.comparison is None:  # (attached: who holds the controls may have changed)
            self.sub_title = self.source.description

    def _announce_errors(self, errors: list[dict[str, Any]]) -> None:
        new = errors[self._errors_shown:]
        self._errors_shown = len(errors)
        fatal = [e for e in new if e["where"] == "user script"]
        for e in new:
            if e["etype"] == "CompiledModel":  # what to do about it is the point: all of it, for longer
                self.notify(e["message"], severity="warning", timeout=30)
            elif e["etype"] not in ("NonFiniteValue",) and e["where"] != "user script":
                self.notify(f"{e['etype']}: {e['message'][:120]}", severity="warning", timeout=6)
            elif e["etype"] == "NonFiniteValue":
                self.notify(e["message"][:160], severity="error", timeout=8)
        if fatal:
            self.notify("the training script raised: showing its traceback", severity="error")
            self.action_errors()

    # --- selection ----------------------------------------------------------------------------

    def on_module_tree_selected(self, message: ModuleTree.Selected) -> None:
        self._select(message.path, from_tree=True)

    def on_hook_timeline_selected(self, message: HookTimeline.Selected) -> None:
        self._select(message.path)

    def on_autograd_graph_view_selected(self, message: AutogradGraphView.Selected) -> None:
        self._select(message.path)

    def _select(self, path: str, from_tree: bool = False) -> None:
        """Select module ``path`` in every view. A selection that arrives after the views were
        removed (a message or a scheduled call still queued at shutdown) does nothing."""
        try:
            self._select_in_views(path, from_tree)
        except NoMatches:
            pass

    def _select_in_views(self, path: str, from_tree: bool) -> None:
        if path == self.selected and from_tree:
            return
        self.selected = path
        if not from_tree:
            self.query_one(ModuleTree).select_path(path)
        with self.state.lock:
            params = self.state.params_of(path)
        self._show_params(path, params)
        timeline = self.query_one(HookTimeline)
        if timeline.module_filter and timeline.module_filter != path:
            timeline.module_filter = path
            self._force("timeline")
        self.query_one(AutogradGraphView).highlight_module(path)

    def _show_params(self, path: str, params: list[ParamInfo]) -> None:
        """The parameter table for module ``path``: the values of the step the timeline stays
        on, else the latest."""
        values = self.step_values
        if values is not None:
            params = [values.param(p) for p in params]
        self.query_one(ParamsTable).show(path, params)

    # --- the step the timeline stays on: its numbers in the tree and the table -------------------

    def _update_step_values(self) -> None:
        """When the timeline stays on a step (not following), read that step's numbers on a
        worker (a replay reads them back from the file); when it follows, show the latest."""
        timeline = self.query_one(HookTimeline)
        key = None if timeline.follow else timeline.step
        if key == self._step_values_key:
            return
        self._step_values_key = key
        if key is None:
            self._show_step_values(None, None)
        else:
            self._compute_step_values(key)

    @work(thread=True, exclusive=True, group="step-values")
    def _compute_step_values(self, step: int) -> None:
        try:
            events = session_step_events(self.state, step)
        except CompareError as e:
            self.call_from_thread(self.notify, str(e), severity="error", timeout=8)
            return
        values = step_values(events, step) if events is not None else None
        self.call_from_thread(self._show_step_values, step, values)

    def _show_step_values(self, step: int | None, values: StepValues | None) -> None:
        if step != self._step_values_key:
            return  # another step was asked for meanwhile: its numbers are coming
        self.step_values = values
        try:
            self.query_one(ModuleTree).set_step_values(values)
            self.query_one(ParamsTable).set_step(values.step if values is not None else None)
            with self.state.lock:
                params = self.state.params_of(self.selected)
            self._show_params(self.selected, params)
        except NoMatches:
            pass  # shutting down

    def _force(self, part: str) -> None:
        """Redraw ``part`` now (a key asked for it), not at the next tick up to
        ``refresh_interval`` later."""
        self._seen[part] = -1
        self._forced.add(part)
        self.call_later(self.refresh_views)

    # --- actions ------------------------------------------------------------------------------

    def _control(self, message: dict[str, Any], what: str) -> bool:
        if not self.source.live:
            self.notify(f"{what}: this is a replay, there is no running program", severity="warning")
            return False
        if not self.source.control(message):
            why = getattr(self.source, "read_only", "") or "the training process is not connected"
            self.notify(f"{what}: {why}", severity="warning")  # (attached: another viewer may hold the controls)
            return False
        return True

    def action_toggle_pause(self) -> None:
        if self.state.status == "paused" or self.hold.holding:
            if self._control({"cmd": "resume"}, "resume"):
                if self._pausing:  # before the program paused: it runs on, and the status says so
                    self._end_pausing()
                    self._force("training")
                self._release_hold()
        elif self._control({"cmd": "pause"}, "pause"):
            self._start_hold()
            self._start_pausing()

    def _start_pausing(self) -> None:
        """Space: the program stops at the end of the step it is in (``capture.control``), which
        the viewer learns from its status event. Until then the status says "pausing", at once;
        it says "paused" only once the program is. The folding thread tells the UI thread when
        that event is folded (``SessionState.on_status``), so "paused" is drawn then, not at the
        next tick up to ``refresh_interval`` later (issue 30)."""
        self._pausing = True
        self._force("training")
        state, loop = self.state, asyncio.get_running_loop()
        self._end_pausing_watch()
        self._pausing_state = state
        state.on_status = lambda: loop.call_soon_threadsafe(self._status_arrived, state)

    def _status_arrived(self, state: SessionState) -> None:
        if state is self.state and self._pausing:
            self._force("status")

    def _end_pausing(self) -> None:
        self._pausing = False
        self._end_pausing_watch()

    def _end_pausing_watch(self) -> None:
        if self._pausing_state is not None:
            self._pausing_state.on_status = None
            self._pausing_state = None

    def action_full_step(self) -> None:
        """F: watch the next step in full detail (a run sampled with --every: capture.sampling)."""
        if self._control({"cmd": "full"}, "full detail"):
            self.notify("the next step is watched in full detail", timeout=2)

    def action_step(self) -> None:
        if self._control({"cmd": "step"}, "single step"):
            self._start_hold()

    def _start_hold(self) -> None:
        with self.root.lock:
            self.hold.start(self.root.all_ranks())

    def _release_hold(self) -> None:
        with self.root.lock:
            self.hold.release(self.root.all_ranks())

    # --- ranks (a run of several: the rank bar, ``r``, the rank column, holding them together) ---

    def action_next_rank(self, delta: int) -> None:
        """r / R: the views show the next (previous) rank."""
        with self.root.lock:
            ranks = list(self.root.all_ranks())
        if len(ranks) < 2:
            self.notify("one process: there are no other ranks", timeout=3)
            return
        self.action_show_rank(ranks[(ranks.index(self.state.rank) + delta) % len(ranks)])

    def action_show_rank(self, rank: int) -> None:
        """Every view shows rank ``rank`` (the rank bar's click, ``r``): its own state, drawn whole."""
        with self.root.lock:
            if rank not in self.root.all_ranks() or rank == self.state.rank:
                return
            self.state = self.root.rank_state(rank)
            self._errors_shown = len(self.state.errors)  # (its errors are listed by x; not announced again)
        self._seen = {}
        self._ranks_seen = None
        self._step_values_key = -1  # the step the timeline stays on: read again, from this rank
        if self.compare_mode is not None and self.compare_mode["mode"] == "steps":
            self.clear_compare()  # two steps of the rank shown before
        for part in ("tree", "params", "timeline", "graph", "training"):
            self._force(part)

    def _refresh_ranks(self) -> None:
        """The rank bar (each rank's last event and how long ago, redrawn at least every second
        for the ages), the rank column of the parameter table (grad norms across ranks at the
        step shown, this rank's parted parameters), and the messages that keep a paused run's
        ranks at one step boundary (``RankHold.settle``)."""
        root = self.root
        board = root.board
        if board is None or len(board.ranks) < 2:
            return
        if not root.lock.acquire(blocking=False):
            return  # a source is folding: next tick
        try:
            states = root.all_ranks()
            moves = self.hold.settle(board, states) if self.source.live else {}
            step = self.step_values.step if self.step_values is not None else None
            key = (board.rev, self.state.rank, step, self.hold.holding)
            now = time.monotonic()
            redraw = key != self._ranks_seen or now - self._ranks_drawn_at >= 1.0
            if redraw:
                rows = board.rows()
                at, spread = board.spread(step)
                parted = board.parted_at(at).get(self.state.rank, []) if at is not None else []
                held = RankHold.held_at(states)
                params = self.state.params_of(self.selected)
        finally:
            root.lock.release()
        for rank, message in moves.items():
            self.source.control(message, rank=rank)
        if not redraw:
            return
        self._ranks_drawn_at = now
        note = ""
        if self.hold.holding:
            note = f"every rank held at step {held}" if held is not None else \
                "holding: bringing every rank to one step…"
        self.query_one(RankBar).show(rows, self.state.rank, note)
        if key != self._ranks_seen:
            self._ranks_seen = key
            table = self.query_one(ParamsTable)
            table.set_spreads(spread_cells(spread, parted))
            self._show_params(self.selected, params)

    def action_breakpoints(self) -> None:
        def apply(result: dict[str, Any] | None) -> None:
            if result is not None and self._control(result, "breakpoints"):
                self.breakpoints = result
                active = [k for k in ("nan", "grad_norm") if result.get(k)] + result.get("modules", [])
                self.notify("breakpoints: " + (", ".join(map(str, active)) or "none"), timeout=3)

        self.push_screen(BreakpointsScreen(self.breakpoints, self.selected), apply)

    def action_find(self) -> None:
        """``/``: the find dialog. One dialog serves every opening (installed: closing keeps it
        mounted), so opening it again costs no mounting of its widgets and its 200 first
        matches, nor the layout their mounting asks for."""
        modules = self._find_modules()

        def found(path: str | None) -> None:
            if path is not None:
                self._select(path)
                self.action_show_view("tree")

        if self._find_screen is None:
            self._find_screen = FindScreen(modules)
            self.install_screen(self._find_screen, "find")
        else:
            self._find_screen.reopen(modules)
        self.push_screen(self._find_screen, found)

    def _find_modules(self) -> list[tuple[str, str]]:
        """(path, class) of every module, in order: made again only when a model event came
        (10,000 modules: a few milliseconds of each opening of find, under the state's lock)."""
        with self.state.lock:
            if self._find_list[0] != self.state.models:
                self._find_list = (self.state.models, [(p, self.state.modules[p].cls) for p in self.state.order])
        return self._find_list[1]

    def action_export(self) -> None:
        """Export the graph (or, with the tree focused, the module tree) as DOT/SVG/PNG. The
        state is copied under the lock; graphviz renders on a worker thread."""
        try:
            with self.state.lock:
                job = snapshot_export(self.state, self.focused)
        except Exception as e:  # noqa: BLE001 - shown to the user, never a crash
            self.notify(f"export failed: {e}", severity="error", timeout=8)
            return
        self._export(job)

    @work(thread=True, group="export")
    def _export(self, job: Any) -> None:
        try:
            paths = write_export(job)
        except Exception as e:  # noqa: BLE001
            self.call_from_thread(self.notify, f"export failed: {e}", severity="error", timeout=8)
            return
        if self.is_web:  # in a browser tab (modscope web): the files reach the browser as downloads
            for path in paths:
                self.call_from_thread(self.deliver_binary, path, open_method="download")
        self.call_from_thread(self.notify, describe_export(job, paths), timeout=10)

    def _timeline_step(self, delta: int | None = None, step: int | None = None) -> None:
        timeline = self.query_one(HookTimeline)
        steps = self.state.steps_available()
        if not steps:
            return
        current = timeline.step if timeline.step in steps else steps[-1]
        if step is None:
            idx = max(0, min(len(steps) - 1, steps.index(current) + (delta or 0)))
            step = steps[idx]
        timeline.follow = False
        timeline.step = step
        self._force("timeline")

    def action_prev_step(self) -> None:
        self._timeline_step(-1)

    def action_next_step(self) -> None:
        self._timeline_step(+1)

    def action_goto_step(self) -> None:
        self.push_screen(StepScreen(self.state.steps_available()),
                         lambda step: step is not None and self._timeline_step(step=step))

    def action_follow(self) -> None:
        timeline = self.query_one(HookTimeline)
        timeline.follow = not timeline.follow
        self._force("timeline")

    def action_filter_module(self) -> None:
        timeline = self.query_one(HookTimeline)
        timeline.module_filter = "" if timeline.module_filter else (self.selected or "")
        self._force("timeline")

    def action_toggle_hook_nodes(self) -> None:
        view = self.query_one(AutogradGraphView)
        view.toggle_hook_nodes()
        self.notify(("showing" if view.show_hook_nodes else "hiding") + " the BackwardHook identity nodes "
                    "in the autograd graph", timeout=3)

    def action_toggle_kind(self, group: str) -> None:
        self.query_one(HookTimeline).toggle_kind(group)
        self._force("timeline")

    # --- comparing two steps (``d``) -----------------------------------------------------------

    def action_compare(self) -> None:
        """The dialog: two kept steps (the one on screen and the one before, or the pair being
        compared), the second trace's same step, or off."""
        steps = self.state.steps_available()
        timeline = self.query_one(HookTimeline)
        mode = self.compare_mode or {}
        a = mode.get("a", timeline.step if timeline.step in steps else (steps[-1] if steps else None))
        b = mode.get("b", steps[steps.index(a) - 1] if a in steps and steps.index(a) > 0 else a)
        self.push_screen(CompareScreen(steps, a, b, self.other.name if self.other is not None else None),
                         self._compare_chosen)

    def _compare_chosen(self, choice: dict[str, Any] | None) -> None:
        if choice is None:
            return
        if choice["mode"] == "off":
            self.clear_compare()
            return
        self.compare_mode = choice
        if choice["mode"] == "steps":
            self._timeline_step(step=choice["a"])  # A is the step the timeline shows (and marks)
        self._update_compare()

    def _compare_pair(self) -> tuple[int, int] | None:
        mode = self.compare_mode
        if mode is None:
            return None
        if mode["mode"] == "steps":
            return mode["a"], mode["b"]
        step = self.query_one(HookTimeline).step
        return None if step is None else (step, step)

    def _update_compare(self) -> None:
        """Start a comparison when the pair to compare changed (a choice, or with a second trace
        another step on screen); it runs on a worker, the views update when it is done."""
        pair = self._compare_pair()
        if pair is None or self.compare_mode is None:
            return
        mode = self.compare_mode["mode"]
        # A replayed step compared while it was still being indexed is compared again once it is
        # whole (its parameters were missing: every parameter showed as changed, Δ∞).
        session_steps = pair if mode == "steps" else pair[:1]
        key = (*pair, mode, all(session_step_whole(self.state, s) for s in session_steps))
        if key == self._compare_key:
            return
        self._compare_key = key
        self._compute_compare(key, pair, self.other if mode == "trace" else None)

    @work(thread=True, exclusive=True, group="compare")
    def _compute_compare(self, key: Any, pair: tuple[int, int], other: OtherTrace | None) -> None:
        try:
            result = compare_steps(self.state, *pair, other=other)
        except CompareError as e:
            self.call_from_thread(self.notify, f"compare: {e}", severity="error", timeout=8)
            return
        # the badges too are built here: one per module, off the UI thread
        self.call_from_thread(self._show_compare, key, result, result.badges(), result.param_deltas())

    def _show_compare(self, key: Any, result: Comparison, badges: dict[str, Text], deltas: dict[str, Text]) -> None:
        if key != self._compare_key:
            return  # another pair was asked for meanwhile: its result is coming
        self.comparison = result
        self.query_one(ModuleTree).set_badges(badges)
        self._show_deltas(deltas)
        self.sub_title = result.describe()
        self._force("timeline")

    def _show_deltas(self, deltas: dict[str, Text] | None) -> None:
        table = self.query_one(ParamsTable)
        table.set_deltas(deltas)
        with self.state.lock:
            params = self.state.params_of(self.selected)
        self._show_params(self.selected, params)

    def clear_compare(self) -> None:
        """Turn the comparison off: no badges, no Δ column, no split marker."""
        self.compare_mode = self.comparison = self._compare_key = None
        self.query_one(ModuleTree).set_badges({})
        self._show_deltas(None)
        self.sub_title = self.source.description
        self._force("timeline")

    def action_errors(self) -> None:
        with self.state.lock:
            errors = list(self.state.errors)
        body = Text()
        for e in errors or []:
            body.append(f"step {e['step']}  {e['etype']}", style="bold red")
            body.append(f"  in {e['where']}" + (f" (module {e['module']})" if e["module"] else "") + "\n")
            body.append(e["message"] + "\n")
            if e["traceback"]:  # the script's: its own frames (not modscope's runner and hooks)
                tb = own_frames(e["traceback"]) if e["where"] == "user script" else e["traceback"]
                body.append(tb + "\n", style="dim")
        if not errors:
            body.append("No errors.")
        self.push_screen(TextScreen(f"Errors ({len(errors)})", body))

    def action_log(self) -> None:
        lines = list(self.child.log) if self.child is not None else []
        body = Text()
        if self.threads is not None:
            body.append(threads_note(*self.threads) + "\n\n", style="dim")
        nice = getattr(self.child, "nice", 0)
        if nice:  # (the demo's: launch.DEMO_NICE)
            body.append(f"This demo trains at a lower priority (nice {nice}), so that the viewer answers your keys "
                        "first; its speed is not a plain run's. A program you run keeps its priority.\n\n",
                        style="dim")
        body.append("\n".join(lines) if lines else "(no output from the training program)")
        self.push_screen(TextScreen("Program output", body))

    def action_help(self) -> None:
        """``?``: the help. One dialog serves every opening (installed, as find's): composing its
        tables and laying them out again was most of the time ``?`` took while training."""
        if self._help_screen is None:
            self._help_screen = HelpScreen()
            self.install_screen(self._help_screen, "help")
        self.push_screen(self._help_screen)

    async def action_quit(self) -> None:
        if self.child is None or self._stopping:
            self.source.stop()
            self.exit(0)
            return
        self._stopping = True
        self.notify("stopping the training program…", timeout=10)
        self._stop_child()

    @work(thread=True, exclusive=True)
    def _stop_child(self) -> None:
        if self.child is None:
            code = 0
        else:
            with self.state.lock:
                over = self.state.status in ("ended", "disconnected")
            if over:
                # Its trace is closed and its connection gone, but the process may still be
                # exiting (torch's interpreter exit takes about a second): stopping it now would
                # be a SIGTERM, and a program that ended by itself reported as killed (143).
                try:
                    self.child.proc.wait(timeout=EXIT_GRACE)
                except subprocess.TimeoutExpired:
                    pass
            code = self.child.stop(self.source)
        self.call_from_thread(self._finish_quit, code)

    def _finish_quit(self, code: int) -> None:
        self.source.stop()
        self.exit(code)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """App keys act on the main screen only (in a dialog, keys type into its fields), but for
        ``ALWAYS``: q quits from a dialog too."""
        if action not in self.ALWAYS and self.screen is not self.screen_stack[0] and \
                (action in ("next_view", "show_view") or any(b.action.split("(")[0] == action for b in self.BINDINGS)):
            return False
        if action == "restore":  # escape restores a maximised view, and is free otherwise
            return self.screen_stack[0].maximized is not None
        return True

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        builtin = list(super().get_system_commands(screen))
        yield from builtin
        listed = {command.title for command in builtin}  # Textual's own "Quit": listed once
        for binding in self.BINDINGS:
            action = binding.action
            if binding.description.capitalize() in listed:
                continue
            yield SystemCommand(binding.description.capitalize(), f"key: {self.get_key_display(binding)}",
                                lambda action=action: self.run_action(action))


def child_threads(environ: Any, cores: int) -> tuple[int, int] | None:
    """(threads, cores): the BLAS/torch threads modscope gives the program (``child_env``), or
    ``None`` when the user chose them (one of ``THREAD_VARIABLES`` is set)."""
    if any(name in environ for name in THREAD_VARIABLES):
        return None
    threads = int(child_env(environ, cores)[THREAD_VARIABLES[0]])
    return (threads, cores) if threads < cores else None  # (one core: as a plain run)


def threads_row(threads: int, cores: int) -> str:
    """The training panel's line: the program's threads, and why."""
    return f"{threads} of {cores} cores (l: why)"


def threads_note(threads: int, cores: int) -> str:
    """The log's first line: the program runs with fewer threads than a plain run, and so its
    speed and the last digits of its numbers may differ from one."""
    return (f"modscope runs this program with {threads} BLAS/torch thread{'s' if threads > 1 else ''} "
            f"(OMP_NUM_THREADS and the like; a plain run uses one per core, {cores} here), leaving a core to "
            "the viewer: its speed, and the last digits of its numbers, may differ from a plain run's. Set "
            "OMP_NUM_THREADS yourself to choose.")


def no_model_text(over: bool, status: str, reason: str, step: int, metrics: tuple, log: tuple,
                  code: int | None) -> Text:
    """The module pane's message for a program that sends no model: what it did, what to do."""
    text = Text()
    if over:
        text.append("No model: the program ended without calling an nn.Module.\n\n", style="bold yellow")
    else:
        text.append("No model yet: the program runs, but no nn.Module has been called.\n\n", style="bold yellow")
    text.append("seen  ", style="dim")
    seen = [f"at step {step}" if step else "no steps"]
    seen.append("metrics " + ", ".join(f"{k}={v:.4g}" if v is not None else k for k, v in metrics)
                if metrics else "no metrics")
    text.append(", ".join(seen) + "\n")
    text.append("status  ", style="dim")
    text.append(status + (f" ({reason})" if reason else ""))
    if code is not None:
        text.append(f", exit status {code}")
    text.append("\n")
    if log:
        text.append("last output\n", style="dim")
        for line in log:
            text.append(f"  {line}\n")
    else:
        text.append("no output from the program\n", style="dim")
    text.append("\n" + NO_MODEL_HINT, style="bold")
    if over:
        text.append("\nPress l for the program's output, q to quit.", style="dim")
    return text


__all__ = ["ModscopeApp"]
