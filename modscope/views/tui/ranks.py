"""Every rank of a run in one viewer: what the TUI knows across ranks, and how it holds them together.

A run of several ranks (torchrun, ``modscope run --nproc-per-node N``) sends one event stream per
rank, each event stamped with its ``rank`` (``events.schema``). ``SessionState`` folds rank 0's
(the root) and keeps one ``SessionState`` per other rank beside it (``rank_state``), all under
the root's lock, so every view works on any rank unchanged: the rank switcher swaps the state the
views read. Across ranks, ``RankBoard`` keeps (bounded: the last ``STEPS_KEPT`` steps):

- each rank's last event (kind, step) and when the viewer received it, and whether its stream
  ended: a rank hung in a collective, or killed, shows how long it has been silent;
- each parameter's gradient norm per rank per step: its spread across ranks (min, max);
- each parameter's fingerprint per rank per step (``fp``, a sum of its value bytes, sent by
  ranks): data-parallel ranks hold bitwise-equal parameters after every step, so a rank whose
  fingerprint differs from the others' (the most common value; with two ranks, rank 0's) has
  parted from them at that step. The first such step and parameter is kept per rank.

``RankHold`` is the viewer's half of "pause every rank at the same step boundary": see its
docstring.
"""

from __future__ import annotations

import time
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

STEPS_KEPT = 64  # steps of gradient norms and fingerprints kept per rank
SILENT_S = 5.0  # a running rank silent this long is shown as stalled


@dataclass
class RankLast:
    """A rank's last event as the viewer received it."""

    kind: str
    step: int
    at: float  # the viewer's clock (``RankBoard.clock``) when it arrived
    ended: str = ""  # why its stream ended ("" while it sends)
    status: str = "running"  # its last status: running, paused, ended
    params_step: int | None = None  # the last step whose parameters it reported (a step boundary)


@dataclass
class Parting:
    """Where a rank's parameters first parted from the other ranks'."""

    step: int
    path: str
    others: int  # how many ranks hold the other value


class RankBoard:
    """What the viewer knows across ranks (see the module's docstring). Changed under the state's
    lock by ``saw`` (every ranked event); ``rev`` moves when something shown changed."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.world_size = 1
        self.last: dict[int, RankLast] = {}
        self.parted: dict[int, Parting] = {}
        self._grads: OrderedDict[int, dict[int, dict[str, float]]] = OrderedDict()  # step -> rank -> path -> norm
        self._fps: OrderedDict[int, dict[int, dict[str, int]]] = OrderedDict()  # step -> rank -> path -> fp
        self.rev = 0

    # --- folding (the source's thread, under the state's lock) -----------------------------------

    def saw(self, event: dict[str, Any]) -> None:
        rank = event.get("rank", 0)
        self.world_size = max(self.world_size, event.get("world_size", 1), rank + 1)
        last = self.last.get(rank)
        if last is None:
            last = self.last[rank] = RankLast(event["kind"], event["step"], self.clock())
        else:
            last.kind, last.step, last.at = event["kind"], event["step"], self.clock()
        kind = event["kind"]
        if kind == "status":
            last.status = event["state"]
        elif kind == "end":
            last.status, last.ended = "ended", f"ended ({event['status']})"
        elif kind in ("step", "params"):
            # the step boundary is passed once the optimizer's step event comes (a light step,
            # ``capture.sampling``, sends no params event)
            last.params_step = max(event["step"], last.params_step if last.params_step is not None else -1)
            if kind == "params":
                self._fold_params(rank, event)
        self.rev += 1

    def gone(self, rank: int, reason: str) -> None:
        """Rank ``rank``'s stream closed (its process ended, was killed, or the viewer detached)."""
        last = self.last.get(rank)
        if last is None:
            last = self.last[rank] = RankLast("", 0, self.clock())
        if not last.ended:
            last.ended = reason
            self.rev += 1

    def _fold_params(self, rank: int, event: dict[str, Any]) -> None:
        step = event["step"]
        grads = {i["path"]: i["grad_norm"] for i in event["items"] if i.get("grad_norm") is not None}
        fps = {i["path"]: i["fp"] for i in event["items"] if "fp" in i}
        for table, values in ((self._grads, grads), (self._fps, fps)):
            if values:
                table.setdefault(step, {})[rank] = values
                while len(table) > STEPS_KEPT:
                    table.popitem(last=False)
        if fps:
            self._check_parting(step)

    def _check_parting(self, step: int) -> None:
        """Flag the ranks whose fingerprints at ``step`` differ from the others' (the first step
        and parameter per rank is kept)."""
        by_rank = self._fps.get(step, {})
        if len(by_rank) < 2:
            return
        for rank, path, others in parted_ranks(by_rank):
            if rank not in self.parted or self.parted[rank].step > step:
                self.parted[rank] = Parting(step, path, others)

    # --- reading (the UI thread, under the state's lock) --------------------------------------

    @property
    def ranks(self) -> list[int]:
        return sorted(set(self.last) | set(range(self.world_size)))

    def spread(self, step: int | None = None) -> tuple[int | None, dict[str, tuple[float, float, int]]]:
        """``(step, {path: (min, max, ranks)})``: each parameter's gradient norm across the ranks
        that reported ``step`` (None: the latest step that most ranks reported)."""
        if not self._grads:
            return None, {}
        if step is None:
            best = max(len(r) for r in self._grads.values())
            step = max(s for s, r in self._grads.items() if len(r) == best)
        by_rank = self._grads.get(step)
        if not by_rank:
            return step, {}
        out: dict[str, tuple[float, float, int]] = {}
        paths = set().union(*(v.keys() for v in by_rank.values()))
        for path in paths:
            values = [v[path] for v in by_rank.values() if path in v]
            out[path] = (min(values), max(values), len(values))
        return step, out

    def parted_at(self, step: int | None) -> dict[int, list[str]]:
        """The ranks whose parameters differ from the others' at ``step`` (None: the latest step
        with fingerprints of two ranks or more), with those parameters."""
        steps = [s for s, r in self._fps.items() if len(r) >= 2]
        if not steps:
            return {}
        by_rank = self._fps.get(max(steps) if step is None else step, {})
        out: dict[int, list[str]] = {}
        for rank, path, _ in parted_ranks(by_rank, every=True):
            out.setdefault(rank, []).append(path)
        return out

    def rows(self, now: float | None = None) -> list[dict[str, Any]]:
        """One row per rank for the rank bar: its last event, how long ago, its state."""
        now = self.clock() if now is None else now
        rows = []
        for rank in self.ranks:
            last = self.last.get(rank)
            if last is None:
                rows.append({"rank": rank, "kind": "", "step": None, "age": None, "state": "waiting",
                             "parted": self.parted.get(rank)})
                continue
            age = now - last.at
            if last.ended:
                state = "ended" if last.status == "ended" and last.ended.startswith("ended") else "gone"
            elif last.status == "paused":
                state = "paused"
            elif age >= SILENT_S:
                state = "silent"
            else:
                state = "running"
            rows.append({"rank": rank, "kind": last.kind, "step": last.step, "age": age, "state": state,
                         "why": last.ended, "parted": self.parted.get(rank)})
        return rows


