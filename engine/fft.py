"""``engine.fft`` (``torch.fft``): discrete Fourier transforms with torch's names, arguments and numbers.

A real submodule, so ``import engine.fft`` and ``from engine.fft import rfft`` work as they do for
torch. Every transform takes ``norm`` = ``"backward"`` (default: no scaling forward, ``1/n``
inverse), ``"ortho"`` (``1/sqrt(n)`` both ways) or ``"forward"`` (``1/n`` forward); ``n``/``s``
crop or zero pad the input along ``dim`` first. Complex results are complex64 for float32 input,
complex128 for float64 (integers: the default float's). The ops and their gradients live in
``engine._ops.fft``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import engine._ops.fft as _fft
import engine._ops.shape as _shape

from . import _dtype
from ._tensor import Tensor

__all__ = [
    "fft", "fft2", "fftfreq", "fftn", "fftshift", "hfft", "ifft", "ifft2", "ifftn", "ifftshift", "ihfft", "irfft",
    "irfft2", "irfftn", "rfft", "rfft2", "rfftfreq", "rfftn",
]

Dims = Sequence[int] | None


def _one(n: int | None) -> list[int] | None:
    return None if n is None else [n]


def fft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:  # noqa: A002
    """The 1-D DFT along ``dim`` (complex result)."""
    return _fft.c2c(input, _one(n), [dim], norm, forward=True)


def ifft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:  # noqa: A002
    """The 1-D inverse DFT along ``dim``."""
    return _fft.c2c(input, _one(n), [dim], norm, forward=False)


def rfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:  # noqa: A002
    """The DFT of a real signal: the ``n // 2 + 1`` non-negative frequencies."""
    return _fft.r2c(input, _one(n), [dim], norm)


def irfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:  # noqa: A002
    """The inverse of ``rfft``: a real signal of length ``n`` (default ``2 * (bins - 1)``)."""
    return _fft.c2r(input, _one(n), [dim], norm)


def hfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:  # noqa: A002
    """The DFT of a Hermitian-symmetric signal given by its first half: a real spectrum."""
    return _fft.c2r(_fft.conj(input), _one(n), [dim], _swap(norm))


def ihfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:  # noqa: A002
    """The inverse of ``hfft``: the first half of the inverse DFT of a real signal."""
    return _fft.conj(_fft.r2c(input, _one(n), [dim], _swap(norm), name="ihfft"))


def _swap(norm: str | None) -> str:
    return _fft._SWAP[_fft._norm(norm)]


def fft2(input: Tensor, s: Dims = None, dim: Dims = (-2, -1), norm: str | None = None) -> Tensor:  # noqa: A002
    """The 2-D DFT over ``dim``."""
    return _fft.c2c(input, s, dim, norm, forward=True)


def ifft2(input: Tensor, s: Dims = None, dim: Dims = (-2, -1), norm: str | None = None) -> Tensor:  # noqa: A002
    """The 2-D inverse DFT over ``dim``."""
    return _fft.c2c(input, s, dim, norm, forward=False)


def rfft2(input: Tensor, s: Dims = None, dim: Dims = (-2, -1), norm: str | None = None) -> Tensor:  # noqa: A002
    """The 2-D DFT of a real signal (the last of ``dim`` halved)."""
    return _fft.r2c(input, s, dim, norm, name="rfftn")


def irfft2(input: Tensor, s: Dims = None, dim: Dims = (-2, -1), norm: str | None = None) -> Tensor:  # noqa: A002
    """The inverse of ``rfft2``."""
    return _fft.c2r(input, s, dim, norm)


def fftn(input: Tensor, s: Dims = None, dim: Dims = None, norm: str | None = None) -> Tensor:  # noqa: A002
    """The N-D DFT over ``dim`` (default: the last ``len(s)`` dims, or all)."""
    return _fft.c2c(input, s, dim, norm, forward=True)


def ifftn(input: Tensor, s: Dims = None, dim: Dims = None, norm: str | None = None) -> Tensor:  # noqa: A002
    """The N-D inverse DFT over ``dim``."""
    return _fft.c2c(input, s, dim, norm, forward=False)


def rfftn(input: Tensor, s: Dims = None, dim: Dims = None, norm: str | None = None) -> Tensor:  # noqa: A002
    """The N-D DFT of a real signal (the last of ``dim`` halved)."""
    return _fft.r2c(input, s, dim, norm, name="rfftn")


def irfftn(input: Tensor, s: Dims = None, dim: Dims = None, norm: str | None = None) -> Tensor:  # noqa: A002
    """The inverse of ``rfftn``."""
    return _fft.c2r(input, s, dim, norm)


def _freq_dtype(dtype: Any) -> np.dtype:
    return _dtype._default_float.np if dtype is None else _dtype.to_numpy_dtype(dtype)


def fftfreq(n: int, d: float = 1.0, *, dtype: Any = None, requires_grad: bool = False, **_: Any) -> Tensor:
    """The sample frequencies of an ``n``-point DFT: ``[0, 1, ..., -2, -1] / (d * n)``."""
    out = Tensor._wrap(np.fft.fftfreq(n, d).astype(_freq_dtype(dtype)))
    return out.requires_grad_(requires_grad) if requires_grad else out


def rfftfreq(n: int, d: float = 1.0, *, dtype: Any = None, requires_grad: bool = False, **_: Any) -> Tensor:
    """The sample frequencies of ``rfft``: ``[0, 1, ..., n // 2] / (d * n)``."""
    out = Tensor._wrap(np.fft.rfftfreq(n, d).astype(_freq_dtype(dtype)))
    return out.requires_grad_(requires_grad) if requires_grad else out


def _shift(input: Tensor, dim: Any, sign: int) -> Tensor:  # noqa: A002
    dims = list(range(input.ndim)) if dim is None else ([dim] if isinstance(dim, int) else list(dim))
    shifts = [sign * (input.shape[d] // 2) for d in dims]
    return _shape.roll(input, shifts, dims) if dims else input


def fftshift(input: Tensor, dim: Any = None) -> Tensor:  # noqa: A002
    """The zero frequency moved to the centre of ``dim`` (default: all dims)."""
    return _shift(input, dim, 1)


def ifftshift(input: Tensor, dim: Any = None) -> Tensor:  # noqa: A002
    """The inverse of ``fftshift``."""
    return _shift(input, dim, -1)
