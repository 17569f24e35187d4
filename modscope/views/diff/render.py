"""The rich report of a ``TraceDiff``: a headline naming the first divergent step and module, notes
(cut-off traces, steps on one side only), structure changes, the firing-order split with
context, a table of the modules in tree order for the step pair in focus (the first divergent
one, else the last), autograd op changes, and, when several steps were compared, the steps that
differ. Cells past the threshold are red; times are shown as B's over A's (forward / backward).
A difference of a sampled figure (an update ratio, norm or NaN/Inf count taken on a sample of a
large tensor's values: ``Number.approx``) is marked ``≈``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rich.table import Table
from rich.text import Text

from .compute import _event_text, _fmt_rel, _fmt_value, _ops_text, step_ranges
from .model import ACTIVATIONS, GRADIENTS, PARAMETERS, ModuleInfo, ModuleStep, StepDiff, TraceDiff

MAX_STEP_ROWS = 12  # divergent steps listed in the steps table


def render(d: TraceDiff) -> Iterator[Any]:
    yield headline(d)
    for note in d.notes:
        yield Text(f"note: {note}", style="yellow")
    if d.structure:
        yield structure_table(d)
    focus = d.focus
    if focus is not None and focus.order is not None:
        yield order_text(focus)
    if focus is not None:
        yield module_table(d, focus)
    if d.graph:
        yield graph_table(d)
    if len(d.steps) > 1:
        yield steps_table(d)


def _side(d: TraceDiff) -> str:
    def one(s: Any) -> str:
        return s.name + (f" ({s.framework})" if s.framework else "")
    return f"A = {one(d.a)}, B = {one(d.b)}"


def _steps_label(s: StepDiff) -> str:
    label = f"step {s.step_a}" if s.step_a == s.step_b else f"step {s.step_a} of A / {s.step_b} of B"
    if "light" in (s.detail_a, s.detail_b):  # (capture.sampling) which side's step had no module events
        label += " (light)" if s.detail_a == s.detail_b else \
            f" ({s.detail_a or 'full'} in A, {s.detail_b or 'full'} in B)"
    return label


def headline(d: TraceDiff) -> Text:
    text = Text()
    compared = len(d.steps)
    if d.first is None:
        text.append("✔ no difference beyond ", style="bold green")
        text.append(f"rtol {d.rtol:g}", style="bold green")
        largest = max(d.steps, key=lambda s: s.max_rel, default=None)
        text.append(f": {compared} step pair{'s' if compared != 1 else ''} compared")
        if largest is not None and largest.max_rel > 0:
            text.append(f"; largest relative difference {_fmt_rel(largest.max_rel, largest.max_approx)} "
                        f"({_steps_label(largest)}, {largest.max_where})")
    else:
        f = d.first
        text.append("✖ diverged", style="bold red")
        if f.step_a is not None or f.step_b is not None:
            if f.step_a == f.step_b or f.step_b is None:
                text.append(f" at step {f.step_a}", style="bold red")
            elif f.step_a is None:
                text.append(f" at step {f.step_b} of B", style="bold red")
            else:
                text.append(f" at step {f.step_a} of A / {f.step_b} of B", style="bold red")
        if f.path is not None:
            text.append(" in module ", style="bold red")
            text.append(f.path or "(root)", style="bold red underline")
        text.append(f": {f.message}")
    text.append(f"\n{_side(d)}", style="dim")
    return text


def structure_table(d: TraceDiff) -> Table:
    table = Table(title="Structure", title_justify="left")
    for header in ("Change", "Kind", "Name", "A", "B"):
        table.add_column(header)
    style = {"added": "green", "removed": "red", "changed": "yellow"}
    for c in d.structure:
        table.add_row(Text(c.change, style=style[c.change]), c.what, c.name or "(root)", c.a or "–", c.b or "–")
    return table


def order_text(s: StepDiff) -> Text:
    o = s.order
    assert o is not None
    text = Text()
    text.append(f"Firing order parts at event {o.position} of {_steps_label(s)}:\n", style="bold")
    for label, context in (("A", o.context_a), ("B", o.context_b)):
        text.append(f"  {label}:\n", style="bold")
        for i, key in enumerate(context, start=o.start):
            here = i == o.position
            text.append(("  ▶ " if here else "    ") + f"{i:>4}  {_event_text(key)}\n",
                        style="bold red" if here else "")
        if o.start + len(context) <= o.position:
            text.append(f"  ▶ {o.position:>4}  (the order ends)\n", style="bold red")
    return text


# (header, categories) of the module table's number columns
_COLUMNS = (("Forward", ACTIVATIONS), ("Backward", GRADIENTS), ("Params", PARAMETERS))


def _cell(m: ModuleStep | None, categories: tuple[str, ...]) -> Text:
    if m is None:
        return Text("–", style="dim")
    numbers = [m.worst[c] for c in categories if c in m.worst]
    if not numbers:
        return Text("–", style="dim")
    worst = max(numbers, key=lambda n: (n.diverged, n.rel))
    if worst.rel == 0:
        return Text("≈0" if worst.approx else "0", style="dim")
    return Text(_fmt_rel(worst.rel, worst.approx), style="bold red" if worst.diverged else "")


def _time_cell(m: ModuleStep | None) -> Text:
    """Forward and backward time of B over A's (``1.02 / 0.97``)."""
    parts, diverged = [], False
    for category in ("fwd_time", "bwd_time"):
        n = None if m is None else m.worst.get(category)
        parts.append("–" if n is None or not n.a else f"{n.b / n.a:.2f}")
        diverged |= n is not None and n.diverged
    return Text(" / ".join(parts), style="bold red" if diverged else "dim")


