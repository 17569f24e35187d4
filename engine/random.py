"""``torch.random``: the global generator's seeding and state, and ``fork_rng``, which restores
the state on exit so that code inside it does not shift the draws of the code after it."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from ._random import Generator, default_generator, get_rng_state, initial_seed, manual_seed, seed, set_rng_state

__all__ = ["Generator", "default_generator", "fork_rng", "get_rng_state", "initial_seed", "manual_seed", "seed",
           "set_rng_state"]


@contextlib.contextmanager
def fork_rng(devices: Any = None, enabled: bool = True, _caller: str = "fork_rng",
             _devices_kw: str = "devices", device_type: Any = None) -> Iterator[None]:
    """Run the block with the global generator's state saved and put back afterwards (there
    are no accelerator generators to fork)."""
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)
