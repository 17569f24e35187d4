"""``Parameter`` and ``Buffer``: the tensor kinds a Module files away when they are assigned to it.

As in torch, ``Parameter`` is a real ``Tensor`` subclass (a leaf that requires grad by default,
printed as ``Parameter containing:``), while ``Buffer(t)`` returns a plain ``Tensor`` marked as
a buffer: ``isinstance(t, Buffer)`` is true through the metaclass, ``type(t)`` is ``Tensor``.
Ops on either return plain Tensors.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._tensor import Tensor

__all__ = ["Buffer", "Parameter"]


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
        out._version = data._version  # an alias of ``data``, like torch's _make_subclass
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
