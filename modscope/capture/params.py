"""The optimizer's side of a trace: ``step`` and ``params`` events.

The optimizer step pre-hook snapshots the parameters (for update ratios); the post-hook emits
the ``step`` event with the learning rates (and ``state_bytes``, what the optimizer's state
tensors hold), then the ``params`` event (norm, grad norm, update ratio, mean, std, NaN/Inf of
every parameter, then of every buffer), and ends the step. In a rank of several each parameter
also gets ``fp``, a fingerprint of its value bytes (``param_stats.fingerprint``): data-parallel
ranks hold bitwise-equal parameters after every step, so the first step and parameter whose
fingerprints part on two ranks is where they diverged. The statistics come from the backend's
``stats_plan``, made once per parameter list. ``ParamEvents`` is that part of ``Trace``.

The values' norm, mean, std and NaN/Inf counts of a large floating-point tensor are estimated
from the sample its update ratio is measured on (``param_stats``: the item's ``stats_sampled``)
unless the trace was made with ``exact_stats=True`` (``modscope run``/``record
--exact-stats``, which reach the script's trace through ``EXACT_STATS_VARIABLE``).
"""

from __future__ import annotations

import argparse
import itertools
import operator
import os
from collections.abc import Iterable, MutableMapping
from typing import Any

from ..events.schema import finite_or_none

EXACT_STATS_VARIABLE = "MODSCOPE_EXACT_STATS"  # `--exact-stats` to the script's trace (run's child, record, ranks)


class ParamEvents:
    """Optimizer hooks and parameter statistics (a base of ``Trace``)."""

    # True: every tensor's norm, mean, std and NaN/Inf counts over all its values (``Recorder``'s
    # ``exact_stats``); False: a large one's from its update sample (``capture.param_stats``)
    exact_stats: bool = False

    def _on_optimizer_pre(self, optimizer: Any, args: tuple, kwargs: dict) -> None:
        try:
            params = _flat_params(optimizer.param_groups)
            plan, paths = self._plan(id(optimizer), params, "_parameters", foreign_ok=False)
            if paths is None:
                return  # another model's optimizer (optimizer hooks are global)
            if self._step_over:  # a light step shows no module event: it is seen to begin here at the latest
                self._begin_step()
            if self._full:  # the update ratios of the params event (a light step has none)
                plan.snapshot()
            self._snapshotted.add(id(optimizer))
        except Exception as exc:  # noqa: BLE001
            self._emit_error(exc, where="optimizer step pre hook")

    def _on_optimizer_post(self, optimizer: Any, args: tuple, kwargs: dict) -> None:
        try:
            if id(optimizer) not in self._snapshotted:
                return  # not one of ours (see _on_optimizer_pre)
            self._snapshotted.discard(id(optimizer))
            index = self._opt_steps.get(id(optimizer), 0)
            self._opt_steps[id(optimizer)] = index + 1
            lrs = [finite_or_none(float(g["lr"])) for g in optimizer.param_groups]
            plan = self._plans[id(optimizer)][0]
            # The params event's figures first (a rank of several: its fingerprints at every
            # step): their passes over the gradients give the step event's global norm too.
            items = self._params_items(id(optimizer)) if self._full or self._fingerprints else None
            # what every step records, full or light: loss, time, gradient norm, NaN/Inf (``sampling``)
            self._emit_step_event(type(optimizer).__name__, index, lrs, plan.tensors,
                                  state_bytes=self._state_bytes(optimizer),
                                  grad_sq=getattr(plan, "grad_sq", None) if items is not None else None)
            if items:
                self._emit("params", items=items)
            self._advance()
        except Exception as exc:  # noqa: BLE001
            self._emit_error(exc, where="optimizer step post hook")

    def _state_bytes(self, optimizer: Any) -> int:
        """Bytes of the tensors the optimizer keeps per parameter (Adam's two moments, SGD's
        momentum buffers), for the summary's memory block: summed again only when the number of
        parameters with state changes (optimizers make it on their first step), so a step pays a
        ``len``."""
        state = optimizer.state
        cache = self.__dict__.setdefault("_state_sizes", {})
        known = cache.get(id(optimizer))
        if known is not None and known[0] == len(state):
            return known[1]
        total = sum(v.nbytes for entry in state.values() if isinstance(entry, dict)
                    for v in entry.values() if hasattr(v, "nbytes") and not isinstance(v, (int, float)))
        cache[id(optimizer)] = (len(state), int(total))
        return int(total)

    def _emit_params(self, optimizer: int | None) -> None:
        """The ``params`` event (``_params_items``), when there is anything to say."""
        items = self._params_items(optimizer)
        if items:
            self._emit("params", items=items)

    def _params_items(self, optimizer: int | None) -> list[dict[str, Any]]:
        """Parameters (with update ratios after an optimizer step, whose pre-hook took a
        snapshot of them), then buffers (running statistics and the like)."""
        if optimizer is None:
            plan, paths = self._plan("step", list(self._param_paths().values()), "_parameters")
        else:
            plan, paths = self._plans[optimizer]
        items = plan.stats(paths) if paths is not None else []
        if self._fingerprints and items:  # one rank of several: what must be equal on all of them
            fingerprints = plan.fingerprints()
            if fingerprints is not None:
                for item, fp in zip(items, fingerprints, strict=True):
                    item["fp"] = fp
        buffers = {id(t): t for t in _buffers_of(self._modules) if t is not None}
        if buffers:
            plan, paths = self._plan("buffers", list(buffers.values()), "_buffers")
            items += plan.stats(paths)
        return items

    def _plan(self, owner: Any, tensors: list[Any], attr: str,
              foreign_ok: bool = True) -> tuple[Any, list[str] | None]:
        """The ``StatsPlan`` for ``tensors`` with their paths, made again only when the tensors
        change. With ``foreign_ok=False``, a list holding none of the traced modules' tensors
        gets ``paths=None`` (another model's optimizer)."""
        entry = self._plans.get(owner)
        if entry is not None and entry[0].matches(tensors):
            return entry
        names = self._tensor_names(tensors, attr)
        paths = [names.get(id(t), f"param{i}") for i, t in enumerate(tensors)]
        if not foreign_ok and not any(id(t) in names for t in tensors):
            paths = None
        entry = self._plans[owner] = (self._backend.stats_plan(tensors, exact_stats=self.exact_stats), paths)
        return entry

    def _tensor_names(self, tensors: list[Any], attr: str) -> dict[int, str]:
        """``id(tensor) -> path`` of parameters (``attr="_parameters"``) or buffers; the module
        list is refreshed when a tensor is not found (a module added since attaching)."""
        names = {id(t): path for path, t in self._named_tensors(attr).items()}
        if any(id(t) not in names for t in tensors) and self._roots:
            self._modules = [(path, mod) for root in self._roots
                             for path, mod in root.named_modules(prefix=self._paths.get(id(root), ""))]
            names = {id(t): path for path, t in self._named_tensors(attr).items()}
        return names

    def _param_paths(self) -> dict[str, Any]:
        return self._named_tensors("_parameters")

    def _named_tensors(self, attr: str) -> dict[str, Any]:
        """Parameters (``attr="_parameters"``) or buffers of the traced modules by path, as
        ``named_parameters``/``named_buffers`` list them (each tensor once), without their walk."""
        out: dict[str, Any] = {}
        seen: set[int] = set()
        for path, mod in self._modules:
            for name, t in getattr(mod, attr).items():
                if t is not None and id(t) not in seen:
                    seen.add(id(t))
                    out[f"{path}.{name}" if path else name] = t
        return out



