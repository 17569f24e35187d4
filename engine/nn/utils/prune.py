"""``torch.nn.utils.prune``: zero out parts of a module's tensor with a mask, as torch does it.

Pruning ``name`` of a module re-parametrises it the way torch's does, so the same names and
hooks are there to observe: the tensor moves to the parameter ``name + '_orig'``, the mask is
the buffer ``name + '_mask'``, ``name`` becomes a plain attribute ``mask * orig``, and the
pruning method object itself is registered as a forward pre-hook (it recomputes ``name`` before
every forward). Pruning the same tensor again folds the methods into one ``PruningContainer``
hook, whose new mask is computed only on what the earlier ones kept. ``remove`` makes the
pruning permanent (``name`` a parameter again, holding the pruned values).

Masks are torch's: L1 / Ln pruning keeps the largest magnitudes (``topk``), amounts are a
fraction (rounded as Python rounds) or a count. The random methods draw from the engine's
generator, so which entries they prune differs from torch's for the same seed.
"""

from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any

from ..._creation import ones_like, rand, rand_like, zeros_like
from ..._tensor import Tensor
from ..modules.module import Module
from .convert_parameters import parameters_to_vector

__all__ = [
    "BasePruningMethod", "CustomFromMask", "Identity", "L1Unstructured", "LnStructured", "PruningContainer",
    "RandomStructured", "RandomUnstructured", "custom_from_mask", "global_unstructured", "identity", "is_pruned",
    "l1_unstructured", "ln_structured", "random_structured", "random_unstructured", "remove",
]


class BasePruningMethod(ABC):
    """A way to compute a mask (``compute_mask``); ``apply`` installs it on a module's tensor."""

    _tensor_name: str
    PRUNING_TYPE: str

    def __call__(self, module: Module, inputs: Any) -> None:
        """The forward pre-hook: ``module.<name> = mask * <name>_orig`` before each forward."""
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """The mask for importance scores ``t``, keeping the zeros of ``default_mask``."""

    def apply_mask(self, module: Module) -> Tensor:
        """``mask * orig`` of this method's tensor (differentiable in ``orig``)."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned")
        mask = getattr(module, self._tensor_name + "_mask")
        orig = getattr(module, self._tensor_name + "_orig")
        return mask.to(dtype=orig.dtype) * orig

    @classmethod
    def apply(cls, module: Module, name: str, *args: Any, importance_scores: Tensor | None = None,
              **kwargs: Any) -> BasePruningMethod:
        """Prune ``module.<name>`` with ``cls(*args, **kwargs)`` (on top of earlier pruning of it);
        returns the hook now installed. A failing mask computation leaves the module as it was."""
        method = _composite_method(cls, module, name, *args, **kwargs)
        orig = getattr(module, name)
        importance_scores = _scores_for(orig, importance_scores, f"parameter {name} of {module}")
        first = not isinstance(method, PruningContainer)
        if first:  # the tensor becomes <name>_orig; <name> is recomputed from it
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone()
        try:
            mask = method.compute_mask(importance_scores, default_mask=default_mask)
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            if first:
                module.register_parameter(name, getattr(module, name + "_orig"))
                del module._parameters[name + "_orig"]
            raise
        return method

    def prune(self, t: Tensor, default_mask: Tensor | None = None, importance_scores: Tensor | None = None) -> Tensor:
        """``t`` times the mask computed from ``importance_scores`` (``t`` itself by default)."""
        importance_scores = _scores_for(t, importance_scores, "tensor t")
        default_mask = default_mask if default_mask is not None else ones_like(t)
        return t * self.compute_mask(importance_scores, default_mask=default_mask)

    def remove(self, module: Module) -> None:
        """Make the pruning permanent: ``<name>`` a parameter again, holding the masked values;
        ``<name>_orig`` and ``<name>_mask`` gone."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned before pruning can be removed")
        weight = self.apply_mask(module)
        if hasattr(module, self._tensor_name):
            delattr(module, self._tensor_name)
        orig = module._parameters[self._tensor_name + "_orig"]
        orig.data = weight.data
        del module._parameters[self._tensor_name + "_orig"]
        del module._buffers[self._tensor_name + "_mask"]
        setattr(module, self._tensor_name, orig)


