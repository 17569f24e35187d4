"""``Optimizer``: the base of every optimizer, with torch.optim.Optimizer's contract.

What it guarantees (as torch does):

- ``param_groups`` is a list of dicts, each with ``'params'`` (a list of leaf tensors) and every
  hyper-parameter of ``defaults``; ``state`` maps a parameter to its per-parameter dict.
- ``state_dict()`` packs parameters as integer indices (in ``param_groups`` order); the state
  tensors in it are the optimizer's own (not copies). ``load_state_dict`` maps them back by
  position and casts floating state to the parameter's dtype (``'step'`` is kept as it is).
- ``step`` fires the global step pre hooks, then the instance's, runs, then the instance's post
  hooks, then the global ones. Every subclass's ``step`` is wrapped when the class is created
  (``__init_subclass__``), so user optimizers that override ``step`` fire the hooks too.

Deviation from torch, on purpose: when a subclass's ``step`` calls ``super().step()``, torch fires
the hooks once or twice depending on whether the base class was ever instantiated; here the hooks
fire exactly once per outermost ``step`` call.
"""

from __future__ import annotations

import functools
import types
import warnings
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterable, Iterator
from copy import deepcopy
from itertools import chain
from typing import Any, TypeAlias

import numpy as np

import engine.autograd.grad_mode as grad_mode

from .. import _dtype
from .._errstate import silent
from .._tensor import Tensor
from ..utils.hooks import RemovableHandle

__all__ = ["Optimizer", "register_optimizer_step_post_hook", "register_optimizer_step_pre_hook", "required"]

Args: TypeAlias = tuple[Any, ...]
Kwargs: TypeAlias = dict[str, Any]
StateDict: TypeAlias = dict[str, Any]
PreHook: TypeAlias = Callable[["Optimizer", Args, Kwargs], "tuple[Args, Kwargs] | None"]
PostHook: TypeAlias = Callable[["Optimizer", Args, Kwargs], None]

_global_optimizer_pre_hooks: OrderedDict[int, PreHook] = OrderedDict()
_global_optimizer_post_hooks: OrderedDict[int, PostHook] = OrderedDict()


