"""Parameters and buffers of the selected module, updated in place (keyed rows and cells):
name, shape, dtype, numel, requires_grad, persistent, norm, grad norm, update ratio, mean/std
(``≈``: an estimate from a sample of a large tensor's values; NaN/Inf counts of a sampled tensor
are its sample's, ``≈`` too)."""

from __future__ import annotations

from rich.cells import cell_len
from rich.text import Text
from textual import events
from textual.widgets import DataTable

from ..state import ParamInfo

COLUMNS = ("name", "shape", "dtype", "numel", "grad", "persist", "norm", "grad norm", "update", "mean", "std")
# Left out, in this order, while the table is wider than its pane (the subtitle names them; z
# gives the table the whole screen): the live numbers stay on screen.
OPTIONAL = ("persist", "numel", "grad", "dtype", "std")


SPREAD = "ranks: grad norm"


def spread_cells(spread: dict[str, tuple[float, float, int]], parted: list[str]) -> dict[str, Text]:
    """The rank column's cells: each parameter's gradient norm across ranks, ``min–max ×max/min``
    (red past 1%), and ``≠`` on a parameter whose value parted from the other ranks' (this rank's
    fingerprint differs at that step)."""
    cells = {}
    for path, (lo, hi, n) in spread.items():
        ratio = hi / lo if lo > 0 else (1.0 if hi == 0 else float("inf"))
        text = Text(f"{lo:.3g}" if hi == lo else f"{lo:.3g}–{hi:.3g}")
        text.append(f" ×{ratio:.2f}" if ratio != float("inf") else " ×∞", style="bold red" if ratio > 1.01 else "dim")
        text.append(f" /{n}", style="dim")
        cells[path] = text
    for path in parted:
        cells.setdefault(path, Text("–", style="dim")).append(" ≠", style="bold white on red")
    return cells


def _num(value: float | None, fmt: str = ".3g") -> str | Text:
    if value is None:
        return Text("–", style="dim")
    return f"{value:{fmt}}"


def _approx(value: float | None, sampled: int | None, fmt: str = ".3g") -> str | Text:
    """``value``, with ``≈`` before it when it was taken on a sample of the values (a large
    tensor's: the ``params`` item's ``update_sampled`` or ``stats_sampled``), an estimate."""
    if value is None or not sampled:
        return _num(value, fmt)
    return f"≈{value:{fmt}}"


def _update(p: ParamInfo) -> str | Text:
    """The update ratio (``≈``: measured on a sample, ``update_sampled``)."""
    return _approx(p.update_ratio, p.update_sampled, ".2e")


def row_cells(p: ParamInfo) -> tuple:
    name = Text(p.path.rsplit(".", 1)[-1], style="bold" if not p.is_buffer else "italic")
    if p.nan or p.inf:  # a sampled tensor's counts are its sample's (``stats_sampled``): ≈
        name.append(f" {'≈' if p.stats_sampled else ''}{p.nan} NaN {p.inf} Inf", style="bold white on red")
    return (name, "×".join(map(str, p.shape)) or "scalar", p.dtype, f"{p.numel:,}",
            "buffer" if p.is_buffer else ("yes" if p.requires_grad else "no"),
            ("yes" if p.persistent else "no") if p.is_buffer else "–",
            _approx(p.norm, p.stats_sampled), _num(p.grad_norm), _update(p), _approx(p.mean, p.stats_sampled),
            _approx(p.std, p.stats_sampled))


