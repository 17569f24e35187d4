"""One step's numbers, for the views when the timeline stays on a step (``g``, ``[``, ``]``).

The state keeps the latest value of each module timing and parameter statistic; a step the
user went back to has its own, in its events: forward/backward durations (summed over the
step's calls, as the state sums them) and its ``params`` event. ``StepValues`` holds those and
lays them over the state's records for the tree's labels and the parameter table.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from ..report import own_backward
from .state import ModuleInfo, ParamInfo

PARAM_FIELDS = ("norm", "grad_norm", "update_ratio", "update_sampled", "mean", "std", "nan", "inf", "stats_sampled")


@dataclass(frozen=True)
class StepValues:
    """Step ``step``'s module timings (path -> (forward ns, backward ns)) and parameter
    statistics (path -> the ``params`` event's item; ``None``: the step has no ``params``
    event, as the step training stopped in)."""

    step: int
    timings: dict[str, tuple[int, int]]
    params: dict[str, dict[str, Any]] | None
    no_backward: frozenset[str] = frozenset()  # modules with no backward of their own in the step


    def module(self, m: ModuleInfo) -> ModuleInfo:
        """``m`` with this step's timings (none: the module did not run in it)."""
        fwd, bwd = self.timings.get(m.path, (0, 0))
        return replace(m, fwd_ns=fwd, bwd_ns=bwd, no_backward=m.path in self.no_backward)

    def param(self, p: ParamInfo) -> ParamInfo:
        """``p`` with this step's statistics (``–`` when the step has none)."""
        item = self.params.get(p.path) if self.params is not None else None
        values = {k: item.get(k, 0 if k in ("nan", "inf") else None) if item is not None else
                  (0 if k in ("nan", "inf") else None) for k in PARAM_FIELDS}
        return replace(p, **values)


def step_values(events: Iterable[dict[str, Any]], step: int) -> StepValues:
    """The numbers of ``step`` in ``events`` (other steps' events are ignored)."""
    timings: dict[str, list[int]] = {}
    own: dict[str, bool] = {}  # path -> whether any of its backward events was its own
    params: dict[str, dict[str, Any]] | None = None
    for e in events:
        if e["step"] != step:
            continue
        kind = e["kind"]
        if kind in ("forward", "backward"):
            pair = timings.setdefault(e["path"], [0, 0])
            pair[kind == "backward"] += e["dur_ns"]
            if kind == "backward":
                own[e["path"]] = own.get(e["path"], False) or own_backward(e)
        elif kind == "params":
            params = {item["path"]: item for item in e["items"]}
    return StepValues(step, {p: (f, b) for p, (f, b) in timings.items()}, params,
                      frozenset(p for p, mine in own.items() if not mine))
