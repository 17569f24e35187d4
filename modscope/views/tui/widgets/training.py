"""Training at a glance: status, step, loss and metrics with sparklines, learning rates,
steps/s, events/s, events dropped, errors."""

from __future__ import annotations

import textwrap

from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from .module_tree import sparkline

STATUS_STYLE = {"running": "bold green", "pausing": "yellow", "paused": "bold yellow", "ended": "bold cyan",
                "disconnected": "bold red", "waiting": "dim"}


class TrainingPanel(Static):
    DEFAULT_CSS = """
    TrainingPanel { border: round $primary 60%; height: auto; min-height: 8; padding: 0 1; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.border_title = "Training"
        self._rows = -1
        self._snap: dict | None = None

    def on_resize(self) -> None:
        # the rows are fitted to the width at show(): a run that has ended shows no new snapshot
        if self._snap is not None:
            self.show(self._snap)

    def show(self, snap: dict) -> None:
        self._snap = snap
        table = Table.grid(padding=(0, 1))
        table.add_column(style="dim", no_wrap=True, min_width=6)  # (widened below: names are never cut)
        table.add_column(no_wrap=True, overflow="ellipsis")
        # the sparklines fit the panel: name (6) + gap + value (~10) + the bars
        spark = max(6, min(28, self.content_region.width - 18)) if self.content_region.width else 28
        status = Text(snap["status"], style=STATUS_STYLE.get(snap["status"], ""))
        # A reason too long for the status line goes on lines of its own, wrapped to the panel:
        # a breakpoint names a parameter (``grad norm 12.3 of block.conv1.weight > 10``), and
        # was cut on one line (``block.conv.weig``).
        room = self.content_region.width - 8  # the names' column and the gap
        reason = snap["reason"]
        if reason and (room <= 8 or status.cell_len + 2 + len(reason) <= room):
            status.append(f"  {reason}", style="yellow")
            reason = ""

        def add(name: str, first: str, *more: tuple[str, str]) -> None:
            """A row: ``first``, then each ``(separator, part)`` of ``more``; a part that does not
            fit the panel goes on a line of its own (rich crops a no_wrap cell without a mark:
            ``AdamW lr 6.85e``)."""
            lines = [first]
            for sep, part in more:
                if room > 8 and len(lines[-1]) + len(sep) + len(part) > room:
                    lines.append(part)
                else:
                    lines[-1] += sep + part
            for i, line in enumerate(lines):
                table.add_row("" if i else name, line)

        table.add_row("status", status)
        for line in textwrap.wrap(reason, room, break_on_hyphens=False) if reason else []:
            table.add_row("", Text(line, style="yellow"))
        step: list[tuple[str, str]] = []
        if snap.get("detail") == "light":  # (capture.sampling) the module views show the last full step
            last = snap.get("last_full")
            step.append((" ", "· light" + (f" (full: {last})" if last is not None else "")))
        elif snap.get("detail") == "full":
            step.append((" ", "· full"))
        if snap["lrs"]:
            step.append(("   ", f"{snap['optimizer']} lr " + ", ".join(f"{lr:.3g}" for lr in snap["lrs"]
                                                                     if lr is not None)))
        add("step", str(snap["step"]), *step)
        for name, values in list(snap["metrics"].items())[:4]:
            last = next((v for v in reversed(values) if v is not None), None)
            row = Text(f"{last:.4g}  " if last is not None else "–  ")
            row.append(sparkline(values, spark), style="magenta")
            table.add_row(name, row)
        if snap["status"] == "paused":  # the last rate would read as if it still ran at it
            table.add_row("speed", Text(f"paused (was {snap['steps_s']:.1f} steps/s)", style="yellow"))
        else:
            add("speed", f"{snap['steps_s']:.1f} steps/s", ("   ", f"{snap['events_s']:,.0f} events/s"))
        if snap.get("threads"):  # modscope chose the program's thread count: it shows in its numbers
            # wrapped to the panel like the reason: at 100x30 it was cut at "(l: w"
            lines = textwrap.wrap(snap["threads"], room, break_on_hyphens=False) if room > 8 else [snap["threads"]]
            for i, line in enumerate(lines):
                table.add_row("" if i else "threads", Text(line, style="dim"))
        dropped = Text(f"{snap['events']:,} events")
        if snap["dropped"]:
            dropped.append(f"   {snap['dropped']:,} dropped", style="bold yellow")
            if snap["skipped"]:
                dropped.append(f" (viewer sampled {snap['skipped']:,})", style="yellow")
        table.add_row("events", dropped)
        if snap["errors"]:
            table.add_row("errors", Text(f"{snap['errors']} (press x)", style="bold red"))
        # rich shrinks every no_wrap column of a table wider than its room: a name never below its
        # length ("threa…" beside a long step line)
        table.columns[0].min_width = max(6, *(len(str(c)) for c in table.columns[0].cells))
        # A new layout of the whole screen only when the panel's height changes: at ten
        # updates a second, re-laying out every widget was most of the viewer's CPU time.
        self.update(table, layout=table.row_count != self._rows)
        self._rows = table.row_count
