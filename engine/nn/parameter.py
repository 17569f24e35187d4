"""``Parameter`` and ``Buffer``: the tensor kinds a Module files away when they are assigned to it.

As in torch, ``Parameter`` is a real ``Tensor`` subclass (a leaf that requires grad by default,
printed as ``Parameter containing:``), while ``Buffer(t)`` returns a plain ``Tensor`` marked as
a buffer: ``isinstance(t, Buffer)`` is true through the metaclass, ``type(t)`` is ``Tensor``.
Ops on either return plain Tensors.
"""

from __future__ import annotations

from types import MethodType
from typing import Any

import numpy as np

from .._creation import empty
from .._tensor import Tensor

__all__ = ["Buffer", "Parameter", "UninitializedBuffer", "UninitializedParameter", "UninitializedTensorMixin",
           "is_lazy"]


class Parameter(Tensor):
    """A Tensor that is a module parameter: assigning one as a Module attribute registers it in
    ``_parameters`` so it shows up in ``parameters()``, ``state_dict()`` and ``to()``.

    Args:
        data: the values; the parameter shares their memory (and version counter) but is a new
            leaf with no history. ``None`` gives an empty parameter.
        requires_grad: default ``True``, also inside ``no_grad()`` (as in torch).

    Example::

        >>> p = engine.nn.Parameter(engine.ones(2))
        >>> p
        Parameter containing:
        tensor([1., 1.], requires_grad=True)
    """

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True) -> Parameter:
        if data is None:
            data = Tensor._wrap(np.empty((0,), dtype=np.float32))
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter expects a Tensor as data, got {type(data).__name__}")
        out = cls._wrap(data._data)
        out._version_counter = data._version_counter  # an alias of ``data``, like torch's _make_subclass
        out.requires_grad_(requires_grad)
        return out

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True) -> None:
        """All the work happens in ``__new__`` (``Tensor.__init__`` must not run again)."""

    def __deepcopy__(self, memo: dict) -> Parameter:
        """A new Parameter on a copy of the data with the same ``requires_grad`` (torch drops
        ``.grad`` here, unlike for plain tensors)."""
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(Tensor._wrap(self._data.copy()), self._requires_grad)
        memo[id(self)] = result
        return result

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()


class _BufferMeta(type):
    """``isinstance(t, Buffer)`` is true for tensors made by ``Buffer(...)``."""

    def __instancecheck__(cls, instance: Any) -> bool:
        if cls is Buffer:
            return isinstance(instance, Tensor) and instance.__dict__.get("_is_buffer", False)
        return super().__instancecheck__(instance)


class Buffer(metaclass=_BufferMeta):
    """Marks a tensor as a module buffer when assigned as an attribute (``self.x = Buffer(t)``).

    Returns a detached plain ``Tensor`` on ``data``'s memory with ``persistent`` recorded on
    it; non-persistent buffers are left out of ``state_dict()``.
    """

    def __new__(cls, data: Tensor | None = None, *, persistent: bool = True) -> Tensor:  # type: ignore[misc]
        if data is None:
            data = Tensor._wrap(np.empty((0,), dtype=np.float32))
        t = data.detach().requires_grad_(data.requires_grad)
        t.persistent = persistent
        t._is_buffer = True
        return t


# ---- lazy modules' placeholders ----------------------------------------------------------

class _UninitializedData(np.ndarray):
    """The empty array behind an uninitialized parameter or buffer: any NumPy computation on it
    (every engine op ends in one) raises torch's ``ValueError`` for using an uninitialized
    parameter. Dtype changes and copies keep the guard (they return this class)."""

    owner = "UninitializedParameter"

    def __array_finalize__(self, obj: Any) -> None:
        self.owner = getattr(obj, "owner", "UninitializedParameter")

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        raise ValueError(_use_error(f"<ufunc '{ufunc.__name__}'>", self.owner))

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        raise ValueError(_use_error(f"<function {func.__name__}>", self.owner))


def _use_error(what: str, owner: str) -> str:
    return (f"Attempted to use an uninitialized parameter in {what}. "
            "This error happens when you are using a `LazyModule` or "
            f"explicitly manipulating `engine.nn.parameter.{owner}` "
            "objects. When using LazyModules Call `forward` with a dummy batch "
            "to initialize the parameters before calling torch functions")


