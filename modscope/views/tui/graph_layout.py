"""A ``Diagram`` drawn with text: graphviz lays it out, this module turns the layout into
character cells.

Two stages, which the graph view caches separately:

- ``layout(diagram)`` writes the diagram as DOT with every node's size given in character cells
  (a column is 0.1 in, a row 0.2 in: a terminal cell is about twice as tall as it is wide), runs
  graphviz's real ``dot -Tjson`` and reads back node centres, cluster boxes and edge splines in
  (fractional) columns and rows: a ``Layout``. This is the slow part (graphviz): run it off the
  UI thread.
- ``rasterise(layout, zoom)`` maps the layout to whole cells at ``zoom`` and draws, in this order,
  clusters (light dashed boxes titled with the module), edges (orthogonal polylines through the
  splines' on-curve points, with ``─ │ ╭ ╮ ╰ ╯``, junctions where edges meet and an arrowhead at
  the target) and nodes (boxes with their label) on top, into one ``Strip`` per row: a
  ``Canvas``. Below zoom 1 nodes shrink to one-row chips. Tens of milliseconds for hundreds of
  nodes; the grid is NumPy arrays, filled by slices.

Nothing here imports the engine: the input is a ``Diagram`` built from a ``graph`` event.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from ..diagrams.diagram import Diagram, Node
from ..diagrams.dot import DotFailed
from ..diagrams.dot import run_dot as run_dot_as

LayoutError = DotFailed  # what the graph pane reports when dot fails: the one error of diagrams.dot

COL_PT, ROW_PT = 7.2, 14.4  # graphviz points per column and per row (72 points = 1 inch)
NODE_ROWS = 3  # a node box: border, label, border
LABEL_PAD = 4  # border and one space on each side of a label
MAX_LABEL = 48  # longer labels are cut with "…"
# Op names shortened on screen (the exported diagrams keep them whole): the tracer's full
# backward hooks add one of these at every module boundary.
SHORT_OPS = {"BackwardHookFunctionBackward": "BackwardHook"}
# Cluster margin 22 pt (1.5 rows, 3 columns) keeps a node's border off its cluster's; the
# cluster title's font is 12 pt Courier, 7.2 pt per character: one column per character, so
# graphviz reserves exactly the width the title needs.
GRAPH_ATTRS = 'rankdir=TB nodesep=0.25 ranksep=0.55 fontname="Courier" fontsize=12 margin=0 pad=0'
NODE_ATTRS = 'shape=box fixedsize=true label=""'
CLUSTER_ATTRS = 'margin=22 labeljust=l fontname="Courier" fontsize=12'

# Style codes of the cell grid.
BLANK, FRAME, TITLE, EDGE, ARROW, OP, LEAF, OUTPUT, COLLAPSED, SAVED = range(10)
STYLES: tuple[Style | None, ...] = (
    None,
    Style(color="grey42"),
    Style(color="grey62", italic=True),
    Style(color="grey58"),
    Style(color="grey85", bold=True),
    Style(color="grey89"),
    Style(color="sky_blue2"),
    Style(color="green3", bold=True),
    Style(color="medium_purple1", bold=True),
    Style(color="dark_orange"),
)
KIND_STYLE = {"op": OP, "leaf": LEAF, "output": OUTPUT, "collapsed": COLLAPSED, "saved": SAVED}
CHIP_STYLES = {code: Style(color="grey93", bgcolor=bg) for code, bg in
               ((OP, "grey27"), (LEAF, "dodger_blue3"), (OUTPUT, "dark_green"), (COLLAPSED, "purple4"),
                (SAVED, "dark_orange3"))}
CHIP_OFFSET = 16  # style code of a one-row node chip: CHIP_OFFSET + its kind's code

# Edge cells: a bit per side the line leaves the cell by, then the character for each set.
N, E, S, W = 1, 2, 4, 8
LINE_CHARS = np.array([" ", "│", "─", "╰", "│", "│", "╭", "├", "─", "╯", "─", "┴", "╮", "┤", "┬", "┼"])
ARROWS = {"top": "▼", "bottom": "▲", "left": "►", "right": "◄"}
TEES = {"top": "┴", "bottom": "┬", "left": "┤", "right": "├"}
DOUBLE_TEES = {"top": "╧", "bottom": "╤", "left": "╢", "right": "╟"}  # on a collapsed module's border
BOX = {"single": "┌┐└┘─│", "double": "╔╗╚╝═║"}
FRAME_CHARS = "┌┐└┘┄┆"


# --- what the terminal shows of a node -------------------------------------------------------

def dims(shape: Iterable[int]) -> str:
    """``64×10`` (``scalar`` for a shape without dimensions)."""
    shape = list(shape)
    return "×".join(str(int(d)) for d in shape) if shape else "scalar"


def node_label(node: Node) -> str:
    """One line: ``AddmmBackward0 64×10``, ``fc1.weight 16×8``, ``output 64×10``, or a
    collapsed module ``blocks.0 (Block) · 7 ops, 4 params``; cut to ``MAX_LABEL`` cells."""
    data = node.data
    if node.kind == "op":
        text = f"{SHORT_OPS.get(data['op'], data['op'])} " + ", ".join(dims(s) for s in data["shape"])
    elif node.kind == "leaf":
        text = f"{data['path']} {dims(data['shape'])}" if data.get("path") else dims(data["shape"])
    elif node.kind in ("output", "saved"):
        text = f"{node.lines[0]} {dims(data['shape'])}"
    elif node.kind == "collapsed":
        cls = f" ({data['cls']})" if data.get("cls") else ""
        text = f"{node.lines[0]}{cls} · {node.lines[-1]}"
    else:
        text = " ".join(node.lines)
    return _one_cell_per_char(shorten(text, MAX_LABEL))


def node_module(node: Node) -> str | None:
    """The module a node belongs to: a parameter's owner, an op's creator, a collapsed
    module; ``None`` for the output and for ops made outside every module."""
    path = node.data.get("path")
    if node.kind == "leaf" and path:
        return path.rpartition(".")[0]
    return node.data.get("module")


def shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


def _one_cell_per_char(text: str) -> str:
    # The grid holds one character per cell: a wide character (CJK, emoji) would shift the row.
    if cell_len(text) == len(text):
        return text
    return "".join(ch if cell_len(ch) == 1 else "?" for ch in text)


# --- layout (graphviz) -------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class PlacedNode:
    """A node at zoom 1: centre in (fractional) columns and rows, size in cells."""

    id: str
    label: str
    kind: str
    module: str | None
    cx: float
    cy: float
    w: int
    h: int


@dataclass(frozen=True, slots=True)
class PlacedCluster:
    """A cluster's box at zoom 1 (columns, rows); ``level`` 0 is outermost."""

    id: str
    title: str
    module: str | None
    level: int
    x0: float
    y0: float
    x1: float
    y1: float


