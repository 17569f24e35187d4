"""``engine.nn.Module``: the base class of every layer, with torch 2.x's semantics.

What lives here, in the order of the class:

- state and attribute routing (``__init__``, ``__setattr__``/``__getattr__``/``__delattr__``,
  ``register_parameter``/``register_buffer``/``add_module``) with torch's checks and errors;
- lookups (``get_submodule``/``get_parameter``/``get_buffer``) and tree walks (``named_*``);
- conversions (``_apply``, ``to``, ``float``/``double``/``half``/``type``), ``train``/``eval``,
  ``requires_grad_``, ``zero_grad``;
- hooks: forward (pre-)hooks run by ``__call__``, full backward (pre-)hooks wired through
  ``engine.utils.hooks.BackwardHook``, the deprecated non-full backward hooks, and the global
  hooks of this file (``register_module_*``), which run before a module's own;
- ``state_dict``/``load_state_dict`` with their hooks, and ``__repr__``.
"""

from __future__ import annotations

import functools
import itertools
import warnings
import weakref
from collections import OrderedDict, namedtuple
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Self

import engine.autograd.grad_mode as grad_mode

from ... import _dtype
from ..._creation import empty_like
from ..._tensor import Tensor, device
from ...utils._backward_hook import BackwardHook
from ...utils.hooks import RemovableHandle
from ..parameter import Buffer, Parameter

__all__ = [
    "Module",
    "register_module_buffer_registration_hook",
    "register_module_module_registration_hook",
    "register_module_parameter_registration_hook",
    "register_module_forward_pre_hook",
    "register_module_forward_hook",
    "register_module_backward_hook",
    "register_module_full_backward_pre_hook",
    "register_module_full_backward_hook",
]

_EXTRA_STATE_KEY_SUFFIX = "_extra_state"


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict`` returns; prints ``<All keys matched successfully>`` when clean."""

    __slots__ = ()

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _addindent(s_: str, num_spaces: int) -> str:
    """Indent every line but the first (blank lines stay empty), as torch's repr does."""
    s = s_.split("\n")
    if len(s) == 1:
        return s_
    first = s.pop(0)
    rest = "\n".join((num_spaces * " ") + line if line.strip() else "" for line in s)
    return first + "\n" + rest


def typename(obj: Any) -> str:
    """torch.typename: ``'engine.FloatTensor'`` for tensors, ``module.qualname`` otherwise."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = obj.__class__.__module__ or ""
        qualname = obj.__class__.__qualname__
    if module in ("", "builtins"):
        return qualname
    return f"{module}.{qualname}"


class _WrappedHook:
    """A hook that is called with its module (held weakly) as first argument."""

    def __init__(self, hook: Callable, module: Module | None = None) -> None:
        self.hook: Callable = hook
        functools.update_wrapper(self, hook)
        self.with_module = module is not None
        if module is not None:
            self.module = weakref.ref(module)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.with_module:
            module = self.module()
            if module is None:
                raise RuntimeError("You are trying to call the hook of a dead Module!")
            return self.hook(module, *args, **kwargs)
        return self.hook(*args, **kwargs)

    def __getstate__(self) -> dict:
        state = {"hook": self.hook, "with_module": self.with_module}
        if self.with_module:
            state["module"] = self.module()
        return state

    def __setstate__(self, state: dict) -> None:
        self.hook = state["hook"]
        self.with_module = state["with_module"]
        if self.with_module:
            if state["module"] is None:
                raise RuntimeError("You are trying to revive the hook of a dead Module!")
            self.module = weakref.ref(state["module"])


# --- global hooks: shared by every module, run before the module's own -----------------------

_global_buffer_registration_hooks: dict[int, Callable] = OrderedDict()
_global_module_registration_hooks: dict[int, Callable] = OrderedDict()
_global_parameter_registration_hooks: dict[int, Callable] = OrderedDict()
_global_backward_pre_hooks: dict[int, Callable] = OrderedDict()
_global_backward_hooks: dict[int, Callable] = OrderedDict()
_global_is_full_backward_hook: bool | None = None
_global_forward_pre_hooks: dict[int, Callable] = OrderedDict()
_global_forward_hooks: dict[int, Callable] = OrderedDict()
_global_forward_hooks_always_called: dict[int, bool] = OrderedDict()
_global_forward_hooks_with_kwargs: dict[int, bool] = OrderedDict()


def _register_global(hooks: dict, hook: Callable, **kwargs: Any) -> RemovableHandle:
    handle = RemovableHandle(hooks, **kwargs)
    hooks[handle.id] = hook
    return handle


def register_module_buffer_registration_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """``hook(module, name, buffer) -> None or new buffer`` runs on every ``register_buffer``."""
    return _register_global(_global_buffer_registration_hooks, hook)


def register_module_module_registration_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """``hook(module, name, submodule) -> None or new submodule`` runs whenever a child module
    is registered (``add_module`` or attribute assignment)."""
    return _register_global(_global_module_registration_hooks, hook)


def register_module_parameter_registration_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """``hook(module, name, param) -> None or new parameter`` runs on every
    ``register_parameter`` (attribute assignment included)."""
    return _register_global(_global_parameter_registration_hooks, hook)


def register_module_forward_pre_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """``hook(module, args) -> None or new args`` before every module's ``forward``; runs before
    the module's own forward pre-hooks."""
    return _register_global(_global_forward_pre_hooks, hook)


def register_module_forward_hook(hook: Callable[..., Any], *, with_kwargs: bool = False,
                                 always_call: bool = False) -> RemovableHandle:
    """``hook(module, args, output) -> None or new output`` after every module's ``forward``;
    runs before the module's own forward hooks. ``always_call`` runs it even when forward
    raises."""
    handle = _register_global(_global_forward_hooks, hook,
                              extra_dict=_global_forward_hooks_always_called)
    if with_kwargs:
        _global_forward_hooks_with_kwargs[handle.id] = True
    if always_call:
        _global_forward_hooks_always_called[handle.id] = True
    return handle


