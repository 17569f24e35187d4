"""What a page shows of a trace, gathered in one pass over its events (``TraceDigest``).

A trace file may hold a million events; the notebook and the report read it once, one event at a
time, and keep only what they draw:

- the last ``model`` and ``graph`` events, the ``session`` and ``end`` events;
- the module events of the last step that has a forward (what ``views.report``'s figures read),
  and the last ``step`` event and the last that measured the optimizer's state (the summary's
  memory block reads them);
- series over steps: every metric (``loss`` also from the step events, the scalar each step's
  backward started from, when the program logs none of that name, as the TUI shows it), every
  learning rate, and per top-level module the gradient
  norm of the parameters under it (``sqrt`` of the sum of their squared norms), each thinned to
  at most ``SERIES_POINTS`` points (``Series``);
- for the steps it samples (``StepSampler``), each step's parameter statistics and its hook firing
  order, bounded in cells and lines so that a page stays a few MB whatever the run's length.

What was thinned or sampled is said in ``notes``, so a page never passes a sample off as the run.
A run of several ranks is one file per rank; ``rank`` is the one this trace's ``session`` names.
"""

from __future__ import annotations

import math
import re
from array import array
from collections.abc import Iterable
from itertools import repeat
from operator import attrgetter
from typing import Any

from ...events.files import MODULE_LINE_KINDS
from ...events.schema import loads
from ..trace import dropped_note

SERIES_POINTS = 600  # points kept per plotted series
PARAM_CELLS = 400_000  # parameter statistics kept over the sampled steps (5 numbers a parameter)
PARAM_STEPS = 32  # at most this many steps of parameter statistics
TIMELINE_LINES = 400_000  # hook-order lines kept over the sampled steps
TIMELINE_STEP_LINES = 100_000  # lines kept of one step (a longer step is cut, and says so)
TIMELINE_STEPS = 32  # at most this many steps of firing order

TIMELINE_KINDS = ("forward_pre", "forward", "backward_pre", "backward", "hook", "error")
PARAM_FIELDS = ("norm", "grad_norm", "update_ratio", "mean", "std")


class Series:
    """Points ``(x, y)`` appended in order, thinned to at most ``cap`` by keeping every
    ``stride``-th (the stride doubles each time the cap is reached), so a long run's curve keeps
    its shape in bounded memory. The last point is always kept."""

    def __init__(self, cap: int = SERIES_POINTS) -> None:
        self.cap = cap
        self.stride = 1
        self._n = 0  # points offered so far
        self.xs = array("d")
        self.ys = array("d")
        self._last: tuple[float, float] | None = None

    def add(self, x: float, y: float | None) -> None:
        if y is None or not math.isfinite(y):
            return
        if self._n % self.stride == 0:
            self.xs.append(x)
            self.ys.append(y)
            if len(self.xs) > self.cap:
                self.stride *= 2
                self.xs, self.ys = self.xs[::2], self.ys[::2]
            self._last = None
        else:
            self._last = (x, y)
        self._n += 1

    @property
    def offered(self) -> int:
        return self._n

    def points(self) -> list[tuple[float, float]]:
        out = list(zip(self.xs, self.ys))
        if self._last is not None:
            out.append(self._last)
        return out


