"""Sampled observation: which training steps a trace watches in full detail, and what it records
of the others (light steps).

Per-module hooks cost what torch's own hooks cost (1.1-2x a small transformer's step), too much to
leave on for a day-long run. A trace with ``every=N`` attaches its per-module hooks only for
*full* steps and removes them (the handles, not hooks that return early) in between:

- the first ``first`` steps, every ``N``-th step (``step % N == 0``);
- a step asked for (``request_full``: the viewer's key, a single step from the TUI);
- the steps after a light step saw a breakpoint's condition (NaN/Inf in the gradients, a
  gradient norm over the threshold): full detail then finds the module.

A *light* step records what costs next to nothing, in its ``step`` event: the loss (the scalar
``backward`` was called on: ``BackwardWatch``), the learning rates, the step's time, the global
gradient norm and whether any gradient holds a NaN/Inf (``grad_norm``: one pass over the
gradients the optimizer is about to read anyway); a rank of several also gets its ``params``
event with the fingerprints. ``every=None`` watches every step in full (``modscope.trace``'s
default; ``modscope run``/``record`` default to ``DEFAULT_EVERY``).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from typing import Any

DEFAULT_EVERY = 50  # modscope run / record: a full step every 50 (bench/bench_long_run.py)
DEFAULT_FIRST = 2  # and the first 2: step 0 draws the graph, step 1 is a warm full step
ENV_VARIABLE = "MODSCOPE_DETAIL"  # how `modscope run` tells its child: "full" or "every=N,first=K"


class DetailPolicy:
    """Which steps are full. ``every=None``: all of them."""

    def __init__(self, every: int | None = None, first: int = DEFAULT_FIRST) -> None:
        if every is not None and (type(every) is not int or every < 1):
            raise ValueError(f"every must be a positive int (a full step every N) or None (every step full), "
                             f"got {every!r}")
        if type(first) is not int or first < 0:
            raise ValueError(f"first must be an int >= 0 (how many steps to watch in full first), got {first!r}")
        self.every, self.first = every, first
        self.requested: str | None = None  # why the next step must be full (set from any thread)

    @property
    def sampling(self) -> bool:
        return self.every is not None

    def detail(self, step: int) -> tuple[bool, str]:
        """``(full, why)`` for ``step``; a pending request is used up."""
        if self.every is None:
            return True, "every step"
        requested, self.requested = self.requested, None
        if requested:
            return True, requested
        if step < self.first:
            return True, "first steps"
        if step % self.every == 0:
            return True, f"every {self.every}"
        return False, ""

    def to_env(self) -> str:
        return "full" if self.every is None else f"every={self.every},first={self.first}"

    @classmethod
    def from_env(cls, value: str | None) -> DetailPolicy | None:
        """The policy ``to_env`` wrote (``None`` for an unset variable); ``ValueError`` naming
        the variable for anything else."""
        if not value:
            return None
        if value == "full":
            return cls(None)
        try:
            fields = dict(part.split("=", 1) for part in value.split(","))
            return cls(int(fields["every"]), int(fields.get("first", DEFAULT_FIRST)))
        except (ValueError, KeyError) as e:
            raise ValueError(f"${ENV_VARIABLE}={value!r}: expected 'full' or 'every=N[,first=K]' ({e})") from None


class BackwardWatch:
    """Calls every listener with ``(tensors, gradient)`` at each ``backward`` the program starts:
    ``Tensor.backward`` (``loss.backward()``) and the framework's ``autograd.backward`` are
    replaced, while at least one listener is added, by wrappers that tell the listeners once per
    call (a ``Tensor.backward`` that calls ``autograd.backward`` is one call), and put back when
    the last listener goes. One per framework, shared by every trace. (A function imported by
    name before the trace started, ``from torch.autograd import backward``, is not seen.)"""

    _active: dict[int, BackwardWatch] = {}
    _depth = threading.local()  # backward calls in progress in this thread (the outermost one tells)

    def __init__(self, tensor_type: type, autograd: Any) -> None:
        self.listeners: list[Callable[[Any, Any], None]] = []
        # (owner, name, original, wrapper): the method and the function, as they were
        self.patches = [(owner, name, getattr(owner, name), self._wrap(getattr(owner, name)))
                        for owner, name in ((tensor_type, "backward"), (autograd, "backward"))]

    def _wrap(self, original: Callable[..., Any]) -> Callable[..., Any]:
        listeners, depth = self.listeners, self._depth

        def backward(tensors: Any, gradient: Any = None, *args: Any, **kwargs: Any) -> Any:
            level = getattr(depth, "n", 0)
            if level == 0:
                for listener in listeners:
                    listener(tensors, gradient)
            depth.n = level + 1
            try:
                return original(tensors, gradient, *args, **kwargs)
            finally:
                depth.n = level

        backward.__wrapped__ = original  # type: ignore[attr-defined]
        backward.__doc__, backward.__name__ = original.__doc__, original.__name__
        backward.__qualname__ = getattr(original, "__qualname__", original.__name__)
        return backward

    @classmethod
    def add(cls, tensor_type: type, autograd: Any, listener: Callable[[Any, Any], None]) -> None:
        watch = cls._active.get(id(autograd))
        if watch is None:
            watch = cls._active[id(autograd)] = cls(tensor_type, autograd)
            for owner, name, _, wrapper in watch.patches:
                setattr(owner, name, wrapper)
        watch.listeners.append(listener)

    @classmethod
    def remove(cls, autograd: Any, listener: Callable[[Any, Any], None]) -> None:
        watch = cls._active.get(id(autograd))
        if watch is None:
            return
        if listener in watch.listeners:
            watch.listeners.remove(listener)
        if not watch.listeners:
            del cls._active[id(autograd)]
            for owner, name, original, wrapper in watch.patches:
                if getattr(owner, name) is wrapper:  # (else someone replaced it since: leave theirs)
                    setattr(owner, name, original)


def scalar_of(tensors: Any, grad_tensors: Any, tensor_type: type) -> Any:
    """The one-element tensor ``backward`` was called on without an explicit gradient (a loss),
    detached, or ``None``."""
    if grad_tensors is not None:
        return None
    t = tensors[0] if isinstance(tensors, list | tuple) and len(tensors) == 1 else tensors
    if isinstance(t, tensor_type) and t.numel() == 1:
        return t.detach()
    return None


def finite_norm(sq: float) -> tuple[float | None, bool]:
    """``(norm, nonfinite)`` from a sum of squares: a NaN/Inf anywhere makes the sum non-finite."""
    if math.isfinite(sq):
        return math.sqrt(sq), False
    return None, True
