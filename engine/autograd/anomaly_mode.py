"""Anomaly detection, as ``torch.autograd.detect_anomaly`` does it.

While it is on, every graph node made in forward keeps the Python stack that made it
(``node.metadata["traceback_"]``); when backward then fails inside a node (its backward, a hook
on it, a tensor it saved that was modified in place), a warning shows that stack before the error
propagates; and with ``check_nan``, a node whose backward returns a NaN gradient raises
``RuntimeError: Function 'SqrtBackward0' returned nan values in its 0th output.``

Off (the default), it costs the graph one flag test per node.

Example::

    >>> with engine.autograd.detect_anomaly():
    ...     y = x.sqrt().sum()      # x holds a negative value
    ...     y.backward()            # UserWarning: Error detected in SqrtBackward0. Traceback of ...
    RuntimeError: Function 'SqrtBackward0' returned nan values in its 0th output.
"""

from __future__ import annotations

import os
import traceback
import warnings
from typing import Any

import numpy as np

__all__ = ["detect_anomaly", "set_detect_anomaly"]


class _State:
    # An instance with slots: the graph reads ``enabled`` once per node, and CPython 3.11 reads a
    # slot of an instance much faster than an attribute of a class.
    __slots__ = ("enabled", "check_nan")

    def __init__(self) -> None:
        self.enabled = False
        self.check_nan = True


_state = _State()


def is_anomaly_enabled() -> bool:
    """Whether anomaly detection is on (``torch.is_anomaly_enabled``)."""
    return _state.enabled


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly detection checks backward results for NaN (torch's default: ``True``)."""
    return _state.check_nan


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """Turn anomaly detection on or off for the whole process (``torch.set_anomaly_enabled``)."""
    _state.enabled, _state.check_nan = bool(enabled), bool(check_nan)


class detect_anomaly:  # noqa: N801 - torch's name
    """Context manager: anomaly detection on inside, as it was before outside. Warns, as torch
    does, that it slows the program down."""

    def __init__(self, check_nan: bool = True) -> None:
        self.prev, self.prev_check_nan = _state.enabled, _state.check_nan
        self.check_nan = check_nan
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime and should only "
                      "be enabled for debugging.", stacklevel=2)

    def __enter__(self) -> None:
        set_anomaly_enabled(True, self.check_nan)

    def __exit__(self, *args: object) -> None:
        set_anomaly_enabled(self.prev, self.prev_check_nan)


class set_detect_anomaly:  # noqa: N801 - torch's name
    """Set anomaly detection on or off now; as a context manager, restore the previous setting on
    exit. ``engine.autograd.set_detect_anomaly(True)`` alone turns it on for good."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.prev, self.prev_check_nan = _state.enabled, _state.check_nan
        set_anomaly_enabled(mode, check_nan)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *args: object) -> None:
        set_anomaly_enabled(self.prev, self.prev_check_nan)


# The engine's own op machinery, which torch runs in C++: left out of the forward stacks, so each
# ends, as torch's does, at the last line of Python that called an op (a module's forward,
# user code). ``engine/nn/modules`` stays: torch's module frames are Python too.
_ENGINE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_INTERNAL = tuple(os.path.join(_ENGINE, p) for p in ("_ops", "autograd", "_tensor.py", "_creation.py", "_errstate.py",
                                                     os.path.join("nn", "functional.py"),
                                                     os.path.join("nn", "_functional"),
                                                     os.path.join("utils", "hooks.py")))


def forward_stack() -> list[str]:
    """The current Python stack as ``traceback.format_stack`` lines, innermost engine op
    frames removed (see ``_INTERNAL``)."""
    frames = traceback.extract_stack()
    end = len(frames)
    while end > 0 and frames[end - 1].filename.startswith(_INTERNAL):
        end -= 1
    return traceback.format_list(frames[:end])


def warn_failed_node(node: Any) -> None:
    """Backward failed in ``node``: show where forward made it (torch's anomaly warning)."""
    stack = node._metadata.get("traceback_") if node._metadata else None
    if stack is None:
        message = (f"Error detected in {node.name()}. No forward pass information available. Enable detect "
                   "anomaly during forward pass for more information.")
    else:
        message = f"Error detected in {node.name()}. Traceback of forward call that caused the error:\n{''.join(stack)}"
    warnings.warn(message, stacklevel=4)


def check_nan(node: Any, outs: Any) -> None:
    """Raise torch's error if ``node`` returned a NaN gradient (floating ones only)."""
    for i, g in enumerate(outs):
        if g is not None and g.dtype.kind in "fc" and np.isnan(g).any():
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.")
