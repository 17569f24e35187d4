"""Learning-rate schedulers with torch.optim.lr_scheduler's names, formulas and warnings.

``step()`` uses each scheduler's chained (recursive) form, which reads the current
``group['lr']`` so that schedulers compose; ``step(epoch)`` (deprecated in torch) uses the closed
form from ``base_lrs`` where the scheduler has one. The formulas are torch's, operation for
operation, so the learning rates are the same floats.
"""

from __future__ import annotations

import math
import types
import warnings
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable
from functools import wraps
from typing import Any
from weakref import ref

from .._tensor import Tensor
from .optimizer import Optimizer

__all__ = [
    "ConstantLR", "CosineAnnealingLR", "ExponentialLR", "LRScheduler", "LambdaLR", "LinearLR", "MultiStepLR",
    "MultiplicativeLR", "StepLR",
]

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being "
    "deprecated where possible. Please use `scheduler.step()` to step the "
    "scheduler. During the deprecation, if epoch is different from None, the "
    "closed form is used instead of the new chainable form, where available. "
    "Please open an issue if you are unable to replicate your use case: "
    "https://github.com/pytorch/pytorch/issues/new/choose."
)


def _param_groups_val_list(optimizer: Optimizer, key: str) -> list[Any]:
    """``group[key]`` of every group (tensors cloned, so the list never aliases the groups)."""
    return [g[key].clone() if isinstance(g[key], Tensor) else g[key] for g in optimizer.param_groups]


def _update_param_group_val(param_group: dict[str, Any], key: str, val: Any) -> None:
    if isinstance(param_group[key], Tensor):
        param_group[key].fill_(float(val))
    else:
        param_group[key] = val


class _enable_get_lr_call:  # noqa: N801 - torch's name
    def __init__(self, o: LRScheduler) -> None:
        self.o = o

    def __enter__(self) -> _enable_get_lr_call:
        self.o._get_lr_called_within_step = True
        return self

    def __exit__(self, *exc: object) -> None:
        self.o._get_lr_called_within_step = False


class _initial_mode:  # noqa: N801 - torch's name
    def __init__(self, o: LRScheduler) -> None:
        self.o = o

    def __enter__(self) -> None:
        self.o._is_initial = True

    def __exit__(self, *exc: object) -> None:
        self.o._is_initial = False


def _warn_get_lr_called_within_step(scheduler: LRScheduler) -> None:
    if not scheduler._get_lr_called_within_step:
        warnings.warn("To get the last learning rate computed by the scheduler, please use `get_last_lr()`.",
                      UserWarning, stacklevel=2)


def _patch_track_step_called(scheduler: LRScheduler, opt: Optimizer) -> None:
    """Wrap ``opt.step`` (on the instance) so the scheduler can warn when it is stepped before
    the optimizer, as torch does."""
    if hasattr(opt.step, "_wrapped_by_lr_sched"):
        return
    opt_ref = ref(opt)
    func = opt.step.__func__  # type: ignore[attr-defined]

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        o = opt_ref()
        o._opt_called = True  # type: ignore[union-attr]
        return func.__get__(o, o.__class__)(*args, **kwargs)

    wrapper._wrapped_by_lr_sched = True  # type: ignore[attr-defined]
    opt.step = wrapper  # type: ignore[method-assign]


