"""``torch.optim.swa_utils``: weight averaging (SWA and EMA), its learning-rate schedule and the
batch-norm statistics refresh, with torch's update formulas in torch's order.

- ``AveragedModel(model)``: a deep copy whose parameters (and with ``use_buffers`` its buffers)
  ``update_parameters(model)`` averages: the first call copies, later ones apply ``avg_fn``
  (one tensor at a time) or ``multi_avg_fn`` (lists of tensors of one dtype), by default the
  running mean (SWA). ``get_ema_avg_fn``/``get_ema_multi_avg_fn`` give exponential averages.
- ``SWALR``: anneals each group's lr to ``swa_lr`` over ``anneal_epochs`` (cos or linear).
- ``update_bn(loader, model)``: recomputes batch-norm running statistics with one pass.
"""

from __future__ import annotations

import copy
import itertools
import math
from collections.abc import Callable, Iterable
from typing import Any, Literal

import engine.autograd.grad_mode as grad_mode

from .._creation import tensor
from .._dtype import long
from .._tensor import Tensor
from ..nn.modules.batchnorm import _BatchNorm
from ..nn.modules.module import Module
from .lr_scheduler import LRScheduler, _format_param, _warn_get_lr_called_within_step
from .optimizer import Optimizer

__all__ = ["SWALR", "AveragedModel", "get_ema_avg_fn", "get_ema_multi_avg_fn", "get_swa_avg_fn",
           "get_swa_multi_avg_fn", "update_bn"]

PARAM_LIST = list[Tensor] | tuple[Tensor, ...]


def _check_decay(decay: float) -> None:
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")


