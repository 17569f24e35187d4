"""``register_parametrization``/``remove_parametrizations`` (torch.nn.utils.parametrize), enough for
``parametrizations.weight_norm`` and user parametrizations.

The module's class is swapped for a ``Parametrized<Class>`` subclass whose property ``name``
evaluates ``module.parametrizations[name]()``: the chain of parametrizations applied to the
stored ``original`` (or ``original0``, ``original1``, ... when ``right_inverse`` returns several
tensors), as in torch, so state_dict keys match (``parametrizations.weight.original0``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import engine.autograd.grad_mode as grad_mode

from ..._tensor import Tensor
from ..modules.container import ModuleDict, ModuleList
from ..parameter import Parameter

__all__ = ["ParametrizationList", "cached", "is_parametrized", "register_parametrization", "remove_parametrizations",
           "transfer_parametrizations_and_params", "type_before_parametrizations"]

_cache_enabled = 0
_cache: dict[tuple[int, str], Tensor] = {}


@contextmanager
def cached() -> Iterator[None]:
    """Inside this context every parametrized tensor is computed once, on first access, and the
    same tensor is returned after that (torch's ``parametrize.cached``): a weight read at every
    step of an RNN is parametrized once. Nested contexts share one cache, emptied on leaving
    the outermost."""
    global _cache_enabled, _cache
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache = {}


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor and its stored original(s)."""

    def __init__(self, modules: Any, original: Tensor, unsafe: bool = False) -> None:
        super().__init__(modules)
        self.unsafe = unsafe
        with grad_mode.no_grad():
            new = original
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:  # torch: a right_inverse that cannot is the identity here
                        pass
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if new is not original:
                with grad_mode.no_grad():
                    original.copy_(new)
            self.register_parameter("original", original if isinstance(original, Parameter) else Parameter(original))
        else:
            for i, t in enumerate(new):
                self.register_parameter(f"original{i}", Parameter(t.detach().clone(), original.requires_grad))

    def right_inverse(self, value: Tensor) -> None:
        """Set the original(s) so that the parametrized tensor becomes ``value``."""
        with grad_mode.no_grad():
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    value = module.right_inverse(value)
            if self.is_tensor:
                self.original.copy_(value)
            else:
                for i, t in enumerate(value):
                    getattr(self, f"original{i}").copy_(t)

    def forward(self) -> Tensor:
        mods = list(self)
        if self.is_tensor:
            x = mods[0](self.original)
        else:
            x = mods[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for m in mods[1:]:
            x = m(x)
        return x


def is_parametrized(module: Any, tensor_name: str | None = None) -> bool:
    parametrizations = getattr(module, "parametrizations", None)
    if parametrizations is None or not isinstance(parametrizations, ModuleDict):
        return False
    return len(parametrizations) > 0 if tensor_name is None else tensor_name in parametrizations


def _inject_new_class(module: Any) -> None:
    cls = module.__class__
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), {})


def _inject_property(module: Any, tensor_name: str) -> None:
    def get_parametrized(self: Any) -> Tensor:
        parametrization = self.parametrizations[tensor_name]
        if not _cache_enabled:
            return parametrization()
        key = (id(self), tensor_name)
        tensor = _cache.get(key)
        if tensor is None:
            tensor = _cache[key] = parametrization()
        return tensor

    def set_original(self: Any, value: Tensor) -> None:
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def register_parametrization(module: Any, tensor_name: str, parametrization: Any, *, unsafe: bool = False) -> Any:
    """Make ``module.<tensor_name>`` the output of ``parametrization`` on a stored original."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        module.parametrizations[tensor_name].append(parametrization)
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        parametrizations = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = parametrizations
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a parametrized element with "
                         f"name '{tensor_name}'")
    return module


def remove_parametrizations(module: Any, tensor_name: str, leave_parametrized: bool = True) -> Any:
    """Undo ``register_parametrization``: ``tensor_name`` becomes a plain parameter again, holding
    the parametrized value (``leave_parametrized``) or the original."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    parametrizations = module.parametrizations[tensor_name]
    if parametrizations.is_tensor:
        original = parametrizations.original
        if leave_parametrized:
            with grad_mode.no_grad():
                original.copy_(getattr(module, tensor_name))
    else:
        if not leave_parametrized:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is parametrized "
                             "in terms of a sequence of tensors.")
        with grad_mode.no_grad():
            t = getattr(module, tensor_name)
        original = Parameter(t.detach(), t.requires_grad)
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    module.register_parameter(tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module: Any) -> type:
    """The module's class before ``register_parametrization`` swapped it for
    ``Parametrized<Class>`` (its own class when it is not parametrized)."""
    return module.__class__.__bases__[0] if is_parametrized(module) else type(module)


def transfer_parametrizations_and_params(from_module: Any, to_module: Any, tensor_name: str | None = None) -> Any:
    """Register ``from_module``'s parametrizations (all, or those of ``tensor_name``) on
    ``to_module`` and make it share their original parameters: afterwards both compute the
    same parametrized tensor from the same storage. A tensor ``to_module`` lacks is created
    first from ``from_module``'s parametrized value."""
    if not is_parametrized(from_module):
        return to_module
    names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
    for name in names:
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name)))
        source = from_module.parametrizations[name]
        for param_func in source:
            register_parametrization(to_module, name, param_func)
        target = to_module.parametrizations[name]
        if hasattr(source, "original"):
            target.original = source.original
        else:
            num = 0
            while hasattr(source, f"original{num}"):
                setattr(target, f"original{num}", getattr(source, f"original{num}"))
                num += 1
    return to_module
