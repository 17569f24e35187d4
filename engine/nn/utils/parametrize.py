"""``register_parametrization``/``remove_parametrizations`` (torch.nn.utils.parametrize), enough for
``parametrizations.weight_norm`` and user parametrizations.

The module's class is swapped for a ``Parametrized<Class>`` subclass whose property ``name``
evaluates ``module.parametrizations[name]()``: the chain of parametrizations applied to the
stored ``original`` (or ``original0``, ``original1``, ... when ``right_inverse`` returns several
tensors), as in torch, so state_dict keys match (``parametrizations.weight.original0``).
"""

from __future__ import annotations

from typing import Any

from ..._tensor import Tensor
from ...autograd import grad_mode
from ..modules.container import ModuleDict, ModuleList
from ..parameter import Parameter

__all__ = ["ParametrizationList", "is_parametrized", "register_parametrization", "remove_parametrizations"]


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor and its stored original(s)."""

    def __init__(self, modules: Any, original: Tensor, unsafe: bool = False) -> None:
        super().__init__(modules)
        self.unsafe = unsafe
        with grad_mode.no_grad():
            new = original
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    new = module.right_inverse(new)
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
        return self.parametrizations[tensor_name]()

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