class StepSampler:
    """Per-step payloads of a bounded total size: a step is kept when its ordinal (0 for the first
    step seen, 1 for the next ...) is a multiple of ``stride``; when the kept payloads exceed
    ``budget`` units or ``max_steps`` steps, ``stride`` doubles and the steps off the new stride
    go. The last step is always kept (``finish``)."""

    def __init__(self, budget: int, max_steps: int) -> None:
        self.budget, self.max_steps = budget, max_steps
        self.stride = 1
        self.kept: dict[int, tuple[int, Any, int]] = {}  # step -> (ordinal, payload, units)
        self.units = 0
        self.seen = 0  # steps offered

    def offer(self, step: int, payload: Any, units: int, *, last: bool = False) -> None:
        ordinal = self.seen
        self.seen += 1
        if ordinal % self.stride and not last:
            return
        self.kept[step] = (ordinal, payload, units)
        self.units += units
        while (self.units > self.budget or len(self.kept) > self.max_steps) and len(self.kept) > 1:
            self.stride *= 2
            for s, (o, _, u) in list(self.kept.items()):
                if o % self.stride and s != step:
                    del self.kept[s]
                    self.units -= u
            if self.stride > 1 << 40:  # (one payload alone over budget: keep it)
                break

    def wants(self, last: bool = False) -> bool:
        """Whether the next step offered would be kept (so its payload is worth building)."""
        return last or self.seen % self.stride == 0

    def skip(self) -> None:
        """The next step, not offered (``wants`` said no)."""
        self.seen += 1

    def steps(self) -> list[int]:
        return sorted(self.kept)

    def payload(self, step: int) -> Any:
        return self.kept[step][1]

    @property
    def sampled(self) -> bool:
        return len(self.kept) < self.seen


class _Timeline:
    """One step's firing order, cut at ``TIMELINE_STEP_LINES`` lines: module events as
    ``(kind code, path number, call)`` triples in a flat ``array`` (12 bytes a line: a kept
    10,000-module step is 40,000 of them), hooks and errors as ``(position, line)``."""

    __slots__ = ("mods", "others", "cut")

    def __init__(self) -> None:
        self.mods = array("i")
        self.others: list[tuple] = []
        self.cut = 0

    def __len__(self) -> int:
        return len(self.mods) // 3 + len(self.others)

    def lines(self) -> list[tuple]:
        """Every line in order: ``(code, path number, call)`` or a hook's/error's tuple."""
        out: list[tuple] = []
        others = iter(self.others)
        pending = next(others, None)
        mods = self.mods
        m = 0
        for i in range(len(self)):
            if pending is not None and pending[0] == i:
                out.append(pending[1])
                pending = next(others, None)
            else:
                out.append((mods[m], mods[m + 1], mods[m + 2]))
                m += 3
        return out

    def to_json(self) -> dict[str, list]:
        """What the page's script reads: ``m`` the flat triples, ``o`` ``[position, *line]``."""
        return {"m": self.mods.tolist(), "o": [[i, *line] for i, line in self.others]}