def get_ema_multi_avg_fn(decay: float = 0.999) -> Callable[[PARAM_LIST, PARAM_LIST, Any], None]:
    """In place, for lists of one dtype: ``ema.lerp_(current, 1 - decay)`` (floating point),
    ``ema * decay + current * (1 - decay)`` copied back otherwise. Raises ``ValueError`` for a
    decay outside [0, 1]."""
    _check_decay(decay)

    def ema_update(ema_param_list: PARAM_LIST, current_param_list: PARAM_LIST, _: Any) -> None:
        with grad_mode.no_grad():
            if ema_param_list[0].is_floating_point() or ema_param_list[0].is_complex():
                for p_ema, p_model in zip(ema_param_list, current_param_list):
                    p_ema.lerp_(p_model, 1 - decay)
            else:
                for p_ema, p_model in zip(ema_param_list, current_param_list, strict=True):
                    p_ema.copy_(p_ema * decay + p_model * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn() -> Callable[[PARAM_LIST, PARAM_LIST, Any], None]:
    """In place, for lists of one dtype: the running mean with ``num_averaged`` values so far
    (``lerp_`` by ``1 / (n + 1)`` for floating point)."""
    def swa_update(averaged_param_list: PARAM_LIST, current_param_list: PARAM_LIST, num_averaged: Any) -> None:
        with grad_mode.no_grad():
            if averaged_param_list[0].is_floating_point() or averaged_param_list[0].is_complex():
                weight = float(1 / (num_averaged + 1))
                for p_avg, p_model in zip(averaged_param_list, current_param_list):
                    p_avg.lerp_(p_model, weight)
                return
            for p_avg, p_model in zip(averaged_param_list, current_param_list):
                diff = p_model - p_avg
                if isinstance(num_averaged, Tensor):
                    p_avg.addcdiv_(diff, num_averaged + 1)
                else:
                    p_avg.add_(diff, alpha=1.0 / (num_averaged + 1))

    return swa_update


def get_ema_avg_fn(decay: float = 0.999) -> Callable[[Tensor, Tensor, Any], Tensor]:
    """Per tensor: ``decay * ema + (1 - decay) * current``. Raises ``ValueError`` for a decay
    outside [0, 1]."""
    _check_decay(decay)

    def ema_update(ema_param: Tensor, current_param: Tensor, num_averaged: Any) -> Tensor:
        with grad_mode.no_grad():
            return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn() -> Callable[[Tensor, Tensor, Any], Tensor]:
    """Per tensor: the running mean ``avg + (current - avg) / (num_averaged + 1)``."""
    def swa_update(averaged_param: Tensor, current_param: Tensor, num_averaged: Any) -> Tensor:
        with grad_mode.no_grad():
            return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


class AveragedModel(Module):
    """A deep copy of ``model`` holding averaged weights (SWA by default, EMA with the EMA
    functions); call ``update_parameters(model)`` after each optimizer step (or epoch), and use
    it like the model (``forward`` calls the copy).

    Args:
        model: the model to average (copied; never modified).
        device: moves the copy there (the engine has only ``'cpu'``).
        avg_fn: ``(averaged, current, num_averaged) -> new averaged``, per tensor.
        multi_avg_fn: ``(averaged_list, current_list, num_averaged) -> None``, in place.
        use_buffers: average the buffers too (else they are copied from ``model`` each update).

    Raises ``AssertionError`` when both ``avg_fn`` and ``multi_avg_fn`` are given (as torch).
    """

    n_averaged: Tensor

    def __init__(self, model: Module, device: Any = None, avg_fn: Callable | None = None,
                 multi_avg_fn: Callable | None = None, use_buffers: bool = False) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", tensor(0, dtype=long, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.module(*args, **kwargs)

    def _pairs(self, model: Module) -> list[tuple[Tensor, Tensor]]:
        """(averaged, current) detached, parameters (and buffers with ``use_buffers``) in order."""
        if self.use_buffers:
            mine: Iterable[Tensor] = itertools.chain(self.module.parameters(), self.module.buffers())
            theirs: Iterable[Tensor] = itertools.chain(model.parameters(), model.buffers())
        else:
            mine, theirs = self.parameters(), model.parameters()
        return [(a.detach(), m.detach()) for a, m in zip(mine, theirs)]

    def update_parameters(self, model: Module) -> None:
        """Fold ``model``'s current weights into the average (the first call copies them)."""
        pairs = self._pairs(model)
        with grad_mode.no_grad():
            if int(self.n_averaged) == 0:
                for avg, cur in pairs:
                    avg.copy_(cur)
            elif self.avg_fn is not None and self.multi_avg_fn is None:
                for avg, cur in pairs:
                    avg.copy_(self.avg_fn(avg, cur, self.n_averaged))
            else:
                self._update_grouped(pairs)
            if not self.use_buffers:
                for b_swa, b_model in zip(self.module.buffers(), model.buffers(), strict=True):
                    b_swa.detach().copy_(b_model.detach())
            self.n_averaged += 1

    def _update_grouped(self, pairs: list[tuple[Tensor, Tensor]]) -> None:
        """``multi_avg_fn`` on each dtype's tensors; without one, the per-tensor SWA mean (what
        torch runs on CPU, where it has no foreach kernels)."""
        groups: dict[Any, list[tuple[Tensor, Tensor]]] = {}
        for avg, cur in pairs:
            groups.setdefault(avg.dtype, []).append((avg, cur))
        for group in groups.values():
            if self.multi_avg_fn is not None:
                self.multi_avg_fn([a for a, _ in group], [c for _, c in group], self.n_averaged)
            else:
                swa = get_swa_avg_fn()
                for avg, cur in group:
                    avg.copy_(swa(avg, cur, self.n_averaged))


def update_bn(loader: Iterable[Any], model: Module, device: Any = None) -> None:
    """Recompute the running statistics of every batch norm of ``model`` with one pass over
    ``loader`` (a batch or the first item of a list/tuple batch goes to ``model``): the stats are
    reset and accumulated as a cumulative average, the momenta and training mode restored."""
    with grad_mode.no_grad():
        momenta = {}
        for module in model.modules():
            if isinstance(module, _BatchNorm):
                module.reset_running_stats()
                momenta[module] = module.momentum
        if not momenta:
            return
        was_training = model.training
        model.train()
        for module in momenta:
            module.momentum = None
        for batch in loader:
            if isinstance(batch, list | tuple):
                batch = batch[0]
            if device is not None:
                batch = batch.to(device)
            model(batch)
        for module, momentum in momenta.items():
            module.momentum = momentum
        model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's lr from its current value to ``swa_lr`` over ``anneal_epochs`` steps
    (``'cos'`` or ``'linear'``), then hold it.

    Raises ``ValueError`` for another ``anneal_strategy``, a negative or non-int
    ``anneal_epochs``, or a ``swa_lr`` list of the wrong length."""

    def __init__(self, optimizer: Optimizer, swa_lr: float | list[float], anneal_epochs: int = 10,
                 anneal_strategy: Literal["cos", "linear"] = "cos", last_epoch: int = -1) -> None:
        swa_lrs = _format_param("swa_lr", optimizer, swa_lr)
        for lr, group in zip(swa_lrs, optimizer.param_groups, strict=True):
            group["swa_lr"] = lr
        if anneal_strategy not in ["cos", "linear"]:
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t: float) -> float:
        return t

    @staticmethod
    def _cosine_anneal(t: float) -> float:
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr: float, swa_lr: float, alpha: float) -> float:
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self) -> list[float]:
        """torch's formula: recover the pre-anneal lr from the current one, then blend it with
        ``swa_lr`` by the anneal fraction of this step."""
        _warn_get_lr_called_within_step(self)
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_alpha = self.anneal_func(max(0, min(1, (step - 1) / max(1, self.anneal_epochs))))
        prev_lrs = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha) for g in self.optimizer.param_groups]
        alpha = self.anneal_func(max(0, min(1, step / max(1, self.anneal_epochs))))
        return [g["swa_lr"] * alpha + lr * (1 - alpha) for g, lr in zip(self.optimizer.param_groups, prev_lrs,
                                                                           strict=True)]

    def _set_anneal_func(self, anneal_strategy: str) -> None:
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal

    def state_dict(self) -> dict[str, Any]:
        """The scheduler's attributes without the optimizer and the anneal function."""
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore ``state_dict`` (the anneal function follows the saved strategy)."""
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
