"""Small integer ids for the objects that carry a step's data, shared by both backends.

A summary's ``tid`` names the data a tensor holds for the session, so that a module's output and
the next module's input are seen to be the same (data flow follows ``tid``). The map holds weak
references: an activation is freed when backward is done with it, as without a trace (holding the
step's activations to its end made the next allocations slower: ~1% of the seed Net's step), and
a dead entry never matches an object that reuses its ``id``. It starts over past ``KEEP`` entries
(ids stay unique; an edge across the restart may be missed).
"""

from __future__ import annotations

import itertools
import weakref
from typing import Any

KEEP = 4096
_next = itertools.count(1)  # one counter for every map: ids never repeat in a process
_ref = weakref.ref


class ObjectIds:
    """``ids(obj)`` -> the id of ``obj`` (an object that supports weak references)."""

    def __init__(self) -> None:
        self._by_id: dict[int, tuple[weakref.ref, int]] = {}

    def __call__(self, obj: Any) -> int:
        entry = self._by_id.get(id(obj))
        if entry is not None and entry[0]() is obj:
            return entry[1]
        if len(self._by_id) >= KEEP:
            self._by_id.clear()
        tid = next(_next)
        self._by_id[id(obj)] = (_ref(obj), tid)
        return tid

    def clear(self) -> None:
        """Forget every object (the tracer calls this at each step's end)."""
        self._by_id.clear()