class TraceDigest:
    """The one pass (see the module docstring) over ``events``: dicts, or what
    ``events.files.TraceScan.module_lines`` yields (a module line it matched comes as the
    ``re.Match`` of ``files.MODULE_LINE``: read here without being parsed, the cost of a big
    trace's pass). ``timelines``/``params`` False skip what a view does not draw (the notebook's
    trace view needs neither)."""

    def __init__(self, events: Iterable[dict[str, Any]], *, timelines: bool = True, params: bool = True,
                 timeline_lines: int = TIMELINE_LINES, param_cells: int = PARAM_CELLS) -> None:
        self.session: dict[str, Any] | None = None
        self.model: dict[str, Any] | None = None
        self.graph: dict[str, Any] | None = None
        self.end: dict[str, Any] | None = None
        self.last_step: dict[str, Any] | None = None  # the last optimizer step event
        self.measured_step: dict[str, Any] | None = None  # ... the last with its optimizer's state_bytes
        self.count = 0
        self.rank: int | None = None  # the rank that recorded it (a run of several ranks: one file each)
        self.steps: list[int] = []  # every step that has an event, in order
        self.metrics: dict[str, Series] = {}
        self._step_loss = Series()  # the step events' loss: the "loss" metric when none is logged
        self.lrs: dict[str, Series] = {}
        self.grad_norms: dict[str, Series] = {}  # top-level module -> series over steps
        self.errors: list[dict[str, Any]] = []  # the first few errors, for the page's header
        self.error_count = 0
        self.paths: dict[str, int] = {}  # module path -> its number in the timeline codes
        self._path_numbers: dict[bytes, int] = {}  # a matched line's path bytes -> its number
        self._want_timelines, self._want_params = timelines, params
        self.timelines = StepSampler(timeline_lines, TIMELINE_STEPS)
        self.params = StepSampler(param_cells, PARAM_STEPS)
        self._pending_params: tuple[int, list] | None = None
        self._figures: tuple | None = None
        self.mult_adds: list | None = None  # with ``figures``: the summary's rows read them too
        self._read(events)

    # -- the pass -----------------------------------------------------------------------------

    def _read(self, events: Iterable[dict[str, Any]]) -> None:
        # A million events: the loop does as little as it can per module event (most of them). It
        # keeps the step's module events (dicts or matches) as they come, and only at the step's
        # end, for a step the sampler keeps, reads their paths and calls into a ``_Timeline``
        # (``_step_timeline``): reading them for every step cost more than the rest of the pass.
        best: list[Any] = []  # module events of the last complete step with a forward
        current: list[Any] = []  # this step's module events
        others: list[tuple] = []  # this step's hooks and errors: (position in the step, line)
        n_others = 0  # ... how many there were (also those past TIMELINE_STEP_LINES)
        step: int | None = None
        step_tag = b"\n"  # '"step":N,' as a matched line of this step has it (no line has a newline)
        want_timelines = self._want_timelines
        keep = current.append
        count = 0
        for e in events:
            count += 1
            if type(e) is not dict:  # a module line that files.MODULE_LINE matched (valid, not parsed)
                raw = e.string
                if step_tag in raw:  # (the step's '"step":N,': in a matched line only its step field has it)
                    keep(e)
                    continue
                i = raw.index(b'"step":') + 7
                sb = raw[i:raw.index(b",", i)]
                s = int(sb)
                if s == step:  # (the same step as a dict event's before it)
                    step_tag = b'"step":' + sb + b","
                    keep(e)
                    continue
                kind = None
            else:
                kind = e["kind"]
                s = e["step"]
            if s != step:
                if step is not None:
                    if want_timelines:
                        self._offer_timeline(step, current, others, n_others, False)
                    if _has_forward(current):
                        best = current
                current, others, n_others = [], [], 0
                keep = current.append
                step = s
                step_tag = b"\n" if kind is not None else b'"step":' + sb + b","
                self.steps.append(s)
            if kind is None or kind in _MODULE_CODES:
                keep(e)
                continue
            if kind == "params":
                self._read_params(e)
            elif kind == "metric":
                for name, value in e["values"].items():
                    if isinstance(value, int | float) and not isinstance(value, bool):
                        self.metrics.setdefault(name, Series()).add(s, float(value))
            elif kind == "step":
                self.last_step = e
                loss = e.get("loss")
                if isinstance(loss, int | float) and not isinstance(loss, bool):
                    self._step_loss.add(s, float(loss))
                if isinstance(e.get("state_bytes"), int):
                    self.measured_step = e
                for i, lr in enumerate(e["lrs"]):
                    if isinstance(lr, int | float) and not isinstance(lr, bool):
                        name = f"{e['optimizer']} group {i}" if len(e["lrs"]) > 1 else e["optimizer"]
                        self.lrs.setdefault(name, Series()).add(s, float(lr))
            elif kind == "model":
                self.model = e
            elif kind == "graph":
                self.graph = e
            elif kind == "session":
                if self.session is None:
                    self.session, self.rank = e, e.get("rank")
            elif kind == "end":
                self.end = e
            elif kind == "error":
                self.error_count += 1
                if len(self.errors) < 20:
                    self.errors.append(e)
                if want_timelines:
                    at = len(current) + n_others
                    n_others += 1
                    if at < TIMELINE_STEP_LINES:
                        others.append((at, (5, e["etype"], e["message"][:200], e.get("module") or "")))
            elif kind == "hook" and want_timelines:
                at = len(current) + n_others
                n_others += 1
                if at < TIMELINE_STEP_LINES:
                    others.append((at, (4, e["qualname"], e["hook_kind"], e["target"], e["replaced"])))
        if step is not None and want_timelines:
            self._offer_timeline(step, current, others, n_others, True)
        self.count = count
        if "loss" not in self.metrics and self._step_loss.points():
            self.metrics = {"loss": self._step_loss, **self.metrics}
        if self._pending_params is not None:
            self._offer_params(*self._pending_params, last=True)
        if _has_forward(current):
            best = current
        best = [e if type(e) is dict else loads(e.string) for e in best]  # (matched lines parsed now)
        steps = [self.measured_step] if self.measured_step is not None else []
        if self.last_step is not None and self.last_step is not self.measured_step:
            steps.append(self.last_step)
        self.report_events = [e for e in (self.model, self.graph) if e is not None] + steps + best

    def _offer_timeline(self, step: int, mods: list[Any], others: list[tuple], n_others: int, last: bool) -> None:
        """Offer a step's firing order (its module events ``mods``, its hooks and errors ``others``
        at their positions), read into a ``_Timeline`` only when the sampler will keep it. Kept:
        the step's first ``TIMELINE_STEP_LINES`` lines; ``cut`` counts the module events after."""
        if not self.timelines.wants(last):
            self.timelines.skip()
            return
        timeline = _Timeline()
        kept = min(len(mods) + n_others, TIMELINE_STEP_LINES) - len(others)  # module lines kept
        timeline.mods = _module_codes(mods[:kept], self.paths, self._path_numbers)
        timeline.others = others
        timeline.cut = len(mods) - kept
        self.timelines.offer(step, timeline, len(timeline) + 1, last=last)

    def _read_params(self, e: dict[str, Any]) -> None:
        step = e["step"]
        sums: dict[str, float] = {}
        for item in e["items"]:
            g = item["grad_norm"]
            if g is None:
                continue
            top, dot, _ = item["path"].partition(".")
            if not dot:
                top = "(root)"
            sums[top] = sums.get(top, 0.0) + g * g
        grad_norms = self.grad_norms
        for top, total in sums.items():
            series = grad_norms.get(top)
            if series is None:
                series = grad_norms[top] = Series()
            series.add(step, math.sqrt(total))
        if self._want_params:
            # offered when the next one comes, so the last is offered as the last (always kept)
            if self._pending_params is not None:
                self._offer_params(*self._pending_params)
            self._pending_params = (step, e["items"])

    def _offer_params(self, step: int, items: list[dict[str, Any]], last: bool = False) -> None:
        """Offer a step's parameter rows, built only when the sampler will keep them."""
        if not self.params.wants(last):
            self.params.skip()
            return
        # last: how many values the update ratio, then the norm, mean, std and NaN/Inf counts,
        # were taken on (0: all; a sample: an estimate)
        rows = [(i["path"], i["norm"], i["grad_norm"], i["update_ratio"], i["mean"], i["std"], i["nan"], i["inf"],
                 i.get("update_sampled", 0), i.get("stats_sampled", 0)) for i in items]
        self.params.offer(step, rows, len(rows) * len(PARAM_FIELDS) + 1, last=last)

    # -- what the pages ask -------------------------------------------------------------------

    @property
    def figures(self) -> tuple:
        """``fragments.figures`` of the report events (computed once)."""
        if self._figures is None:
            from ..report import _figures
            self.mult_adds = []
            self._figures = _figures(self.report_events, self.mult_adds)
        return self._figures

    @property
    def model_name(self) -> str:
        return self.model["model"] if self.model else "(no model)"

    @property
    def framework(self) -> str | None:
        return self.session.get("framework") if self.session else None

    def notes(self) -> list[str]:
        """What the page leaves out or thins, one sentence each."""
        out = []
        steps = len(self.steps)
        if self.timelines.sampled and self.timelines.kept:
            out.append(f"hook firing order: {len(self.timelines.kept)} of {self.timelines.seen:,} steps kept "
                       f"(every {_ordinal(self.timelines.stride)}, and the last), to bound the page's size")
        cut = sum(t.cut for _, t, _ in self.timelines.kept.values())
        if cut:
            out.append(f"hook firing order: {cut:,} events past {TIMELINE_STEP_LINES:,} in a step left out")
        if self.params.sampled and self.params.kept:
            out.append(f"parameters: {len(self.params.kept)} of {self.params.seen:,} steps with statistics kept "
                       f"(every {_ordinal(self.params.stride)}, and the last)")
        thinned = [name for name, s in (*self.metrics.items(), *self.lrs.items()) if s.stride > 1]
        if thinned or any(s.stride > 1 for s in self.grad_norms.values()):
            out.append(f"plots: curves over {steps:,} steps thinned to at most {SERIES_POINTS} points each")
        return out

    def dropped_note(self) -> str:
        if not self.end:
            return ""
        return dropped_note(self.end.get("dropped", 0), self.end.get("dropped_steps", 0))