class ParamsTable(DataTable):
    """Rows keyed by parameter path; ``show`` rebuilds only when the module changes and
    otherwise updates the cells whose text changed."""

    DEFAULT_CSS = """
    ParamsTable { border: round $primary 60%; height: 1fr; }
    ParamsTable:focus { border: round $accent; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(zebra_stripes=True, cursor_type="row", **kwargs)
        self.border_title = "Parameters & buffers"
        self.module_path: str | None = None
        self._cells: dict[str, tuple] = {}
        self.deltas: dict[str, Text] | None = None  # a comparison's Δ cells (``d``); None: no Δ column
        self.spreads: dict[str, Text] | None = None  # grad norms across ranks (``spread_cells``); None: one rank
        self.step: int | None = None  # the step whose values are shown (None: the latest)
        self.shown: tuple[str, ...] = COLUMNS  # the columns on screen (``OPTIONAL`` ones left out to fit)
        self._params: list[ParamInfo] = []  # the rows' parameters as last shown

    def on_mount(self) -> None:
        self.add_columns(*COLUMNS)

    def _all_columns(self) -> tuple[str, ...]:
        extra = (("Δ",) if self.deltas is not None else ()) + ((SPREAD,) if self.spreads is not None else ())
        return (*COLUMNS, *extra)

    def _set_columns(self, names: tuple[str, ...]) -> None:
        """Put these columns up (the rows are rebuilt at the next ``show``)."""
        self.clear(columns=True)
        self.add_columns(*names)
        self.shown = names
        self.module_path = None

    def _fitting(self, rows: list[tuple]) -> tuple[str, ...]:
        """The columns that fit the pane with these rows (full cells): all of them, else
        without the ``OPTIONAL`` ones, in order, until they fit (all of them before the pane
        is laid out)."""
        names = self._all_columns()
        room = self.scrollable_content_region.width
        if room <= 0:
            return names
        pad = 2 * self.cell_padding
        widths = {name: max([cell_len(name), *(cell_len(str(row[i])) for row in rows if i < len(row))]) + pad
                  for i, name in enumerate(names)}  # (rows made before a Δ column came have no Δ cell)
        shown = list(names)
        for name in OPTIONAL:
            if sum(widths[n] for n in shown) <= room:
                break
            shown.remove(name)
        return tuple(shown)

    def _visible(self, cells: tuple) -> tuple:
        names = self._all_columns()
        return tuple(cell for name, cell in zip(names, cells) if name in self.shown)

    def on_resize(self, event: events.Resize) -> None:
        """Another width (a resize, z, another layout): the columns that fit it."""
        if self._fitting(list(self._cells.values())) != self.shown and self.module_path is not None:
            path = self.module_path
            self._set_columns(self._fitting(list(self._cells.values())))
            self.show(path, self._params)

    def set_deltas(self, deltas: dict[str, Text] | None) -> None:
        """Show a Δ column with these cells (``None``: remove it); the rows are rebuilt at the
        next ``show``."""
        if deltas == self.deltas:
            return
        had = self.deltas is not None
        self.deltas = deltas
        if (deltas is not None) != had:
            self._set_columns(self._fitting(list(self._cells.values())))
        self.module_path = None

    def set_spreads(self, spreads: dict[str, Text] | None) -> None:
        """Show a column of each parameter's gradient norm across ranks (``None``: remove it);
        the rows are rebuilt at the next ``show``."""
        if spreads == self.spreads:
            return
        had = self.spreads is not None
        self.spreads = spreads
        if (spreads is not None) != had:
            self._set_columns(self._fitting(list(self._cells.values())))
        self.module_path = None

    def _row(self, p: ParamInfo) -> tuple:
        cells = row_cells(p)
        if self.deltas is not None:
            cells = (*cells, self.deltas.get(p.path, Text("–", style="dim")))
        if self.spreads is not None:
            cells = (*cells, self.spreads.get(p.path, Text("–", style="dim")))
        return cells

    def show(self, module_path: str, params: list[ParamInfo]) -> None:
        self._params = params
        rows = {p.path: self._row(p) for p in params}
        fitting = self._fitting(list(rows.values()))
        if fitting != self.shown:
            self._set_columns(fitting)
        if module_path != self.module_path or set(self._cells) != set(rows):
            self.module_path = module_path
            self.clear()
            self._cells = rows
            for path, cells in rows.items():
                self.add_row(*self._visible(cells), key=path)
            self._set_title()
            hidden = [n for n in self._all_columns() if n not in self.shown]
            if not params:
                self.border_subtitle = "this module owns no parameters or buffers"
            elif hidden:
                self.border_subtitle = f"{', '.join(hidden)} left out to fit (z: all)"
            else:
                self.border_subtitle = ""
            self._size_now()
            return
        columns = list(self.columns)
        updated = False
        for path, full in rows.items():
            cells, old = self._visible(full), self._visible(self._cells[path])
            for i, (new_cell, old_cell) in enumerate(zip(cells, old)):
                if str(new_cell) != str(old_cell):
                    # a value wider than its column (``–`` until the first step) widens it
                    self.update_cell(path, columns[i], new_cell, update_width=len(str(new_cell)) > len(str(old_cell)))
                    updated = True
            self._cells[path] = full
        if updated:
            # DataTable keys its render caches on an update counter: after an update every
            # entry is dead, yet kept (up to 10,000 cells). Live values update ten times a
            # second: the caches grew without end, and with them every full garbage collection.
            self._clear_caches()

    def set_step(self, step: int | None) -> None:
        """Name the step whose values the rows show (``None``: the latest) in the title."""
        if step != self.step:
            self.step = step
            self._set_title()

    def _set_title(self) -> None:
        title = "Parameters & buffers"
        if self.module_path is not None:
            title += f" · {self.module_path or '(root)'}"
        self.border_title = title + (f" · step {self.step}" if self.step is not None else "")

    def _size_now(self) -> None:
        """Size the columns and the table for the new rows now, as DataTable would do when idle:
        then the table's new size is laid out with the key that selected the module, in one
        paint, not in a second one after the app is idle (a tree move took two)."""
        # DataTable's private names, read defensively: without them sizing waits for idle
        new_rows = getattr(self, "_new_rows", None)
        update = getattr(self, "_update_dimensions", None)
        if not getattr(self, "_require_update_dimensions", False) or new_rows is None or update is None:
            return
        self._require_update_dimensions = False
        rows = new_rows.copy()
        new_rows.clear()
        update(rows)

    async def _on_idle(self, event: events.Idle) -> None:
        """After DataTable has sized its columns to new cells, drop the lines it drew before:
        its line cache is not keyed on column widths, so rows drawn before the sizing kept the
        header's widths (``weig``, ``float``, ``2.67e-``) until something else redrew them."""
        # DataTable's private names, read defensively: a Textual without them only loses this fix
        resized = getattr(self, "_require_update_dimensions", False) or bool(getattr(self, "_updated_cells", ()))
        await super()._on_idle(event)
        clear_caches = getattr(self, "_clear_caches", None)
        if resized and clear_caches is not None:
            clear_caches()
            self.refresh()
