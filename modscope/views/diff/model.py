"""The plain data of a trace diff: dataclasses of JSON types (``to_dict()`` gives JSON-able dicts;
a relative difference that is not finite, one side missing or not a number, is ``None`` there).

A ``TraceDiff`` holds everything a view needs to highlight differences without recomputing:

- ``modules``: the union of both module trees in tree order (``ModuleInfo``);
- ``structure``: modules, parameters and buffers added, removed or changed (``StructureChange``;
  "added" means present in B only);
- ``steps``: one ``StepDiff`` per compared pair of steps, with per module (``ModuleStep``) the
  worst ``Number`` of each category and how many numbers went past the threshold, and the point
  where the firing orders part (``OrderSplit``: a position in the step's module events and the
  ``seq`` of the event on each side, so a timeline can scroll to it);
- ``graph``: autograd ops added or removed per module (``GraphChange``);
- ``first``: the first divergence (``Divergence``), the answer to "where did these runs part?".
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

# Categories of compared numbers, in the order a report shows them.
ACTIVATIONS = ("input", "output")  # forward_pre inputs, forward outputs
GRADIENTS = ("grad_output", "grad_input")  # backward_pre grad_outputs, backward grad_inputs
PARAMETERS = ("norm", "grad_norm", "update_ratio")  # the ``params`` event, per parameter
TIMES = ("fwd_time", "bwd_time")  # summed dur_ns of a module's calls in the step
SHAPES = ("shape", "calls", "params")  # a value's shape or dtype, a call or a parameter on one side only
CATEGORIES = ACTIVATIONS + GRADIENTS + PARAMETERS + TIMES + SHAPES


def _plain(value: Any) -> Any:
    """JSON has no infinity: a relative difference that is not finite travels as ``None``."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


class _Plain:
    def to_dict(self) -> dict[str, Any]:
        return _plain(dataclasses.asdict(self))  # type: ignore[call-overload]


@dataclass
class Number(_Plain):
    """One compared number of one module in one step. ``a``/``b`` are the two values (a number,
    or a text such as a shape; ``None``: absent on that side), ``rel`` their relative difference
    (``inf``: not comparable), ``diverged`` whether it counts as a difference (past the
    threshold; timings only when asked). ``seq_a``/``seq_b`` are the events it came from.
    ``approx_a``/``approx_b``: that side's value is an estimate (an update ratio measured on a
    sample of a large tensor's values: the item's ``update_sampled``; its norm and NaN/Inf
    counts taken on that sample: ``stats_sampled``), so ``rel`` is approximate too
    (``approx``); views mark such numbers ``≈``."""

    path: str
    category: str
    what: str
    a: Any
    b: Any
    rel: float
    diverged: bool
    seq_a: int | None = None
    seq_b: int | None = None
    approx_a: bool = False
    approx_b: bool = False

    @property
    def approx(self) -> bool:
        return self.approx_a or self.approx_b


@dataclass
class ModuleStep(_Plain):
    """A module's numbers in one step pair: the worst number per category (``worst``), how many
    numbers went past the threshold (``diverged``) and the first of them in firing order."""

    path: str
    worst: dict[str, Number] = field(default_factory=dict)
    diverged: int = 0
    first: Number | None = None

    def rel(self, category: str) -> float | None:
        """The largest relative difference of ``category`` (``None``: nothing compared)."""
        n = self.worst.get(category)
        return None if n is None else n.rel


@dataclass
class OrderSplit(_Plain):
    """Where two firing orders part inside a step pair: ``position`` in the step's module events
    (``forward_pre``, ``forward``, ``backward_pre``, ``backward``), the event on each side as
    ``[kind, path, call]`` (``None``: that side's order ended) and its ``seq``, and up to three
    events on each side before and after it (``context_a``/``context_b``, from ``start``)."""

    position: int
    a: list | None
    b: list | None
    seq_a: int | None
    seq_b: int | None
    start: int
    context_a: list[list]
    context_b: list[list]


