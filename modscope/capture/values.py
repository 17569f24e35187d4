"""What capture reads inside a module's inputs and outputs, for either framework: tensors (of
either kind, by duck typing), and the containers modscope looks into (tuples, lists, dict
values, dataclass fields), in order."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any


def is_tensor(value: Any) -> bool:
    """A tensor of either framework (anything whose class has ``grad_fn`` and ``requires_grad``)."""
    cls = type(value)
    return hasattr(cls, "grad_fn") and hasattr(cls, "requires_grad")


def container_values(value: Any) -> list[Any] | None:
    """The items of a container modscope looks into (tuple, list, dict values, dataclass fields,
    in order), or ``None`` for anything else. A module's inputs and outputs are read through it."""
    if isinstance(value, tuple | list):
        return list(value)
    if isinstance(value, dict):
        return list(value.values())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [getattr(value, f.name) for f in dataclasses.fields(value)]
    return None


def tensors_in(value: Any) -> Iterator[Any]:
    """The tensors inside ``value`` (a tensor, or nested tuples/lists/dicts/dataclasses) in
    order, without recursion."""
    stack = [value]
    while stack:
        v = stack.pop()
        if is_tensor(v):
            yield v
            continue
        items = container_values(v)
        if items:
            stack.extend(reversed(items))


def capture_leaves(value: Any, tensor_type: type, capture: Callable[[Any, bool, bool], Any], tid: bool,
                   stats: bool) -> tuple[Any, ...]:
    """``capture(t, tid, stats)`` of each tensor leaf of ``value`` in ``tensors_in`` order, ``None``
    for a leaf that is not a tensor (a backend's ``capture_all``, the framework given by
    ``tensor_type`` and ``capture``)."""
    if isinstance(value, tensor_type):
        return (capture(value, tid, stats),)
    items = container_values(value)
    if items is None:
        return (None,)
    out: list[Any] = []
    for v in items:
        if isinstance(v, tensor_type):
            out.append(capture(v, tid, stats))
        elif container_values(v) is not None:
            out += capture_leaves(v, tensor_type, capture, tid, stats)
        else:
            out.append(None)
    return tuple(out)
