"""``torch.distributed`` for one process with no communication backend.

``is_available()`` is False, as in a torch built without distributed support: the engine can
start no process group. Where such a torch build has no other names at all, the engine keeps
the ones that scripts call to ask whether they run distributed, with the answers a torch
that has distributed gives before ``init_process_group``: ``is_initialized()`` False, the
``*_available()`` checks False, and the rank, world size, backend and collectives raising
torch's "Default process group has not been initialized" ValueError. ``init_process_group``
raises a RuntimeError saying why. ``DistributedSampler`` takes ``num_replicas``/``rank``
explicitly for the same reason (engine.utils.data.distributed).
"""

from __future__ import annotations

import enum
import os
from typing import Any

__all__ = ["ReduceOp", "all_gather", "all_reduce", "barrier", "broadcast", "destroy_process_group", "get_backend",
           "get_rank", "get_world_size", "init_process_group", "is_available", "is_gloo_available",
           "is_initialized", "is_mpi_available", "is_nccl_available", "is_torchelastic_launched", "new_group",
           "reduce"]

_NO_PROCESS_GROUP = ("Default process group has not been initialized, please make sure to call "
                     "init_process_group.")


class ReduceOp(enum.Enum):
    """The reductions torch's collectives take (names only: the engine runs none)."""
    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7
    PREMUL_SUM = 8


def is_available() -> bool:
    """False: the engine has no distributed backend."""
    return False


def is_initialized() -> bool:
    return False


def is_nccl_available() -> bool:
    return False


def is_gloo_available() -> bool:
    return False


def is_mpi_available() -> bool:
    return False


def is_torchelastic_launched() -> bool:
    """Whether this process was started by torchrun (which sets TORCHELASTIC_RUN_ID), as torch checks."""
    return os.getenv("TORCHELASTIC_RUN_ID") is not None


def init_process_group(backend: str | None = None, init_method: str | None = None, timeout: Any = None,
                       world_size: int = -1, rank: int = -1, store: Any = None, group_name: str = "",
                       pg_options: Any = None, device_id: Any = None) -> None:
    raise RuntimeError("engine.distributed.init_process_group: the engine runs in one process and has no "
                       "communication backend (engine.distributed.is_available() is False)")


def _no_group(*args: Any, **kwargs: Any) -> Any:
    raise ValueError(_NO_PROCESS_GROUP)


def get_rank(group: Any = None) -> int:
    raise ValueError(_NO_PROCESS_GROUP)


def get_world_size(group: Any = None) -> int:
    raise ValueError(_NO_PROCESS_GROUP)


def get_backend(group: Any = None) -> str:
    raise ValueError(_NO_PROCESS_GROUP)


def destroy_process_group(group: Any = None) -> None:
    """torch asserts a group exists to destroy."""
    raise AssertionError("Process group cannot be None")


barrier = all_reduce = all_gather = broadcast = reduce = new_group = _no_group
