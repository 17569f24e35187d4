"""``torch.backends.cuda``: ``matmul.allow_tf32`` (nanoGPT sets it) is kept as set; no CUDA. The
switches of scaled_dot_product_attention's backends, which torch's CPU build obeys too."""

import contextlib
import warnings
from collections.abc import Iterator


class _MatmulFlags:
    allow_tf32 = False
    allow_fp16_reduced_precision_reduction = True
    allow_bf16_reduced_precision_reduction = True


matmul = _MatmulFlags()


def is_built() -> bool:
    return False


# --- scaled_dot_product_attention's backends ----------------------------------------------------
# torch keeps these in its global context, and its CPU build consults them too: flash and math are
# the CPU kernels (the engine computes both the math way: the same numbers); turning both off, or
# math off with inputs the flash kernel refuses, makes the op raise (nn/_functional/sdp_backend.py).
# Keys in torch's order; values are SDPBackend's (nn/attention); the priority order is torch's.
_sdp_enabled = {"cudnn": True, "flash": True, "mem_efficient": True, "math": True, "overrideable": True}
_sdp_priority = [1, 2, 0, 3, 4]


def enable_flash_sdp(enabled: bool) -> None:
    _sdp_enabled["flash"] = bool(enabled)


def flash_sdp_enabled() -> bool:
    return _sdp_enabled["flash"]


def enable_math_sdp(enabled: bool) -> None:
    _sdp_enabled["math"] = bool(enabled)


def math_sdp_enabled() -> bool:
    return _sdp_enabled["math"]


def enable_mem_efficient_sdp(enabled: bool) -> None:
    _sdp_enabled["mem_efficient"] = bool(enabled)


def mem_efficient_sdp_enabled() -> bool:
    return _sdp_enabled["mem_efficient"]


def enable_cudnn_sdp(enabled: bool) -> None:
    _sdp_enabled["cudnn"] = bool(enabled)


def cudnn_sdp_enabled() -> bool:
    return _sdp_enabled["cudnn"]


def is_flash_attention_available() -> bool:
    """Whether the CUDA flash-attention kernel was built: never here (nor in torch's CPU build)."""
    return False


@contextlib.contextmanager
def sdp_kernel(enable_flash: bool = True, enable_math: bool = True, enable_mem_efficient: bool = True,
               enable_cudnn: bool = True) -> Iterator[dict]:
    """Deprecated in torch for ``nn.attention.sdpa_kernel``: the backends enabled inside, the
    previous ones restored after."""
    warnings.warn("`torch.backends.cuda.sdp_kernel()` is deprecated. In the future, this context manager will be "
                  "removed. Please see `torch.nn.attention.sdpa_kernel()` for the new context manager, with "
                  "updated signature.", FutureWarning, stacklevel=3)
    previous = dict(_sdp_enabled)
    _sdp_enabled.update(flash=bool(enable_flash), mem_efficient=bool(enable_mem_efficient), math=bool(enable_math),
                        cudnn=bool(enable_cudnn), overrideable=False)
    try:
        yield {}
    finally:
        _sdp_enabled.update(previous)