@dataclass(frozen=True, slots=True)
class PlacedEdge:
    """An edge's spline as on-curve points from the tail to the arrow tip (columns, rows)."""

    source: str
    target: str
    points: tuple[tuple[float, float], ...]


@dataclass
class Layout:
    """What graphviz made of a diagram, in cells at zoom 1."""

    nodes: dict[str, PlacedNode]
    clusters: list[PlacedCluster]
    edges: list[PlacedEdge]
    width: float
    height: float
    seconds: float = 0.0  # how long dot took


def layout(diagram: Diagram, dot: str = "dot") -> Layout:
    """Lay ``diagram`` out with graphviz's ``dot`` (found on ``PATH``). Raises ``DotMissing``
    when ``dot`` is not installed and ``LayoutError`` when it fails or runs too long
    (``diagrams.dot.DOT_TIMEOUT_S``)."""
    labels = {nid: node_label(node) for nid, node in diagram.nodes.items()}
    source = layout_source(diagram, labels)
    started = time.perf_counter()
    data = run_dot(source, dot)
    result = parse_layout(data, diagram, labels)
    result.seconds = time.perf_counter() - started
    return result


def layout_source(diagram: Diagram, labels: dict[str, str]) -> str:
    """The DOT that ``layout`` runs: the diagram's nodes sized in cells (no text: the
    terminal draws the labels), its clusters nested as ``cluster_<i>`` in insertion order with
    their titles (which graphviz makes room for), its edges."""
    out = [f"digraph G {{\n graph [{GRAPH_ATTRS}]\n node [{NODE_ATTRS}]\n edge [arrowsize=0.5]\n"]
    sub, held = diagram.children_of()
    names = {cid: f"cluster_{i}" for i, cid in enumerate(diagram.clusters)}

    def nodes(cid: str | None) -> None:
        for node in held.get(cid, ()):
            width = (len(labels[node.id]) + LABEL_PAD) * COL_PT / 72
            out.append(f' "{node.id}" [width={width:.4f} height={NODE_ROWS * ROW_PT / 72:.4f}]\n')

    nodes(None)
    # Nested blocks without recursion: ("open", id) and ("close", id) markers.
    stack = [("open", c.id) for c in reversed(sub.get(None, ()))]
    while stack:
        action, cid = stack.pop()
        if action == "close":
            out.append(" }\n")
            continue
        title = _quoted(f"  {_one_cell_per_char(diagram.clusters[cid].label)}  ")
        out.append(f" subgraph {names[cid]} {{\n graph [label={title} {CLUSTER_ATTRS}]\n")
        nodes(cid)
        stack.append(("close", cid))
        stack.extend(("open", c.id) for c in reversed(sub.get(cid, ())))
    out.extend(f' "{e.source}" -> "{e.target}"\n' for e in diagram.edges)
    out.append("}\n")
    return "".join(out)


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def run_dot(source: str, dot: str = "dot") -> dict:
    """``dot -Tjson`` on ``source`` (``diagrams.dot.run_dot``): the parsed JSON."""
    return json.loads(run_dot_as(source, "json", dot))


