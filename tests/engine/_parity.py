"""Helpers for the optim/data/serialization tests: running one case on engine and on torch."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


def error_of(fn: Callable[[], Any]) -> tuple[str, str] | None:
    """``(exception type name, message)`` raised by ``fn()``, or None when it returns."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the point is to capture whatever is raised
        return type(e).__name__, str(e).replace("torch.", "engine.")
    return None


def assert_same_error(engine_fn: Callable[[], Any], torch_fn: Callable[[], Any]) -> tuple[str, str]:
    """Both raise, with the same exception type and message (torch's names read as engine's)."""
    got, want = error_of(engine_fn), error_of(torch_fn)
    assert want is not None, "the torch case does not raise: the test is wrong"
    assert got == want
    return got


def rel_err(a: np.ndarray, b: np.ndarray) -> float:
    """max |a - b| relative to max |b| (the scale float32 rounding errors live at)."""
    return float(np.abs(np.asarray(a, np.float64) - b).max() / max(np.abs(b).max(), 1e-30))
