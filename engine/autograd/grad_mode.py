"""Grad mode: whether new ops record a graph. Context managers that double as decorators."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


class _State:
    enabled = True
    inference = False  # inside ``inference_mode()``: new tensors are inference tensors


_state = _State()


def is_grad_enabled() -> bool:
    """True when operations on tensors that require grad record an autograd graph."""
    return _state.enabled


def is_inference_mode_enabled() -> bool:
    """True inside ``inference_mode()`` (and not inside a nested ``inference_mode(False)``)."""
    return _state.inference


class _GradModeContext:
    """Base for ``no_grad``/``enable_grad``/``set_grad_enabled``: a context manager and a
    decorator. The previous mode is always restored, also when the body raises."""

    _mode: bool

    def __enter__(self) -> None:
        self._prev = _state.enabled
        _state.enabled = self._mode

    def __exit__(self, *exc: object) -> None:
        _state.enabled = self._prev

    def __call__(self, func: F) -> F:
        mode = self._mode

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            prev = _state.enabled
            _state.enabled = mode
            try:
                return func(*args, **kwargs)
            finally:
                _state.enabled = prev

        return wrapper  # type: ignore[return-value]

    def clone(self) -> _GradModeContext:
        return self.__class__()


class no_grad(_GradModeContext):  # noqa: N801
    """Disable graph recording: results of ops never require grad.

    Example::

        >>> with engine.no_grad():
        ...     y = x * 2          # y.requires_grad is False
    """

    _mode = False


class enable_grad(_GradModeContext):  # noqa: N801
    """Enable graph recording, e.g. inside a ``no_grad`` block."""

    _mode = True


class set_grad_enabled(_GradModeContext):  # noqa: N801
    """Set grad mode to ``mode``. Takes effect immediately, like torch's (so a plain
    ``set_grad_enabled(False)`` call works), and restores the old mode on ``__exit__``."""

    def __init__(self, mode: bool) -> None:
        self._prev = _state.enabled
        self._mode = bool(mode)
        _state.enabled = self._mode

    def __enter__(self) -> None:
        pass

    def clone(self) -> set_grad_enabled:
        return self.__class__(self._mode)


class inference_mode(_GradModeContext):  # noqa: N801
    """Like ``no_grad``, and every tensor created inside is an *inference tensor*
    (``t.is_inference()``), which torch then keeps out of autograd: outside the mode it cannot
    be saved for backward, updated in place, or set to require grad (torch's errors).
    ``inference_mode(False)`` switches both off inside an enabled block. A context manager
    and a decorator (also bare: ``@inference_mode``).

    Example::

        >>> with engine.inference_mode():
        ...     y = model(x)       # y.is_inference() is True, y.requires_grad is False
    """

    def __new__(cls, mode: Any = True) -> Any:
        if callable(mode):  # ``@inference_mode`` without parentheses decorates directly
            return cls()(mode)
        return super().__new__(cls)

    def __init__(self, mode: bool = True) -> None:
        self.mode = bool(mode)
        self._mode = not self.mode  # the grad mode inside

    def __enter__(self) -> None:
        self._prev = _state.enabled
        self._prev_inference = _state.inference
        _state.enabled, _state.inference = self._mode, self.mode

    def __exit__(self, *exc: object) -> None:
        _state.enabled, _state.inference = self._prev, self._prev_inference

    def __call__(self, func: F) -> F:
        mode = self.mode

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with inference_mode(mode):
                return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    def clone(self) -> inference_mode:
        return self.__class__(self.mode)