@dataclass
class StepDiff(_Plain):
    """One compared pair of steps: per module its numbers (``modules``), per parameter or buffer
    path its ``norm``, ``grad_norm``, ``update_ratio``, ``nan`` and ``inf`` (``params``: what a
    parameter table highlights), where the firing orders part (``order``), the first divergence
    in it (``first``) and the largest relative difference (``max_rel``, at ``max_where``;
    ``max_approx``: it is a sampled figure's, approximate). ``partial``: a side's step was
    cut off (a truncated trace)."""

    step_a: int
    step_b: int
    modules: dict[str, ModuleStep]
    order: OrderSplit | None = None
    first: Divergence | None = None
    max_rel: float = 0.0
    max_where: str = ""
    partial: bool = False
    params: dict[str, dict[str, Number]] = field(default_factory=dict)
    # how each side's step was watched (``capture.sampling``): "full", "light" (only the loss and
    # global gradient norm are compared), or "" (not said)
    detail_a: str = ""
    detail_b: str = ""
    max_approx: bool = False

    @property
    def diverged(self) -> bool:
        return self.first is not None


@dataclass
class StructureChange(_Plain):
    """A module, parameter or buffer (``what``) named ``name`` that is ``added`` (in B only),
    ``removed`` (in A only) or ``changed``; ``path`` is the module it belongs to; ``a``/``b``
    describe it on each side."""

    path: str
    what: str
    name: str
    change: str
    a: str | None
    b: str | None


@dataclass
class GraphChange(_Plain):
    """Autograd ops recorded under module ``path`` (``None``: outside every module) that B has
    more of (``added``: op name -> count) or fewer of (``removed``) than A, in the graph of steps
    ``step_a``/``step_b``."""

    path: str | None
    step_a: int
    step_b: int
    added: dict[str, int]
    removed: dict[str, int]


@dataclass
class Divergence(_Plain):
    """The first place the two traces part: ``kind`` is ``structure``, ``order``, ``number``,
    ``graph`` or ``steps``; ``path`` the module (``None``: not one module); ``message`` says
    what, in one line."""

    kind: str
    path: str | None
    step_a: int | None
    step_b: int | None
    message: str
    number: Number | None = None


@dataclass
class ModuleInfo(_Plain):
    """A module of either tree: its class on each side (``None``: absent there)."""

    path: str
    cls_a: str | None
    cls_b: str | None

    @property
    def depth(self) -> int:
        return self.path.count(".") + 1 if self.path else 0


@dataclass
class Side(_Plain):
    """What a diff knows of one trace: its ``name`` (file path or a label), the ``framework``
    that recorded it, its ``steps``, whether it was cut off (``truncated``), the compared steps."""

    name: str
    framework: str | None
    model: str | None
    steps: list[int]
    truncated: bool


@dataclass
class TraceDiff(_Plain):
    """Everything two traces differ in (see the module docstring). ``diverged``: something
    differs beyond the threshold (the CLI's exit status 1). Rich renders it as the report;
    ``str()`` is that report as text."""

    a: Side
    b: Side
    rtol: float
    timing: float | None
    modules: list[ModuleInfo]
    structure: list[StructureChange]
    graph: list[GraphChange]
    steps: list[StepDiff]
    only_a: list[int]
    only_b: list[int]
    notes: list[str]
    first: Divergence | None

    @property
    def diverged(self) -> bool:
        return self.first is not None

    @property
    def exit_code(self) -> int:
        return 1 if self.diverged else 0

    def step(self, step_a: int) -> StepDiff | None:
        """The compared step pair whose A side is ``step_a``."""
        return next((s for s in self.steps if s.step_a == step_a), None)

    @property
    def focus(self) -> StepDiff | None:
        """The step pair a report details: the first divergent one, else the last compared."""
        if self.first is not None and self.first.step_a is not None:
            found = self.step(self.first.step_a)
            if found is not None:
                return found
        return self.steps[-1] if self.steps else None

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out["diverged"] = self.diverged
        return out

    def __rich_console__(self, console: Any, options: Any) -> Any:
        from .render import render
        yield from render(self)

    def __str__(self) -> str:
        from ..trace import Printable
        return str(Printable(self))

    def _repr_html_(self) -> str:
        """Jupyter: the report with its colours (``views.notebook``)."""
        from ..notebook import printable_html
        return printable_html(self)
