"""Grad mode: whether new ops record a graph. Context managers that double as decorators."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


class _State:
    enabled = True


_state = _State()


def is_grad_enabled() -> bool:
    """True when operations on tensors that require grad record an autograd graph."""
    return _state.enabled


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


class inference_mode(no_grad):  # noqa: N801
    """Same as ``no_grad`` here (the engine has no separate inference tensors)."""

    def __init__(self, mode: bool = True) -> None:
        self._mode = not mode