def parse_layout(data: dict, diagram: Diagram, labels: dict[str, str]) -> Layout:
    """Read node centres, cluster boxes and edge splines out of ``dot -Tjson`` output,
    converted to columns and rows (graphviz's y axis points up; rows go down)."""
    _, _, width_pt, height_pt = (float(v) for v in data["bb"].split(","))
    to_cell = _Converter(height_pt)
    objects = data.get("objects", [])
    n_sub = data.get("_subgraph_cnt", 0)
    cluster_ids = list(diagram.clusters)
    nodes: dict[str, PlacedNode] = {}
    clusters: list[PlacedCluster] = []
    by_gvid: dict[int, str] = {}
    for obj in objects:
        if obj["_gvid"] < n_sub:
            if obj["name"].startswith("cluster_") and "bb" in obj:
                clusters.append(_cluster(obj, diagram, cluster_ids, to_cell))
            continue
        nid = obj["name"]
        by_gvid[obj["_gvid"]] = nid
        node = diagram.nodes[nid]
        cx, cy = to_cell.point(obj["pos"])
        label = labels[nid]
        nodes[nid] = PlacedNode(nid, label, node.kind, node_module(node), cx, cy, len(label) + LABEL_PAD, NODE_ROWS)
    edges = [PlacedEdge(by_gvid[e["tail"]], by_gvid[e["head"]], to_cell.spline(e.get("pos", "")))
             for e in data.get("edges", [])]
    return Layout(nodes, clusters, edges, width_pt / COL_PT, height_pt / ROW_PT)


def _cluster(obj: dict, diagram: Diagram, cluster_ids: list[str], to_cell: _Converter) -> PlacedCluster:
    cid = cluster_ids[int(obj["name"].removeprefix("cluster_"))]
    cluster = diagram.clusters[cid]
    level, parent = 0, cluster.parent
    while parent is not None:
        level, parent = level + 1, diagram.clusters[parent].parent
    x0, y0, x1, y1 = (float(v) for v in obj["bb"].split(","))
    (c0, r1), (c1, r0) = to_cell.xy(x0, y0), to_cell.xy(x1, y1)
    title = _one_cell_per_char(cluster.label)
    return PlacedCluster(cid, title, cluster.data.get("module"), level, c0, r0, c1, r1)


@dataclass(frozen=True, slots=True)
class _Converter:
    height_pt: float

    def xy(self, x: float, y: float) -> tuple[float, float]:
        return x / COL_PT, (self.height_pt - y) / ROW_PT

    def point(self, text: str) -> tuple[float, float]:
        x, y = text.split(",")[:2]
        return self.xy(float(x), float(y))

    def spline(self, pos: str) -> tuple[tuple[float, float], ...]:
        """The on-curve points of a ``pos`` spline (``[e,x,y] [s,x,y] p0 p1 ... p3n``), then
        the arrow tip: the points the edge is drawn through."""
        controls, tip = [], None
        for part in pos.split():
            if part.startswith("e,"):
                tip = self.point(part[2:])
            elif not part.startswith("s,"):
                controls.append(self.point(part))
        points = controls[::3] if controls else []
        if tip is not None:
            points.append(tip)
        return tuple(points)


