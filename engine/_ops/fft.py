"""Discrete Fourier transforms (``engine.fft``) and the complex-number ops around them.

Three transform nodes, as torch has: ``FftC2CBackward0`` (fft/ifft/fftn/ifftn), ``FftR2CBackward0``
(rfft/rfftn) and ``FftC2RBackward0`` (irfft/irfftn); the others compose them (``hfft`` is
``irfft(conj(x))`` with the opposite normalisation, ``ihfft`` is ``conj(rfft(x))``, as NumPy and
torch define them). NumPy's pocketfft computes them (float32 stays complex64, as in torch).

Gradients follow torch's convention for complex tensors: the gradient held for a complex value
``z`` is ``dL/dRe(z) + i dL/dIm(z)`` (the conjugate Wirtinger derivative, times 2), and a real
input receives the real part. So the backward of a linear transform ``A`` is its adjoint ``A^H``:
for a DFT with normalisation ``norm`` that is the inverse DFT with the opposite normalisation
(``backward`` <-> ``forward``), after undoing the crop or zero padding ``n``/``s`` asked for.
``irfft`` only reads one half of a Hermitian spectrum (and the real part of its first and, for
even lengths, last bin): its adjoint doubles the bins that stand for two.

Not supported (as of this version): double backward through the transforms, float16 (torch's
CPU refuses it too), ``out=``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import _dtype
from ._core import result, unbroadcast, wrap_dim

# The names this module adds to torch's top-level namespace (engine/__init__.py star-imports
# them: this list is the one place they are named).
__all__ = ["angle", "complex", "conj", "imag", "polar", "real", "view_as_complex", "view_as_real"]

_SWAP = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def _norm(norm: str | None) -> str:
    if norm is None:
        return "backward"
    if norm not in _SWAP:
        raise RuntimeError(f'Invalid normalization mode: "{norm}"')
    return norm


def _complex_dtype(dt: np.dtype) -> np.dtype:
    """The complex dtype a transform of ``dt`` computes in (integers: the default float's)."""
    if dt.kind == "c":
        return dt
    if dt == np.float16:
        raise RuntimeError("Unsupported dtype Half")
    base = dt if dt.kind == "f" else _dtype._default_float.np
    return np.dtype(np.complex64) if base == np.float32 else np.dtype(np.complex128)


def _real_dtype(dt: np.dtype) -> np.dtype:
    return np.dtype(np.float32) if _complex_dtype(dt) == np.complex64 else np.dtype(np.float64)


def _resize(arr: np.ndarray, axes: Sequence[int], sizes: Sequence[int]) -> np.ndarray:
    """``arr`` cropped or zero padded at the end of each of ``axes`` to ``sizes`` (what
    ``n``/``s`` do to a transform's input; its own adjoint is the resize back)."""
    if all(arr.shape[a] == n for a, n in zip(axes, sizes)):
        return arr
    index = [slice(None)] * arr.ndim
    pad = [(0, 0)] * arr.ndim
    for a, n in zip(axes, sizes):
        index[a] = slice(0, min(n, arr.shape[a]))
        pad[a] = (0, max(n - arr.shape[a], 0))
    return np.pad(arr[tuple(index)], pad)


def _dims(x: np.ndarray, s: Sequence[int] | None, dim: Sequence[int] | None) -> tuple[list[int], list[int] | None]:
    """torch's ``s``/``dim`` rules: ``dim`` (unique, wrapped) or the last ``len(s)`` dims or all
    dims; ``s`` as given (-1: keep the size) or None."""
    if dim is None:
        dims = list(range(x.ndim - len(s), x.ndim)) if s is not None else list(range(x.ndim))
    else:
        dims = [wrap_dim(int(d), x.ndim) for d in ([dim] if isinstance(dim, int) else dim)]
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
    if s is None:
        return dims, None
    sizes = [int(n) for n in ([s] if isinstance(s, int) else s)]
    if len(sizes) != len(dims):
        raise RuntimeError("When given, dim and shape arguments must have the same length")
    return dims, sizes


def _check_sizes(sizes: Sequence[int]) -> None:
    for n in sizes:
        if n < 1:
            raise RuntimeError(f"Invalid number of data points ({n}) specified")


def c2c(a: Any, s: Sequence[int] | None, dim: Sequence[int] | None, norm: str | None, forward: bool) -> Any:
    """fftn (``forward``) or ifftn of ``a`` over ``dim``, inputs resized to ``s``."""
    x = a._data
    how = _norm(norm)
    ct = _complex_dtype(x.dtype)
    dims, sizes = _dims(x, s, dim)
    sizes = [x.shape[d] if sizes is None or sizes[i] == -1 else sizes[i] for i, d in enumerate(dims)]
    _check_sizes(sizes)
    xc = _resize(x.astype(ct, copy=False), dims, sizes)
    fn, adj = (np.fft.fftn, np.fft.ifftn) if forward else (np.fft.ifftn, np.fft.fftn)
    out = fn(xc, axes=dims, norm=how).astype(ct, copy=False) if dims else xc.copy()
    in_shape, real_in = [x.shape[d] for d in dims], x.dtype.kind != "c"

    def backward(g):
        gi = _resize(adj(g, axes=dims, norm=_SWAP[how]) if dims else g, dims, in_shape)
        return ((gi.real if real_in else gi).astype(x.dtype, copy=False),)

    return result(out, "FftC2CBackward0", (a,), backward)


def r2c(a: Any, s: Sequence[int] | None, dim: Sequence[int] | None, norm: str | None, name: str = "rfft") -> Any:
    """rfftn of the real ``a`` over ``dim`` (the last one halved: ``n // 2 + 1`` bins)."""
    x = a._data
    if x.dtype.kind == "c":
        raise RuntimeError(f"{name} expects a real input tensor, but got {_dtype.scalar_type_name(x.dtype)}")
    how = _norm(norm)
    ct, rt = _complex_dtype(x.dtype), _real_dtype(x.dtype)
    dims, sizes = _dims(x, s, dim)
    sizes = [x.shape[d] if sizes is None or sizes[i] == -1 else sizes[i] for i, d in enumerate(dims)]
    _check_sizes(sizes)
    xr = _resize(x.astype(rt, copy=False), dims, sizes)
    out = np.fft.rfftn(xr, axes=dims, norm=how).astype(ct, copy=False)
    in_shape = [x.shape[d] for d in dims]

    def backward(g):
        # adjoint of "keep the first n//2+1 bins of the full spectrum": zero padding back to n
        full = _resize(g, dims[-1:], sizes[-1:])
        gi = np.fft.ifftn(full, axes=dims, norm=_SWAP[how]).real
        return (_resize(gi, dims, in_shape).astype(x.dtype, copy=False),)

    return result(out, "FftR2CBackward0", (a,), backward)


def c2r(a: Any, s: Sequence[int] | None, dim: Sequence[int] | None, norm: str | None) -> Any:
    """irfftn of ``a`` over ``dim``: a real signal of ``s`` (last: ``2 * (bins - 1)`` by default)."""
    x = a._data
    how = _norm(norm)
    ct = _complex_dtype(x.dtype)
    dims, sizes = _dims(x, s, dim)
    default = [x.shape[d] for d in dims[:-1]] + ([2 * (x.shape[dims[-1]] - 1)] if dims else [])
    sizes = [default[i] if sizes is None or sizes[i] == -1 else sizes[i] for i in range(len(dims))]
    _check_sizes(sizes)
    bins = sizes[-1] // 2 + 1
    xc = _resize(x.astype(ct, copy=False), dims, sizes[:-1] + [bins])
    out = np.fft.irfftn(xc, s=sizes, axes=dims, norm=how).astype(_real_dtype(x.dtype), copy=False)
    in_shape, real_in = [x.shape[d] for d in dims], x.dtype.kind != "c"

    def backward(g):
        gz = np.fft.rfftn(g, axes=dims, norm=_SWAP[how])
        twice = [slice(None)] * gz.ndim
        twice[dims[-1]] = slice(1, (sizes[-1] - 1) // 2 + 1)  # bins k with a mirror n - k
        gz[tuple(twice)] *= 2
        gi = _resize(gz, dims, in_shape)
        return ((gi.real if real_in else gi).astype(x.dtype, copy=False),)

    return result(out, "FftC2RBackward0", (a,), backward)


# --- complex numbers ---------------------------------------------------------------------------

def real(a: Any) -> Any:
    """The real part (the tensor itself for a real tensor, as torch)."""
    x = a._data
    if x.dtype.kind != "c":
        return a
    return result(x.real.copy(), "RealBackward0", (a,), lambda g: (g.astype(x.dtype),))


def imag(a: Any) -> Any:
    """The imaginary part; its gradient enters the input as ``i * g``."""
    x = a._data
    if x.dtype.kind != "c":
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return result(x.imag.copy(), "ImagBackward0", (a,), lambda g: ((1j * g).astype(x.dtype),))


def conj(a: Any) -> Any:
    """The complex conjugate (a real tensor itself)."""
    x = a._data
    if x.dtype.kind != "c":
        return a
    return result(np.conj(x), "ConjBackward0", (a,), lambda g: (np.conj(g),))


def angle(a: Any) -> Any:
    """The argument ``atan2(imag, real)``; real inputs give 0 or pi (with a zero gradient)."""
    x = a._data
    if x.dtype.kind != "c":
        rt = x.dtype if x.dtype.kind == "f" else _dtype._default_float.np
        out = np.where(x < 0, np.pi, 0).astype(rt)
        out = np.where(np.isnan(x), x, out).astype(rt) if x.dtype.kind == "f" else out
        return result(out, "AngleBackward0", (a,), lambda g: (np.zeros_like(g),))

    def backward(g):
        sq = (x * np.conj(x)).real
        with np.errstate(divide="ignore", invalid="ignore"):
            gi = np.where(x == 0, 0, g * x / sq * 1j)
        return (gi.astype(x.dtype),)

    return result(np.angle(x).astype(_real_dtype(x.dtype)), "AngleBackward0", (a,), backward, saved=(a,))


def view_as_real(a: Any) -> Any:
    """``(..., 2)`` real and imaginary parts of a complex tensor (a copy: the engine's complex
    tensors have no real views)."""
    x = a._data
    if x.dtype.kind != "c":
        raise RuntimeError("view_as_real is only supported for complex tensors")
    out = np.stack([x.real, x.imag], axis=-1)
    return result(out, "ViewAsRealBackward0", (a,), lambda g: ((g[..., 0] + 1j * g[..., 1]).astype(x.dtype),))


def view_as_complex(a: Any) -> Any:
    """A float tensor ``(..., 2)`` read as complex numbers (a copy)."""
    x = a._data
    if x.dtype not in (np.float32, np.float64):
        raise RuntimeError("view_as_complex is only supported for float and double tensors, but got a tensor "
                           f"of scalar type: {_dtype.scalar_type_name(x.dtype)}")
    if x.ndim == 0 or x.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    out = (x[..., 0] + 1j * x[..., 1]).astype(_complex_dtype(x.dtype))
    return result(out, "ViewAsComplexBackward0", (a,),
                  lambda g: (np.stack([g.real, g.imag], axis=-1).astype(x.dtype),))


def complex(real: Any, imag: Any) -> Any:  # noqa: A001 - torch's name
    """``real + i * imag`` from two float tensors of the same dtype."""
    xr, xi = real._data, imag._data
    if xr.dtype != xi.dtype or xr.dtype not in (np.float32, np.float64):
        raise RuntimeError(f"Expected object of scalar type {_dtype.scalar_type_name(xr.dtype)} but got scalar "
                           f"type {_dtype.scalar_type_name(xi.dtype)} for second argument")
    out = (xr + 1j * xi).astype(_complex_dtype(xr.dtype))

    def backward(g):
        return (unbroadcast(g.real, xr.shape).astype(xr.dtype), unbroadcast(g.imag, xi.shape).astype(xi.dtype))

    return result(out, "ComplexBackward0", (real, imag), backward)


def polar(abs: Any, angle: Any, *, out: Any = None) -> Any:  # noqa: A002 - torch's names
    """``abs * (cos(angle) + i sin(angle))`` from two float tensors of the same dtype. The
    backward is torch's ``polar_backward``: ``real(conj(g) * sgn(z))`` for ``abs`` and
    ``real(conj(g) * i z)`` for ``angle``."""
    xa, xt = abs._data, angle._data
    if xa.dtype.kind != "f" or xt.dtype.kind != "f":
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got "
                           f"{_dtype.scalar_type_name(xa.dtype)} and {_dtype.scalar_type_name(xt.dtype)}")
    if xa.dtype != xt.dtype:
        raise RuntimeError(f"Expected object of scalar type {_dtype.scalar_type_name(xa.dtype)} but got scalar "
                           f"type {_dtype.scalar_type_name(xt.dtype)} for second argument")
    z = (xa * np.cos(xt) + 1j * (xa * np.sin(xt))).astype(_complex_dtype(xa.dtype))

    def backward(g):
        gc = np.conj(g)
        sgn = np.divide(z, np.abs(z), out=np.zeros_like(z), where=np.abs(z) != 0)
        return (unbroadcast((gc * sgn).real, xa.shape).astype(xa.dtype),
                unbroadcast((gc * 1j * z).real, xt.shape).astype(xt.dtype))

    if out is None:
        return result(z, "PolarBackward0", (abs, angle), backward)
    if abs.requires_grad or angle.requires_grad:
        raise RuntimeError("polar(): functions with out=... arguments don't support automatic differentiation, "
                           "but one of the arguments requires grad.")
    if out._data.dtype != z.dtype:
        raise RuntimeError(f"Expected object of scalar type {_dtype.scalar_type_name(z.dtype)} but got scalar type "
                           f"{_dtype.scalar_type_name(out._data.dtype)} for argument 'out'")
    if out._data.shape == z.shape:  # written in place, else resized to the result, as torch's out= does
        out._data[...] = z
    else:
        out._data = z
    out._version_counter[0] += 1
    return out
