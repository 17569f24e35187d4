"""Comparing two steps in the TUI (issue 22): the step on screen with another kept step of the
same session, or with the same step of a second trace (``modscope replay A --compare B``).

The numbers come from ``views.diff`` (``diff`` over the two steps' events); this module gathers
those events (from the state, from a replayed file, or from the second trace), runs the diff and
turns its ``StepDiff`` into what the views show: a badge per module, a Δ cell per parameter, the
event where the firing orders part. Gathering reads files: the app calls ``compare_steps`` on a
worker thread.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.text import Text

from ...events.files import TraceFileError, TraceScan, TraceStream
from ...events.schema import EventError, loads, validate
from ..diff import DEFAULT_RTOL, DiffInputError, StepDiff, diff
from ..diff.model import TIMES, ModuleStep, Number
from .state import SessionState, StepRecord

DIFF_KINDS = frozenset({"forward_pre", "forward", "backward_pre", "backward", "params", "graph"})
PARAM_KEYS = {"norm": "norm", "grad_norm": "grad", "update_ratio": "update"}
STEPS_CACHED = 4  # steps of the second trace kept in memory (the pair on screen, and a few back)


class CompareError(ValueError):
    """A trace that cannot be compared with (unreadable, not a trace): the message names the file."""


def read_step(stream: TraceStream, start: int, end: int, step: int) -> list[dict[str, Any]]:
    """The events of ``step`` a diff compares, from text offsets [start, end) of a trace."""
    events = []
    for line in stream.read_lines(start, end):
        if not line.strip():
            continue
        event = validate(loads(line))
        if event["kind"] in DIFF_KINDS and event["step"] == step:
            events.append(event)
    return events


class OtherTrace:
    """The second trace of ``replay --compare``: checked whole and indexed when opened (per step,
    the text range of its events), a step's events read back when asked for; at most
    ``STEPS_CACHED`` steps stay in memory. Raises ``CompareError`` naming the file."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.name = self.path.name
        self._ranges: dict[int, list[int]] = {}
        try:
            self.stream = TraceStream(self.path)
            self._index(TraceScan(self.path, self.stream, checkpoints=True))
        except TraceFileError as e:
            raise CompareError(f"cannot compare with {e}") from None
        except OSError as e:
            raise CompareError(f"cannot compare with {self.path}: {e.strerror or e}") from None
        self.steps = sorted(self._ranges)
        self._cache: OrderedDict[int, list[dict[str, Any]]] = OrderedDict()

    def _index(self, scan: TraceScan) -> None:
        open_step = None  # the step of the last event read, if a diff compares it: its range ends here
        for offset, _, event in scan:
            if open_step is not None:
                self._ranges[open_step][1] = offset
                open_step = None
            if event["kind"] in DIFF_KINDS:
                open_step = event["step"]
                self._ranges.setdefault(open_step, [offset, offset])
        if open_step is not None:
            self._ranges[open_step][1] = scan.end

    def events(self, step: int) -> list[dict[str, Any]] | None:
        """The step's events (``None``: the trace has no such step)."""
        if step not in self._ranges:
            return None
        events = self._cache.get(step)
        if events is None:
            try:
                events = read_step(self.stream, *self._ranges[step], step)
            except (TraceFileError, EventError, ValueError, OSError) as e:  # the file changed since it was read
                raise CompareError(f"{self.path}: cannot read step {step} back: {e}") from None
            self._cache[step] = events
            while len(self._cache) > STEPS_CACHED:
                self._cache.popitem(last=False)
        self._cache.move_to_end(step)
        return events


def session_step_whole(state: SessionState, step: int) -> bool:
    """Whether ``session_step_events(state, step)`` gives the whole step: a replayed step still
    being indexed gives only what the timeline kept (its ``params`` event may be missing)."""
    with state.lock:
        record = next((r for r in state.steps if r.step == step), None)
        return record is None or isinstance(record, StepRecord) or None not in (record.start, record.end)


def session_step_events(state: SessionState, step: int) -> list[dict[str, Any]] | None:
    """A kept step's events as a diff needs them (module events and its ``params`` event), from
    the state (live) or read back from the replayed file; ``None``: the step is not kept."""
    with state.lock:
        record = next((r for r in state.steps if r.step == step), None)
        if record is None:
            return None
        if isinstance(record, StepRecord):
            events = [e for e in record.events if e["kind"] in DIFF_KINDS]
            return events + ([record.params] if record.params is not None else [])
        start, end = record.start, record.end
        stream = state.steps.stream  # type: ignore[attr-defined] - a replay's ReplaySteps
        if start is None or end is None:  # still being indexed: what the timeline kept
            return [e for e in record.events if e["kind"] in DIFF_KINDS]
    try:
        return read_step(stream, start, end, step)
    except (TraceFileError, EventError, ValueError, OSError) as e:
        raise CompareError(f"{stream.path}: cannot read step {step} back: {e}") from None


