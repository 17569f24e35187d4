"""Helpers for users' own tests: assert the order hooks fire in, and that nothing is left behind.

Example::

    from modscope.testing import assert_firing_order, assert_no_hooks

    def test_block_order():
        model = Block()
        with modscope.trace(model) as tr:
            model(x).sum().backward()
        assert_firing_order(tr, [("forward_pre", ""), ("forward_pre", "a"), ...], kinds=("forward_pre",))
        assert_no_hooks(model)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from .events import MODULE_EVENTS

_HOOK_DICTS = ("_forward_pre_hooks", "_forward_hooks", "_backward_pre_hooks", "_backward_hooks")


def assert_firing_order(trace: Any, expected: Sequence[tuple[str, str]],
                        kinds: Iterable[str] = MODULE_EVENTS) -> None:
    """Fail with the first difference when the trace's firing order is not ``expected``."""
    actual = trace.firing_order(kinds)
    expected = [tuple(e) for e in expected]
    for i, (a, e) in enumerate(zip(actual, expected)):
        if tuple(a) != e:
            raise AssertionError(f"firing order differs at position {i}: got {a}, expected {e}\n"
                                 f"actual:   {actual[max(i - 2, 0):i + 3]}\n"
                                 f"expected: {expected[max(i - 2, 0):i + 3]}")
    if len(actual) != len(expected):
        longer = actual if len(actual) > len(expected) else expected
        raise AssertionError(f"firing order has {len(actual)} events, expected {len(expected)}; "
                             f"first extra or missing: {longer[min(len(actual), len(expected))]}")


def hooks_on(model: Any) -> dict[str, dict[str, int]]:
    """Per module path, how many hooks of each kind are registered on it (empty ones left out)."""
    out: dict[str, dict[str, int]] = {}
    for path, module in model.named_modules():
        counts = {name.strip("_"): len(getattr(module, name)) for name in _HOOK_DICTS if getattr(module, name)}
        if counts:
            out[path] = counts
    return out


def assert_no_hooks(model: Any, allowed: dict[str, dict[str, int]] | None = None) -> None:
    """Fail, naming the module and hook kind, when hooks other than ``allowed`` are on ``model``
    (``allowed`` is what ``hooks_on`` returned before the code under test ran)."""
    now = hooks_on(model)
    if now != (allowed or {}):
        raise AssertionError(f"hooks left on the model: {now} (expected {allowed or {}})")