class _RequiredParameter:
    """Singleton marking a hyper-parameter every param group must give (torch.optim.optimizer.required)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()


def register_optimizer_step_pre_hook(hook: PreHook) -> RemovableHandle:
    """Register ``hook(optimizer, args, kwargs) -> None | (new_args, new_kwargs)``, called before
    the ``step`` of every optimizer (before the optimizer's own pre hooks)."""
    handle = RemovableHandle(_global_optimizer_pre_hooks)
    _global_optimizer_pre_hooks[handle.id] = hook
    return handle


def register_optimizer_step_post_hook(hook: PostHook) -> RemovableHandle:
    """Register ``hook(optimizer, args, kwargs)``, called after the ``step`` of every optimizer
    (after the optimizer's own post hooks)."""
    handle = RemovableHandle(_global_optimizer_post_hooks)
    _global_optimizer_post_hooks[handle.id] = hook
    return handle


def typename(obj: Any) -> str:
    """torch.typename: ``'engine.FloatTensor'`` for tensors, else the qualified type name."""
    if isinstance(obj, Tensor):
        return obj.type()
    cls = type(obj)
    module = cls.__module__
    return cls.__qualname__ if module in ("builtins", "__builtin__", None) else f"{module}.{cls.__qualname__}"


def _hooked_step(func: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a ``step`` so that it fires the global and per-instance step hooks in torch's order.

    ``args`` passed to the hooks include the optimizer itself as ``args[0]`` (as in torch). A
    nested ``step`` (a subclass calling ``super().step()``) does not fire them a second time.
    """

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        self = args[0]
        if self.__dict__.get("_in_hooked_step", False):
            return func(*args, **kwargs)
        self._in_hooked_step = True
        try:
            for pre_hook in chain(_global_optimizer_pre_hooks.values(), self._optimizer_step_pre_hooks.values()):
                result = pre_hook(self, args, kwargs)
                if result is not None:
                    if isinstance(result, tuple) and len(result) == 2:
                        args, kwargs = result
                    else:
                        raise RuntimeError(
                            f"{func} must return None or a tuple of (new_args, new_kwargs), but got {result}."
                        )
            out = func(*args, **kwargs)
            for post_hook in chain(self._optimizer_step_post_hooks.values(), _global_optimizer_post_hooks.values()):
                post_hook(self, args, kwargs)
            return out
        finally:
            self._in_hooked_step = False

    wrapper.hooked = True  # type: ignore[attr-defined]
    return silent(wrapper)  # an update computes silently on inf/nan, as torch's (engine._errstate)


def use_grad_for_differentiable(func: Callable[..., Any]) -> Callable[..., Any]:
    """Run an optimizer's update with grad mode off (torch: ``_use_grad_for_differentiable``);
    the previous mode is restored also when the update raises."""

    @functools.wraps(func)
    def wrapper(self: Optimizer, *args: Any, **kwargs: Any) -> Any:
        prev = grad_mode._state.enabled
        grad_mode._state.enabled = bool(self.defaults.get("differentiable", False))
        try:
            return func(self, *args, **kwargs)
        finally:
            grad_mode._state.enabled = prev

    return wrapper


def check_lr(lr: Any) -> None:
    """torch's learning-rate checks (a tensor lr must have one element; no negative lr)."""
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")


def check_betas(betas: Any) -> None:
    """torch's checks of Adam-style ``betas``: each in [0, 1)."""
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")


def check_unsupported_flags(differentiable: bool, capturable: bool = False) -> None:
    """``differentiable`` and ``capturable`` need autograd through the update or CUDA graphs;
    the NumPy engine has neither. (``foreach``/``fused`` are accepted: there is one vectorised
    implementation, with the same numbers.)"""
    if differentiable:
        raise NotImplementedError("engine optimizers do not support differentiable=True")
    if capturable:
        raise NotImplementedError("engine optimizers do not support capturable=True (no CUDA graphs)")


def tensor_steps(optimizer: Optimizer) -> None:
    """Turn ``'step'`` counts loaded as numbers (older torch state_dicts) into step tensors."""
    for group in optimizer.param_groups:
        for p in group["params"]:
            p_state = optimizer.state.get(p, [])
            if len(p_state) != 0 and not isinstance(p_state["step"], Tensor):
                step = new_step()
                step._data[...] = float(p_state["step"])
                p_state["step"] = step


def new_step() -> Tensor:
    """The per-parameter step counter: a 0-d float tensor, as torch keeps it (float64 when that
    is the default dtype)."""
    dt = np.float64 if _dtype._default_float.np == np.float64 else np.float32
    return Tensor._wrap(np.zeros((), dtype=dt))


def _zeros(*names: str) -> Callable[[Tensor, dict[str, Any]], None]:
    """An ``init`` for ``Optimizer._with_grads``: a zero buffer shaped like the parameter per name."""
    def init(p: Tensor, state: dict[str, Any]) -> None:
        for name in names:
            state[name] = Tensor._wrap(np.zeros_like(p._data))
    return init


class Optimizer:
    """Base class for all optimizers.

    Args:
        params: an iterable of tensors, of ``(name, tensor)`` pairs, or of dicts defining
            parameter groups. Must have a deterministic order (a ``set`` is refused).
        defaults: default values of the optimisation options (used when a group omits them).

    Example::

        >>> opt = engine.optim.SGD(model.parameters(), lr=0.1)
        >>> opt.zero_grad(); loss.backward(); opt.step()
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        # plain functions only: a staticmethod/classmethod would lose its binding if wrapped
        if isinstance(step, types.FunctionType) and not getattr(step, "hooked", False):
            cls.step = _hooked_step(step)  # type: ignore[method-assign]

    def __init__(self, params: Iterable[Any], defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self._optimizer_step_pre_hooks: OrderedDict[int, PreHook] = OrderedDict()
        self._optimizer_step_post_hooks: OrderedDict[int, PostHook] = OrderedDict()
        self._optimizer_state_dict_pre_hooks: OrderedDict[int, Callable] = OrderedDict()
        self._optimizer_state_dict_post_hooks: OrderedDict[int, Callable] = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks: OrderedDict[int, Callable] = OrderedDict()
        self._optimizer_load_state_dict_post_hooks: OrderedDict[int, Callable] = OrderedDict()

        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or dicts, but got "
                + typename(params)
            )
        self.state: defaultdict[Tensor, Any] = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []

        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    # --- pickling / copying --------------------------------------------------------------------

    def __getstate__(self) -> dict[str, Any]:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        for name in ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks", "_optimizer_state_dict_pre_hooks",
                     "_optimizer_state_dict_post_hooks", "_optimizer_load_state_dict_pre_hooks",
                     "_optimizer_load_state_dict_post_hooks"):
            if name not in self.__dict__:
                setattr(self, name, OrderedDict())
        self.defaults.setdefault("differentiable", False)

    def __repr__(self) -> str:
        format_string = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            format_string += "\n"
            format_string += f"Parameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    format_string += f"    {key}: {group[key]}\n"
        format_string += ")"
        return format_string

    # --- hooks ---------------------------------------------------------------------------------

    def register_step_pre_hook(self, hook: PreHook) -> RemovableHandle:
        """Register ``hook(optimizer, args, kwargs) -> None | (new_args, new_kwargs)`` to run
        before this optimizer's ``step`` (after the global pre hooks)."""
        handle = RemovableHandle(self._optimizer_step_pre_hooks)
        self._optimizer_step_pre_hooks[handle.id] = hook
        return handle

    def register_step_post_hook(self, hook: PostHook) -> RemovableHandle:
        """Register ``hook(optimizer, args, kwargs)`` to run after this optimizer's ``step``
        (before the global post hooks)."""
        handle = RemovableHandle(self._optimizer_step_post_hooks)
        self._optimizer_step_post_hooks[handle.id] = hook
        return handle

    @staticmethod
    def _register(hooks: OrderedDict, hook: Callable, prepend: bool) -> RemovableHandle:
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        return handle

    def register_state_dict_pre_hook(self, hook: Callable[[Optimizer], None], prepend: bool = False) -> RemovableHandle:
        """Register ``hook(optimizer)``, called before ``state_dict`` builds its result."""
        return self._register(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook: Callable[[Optimizer, StateDict], StateDict | None],
                                      prepend: bool = False) -> RemovableHandle:
        """Register ``hook(optimizer, state_dict) -> state_dict | None``, called on the result of
        ``state_dict``; a dict it returns replaces the result."""
        return self._register(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook: Callable[[Optimizer, StateDict], StateDict | None],
                                          prepend: bool = False) -> RemovableHandle:
        """Register ``hook(optimizer, state_dict) -> state_dict | None``, called before
        ``load_state_dict`` reads its argument; a dict it returns is loaded instead."""
        return self._register(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook: Callable[[Optimizer], None],
                                           prepend: bool = False) -> RemovableHandle:
        """Register ``hook(optimizer)``, called after ``load_state_dict`` has loaded the state."""
        return self._register(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    # --- state dict ----------------------------------------------------------------------------

    def state_dict(self) -> StateDict:
        """The optimizer's state: ``{'state': {index: {...}}, 'param_groups': [{..., 'params': [index, ...]}]}``.

        Indices number the parameters in ``param_groups`` order. The state tensors are the
        optimizer's own (save them, or copy them, before the next ``step`` if you need a
        snapshot), as in torch.
        """
        for pre_hook in self._optimizer_state_dict_pre_hooks.values():
            pre_hook(self)

        param_mappings: dict[int, int] = {}
        start_index = 0

        def pack_group(group: dict[str, Any]) -> dict[str, Any]:
            nonlocal start_index
            packed = {k: v for k, v in group.items() if k != "params"}
            param_mappings.update({id(p): i for i, p in enumerate(group["params"], start_index)
                                   if id(p) not in param_mappings})
            packed["params"] = [param_mappings[id(p)] for p in group["params"]]
            start_index += len(packed["params"])
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        packed_state = {(param_mappings[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()}
        state_dict: StateDict = {"state": packed_state, "param_groups": param_groups}

        for post_hook in self._optimizer_state_dict_post_hooks.values():
            hook_result = post_hook(self, state_dict)
            if hook_result is not None:
                state_dict = hook_result
        return state_dict

    def load_state_dict(self, state_dict: StateDict) -> None:
        """Load a state produced by ``state_dict`` (of an optimizer with groups of the same sizes).

        Parameters are matched by position. Hyper-parameters come from ``state_dict``; floating
        state tensors are cast to their parameter's dtype (without a copy when it already matches,
        so they are shared with ``state_dict``, as in torch).

        Raises:
            ValueError: the number of groups, or the size of a group, differs.
        """
        state_dict = state_dict.copy()
        for pre_hook in self._optimizer_load_state_dict_pre_hooks.values():
            hook_result = pre_hook(self, state_dict)
            if hook_result is not None:
                state_dict = hook_result

        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError(
                "loaded state dict contains a parameter group that doesn't match the size of optimizer's group"
            )

        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))

        state: defaultdict[Any, Any] = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = _cast(param, v)
            else:
                state[k] = v

        def update_group(group: dict[str, Any], new_group: dict[str, Any]) -> dict[str, Any]:
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            return new_group

        param_groups = [update_group(g, ng) for g, ng in zip(groups, saved_groups)]
        self.__setstate__({"state": state, "param_groups": param_groups})

        for post_hook in self._optimizer_load_state_dict_post_hooks.values():
            post_hook(self)

    # --- gradients and groups ------------------------------------------------------------------

    @staticmethod
    def _evaluate(closure: Callable[[], Any] | None) -> Any:
        """What ``step(closure)`` returns: the closure re-evaluated with grad enabled, or None."""
        if closure is None:
            return None
        with grad_mode.enable_grad():
            return closure()

    def _group_defaults(self, **defaults: Any) -> None:
        """In ``__setstate__``: options a state dict from an older torch lacks get their defaults,
        and step counts saved as numbers become step tensors."""
        for group in self.param_groups:
            for key, value in defaults.items():
                group.setdefault(key, value)
        tensor_steps(self)

    def _with_grads(self, group: dict[str, Any], init: Callable[[Tensor, dict[str, Any]], None],
                    ) -> Iterator[tuple[Tensor, dict[str, Any], float]]:
        """``(p, state, step)`` for each parameter of ``group`` that has a gradient: its state
        made on first use (a ``step`` counter, then ``init(p, state)``), its step already
        counted. After the caller's in-place update the versions of the parameter and of every
        state tensor go up, as torch's in-place updates bump them."""
        for p in group["params"]:
            if p.grad is None:
                continue
            state = self.state[p]
            if len(state) == 0:
                state["step"] = new_step()
                init(p, state)
            step_t = state["step"]
            step_t._data += 1
            yield p, state, float(step_t._data)
            p._version_counter[0] += 1
            for value in state.values():
                if isinstance(value, Tensor):
                    value._version_counter[0] += 1

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of every parameter: to ``None`` (default) or to zeros in place
        (detached from any graph first)."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    if set_to_none:
                        p.grad = None
                    else:
                        g = p.grad
                        if g.grad_fn is not None:
                            g.detach_()
                        else:
                            g.requires_grad_(False)
                        g._data.fill(0)
                        g._version_counter[0] += 1

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform a single optimisation step (subclasses implement it)."""
        raise NotImplementedError

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters (with group-specific options) to ``param_groups``.

        Raises:
            TypeError: ``param_group`` is not a dict, its params are a set, or one is not a tensor.
            ValueError: a non-leaf tensor, a required option missing, a parameter already in
                another group, or names given for only some parameters.
        """
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")

        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but the ordering of tensors in "
                "sets will change between runs. Please use a list instead."
            )
        else:
            param_group["params"] = list(params)

        _split_names(param_group)
        for param in param_group["params"]:
            if not isinstance(param, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is " + typename(param))
            if not self.defaults.get("differentiable", None) and not (param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")

        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)

        params = param_group["params"]
        if len(params) != len({id(p) for p in params}):
            warnings.warn(
                "optimizer contains a parameter group with duplicate parameters; in future, this will cause an "
                "error; see github.com/pytorch/pytorch/issues/40967 for more information",
                stacklevel=3,
            )

        param_set: set[int] = set()
        for group in self.param_groups:
            param_set.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                current = "with names" if "param_names" in param_group else "without names"
                raise ValueError(
                    "all optimizer param groups should be with/without names. "
                    f"cannot add param group {current} to the optimizer"
                )
        if not param_set.isdisjoint(id(p) for p in param_group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")

        self.param_groups.append(param_group)


def _split_names(param_group: dict[str, Any]) -> None:
    """``[(name, tensor), ...]`` (from ``named_parameters()``) -> ``params`` + ``param_names``."""
    tensors, names = [], []
    for param in param_group["params"]:
        if isinstance(param, tuple):
            names.append(param[0])
            tensors.append(param[1])
        else:
            tensors.append(param)
    param_group["params"] = tensors
    if names:
        if len(names) != len(tensors):
            raise ValueError("all optimizer params should be with/without names. Some param names are missing")
        param_group["param_names"] = names


def _cast(param: Tensor, value: Any, key: Any = None) -> Any:
    """Copy a loaded state value's structure, casting floating tensors to ``param``'s dtype
    (``'step'`` stays as it was saved)."""
    if isinstance(value, Tensor):
        if key == "step" or not param.is_floating_point():
            return value
        return value.to(dtype=param.dtype)
    if isinstance(value, dict):
        return {k: _cast(param, v, key=k) for k, v in value.items()}
    if isinstance(value, Iterable) and not isinstance(value, str | bytes | np.ndarray):
        return type(value)(_cast(param, v) for v in value)  # type: ignore[call-arg]
    return value
