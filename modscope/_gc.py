"""``gc_paused``: the one place modscope pauses Python's cyclic garbage collector.

Building something large out of many small containers that form no cycles (a diagram of a
10,000-module model, the hooks and records of a trace attached to it) makes the collector
rescan the whole heap at each allocation burst; with a big model in memory that rescanning,
not the work, was most of the time. Written once for capture and views (both import it)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector inside the block; its previous state is restored on
    exit (also on an exception). Reference counting still frees everything as usual."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
