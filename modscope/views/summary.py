"""The summary ``Trace.summary()`` and ``modscope summary`` print: a torchinfo-like table with a
row per module call, then an estimated memory block (``SummaryReport``, a rich renderable that
fits the width it is drawn at).

Rows are the module calls of one forward pass (the last step's first top-level call of each
top-level module: a model called twice in a step is summarised once), in call order, indented
by nesting, as torchinfo lists them; a module called again (a reused block, an RNN cell) has a
row per call, marked as a repeat, its parameters counted at its first call only. Modules the
forward did not call follow, with no shapes. Figures per call come from ``views.report``
(multiply-adds and bytes saved for backward from the graph event or the module's class; times
from the call's events); the footer's totals count shared parameters once.

Columns (``COLUMNS``) can be chosen; left to itself the table leaves out the columns of
``FIT_ORDER``, in that order, while it is wider than where it is drawn (80 columns when piped)
and says which in its caption.

The notebook (``Trace.summary()``'s and a trace's ``_repr_html_``) and ``modscope report`` draw the
same rows, columns and memory block as HTML (``views.html.fragments.summary_html``) from
``SummaryReport.grid``: a page scrolls, so it shows every column unless some are chosen.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.table import Table
from rich.text import Text

from .report import _figures, _fmt_bytes, _fmt_count, _fmt_ms, _fmt_params, _mult_adds, own_backward

# column key -> header. "module" is always shown, first.
COLUMNS: dict[str, str] = {
    "module": "Module", "type": "Type", "input": "Input shape", "output": "Output shape", "params": "Params",
    "trainable": "Trainable", "mult_adds": "Mult-adds", "fwd": "Fwd ms", "bwd": "Bwd ms", "saved": "Saved for bwd",
}
# Left out first to last while the table is wider than its width (the columns torchinfo shows by
# default, input, output and params, go last).
FIT_ORDER = ("trainable", "saved", "bwd", "fwd", "type", "mult_adds", "input")
NO_BACKWARD = "—"
DTYPE_BYTES = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "int64": 8, "int32": 4, "int16": 2,
               "int8": 1, "uint8": 1, "bool": 1, "complex64": 8, "complex128": 16, "float8_e4m3fn": 1,
               "float8_e5m2": 1, "uint16": 2, "uint32": 4, "uint64": 8}


class SummaryColumnError(ValueError):
    """A column name the summary does not have; the message lists the ones it has."""


def parse_columns(columns: Iterable[str] | str | None) -> tuple[str, ...] | None:
    """Column keys from names (keys or headers, any case; a string is comma-separated), in the
    table's order, ``module`` always first; None for the default (every column, fitted).
    Raises ``SummaryColumnError`` naming an unknown column and listing the valid ones."""
    if columns is None:
        return None
    names = columns.split(",") if isinstance(columns, str) else list(columns)
    by_name = {k: k for k in COLUMNS} | {h.lower(): k for k, h in COLUMNS.items()} | {"mult-adds": "mult_adds"}
    chosen = set()
    for name in names:
        key = by_name.get(str(name).strip().lower())
        if key is None:
            raise SummaryColumnError(f"unknown summary column {str(name).strip()!r} "
                                     f"(columns: {', '.join(COLUMNS)})")
        chosen.add(key)
    return tuple(k for k in COLUMNS if k == "module" or k in chosen)


@dataclass
class Row:
    """One module call (or a module the forward did not call: ``called`` False)."""

    path: str
    call: int
    depth: int
    parent: int | None  # index of the enclosing call's row
    cls: str = "?"
    called: bool = True
    repeat: bool = False  # the module was called before in this forward
    input: list | None = None
    output: list | None = None
    fwd_ns: int = 0
    bwd_ns: int = 0
    bwd_pre_t: int | None = None
    bwd_end_t: int | None = None
    backward: bool = False  # a backward event fired for it
    own_backward: bool = False  # ... and it was one of its own (``report.own_backward``)
    macs: int = 0
    saved: int = 0
    children: list[int] = field(default_factory=list)


def _first_shape(summaries: list) -> list | None:
    return next((s["shape"] for s in summaries if s is not None), None)


def call_rows(events: list[dict], figures: tuple | None = None, mult_adds: list | None = None
              ) -> tuple[dict, dict[str, dict[str, Any]], dict[str, int], list[Row]]:
    """``views.report``'s figures (model, per path, totals) and the summary's rows; ``figures``:
    those figures when the caller has them already (a page draws its module tree from them), and
    ``mult_adds`` the multiply-add items ``report._figures`` gave with them."""
    if figures is None:
        mult_adds = []
        figures = _figures(events, mult_adds)
    model, figs, totals = figures
    cls = {m["path"]: m["cls"] for m in model["modules"]}
    steps = [e["step"] for e in events if e["kind"] == "forward"]
    last = max(steps) if steps else None
    rows: list[Row] = []
    index: dict[tuple[str, int], int] = {}
    stack: list[int] = []
    tops: set[str] = set()
    skipping = 0  # depth inside a second top-level call of a module already summarised
    seen: set[str] = set()
    for e in events:
        kind = e["kind"]
        if e["step"] != last or kind not in ("forward_pre", "forward", "backward_pre", "backward"):
            continue
        key = (e["path"], e["call"])
        if kind == "forward_pre":
            if skipping or (not stack and e["path"] in tops):
                skipping += 1
                continue
            if not stack:
                tops.add(e["path"])
            parent = stack[-1] if stack else None
            row = Row(e["path"], e["call"], len(stack), parent, cls.get(e["path"], "?"),
                      repeat=e["path"] in seen, input=_first_shape(e["inputs"]))
            seen.add(e["path"])
            index[key] = len(rows)
            if parent is not None:
                rows[parent].children.append(len(rows))
            stack.append(len(rows))
            rows.append(row)
        elif kind == "forward":
            if skipping:
                skipping -= 1
                continue
            if stack and key in index and stack[-1] == index[key]:
                stack.pop()
                row = rows[index[key]]
                row.output, row.fwd_ns = _first_shape(e["outputs"]), e["dur_ns"]
        elif key in index:
            row = rows[index[key]]
            if kind == "backward_pre":
                row.bwd_pre_t = e["t"] if row.bwd_pre_t is None else row.bwd_pre_t
            else:
                row.backward = True
                row.own_backward |= own_backward(e)
                row.bwd_ns += e["dur_ns"]
                row.bwd_end_t = e["t"]
    # a container's backward time is the span from its backward_pre to the end of the last
    # backward within its call (its own hook fires before its children's when its inputs need
    # no gradient); children come after their parent, so walk back
    for row in reversed(rows):
        if row.parent is not None and row.bwd_end_t is not None:
            parent = rows[row.parent]
            parent.bwd_end_t = max(parent.bwd_end_t or row.bwd_end_t, row.bwd_end_t)
    for row in rows:
        if row.bwd_pre_t is not None and row.bwd_end_t is not None:
            row.bwd_ns = max(row.bwd_ns, row.bwd_end_t - row.bwd_pre_t)
    _attribute(mult_adds if mult_adds is not None else _mult_adds(events, model, last), rows, index)
    called = {r.path for r in rows}
    for m in model["modules"]:
        if m["path"] not in called:
            depth = m["path"].count(".") + (1 if m["path"] else 0)
            rows.append(Row(m["path"], 0, depth, None, m["cls"], called=False))
    return model, figs, totals, rows


def _attribute(items: list[tuple[str, int | None, int, int]], rows: list[Row],
               index: dict[tuple[str, int], int]) -> None:
    """Multiply-adds and saved bytes to the row of the call that made them (its first call's
    when the graph did not say which; the nearest enclosing module's when it has no row), and
    to every row enclosing it."""
    first: dict[str, int] = {}
    for i, row in enumerate(rows):
        first.setdefault(row.path, i)
    for path, call, macs, saved in items:
        i = index.get((path, call)) if call is not None else None
        if i is None:
            parts = path.split(".") if path else []
            candidates = [path] + [".".join(parts[:k]) for k in range(len(parts) - 1, -1, -1)]
            i = next((first[p] for p in candidates if p in first), None)
        while i is not None:
            rows[i].macs += macs
            rows[i].saved += saved
            i = rows[i].parent


def _name(row: Row, rows: list[Row]) -> str:
    if row.path == "":
        name = "(root)"
    elif row.parent is None:
        name = row.path if row.called else row.path.rsplit(".", 1)[-1]
    else:
        outer = rows[row.parent].path
        name = row.path if outer and not row.path.startswith(outer + ".") else row.path[len(outer) + 1 if outer else 0:]
    name = "  " * row.depth + name
    return f"{name} (call {row.call + 1})" if row.repeat else name


def _bwd_cell(row: Row) -> str:
    if row.backward and not row.own_backward:
        return NO_BACKWARD
    return _fmt_ms(row.bwd_ns)


def _cells(row: Row, rows: list[Row], figs: dict[str, dict[str, Any]]) -> dict[str, str]:
    f = figs.get(row.path)
    if row.repeat:
        params = trainable = "(repeat)"
    elif f is None:
        params = trainable = "--"
    else:
        params, trainable = _fmt_params(f), _fmt_count(f["trainable"])
    return {"module": _name(row, rows), "type": row.cls,
            "input": str(row.input) if row.input is not None else ("--" if row.called else "not called"),
            "output": str(row.output) if row.output is not None else "--",
            "params": params, "trainable": trainable, "mult_adds": _fmt_count(row.macs),
            "fwd": _fmt_ms(row.fwd_ns), "bwd": _bwd_cell(row), "saved": _fmt_bytes(row.saved) if row.saved else "--"}


def _footer(rows: list[Row], totals: dict[str, int]) -> dict[str, str]:
    tops = [r for r in rows if r.parent is None and r.called]
    return {"module": "Total", "type": "", "input": "", "output": "", "params": f"{totals['params']:,}",
            "trainable": f"{totals['trainable']:,}", "mult_adds": _fmt_count(totals["mult_adds"]),
            "fwd": _fmt_ms(sum(r.fwd_ns for r in tops)), "bwd": _fmt_ms(sum(r.bwd_ns for r in tops)),
            "saved": _fmt_bytes(sum(r.saved for r in tops))}


LEFT = ("module", "type")  # the columns aligned left (the others are numbers and shapes)


@dataclass
class Grid:
    """The summary's cells, every column: one dict (column key -> text) per row of ``rows``,
    and the footer's. The text table (``table_of``) and the HTML one
    (``views.html.fragments.summary_html``) both draw from it."""

    title: str
    rows: list[Row]
    cells: list[dict[str, str]]
    footer: dict[str, str]


def grid_of(model: dict, figs: dict, totals: dict, rows: list[Row]) -> Grid:
    return Grid(f"{model['model']} summary", rows, [_cells(r, rows, figs) for r in rows], _footer(rows, totals))


def table_of(grid: Grid, columns: tuple[str, ...]) -> Table:
    """The summary table with ``columns`` (keys of ``COLUMNS``)."""
    table = Table(title=grid.title, title_justify="left", show_footer=True)
    for key in columns:
        table.add_column(COLUMNS[key], footer=grid.footer[key], justify="left" if key in LEFT else "right",
                         overflow="ellipsis" if key in LEFT else "fold")
    for cells in grid.cells:
        table.add_row(*(cells[k] for k in columns))
    return table


# --- memory -----------------------------------------------------------------------------------


def _tensor_bytes(items: list[dict]) -> int:
    return sum(t["numel"] * DTYPE_BYTES.get(t["dtype"].removeprefix("torch."), 4) for t in items)


def memory_lines(events: list[dict], model: dict, rows: list[Row]) -> list[tuple[str, int | None, str]]:
    """``(what, bytes or None for unknown, how it is estimated)`` for the memory block."""
    params = model["params"]
    trainable = [p for p in params if p["requires_grad"]]
    steps = [e for e in events if e["kind"] == "step"]
    measured = next((e for e in reversed(steps) if isinstance(e.get("state_bytes"), int)), None)
    if measured is not None:
        optimizer = (measured["state_bytes"], f"{measured['optimizer']}'s state tensors, measured after its step")
    elif steps:
        optimizer = (None, f"the trace of {steps[-1]['optimizer']}'s step does not say")
    else:
        optimizer = (None, "no optimizer step in this trace (Adam keeps 2 values per trainable "
                           "parameter, SGD with momentum 1)")
    graph = any(e["kind"] == "graph" for e in events)
    saved = sum(r.saved for r in rows if r.parent is None and r.called)
    return [
        ("parameters", _tensor_bytes(params), f"{sum(p['numel'] for p in params):,} values, shared counted once"),
        ("buffers", _tensor_bytes(model["buffers"]), "running statistics and other buffers"),
        ("gradients", _tensor_bytes(trainable), "one per trainable parameter"),
        ("optimizer state", *optimizer),
        ("saved for backward", saved if graph else None,
         "the tensors the traced forward's autograd graph kept (outputs included), from its graph event"
         if graph else "no autograd graph recorded (graph=False, or no forward needed a gradient)"),
    ]


def memory_table(lines: list[tuple[str, int | None, str]]) -> Table:
    """The memory block: what, how many bytes, how it is estimated (the last column wraps)."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(no_wrap=True)
    grid.add_column(justify="right", no_wrap=True)
    grid.add_column(style="dim")
    grid.title, grid.title_justify, grid.title_style = "Memory (estimated)", "left", "bold"
    for what, n, how in lines:
        grid.add_row(what, _fmt_bytes(n) if n is not None else Text("unknown", style="yellow"), how)
    known, how = memory_total(lines)
    grid.add_row(Text("total", style="bold"), Text(_fmt_bytes(known), style="bold"), how)
    return grid


def memory_total(lines: list[tuple[str, int | None, str]]) -> tuple[int, str]:
    """The memory block's total: the bytes known, and what it is (``at least`` when some are not)."""
    known = sum(n for _, n, _ in lines if n is not None)
    unknown = [what for what, n, _ in lines if n is None]
    return known, f"at least: {', '.join(unknown)} unknown" if unknown else "the items above"


# --- the renderable ---------------------------------------------------------------------------


class SummaryReport:
    """The summary as a rich renderable: the table, fitted to ``width`` (or to where it is drawn)
    by leaving out columns when ``columns`` is None, its legend, then the memory block."""

    def __init__(self, events: list[dict], columns: Iterable[str] | str | None = None,
                 width: int | None = None, note: str = "", figures: tuple | None = None,
                 mult_adds: list | None = None) -> None:
        self.columns = parse_columns(columns)
        self.width, self.note = width, note
        self.model, self.figs, self.totals, self.rows = call_rows(events, figures, mult_adds)
        self.grid = grid_of(self.model, self.figs, self.totals, self.rows)
        self.memory = memory_lines(events, self.model, self.rows)

    def table(self, width: int | None = None, console: Console | None = None) -> Table:
        """The table at ``width`` (None: every column asked for, however wide)."""
        return self._fitted(width, console)[0]

    def _fitted(self, width: int | None, console: Console | None) -> tuple[Table, tuple[str, ...]]:
        columns = self.columns or tuple(COLUMNS)
        left_out: list[str] = []
        table = table_of(self.grid, columns)
        if width is not None and self.columns is None:
            console = console or Console(width=width)
            for key in FIT_ORDER:
                if console.measure(table, options=console.options.update_width(10_000)).maximum <= width:
                    break
                left_out.append(key)
                columns = tuple(k for k in columns if k != key)
                table = table_of(self.grid, columns)
        notes = [self.note] if self.note else []
        if left_out:
            notes.append(f"left out to fit {width} columns: {', '.join(left_out)} (columns= or --columns "
                         f"chooses, width= or --width widens)")
        table.caption = "\n".join(notes) or None
        table.caption_justify = "left"
        return table, columns

    def legend(self, columns: tuple[str, ...]) -> Text:
        """What the table's marks mean, a line each (dim)."""
        return Text("\n".join(self.legend_lines(columns)), style="dim")

    def legend_lines(self, columns: tuple[str, ...]) -> list[str]:
        lines = []
        if any(r.repeat for r in self.rows):
            lines.append("(call N): a module called again in this forward; its parameters are counted at its "
                         "first call")
        if "bwd" in columns and any(r.backward and not r.own_backward
                                                                   for r in self.rows):
            lines.append(f"{NO_BACKWARD} in Bwd ms: no backward of its own: none of its inputs needs a gradient, "
                         "so torch runs its backward hook as soon as its output's gradient arrives")
        return lines

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = min(self.width, options.max_width) if self.width else options.max_width
        table, columns = self._fitted(width, console)
        parts: list[Any] = [table]
        legend = self.legend(columns)
        if legend.plain:
            parts.append(legend)
        parts += [Text(""), memory_table(self.memory)]
        yield Group(*parts)
