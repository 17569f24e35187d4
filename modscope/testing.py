"""Helpers for users' own tests: assert the order hooks fire in, that nothing is left behind, and
that two traces agree (``assert_same_firing_order``, ``assert_close_traces``: see ``modscope.diff``).

Example::

    from modscope.testing import assert_firing_order, assert_no_hooks

    def test_block_order():
        model = Block()
        with modscope.trace(model) as tr:
            model(x).sum().backward()
        assert_firing_order(tr, [("forward_pre", ""), ("forward_pre", "a"), ...], kinds=("forward_pre",))
        assert_no_hooks(model)

    def test_engine_matches_torch():
        ...  # the same model and data traced once with each framework, saved to two files
        assert_close_traces("engine.jsonl", "torch.jsonl", rtol=1e-4)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from .events import MODULE_EVENTS
from .views.diff.compute import DEFAULT_RTOL, diff, order_split, step_ranges

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


def _events(trace: Any) -> list[dict[str, Any]]:
    """The events of a trace, a trace file's path, or a list of events."""
    if isinstance(trace, list):
        return trace
    if hasattr(trace, "events"):
        return list(trace.events)
    from .views.trace import load_trace
    return load_trace(trace).events


def assert_same_firing_order(a: Any, b: Any, kinds: Iterable[str] = MODULE_EVENTS) -> None:
    """Fail, naming the step, position and the event on each side, where the firing orders of two
    traces (traces, trace files or event lists) part. Events are ``(kind, path, call)``."""
    wanted = set(kinds)
    by_step: list[dict[int, list[dict[str, Any]]]] = []
    for events in (_events(a), _events(b)):
        steps: dict[int, list[dict[str, Any]]] = {}
        for e in events:
            if e["kind"] in wanted:
                steps.setdefault(e["step"], []).append(e)
        by_step.append(steps)
    sa, sb = by_step
    for step in sorted(set(sa) | set(sb)):
        if step not in sa or step not in sb:
            raise AssertionError(f"firing order differs: step {step} has module events only in "
                                 f"{'a' if step in sa else 'b'} (a has steps {step_ranges(sorted(sa))}, "
                                 f"b has {step_ranges(sorted(sb))})")
        split = order_split(sa[step], sb[step])
        if split is not None:
            def show(key: list | None) -> str:
                return "nothing (its order ends)" if key is None else str(tuple(key))
            raise AssertionError(f"firing order differs at step {step}, event {split.position}: "
                                 f"a has {show(split.a)}, b has {show(split.b)}\n"
                                 f"a: {[tuple(k) for k in split.context_a]}\n"
                                 f"b: {[tuple(k) for k in split.context_b]}")


def assert_close_traces(a: Any, b: Any, rtol: float = DEFAULT_RTOL, step: Any = None,
                        timing: float | None = None) -> None:
    """Fail when two traces (traces, trace files or event lists) differ beyond ``rtol``
    (``modscope.diff``): structure, firing order, per-module numbers, autograd ops; the message
    names the first divergent step and module and what differs there."""
    d = diff(a, b, step, rtol=rtol, timing=timing)
    if d.first is not None:
        f = d.first
        where = f" at step {f.step_a}" if f.step_a is not None and f.step_a == f.step_b else \
            f" at step {f.step_a} of a / {f.step_b} of b" if f.step_a is not None else ""
        module = f" in module {f.path or '(root)'!r}" if f.path is not None else ""
        raise AssertionError(f"traces differ{where}{module} (rtol {rtol:g}): {f.message}")
