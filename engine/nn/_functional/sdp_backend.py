"""Which kernel scaled_dot_product_attention may use, as torch's CPU build decides it
(``select_sdp_backend_cpp``): the flash kernel when enabled and the inputs suit it, else the math
kernel when enabled, else an error. The engine computes both the math way (the flash kernel gives
the same numbers to rounding), so the choice only decides whether the call raises, and the
warnings torch gives when it does."""

from __future__ import annotations

import warnings

from ..._tensor import Tensor
from ...backends import cuda as _flags


def check_backend(query: Tensor, key: Tensor, value: Tensor, dropout_p: float, enable_gqa: bool) -> None:
    """Raise torch's RuntimeError when no enabled CPU kernel can run these inputs."""
    enabled = _flags._sdp_enabled
    if not (enabled["flash"] or enabled["math"]):
        raise RuntimeError("No viable backend for scaled_dot_product_attention was found. This is likely due to "
                           "turning off both the math kernel and the fused kernels.")
    if enabled["math"]:
        return
    reason = _flash_refusal(query, key, value, dropout_p, enable_gqa)
    if reason is None:
        return
    warnings.warn("Flash attention kernel not used because:", UserWarning, stacklevel=3)
    warnings.warn(reason, UserWarning, stacklevel=3)
    raise RuntimeError("No available kernel.  Aborting execution.")


def _flash_refusal(q: Tensor, k: Tensor, v: Tensor, dropout_p: float, enable_gqa: bool) -> str | None:
    """Why the CPU flash kernel cannot run (torch's words), or None; its checks in its order."""
    if dropout_p > 0.0:
        return "Both fused kernels do not support non-zero dropout."
    if not q.dim() == k.dim() == v.dim() == 4:
        return ("All fused kernels requires query, key and value to be 4 dimensional, but got Query dim: "
                f"{q.dim()}, Key dim: {k.dim()}, Value dim: {v.dim()} instead.")
    if not q.shape[0] == k.shape[0] == v.shape[0]:
        return ("For dense inputs, both fused kernels require query, key and value to have the same batch_size. "
                f"Query.sizes(): {list(q.shape)}, Key.sizes(): {list(k.shape)}, Value.sizes(): {list(v.shape)} "
                "instead. To broadcast dense inputs, try using unsqueeze and expand_to before passing them into "
                "the kernel.")
    if enable_gqa and not (k.shape[1] == v.shape[1] and q.shape[1] % k.shape[1] == 0):
        return ("The number of heads in key/value must divide number of heads in query.Got input Key sizes(): "
                f"{k.shape[1]}, Value sizes(): {v.shape[1]}, Query sizes(): {q.shape[1]} instead.")
    if not enable_gqa and not q.shape[1] == k.shape[1] == v.shape[1]:
        return ("For dense input, both fused kernels require query, key and value to have the same num_heads. "
                f"Query.sizes(): {list(q.shape)}, Key sizes(): {list(k.shape)}, Value sizes(): {list(v.shape)} "
                "instead. To broadcast dense inputs, try using unsqueeze and expand_to before passing them into "
                "the kernel.")
    if not q.shape[-1] == k.shape[-1] == v.shape[-1]:
        return ("Flash attention requires q,k,v to have the same last dimension. Got Query.size(-1): "
                f"{q.shape[-1]}, Key.size(-1): {k.shape[-1]}, Value.size(-1): {v.shape[-1]} instead.")
    if not q.stride(-1) == k.stride(-1) == v.stride(-1) == 1:
        return ("All fused kernels require the last dimension of the input to have stride 1. Got Query.stride(-1): "
                f"{q.stride(-1)}, Key.stride(-1): {k.stride(-1)}, Value.stride(-1): {v.stride(-1)}")
    return None
