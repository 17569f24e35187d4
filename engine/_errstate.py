"""torch computes silently where NumPy warns: ``log(0)`` is ``-inf``, ``sqrt(-1)`` and ``0 / 0``
are ``nan``, ``exp(1000)`` is ``inf``, with no message. NumPy gives the same numbers but reports
each floating-point flag it sees as a ``RuntimeWarning`` (an exception under ``-W error``).

The engine therefore runs under NumPy's ``errstate(all="ignore")`` wherever control enters it
from user code: every public method and operator of ``Tensor`` and every public function of the
engine's namespaces (``silence_class`` / ``silence_namespace``, applied once at import, not op by
op), and the optimizers' updates. NumPy keeps that state in a context variable, so the user's
own NumPy code outside these calls keeps its warnings; code the engine calls back while inside
(hooks, a custom ``Function``'s forward and backward) runs with them off, as part of the op.

Cost: setting and resetting one context variable per entry (about 0.2 µs), skipped when an
outer entry already did it. Warnings the engine gives on purpose (torch's) still point at the
user's line: see ``_WRAPPER_FILE``.
"""

from __future__ import annotations

import functools
import linecache
import types
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

F = TypeVar("F", bound=Callable[..., Any])

try:  # NumPy >= 2.0 keeps the error state in a context variable: set it directly (cheapest)
    from numpy._core.umath import _extobj_contextvar

    with np.errstate(all="ignore"):
        _IGNORE = _extobj_contextvar.get()
except ImportError:  # pragma: no cover - other NumPy layouts: the public decorator
    _extobj_contextvar = None
    _IGNORE = None

_wrapped: dict[int, Callable[..., Any]] = {}  # id(original) -> its wrapper: an alias gets the same one

# The wrapper is one more frame between an engine function that warns with a ``stacklevel``
# (torch's own warnings, written for torch's call depth) and the user's line the warning must
# point at. CPython's ``warnings`` skips frames whose file name contains "importlib" and
# "_bootstrap" (that is how importlib hides its own), so the wrapper is compiled under such a
# name: warnings still point at the user's line; tracebacks show the wrapper's source as usual.
_WRAPPER_SOURCE = """
def make(fn, var, ignore):
    def wrapper(*args, **kwargs):
        if var.get() is ignore:  # an outer engine call already turned the warnings off
            return fn(*args, **kwargs)
        token = var.set(ignore)
        try:
            return fn(*args, **kwargs)
        finally:
            var.reset(token)
    return wrapper
"""
_WRAPPER_FILE = f"{__file__} (wrapper frames, skipped by warnings as importlib._bootstrap's are)"
_namespace: dict[str, Any] = {}
exec(compile(_WRAPPER_SOURCE, _WRAPPER_FILE, "exec"), _namespace)  # noqa: S102 - our own constant source
linecache.cache[_WRAPPER_FILE] = (len(_WRAPPER_SOURCE), None, _WRAPPER_SOURCE.splitlines(True), _WRAPPER_FILE)
_make = _namespace["make"]


def silent(fn: F) -> F:
    """``fn`` run with NumPy's floating-point warnings off (one wrapper per function)."""
    if getattr(fn, "_np_silent", False):
        return fn
    known = _wrapped.get(id(fn))
    if known is not None and known.__wrapped__ is fn:  # type: ignore[attr-defined]
        return known  # type: ignore[return-value]
    if _extobj_contextvar is None:  # pragma: no cover
        wrapper = functools.wraps(fn)(np.errstate(all="ignore")(fn))
    else:
        wrapper = functools.wraps(fn)(_make(fn, _extobj_contextvar, _IGNORE))
    wrapper._np_silent = True  # type: ignore[attr-defined]
    _wrapped[id(fn)] = wrapper
    return wrapper  # type: ignore[return-value]


class quiet:
    """``with quiet():`` runs a block with NumPy's floating-point warnings off, for ops that
    compute on inf/NaN on purpose (softmax of masked rows, sigmoid's overflowing exp). Inside an
    engine entry, where they are off already, it costs one context-variable read, where
    ``np.errstate`` costs about 2 µs per use (one per op call, on the hot paths)."""

    __slots__ = ("_token",)

    def __enter__(self) -> None:
        if _extobj_contextvar is None:  # pragma: no cover - other NumPy layouts
            self._token = np.errstate(all="ignore")
            self._token.__enter__()
        elif _extobj_contextvar.get() is _IGNORE:
            self._token = None
        else:
            self._token = _extobj_contextvar.set(_IGNORE)

    def __exit__(self, *exc: object) -> None:
        token = self._token
        if token is None:
            return
        if _extobj_contextvar is None:  # pragma: no cover
            token.__exit__(*exc)
        else:
            _extobj_contextvar.reset(token)


def _public(name: str) -> bool:
    return not name.startswith("_") or (name.startswith("__") and name.endswith("__"))


# entered by the interpreter itself, not by user code that computes
_NOT_ENTRIES = frozenset({"__new__", "__init_subclass__", "__class_getitem__", "__getattribute__",
                          "__getattr__", "__setattr__", "__delattr__", "__dir__", "__sizeof__",
                          "__reduce__", "__reduce_ex__", "__getstate__", "__setstate__", "__hash__"})


# Tensor methods that read sizes, strides and flags, or make a new Tensor on the same array, and
# compute nothing: no wrapper (code calls ``x.size(0)``, ``x.dim()``, ``x.detach()`` all the time,
# and the engine itself, where a wrapper frame per call is a per-op cost)
_NO_COMPUTE = frozenset({"size", "dim", "ndimension", "numel", "nelement", "stride", "storage_offset",
                         "is_contiguous", "is_floating_point", "is_complex", "is_inference", "is_same_size",
                         "element_size", "data_ptr", "get_device", "detach", "requires_grad_"})


def silence_class(cls: type) -> None:
    """Wrap every public method and operator defined on ``cls`` (plain functions only: a
    property, staticmethod or classmethod keeps its binding untouched), except the ones
    that compute nothing (``_NO_COMPUTE``)."""
    for name, value in list(vars(cls).items()):
        if (isinstance(value, types.FunctionType) and _public(name) and name not in _NOT_ENTRIES
                and name not in _NO_COMPUTE):
            wrapper = silent(value)
            wrapper.__module__, wrapper.__qualname__ = cls.__module__, f"{cls.__qualname__}.{name}"
            setattr(cls, name, wrapper)


def silence_namespace(namespace: dict[str, Any], module_name: str) -> None:
    """Wrap every public plain function in a module's globals. A wrapper is named after the
    first namespace that installs it, so pickle finds the wrapper itself by name."""
    for name, value in list(namespace.items()):
        if isinstance(value, types.FunctionType) and not name.startswith("_"):
            first = id(value) not in _wrapped and not getattr(value, "_np_silent", False)
            wrapper = silent(value)
            if first:
                wrapper.__module__, wrapper.__qualname__ = module_name, name
            namespace[name] = wrapper
