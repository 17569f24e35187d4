"""Training at a glance: status, step, loss and metrics with sparklines, learning rates,
steps/s, events/s, events dropped, errors."""

from __future__ import annotations

import textwrap

from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from .module_tree import sparkline

STATUS_STYLE = {"running": "bold green", "paused": "bold yellow", "ended": "bold cyan",
                "disconnected": "bold red", "waiting": "dim"}


class TrainingPanel(Static):
    DEFAULT_CSS = """
    TrainingPanel { border: round $primary 60%; height: auto; min-height: 8; padding: 0 1; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.border_title = "Training"
        self._rows = -1

    def show(self, snap: dict) -> None:
        table = Table.grid(padding=(0, 1))
        table.add_column(style="dim", no_wrap=True, min_width=6)  # the names are never cut
        table.add_column(no_wrap=True, overflow="ellipsis")
        # the sparklines fit the panel: name (6) + gap + value (~10) + the bars
        spark = max(6, min(28, self.content_region.width - 18)) if self.content_region.width else 28
        status = Text(snap["status"], style=STATUS_STYLE.get(snap["status"], ""))
        # A reason too long for the status line goes on lines of its own, wrapped to the panel:
        # a breakpoint names a parameter (``grad norm 12.3 of block.conv1.weight > 10``), and
        # was cut on one line (``block.conv.weig``).
        room = self.content_region.width - 7  # the names' column and the gap
        reason = snap["reason"]
        if reason and (room <= 8 or status.cell_len + 2 + len(reason) <= room):
            status.append(f"  {reason}", style="yellow")
            reason = ""
        table.add_row("status", status)
        for line in textwrap.wrap(reason, room, break_on_hyphens=False) if reason else []:
            table.add_row("", Text(line, style="yellow"))
        step = str(snap["step"])
        if snap.get("detail") == "light":  # (capture.sampling) the module views show the last full step
            last = snap.get("last_full")
            step += " · light" + (f" (full: {last})" if last is not None else "")
        elif snap.get("detail") == "full":
            step += " · full"
        if snap["lrs"]:
            step += f"   {snap['optimizer']} lr " + ", ".join(f"{lr:.3g}" for lr in snap["lrs"] if lr is not None)
        table.add_row("step", step)
        for name, values in list(snap["metrics"].items())[:4]:
            last = next((v for v in reversed(values) if v is not None), None)
            row = Text(f"{last:.4g}  " if last is not None else "–  ")
            row.append(sparkline(values, spark), style="magenta")
            table.add_row(name, row)
        if snap["status"] == "paused":  # the last rate would read as if it still ran at it
            table.add_row("speed", Text(f"paused (was {snap['steps_s']:.1f} steps/s)", style="yellow"))
        else:
            table.add_row("speed", f"{snap['steps_s']:.1f} steps/s   {snap['events_s']:,.0f} events/s")
        if snap.get("threads"):  # modscope chose the program's thread count: it shows in its numbers
            table.add_row("threads", Text(snap["threads"], style="dim"))
        dropped = Text(f"{snap['events']:,} events")
        if snap["dropped"]:
            dropped.append(f"   {snap['dropped']:,} dropped", style="bold yellow")
            if snap["skipped"]:
                dropped.append(f" (viewer sampled {snap['skipped']:,})", style="yellow")
        table.add_row("events", dropped)
        if snap["errors"]:
            table.add_row("errors", Text(f"{snap['errors']} (press x)", style="bold red"))
        # A new layout of the whole screen only when the panel's height changes: at ten
        # updates a second, re-laying out every widget was most of the viewer's CPU time.
        self.update(table, layout=table.row_count != self._rows)
        self._rows = table.row_count