# --- rasterising ---------------------------------------------------------------------------------

@dataclass
class Canvas:
    """A laid-out diagram at one zoom: one ``Strip`` per row and where everything is.

    Rectangles are ``(left, top, right, bottom)``, inclusive, in canvas cells."""

    lines: list[Strip]
    width: int
    height: int
    zoom: float
    boxes: dict[str, tuple[int, int, int, int]]  # node id -> its box
    frames: dict[str, tuple[int, int, int, int]]  # cluster id -> its frame
    order: list[str]  # node ids in reading order (top to bottom, left to right)
    seconds: float = 0.0  # how long rasterising took
    edges_drawn: int = 0

    def node_at(self, x: int, y: int) -> str | None:
        """The node whose box holds cell ``(x, y)``."""
        for nid, (left, top, right, bottom) in self.boxes.items():
            if left <= x <= right and top <= y <= bottom:
                return nid
        return None

    def frame_title_at(self, x: int, y: int, titles: dict[str, int]) -> str | None:
        """The cluster whose title (``titles``: cluster id -> title length) is at ``(x, y)``."""
        for cid, (left, top, right, _) in self.frames.items():
            if y == top and left + 1 <= x <= min(left + 2 + titles.get(cid, 0), right):
                return cid
        return None

    def text(self) -> list[str]:
        """The canvas as plain text, one string per row (tests and debugging)."""
        return [strip.text for strip in self.lines]


ZOOMS = (0.5, 0.75, 1.0, 1.5, 2.0)
MARGIN = 1  # blank cells around the drawing


def rasterise(result: Layout, zoom: float = 1.0) -> Canvas:
    """Draw ``result`` at ``zoom`` (``1``: boxes exactly as graphviz placed them; ``< 1``:
    nodes become one-row chips; ``> 1``: more room between boxes)."""
    started = time.perf_counter()
    grid = _Grid(math.ceil(result.width * zoom) + 2 * MARGIN + 1, math.ceil(result.height * zoom) + 2 * MARGIN + 1)
    compact = zoom < 1
    boxes = {nid: _box(node, zoom, compact, grid) for nid, node in result.nodes.items()}
    frames = {c.id: grid.frame_rect(c, zoom) for c in result.clusters}
    levels = sorted(result.clusters, key=lambda c: c.level)
    for c in levels:
        grid.draw_frame(frames[c.id])
    router = _Router(grid, boxes)
    tees = []
    drawn = 0
    for edge in result.edges:
        if edge.source in boxes and edge.target in boxes and edge.source != edge.target:
            tee = router.draw(edge, result.nodes, zoom, with_tee=not compact)
            drawn += 1
            if tee is not None:
                tees.append(tee)
    grid.flush_lines()
    for c in levels:  # over the edges that cross it: a title stays readable
        grid.draw_title(frames[c.id], c.title)
    for nid, node in result.nodes.items():
        grid.draw_node(boxes[nid], node, compact)
    for x, y, ch in tees:
        grid.put(x, y, ch, None)
    order = sorted(boxes, key=lambda nid: (boxes[nid][1], boxes[nid][0]))
    lines = grid.strips()
    return Canvas(lines, grid.width, grid.height, zoom, boxes, frames, order, time.perf_counter() - started, drawn)


def _box(node: PlacedNode, zoom: float, compact: bool, grid: _Grid) -> tuple[int, int, int, int]:
    w = max(3, round(node.w * zoom)) if compact else node.w
    h = 1 if compact else node.h
    left = _round(node.cx * zoom - w / 2) + MARGIN
    top = _round(node.cy * zoom - h / 2) + MARGIN
    left = min(max(left, 0), max(grid.width - w, 0))
    top = min(max(top, 0), max(grid.height - h, 0))
    return left, top, left + w - 1, top + h - 1


def _round(v: float) -> int:
    return math.floor(v + 0.5)  # Python's round() sends halves to even: boxes would jitter


