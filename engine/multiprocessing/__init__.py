"""``torch.multiprocessing``: Python's ``multiprocessing`` with everything it exports, plus
torch's additions: the sharing-strategy switches and ``spawn``/``start_processes``, which run
``fn(i, *args)`` in ``nprocs`` fresh processes and raise in the parent, with the child's
traceback, when one fails (``ProcessRaisedException``) or dies (``ProcessExitedException``).

torch also registers pickling rules that move tensors between processes through shared memory;
the engine has none, so an engine tensor cannot be sent to another process (pickling it raises
the engine's TypeError; pass NumPy arrays, or file names written with ``engine.save``).
"""

from __future__ import annotations

import multiprocessing
import sys
from multiprocessing import *  # noqa: F403 - torch.multiprocessing re-exports all of it

from .spawn import (
    ProcessContext,
    ProcessExitedException,
    ProcessRaisedException,
    SpawnContext,
    spawn,
    start_processes,
)

__all__ = ["get_all_sharing_strategies", "get_sharing_strategy", "set_sharing_strategy", "spawn",
           "start_processes", "ProcessContext", "ProcessExitedException", "ProcessRaisedException",
           "SpawnContext", *multiprocessing.__all__]

# torch's sets: file descriptors where the OS can pass them (Linux), the file system elsewhere
_supported_strategies = {"file_system"} if sys.platform == "darwin" else {"file_descriptor", "file_system"}
_sharing_strategy = "file_system" if sys.platform == "darwin" else "file_descriptor"


def set_sharing_strategy(new_strategy: str) -> None:
    """Set how tensors would be shared between processes (kept as set: see the module note)."""
    global _sharing_strategy
    assert new_strategy in _supported_strategies  # noqa: S101 - torch's own check, an AssertionError
    _sharing_strategy = new_strategy


def get_sharing_strategy() -> str:
    return _sharing_strategy


def get_all_sharing_strategies() -> set[str]:
    return set(_supported_strategies)