def _uninitialized_tensor(cls: type, dtype: Any, requires_grad: bool) -> Any:

    data = empty(0, dtype=dtype)._data.view(_UninitializedData)
    data.owner = cls.__name__
    out = cls._wrap(data)
    out._requires_grad = requires_grad
    return out


# Methods torch lets through on an uninitialized tensor (dtype and device moves, size, copy_).
_ALLOWED_METHODS = frozenset({
    "size", "copy_", "is_complex", "is_floating_point", "half", "float", "double", "char", "short", "int", "long",
    "cuda", "cpu", "to", "get_device", "materialize", "share_memory_",
})


class UninitializedTensorMixin:
    """What ``UninitializedParameter`` and ``UninitializedBuffer`` share: no data yet (a lazy
    module's forward pre-hook calls ``materialize`` with the inferred shape, which turns the
    object into ``cls_to_become``). ``shape`` raises ``RuntimeError``; tensor methods other than
    dtype/device moves, ``size`` and ``copy_``, and every op on it, raise torch's ``ValueError``."""

    cls_to_become: type

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """All the work happens in ``__new__``."""

    def __getattribute__(self, name: str) -> Any:
        value = object.__getattribute__(self, name)
        if name[0] != "_" and name not in _ALLOWED_METHODS and isinstance(value, MethodType):
            owner = type(self).__name__

            def refused(*args: Any, **kwargs: Any) -> Any:
                raise ValueError(_use_error(f"<method '{name}' of 'engine.Tensor' objects>", owner))
            return refused
        return value

    def materialize(self, shape: Any, device: Any = None, dtype: Any = None) -> None:
        """Give the tensor uninitialized memory of ``shape`` (and ``dtype``, default its own)
        and make it a ``cls_to_become`` (``Parameter`` or ``Tensor``) in place."""

        data = empty(shape, dtype=dtype if dtype is not None else self.dtype)._data
        object.__setattr__(self, "_data", data)
        self.__class__ = self.cls_to_become

    @property
    def shape(self) -> Any:
        raise RuntimeError(
            "Can't access the shape of an uninitialized parameter or buffer. "
            "This error usually happens in `load_state_dict` when trying to load "
            "an uninitialized parameter into an initialized one. "
            "Call `forward` to initialize the parameters before accessing their attributes."
        )

    def share_memory_(self) -> Any:
        raise RuntimeError(
            "Can't share memory on an uninitialized parameter or buffer. "
            "Call `forward` to initialize the parameters before calling "
            "`module.share_memory()`."
        )

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"

    __str__ = __repr__

    def __len__(self) -> int:
        raise ValueError(_use_error("<function Tensor.__len__>", type(self).__name__))

    def __bool__(self) -> bool:
        raise ValueError(_use_error("<method '__bool__' of 'engine.Tensor' objects>", type(self).__name__))

    def __iter__(self) -> Any:
        raise ValueError(_use_error("<function Tensor.__iter__>", type(self).__name__))

    def __reduce_ex__(self, proto: Any) -> tuple:
        return (type(self), (self.requires_grad,))


def is_lazy(param: Any) -> bool:
    """Whether ``param`` is an ``UninitializedParameter`` or ``UninitializedBuffer``."""
    return isinstance(param, UninitializedTensorMixin)


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A ``Parameter`` whose shape is not known yet (a lazy module's): it holds no data until
    ``materialize(shape)`` makes it a plain ``Parameter``."""

    cls_to_become = Parameter

    def __new__(cls, requires_grad: bool = True, device: Any = None, dtype: Any = None) -> UninitializedParameter:
        return _uninitialized_tensor(cls, dtype, requires_grad)

    def __deepcopy__(self, memo: dict) -> UninitializedParameter:
        if id(self) not in memo:
            memo[id(self)] = type(self)(self.requires_grad, None, self.dtype)
        return memo[id(self)]


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer whose shape is not known yet: ``materialize(shape)`` makes it a plain ``Tensor``."""

    cls_to_become = Tensor

    def __new__(cls, requires_grad: bool = False, device: Any = None, dtype: Any = None,
                persistent: bool = True) -> UninitializedBuffer:
        out = _uninitialized_tensor(cls, dtype, requires_grad)
        out.persistent = persistent
        return out

    def __deepcopy__(self, memo: dict) -> UninitializedBuffer:
        # torch defines no deepcopy for it: Tensor's is refused like any other method
        raise ValueError(_use_error("<function Tensor.__deepcopy__>", type(self).__name__))