def _composite_method(cls: type, module: Module, name: str, *args: Any, **kwargs: Any) -> BasePruningMethod:
    """The new method, or the container holding it after the method already pruning ``name``
    (whose hook is taken off: ``apply`` registers the combined one)."""
    old = [(k, h) for k, h in module._forward_pre_hooks.items()
           if isinstance(h, BasePruningMethod) and h._tensor_name == name]
    if len(old) > 1:
        raise AssertionError(f"Avoid adding multiple pruning hooks to the same tensor {name} of module {module}. "
                             "Use a PruningContainer.")
    for k, _ in old:
        del module._forward_pre_hooks[k]
    method = cls(*args, **kwargs)
    method._tensor_name = name
    if not old:
        return method
    previous = old[0][1]
    if isinstance(previous, PruningContainer):
        previous.add_pruning_method(method)
        return previous
    container = PruningContainer(previous)
    container.add_pruning_method(method)
    return container


class PruningContainer(BasePruningMethod):
    """The pruning methods applied in turn to one tensor; the last one's mask is computed on
    the entries (or channels) the earlier ones kept."""

    def __init__(self, *args: BasePruningMethod) -> None:
        self._pruning_methods: tuple[BasePruningMethod, ...] = ()
        if len(args) == 1:
            self._tensor_name = args[0]._tensor_name
            self.add_pruning_method(args[0])
        else:
            for method in args:
                self.add_pruning_method(method)

    def add_pruning_method(self, method: BasePruningMethod | None) -> None:
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and self._tensor_name != method._tensor_name:
            raise ValueError(f"Can only add pruning methods acting on the parameter named '{self._tensor_name}' to "
                             f"PruningContainer {self}. Found '{method._tensor_name}'")
        self._pruning_methods += (method,)  # type: ignore[operator]

    def __len__(self) -> int:
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx: int) -> BasePruningMethod:
        return self._pruning_methods[idx]

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        method = self._pruning_methods[-1]
        new_mask = default_mask.to(dtype=t.dtype)
        if method.PRUNING_TYPE == "unstructured":  # the entries still kept
            slc: Any = default_mask == 1
        elif method.PRUNING_TYPE == "structured":  # the channels not yet all zero
            if not hasattr(method, "dim"):
                raise AttributeError('Pruning methods of PRUNING_TYPE "structured" need to have the attribute `dim` '
                                     "defined.")
            n_dims = t.dim()
            dim = method.dim + n_dims if method.dim < 0 else method.dim
            if dim < 0:
                raise IndexError(f"Index is out of bounds for tensor with dimensions {n_dims}")
            keep_channel = default_mask.sum(dim=[d for d in range(n_dims) if d != dim]) != 0
            slc = tuple(keep_channel if d == dim else slice(None) for d in range(n_dims))
        elif method.PRUNING_TYPE == "global":
            slc = (slice(None),) * t.dim()
        else:
            raise ValueError(f"Unrecognized PRUNING_TYPE {method.PRUNING_TYPE}")
        partial_mask = method.compute_mask(t[slc], default_mask=default_mask[slc])
        new_mask[slc] = partial_mask.to(dtype=new_mask.dtype)
        return new_mask


