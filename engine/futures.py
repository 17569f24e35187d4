"""``torch.futures``: a ``Future`` holds the result (or the error) of a computation that completes
once; ``wait`` blocks until then (another thread may complete it), ``then`` chains a callback
whose result becomes a new Future, ``collect_all``/``wait_all`` join several.

Torch's semantics, which its C++ ``Future`` implements: a Future completes once (a second
``set_result`` is a ``RuntimeError``); callbacks added before completion run on completion, in the
order they were added, added after it they run at once; an error raised in a ``then`` callback is
wrapped in a ``RuntimeError`` ("Got the following error when running the callback: ...") that the
chained Future's ``wait`` raises; an error in an ``add_done_callback`` callback is logged and
swallowed. ``jit.fork`` returns a base ``Future`` (not an instance of ``futures.Future``), as
torch's ``torch._C.Future``.
"""

from __future__ import annotations

import sys
import threading
import traceback
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from ._tensor import device as _device

__all__ = ["Future", "collect_all", "wait_all"]

T = TypeVar("T")
S = TypeVar("S")


class _Future:
    """The core Future (torch's ``torch._C.Future``, which ``jit.fork`` returns)."""

    def __init__(self) -> None:
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._value: Any = None
        self._error: BaseException | None = None
        self._callbacks: list[Callable[[Any], None]] = []

    def done(self) -> bool:
        """True once a result or an error is set (``wait`` then returns at once)."""
        return self._done.is_set()

    def wait(self) -> Any:
        """Block until the Future completes; its value, or its error raised."""
        self._done.wait()
        return self.value()

    def value(self) -> Any:
        """The value of a completed Future (its error raised); call it after ``wait`` or in a callback."""
        if not self._done.is_set():
            raise RuntimeError("completed() INTERNAL ASSERT FAILED: Future.value() called before the Future "
                               "completed; call wait() first")
        if self._error is not None:
            raise self._error.with_traceback(None)  # each raise its own frames, as a fresh error
        return self._value

    def then(self, callback: Callable[[Any], Any]) -> Future:
        """A new Future completed with ``callback(self)`` once this one completes."""
        chained = Future()

        def run(fut: _Future) -> None:
            try:
                result = callback(fut)
            except Exception as error:  # noqa: BLE001 - torch hands any callback error to the chained Future
                chained.set_exception(RuntimeError(_callback_error(error)))
            else:
                chained.set_result(result)

        self._on_done(run)
        return chained

    def add_done_callback(self, callback: Callable[[Any], None]) -> None:
        """Run ``callback(self)`` on completion (now, if done); its errors are logged, not raised."""
        def run(fut: _Future) -> None:
            try:
                callback(fut)
            except Exception as error:  # noqa: BLE001 - torch logs a done-callback's error and goes on
                print(_callback_error(error), file=sys.stderr)

        self._on_done(run)

    def set_result(self, result: Any) -> None:
        """Complete the Future with ``result``: waiters wake, callbacks run."""
        self._complete(result, None)

    def set_exception(self, result: BaseException) -> None:
        """Complete the Future with an error, which ``wait``/``value`` raise."""
        assert isinstance(result, Exception), f"{result} is of type {type(result)}, not an Exception."
        self._complete(None, result)

    def _complete(self, value: Any, error: BaseException | None) -> None:
        with self._lock:
            if self._done.is_set():
                raise RuntimeError("Attempting to mark a completed Future as complete again. Note that a Future "
                                   "can only be marked completed once.")
            self._value, self._error = value, error
            self._done.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback(self)

    def _on_done(self, callback: Callable[[Any], None]) -> None:
        with self._lock:
            if not self._done.is_set():
                self._callbacks.append(callback)
                return
        callback(self)


def _callback_error(error: BaseException) -> str:
    """torch's words for an error raised in a callback: the error, then the frames, innermost first."""
    frames = traceback.extract_tb(error.__traceback__)
    at = "".join(f"  {f.filename}({f.lineno}): {f.name}\n" for f in reversed(frames))
    return f"Got the following error when running the callback: {type(error).__name__}: {error}\n\nAt:\n{at}"


class Future(_Future, Generic[T]):
    """``torch.futures.Future``. ``devices`` is for CUDA streams: a CPU-only build takes none (torch's
    CPU build refuses ``cpu``, which has no index, and every accelerator it lacks)."""

    def __init__(self, *, devices: list[int | str | _device] | None = None) -> None:
        for d in devices or ():
            d = _device(d)  # a non-CPU device raises here, as it does everywhere in the engine
            raise ValueError(f"Expected devices to have indices, got {d}")
        super().__init__()


def collect_all(futures: list[_Future]) -> Future:
    """A Future completed with the list ``futures`` once all of them complete (the first error
    among them, in list order, if any failed)."""
    futures = list(futures)
    for fut in futures:
        if not isinstance(fut, _Future):
            raise TypeError("collect_all(): incompatible function arguments: expected a sequence of "
                            f"torch.futures.Future, got {type(fut).__name__}")
    joined: Future = Future()
    remaining = [len(futures)]
    lock = threading.Lock()

    def one_done(_: _Future) -> None:
        with lock:
            remaining[0] -= 1
            last = remaining[0] == 0
        if last:
            error = next((f._error for f in futures if f._error is not None), None)
            if error is not None:
                joined.set_exception(error)
            else:
                joined.set_result(futures)

    if not futures:
        joined.set_result([])
    for fut in futures:
        fut._on_done(one_done)
    return joined


def wait_all(futures: list[_Future]) -> list:
    """The values of ``futures``, once all complete (the first error raised)."""
    return [fut.wait() for fut in collect_all(futures).wait()]
