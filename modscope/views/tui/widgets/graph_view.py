"""The autograd graph, drawn with text: graphviz computes the layout, the view draws nodes,
module clusters and edges with box-drawing characters (``graph_layout``).

Data down, messages up: the app calls ``show_graph(graph_event, model_event)`` when a ``graph``
event arrives and ``highlight_module(path)`` when the module selection changes elsewhere; the
view posts ``AutogradGraphView.Selected(path)`` when the user selects a node whose module is
known (Tab/Shift+Tab, Enter, a click).

Laying out runs graphviz, which takes from milliseconds to seconds: it runs in a worker thread
(the diagram is built there too) while the view says "laying out…". The result is rasterised
once per (graph, depth, zoom) into one ``Strip`` per row; ``render_line`` only crops and
restyles the highlighted cells, so panning is instant however large the graph.
"""

from __future__ import annotations

from typing import Any

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.events import Click
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ...diagrams.autograd import build_autograd_graph_from_event
from ...diagrams.diagram import Diagram, path_depth
from ...diagrams.dot import DotMissing
from ...diagrams.fold import fit
from ...diagrams.hook_nodes import without_hook_nodes
from ..graph_layout import ZOOMS, Canvas, Layout, LayoutError, layout, rasterise

NO_GRAPH = "no autograd graph yet: it is recorded at the first forward with gradients"
AUTO_DEPTH_NODES = 600  # a larger graph opens collapsed to the deepest depth that fits
FOLD_NODES = 600  # a larger graph has its repeated blocks folded first (``diagrams.fold``; u: unfold)
PAN_COLS, PAN_ROWS = 8, 3
CURSOR = Style(bgcolor="grey30", bold=True)
HIGHLIGHT = Style(color="yellow", bold=True)
MESSAGE = Style(color="grey70", italic=True)
PROBLEM = Style(color="yellow")

Rect = tuple[int, int, int, int]


