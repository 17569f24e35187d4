"""The user's own hooks, timed: each firing becomes a ``hook`` event."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


class UserHook:
    """A user's hook, timed: its firing becomes a ``hook`` event. Keeps the original's
    behaviour exactly (arguments, return value, exceptions)."""

    def __init__(self, fn: Callable, tracer: Any, kind: str, target: str) -> None:
        self.fn, self.tracer, self.kind, self.target = fn, tracer, kind, target
        self.__qualname__ = getattr(fn, "__qualname__", type(fn).__name__)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        target = self.target
        if target == "*" and args and isinstance(args[0], self.tracer._backend.Module):
            target = self.tracer._paths.get(id(args[0]), type(args[0]).__name__)
        t0 = time.perf_counter_ns()
        try:
            result = self.fn(*args, **kwargs)
        except Exception as exc:
            self.tracer._emit_error(exc, where=f"{self.kind} hook {self.__qualname__}", module=target)
            raise
        finally:
            self.tracer._backend.forget_gradients()  # the hook may have changed a gradient in place
        self.tracer._emit("hook", qualname=self.__qualname__, target=target, hook_kind=self.kind,
                          replaced=result is not None, dur_ns=time.perf_counter_ns() - t0)
        return result