class _Grid:
    """Characters and style codes, one per cell, plus the edge direction bits."""

    def __init__(self, width: int, height: int) -> None:
        self.width, self.height = width, height
        self.chars = np.full((height, width), " ", dtype="<U1")
        self.style = np.zeros((height, width), dtype=np.uint8)
        self.dirs = np.zeros((height, width), dtype=np.uint8)
        self.arrows: list[tuple[int, int, str]] = []

    def put(self, x: int, y: int, ch: str, code: int | None) -> None:
        if 0 <= x < self.width and 0 <= y < self.height:
            self.chars[y, x] = ch
            if code is not None:
                self.style[y, x] = code

    def frame_rect(self, c: PlacedCluster, zoom: float) -> tuple[int, int, int, int]:
        left, top = _round(c.x0 * zoom) + MARGIN, _round(c.y0 * zoom) + MARGIN
        right, bottom = _round(c.x1 * zoom) + MARGIN - 1, _round(c.y1 * zoom) + MARGIN - 1
        right, bottom = min(right, self.width - 1), min(bottom, self.height - 1)
        return left, top, max(right, left + 1), max(bottom, top + 1)

    def draw_frame(self, rect: tuple[int, int, int, int]) -> None:
        left, top, right, bottom = rect
        tl, tr, bl, br, h, v = FRAME_CHARS
        chars, style = self.chars, self.style
        chars[top, left:right + 1] = h
        chars[bottom, left:right + 1] = h
        chars[top:bottom + 1, left] = v
        chars[top:bottom + 1, right] = v
        chars[top, left], chars[top, right], chars[bottom, left], chars[bottom, right] = tl, tr, bl, br
        for rows, cols in ((top, slice(left, right + 1)), (bottom, slice(left, right + 1)),
                           (slice(top, bottom + 1), left), (slice(top, bottom + 1), right)):
            style[rows, cols] = FRAME

    def draw_title(self, rect: tuple[int, int, int, int], title: str) -> None:
        left, top, right, _ = rect
        room = right - left - 3  # corner, space, title, space, corner
        if room >= 2:
            text = f" {shorten(title, room)} "
            self.chars[top, left + 1:left + 1 + len(text)] = list(text)
            self.style[top, left + 1:left + 1 + len(text)] = TITLE

    def flush_lines(self) -> None:
        """Turn the collected edge direction bits (and arrowheads) into characters."""
        mask = self.dirs > 0
        self.chars[mask] = LINE_CHARS[self.dirs[mask]]
        self.style[mask] = EDGE
        for x, y, ch in self.arrows:
            self.put(x, y, ch, ARROW)

    def draw_node(self, box: tuple[int, int, int, int], node: PlacedNode, compact: bool) -> None:
        left, top, right, bottom = box
        code = KIND_STYLE.get(node.kind, OP)
        width = right - left + 1
        if compact:
            text = shorten(node.label, width).center(width)
            self.chars[top, left:right + 1] = list(text)
            self.style[top, left:right + 1] = CHIP_OFFSET + code
            return
        tl, tr, bl, br, h, v = BOX["double" if node.kind == "collapsed" else "single"]
        self.chars[top:bottom + 1, left:right + 1] = " "
        self.style[top:bottom + 1, left:right + 1] = code
        self.chars[top, left:right + 1] = h
        self.chars[bottom, left:right + 1] = h
        self.chars[top:bottom + 1, left] = v
        self.chars[top:bottom + 1, right] = v
        self.chars[top, left], self.chars[top, right] = tl, tr
        self.chars[bottom, left], self.chars[bottom, right] = bl, br
        text = shorten(node.label, width - LABEL_PAD)
        row = (top + bottom) // 2
        start = left + 2
        self.chars[row, start:start + len(text)] = list(text)

    def strips(self) -> list[Strip]:
        """One ``Strip`` per row: each run of cells with one style becomes one segment."""
        styles = _segment_styles()
        height, width = self.height, self.width
        if not width:
            return [Strip([], 0) for _ in range(height)]
        run_start = np.ones((height, width), dtype=bool)
        run_start[:, 1:] = self.style[:, 1:] != self.style[:, :-1]
        ys, xs = np.nonzero(run_start)  # row by row, left to right
        codes = self.style[ys, xs].tolist()
        bounds = np.searchsorted(ys, np.arange(height + 1)).tolist()
        xs = xs.tolist()
        rows = self.chars.view(f"<U{width}").ravel()
        lines = []
        for y in range(height):
            text = str(rows[y]).ljust(width)
            a, b = bounds[y], bounds[y + 1]
            cuts = [*xs[a:b], width]
            segments = [Segment(text[cuts[i]:cuts[i + 1]], styles[codes[a + i]]) for i in range(b - a)]
            lines.append(Strip(segments, width))
        return lines