def register_module_backward_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Deprecated non-full global backward hook; prefer
    :func:`register_module_full_backward_hook`."""
    global _global_is_full_backward_hook
    if _global_is_full_backward_hook is True:
        raise RuntimeError("Cannot use both regular backward hooks and full backward hooks as a "
                           "global Module hook. Please use only one of them.")
    _global_is_full_backward_hook = False
    return _register_global(_global_backward_hooks, hook)


def register_module_full_backward_pre_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """``hook(module, grad_output) -> None or new grad_output`` for every module, before the
    module's own backward pre-hooks."""
    return _register_global(_global_backward_pre_hooks, hook)


def register_module_full_backward_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """``hook(module, grad_input, grad_output) -> None or new grad_input`` for every module,
    before the module's own backward hooks."""
    global _global_is_full_backward_hook
    if _global_is_full_backward_hook is False:
        raise RuntimeError("Cannot use both regular backward hooks and full backward hooks as a "
                           "global Module hook. Please use only one of them.")
    _global_is_full_backward_hook = True
    return _register_global(_global_backward_hooks, hook)


def _forward_unimplemented(self: Module, *input: Any) -> None:  # noqa: A002
    """Define the computation performed at every call; every subclass overrides it. Call the
    module (not ``forward``) so that its hooks run."""
    raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')


_NON_FULL_HOOK_WARNINGS = {
    "output": "Using non-full backward hooks on a Module that does not return a single Tensor or a "
              "tuple of Tensors is deprecated and will be removed in future versions. This hook "
              "will be missing some of the grad_output. Please use register_full_backward_hook to "
              "get the documented behavior.",
    "input": "Using non-full backward hooks on a Module that does not take as input a single "
             "Tensor or a tuple of Tensors is deprecated and will be removed in future versions. "
             "This hook will be missing some of the grad_input. Please use "
             "register_full_backward_hook to get the documented behavior.",
    "many_nodes": "Using a non-full backward hook when outputs are generated by different autograd "
                  "Nodes is deprecated and will be removed in future versions. This hook will be "
                  "missing some grad_output. Please use register_full_backward_hook to get the "
                  "documented behavior.",
    "inner_nodes": "Using a non-full backward hook when the forward contains multiple autograd "
                   "Nodes is deprecated and will be removed in future versions. This hook will be "
                   "missing some grad_input. Please use register_full_backward_hook to get the "
                   "documented behavior.",
}