# The per-step scans of the optimizer hooks, as C-level iterator chains (no Python loop over the
# groups or the modules: at a step's end every bytecode runs with the caches cold).
_params_of_group = operator.itemgetter("params")
_second = operator.itemgetter(1)
_buffer_dict = operator.attrgetter("_buffers")


def _flat_params(param_groups: list[dict[str, Any]]) -> list[Any]:
    """Every group's parameters, in order."""
    return list(itertools.chain.from_iterable(map(_params_of_group, param_groups)))


def _buffers_of(modules: list[tuple[str, Any]]) -> Iterable[Any]:
    """The buffers (``None`` included) of the ``(path, module)`` pairs, module by module."""
    return itertools.chain.from_iterable(map(dict.values, map(_buffer_dict, map(_second, modules))))


def add_exact_stats_flag(parser: argparse.ArgumentParser) -> None:
    """``--exact-stats`` for ``modscope run`` and ``record``."""
    parser.add_argument("--exact-stats", action="store_true",
                        help="each parameter's norm, mean, std and NaN/Inf counts over all its values on full-detail "
                             "steps (default: a tensor of more than 65,536 values has them estimated from the "
                             "64K-value sample its update ratio is measured on, marked ≈; gradient norms are exact "
                             "either way). Costs about one pass over the weights per full step: ~50 ms on "
                             "ViT-B/16's 86M values, one thread")


def apply_exact_stats_flag(args: argparse.Namespace, environ: MutableMapping[str, str] | None = None) -> None:
    """With ``--exact-stats``, ``EXACT_STATS_VARIABLE=1`` in ``environ`` (default: this process's,
    which the script's trace inherits: ``run``'s child, the ranks, ``record`` itself)."""
    if getattr(args, "exact_stats", False):
        (os.environ if environ is None else environ)[EXACT_STATS_VARIABLE] = "1"


def exact_stats_from_env(environ: MutableMapping[str, str] | None = None) -> bool:
    """The trace's ``exact_stats`` from ``EXACT_STATS_VARIABLE`` (taken out of ``environ``,
    default this process's, so the script does not see it): True for ``1``, False when unset.
    ``ValueError`` naming the variable for anything else."""
    value = (os.environ if environ is None else environ).pop(EXACT_STATS_VARIABLE, None)
    if not value:
        return False
    if value != "1":
        raise ValueError(f"${EXACT_STATS_VARIABLE}={value!r}: expected '1' (set by --exact-stats)")
    return True