class Identity(BasePruningMethod):
    """Prunes nothing: the re-parametrisation with a mask of ones."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        return default_mask

    @classmethod
    def apply(cls, module: Module, name: str) -> BasePruningMethod:  # type: ignore[override]
        return super().apply(module, name)


def _scores_for(t: Tensor, importance_scores: Tensor | None, what: str) -> Tensor:
    """The scores a mask is computed from: ``t`` itself unless others are given (of its shape)."""
    if importance_scores is None:
        return t
    if importance_scores.shape != t.shape:
        raise AssertionError(f"importance_scores should have the same shape as {what}, got "
                             f"{importance_scores.shape} vs {t.shape}")
    return importance_scores


class _ByScore(BasePruningMethod):
    """Prunes the ``amount`` entries whose score comes first (``_pruned_first``)."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount: int | float) -> None:
        _validate_pruning_amount_init(amount)
        self.amount = amount

    def _pruned_first(self, t: Tensor) -> tuple[Tensor, bool]:
        """Each entry's score, and whether the largest scores are pruned (asked only when some
        entry is: a random score draws from the generator, as torch's does only then)."""
        raise NotImplementedError

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        n = _compute_nparams_toprune(self.amount, t.nelement())
        _validate_pruning_amount(n, t.nelement())
        mask = default_mask.clone()
        if n != 0:
            scores, largest = self._pruned_first(t)
            mask.view(-1)[scores.view(-1).topk(k=n, largest=largest).indices] = 0
        return mask


class RandomUnstructured(_ByScore):
    """Prunes ``amount`` entries chosen at random."""

    def _pruned_first(self, t: Tensor) -> tuple[Tensor, bool]:
        return rand_like(t), True

    @classmethod
    def apply(cls, module: Module, name: str, amount: int | float) -> BasePruningMethod:  # type: ignore[override]
        return super().apply(module, name, amount=amount)


class L1Unstructured(_ByScore):
    """Prunes the ``amount`` entries of smallest magnitude."""

    def _pruned_first(self, t: Tensor) -> tuple[Tensor, bool]:
        return t.abs(), False

    @classmethod
    def apply(cls, module: Module, name: str, amount: int | float,  # type: ignore[override]
              importance_scores: Tensor | None = None) -> BasePruningMethod:
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


def _channels_to_prune(t: Tensor, dim: int, amount: int | float) -> tuple[int, int]:
    """The channels along ``dim`` and how many of them ``amount`` prunes (torch's checks)."""
    _validate_structured_pruning(t)
    _validate_pruning_dim(t, dim)
    size = t.shape[dim]
    n = _compute_nparams_toprune(amount, size)
    _validate_pruning_amount(n, size)
    return size, n


def _keep_channels(t: Tensor, dim: int, keep: Tensor, default_mask: Tensor) -> Tensor:
    """A mask of ``t``'s shape: 1 on the kept channels along ``dim`` (where ``default_mask`` is)."""
    mask = zeros_like(t)
    mask[_along(t, dim, keep)] = 1
    mask *= default_mask.to(dtype=mask.dtype)
    return mask


class RandomStructured(BasePruningMethod):
    """Prunes ``amount`` channels along ``dim`` chosen at random."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount: int | float, dim: int = -1) -> None:
        _validate_pruning_amount_init(amount)
        self.amount, self.dim = amount, dim

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        size, n = _channels_to_prune(t, self.dim, self.amount)
        if n == 0:
            return default_mask
        prob = rand(size)
        return _keep_channels(t, self.dim, prob > prob.kthvalue(k=n).values, default_mask)

    @classmethod
    def apply(cls, module: Module, name: str, amount: int | float,  # type: ignore[override]
              dim: int = -1) -> BasePruningMethod:
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Prunes the ``amount`` channels along ``dim`` of smallest ``n``-norm."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount: int | float, n: int | float | str, dim: int = -1) -> None:
        _validate_pruning_amount_init(amount)
        self.amount, self.n, self.dim = amount, n, dim

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        size, n_prune = _channels_to_prune(t, self.dim, self.amount)
        norm = _compute_norm(t, self.n, self.dim)
        keep = norm.topk(k=size - n_prune, largest=True).indices  # (before the no-op return, as torch's)
        if n_prune == 0:
            return default_mask
        return _keep_channels(t, self.dim, keep, default_mask)

    @classmethod
    def apply(cls, module: Module, name: str, amount: int | float, n: int | float | str,  # type: ignore[override]
              dim: int, importance_scores: Tensor | None = None) -> BasePruningMethod:
        return super().apply(module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prunes where a given mask is 0."""

    PRUNING_TYPE = "global"

    def __init__(self, mask: Tensor) -> None:
        self.mask = mask

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        if default_mask.shape != self.mask.shape:
            raise AssertionError(f"default_mask shape {default_mask.shape} must match self.mask shape "
                                 f"{self.mask.shape}")
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module: Module, name: str, mask: Tensor) -> BasePruningMethod:  # type: ignore[override]
        return super().apply(module, name, mask=mask)