@dataclass
class Comparison:
    """One compared pair: step ``step_a`` (the one on screen) with ``step_b`` of this session or
    of the trace ``other`` names. ``result`` is the diff (``None``: not comparable, ``note`` says why)."""

    step_a: int
    step_b: int
    other: str | None
    rtol: float
    result: StepDiff | None
    note: str = ""

    @property
    def first_path(self) -> str | None:
        """The module of the first divergence (``None``: none, or not one module)."""
        first = self.result.first if self.result is not None else None
        return first.path if first is not None else None

    def describe(self) -> str:
        """The subtitle: what is compared, the threshold and the first divergent module."""
        b = f"step {self.step_b} of {self.other}" if self.other else str(self.step_b)
        head = f"comparing step {self.step_a} with {b} · rtol {self.rtol:.0e}"
        if self.result is None:
            return f"{head} · {self.note}"
        if self.result.first is None:
            return f"{head} · no difference past the threshold"
        path = self.result.first.path
        return f"{head} · first: {path or '(root)' if path is not None else self.result.first.kind}"

    def badges(self) -> dict[str, Text]:
        """Per module path, its badge: the worst relative difference, red past the threshold."""
        if self.result is None:
            return {}
        first = self.first_path
        out = {}
        for path, m in self.result.modules.items():
            worst = worst_number(m)
            # nothing of it compared (no parameters, no statistics recorded): not "identical"
            text = " Δ no data" if worst is None else f" Δ{fmt_rel(worst.rel, worst.approx)}"
            badge = Text(text, style="bold red" if m.diverged else "dim")
            if path == first:
                badge.append(" ◀ first", style="bold white on red")
            out[path] = badge
        if first is not None and first not in out:
            out[first] = Text(" ◀ first", style="bold white on red")
        return out

    def param_deltas(self) -> dict[str, Text]:
        """Per parameter path, its Δ cell: the largest relative difference of norm, grad norm and
        update ratio and which it is (``≈``: a sampled update ratio's or norm's, approximate), red when one
        of them (or a NaN/Inf count) differs."""
        if self.result is None:
            return {}
        out = {}
        for path, numbers in self.result.params.items():
            shown = [(n.rel, key, n.approx) for key, n in numbers.items() if key in PARAM_KEYS]
            if not shown:
                continue
            rel, key, approx = max(shown, key=lambda x: x[0])
            diverged = any(n.diverged for n in numbers.values())
            out[path] = Text(f"{fmt_rel(rel, approx)} {PARAM_KEYS[key]}", style="bold red" if diverged else "dim")
        return out

    def split_seq(self) -> int | None:
        """The ``seq`` of step A's event where the firing orders part (``None``: same order, or
        A's order ended there)."""
        order = self.result.order if self.result is not None else None
        return order.seq_a if order is not None else None

    def order_note(self) -> str:
        """The timeline's note, ``tag: detail``: where the orders part, or that they do not."""
        if self.result is None:
            return ""
        order = self.result.order
        if order is None:
            return f"same order: as {self._b_name()}"
        if order.a is None:
            return f"≠ order: {self._b_name()} goes on after this step's last event"
        there = f"{order.b[0]} {order.b[1] or '(root)'}" if order.b is not None else "the end"
        return f"≠ order: the orders part at event {order.position} ({there} in {self._b_name()})"

    def _b_name(self) -> str:
        return f"{self.other} step {self.step_b}" if self.other else f"step {self.step_b}"


def worst_rel(m: ModuleStep) -> float | None:
    """A module's largest relative difference, timings left out (they never count by default);
    ``None`` when nothing else of it was compared (a module without parameters in traces
    recorded without statistics has its timings only)."""
    worst = worst_number(m)
    return None if worst is None else worst.rel


def worst_number(m: ModuleStep) -> Number | None:
    """The number of ``worst_rel`` (the first of equals in the module's order)."""
    return max((n for category, n in m.worst.items() if category not in TIMES), key=_rel_of, default=None)


def _rel_of(n: Number) -> float:
    return n.rel


def fmt_rel(rel: float, approx: bool = False) -> str:
    """A relative difference, ``≈`` before it when it is approximate (a sampled figure's)."""
    if not math.isfinite(rel):
        return "∞"
    return f"≈{rel:.1e}" if approx else f"{rel:.1e}"


def compare_steps(state: SessionState, step_a: int, step_b: int, other: OtherTrace | None = None,
                  rtol: float = DEFAULT_RTOL) -> Comparison:
    """Compare kept step ``step_a`` with ``step_b`` of this session (or of ``other``). A step
    that is not there gives a ``Comparison`` without a result and a note saying which; a file
    that cannot be read back raises ``CompareError``."""
    name = other.name if other is not None else None
    events_a = session_step_events(state, step_a)
    events_b = other.events(step_b) if other is not None else session_step_events(state, step_b)
    if not events_a or not events_b:
        missing = step_a if not events_a else step_b
        where = name if events_a and other is not None else "this session"
        return Comparison(step_a, step_b, name, rtol, None, f"no step {missing} in {where}")
    try:
        result = diff(events_a, events_b, step=(step_a, step_b), rtol=rtol)
    except DiffInputError as e:  # no module event of that step on one side
        return Comparison(step_a, step_b, name, rtol, None, str(e))
    return Comparison(step_a, step_b, name, rtol, result.steps[0])