class AutogradGraphView(ScrollView, can_focus=True):
    """The autograd graph of one run, clustered by module: pan, zoom, collapse by depth,
    cycle through nodes. See the module docstring for the contract with the app."""

    DEFAULT_CSS = """
    /* Scrollbars always shown: the viewport keeps one size whatever the drawing, so where a
       selection is placed does not depend on whether the scrollbars were up yet. */
    AutogradGraphView { border: round $primary 60%; height: 1fr; overflow: scroll scroll; }
    AutogradGraphView:focus { border: round $accent; }
    """
    BINDINGS = [
        Binding("up,k", "pan(0, -1)", "pan", show=False),
        Binding("down,j", "pan(0, 1)", "pan", show=False),
        Binding("left,h", "pan(-1, 0)", "pan", show=False),
        Binding("right", "pan(1, 0)", "pan", show=False),
        Binding("plus,equals_sign", "zoom(1)", "zoom in"),
        Binding("minus", "zoom(-1)", "zoom out"),
        Binding("less_than_sign", "depth(-1)", "collapse"),
        Binding("greater_than_sign", "depth(1)", "expand"),
        # tab keeps moving focus between views; nodes are cycled with . and ,
        Binding("full_stop", "cycle(1)", "next node"),
        Binding("comma", "cycle(-1)", "previous node", show=False),
        Binding("enter", "select", "select"),
        Binding("u", "toggle_fold", "fold/unfold repeated blocks", show=False),
    ]

    class Selected(Message):
        """The user selected a node of module ``path``."""

        def __init__(self, path: str) -> None:
            self.path = path
            super().__init__()

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.border_title = "Autograd graph"
        self.graph_event: dict[str, Any] | None = None
        self.model_event: dict[str, Any] | None = None
        self.depth: int | None = None  # None: every module expanded
        self.max_depth = 0
        self.zoom = 1.0
        self.canvas: Canvas | None = None
        self.diagram: Diagram | None = None  # the diagram on screen
        self._shown_depth: int | None = None  # the depth of the canvas on screen (while laying out
        # another, ``depth`` is already the new one)
        self.cursor: str | None = None  # node id
        self._cursor_module: str | None = None  # its module: where the cursor goes after a collapse
        self.highlighted: str | None = None  # module path
        self.status = "empty"  # empty | laying out | ready | no dot | error
        self.message = NO_GRAPH
        self._generation = 0
        self._auto_depth = False
        self._diagrams: dict[int | None, Diagram] = {}
        self._layouts: dict[int | None, Layout] = {}
        self._canvases: dict[tuple[int | None, float], Canvas] = {}
        self._spans: dict[int, list[tuple[int, int, Style]]] = {}
        self._styled: dict[int, Strip] = {}  # canvas row -> its strip with the spans applied
        self._centre: tuple[float, float] | None = None  # layout point to keep centred after a zoom
        self._first_view = True
        self._auto_placed = False  # the view is where _auto_place put it (the user has not moved it)
        self.show_hook_nodes = False  # the engine's BackwardHook identity nodes (hidden: edges joined)
        self.hidden_hook_nodes = 0  # how many the graph on screen hides
        self._drawn_event: dict[str, Any] | None = None  # graph_event without what is hidden
        self.fold = True  # a graph over FOLD_NODES has its repeated blocks folded (u)

    # --- data down ----------------------------------------------------------------------------

    def show_graph(self, graph_event: dict[str, Any] | None, model_event: dict[str, Any] | None = None) -> None:
        """Draw ``graph_event`` (a ``graph`` event), its clusters named with the classes of
        ``model_event`` (a ``model`` event, optional). The same graph event object with an equal
        model event is a no-op (calling this on every refresh is cheap); a new one replaces
        the drawing (depth and zoom kept, a large graph collapsed to fit)."""
        if graph_event is self.graph_event and model_event == self.model_event:
            return
        self.graph_event, self.model_event = graph_event, model_event
        self._redraw()

    def toggle_hook_nodes(self) -> None:
        """Show or hide the ``BackwardHookFunctionBackward`` identity nodes that module backward
        hooks add to the graph (hidden by default: their edges are joined through them). The
        cursor stays on its module."""
        self.show_hook_nodes = not self.show_hook_nodes
        self._redraw(keep_cursor=True)
        self._titles()

    def action_toggle_fold(self) -> None:
        """Fold repeated blocks and wide fan-outs of a graph over ``FOLD_NODES`` (the
        default), or draw them all; the cursor stays on its module. On a graph with nothing to
        fold it says so (it changed nothing but the title)."""
        if self.diagram is None:
            self.notify("no autograd graph yet: nothing to fold", timeout=3)
            return
        if self.fold and not fold_titles(self.diagram, True):
            self.notify(f"nothing to fold: this graph has {len(self.diagram.nodes)} nodes, and only graphs over "
                        f"{FOLD_NODES} have their repeated blocks folded", timeout=4)
            return
        self.fold = not self.fold
        self._redraw(keep_cursor=True)
        self._titles()

    def _redraw(self, keep_cursor: bool = False) -> None:
        """Forget every drawing of the graph and lay it out again (depth and zoom kept)."""
        graph_event = self.graph_event
        self._generation += 1
        self._diagrams, self._layouts, self._canvases = {}, {}, {}
        self.canvas, self.diagram = None, None
        if not keep_cursor:
            self.cursor = None
        self._first_view = True
        self._drawn_event, self.hidden_hook_nodes = graph_event, 0
        if graph_event is None or not graph_event.get("nodes"):
            self._set_status("empty", NO_GRAPH)
            return
        if not self.show_hook_nodes:
            self._drawn_event, self.hidden_hook_nodes = without_hook_nodes(graph_event)
        modules = {n.get("module") for n in self._drawn_event["nodes"]} - {None}
        self.max_depth = max((path_depth(m) for m in modules), default=0)
        self._auto_depth = self.depth is None
        if self.depth is not None:
            self.depth = min(self.depth, self.max_depth)
        self._request()

    def highlight_module(self, path: str | None) -> None:
        """Highlight the clusters and nodes of module ``path`` (or the collapsed node that
        holds it) and scroll them into view; ``None`` or ``""`` (the whole model) clears it."""
        self.highlighted = path or None
        self._restyle()
        cursor_module = self.node_module(self.cursor)
        if self.cursor is not None and self.highlighted is not None and cursor_module is not None and \
                _within(cursor_module, self.highlighted):
            region = self.box_region(self.cursor)  # the selection came from here: keep the cursor in view
            if region is not None:
                self.scroll_to_region(region, animate=False, immediate=True, force=True)
        elif self.highlighted is not None:
            self._auto_place()
        self.refresh()

    # --- layout in a worker ---------------------------------------------------------------------

    def _request(self) -> None:
        """Show the canvas for the current depth and zoom, from the cache or from a worker."""
        canvas = self._canvases.get((self.depth, self.zoom))
        if canvas is not None and not self._auto_depth:
            self._install(canvas)
            return
        self._set_status("laying out", "laying out the graph…")
        job = _Job(self._drawn_event, self.model_event, self.depth, self.zoom, self._auto_depth, self.max_depth,
                   dict(self._diagrams), dict(self._layouts), fold=self.fold)
        generation = self._generation
        self.run_worker(lambda: self._run(job, generation), thread=True, exclusive=True, group="graph-layout",
                        exit_on_error=False)

    def _run(self, job: _Job, generation: int) -> None:
        """Worker thread: build, lay out, rasterise; hand the result to the UI thread."""
        result = job.run()
        try:
            self.app.call_from_thread(self._finish, generation, job, result)
        except RuntimeError:  # the app is shutting down
            pass

    def _finish(self, generation: int, job: _Job, result: dict[str, Any]) -> None:
        if generation != self._generation:
            return  # a newer graph arrived meanwhile
        if "problem" in result:
            self._set_status(result["problem"], result["message"])
            return
        depth = result["depth"]
        self._diagrams[depth] = result["diagram"]
        self._layouts[depth] = result["layout"]
        self._canvases[(depth, job.zoom)] = result["canvas"]
        if job.auto and self._auto_depth:  # unless the user chose a depth meanwhile
            self._auto_depth = False
            self.depth = depth
        if (depth, job.zoom) == (self.depth, self.zoom):
            self._install(result["canvas"])

    def _install(self, canvas: Canvas) -> None:
        self.canvas = canvas
        self._shown_depth = self.depth
        self.diagram = self._diagrams.get(self.depth)
        self.virtual_size = Size(canvas.width, canvas.height)
        if self.cursor is not None and (self.cursor not in canvas.boxes or
                                        self.node_module(self.cursor) != self._cursor_module):
            # After a collapse or an expand: the node now showing the cursor's module (ids of
            # collapsed nodes are reused across depths, so the module decides).
            self.cursor = self._node_for_module(self._cursor_module)
        self._restyle()
        self._set_status("ready", "")
        self._place_view(canvas)
        self.refresh(layout=True)  # the scrollbars the new virtual size calls for

    def _place_view(self, canvas: Canvas) -> None:
        """After a zoom keep the same point centred; else show the cursor, the highlighted
        module, or (first view) the first node.

        Scrolls with ``force``: the scrollbars that the new virtual size calls for appear only at
        the next layout, and until then Textual would refuse to scroll along their axis."""
        view = self.scrollable_content_region
        if self._centre is not None:
            cx, cy = self._centre
            self._centre = None
            self.scroll_to(cx * canvas.zoom - view.width / 2, cy * canvas.zoom - view.height / 2,
                           animate=False, immediate=True, force=True)
            return
        region = self.box_region(self.cursor)
        if region is not None:
            self.scroll_to_region(region, animate=False, immediate=True, force=True)
        elif self.highlighted is not None or self._first_view:
            self._auto_place()
        self._first_view = False

    def _auto_place(self) -> None:
        """Place the view where the app puts it by itself (the highlighted module, else the
        first node), and again whenever the pane changes size until the user moves it."""
        canvas = self.canvas
        if canvas is None:
            return
        if self.highlighted is not None:
            self._show_region(self._module_region(self.highlighted))
        elif canvas.order:
            left, _, right, _ = canvas.boxes[canvas.order[0]]
            width = self.scrollable_content_region.width
            self.scroll_to((left + right) // 2 - width // 2, 0, animate=False, immediate=True, force=True)
        self._auto_placed = True

    def on_resize(self) -> None:
        if self._auto_placed:
            self._auto_place()

    def _show_region(self, region: Region | None) -> None:
        """Scroll a module's region into view: centred where it fits, else from its top-left
        corner. The offset depends only on the region and the viewport, never on where the view
        was before, so a selection looks the same whether it came before or after the drawing."""
        if region is None:
            return
        view = self.scrollable_content_region
        x = region.x + (region.width - view.width) // 2 if region.width <= view.width else region.x
        y = region.y + (region.height - view.height) // 2 if region.height <= view.height else region.y
        self.scroll_to(max(0, x), max(0, y), animate=False, immediate=True, force=True)

    def _set_status(self, status: str, message: str) -> None:
        self.status, self.message = status, message
        if status in ("empty", "no dot", "error"):  # while laying out, the old drawing stays
            self.canvas = None
            self.virtual_size = Size(0, 0)
            self.refresh(layout=True)
        self._titles()
        self.refresh()

    def _titles(self) -> None:
        depth = "all" if self.depth is None else f"{self.depth}/{self.max_depth}"
        parts = ["Autograd graph"]
        if self.diagram is not None and self.canvas is not None:
            parts += [f"{len(self.diagram.nodes)} nodes", f"depth {depth}", f"zoom {self.zoom:.0%}"]
            parts += fold_titles(self.diagram, self.fold)
            if self.show_hook_nodes:
                parts.append("hook nodes shown (i)")
            elif self.hidden_hook_nodes:
                parts.append(f"{self.hidden_hook_nodes} hook nodes hidden (i)")
        self.border_title = " · ".join(parts)
        self.border_subtitle = "laying out…" if self.status == "laying out" else ""

    # --- drawing ----------------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        canvas = self.canvas
        if canvas is None:
            if y == 0 and self.message:
                style = MESSAGE if self.status in ("empty", "laying out") else PROBLEM
                return Strip([Segment(f" {self.message}", style)]).crop_extend(0, width, None)
            return Strip.blank(width)
        scroll_x, scroll_y = self.scroll_offset
        row = scroll_y + y
        if row >= canvas.height:
            return Strip.blank(width)
        strip = self._styled.get(row)
        if strip is None:
            strip = canvas.lines[row]
            spans = self._spans.get(row)
            if spans:
                strip = self._styled[row] = _restyled(strip, spans)
        return strip.crop(scroll_x, scroll_x + width).extend_cell_length(width)

    def _restyle(self) -> None:
        """Work out which cells the highlighted module and the cursor restyle, per row."""
        spans: dict[int, list[tuple[int, int, Style]]] = {}
        canvas = self.canvas
        if canvas is not None:
            if self.highlighted is not None:
                for rect in self._module_frames(self.highlighted):
                    _frame_spans(spans, rect, HIGHLIGHT)
                for nid in self._module_nodes(self.highlighted):
                    _box_spans(spans, canvas.boxes[nid], HIGHLIGHT)
            if self.cursor is not None and self.cursor in canvas.boxes:
                _box_spans(spans, canvas.boxes[self.cursor], CURSOR)
        self._spans = spans
        self._styled = {}
        self._titles()

    @property
    def settled(self) -> bool:
        """Nothing under way: the drawing on screen is the one asked for and the scrollbars
        it needs are up (they appear at the layout after the drawing changed)."""
        if self.status == "laying out":
            return False
        if self.canvas is None:
            return True
        room = self.container_size
        return (self.canvas.height <= room.height or self.allow_vertical_scroll) and \
            (self.canvas.width <= room.width or self.allow_horizontal_scroll)

    # --- what is where --------------------------------------------------------------------------

    def _layout(self) -> Layout | None:
        """The layout of the canvas on screen."""
        return self._layouts.get(self._shown_depth) if self.canvas is not None else None

    def node_module(self, nid: str | None) -> str | None:
        """The module of node ``nid`` on screen (``None``: unknown, or outside every module)."""
        layout_ = self._layout()
        if nid is None or layout_ is None or nid not in layout_.nodes:
            return None
        return layout_.nodes[nid].module

    def node_label(self, nid: str) -> str:
        """The one-line label node ``nid`` is drawn with."""
        return self._layouts[self._shown_depth].nodes[nid].label

    def highlighted_nodes(self) -> list[str]:
        """The nodes drawn highlighted (those of the highlighted module)."""
        return self._module_nodes(self.highlighted) if self.highlighted is not None else []

    def _module_frames(self, path: str) -> list[Rect]:
        layout_ = self._layout()
        if layout_ is None or self.canvas is None:
            return []
        return [self.canvas.frames[c.id] for c in layout_.clusters if c.module == path and c.id in self.canvas.frames]

    def _module_nodes(self, path: str) -> list[str]:
        """Nodes of ``path`` or below it; else the collapsed node that holds ``path``."""
        layout_ = self._layout()
        if layout_ is None or self.canvas is None:
            return []
        inside = [nid for nid, n in layout_.nodes.items() if n.module is not None and _within(n.module, path)]
        if inside:
            return inside
        return [nid for nid, n in layout_.nodes.items()
                if n.kind == "collapsed" and n.module is not None and _within(path, n.module)]

    def _node_for_module(self, path: str | None) -> str | None:
        if path is None:
            return None
        nodes = self._module_nodes(path)
        return min(nodes, key=self.canvas.order.index) if nodes and self.canvas is not None else None

    def _module_region(self, path: str | None) -> Region | None:
        if path is None or self.canvas is None:
            return None
        rects = self._module_frames(path) or [self.canvas.boxes[n] for n in self._module_nodes(path)]
        if not rects:
            return None
        left, top = min(r[0] for r in rects), min(r[1] for r in rects)
        right, bottom = max(r[2] for r in rects), max(r[3] for r in rects)
        return Region(left, top, right - left + 1, bottom - top + 1)

    def box_region(self, nid: str | None) -> Region | None:
        """Where node ``nid``'s box is on the canvas."""
        if nid is None or self.canvas is None or nid not in self.canvas.boxes:
            return None
        left, top, right, bottom = self.canvas.boxes[nid]
        return Region(left, top, right - left + 1, bottom - top + 1)

    # --- keys and mouse -------------------------------------------------------------------------

    def action_pan(self, dx: int, dy: int) -> None:
        self._auto_placed = False
        self.scroll_relative(dx * PAN_COLS, dy * PAN_ROWS, animate=False, immediate=True, force=True)

    def action_zoom(self, step: int) -> None:
        index = ZOOMS.index(self.zoom) if self.zoom in ZOOMS else ZOOMS.index(1.0)
        new = ZOOMS[max(0, min(len(ZOOMS) - 1, index + step))]
        if new == self.zoom or self.graph_event is None:
            return
        if self.canvas is not None:
            view = self.scrollable_content_region
            x, y = self.scroll_offset
            self._centre = ((x + view.width / 2) / self.zoom, (y + view.height / 2) / self.zoom)
        self.zoom = new
        self._auto_placed = False
        self._request()

    def action_depth(self, step: int) -> None:
        """``<`` collapses one more level (towards the whole model as one node), ``>`` expands
        one (towards every module open: depth ``None``)."""
        if self.graph_event is None or self.status in ("empty", "no dot", "error"):
            return
        levels: list[int | None] = [*range(self.max_depth + 1), None]
        index = levels.index(self.depth) if self.depth in levels else len(levels) - 1
        new = levels[max(0, min(len(levels) - 1, index + step))]
        if new == self.depth:
            return
        self.depth = new
        self._auto_depth = False
        self._request()

    def action_cycle(self, step: int) -> None:
        if self.canvas is None or not self.canvas.order:
            return
        order = self.canvas.order
        if self.cursor in order:
            index = (order.index(self.cursor) + step) % len(order)
        else:
            index = 0 if step > 0 else len(order) - 1
        self._move_cursor(order[index])

    def action_select(self) -> None:
        if self.cursor is not None:
            self._post_selected(self.cursor)

    def on_mouse_scroll_down(self) -> None:
        self._auto_placed = False

    def on_mouse_scroll_up(self) -> None:
        self._auto_placed = False

    def on_click(self, event: Click) -> None:
        self.focus()
        offset = event.get_content_offset(self)
        if offset is None or self.canvas is None:
            return
        x, y = offset.x + self.scroll_offset.x, offset.y + self.scroll_offset.y
        nid = self.canvas.node_at(x, y)
        if nid is not None:
            self._move_cursor(nid)
            return
        cid = self._frame_title_at(x, y)
        if cid is not None:
            module = next(c.module for c in self._layout().clusters if c.id == cid)
            if module is not None:
                self.post_message(self.Selected(module))

    def _frame_title_at(self, x: int, y: int) -> str | None:
        layout_ = self._layout()
        if layout_ is None or self.canvas is None:
            return None
        return self.canvas.frame_title_at(x, y, {c.id: len(c.title) for c in layout_.clusters})

    def _move_cursor(self, nid: str) -> None:
        self._auto_placed = False
        self.cursor = nid
        self._cursor_module = self.node_module(nid)
        self._restyle()
        region = self.box_region(nid)
        if region is not None:
            self.scroll_to_region(region, animate=False, immediate=True, force=True)
        self.refresh()
        self._post_selected(nid)

    def _post_selected(self, nid: str) -> None:
        module = self.node_module(nid)
        if module is not None:
            self.post_message(self.Selected(module))


class _Job:
    """One layout request, run in a worker thread: only plain data in, plain data out."""

    def __init__(self, graph_event: dict, model_event: dict | None, depth: int | None, zoom: float, auto: bool,
                 max_depth: int, diagrams: dict, layouts: dict, fold: bool = True) -> None:
        self.graph_event, self.model_event, self.fold = graph_event, model_event, fold
        self.depth, self.zoom, self.auto, self.max_depth = depth, zoom, auto, max_depth
        self.diagrams, self.layouts = diagrams, layouts

    def run(self) -> dict[str, Any]:
        """``{"depth", "diagram", "layout", "canvas"}``, or ``{"problem", "message"}``: every
        failure becomes a message in the view, never an exception in the app."""
        try:
            depth = self._auto_depth() if self.auto else self.depth
            diagram = self._diagram(depth)
            laid = self.layouts.get(depth) or layout(diagram)
            return {"depth": depth, "diagram": diagram, "layout": laid, "canvas": rasterise(laid, self.zoom)}
        except DotMissing as exc:
            return {"problem": "no dot", "message": str(exc)}
        except Exception as exc:  # noqa: BLE001 - a malformed event or a graphviz failure: say so
            kind = "" if isinstance(exc, LayoutError | ValueError) else f"{type(exc).__name__}: "
            return {"problem": "error", "message": f"cannot draw the graph: {kind}{exc}"}

    def _diagram(self, depth: int | None) -> Diagram:
        if depth not in self.diagrams:
            built = build_autograd_graph_from_event(self.graph_event, self.model_event, depth=depth)
            # Repeated blocks fold (and wide fan-outs group) as in an export; the depth is the
            # view's own choice (< and >, or _auto_depth), so no automatic depth here.
            self.diagrams[depth] = fit(built, self.model_event, fold=self.fold, budget=FOLD_NODES,
                                       depth=depth, auto_depth=False)
        return self.diagrams[depth]

    def _auto_depth(self) -> int | None:
        """Everything expanded when it has at most ``AUTO_DEPTH_NODES`` nodes, else the
        deepest depth that does."""
        for depth in [None, *range(self.max_depth, -1, -1)]:
            if len(self._diagram(depth).nodes) <= AUTO_DEPTH_NODES:
                return depth
        return 0


def fold_titles(diagram: Diagram, fold: bool) -> list[str]:
    """What the title says of folding: ``2 runs folded: blocks (1-47): 47 × Block… (u)`` when
    something is folded, ``unfolded (u)`` when the user turned folding off, else nothing."""
    if not fold:
        return ["unfolded (u)"]
    runs = [n.data["run"] for n in diagram.nodes.values() if "run" in n.data]
    fans = sum(1 for n in diagram.nodes.values() if "fanout_of" in n.data)
    parts = []
    if runs:
        first = runs[0] if len(runs[0]) <= 40 else runs[0][:39] + "…"
        more = ", …" if len(runs) > 1 else ""
        parts.append(f"{len(runs)} run{'s' if len(runs) > 1 else ''} folded: {first}{more}")
    if fans:
        parts.append(f"{fans} fan-out{'s' if fans > 1 else ''} grouped")
    if parts:
        parts[-1] += " (u: unfold)"
    return parts


def _within(path: str, ancestor: str) -> bool:
    return ancestor == "" or path == ancestor or path.startswith(ancestor + ".")


def _box_spans(spans: dict[int, list], rect: Rect, style: Style) -> None:
    left, top, right, bottom = rect
    for row in range(top, bottom + 1):
        spans.setdefault(row, []).append((left, right + 1, style))


def _frame_spans(spans: dict[int, list], rect: Rect, style: Style) -> None:
    left, top, right, bottom = rect
    spans.setdefault(top, []).append((left, right + 1, style))
    spans.setdefault(bottom, []).append((left, right + 1, style))
    for row in range(top + 1, bottom):
        spans.setdefault(row, []).extend([(left, left + 1, style), (right, right + 1, style)])


def _restyled(strip: Strip, spans: list[tuple[int, int, Style]]) -> Strip:
    """``strip`` with each span's style laid over its cells (clipped to the strip), in order:
    a later span wins where spans overlap."""
    length = strip.cell_length
    cuts = sorted({0, length, *(min(max(c, 0), length) for a, b, _ in spans for c in (a, b))})
    pieces = strip.divide(cuts[1:])
    out = []
    for start, piece in zip(cuts, pieces):
        style = None
        for a, b, span_style in spans:
            if a <= start < b:
                style = span_style if style is None else style + span_style
        out.append(piece if style is None else Strip(list(Segment.apply_style(piece, post_style=style)),
                                                     piece.cell_length))
    return Strip.join(out)