class Module:
    r"""Base class for all neural network modules; models subclass it.

    Modules nest: sub-modules, parameters and buffers assigned as attributes are registered
    (in assignment order) and so take part in ``parameters()``, ``state_dict()``, ``to()``,
    ``train()`` and ``repr``. Call ``super().__init__()`` before assigning any of them.

    Example::

        class Model(engine.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.fc1 = engine.nn.Linear(4, 8)
                self.fc2 = engine.nn.Linear(8, 2)

            def forward(self, x):
                return self.fc2(engine.relu(self.fc1(x)))
    """

    dump_patches: bool = False
    _version: int = 1
    training: bool
    call_super_init: bool = False
    _compiled_call_impl: Callable | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """Set up the module's registries and hook tables (all empty, training mode)."""
        if self.call_super_init is False and bool(kwargs):
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword argument "
                            f"'{next(iter(kwargs))}'")
        if self.call_super_init is False and bool(args):
            raise TypeError(f"{type(self).__name__}.__init__() takes 1 positional argument but "
                            f"{len(args) + 1} were given")
        # object.__setattr__ skips the routing of Module.__setattr__ (nothing to route yet).
        setattr_ = super().__setattr__
        setattr_("training", True)
        setattr_("_parameters", {})
        setattr_("_buffers", {})
        setattr_("_non_persistent_buffers_set", set())
        setattr_("_backward_pre_hooks", OrderedDict())
        setattr_("_backward_hooks", OrderedDict())
        setattr_("_is_full_backward_hook", None)
        setattr_("_forward_hooks", OrderedDict())
        setattr_("_forward_hooks_with_kwargs", OrderedDict())
        setattr_("_forward_hooks_always_called", OrderedDict())
        setattr_("_forward_pre_hooks", OrderedDict())
        setattr_("_forward_pre_hooks_with_kwargs", OrderedDict())
        setattr_("_state_dict_hooks", OrderedDict())
        setattr_("_state_dict_pre_hooks", OrderedDict())
        setattr_("_load_state_dict_pre_hooks", OrderedDict())
        setattr_("_load_state_dict_post_hooks", OrderedDict())
        setattr_("_modules", {})
        if self.call_super_init:
            super().__init__(*args, **kwargs)

    forward: Callable[..., Any] = _forward_unimplemented

    # --- registration -------------------------------------------------------------------------

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a buffer: module state that is not a parameter (e.g. running statistics).

        Persistent buffers are part of ``state_dict()``; ``None`` buffers are skipped by
        ``state_dict()`` and conversions. Raises ``AttributeError`` before ``__init__``,
        ``TypeError`` for a non-str name or a non-Tensor value, ``KeyError`` for a name that
        contains ``"."``, is empty, or is already another attribute.
        """
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"buffer name should be a string. Got {typename(name)}")
        if "." in name:
            raise KeyError('buffer name can\'t contain "."')
        if name == "":
            raise KeyError('buffer name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{typename(tensor)}' object to buffer '{name}' "
                            "(engine Tensor or None required)")
        for hook in _global_buffer_registration_hooks.values():
            output = hook(self, name, tensor)
            if output is not None:
                tensor = output
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add a parameter, reachable as ``self.<name>``.

        Raises as ``register_buffer`` does for the name, ``TypeError`` for a value that is not a
        ``Parameter`` (or ``None``) and ``ValueError`` for a non-leaf parameter.
        """
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"parameter name should be a string. Got {typename(name)}")
        if "." in name:
            raise KeyError('parameter name can\'t contain "."')
        if name == "":
            raise KeyError('parameter name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is None:
            self._parameters[name] = None
            return
        if not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{typename(param)}' object to parameter '{name}' "
                            "(engine.nn.Parameter or None required)")
        if param.grad_fn is not None:
            raise ValueError(
                f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
                f"created explicitly. To express '{name}' as a function of another Tensor, "
                "compute the value in the forward() method."
            )
        for hook in _global_parameter_registration_hooks.values():
            output = hook(self, name, param)
            if output is not None:
                param = output
        self._parameters[name] = param

    def add_module(self, name: str, module: Module | None) -> None:
        """Add a child module, reachable as ``self.<name>``; ``TypeError`` for a non-Module
        (checked first, as in torch), ``KeyError`` for a bad or taken name."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{typename(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {typename(name)}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        for hook in _global_module_registration_hooks.values():
            output = hook(self, name, module)
            if output is not None:
                module = output
        self._modules[name] = module

    def register_module(self, name: str, module: Module | None) -> None:
        """Alias for :meth:`add_module`."""
        self.add_module(name, module)

    # --- lookups ------------------------------------------------------------------------------

    def get_submodule(self, target: str) -> Module:
        """The submodule at dotted path ``target`` (``''`` is ``self``); ``AttributeError``
        naming the failing atom otherwise."""
        if target == "":
            return self
        mod: Module = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(mod._get_name() + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return mod

    def set_submodule(self, target: str, module: Module, strict: bool = False) -> None:
        """Replace (or, unless ``strict``, add) the submodule at dotted path ``target``."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        atoms = target.split(".")
        if not isinstance(module, Module):
            raise ValueError("`module` is not an nn.Module, found " + str(type(module)))
        parent = self if len(atoms) == 1 else self.get_submodule(".".join(atoms[:-1]))
        if strict and not hasattr(parent, atoms[-1]):
            raise AttributeError(parent._get_name() + " has no attribute `" + atoms[-1] + "`")
        if hasattr(parent, atoms[-1]) and not isinstance(getattr(parent, atoms[-1]), Module):
            raise AttributeError("`" + atoms[-1] + "` is not an nn.Module")
        setattr(parent, atoms[-1], module)

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at dotted path ``target``; ``AttributeError`` otherwise."""
        module_path, _, param_name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, param_name):
            raise AttributeError(mod._get_name() + " has no attribute `" + param_name + "`")
        param = getattr(mod, param_name)
        if not isinstance(param, Parameter):
            raise AttributeError("`" + param_name + "` is not an nn.Parameter")
        return param

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at dotted path ``target``; ``AttributeError`` otherwise."""
        module_path, _, buffer_name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, buffer_name):
            raise AttributeError(mod._get_name() + " has no attribute `" + buffer_name + "`")
        buffer = getattr(mod, buffer_name)
        if buffer_name not in mod._buffers:
            raise AttributeError("`" + buffer_name + "` is not a buffer")
        return buffer

    def get_extra_state(self) -> Any:
        """Override (with :meth:`set_extra_state`) to store extra state in ``state_dict``
        under ``<prefix>_extra_state``."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never be called.")

    def set_extra_state(self, state: Any) -> None:
        """Override (with :meth:`get_extra_state`) to restore the extra state."""
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never be called.")

    # --- conversions --------------------------------------------------------------------------

    def _apply(self, fn: Callable[[Tensor], Tensor], recurse: bool = True) -> Self:
        """Apply ``fn`` to every parameter, gradient and buffer (children first).

        Parameters keep their identity: the converted values are installed with ``.data =``
        (as torch does for CPU tensors), so optimizers built earlier still see them. Buffers are
        replaced by ``fn``'s result.
        """
        if recurse:
            for module in self.children():
                module._apply(fn)
        for param in self._parameters.values():
            if param is None:
                continue
            with grad_mode.no_grad():
                param_applied = fn(param)
            param.data = param_applied
            grad = param._grad
            if grad is not None:
                with grad_mode.no_grad():
                    grad.data = fn(grad)
        for key, buf in self._buffers.items():
            if buf is not None:
                self._buffers[key] = fn(buf)
        return self

    def apply(self, fn: Callable[[Module], None]) -> Self:
        """Call ``fn`` on every submodule (children first, recursively), then on ``self``."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def cuda(self, device: Any = None) -> Self:
        """Always raises: engine runs on NumPy and has no GPU."""
        raise RuntimeError("engine runs on NumPy and has no CUDA device; modules stay on the CPU "
                           "(use .cpu() or .to('cpu'), both no-ops)")

    def cpu(self) -> Self:
        """A no-op conversion (everything already lives on the CPU); returns ``self``."""
        return self._apply(lambda t: t.cpu())

    def type(self, dst_type: Any) -> Self:
        """Cast every parameter and buffer (integer ones too) to ``dst_type``."""
        return self._apply(lambda t: t.type(dst_type))

    def float(self) -> Self:
        """Cast floating-point parameters and buffers to float32."""
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def double(self) -> Self:
        """Cast floating-point parameters and buffers to float64."""
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def half(self) -> Self:
        """Cast floating-point parameters and buffers to float16."""
        return self._apply(lambda t: t.half() if t.is_floating_point() else t)

    def bfloat16(self) -> Self:
        """Raises for a floating parameter or buffer, as ``Tensor.to(bfloat16)`` does (the engine has no
        bfloat16 tensors); a module without any is returned as it is, as torch returns it."""
        return self.to(_dtype.bfloat16)

    def to_empty(self, *, device: Any, recurse: bool = True) -> Self:
        """Replace parameters and buffers by uninitialised tensors of the same shape."""
        return self._apply(lambda t: empty_like(t, device=device), recurse=recurse)

    def to(self, *args: Any, **kwargs: Any) -> Self:
        """``to(device)``, ``to(dtype)``, ``to(tensor)``, ``to(device, dtype)``: cast floating
        parameters and buffers to ``dtype`` (integer ones keep theirs). Only ``'cpu'`` is a valid
        device; a non-floating ``dtype`` raises ``TypeError``."""
        dtype = _parse_to(args, kwargs)
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError("nn.Module.to only accepts floating point or complex dtypes, but got "
                            f"desired dtype={dtype}")

        def convert(t: Tensor) -> Tensor:
            return t.to(dtype) if dtype is not None and t.is_floating_point() else t

        return self._apply(convert)

    # --- hook registration --------------------------------------------------------------------

    def register_full_backward_pre_hook(self, hook: Callable[..., Any], prepend: bool = False
                                        ) -> RemovableHandle:
        """``hook(module, grad_output) -> None or new grad_output`` whenever the gradient with
        respect to the module's outputs is computed; fires after the global ones."""
        handle = RemovableHandle(self._backward_pre_hooks)
        self._backward_pre_hooks[handle.id] = hook
        if prepend:
            self._backward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_backward_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """Deprecated: a hook on the ``grad_fn`` of the module's output, which sees only that
        node's gradients (warns with ``FutureWarning`` when they are not the module's).
        Cannot be mixed with full backward hooks on one module."""
        if self._is_full_backward_hook is True:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on a "
                               "single Module. Please use only one of them.")
        self._is_full_backward_hook = False
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        return handle

    def register_full_backward_hook(self, hook: Callable[..., Any], prepend: bool = False
                                    ) -> RemovableHandle:
        """``hook(module, grad_input, grad_output) -> None or new grad_input``.

        Fires when the gradients with respect to the module's positional tensor inputs are
        computed; if no input requires grad, when those of the outputs are (with all-``None``
        ``grad_input``); never if no output requires grad. Cannot be mixed with
        :meth:`register_backward_hook` on one module.
        """
        if self._is_full_backward_hook is False:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on a "
                               "single Module. Please use only one of them.")
        self._is_full_backward_hook = True
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        if prepend:
            self._backward_hooks.move_to_end(handle.id, last=False)
        return handle

    def _get_backward_hooks(self) -> tuple[list[Callable], list[Callable]]:
        """(full hooks, non-full hooks) for this call, global ones first."""
        full: list[Callable] = []
        if _global_is_full_backward_hook is True:
            full += _global_backward_hooks.values()
        if self._is_full_backward_hook is True:
            full += self._backward_hooks.values()
        non_full: list[Callable] = []
        if _global_is_full_backward_hook is False:
            non_full += _global_backward_hooks.values()
        if self._is_full_backward_hook is False:
            non_full += self._backward_hooks.values()
        return full, non_full

    def _get_backward_pre_hooks(self) -> list[Callable]:
        return [*_global_backward_pre_hooks.values(), *self._backward_pre_hooks.values()]

    def _maybe_warn_non_full_backward_hook(self, inputs: Any, result: Any, grad_fn: Any) -> None:
        """Warn when a non-full backward hook will not see the module's real gradients."""
        if not isinstance(result, Tensor):
            if not (isinstance(result, tuple) and all(isinstance(r, Tensor) for r in result)):
                warnings.warn(_NON_FULL_HOOK_WARNINGS["output"], FutureWarning, stacklevel=3)
                return
        else:
            result = (result,)
        if not isinstance(inputs, Tensor):
            if not (isinstance(inputs, tuple) and all(isinstance(i, Tensor) for i in inputs)):
                warnings.warn(_NON_FULL_HOOK_WARNINGS["input"], FutureWarning, stacklevel=3)
                return
        else:
            inputs = (inputs,)
        # ``grad_fn`` is the first output's, so it is always among the outputs' nodes here (torch
        # also warns when it is not, which cannot happen on this path).
        out_grad_fn = {r.grad_fn for r in result if r.grad_fn is not None}
        if len(out_grad_fn) > 1:
            warnings.warn(_NON_FULL_HOOK_WARNINGS["many_nodes"], FutureWarning, stacklevel=3)
        else:
            inputs_grad_fn = {i.grad_fn for i in inputs if i.grad_fn is not None}
            next_functions = {n[0] for n in grad_fn.next_functions}
            if inputs_grad_fn != next_functions:
                warnings.warn(_NON_FULL_HOOK_WARNINGS["inner_nodes"], FutureWarning, stacklevel=3)

    def register_forward_pre_hook(self, hook: Callable[..., Any], *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """``hook(module, args) -> None or new args`` before ``forward`` (a non-tuple result is
        wrapped in a tuple). With ``with_kwargs``: ``hook(module, args, kwargs) -> None or
        (args, kwargs)``. Fires after the global pre-hooks; ``prepend`` puts it first among the
        module's own."""
        handle = RemovableHandle(self._forward_pre_hooks, extra_dict=self._forward_pre_hooks_with_kwargs)
        self._forward_pre_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_hook(self, hook: Callable[..., Any], *, prepend: bool = False,
                              with_kwargs: bool = False, always_call: bool = False) -> RemovableHandle:
        """``hook(module, args, output) -> None or new output`` after ``forward`` (with
        ``with_kwargs``: ``hook(module, args, kwargs, output)``). ``always_call`` runs it even
        if forward (or an earlier hook) raises."""
        handle = RemovableHandle(
            self._forward_hooks,
            extra_dict=[self._forward_hooks_with_kwargs, self._forward_hooks_always_called],
        )
        self._forward_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    # --- calling ------------------------------------------------------------------------------

    def compile(self, *args: Any, **kwargs: Any) -> None:
        """Compile this module's call in place, as torch's (``compile(self._call_impl, ...)``): the
        module keeps its class and state_dict keys; with the engine's eager ``compile`` it runs as before."""
        import engine  # the top-level package, as torch's Module.compile calls torch.compile (not an edge)

        self._compiled_call_impl = engine.compile(self._call_impl, *args, **kwargs)

    def _wrapped_call_impl(self, *args: Any, **kwargs: Any) -> Any:
        if self._compiled_call_impl is not None:
            return self._compiled_call_impl(*args, **kwargs)
        return self._call_impl(*args, **kwargs)

    def _call_impl(self, *args: Any, **kwargs: Any) -> Any:
        """Run ``forward`` between the hooks, in torch 2.x's order: forward pre-hooks (global,
        then own), backward-hook wiring of the inputs, forward, forward hooks (global, then own),
        backward-hook wiring of the outputs, non-full backward hooks. If anything raises, the
        ``always_call`` forward hooks that did not run yet run before the error propagates.

        One function with local variables: this runs for every call of a hooked module (a
        tracer hooks them all), so it avoids helper calls and per-call containers."""
        forward_call = self.forward
        if not (self._backward_hooks or self._backward_pre_hooks or self._forward_hooks
                or self._forward_pre_hooks or _global_backward_pre_hooks or _global_backward_hooks
                or _global_forward_hooks or _global_forward_pre_hooks):
            return forward_call(*args, **kwargs)

        result = None
        called_always: set[int] = set()
        try:
            full_backward_hooks: list[Callable] = []
            non_full_backward_hooks: list[Callable] = []
            backward_pre_hooks: list[Callable] = []
            if self._backward_pre_hooks or _global_backward_pre_hooks:
                backward_pre_hooks = self._get_backward_pre_hooks()
            if self._backward_hooks or _global_backward_hooks:
                full_backward_hooks, non_full_backward_hooks = self._get_backward_hooks()

            if _global_forward_pre_hooks or self._forward_pre_hooks:
                with_kwargs = self._forward_pre_hooks_with_kwargs
                for hook_id, hook in (*_global_forward_pre_hooks.items(), *self._forward_pre_hooks.items()):
                    if hook_id in with_kwargs:
                        out = hook(self, args, kwargs)
                        if out is not None:
                            if isinstance(out, tuple) and len(out) == 2:
                                args, kwargs = out
                            else:
                                raise RuntimeError("forward pre-hook must return None or a tuple of "
                                                   f"(new_args, new_kwargs), but got {out}.")
                    else:
                        out = hook(self, args)
                        if out is not None:
                            args = out if isinstance(out, tuple) else (out,)

            bw_hook = None
            if full_backward_hooks or backward_pre_hooks:
                bw_hook = BackwardHook(self, full_backward_hooks, backward_pre_hooks)
                args = bw_hook.setup_input_hook(args)

            result = forward_call(*args, **kwargs)

            if _global_forward_hooks or self._forward_hooks:
                always, with_kwargs = self._forward_hooks_always_called, self._forward_hooks_with_kwargs
                for hook_id, hook in (*_global_forward_hooks.items(), *self._forward_hooks.items()):
                    if hook_id in always or hook_id in _global_forward_hooks_always_called:
                        called_always.add(hook_id)
                    if hook_id in with_kwargs or hook_id in _global_forward_hooks_with_kwargs:
                        out = hook(self, args, kwargs, result)
                    else:
                        out = hook(self, args, result)
                    if out is not None:
                        result = out

            if bw_hook:
                if not isinstance(result, Tensor | tuple):
                    warnings.warn("For backward hooks to be called, module output should be a Tensor or a "
                                  f"tuple of Tensors but received {type(result)}", stacklevel=2)
                result = bw_hook.setup_output_hook(result)
            if non_full_backward_hooks:
                self._attach_non_full_backward_hooks(non_full_backward_hooks, args, result)
            return result
        except Exception:
            self._run_always_called_hooks(args, kwargs, result, called_always)
            raise

    def _run_always_called_hooks(self, args: tuple, kwargs: dict, result: Any, called_always: set[int]) -> None:
        """After forward raised: run the ``always_call`` forward hooks that did not run yet.
        Their own errors are turned into warnings (the forward's error is the one raised)."""
        for hook_id, hook in _global_forward_hooks.items():
            if hook_id in _global_forward_hooks_always_called and hook_id not in called_always:
                try:
                    out = hook(self, args, result)
                    if out is not None:
                        result = out
                except Exception as e:
                    warnings.warn("global module forward hook with ``always_call=True`` raised an "
                                  f"exception that was silenced as another error was raised in forward: "
                                  f"{e}", stacklevel=3)
        for hook_id, hook in self._forward_hooks.items():
            if hook_id in self._forward_hooks_always_called and hook_id not in called_always:
                try:
                    if hook_id in self._forward_hooks_with_kwargs:
                        out = hook(self, args, kwargs, result)
                    else:
                        out = hook(self, args, result)
                    if out is not None:
                        result = out
                except Exception as e:
                    warnings.warn("module forward hook with ``always_call=True`` raised an exception "
                                  f"that was silenced as another error was raised in forward: {e}",
                                  stacklevel=3)

    def _attach_non_full_backward_hooks(self, hooks: list[Callable], args: tuple, result: Any) -> None:
        var = result
        while not isinstance(var, Tensor):
            if isinstance(var, dict):
                var = next(v for v in var.values() if isinstance(v, Tensor))
            else:
                var = var[0]
        grad_fn = var.grad_fn
        if grad_fn is not None:
            for hook in hooks:
                grad_fn.register_hook(_WrappedHook(hook, self))
            self._maybe_warn_non_full_backward_hook(args, result, grad_fn)

    __call__: Callable[..., Any] = _wrapped_call_impl

    # --- attributes ---------------------------------------------------------------------------

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state.pop("_compiled_call_impl", None)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        # States pickled by older versions may miss the newer tables.
        for name in ("_forward_pre_hooks", "_forward_pre_hooks_with_kwargs", "_forward_hooks_with_kwargs",
                     "_forward_hooks_always_called", "_state_dict_hooks", "_state_dict_pre_hooks",
                     "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks", "_backward_pre_hooks"):
            if name not in self.__dict__:
                self.__dict__[name] = OrderedDict()
        self.__dict__.setdefault("_non_persistent_buffers_set", set())
        self.__dict__.setdefault("_is_full_backward_hook", None)

    def __getattr__(self, name: str) -> Any:
        """Parameters, buffers and submodules are found in their dicts (only reached when normal
        lookup fails)."""
        d = self.__dict__
        if "_parameters" in d and name in d["_parameters"]:
            return d["_parameters"][name]
        if "_buffers" in d and name in d["_buffers"]:
            return d["_buffers"][name]
        if "_modules" in d and name in d["_modules"]:
            return d["_modules"][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name: str, value: Any) -> None:
        """Route ``value`` by kind: a Parameter to ``_parameters``, a Module to ``_modules``, a
        ``Buffer`` (or a Tensor onto an existing buffer name) to ``_buffers``; an existing
        parameter/child name accepts only its own kind or ``None``."""
        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._remove_from(name, self.__dict__, self._buffers, self._modules,
                              self._non_persistent_buffers_set)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{typename(value)}' as parameter '{name}' "
                                "(engine.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        else:
            self._setattr_module_or_buffer(name, value)

    def _setattr_module_or_buffer(self, name: str, value: Any) -> None:
        modules = self.__dict__.get("_modules")
        if isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._remove_from(name, self.__dict__, self._parameters, self._buffers,
                              self._non_persistent_buffers_set)
            modules[name] = _run_module_registration_hooks(self, name, value)
        elif modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{typename(value)}' as child module '{name}' "
                                "(engine.nn.Module or None expected)")
            modules[name] = _run_module_registration_hooks(self, name, value)
        else:
            buffers = self.__dict__.get("_buffers")
            if isinstance(value, Buffer) or (buffers is not None and name in buffers):
                if value is not None and not isinstance(value, Tensor):
                    raise TypeError(f"cannot assign '{typename(value)}' as buffer '{name}' "
                                    "(engine.nn.Buffer, engine.Tensor or None expected)")
                if isinstance(value, Buffer):
                    persistent = value.persistent
                else:
                    persistent = name not in self._non_persistent_buffers_set
                self.register_buffer(name, value, persistent)
            else:
                object.__setattr__(self, name, value)

    @staticmethod
    def _remove_from(name: str, *dicts_or_sets: dict | set) -> None:
        for d in dicts_or_sets:
            if name in d:
                if isinstance(d, dict):
                    del d[name]
                else:
                    d.discard(name)

    def __delattr__(self, name: str) -> None:
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            super().__delattr__(name)

    # --- state_dict ---------------------------------------------------------------------------

    def _register_state_dict_hook(self, hook: Callable) -> RemovableHandle:
        """Legacy post-hook ``hook(module, state_dict, prefix, local_metadata)``; a value it
        returns replaces the state dict (respected at the root only)."""
        if getattr(hook, "_from_public_api", False):
            raise RuntimeError("Cannot register the same function as the state dict post hook that was "
                               "previously registered via register_state_dict_post_hook")
        handle = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[handle.id] = hook
        return handle

    def register_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(module, state_dict, prefix, local_metadata) -> None`` after this module's
        part of ``state_dict`` was written; may edit it in place, must return ``None``."""
        hook._from_public_api = True
        handle = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[handle.id] = hook
        return handle

    def register_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(module, prefix, keep_vars) -> None`` before this module's ``state_dict``."""
        handle = RemovableHandle(self._state_dict_pre_hooks)
        self._state_dict_pre_hooks[handle.id] = hook
        return handle

    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        """Write this module's own parameters and persistent buffers (not its children's) into
        ``destination``, detached unless ``keep_vars``."""
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()
        if getattr(self.__class__, "get_extra_state", Module.get_extra_state) is not Module.get_extra_state:
            destination[prefix + _EXTRA_STATE_KEY_SUFFIX] = self.get_extra_state()

    def state_dict(self, *args: Any, destination: Any = None, prefix: str = "",
                   keep_vars: bool = False) -> Any:
        """An ``OrderedDict`` of every parameter and persistent buffer by dotted name, in
        registration order (own entries before children's); ``_metadata`` maps each module's
        prefix (``''`` for the root) to ``{'version': ...}``. Tensors are detached unless
        ``keep_vars``; ``None`` entries are skipped."""
        if args:
            warnings.warn(
                "Positional args are being deprecated, use kwargs instead. Refer to "
                "https://pytorch.org/docs/main/generated/torch.nn.Module.html#torch.nn.Module.state_dict"
                " for details.",
                FutureWarning,
                stacklevel=2,
            )
            if destination is None:
                destination = args[0]
            if len(args) > 1 and prefix == "":
                prefix = args[1]
            if len(args) > 2 and keep_vars is False:
                keep_vars = args[2]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = {"version": self._version}
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            hook_result = hook(self, destination, prefix, local_metadata)
            if not getattr(hook, "_from_public_api", False):
                if hook_result is not None:
                    destination = hook_result
            elif hook_result is not None:
                raise RuntimeError("state_dict post-hook must return None")
        return destination

    def _register_load_state_dict_pre_hook(self, hook: Callable, with_module: bool = False
                                           ) -> RemovableHandle:
        handle = RemovableHandle(self._load_state_dict_pre_hooks)
        self._load_state_dict_pre_hooks[handle.id] = _WrappedHook(hook, self if with_module else None)
        return handle

    def register_load_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs) -> None`` before this module loads its entries."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def register_load_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(module, incompatible_keys) -> None`` after this module and its children
        loaded; may edit the key lists in place (which ``strict`` then honours)."""
        handle = RemovableHandle(self._load_state_dict_post_hooks)
        self._load_state_dict_post_hooks[handle.id] = hook
        return handle

    def _load_from_state_dict(self, state_dict: dict, prefix: str, local_metadata: dict, strict: bool,
                              missing_keys: list[str], unexpected_keys: list[str],
                              error_msgs: list[str]) -> None:
        """Copy this module's own entries (not its children's) from ``state_dict``, recording
        missing/unexpected keys and errors instead of raising."""
        for hook in self._load_state_dict_pre_hooks.values():
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)
        persistent_buffers = {k: v for k, v in self._buffers.items()
                              if k not in self._non_persistent_buffers_set}
        local_state = {k: v for k, v in itertools.chain(self._parameters.items(), persistent_buffers.items())
                       if v is not None}
        assign = local_metadata.get("assign_to_params_buffers", False)
        for name, param in local_state.items():
            key = prefix + name
            if key in state_dict:
                self._load_one(name, key, param, state_dict[key], assign, error_msgs)
            elif strict:
                missing_keys.append(key)

        extra_state_key = prefix + _EXTRA_STATE_KEY_SUFFIX
        if getattr(self.__class__, "set_extra_state", Module.set_extra_state) is not Module.set_extra_state:
            if extra_state_key in state_dict:
                self.set_extra_state(state_dict[extra_state_key])
            elif strict:
                missing_keys.append(extra_state_key)
        elif strict and extra_state_key in state_dict:
            unexpected_keys.append(extra_state_key)

        if strict:
            for key in state_dict:
                if key.startswith(prefix) and key != extra_state_key:
                    input_name = key[len(prefix):].split(".", 1)
                    if len(input_name) > 1:  # must be a child's entry
                        if input_name[0] not in self._modules:
                            unexpected_keys.append(key)
                    elif input_name[0] not in local_state:
                        unexpected_keys.append(key)

    def _load_one(self, name: str, key: str, param: Tensor, input_param: Any, assign: bool,
                  error_msgs: list[str]) -> None:
        if not isinstance(input_param, Tensor):
            error_msgs.append(f'While copying the parameter named "{key}", expected engine.Tensor or '
                              f"Tensor-like object from checkpoint but received {type(input_param)}")
            return
        # Checkpoints from torch 0.3 stored scalars as shape-[1] tensors.
        if len(param.shape) == 0 and len(input_param.shape) == 1 and input_param.shape[0] == 1:
            input_param = input_param[0]
        if input_param.shape != param.shape:
            error_msgs.append(f"size mismatch for {key}: copying a param with shape {input_param.shape} "
                              f"from checkpoint, the shape in current model is {param.shape}.")
            return
        try:
            with grad_mode.no_grad():
                if assign:
                    if isinstance(param, Parameter):
                        if not isinstance(input_param, Parameter):
                            input_param = Parameter(input_param, requires_grad=param.requires_grad)
                        else:
                            input_param.requires_grad_(param.requires_grad)
                    setattr(self, name, input_param)
                else:
                    param.copy_(input_param)
        except Exception as ex:
            error_msgs.append(f'While copying the parameter named "{key}", whose dimensions in the model '
                              f"are {param.size()} and whose dimensions in the checkpoint are "
                              f"{input_param.size()}, an exception occurred : {ex.args}.")

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True,
                        assign: bool = False) -> _IncompatibleKeys:
        """Copy parameters and persistent buffers from ``state_dict`` into this module tree.

        Returns ``(missing_keys, unexpected_keys)``. With ``strict`` those raise a
        ``RuntimeError`` listing them; size mismatches and non-tensor values raise in any case.
        ``assign=True`` installs the given tensors instead of copying into the existing ones
        (parameters keep their ``requires_grad``).
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing_keys: list[str] = []
        unexpected_keys: list[str] = []
        error_msgs: list[str] = []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)  # a copy: _load_from_state_dict may edit it
        if metadata is not None:
            state_dict._metadata = metadata

        def load(module: Module, local_state_dict: dict, prefix: str = "") -> None:
            local_metadata = {} if metadata is None else metadata.get(prefix[:-1], {})
            if assign:
                local_metadata["assign_to_params_buffers"] = assign
            module._load_from_state_dict(local_state_dict, prefix, local_metadata, True,
                                         missing_keys, unexpected_keys, error_msgs)
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    child_state_dict = {k: v for k, v in local_state_dict.items() if k.startswith(child_prefix)}
                    load(child, child_state_dict, child_prefix)
            incompatible_keys = _IncompatibleKeys(missing_keys, unexpected_keys)
            for hook in module._load_state_dict_post_hooks.values():
                if hook(module, incompatible_keys) is not None:
                    raise AssertionError(
                        "Hooks registered with ``register_load_state_dict_post_hook`` are not expected to "
                        "return new values, if incompatible_keys need to be modified, it should be done "
                        "inplace."
                    )

        load(self, state_dict)
        if strict:
            if unexpected_keys:
                error_msgs.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected_keys)))
            if missing_keys:
                error_msgs.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing_keys)))
        if error_msgs:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                self.__class__.__name__, "\n\t".join(error_msgs)))
        return _IncompatibleKeys(missing_keys, unexpected_keys)

    # --- tree walks ---------------------------------------------------------------------------

    def _named_members(self, get_members_fn: Callable, prefix: str = "", recurse: bool = True,
                       remove_duplicate: bool = True) -> Iterator[tuple[str, Any]]:
        memo: set = set()
        modules = (self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
                   if recurse else [(prefix, self)])
        for module_prefix, module in modules:
            for k, v in get_members_fn(module):
                if v is None or v in memo:
                    continue
                if remove_duplicate:
                    memo.add(v)
                yield module_prefix + ("." if module_prefix else "") + k, v

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """Every parameter (each shared one once), in ``named_parameters`` order."""
        for _name, param in self.named_parameters(recurse=recurse):
            yield param

    def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
                         ) -> Iterator[tuple[str, Parameter]]:
        """``(dotted name, parameter)`` pairs: a module's own before its children's, in
        registration order; a shared parameter appears under its first name unless
        ``remove_duplicate=False``."""
        yield from self._named_members(lambda module: module._parameters.items(), prefix=prefix,
                                       recurse=recurse, remove_duplicate=remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        """Every buffer (persistent or not), in ``named_buffers`` order."""
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
                      ) -> Iterator[tuple[str, Tensor]]:
        """``(dotted name, buffer)`` pairs, ordered and de-duplicated like ``named_parameters``."""
        yield from self._named_members(lambda module: module._buffers.items(), prefix=prefix,
                                       recurse=recurse, remove_duplicate=remove_duplicate)

    def children(self) -> Iterator[Module]:
        """The direct submodules (each once)."""
        for _name, module in self.named_children():
            yield module

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """``(name, child)`` for the direct submodules; a child registered twice appears under
        its first name; ``None`` children are skipped."""
        memo: set = set()
        for name, module in self._modules.items():
            if module is not None and module not in memo:
                memo.add(module)
                yield name, module

    def modules(self, remove_duplicate: bool = True) -> Iterator[Module]:
        """``self`` and every submodule, depth first, in ``named_modules`` order."""
        for _, module in self.named_modules(remove_duplicate=remove_duplicate):
            yield module

    def named_modules(self, memo: set | None = None, prefix: str = "", remove_duplicate: bool = True
                      ) -> Iterator[tuple[str, Module]]:
        """``(dotted name, module)`` depth first, pre-order, starting with ``(prefix, self)``.
        Modules already in ``memo`` (shared ones seen before) are skipped with their subtree
        unless ``remove_duplicate=False``."""
        if memo is None:
            memo = set()
        if self in memo:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            submodule_prefix = prefix + ("." if prefix else "") + name
            yield from module.named_modules(memo, submodule_prefix, remove_duplicate)

    # --- modes and gradients ------------------------------------------------------------------

    def train(self, mode: bool = True) -> Self:
        """Set training mode on this module and every submodule; ``ValueError`` for a non-bool."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self) -> Self:
        """``train(False)``."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Self:
        """Set ``requires_grad`` on every parameter (for freezing parts of a model)."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset every parameter's ``.grad``: to ``None`` by default, else to zeros in place
        (detached first if it had a history)."""
        for p in self.parameters():
            if p.grad is not None:
                if set_to_none:
                    p.grad = None
                else:
                    if p.grad.grad_fn is not None:
                        p.grad.detach_()
                    else:
                        p.grad.requires_grad_(False)
                    p.grad.zero_()

    # --- printing -----------------------------------------------------------------------------

    def _get_name(self) -> str:
        return self.__class__.__name__

    def extra_repr(self) -> str:
        """The module's own settings for ``repr`` (one or several lines); override it."""
        return ""

    def __repr__(self) -> str:
        extra_lines = []
        extra_repr = self.extra_repr()
        if extra_repr:  # an empty string would split into ['']
            extra_lines = extra_repr.split("\n")
        child_lines = []
        for key, module in self._modules.items():
            mod_str = _addindent(repr(module), 2)
            child_lines.append("(" + key + "): " + mod_str)
        lines = extra_lines + child_lines
        main_str = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:  # the one-liner most layers print
                main_str += extra_lines[0]
            else:
                main_str += "\n  " + "\n  ".join(lines) + "\n"
        return main_str + ")"

    def __dir__(self) -> list[str]:
        keys = [*dir(self.__class__), *self.__dict__.keys(), *self._parameters.keys(),
                *self._modules.keys(), *self._buffers.keys()]
        return sorted(key for key in keys if not key[0].isdigit())  # not valid attribute names