def _segment_styles() -> list[Style | None]:
    styles: list[Style | None] = [None] * 256
    styles[:len(STYLES)] = STYLES
    for code, style in CHIP_STYLES.items():
        styles[CHIP_OFFSET + code] = style
    return styles


class _Router:
    """Routes edges as orthogonal polylines through the spline's on-curve points, around
    node boxes where it can, and records their cells in the grid's direction bits."""

    def __init__(self, grid: _Grid, boxes: dict[str, tuple[int, int, int, int]]) -> None:
        self.grid = grid
        self.boxes = boxes
        self.blocked = np.zeros((grid.height, grid.width), dtype=bool)
        for left, top, right, bottom in boxes.values():
            self.blocked[top:bottom + 1, left:right + 1] = True

    def draw(self, edge: PlacedEdge, nodes: dict[str, PlacedNode], zoom: float,
             with_tee: bool) -> tuple[int, int, str] | None:
        """Route ``edge``, mark its cells and its arrowhead; returns the tee to put on the
        source's border (``None`` when it has none).

        Which side of a box an edge leaves or enters is read in graphviz's own geometry (zoom
        1), where the spline ends exactly on the box: rounding at other zooms cannot flip it."""
        src, dst = self.boxes[edge.source], self.boxes[edge.target]
        raw = list(edge.points) or [(nodes[edge.source].cx, nodes[edge.source].cy),
                                    (nodes[edge.target].cx, nodes[edge.target].cy)]
        first = raw[1] if len(raw) > 1 and _inside_node(nodes[edge.source], raw[0]) else raw[0]
        out_side = _side(nodes[edge.source], first)
        in_side = _side(nodes[edge.target], raw[-1])
        points = [(x * zoom + MARGIN, y * zoom + MARGIN) for x, y in raw]
        start = _port(src, (first[0] * zoom + MARGIN, first[1] * zoom + MARGIN), out_side)
        end = _port(dst, points[-1], in_side)
        middle = [(_round(x), _round(y)) for x, y in points[1:-1]]
        middle = [p for p in middle if not _inside(src, p, 1) and not _inside(dst, p, 1)]
        path = self._polyline([start, *middle, end])
        self._mark(path, out_side)
        self.grid.arrows.append((end[0], end[1], ARROWS[in_side]))
        if not with_tee:
            return None
        tee = _tee_cell(src, start, out_side)
        tees = DOUBLE_TEES if nodes[edge.source].kind == "collapsed" else TEES
        return (*tee, tees[out_side]) if tee is not None else None

    def _polyline(self, points: list[tuple[int, int]]) -> list[tuple[int, int]]:
        cells: list[tuple[int, int]] = [points[0]]
        for a, b in zip(points, points[1:]):
            cells.extend(self._segment(a, b)[1:])
        return _without_loops(cells)

    def _segment(self, a: tuple[int, int], b: tuple[int, int]) -> list[tuple[int, int]]:
        """Cells from ``a`` to ``b``: vertical, horizontal, vertical, the horizontal run at the
        middle row or, when that crosses a node, at the nearest row that does not; else
        horizontal, vertical, horizontal; else the middle-row route anyway. At most
        ``DETOURS`` rows and columns are tried, so a long blocked edge stays cheap."""
        (ax, ay), (bx, by) = a, b
        if ax == bx or ay == by:
            return _run(a, b)
        mid = (ay + by) // 2
        for r in _nearest(range(min(ay, by), max(ay, by) + 1), mid):
            cells = _run(a, (ax, r)) + _run((ax, r), (bx, r))[1:] + _run((bx, r), b)[1:]
            if self._clear(cells):
                return cells
        for c in _nearest(range(min(ax, bx), max(ax, bx) + 1), (ax + bx) // 2):
            cells = _run(a, (c, ay)) + _run((c, ay), (c, by))[1:] + _run((c, by), b)[1:]
            if self._clear(cells):
                return cells
        return _run(a, (ax, mid)) + _run((ax, mid), (bx, mid))[1:] + _run((bx, mid), b)[1:]

    def _clear(self, cells: list[tuple[int, int]]) -> bool:
        xs = np.fromiter((c[0] for c in cells), dtype=np.int64, count=len(cells))
        ys = np.fromiter((c[1] for c in cells), dtype=np.int64, count=len(cells))
        inside = (xs >= 0) & (xs < self.grid.width) & (ys >= 0) & (ys < self.grid.height)
        return not self.blocked[ys[inside], xs[inside]].any()

    def _mark(self, path: list[tuple[int, int]], out_side: str) -> None:
        """Set the direction bits of every cell on ``path`` (the first cell also points back
        at its source box, so the line meets the tee on the border)."""
        g = self.grid
        back = {"bottom": N, "top": S, "right": W, "left": E}[out_side]
        ys, xs, bits = [path[0][1]], [path[0][0]], [back]
        for (x0, y0), (x1, y1) in zip(path, path[1:]):
            if x1 > x0:
                out, into = E, W
            elif x1 < x0:
                out, into = W, E
            elif y1 > y0:
                out, into = S, N
            else:
                out, into = N, S
            ys += [y0, y1]
            xs += [x0, x1]
            bits += [out, into]
        ya, xa, ba = np.array(ys), np.array(xs), np.array(bits, dtype=np.uint8)
        ok = (xa >= 0) & (xa < g.width) & (ya >= 0) & (ya < g.height)
        np.bitwise_or.at(g.dirs, (ya[ok], xa[ok]), ba[ok])


DETOURS = 12


def _nearest(values: range, centre: int) -> list[int]:
    """The ``DETOURS`` values nearest to ``centre``, nearest first."""
    return sorted(values, key=lambda v: (abs(v - centre), v))[:DETOURS]


def _run(a: tuple[int, int], b: tuple[int, int]) -> list[tuple[int, int]]:
    """The cells of a straight horizontal or vertical run from ``a`` to ``b``, both included."""
    (ax, ay), (bx, by) = a, b
    if ay == by:
        step = 1 if bx >= ax else -1
        return [(x, ay) for x in range(ax, bx + step, step)]
    step = 1 if by >= ay else -1
    return [(ax, y) for y in range(ay, by + step, step)]


def _without_loops(cells: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``cells`` with every loop cut out (a later visit to a cell drops what lay between)."""
    out: list[tuple[int, int]] = []
    where: dict[tuple[int, int], int] = {}
    for cell in cells:
        if cell in where:
            for dropped in out[where[cell] + 1:]:
                del where[dropped]
            del out[where[cell] + 1:]
            continue
        where[cell] = len(out)
        out.append(cell)
    return out


def _inside(box: tuple[int, int, int, int], p: tuple[float, float], grow: int = 0) -> bool:
    left, top, right, bottom = box
    return left - grow <= p[0] <= right + grow and top - grow <= p[1] <= bottom + grow


def _inside_node(node: PlacedNode, p: tuple[float, float]) -> bool:
    return abs(p[0] - node.cx) < node.w / 2 - 0.5 and abs(p[1] - node.cy) < node.h / 2 - 0.5


def _side(node: PlacedNode, p: tuple[float, float]) -> str:
    """The side of ``node``'s box (zoom 1) that faces ``p``."""
    dx = (p[0] - node.cx) / (node.w / 2)
    dy = (p[1] - node.cy) / (node.h / 2)
    if abs(dy) >= abs(dx):
        return "bottom" if dy >= 0 else "top"
    return "right" if dx >= 0 else "left"


def _port(box: tuple[int, int, int, int], p: tuple[float, float], side: str) -> tuple[int, int]:
    """The cell just outside ``box`` on ``side``, as near to ``p`` as that side allows."""
    left, top, right, bottom = box
    if side in ("top", "bottom"):
        x = _clamp(_round(p[0]), left + 1, right - 1, (left + right) // 2)
        return (x, bottom + 1) if side == "bottom" else (x, top - 1)
    y = _clamp(_round(p[1]), top + 1, bottom - 1, (top + bottom) // 2)
    return (right + 1, y) if side == "right" else (left - 1, y)


def _clamp(v: int, lo: int, hi: int, fallback: int) -> int:
    if lo > hi:  # a box with no inner cell on that axis (a one-row chip): its first cell
        return fallback
    return min(max(v, lo), hi)


def _tee_cell(box: tuple[int, int, int, int], start: tuple[int, int], side: str) -> tuple[int, int] | None:
    left, top, right, bottom = box
    x, y = start
    cell = {"bottom": (x, bottom), "top": (x, top), "right": (right, y), "left": (left, y)}[side]
    if cell in ((left, top), (right, top), (left, bottom), (right, bottom)):
        return None  # never on a corner
    return cell