_MODULE_CODES = {"forward_pre": 0, "forward": 1, "backward_pre": 2, "backward": 3}
_CALL = re.compile(rb'","call":([0-9]+)')  # what follows a matched line's path group (files.MODULE_LINE)
_LASTINDEX, _STRING = attrgetter("lastindex"), attrgetter("string")
_GROUP, _END = re.Match.group, re.Match.end
_MATCH_CODES = [None if k is None else _MODULE_CODES[k] for k in MODULE_LINE_KINDS]  # match.lastindex -> code


def _has_forward(mods: list[Any]) -> bool:
    """Whether a step's module events have a ``forward`` (a matched line's or a dict's)."""
    for e in mods:
        if (_MATCH_CODES[e.lastindex] if type(e) is not dict else _MODULE_CODES[e["kind"]]) == 1:
            return True
    return False


def _module_codes(mods: list[Any], paths: dict[str, int], by_bytes: dict[bytes, int]) -> array:
    """Module events as flat ``(kind code, path number, call)`` triples; a path new to ``paths``
    gets the next number, in the order the paths first come. ``by_bytes`` maps a matched line's
    path bytes to its number (kept from step to step). A matched line is read at its match's
    offsets: its path is the kind's group, its call's digits follow the path's closing quote."""
    if dict not in set(map(type, mods)):  # (a step's 40,000 lines: C loops, no Python step a line)
        groups = list(map(_LASTINDEX, mods))
        raw_paths = list(map(_GROUP, mods, groups))
        for raw_path in dict.fromkeys(raw_paths):  # the step's paths, in the order they first come
            if raw_path not in by_bytes:
                by_bytes[raw_path] = paths.setdefault(raw_path.decode("ascii"), len(paths))
        calls = map(_GROUP, map(_CALL.match, map(_STRING, mods), map(_END, mods, groups)), repeat(1))
        out = array("i", bytes(12 * len(mods)))
        out[0::3] = array("i", map(_MATCH_CODES.__getitem__, groups))
        out[1::3] = array("i", map(by_bytes.__getitem__, raw_paths))
        out[2::3] = array("i", map(int, calls))
        return out
    flat: list[int] = []
    for e in mods:
        if type(e) is not dict:
            g = e.lastindex
            raw_path = e[g]
            number = by_bytes.get(raw_path)
            if number is None:
                number = by_bytes[raw_path] = paths.setdefault(raw_path.decode("ascii"), len(paths))
            flat += (_MATCH_CODES[g], number, int(_CALL.match(e.string, e.end(g))[1]))
        else:
            path = e["path"]
            number = paths.get(path)
            if number is None:
                number = paths[path] = len(paths)
            flat += (_MODULE_CODES[e["kind"]], number, e["call"])
    return array("i", flat)


def _ordinal(n: int) -> str:
    """``2`` -> ``"2nd"``, ``4`` -> ``"4th"``, ``32`` -> ``"32nd"`` (strides are powers of two)."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