def _run_module_registration_hooks(owner: Module, name: str, value: Module | None) -> Module | None:
    for hook in _global_module_registration_hooks.values():
        output = hook(owner, name, value)
        if output is not None:
            value = output
    return value


def _parse_to(args: tuple, kwargs: dict) -> _dtype.dtype | None:
    """The dtype asked for by ``Module.to``'s arguments, validating any device on the way."""
    unknown = [k for k in kwargs if k not in ("device", "dtype", "tensor", "non_blocking", "memory_format", "copy")]
    if unknown:
        got = ", ".join(f"{k}={typename(kwargs[k])}" for k in unknown)
        raise TypeError(f"to() received an invalid combination of arguments - got ({got}, )")
    if "copy" in kwargs:
        raise RuntimeError(".to() does not accept copy argument")
    dtype = kwargs.get("dtype")
    if kwargs.get("device") is not None:
        device(kwargs["device"])
    if kwargs.get("tensor") is not None:
        dtype = kwargs["tensor"].dtype
    for a in args:
        if isinstance(a, _dtype.dtype):
            dtype = a
        elif isinstance(a, Tensor):
            dtype = a.dtype
        elif isinstance(a, str | device | int) and not isinstance(a, bool):
            device(a if not isinstance(a, int) else f"cuda:{a}")
        elif a is not None and not isinstance(a, bool):
            raise TypeError(f"to() received an invalid combination of arguments - got ({typename(a)})")
    return dtype
