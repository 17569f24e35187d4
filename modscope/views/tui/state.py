"""What the TUI knows, built from events alone (this package never imports ``engine``).

``SessionState.apply(event)`` folds one validated event into bounded structures: everything is
either per module/parameter (fixed by the model) or a ``deque`` with a ``maxlen``, so memory
stays flat however long training runs. Sources call ``apply`` from their own thread under
``lock``; the UI takes ``snapshot()`` on a timer and redraws only the parts whose revision moved.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..report import own_backward
from .ranks import RankBoard

MODULE_KINDS = ("forward_pre", "forward", "backward_pre", "backward")
TIMELINE_KINDS = (*MODULE_KINDS, "hook", "error")
STEPS_KEPT = 64  # per-step event lists kept for the hook timeline
EVENTS_PER_STEP = 4000  # more than this in one step: the rest is counted, not kept
HISTORY = 120  # points per sparkline


@dataclass
class ModuleInfo:
    path: str
    cls: str
    extra_repr: str
    training: bool
    children: list[str]
    aliases: list[str]
    own_params: int = 0
    total_params: int = 0
    fwd_ns: int = 0
    bwd_ns: int = 0
    calls: int = 0
    out_shape: list[int] | None = None
    grad_norms: deque = field(default_factory=lambda: deque(maxlen=HISTORY))
    nonfinite: bool = False  # a NaN/Inf seen in its outputs or gradients
    dead: bool = False  # its last output was all zeros
    # its last step's backward events were none of its own (no input needed a gradient: torch
    # runs its hook as the output's gradient arrives; ``views.report.own_backward``): bwd_ns is no time
    no_backward: bool = False

    @property
    def name(self) -> str:
        return self.path.rsplit(".", 1)[-1]


@dataclass
class ParamInfo:
    path: str
    shape: list[int]
    dtype: str
    numel: int
    requires_grad: bool
    is_buffer: bool = False
    persistent: bool = True
    norm: float | None = None
    grad_norm: float | None = None
    update_ratio: float | None = None
    update_sampled: int | None = None  # values the update ratio was measured on (None: all: exact)
    stats_sampled: int | None = None  # values norm, mean, std, NaN/Inf were taken on (None: all: exact)
    mean: float | None = None
    std: float | None = None
    nan: int = 0
    inf: int = 0

    @property
    def owner(self) -> str:
        return self.path.rpartition(".")[0]


@dataclass
class StepRecord:
    step: int
    events: list[dict[str, Any]] = field(default_factory=list)
    overflow: int = 0  # events of this step not kept (past EVENTS_PER_STEP)
    params: dict[str, Any] | None = None  # the step's ``params`` event (a comparison of two steps reads it)


class Revisions:
    """A counter per view, bumped when that view's data changed."""

    __slots__ = ("tree", "params", "timeline", "graph", "training", "errors", "status")

    def __init__(self) -> None:
        for name in self.__slots__:
            setattr(self, name, 0)

    def as_dict(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in self.__slots__}


