"""Keep freed NumPy buffers in the process heap (glibc only), so a training step does not
page-fault its way through fresh memory every time.

Every op allocates new arrays; im2col columns alone are megabytes. glibc serves such blocks with
``mmap`` or trims them off the heap top on ``free``, so the next step's identical allocation
touches brand-new pages (measured: a conv2d forward+backward on the MNIST net's second layer went
from 3.8 ms to 9-11 ms). Raising the mmap and trim thresholds keeps that memory in the heap for
reuse (the idea of a caching allocator, with glibc doing the caching). Users who set glibc's ``MALLOC_*`` environment
variables keep their own settings.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_MMAP_THRESHOLD = 32 * 1024 * 1024  # glibc's upper bound for this setting on 64-bit
_TRIM_THRESHOLD = 256 * 1024 * 1024


def tune_malloc() -> bool:
    """Apply the thresholds once; returns whether they were applied (False off glibc)."""
    if not sys.platform.startswith("linux") or any(k.startswith("MALLOC_") for k in os.environ):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # musl and other libcs have no mallopt
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD) and mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD))
