"""``torch.nn.attention``: ``sdpa_kernel`` chooses which backends scaled_dot_product_attention may
use, inside a ``with`` block (the previous choice restored after). The switches are
``engine.backends.cuda``'s, which the engine's CPU kernel obeys as torch's CPU build does: MATH
and FLASH_ATTENTION are the CPU kernels (the same numbers here); with neither enabled, or only
FLASH_ATTENTION and inputs it refuses, the op raises torch's error
(``nn/_functional/sdp_backend.py``).
"""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Iterable, Iterator

from ...backends import cuda as _flags

__all__ = ["SDPBackend", "WARN_FOR_UNFUSED_KERNELS", "sdpa_kernel"]

# torch warns why a fused kernel was not used, for its attention-bias subclasses, when this is
# set; the engine has no fused kernels (and no such subclasses), so it only keeps the setting
WARN_FOR_UNFUSED_KERNELS = False


class SDPBackend(enum.Enum):
    """The backends of scaled_dot_product_attention, with torch's values."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4

    def __int__(self) -> int:
        return self.value

    def __index__(self) -> int:
        return self.value


# torch's switch names for each backend, in torch's order
_backend_names = {"cudnn": "CUDNN_ATTENTION", "flash": "FLASH_ATTENTION", "mem_efficient": "EFFICIENT_ATTENTION",
                  "math": "MATH", "overrideable": "OVERRIDEABLE"}


def _cur_sdpa_kernel_backends(with_priority: bool = False) -> list[SDPBackend]:
    """The enabled backends (in priority order with ``with_priority``)."""
    backends = [SDPBackend[value] for name, value in _backend_names.items() if _flags._sdp_enabled[name]]
    if with_priority:
        backends.sort(key=lambda b: _flags._sdp_priority.index(int(b)))
    return backends


def _sdpa_kernel(backends: Iterable[SDPBackend], set_priority: bool = False) -> None:
    backends = list(backends)
    for name, value in _backend_names.items():
        _flags._sdp_enabled[name] = SDPBackend[value] in backends
    if set_priority:
        order = [int(b) for b in backends]
        _flags._sdp_priority[:] = order + [b for b in _flags._sdp_priority if b not in order]


@contextlib.contextmanager
def sdpa_kernel(backends: list[SDPBackend] | SDPBackend, set_priority: bool = False) -> Iterator[dict]:
    """Enable only ``backends`` (one or a list) inside the block; ``set_priority`` also makes
    their order the order they are tried in.

    Example::

        >>> with sdpa_kernel(SDPBackend.MATH):
        ...     out = F.scaled_dot_product_attention(q, k, v)
    """
    if not isinstance(backends, list | SDPBackend):
        raise AssertionError("Backend must be an instance of SDPBackend or a list of SDPBackend instances, got "
                             f"{type(backends).__name__}")
    if isinstance(backends, SDPBackend):
        backends = [backends]
    backends = list(dict.fromkeys(backends))
    previous = _cur_sdpa_kernel_backends(with_priority=set_priority)
    try:
        _sdpa_kernel(backends, set_priority)
        yield {}
    finally:
        _sdpa_kernel(previous, set_priority)