# --- the functions public code calls ---------------------------------------------------------

def identity(module: Module, name: str) -> Module:
    Identity.apply(module, name)
    return module


def random_unstructured(module: Module, name: str, amount: int | float) -> Module:
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module: Module, name: str, amount: int | float, importance_scores: Tensor | None = None) -> Module:
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module: Module, name: str, amount: int | float, dim: int) -> Module:
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module: Module, name: str, amount: int | float, n: int | float | str, dim: int,
                  importance_scores: Tensor | None = None) -> Module:
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def global_unstructured(parameters: Iterable[tuple[Module, str]], pruning_method: type,
                        importance_scores: dict | None = None, **kwargs: Any) -> None:
    """Prune the ``(module, name)`` tensors as one vector (``amount`` counts over all of them),
    each then holding its share of the mask (a ``CustomFromMask`` hook)."""
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    importance_scores = importance_scores if importance_scores is not None else {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    parameters = list(parameters)
    scores = parameters_to_vector([importance_scores.get((m, n), getattr(m, n)) for m, n in parameters])
    default_mask = parameters_to_vector([getattr(m, n + "_mask", ones_like(getattr(m, n))) for m, n in parameters])
    container = PruningContainer()
    container._tensor_name = "temp"
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError('Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found method '
                        f"{pruning_method} of type {method.PRUNING_TYPE}")
    container.add_pruning_method(method)
    final_mask = container.compute_mask(scores, default_mask)
    start = 0
    for module, name in parameters:
        param = getattr(module, name)
        custom_from_mask(module, name, mask=final_mask[start:start + param.numel()].view_as(param))
        start += param.numel()


def custom_from_mask(module: Module, name: str, mask: Tensor) -> Module:
    CustomFromMask.apply(module, name, mask)
    return module


def remove(module: Module, name: str) -> Module:
    """Make the pruning of ``module.<name>`` permanent and take its hook off."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed")


def is_pruned(module: Module) -> bool:
    """Whether ``module`` or a submodule has a pruning hook."""
    return any(isinstance(hook, BasePruningMethod)
               for _, sub in module.named_modules() for hook in sub._forward_pre_hooks.values())


# --- checks and helpers -------------------------------------------------------------------------

def _validate_pruning_amount_init(amount: Any) -> None:
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
            not isinstance(amount, numbers.Integral) and not 0.0 <= float(amount) <= 1.0):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a non-negative integer")


def _validate_pruning_amount(amount: int, tensor_size: int) -> None:
    if isinstance(amount, numbers.Integral) and amount > tensor_size:
        raise ValueError(f"amount={amount} should be smaller than the number of parameters to prune={tensor_size}")


def _validate_structured_pruning(t: Tensor) -> None:
    if t.dim() <= 1:
        raise ValueError(f"Structured pruning can only be applied to multidimensional tensors. Found tensor of shape "
                         f"{t.shape} with {t.dim()} dims")


def _compute_nparams_toprune(amount: int | float, tensor_size: int) -> int:
    return amount if isinstance(amount, numbers.Integral) else round(amount * tensor_size)


def _validate_pruning_dim(t: Tensor, dim: int) -> None:
    if dim >= t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size {t.shape}")


def _compute_norm(t: Tensor, n: int | float | str, dim: int) -> Tensor:
    """The ``n``-norm of each channel along ``dim`` (over every other dimension)."""
    dims = list(range(t.dim()))
    dims.remove(dims[dim])
    return t.norm(p=n, dim=dims)


def _along(t: Tensor, dim: int, index: Tensor) -> tuple:
    """An index picking ``index`` (a mask or positions) along ``dim`` and everything elsewhere."""
    return tuple(index if d == dim % t.dim() else slice(None) for d in range(t.dim()))
