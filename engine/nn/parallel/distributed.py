"""``DistributedDataParallel`` without a process group: torch raises before wrapping anything."""

from __future__ import annotations

from typing import Any

from ...distributed import _NO_PROCESS_GROUP
from ..modules.module import Module


class DistributedDataParallel(Module):
    """Always raises torch's ValueError for a missing default process group: the engine cannot
    start one (``engine.distributed.is_available()`` is False)."""

    def __init__(self, module: Module, device_ids: Any = None, output_device: Any = None, dim: int = 0,
                 broadcast_buffers: bool | None = None, init_sync: bool = True, process_group: Any = None,
                 bucket_cap_mb: float | None = None, find_unused_parameters: bool = False,
                 check_reduction: bool = False, gradient_as_bucket_view: bool = False, static_graph: bool = False,
                 delay_all_reduce_named_params: Any = None, param_to_hook_all_reduce: Any = None,
                 mixed_precision: Any = None, device_mesh: Any = None, skip_all_reduce_unused_params: bool = False,
                 bucket_cap_mb_list: list[int] | None = None, batched_grad_copy: bool = False,
                 forward_sync_buffers: bool | None = None) -> None:
        super().__init__()
        raise ValueError(_NO_PROCESS_GROUP)