class SessionState:
    """The folded event stream. All mutation goes through ``apply`` under ``lock``.

    A run of several ranks: this state folds rank ``rank``'s events (0 unless a source says
    otherwise) and routes every other rank's to a state of its own (``rank_state``, sharing this
    lock), and ``board`` (``ranks.RankBoard``) keeps what is known across ranks; see ``ranks``."""

    def __init__(self, *, lock: threading.Lock | None = None, rank: int = 0, root: bool = True) -> None:
        self.lock = lock or threading.Lock()
        self.rank = rank
        self._root = root
        self.rank_states: dict[int, SessionState] = {}  # the other ranks' states (on the root only)
        self.board: RankBoard | None = None  # set by the first event that carries a rank
        self.rev = Revisions()
        self.session: dict[str, Any] | None = None
        self.model_name = ""
        self.modules: dict[str, ModuleInfo] = {}
        self.order: list[str] = []  # module paths in named_modules order
        self.models = 0  # model events folded (a view's copy of the structure is current while it stays)
        self.params: dict[str, ParamInfo] = {}
        self._params_by_owner: dict[str, list[ParamInfo]] = {}  # module path -> its params, in ``params`` order
        self.steps: deque[StepRecord] = deque(maxlen=STEPS_KEPT)
        self.step = 0
        self.metrics: dict[str, deque] = {}
        self.lrs: list[float | None] = []
        self.optimizer = ""
        # How the latest step was watched (``step`` events' ``detail``, ``capture.sampling``):
        # "full", "light", or "" (every step full, or a trace that does not say); the latest full step.
        self.detail = ""
        self.last_full: int | None = None
        self._logged: set[str] = set()  # metric names the program logged itself
        self.graph: dict[str, Any] | None = None
        self.errors: deque[dict[str, Any]] = deque(maxlen=200)
        self.status = "waiting"  # waiting | running | paused | ended | disconnected
        self.status_reason = ""
        # called (on the folding thread, under the lock: it must only schedule) when a status or
        # end event is folded; the viewer sets it while it waits for a pause to be confirmed
        self.on_status: Callable[[], None] | None = None
        self.events_total = 0
        self.last_seq = -1
        self.gaps = 0  # events the producer dropped (holes in seq)
        self.skipped = 0  # events this viewer chose not to fold (it fell behind)
        self.malformed = 0  # events whose contents could not be folded (``sources.fold`` reports them)
        self.sink_dropped = 0
        self._rate_window: deque[tuple[float, int, int]] = deque(maxlen=64)  # (producer s, events, step)

    # --- folding ------------------------------------------------------------------------------

    def apply(self, event: dict[str, Any]) -> None:
        """Fold one validated event. Caller holds ``lock``."""
        if self._root and "rank" in event:
            if self.board is None:
                self.board = RankBoard()
            self.board.saw(event)
            if event["rank"] != self.rank:
                self.rank_state(event["rank"]).apply(event)
                return
        seq = event["seq"]
        if seq > self.last_seq + 1 and self.last_seq >= 0:
            self.gaps += seq - self.last_seq - 1
        self.last_seq = max(self.last_seq, seq)
        self.events_total += 1
        kind = event["kind"]
        if event["step"] != self.step and kind != "end":
            self._new_step(event["step"], event["t"])
        handler = _HANDLERS.get(kind)
        if handler is not None:
            handler(self, event)
        if kind in TIMELINE_KINDS:
            self._keep_for_timeline(event)

    def skip(self, count: int) -> None:
        """Record events that arrived but were not folded (the viewer fell behind)."""
        self.skipped += count
        self.rev.training += 1

    def _new_step(self, step: int, t_ns: int) -> None:
        self.step = step
        # The producer's clock: rates are the training's own, live or replayed.
        self._rate_window.append((t_ns / 1e9, self.events_total, step))
        self.rev.training += 1

    def _keep_for_timeline(self, event: dict[str, Any]) -> None:
        if not self.steps or self.steps[-1].step != event["step"]:
            self.steps.append(StepRecord(event["step"]))
        record = self.steps[-1]
        if len(record.events) < EVENTS_PER_STEP:
            record.events.append(event)
        else:
            record.overflow += 1
        self.rev.timeline += 1

    def _on_session(self, e: dict[str, Any]) -> None:
        self.session = e
        self.status = "running"
        self.rev.status += 1

    def _on_model(self, e: dict[str, Any]) -> None:
        """Add (or replace, when re-sent) a model's modules, parameters and buffers."""
        self.model_name = self.model_name or e["model"]
        for m in e["modules"]:
            if m["path"] not in self.modules:
                self.order.append(m["path"])
            self.modules[m["path"]] = ModuleInfo(m["path"], m["cls"], m["extra_repr"], m["training"],
                                                 list(m["children"]), list(m["aliases"]))
        for p in e["params"]:
            self.params[p["path"]] = ParamInfo(p["path"], p["shape"], p["dtype"], p["numel"], p["requires_grad"])
        for b in e["buffers"]:
            self.params[b["path"]] = ParamInfo(b["path"], b["shape"], b["dtype"], b["numel"], False,
                                               is_buffer=True, persistent=b["persistent"])
        self._recount_params()
        self._index_params()
        self.models += 1
        self.rev.tree += 1
        self.rev.params += 1

    def _recount_params(self) -> None:
        for m in self.modules.values():
            m.own_params = m.total_params = 0
        for info in self.params.values():
            if info.is_buffer:
                continue
            owner = self.modules.get(info.owner)
            if owner is not None:
                owner.own_params += info.numel
            parts = info.owner.split(".") if info.owner else []
            for depth in range(len(parts) + 1):  # the owner and each of its ancestors
                ancestor = self.modules.get(".".join(parts[:depth]))
                if ancestor is not None:
                    ancestor.total_params += info.numel

    def _index_params(self) -> None:
        """Group parameters and buffers by owner once per model event: a selection looks its
        module up here instead of scanning every parameter of the model."""
        by_owner: dict[str, list[ParamInfo]] = {}
        for info in self.params.values():
            by_owner.setdefault(info.owner, []).append(info)
        self._params_by_owner = by_owner

    def _on_forward(self, e: dict[str, Any]) -> None:
        m = self.modules.get(e["path"])
        if m is None:
            return
        m.fwd_ns = e["dur_ns"] if e["call"] == 0 else m.fwd_ns + e["dur_ns"]
        m.calls = e["call"] + 1
        first = next((s for s in e["outputs"] if s is not None), None)
        if first is not None:
            m.out_shape = first["shape"]
            if "nan" in first:
                m.nonfinite = m.nonfinite or bool(first["nan"] or first["inf"])
                m.dead = first.get("zeros") == 1.0
        self.rev.tree += 1

    def _on_backward(self, e: dict[str, Any]) -> None:
        m = self.modules.get(e["path"])
        if m is None:
            return
        m.bwd_ns = e["dur_ns"] if e["call"] == 0 else m.bwd_ns + e["dur_ns"]
        none_own = not own_backward(e)
        m.no_backward = none_own if e["call"] == 0 else m.no_backward and none_own
        if any(s is not None and (s.get("nan") or s.get("inf")) for s in e["grad_inputs"]):
            m.nonfinite = True
        self.rev.tree += 1

    def _on_params(self, e: dict[str, Any]) -> None:
        record = self.steps[-1] if self.steps else None
        if isinstance(record, StepRecord) and record.step == e["step"]:  # (a replay reads it back from the file)
            record.params = e
        per_module: dict[str, float] = {}
        for item in e["items"]:
            info = self.params.get(item["path"])
            if info is None:
                continue
            for key in ("norm", "grad_norm", "update_ratio", "mean", "std", "nan", "inf"):
                setattr(info, key, item[key])
            info.update_sampled = item.get("update_sampled")  # (added within schema 1: may be absent)
            info.stats_sampled = item.get("stats_sampled")  # (likewise)
            if item["grad_norm"] is not None and not info.is_buffer:
                per_module[info.owner] = per_module.get(info.owner, 0.0) + item["grad_norm"] ** 2
            if item["nan"] or item["inf"]:
                owner = self.modules.get(info.owner)
                if owner is not None:
                    owner.nonfinite = True
        for path, sq in per_module.items():
            m = self.modules.get(path)
            if m is not None:
                m.grad_norms.append(sq ** 0.5)
        self.rev.params += 1
        self.rev.tree += 1

    def _on_step(self, e: dict[str, Any]) -> None:
        self.optimizer = e["optimizer"]
        self.lrs = e["lrs"]
        # (a trace watching every step in full has nothing to tell apart: "")
        self.detail = "" if e.get("why") == "every step" else e.get("detail", "")
        if self.detail == "full":
            self.last_full = e["step"]
        # the loss the step's backward started from, unless the program logs its own "loss"
        if e.get("loss") is not None and "loss" not in self._logged:
            self.metrics.setdefault("loss", deque(maxlen=HISTORY)).append(e["loss"])
        self.rev.training += 1

    def _on_metric(self, e: dict[str, Any]) -> None:
        for name, value in e["values"].items():
            if name == "loss" and name not in self._logged:  # the program's own: no more from backward
                self._logged.add(name)
                self.metrics.pop(name, None)
            if name not in self.metrics:
                self.metrics[name] = deque(maxlen=HISTORY)
            self.metrics[name].append(value)
        self.rev.training += 1

    def _on_graph(self, e: dict[str, Any]) -> None:
        self.graph = e
        self.rev.graph += 1

    def _on_error(self, e: dict[str, Any]) -> None:
        self.errors.append(e)
        if e["module"] in self.modules and e["etype"] == "NonFiniteValue":
            self.modules[e["module"]].nonfinite = True
            self.rev.tree += 1
        self.rev.errors += 1

    def _on_status(self, e: dict[str, Any]) -> None:
        self.status = e["state"]
        self.status_reason = e.get("reason", "")
        self.rev.status += 1
        self.rev.timeline += 1  # which step the timeline follows depends on the status
        if self.on_status is not None:
            self.on_status()

    def _on_end(self, e: dict[str, Any]) -> None:
        self.status = "ended"
        self.status_reason = e["status"]
        self.sink_dropped = e["dropped"]
        self.rev.status += 1
        self.rev.timeline += 1  # the last step is complete now: follow it
        self.rev.training += 1
        if self.on_status is not None:
            self.on_status()

    def rank_state(self, rank: int) -> SessionState:
        """The state of rank ``rank`` (this one for its own rank; made on first use). Caller
        holds ``lock``."""
        if rank == self.rank or not self._root:
            return self
        state = self.rank_states.get(rank)
        if state is None:
            state = self.rank_states[rank] = SessionState(lock=self.lock, rank=rank, root=False)
        return state

    def all_ranks(self) -> dict[int, SessionState]:
        """Every rank's state, by rank (this one alone for a single process). Caller holds ``lock``."""
        return dict(sorted({self.rank: self, **self.rank_states}.items()))

    def mark_disconnected(self, reason: str, rank: int | None = None) -> None:
        """The stream ended: of rank ``rank`` only (a run of several sends one per rank), or of
        every rank (``None``)."""
        with self.lock:
            if self.board is not None:
                for gone in ([rank] if rank is not None else self.board.ranks):
                    self.board.gone(gone, reason)
            states = self.all_ranks().values() if rank is None else [self.rank_state(rank)]
            for state in states:
                if state.status != "ended":
                    state.status = "disconnected"
                    state.status_reason = reason
                    state.rev.status += 1

    # --- reading ------------------------------------------------------------------------------

    @property
    def dropped(self) -> int:
        """Everything not shown: producer drops (seq holes, sink report) and viewer skips."""
        return self.gaps + self.sink_dropped + self.skipped

    def rates(self) -> tuple[float, float]:
        """(steps per second, events per second) over the recent window."""
        if len(self._rate_window) < 2:
            return 0.0, 0.0
        (t0, e0, s0), (t1, e1, s1) = self._rate_window[0], self._rate_window[-1]
        dt = t1 - t0
        return ((s1 - s0) / dt, (e1 - e0) / dt) if dt > 0 else (0.0, 0.0)

    def steps_available(self) -> list[int]:
        return [r.step for r in self.steps]

    def step_events(self, step: int | None) -> tuple[int, list[dict[str, Any]], int]:
        """(step, its kept timeline events, overflow) for ``step`` (latest when None).

        A step is the ``step`` field of its events, as the tracer stamps it (0-based): the same
        number the training panel, the errors and the pause reasons show. Following, the
        timeline shows the last complete step while training runs (the current one is still
        filling), and the step training is paused in when paused (a breakpoint stops inside it:
        what ran of it so far is what there is to see)."""
        if not self.steps:
            return self.step, [], 0
        if step is None:
            if self.status == "paused":
                record = next((r for r in reversed(self.steps) if r.step == self.step), self.steps[-1])
            else:
                running = self.status == "running" and len(self.steps) > 1
                record = self.steps[-2] if running and self.steps[-1].step == self.step else self.steps[-1]
        else:
            record = next((r for r in self.steps if r.step == step), self.steps[-1])
        return record.step, list(record.events), record.overflow

    def params_of(self, module_path: str) -> list[ParamInfo]:
        """The parameters and buffers ``module_path`` owns (in the model event's order): a
        lookup in an index by owner, not a scan."""
        return list(self._params_by_owner.get(module_path, ()))


_HANDLERS = {
    "session": SessionState._on_session, "model": SessionState._on_model,
    "forward": SessionState._on_forward, "backward": SessionState._on_backward,
    "params": SessionState._on_params, "step": SessionState._on_step, "metric": SessionState._on_metric,
    "graph": SessionState._on_graph, "error": SessionState._on_error, "status": SessionState._on_status,
    "end": SessionState._on_end,
}
