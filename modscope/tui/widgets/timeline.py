"""The hook firing order of one step as an indented timeline: forward_pre → children → forward,
backward_pre → backward, with the user's own hooks and errors in place. Filters by module
(subtree) and by kind; follows the latest step or stays on a chosen one."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

ARROWS = {"forward_pre": "▶", "forward": "◀", "backward_pre": "▷", "backward": "◁"}
STYLES = {"forward_pre": "green", "forward": "green", "backward_pre": "dodger_blue2", "backward": "dodger_blue2"}
KIND_GROUPS = {"forward": ("forward_pre", "forward"), "backward": ("backward_pre", "backward"), "hooks": ("hook",),
               "errors": ("error",)}


def event_line(e: dict[str, Any], depth: int) -> Text:
    kind = e["kind"]
    pad = "  " * depth
    if kind in ARROWS:
        text = Text(f"{pad}{ARROWS[kind]} {kind:<12} ", style=STYLES[kind])
        text.append(e["path"] or "(root)", style="bold")
        if e["call"]:
            text.append(f" #{e['call']}", style="dim")
        if kind in ("forward", "backward"):
            text.append(f"  {e['dur_ns'] / 1e3:.0f}µs", style="dim")
            shapes = [s["shape"] for s in e.get("outputs", e.get("grad_inputs", [])) if s is not None]
            if shapes:
                text.append(f"  {'×'.join(map(str, shapes[0]))}", style="dim cyan")
        return text
    if kind == "hook":
        text = Text(f"{pad}  • {e['qualname']}", style="magenta")
        text.append(f"  {e['hook_kind']} hook on {e['target'] or '(root)'}", style="dim")
        if e["replaced"]:
            text.append("  replaced value", style="bold magenta")
        return text
    return Text(f"{pad}  ✖ {e['etype']}: {e['message'][:160]}", style="bold red")


def within(path: str | None, prefix: str) -> bool:
    return prefix == "" or path == prefix or (path or "").startswith(prefix + ".")


class HookTimeline(OptionList):
    """One option per event; highlighting an event selects its module elsewhere."""

    DEFAULT_CSS = """
    HookTimeline { border: round $primary 60%; height: 1fr; }
    HookTimeline:focus { border: round $accent; }
    """

    class Selected(Message):
        def __init__(self, path: str) -> None:
            self.path = path
            super().__init__()

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.border_title = "Hook firing order"
        self.follow = True
        self.step: int | None = None
        self.module_filter = ""
        self.kinds: set[str] = {k for group in KIND_GROUPS.values() for k in group}
        self._paths: list[str | None] = []
        self._shown: tuple | None = None

    def render_step(self, step: int, events: list[dict[str, Any]], overflow: int, steps: list[int]) -> None:
        key = (step, len(events), self.module_filter, frozenset(self.kinds))
        if key == self._shown:
            return
        self._shown = key
        options, paths, depth = [], [], 0
        for e in events:
            kind = e["kind"]
            if kind in ("forward", "backward"):
                depth = max(depth - 1, 0)
            target = e.get("path", e.get("target", e.get("module")))
            if kind in self.kinds and within(target, self.module_filter):
                options.append(Option(event_line(e, depth)))
                paths.append(target if target != "*" else None)
            if kind in ("forward_pre", "backward_pre"):
                depth += 1
        keep = self.highlighted
        self.clear_options()
        self.add_options(options)
        self._paths = paths
        if options:
            self.highlighted = len(options) - 1 if self.follow else min(keep or 0, len(options) - 1)
        mode = "following" if self.follow else "paused"
        shown = f"{len(options)}/{len(events)} events" + (f", {overflow} not kept" if overflow else "")
        span = f"steps {steps[0]}–{steps[-1]} kept" if steps else ""
        self.border_title = f"Hook firing order · step {step} · {mode}"
        self.border_subtitle = " · ".join(x for x in (shown, self._filter_text(), span) if x)

    def _filter_text(self) -> str:
        parts = []
        if self.module_filter:
            parts.append(f"module {self.module_filter}")
        hidden = [g for g, kinds in KIND_GROUPS.items() if not set(kinds) <= self.kinds]
        if hidden:
            parts.append("hiding " + ",".join(hidden))
        return " ".join(parts)

    def toggle_kind(self, group: str) -> None:
        kinds = set(KIND_GROUPS[group])
        self.kinds = self.kinds - kinds if kinds <= self.kinds else self.kinds | kinds

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        # Only a user moving through the timeline selects; following the latest step does not.
        if not self.has_focus:
            return
        if event.option_index < len(self._paths) and self._paths[event.option_index] is not None:
            self.post_message(self.Selected(self._paths[event.option_index]))