def _other_cell(d: TraceDiff, info: ModuleInfo, m: ModuleStep | None) -> Text:
    text = Text()
    if info.cls_a is None:
        text.append("only in B ", style="green")
    elif info.cls_b is None:
        text.append("only in A ", style="red")
    changes = [c for c in d.structure if c.path == info.path and c.what != "model"]
    if changes and info.cls_a is not None and info.cls_b is not None:
        text.append(f"{len(changes)} structure change{'s' if len(changes) > 1 else ''} ", style="yellow")
    if m is not None:
        for category in ("shape", "calls", "params"):
            n = m.worst.get(category)
            if n is not None:
                text.append(f"{n.what}: {n.a} vs {n.b} ", style="bold red")
        if m.first is not None and m.first.category not in ("shape", "calls", "params"):
            n = m.first
            text.append(f"{n.what}: {_fmt_value(n.a, n.approx_a)} vs {_fmt_value(n.b, n.approx_b)} ", style="red")
    if any(g.path == info.path for g in d.graph):
        g = next(g for g in d.graph if g.path == info.path)
        text.append(f"ops {_ops_text(g)}", style="magenta")
    return text


def module_table(d: TraceDiff, s: StepDiff) -> Table:
    """The modules in tree order with their largest relative difference per column in step pair
    ``s`` (Params: the worst of norm, gradient norm and update ratio of the module's own
    parameters); the first divergent module is marked."""
    title = f"Modules, {_steps_label(s)}" + (" (incomplete)" if s.partial else "") + f" (rtol {d.rtol:g})"
    table = Table(title=title, title_justify="left")
    table.add_column("Module")
    for header, _ in _COLUMNS:
        table.add_column(header, justify="right")
    table.add_column("Time B/A\nfwd / bwd", justify="right")
    table.add_column("First difference", min_width=12)
    first = d.first.path if d.first is not None else None
    for info in d.modules:
        m = s.modules.get(info.path)
        name = Text("  " * info.depth + (info.path.rsplit(".", 1)[-1] or "(root)"))
        is_first = first is not None and info.path == first
        if is_first:
            name.stylize("bold red")
        elif m is not None and m.diverged:
            name.stylize("red")
        cls = info.cls_a if info.cls_a == info.cls_b or info.cls_b is None else \
            info.cls_b if info.cls_a is None else f"{info.cls_a}→{info.cls_b}"
        if cls:
            name.append(f" {cls}", style="cyan")
        if is_first:
            name.append(" ◀ first", style="bold red")
        table.add_row(name, *[_cell(m, cats) for _, cats in _COLUMNS], _time_cell(m), _other_cell(d, info, m))
    return table


def graph_table(d: TraceDiff) -> Table:
    table = Table(title="Autograd ops (B against A)", title_justify="left")
    for header in ("Added in B", "Removed in B"):
        table.add_column(header)
    for g in d.graph:
        added = ", ".join(f"{op}" + (f" x{n}" if n > 1 else "") for op, n in g.added.items())
        removed = ", ".join(f"{op}" + (f" x{n}" if n > 1 else "") for op, n in g.removed.items())
        table.add_row("(outside modules)" if g.path is None else g.path or "(root)",
                      Text(added or "–", style="green"), Text(removed or "–", style="red"))
    return table


def steps_table(d: TraceDiff) -> Table | Text:
    divergent = [s for s in d.steps if s.diverged]
    if not divergent:
        return Text(f"{len(d.steps)} step pairs compared ({step_ranges(s.step_a for s in d.steps)}), none differ",
                    style="dim")
    table = Table(title=f"Steps that differ: {len(divergent)} of {len(d.steps)}", title_justify="left")
    for header in ("Step", "First difference", "Largest rel", "Where"):
        table.add_column(header, justify="right" if header in ("Step", "Largest rel") else "left")
    for s in divergent[:MAX_STEP_ROWS]:
        f = s.first
        assert f is not None
        table.add_row(_steps_label(s).removeprefix("step "), f"{f.path or '(root)'}: {f.message}",
                      _fmt_rel(s.max_rel, s.max_approx), s.max_where)
    if len(divergent) > MAX_STEP_ROWS:
        table.add_row("…", f"{len(divergent) - MAX_STEP_ROWS} more", "", "")
    return table