def parted_ranks(by_rank: dict[int, dict[str, int]], every: bool = False) -> list[tuple[int, str, int]]:
    """``(rank, path, ranks holding the common value)`` for each rank whose fingerprint of some
    parameter differs from the most common one (a tie goes to the lowest rank's value, rank 0 as
    ``diff F#0 F#1`` takes it); the first such parameter per rank, or with ``every`` all of them."""
    found: list[tuple[int, str, int]] = []
    done: set[int] = set()
    paths: list[str] = []
    for values in by_rank.values():
        paths += [p for p in values if p not in paths]
    for path in paths:
        held = {rank: v[path] for rank, v in sorted(by_rank.items()) if path in v}
        if len(held) < 2:
            continue
        counts = Counter(held.values())
        top = max(counts.values())
        common = next(fp for fp in held.values() if counts[fp] == top)  # (sorted by rank: ties go to rank 0)
        for rank, fp in held.items():
            if fp != common and (every or rank not in done):
                done.add(rank)
                found.append((rank, path, counts[common]))
    return found


class RankHold:
    """The viewer's half of holding every rank at the same step boundary.

    Pausing one rank alone stalls the others in the next collective, until it times out. So a
    pause goes to every rank (each stops at its next step boundary, where it has no collective
    pending), and so does a single step (each runs one step and stops). A rank may have passed
    that boundary already when the pause reaches it (the viewer's knowledge lags): it then stops
    at the next one, and a rank stopped earlier would wait for it inside that step's collective.
    ``settle`` finds the ranks stopped behind the furthest boundary any rank will stop at, and
    lets them run on to it (``{"cmd": "resume", "until": T}``: stop at the end of step T), so
    every rank ends up held at the same boundary. A breakpoint that stops one rank holds the
    others too (they are sent ``pause``)."""

    def __init__(self) -> None:
        self.holding = False
        self._sent: dict[int, Any] = {}  # rank -> the last message settle sent it
        self._released: dict[int, int] = {}  # rank -> its status revision when the viewer resumed

    def start(self, states: dict[int, Any] | None = None) -> None:
        """The viewer paused or stepped every rank (``states``: their states now; caller holds
        the lock): a pause status they show now is from before the command and holds nothing,
        only one that comes after it (each rank's status revision moves)."""
        self.holding, self._sent = True, {}
        if states is not None:
            self._released = {rank: s.rev.status for rank, s in states.items()}

    def release(self, states: dict[int, Any]) -> None:
        """The viewer resumed every rank: until a rank reports a new pause (a breakpoint), its
        pause status, not yet replaced by ``running``, holds nothing. Caller holds the lock."""
        self.holding, self._sent = False, {}
        self._released = {rank: s.rev.status for rank, s in states.items()}

    def settle(self, board: RankBoard, states: dict[int, Any]) -> dict[int, dict[str, Any]]:
        """The messages to send now (rank -> message) to bring every live rank to one boundary.
        ``states``: rank -> its ``SessionState`` (status and step). Caller holds the lock."""
        live = {r: s for r, s in states.items() if not (board.last.get(r) and board.last[r].ended)
                and s.status not in ("ended", "disconnected")}
        paused = {r: s.step for r, s in live.items() if s.status == "paused"
                  and self._released.get(r) != s.rev.status}
        if not paused:
            return {}
        if not self.holding:  # a breakpoint stopped a rank: hold the others with it
            self.start()
        out: dict[int, dict[str, Any]] = {}
        target = max(paused.values())
        for rank in live:
            if rank in paused:
                continue
            last = board.last.get(rank)
            done = last.params_step if last is not None else None
            target = max(target, (done + 1) if done is not None else 0)
            if self._sent.get(rank) is None:
                out[rank] = {"cmd": "pause"}
        for rank, step in paused.items():
            if step < target:
                message = {"cmd": "resume", "until": target}
                if self._sent.get(rank) != message:
                    out[rank] = message
        self._sent.update(out)
        return out

    @staticmethod
    def held_at(states: dict[int, Any]) -> int | None:
        """The step every rank is paused at, if they all are at one."""
        steps = {s.step for s in states.values() if s.status not in ("ended", "disconnected")}
        if not steps or any(s.status != "paused" for s in states.values()
                            if s.status not in ("ended", "disconnected")):
            return None
        return steps.pop() if len(steps) == 1 else None
