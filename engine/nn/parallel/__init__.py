"""``torch.nn.parallel`` as torch answers on a machine without GPUs: ``DataParallel`` keeps the
module and runs it as is; ``DistributedDataParallel`` needs a process group, which the engine
cannot start (engine.distributed), so it raises torch's error for a missing one."""

from __future__ import annotations

from .data_parallel import DataParallel, data_parallel
from .distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel"]
