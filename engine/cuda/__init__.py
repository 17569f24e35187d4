"""``torch.cuda`` as a CPU-only build of torch answers it: no device is available; seeding and
cache calls (seed-setting boilerplate) are accepted and do nothing; questions about a device
raise torch's "not compiled with CUDA" AssertionError. ``engine.cuda.amp`` holds the deprecated
``GradScaler``/``autocast`` spellings."""

from __future__ import annotations

from typing import Any

import engine.cuda.amp as amp

__all__ = ["amp", "current_device", "device_count", "empty_cache", "get_device_name", "is_available",
           "is_bf16_supported", "is_initialized", "manual_seed", "manual_seed_all", "max_memory_allocated",
           "memory_allocated", "seed", "seed_all", "synchronize"]


def _no_cuda(*args: Any, **kwargs: Any) -> None:
    raise AssertionError("Torch not compiled with CUDA enabled")


def is_available() -> bool:
    return False


def device_count() -> int:
    return 0


def manual_seed(seed: int) -> None:
    """Accepted: there is no CUDA generator to seed."""


manual_seed_all = manual_seed


def seed() -> None:
    """Accepted: there is no CUDA generator to seed."""


seed_all = seed


def empty_cache() -> None:
    """Accepted: there is no CUDA cache to empty."""


def is_initialized(*args: Any, **kwargs: Any) -> bool:
    return False


is_bf16_supported = is_initialized


def memory_allocated(*args: Any, **kwargs: Any) -> int:
    return 0


max_memory_allocated = memory_allocated
synchronize = current_device = get_device_name = _no_cuda
