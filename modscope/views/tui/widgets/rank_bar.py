"""The rank bar of a run of several ranks: which rank the views show (``r`` switches; a click picks
one), and each rank's last event and how long ago, so a rank that stops sending (hung in a
collective, killed) stands out; a rank whose parameters parted from the others' is flagged with
the step and parameter. Hidden for a single process."""

from __future__ import annotations

from typing import Any

from rich.style import Style
from rich.text import Text
from textual.widgets import Static

STATE_STYLE = {"running": "green", "paused": "yellow", "silent": "bold yellow", "gone": "bold red",
               "ended": "dim", "waiting": "dim"}


def age_text(age: float | None) -> str:
    if age is None:
        return ""
    if age < 60:
        return f"{age:.1f}s ago" if age < 10 else f"{age:.0f}s ago"
    return f"{age / 60:.0f}m{age % 60:02.0f}s ago"


def rank_label(row: dict[str, Any], current: bool, hold: str = "") -> Text:
    """One rank's part of the bar: ``▶ rank 1 · running · step 12 params 0.3s ago``, then its flags."""
    text = Text()
    rank = row["rank"]
    text.append(f"{'▶' if current else ' '} rank {rank}", style="bold reverse" if current else "bold")
    state = row["state"]
    text.append(" ")
    text.append("●" if state in ("running", "paused") else "○", style=STATE_STYLE.get(state, ""))
    if state == "waiting":
        text.append(" no event yet", style="dim")
    else:
        label = {"silent": "silent", "gone": row.get("why") or "gone"}.get(state, state)
        text.append(f" {label}", style=STATE_STYLE.get(state, ""))
        text.append(f" · step {row['step']} {row['kind']} {age_text(row['age'])}", style="dim" if state != "silent"
                    else "yellow")
    parted = row.get("parted")
    if parted is not None:
        text.append(f" ⚠ parted at step {parted.step}: {parted.path}", style="bold red")
    return text


class RankBar(Static):
    """One line per few ranks above the views (see the module's docstring)."""

    DEFAULT_CSS = """
    RankBar { display: none; height: auto; max-height: 4; background: $panel; padding: 0 1; }
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.rows: list[dict[str, Any]] = []
        self.current = 0
        self.note = ""

    def show(self, rows: list[dict[str, Any]], current: int, note: str = "") -> None:
        self.rows, self.current, self.note = rows, current, note
        self.display = len(rows) > 1
        text = Text()
        for i, row in enumerate(rows):
            if i:
                text.append(" │ ", style="dim")
            label = rank_label(row, row["rank"] == current)
            label.stylize(Style.from_meta({"@click": ("app.show_rank", (row["rank"],))}))  # a click picks it
            text.append_text(label)
        if note:
            text.append(f"   {note}", style="bold yellow")
        text.append("   r: next rank", style="dim")
        self.update(text)