class LRScheduler:
    """Base class of the learning-rate schedulers.

    Construction records ``initial_lr`` in every param group (when ``last_epoch == -1``), sets
    ``base_lrs`` from it and performs the initial step (``last_epoch`` becomes 0). Each ``step()``
    then increments ``last_epoch`` and writes ``get_lr()`` into the groups.

    Args:
        optimizer: the optimizer whose ``group['lr']`` values are scheduled.
        last_epoch: index of the last epoch seen; ``-1`` starts fresh, other values resume (the
            groups must then already have ``initial_lr``).
    """

    _get_lr_called_within_step: bool = False
    _is_initial: bool = False

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                initial_lr = group["lr"]
                if isinstance(initial_lr, Tensor):
                    initial_lr = initial_lr.clone()
                group.setdefault("initial_lr", initial_lr)
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in param_groups[{i}] when resuming scheduler with "
                        "last_epoch >= 0.\n"
                        "This typically happens when:\n"
                        "1. You're trying to resume training from a checkpoint but haven't properly loaded the "
                        "optimizer state\n"
                        "2. You're using last_epoch >= 0 for a fresh training run (not recommended)"
                    )
        self.base_lrs: list[Any] = _param_groups_val_list(optimizer, "initial_lr")
        self.last_epoch = last_epoch
        _patch_track_step_called(self, optimizer)
        self._initial_step()

    def _initial_step(self) -> None:
        self._step_count = 0
        with _initial_mode(self):
            self.step()

    def state_dict(self) -> dict[str, Any]:
        """Every attribute of the scheduler except the optimizer."""
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the attributes saved by ``state_dict``."""
        self.__dict__.update(state_dict)

    def get_last_lr(self) -> list[Any]:
        """The learning rates the last ``step`` set, one per param group."""
        return self._last_lr

    def get_lr(self) -> list[Any]:
        """The next learning rate of every param group (subclasses implement it)."""
        raise NotImplementedError

    def step(self, epoch: int | None = None) -> None:
        """Advance the schedule by one epoch (call it after ``optimizer.step()``).

        ``epoch`` (deprecated, as in torch) jumps to that epoch using the closed form where the
        scheduler has one.
        """
        if self._step_count == 1:
            if not hasattr(self.optimizer.step, "_wrapped_by_lr_sched"):
                warnings.warn(
                    "Seems like `optimizer.step()` has been overridden after learning rate scheduler "
                    "initialization. Please, make sure to call `optimizer.step()` before "
                    "`lr_scheduler.step()`. See more details at "
                    "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate",
                    UserWarning, stacklevel=2,
                )
            elif not getattr(self.optimizer, "_opt_called", False):
                warnings.warn(
                    "Detected call of `lr_scheduler.step()` before `optimizer.step()`. "
                    "In PyTorch 1.1.0 and later, you should call them in the opposite order: "
                    "`optimizer.step()` before `lr_scheduler.step()`.  Failure to do this "
                    "will result in PyTorch skipping the first value of the learning rate schedule. "
                    "See more details at "
                    "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate",
                    UserWarning, stacklevel=2,
                )
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch: int | None = None) -> None:
        with _enable_get_lr_call(self):
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                closed_form = getattr(self, "_get_closed_form_lr", None)
                values = closed_form() if closed_form is not None else self.get_lr()
        for param_group, lr in zip(self.optimizer.param_groups, values, strict=True):
            _update_param_group_val(param_group, "lr", lr)
        self._last_lr: list[Any] = _param_groups_val_list(self.optimizer, "lr")


class _LambdaStateMixin:
    """state_dict of schedulers holding user functions: plain functions/lambdas are saved as
    ``None``, callable objects as their ``__dict__`` (torch's rule)."""

    lr_lambdas: list[Callable[[int], float]]

    def state_dict(self) -> dict[str, Any]:
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        state["lr_lambdas"] = [None] * len(self.lr_lambdas)
        for idx, fn in enumerate(self.lr_lambdas):
            if not isinstance(fn, types.FunctionType):
                state["lr_lambdas"][idx] = fn.__dict__.copy()
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        lr_lambdas = state_dict.pop("lr_lambdas")
        self.__dict__.update(state_dict)
        state_dict["lr_lambdas"] = lr_lambdas
        for idx, fn in enumerate(lr_lambdas):
            if fn is not None:
                self.lr_lambdas[idx].__dict__.update(fn)


def _lambdas(optimizer: Optimizer, lr_lambda: Any) -> list[Callable[[int], float]]:
    if not isinstance(lr_lambda, list | tuple):
        return [lr_lambda] * len(optimizer.param_groups)
    if len(lr_lambda) != len(optimizer.param_groups):
        raise ValueError(f"Expected {len(optimizer.param_groups)} lr_lambdas, but got {len(lr_lambda)}")
    return list(lr_lambda)


class LambdaLR(_LambdaStateMixin, LRScheduler):
    """``lr = base_lr * lr_lambda(epoch)`` (one function, or one per param group).

    Example::

        >>> sched = LambdaLR(opt, lr_lambda=lambda epoch: 0.95 ** epoch)
    """

    def __init__(self, optimizer: Optimizer, lr_lambda: Callable[[int], float] | list[Callable[[int], float]],
                 last_epoch: int = -1) -> None:
        self.optimizer = optimizer
        self.lr_lambdas = _lambdas(optimizer, lr_lambda)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[Any]:
        _warn_get_lr_called_within_step(self)
        return [base_lr * lmbda(self.last_epoch) for lmbda, base_lr in zip(self.lr_lambdas, self.base_lrs)]


class MultiplicativeLR(_LambdaStateMixin, LRScheduler):
    """``lr = lr * lr_lambda(epoch)`` every step after the first (one function, or one per group)."""

    def __init__(self, optimizer: Optimizer, lr_lambda: Callable[[int], float] | list[Callable[[int], float]],
                 last_epoch: int = -1) -> None:
        self.optimizer = optimizer
        self.lr_lambdas = _lambdas(optimizer, lr_lambda)
        for fn in self.lr_lambdas:
            if not callable(fn):
                raise TypeError(f"lr_lambda should be a function, but got {type(fn).__name__}")
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[Any]:
        _warn_get_lr_called_within_step(self)
        if self._is_initial:
            return _param_groups_val_list(self.optimizer, "lr")
        return [g["lr"] * lmbda(self.last_epoch) for lmbda, g in zip(self.lr_lambdas, self.optimizer.param_groups)]


class StepLR(LRScheduler):
    """Multiply the learning rate by ``gamma`` every ``step_size`` epochs.

    Example::

        >>> sched = StepLR(opt, step_size=30, gamma=0.1)   # 0.05 until 30, 0.005 until 60, ...
    """

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1) -> None:
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[Any]:
        _warn_get_lr_called_within_step(self)
        if (self.last_epoch == 0) or (self.last_epoch % self.step_size != 0):
            return _param_groups_val_list(self.optimizer, "lr")
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[Any]:
        return [base_lr * self.gamma ** (self.last_epoch // self.step_size) for base_lr in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiply the learning rate by ``gamma`` at each milestone epoch (by ``gamma**n`` for a
    milestone listed ``n`` times)."""

    def __init__(self, optimizer: Optimizer, milestones: Iterable[int], gamma: float = 0.1,
                 last_epoch: int = -1) -> None:
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[Any]:
        _warn_get_lr_called_within_step(self)
        if self.last_epoch not in self.milestones:
            return _param_groups_val_list(self.optimizer, "lr")
        return [group["lr"] * self.gamma ** self.milestones[self.last_epoch] for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[Any]:
        milestones = sorted(self.milestones.elements())
        return [base_lr * self.gamma ** bisect_right(milestones, self.last_epoch) for base_lr in self.base_lrs]


class ConstantLR(LRScheduler):
    """Multiply the learning rate by ``factor`` until epoch ``total_iters``, then restore it."""

    def __init__(self, optimizer: Optimizer, factor: float = 1.0 / 3, total_iters: int = 5,
                 last_epoch: int = -1) -> None:
        if factor > 1.0 or factor < 0:
            raise ValueError("Constant multiplicative factor expected to be between 0 and 1.")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[Any]:
        _warn_get_lr_called_within_step(self)
        if self.last_epoch == 0:
            return [group["lr"] * self.factor for group in self.optimizer.param_groups]
        if self.last_epoch != self.total_iters:
            return _param_groups_val_list(self.optimizer, "lr")
        return [group["lr"] * (1.0 / self.factor) for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[Any]:
        return [base_lr * (self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor))
                for base_lr in self.base_lrs]


class LinearLR(LRScheduler):
    """Scale the learning rate by a factor going linearly from ``start_factor`` to
    ``end_factor`` over ``total_iters`` epochs."""

    def __init__(self, optimizer: Optimizer, start_factor: float = 1.0 / 3, end_factor: float = 1.0,
                 total_iters: int = 5, last_epoch: int = -1) -> None:
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError(
                "Starting multiplicative factor expected to be greater than 0 and less or equal to 1."
            )
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[Any]:
        _warn_get_lr_called_within_step(self)
        if self.last_epoch == 0:
            return [group["lr"] * self.start_factor for group in self.optimizer.param_groups]
        if self._is_initial or self.last_epoch > self.total_iters:
            return _param_groups_val_list(self.optimizer, "lr")
        delta = self.end_factor - self.start_factor
        return [group["lr"] * (1.0 + delta / (self.total_iters * self.start_factor + (self.last_epoch - 1) * delta))
                for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[Any]:
        return [base_lr * (self.start_factor + (self.end_factor - self.start_factor)
                           * min(self.total_iters, self.last_epoch) / self.total_iters)
                for base_lr in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Multiply the learning rate by ``gamma`` every epoch."""

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[Any]:
        _warn_get_lr_called_within_step(self)
        if self._is_initial:
            return _param_groups_val_list(self.optimizer, "lr")
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[Any]:
        return [base_lr * self.gamma**self.last_epoch for base_lr in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Cosine annealing from ``base_lr`` to ``eta_min`` over ``T_max`` epochs (and back up after,
    without restarts), computed recursively as torch does:
    ``lr_t = eta_min + (lr_{t-1} - eta_min) * (1 + cos(pi t / T)) / (1 + cos(pi (t-1) / T))``.
    """

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1) -> None:  # noqa: N803
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[Any]:
        _warn_get_lr_called_within_step(self)
        groups = self.optimizer.param_groups
        if self._is_initial:
            return _param_groups_val_list(self.optimizer, "lr")
        if self._step_count == 1 and self.last_epoch > 0:
            return [self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(self.last_epoch * math.pi / self.T_max)) / 2
                    for base_lr in self.base_lrs]
        if (self.last_epoch - 1 - self.T_max) % (2 * self.T_max) == 0:
            return [group["lr"] + (base_lr - self.eta_min) * (1 - math.cos(math.pi / self.T_max)) / 2
                    for base_lr, group in zip(self.base_lrs, groups)]
        return [(1 + math.cos(math.pi * self.last_epoch / self.T_max))
                / (1 + math.cos(math.pi * (self.last_epoch - 1) / self.T_max))
                * (group["lr"] - self.eta_min) + self.eta_min
                for group in groups]

    def _get_closed_form_lr(self) -> list[Any]:
        return [self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
                for base_lr in self.base_lrs]
