"""Tensor's methods that run ops (arithmetic, reductions, shapes, indexing, in-place updates,
conversions), bound onto ``engine.Tensor`` by ``_bind`` below.

``_tensor.py`` defines the class with its storage and autograd state and imports no op; every op
module imports ``Tensor`` from there. The methods that call ops are written here, in a class body
as they would read inside ``Tensor``, and copied onto it once: dependencies run one way
(``_tensor`` <- ``_ops/*`` <- this file).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

import engine._ops.fft as fft_ops
import engine._ops.namespace as _namespace
import engine._ops.shape as shape_ops
import engine.autograd.grad_mode as grad_mode
import engine.nn.functional as F

from . import _dtype, _memory_format
from ._creation import bernoulli, tensor
from ._ops import (
    _core,
    advanced_indexing,
    comparison,
    constructors,
    fills,
    gamma,
    indexing,
    linalg,
    linalg_decompositions,
    norms,
    pointwise,
    pointwise_float,
    pointwise_integer,
    products,
    reduction,
    sampling,
    scans,
    scatter,
    sets,
    shape_composite,
    shape_views,
    sorting,
    special,
    special_functions,
    statistics,
)
from ._size import broadcast_error
from ._tensor import Tensor, _element_caster, _is_basic_key, _renamed, device
from .autograd import backward


class _TensorMethods:
    """The body of these methods is ``Tensor``'s: ``self`` is a Tensor."""

    @property
    def real(self) -> Tensor:
        """The real part (``self`` for a real tensor); a copy, not a view, for a complex one."""
        return fft_ops.real(self)

    @property
    def imag(self) -> Tensor:
        """The imaginary part of a complex tensor (a copy, not a view)."""
        return fft_ops.imag(self)

    def conj(self) -> Tensor:
        return fft_ops.conj(self)

    def angle(self) -> Tensor:
        return fft_ops.angle(self)

    @property
    def T(self) -> Tensor:  # noqa: N802
        return shape_ops.T(self)

    @property
    def mT(self) -> Tensor:  # noqa: N802
        return shape_ops.mT(self)

    def backward(
        self,
        gradient: Tensor | None = None,
        retain_graph: bool | None = None,
        create_graph: bool = False,
        inputs: list[Tensor] | None = None,
    ) -> None:
        """Accumulate d(self)/d(leaf) into every leaf's ``.grad``.

        ``gradient`` is required unless ``self`` has one element. Without ``retain_graph=True``
        the graph's saved values are freed, and a second backward through them raises.
        """

        backward([self], None if gradient is None else [gradient], retain_graph,
                 create_graph, inputs=inputs)

    # --- in-place machinery -------------------------------------------------------------------

    def copy_(self, src: Any, non_blocking: bool = False) -> Tensor:
        """Copy ``src`` (broadcast, cast to this dtype) into ``self``."""
        src_t = _core.to_tensor(src)
        target = self.shape

        def compute(old):
            try:
                data = np.broadcast_to(src_t._data, target).astype(old._data.dtype)
            except ValueError:
                raise broadcast_error(target, src_t.shape) from None
            sshape = src_t.shape
            return _core.result(data, "CopyBackwards", (old, src_t),
                                lambda g: (np.zeros_like(g), _core.unbroadcast(g, sshape)))

        def fast():
            try:
                np.copyto(self._data, src_t._data, casting="unsafe")
            except ValueError:
                raise broadcast_error(target, src_t.shape) from None

        return self._inplace(compute, fast, src_t)

    def fill_(self, value: Any) -> Tensor:
        v = value._data if isinstance(value, Tensor) else value

        def compute(old):
            data = np.full(old.shape, v, dtype=old._data.dtype)
            return _core.result(data, "FillBackward0", (old,), lambda g: (np.zeros_like(g),))

        return self._inplace(compute, lambda: self._data.fill(v))

    def add_(self, other: Any, *, alpha: float = 1) -> Tensor:
        return self._inplace_binary(pointwise.add, np.add, other, alpha=alpha)

    def sub_(self, other: Any, *, alpha: float = 1) -> Tensor:
        if other.__class__ is bool or isinstance(other, Tensor) and other._data.dtype.kind == "b":
            return self._inplace(lambda old: pointwise.sub(old, other, alpha=alpha), None, other)
        return self._inplace_binary(pointwise.sub, np.subtract, other, alpha=alpha)

    def mul_(self, other: Any) -> Tensor:
        return self._inplace_binary(pointwise.mul, np.multiply, other)

    def div_(self, other: Any) -> Tensor:
        return self._inplace_binary(pointwise.div, np.true_divide, other)

    def pow_(self, exponent: Any) -> Tensor:
        return self._inplace_binary(pointwise.pow, np.power, exponent)

    __iadd__ = add_
    __isub__ = sub_
    __imul__ = mul_
    __itruediv__ = div_

    def clamp_(self, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
        return self._inplace_unary(pointwise.clamp, min, max)

    def masked_fill_(self, mask: Any, value: Any) -> Tensor:
        return self._inplace_unary(pointwise.masked_fill, mask, value)

    def relu_(self) -> Tensor:
        return self._inplace_unary(pointwise.relu)

    def sigmoid_(self) -> Tensor:
        return self._inplace_unary(pointwise.sigmoid)

    def tanh_(self) -> Tensor:
        return self._inplace_unary(pointwise.tanh)

    def exp_(self) -> Tensor:
        return self._inplace_unary(pointwise.exp)

    def sqrt_(self) -> Tensor:
        return self._inplace_unary(pointwise.sqrt)

    def neg_(self) -> Tensor:
        return self._inplace_unary(pointwise.neg)

    def abs_(self) -> Tensor:
        return self._inplace_unary(pointwise.abs)

    # in place through the out-of-place op (result cast back to this tensor's dtype)
    def atan2_(self, other): return self._inplace_unary(pointwise.atan2, other)  # noqa: E704
    def fmod_(self, other): return self._inplace_unary(pointwise.fmod, other)  # noqa: E704
    def remainder_(self, other): return self._inplace_unary(pointwise.remainder, other)  # noqa: E704
    def floor_divide_(self, other): return self._inplace_unary(pointwise.floor_divide, other)  # noqa: E704
    def frac_(self): return self._inplace_unary(pointwise.frac)  # noqa: E704
    def sign_(self): return self._inplace_unary(pointwise.sign)  # noqa: E704
    def erf_(self): return self._inplace_unary(special.erf)  # noqa: E704
    def log_(self): return self._inplace_unary(pointwise.log)  # noqa: E704
    def square_(self): return self._inplace_unary(pointwise.square)  # noqa: E704
    def clamp_min_(self, min): return self._inplace_unary(pointwise.clamp, min, None)  # noqa: A002, E704
    def clamp_max_(self, max): return self._inplace_unary(pointwise.clamp, None, max)  # noqa: A002, E704
    def erfinv_(self): return self._inplace_unary(special.erfinv)  # noqa: E704
    def logit_(self, eps=None): return self._inplace_unary(special.logit, eps)  # noqa: E704
    def lgamma_(self): return self._inplace_unary(gamma.lgamma)  # noqa: E704
    def digamma_(self): return self._inplace_unary(gamma.digamma)  # noqa: E704
    def polygamma_(self, n): return self._inplace_unary(lambda t: gamma.polygamma(n, t))  # noqa: E704
    def mvlgamma_(self, p): return self._inplace_unary(gamma.mvlgamma, p)  # noqa: E704
    def i0_(self): return self._inplace_unary(special_functions.i0)  # noqa: E704
    def polygamma(self, n): return gamma.polygamma(n, self)  # noqa: E704
    def nan_to_num_(self, nan=0.0, posinf=None, neginf=None):  # noqa: E704
        return self._inplace_unary(special.nan_to_num, nan, posinf, neginf)
    def lerp_(self, end, weight): return self._inplace_unary(special.lerp, end, weight)  # noqa: E704
    def addcmul_(self, tensor1, tensor2, *, value=1):  # noqa: E704
        return self._inplace_unary(special.addcmul, tensor1, tensor2, value=value)
    def addcdiv_(self, tensor1, tensor2, *, value=1):  # noqa: E704
        return self._inplace_unary(special.addcdiv, tensor1, tensor2, value=value)
    def floor_(self): return self._inplace_unary(pointwise.floor)  # noqa: E704
    def ceil_(self): return self._inplace_unary(pointwise.ceil)  # noqa: E704
    def round_(self): return self._inplace_unary(pointwise.round)  # noqa: E704
    def trunc_(self): return self._inplace_unary(pointwise.trunc)  # noqa: E704
    def logical_not_(self): return self._inplace_unary(pointwise.logical_not)  # noqa: E704
    def logical_and_(self, other): return self._inplace_unary(pointwise.logical_and, other)  # noqa: E704
    def logical_or_(self, other): return self._inplace_unary(pointwise.logical_or, other)  # noqa: E704
    def logical_xor_(self, other): return self._inplace_unary(pointwise.logical_xor, other)  # noqa: E704
    def bitwise_not_(self): return self._inplace_unary(pointwise.bitwise_not)  # noqa: E704
    def bitwise_and_(self, other): return self._inplace_unary(pointwise.bitwise_and, other)  # noqa: E704
    def bitwise_or_(self, other): return self._inplace_unary(pointwise.bitwise_or, other)  # noqa: E704
    def bitwise_xor_(self, other): return self._inplace_unary(pointwise.bitwise_xor, other)  # noqa: E704
    arctan2, arctan2_ = pointwise.atan2, atan2_
    __imod__, __ifloordiv__ = remainder_, floor_divide_
    __iand__, __ior__, __ixor__ = bitwise_and_, bitwise_or_, bitwise_xor_

    def __setitem__(self, key: Any, value: Any) -> None:
        """``x[key] = value``, recorded for autograd as torch records it: basic keys update a
        view (``CopySlices`` on ``x``), advanced keys go through ``index_put``."""
        value_t = value if isinstance(value, Tensor) else None
        if not grad_mode._state.enabled or not (
            self._requires_grad or (value_t is not None and value_t._requires_grad)
            or (self._base is not None and self._base._requires_grad)
        ):
            self._check_inplace()
            v = value._data if value_t is not None else value
            try:
                self._data[indexing._normalise_key(key)] = v
            except ValueError:
                raise RuntimeError(
                    f"shape mismatch: value tensor of shape {list(np.shape(v))} cannot be "
                    "broadcast to indexing result"
                ) from None
            except IndexError as e:
                raise IndexError(indexing._torch_index_message(str(e))) from None
            self._version_counter[0] += 1
            return
        if _is_basic_key(key):
            target = indexing.getitem(self, key)
            if target._base is None or target is self:
                target = shape_ops.view_op(self, self._data, "AliasBackward0", lambda g: (g,),
                                       lambda arr: arr)
            target.copy_(value)
        else:
            self._inplace(lambda old: indexing.index_put(old, key, value), None, value)

    # --- conversions --------------------------------------------------------------------------

    def to(self, *args: Any, **kwargs: Any) -> Tensor:
        """``to(dtype)``, ``to('cpu')``, ``to(other)``, ``memory_format=``; a copy only when the
        dtype changes or the tensor is not laid out as ``memory_format`` asks."""
        fmt = kwargs.get("memory_format")
        if fmt is not None and fmt is not _memory_format.preserve_format:
            return self._to_format(args, kwargs, fmt)
        dtype = kwargs.get("dtype")
        copy = kwargs.get("copy", False)
        for a in args:
            if isinstance(a, _dtype.dtype):
                dtype = a
            elif isinstance(a, Tensor):
                dtype = a.dtype
            elif isinstance(a, str | device):
                device(a)
        if "device" in kwargs and kwargs["device"] is not None:
            device(kwargs["device"])
        if dtype is None or (dtype.np == self._data.dtype and not copy):
            return self
        return _to_copy(self, dtype.np)

    def _to_format(self, args: tuple, kwargs: dict, fmt: Any) -> Tensor:
        _memory_format.check(fmt, "to")
        cast = self.to(*args, **{k: v for k, v in kwargs.items() if k != "memory_format"})
        if cast is self and _memory_format.suggested(self._data) is fmt:
            return self
        return _to_copy(self, cast._data.dtype, _memory_format.copy_as(self._data, fmt, cast._data.dtype))

    def new_tensor(self, data: Any, dtype=None, requires_grad: bool = False) -> Tensor:
        return tensor(data, dtype=dtype or self.dtype, requires_grad=requires_grad)

    def __iter__(self) -> Iterator[Tensor]:
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(shape_ops.unbind(self, 0))

    def __add__(self, o): return pointwise.add(self, o)  # noqa: E704
    def __radd__(self, o): return pointwise.add(self, o)  # noqa: E704
    def __sub__(self, o): return pointwise.sub(self, o)  # noqa: E704
    def __rsub__(self, o): return pointwise.rsub(self, o)  # noqa: E704
    def __mul__(self, o): return pointwise.mul(self, o)  # noqa: E704
    def __rmul__(self, o): return pointwise.mul(self, o)  # noqa: E704
    def __truediv__(self, o): return pointwise.div(self, o)  # noqa: E704
    def __rtruediv__(self, o): return pointwise.rdiv(self, o)  # noqa: E704
    def __floordiv__(self, o): return pointwise.floor_divide(self, o)  # noqa: E704
    def __rfloordiv__(self, o): return pointwise.floor_divide(o, self)  # noqa: E704
    def __mod__(self, o): return pointwise.remainder(self, o)  # noqa: E704
    def __rmod__(self, o): return pointwise.remainder(o, self)  # noqa: E704
    def __pow__(self, o): return pointwise.pow(self, o)  # noqa: E704
    def __rpow__(self, o): return pointwise.rpow(self, o)  # noqa: E704
    def __matmul__(self, o): return linalg.matmul(self, o)  # noqa: E704
    def __rmatmul__(self, o): return linalg.matmul(_core.to_tensor(o), self)  # noqa: E704
    def __neg__(self): return pointwise.neg(self)  # noqa: E704
    def __abs__(self): return pointwise.abs(self)  # noqa: E704
    def __invert__(self): return pointwise.invert(self)  # noqa: E704
    def __and__(self, o): return pointwise.bitwise_and(self, o)  # noqa: E704
    def __or__(self, o): return pointwise.bitwise_or(self, o)  # noqa: E704
    def __xor__(self, o): return pointwise.bitwise_xor(self, o)  # noqa: E704
    def __rand__(self, o): return pointwise.bitwise_and(o, self)  # noqa: E704
    def __ror__(self, o): return pointwise.bitwise_or(o, self)  # noqa: E704
    def __rxor__(self, o): return pointwise.bitwise_xor(o, self)  # noqa: E704
    def __eq__(self, o): return pointwise.eq(self, o)  # type: ignore[override]  # noqa: E704
    def __ne__(self, o): return pointwise.ne(self, o)  # type: ignore[override]  # noqa: E704
    def __lt__(self, o): return pointwise.lt(self, o)  # noqa: E704
    def __le__(self, o): return pointwise.le(self, o)  # noqa: E704
    def __gt__(self, o): return pointwise.gt(self, o)  # noqa: E704
    def __ge__(self, o): return pointwise.ge(self, o)  # noqa: E704
    def __getitem__(self, key): return indexing.getitem(self, key)  # noqa: E704

    # ops as methods (each documented where it is defined)
    add, sub, mul, div, pow = pointwise.add, pointwise.sub, pointwise.mul, pointwise.div, pointwise.pow
    subtract, multiply, divide, true_divide = sub, mul, div, div
    remainder, floor_divide = pointwise.remainder, pointwise.floor_divide
    neg, negative, abs, square = pointwise.neg, pointwise.neg, pointwise.abs, pointwise.square
    exp, log, log2, log1p, expm1 = (pointwise.exp, pointwise.log, pointwise.log2, pointwise.log1p,
                                    pointwise.expm1)
    sqrt, rsqrt, reciprocal = pointwise.sqrt, pointwise.rsqrt, pointwise.reciprocal
    sin, cos, tan, tanh, sigmoid, relu = (pointwise.sin, pointwise.cos, pointwise.tan,
                                          pointwise.tanh, pointwise.sigmoid, pointwise.relu)
    sign, floor, ceil, round, trunc = (pointwise.sign, pointwise.floor, pointwise.ceil,
                                       pointwise.round, pointwise.trunc)
    clamp, clip, clamp_min, clamp_max = (pointwise.clamp, pointwise.clamp, pointwise.clamp_min,
                                         pointwise.clamp_max)
    maximum, minimum, masked_fill = pointwise.maximum, pointwise.minimum, pointwise.masked_fill
    erf, erfc, erfinv, logit, nan_to_num = (special.erf, special.erfc, special.erfinv, special.logit,
                                            special.nan_to_num)
    lerp, addcmul, addcdiv = special.lerp, special.addcmul, special.addcdiv
    tile, movedim = shape_composite.tile, shape_composite.movedim
    moveaxis = movedim
    exp2, log10, sinh, cosh, sinc = special.exp2, special.log10, special.sinh, special.cosh, special.sinc
    asin, acos, atan, asinh, acosh, atanh = (special.asin, special.acos, special.atan, special.asinh,
                                             special.acosh, special.atanh)
    arcsin, arccos, arctan, arcsinh, arccosh, arctanh = asin, acos, atan, asinh, acosh, atanh
    deg2rad, rad2deg, hypot, logaddexp, xlogy, signbit = (special.deg2rad, special.rad2deg, special.hypot,
                                                          special.logaddexp, special.xlogy, special.signbit)
    lgamma, digamma, mvlgamma, i0 = gamma.lgamma, gamma.digamma, gamma.mvlgamma, special_functions.i0
    eq, ne, lt, le, gt, ge = (pointwise.eq, pointwise.ne, pointwise.lt, pointwise.le,
                              pointwise.gt, pointwise.ge)
    logical_and, logical_or, logical_xor = (pointwise.logical_and, pointwise.logical_or,
                                            pointwise.logical_xor)
    logical_not, atan2, fmod, frac = pointwise.logical_not, pointwise.atan2, pointwise.fmod, pointwise.frac
    bitwise_and, bitwise_or, bitwise_xor, bitwise_not = (pointwise.bitwise_and, pointwise.bitwise_or,
                                                         pointwise.bitwise_xor, pointwise.bitwise_not)
    sum, mean, var, std, prod = (reduction.sum, reduction.mean, reduction.var, reduction.std,
                                 reduction.prod)
    max, min, amax, amin = reduction.max, reduction.min, reduction.amax, reduction.amin
    argmax, argmin, logsumexp, norm = (reduction.argmax, reduction.argmin, reduction.logsumexp,
                                       reduction.norm)
    softmax, log_softmax = reduction.softmax, reduction.log_softmax
    all, any = reduction.all, reduction.any
    cumsum, cumprod, median, nansum = reduction.cumsum, reduction.cumprod, reduction.median, reduction.nansum
    count_nonzero, aminmax = reduction.count_nonzero, reduction.aminmax
    matmul, mm, bmm, mv, dot = linalg.matmul, linalg.mm, linalg.bmm, linalg.mv, linalg.dot
    view, reshape, flatten, unflatten = shape_ops.view, shape_ops.reshape, shape_ops.flatten, shape_ops.unflatten
    squeeze, unsqueeze, expand, expand_as = (shape_ops.squeeze, shape_ops.unsqueeze, shape_ops.expand,
                                             shape_ops.expand_as)
    permute, transpose, t, clone, contiguous = (shape_ops.permute, shape_ops.transpose, shape_ops.t,
                                                shape_ops.clone, shape_ops.contiguous)
    swapaxes = transpose
    split, chunk, unbind, narrow, repeat, flip = (shape_ops.split, shape_ops.chunk, shape_ops.unbind,
                                                  shape_ops.narrow, shape_ops.repeat, shape_ops.flip)
    gather, index_select, select = indexing.gather, indexing.index_select, shape_ops.select

    def view_as(self, other: Tensor) -> Tensor:
        return shape_ops.view(self, other.shape)

    def reshape_as(self, other: Tensor) -> Tensor:
        return shape_ops.reshape(self, other.shape)

    nonzero, masked_select, take_along_dim = indexing.nonzero, indexing.masked_select, indexing.take_along_dim
    tril, triu, roll, diagonal, diag = (shape_ops.tril, shape_ops.triu, shape_ops.roll, shape_ops.diagonal,
                                        shape_ops.diag)
    repeat_interleave, broadcast_to, tensor_split = (shape_composite.repeat_interleave, shape_ops.broadcast_to,
                                                     shape_ops.tensor_split)
    sort, argsort, topk, unique, bincount = (sorting.sort, sorting.argsort, sorting.topk, sorting.unique,
                                             sorting.bincount)
    isclose, allclose, multinomial = comparison.isclose, comparison.allclose, sampling.multinomial
    scatter, scatter_add, scatter_reduce, index_add = (scatter.scatter, scatter.scatter_add,
                                                       scatter.scatter_reduce, scatter.index_add)
    outer, ger, cross = linalg.outer, linalg.outer, linalg.cross
    kron, trace, inner, vdot = products.kron, products.trace, products.inner, products.vdot
    baddbmm, addbmm, addmv, addr = products.baddbmm, products.addbmm, products.addmv, products.addr
    cov, corrcoef, histc = statistics.cov, statistics.corrcoef, statistics.histc
    quantile, nanquantile, nanmean = statistics.quantile, statistics.nanquantile, statistics.nanmean
    kthvalue, mode, nanmedian = statistics.kthvalue, statistics.mode, statistics.nanmedian
    diff, cummax, cummin, logcumsumexp = scans.diff, scans.cummax, scans.cummin, scans.logcumsumexp
    dist, renorm = norms.dist, norms.renorm
    unfold, rot90, fliplr, flipud = shape_views.unfold, shape_views.rot90, shape_views.fliplr, shape_views.flipud
    ravel, swapdims = shape_views.ravel, shape_views.swapdims
    take, put, argwhere = advanced_indexing.take, advanced_indexing.put, advanced_indexing.argwhere
    index_fill, index_copy = advanced_indexing.index_fill, advanced_indexing.index_copy
    masked_scatter, index_put = advanced_indexing.masked_scatter, advanced_indexing.index_put
    diag_embed, diagflat, msort = constructors.diag_embed, constructors.diagflat, sorting.msort
    det, slogdet = linalg_decompositions.det, linalg_decompositions.slogdet
    logdet, inverse = linalg_decompositions.logdet, linalg_decompositions.inverse
    svd, pinverse = linalg_decompositions.svd_torch, linalg_decompositions.pinverse
    matrix_power = linalg_decompositions.matrix_power
    matrix_exp = linalg_decompositions.matrix_exp
    qr, cholesky_solve = linalg_decompositions.qr_torch, linalg_decompositions.cholesky_solve
    cholesky_inverse = linalg_decompositions.cholesky_inverse
    fmax, fmin, logaddexp2 = pointwise_float.fmax, pointwise_float.fmin, pointwise_float.logaddexp2
    float_power, isposinf, isneginf = pointwise_float.float_power, pointwise_float.isposinf, pointwise_float.isneginf
    cholesky = linalg_decompositions.cholesky_deprecated

    def where(self, condition: Any, other: Any) -> Tensor:
        return indexing.where(condition, self, other)

    # in place through the out-of-place op (the leaf and version rules of ``_inplace``)
    def tril_(self, diagonal=0): return self._inplace_unary(shape_ops.tril, diagonal)  # noqa: E704
    def triu_(self, diagonal=0): return self._inplace_unary(shape_ops.triu, diagonal)  # noqa: E704

    def scatter_(self, dim, index, src=None, *, value=None, reduce=None) -> Tensor:
        return self._inplace_unary(scatter.scatter, dim, index, src, value=value, reduce=reduce)

    def scatter_add_(self, dim, index, src) -> Tensor:
        return self._inplace_unary(scatter.scatter_add, dim, index, src)

    def scatter_reduce_(self, dim, index, src, reduce, *, include_self=True) -> Tensor:
        return self._inplace_unary(scatter.scatter_reduce, dim, index, src, reduce,
                                   include_self=include_self)

    def index_add_(self, dim, index, source, *, alpha=1) -> Tensor:
        return self._inplace_unary(scatter.index_add, dim, index, source, alpha=alpha)

    def index_fill_(self, dim, index, value) -> Tensor:
        return self._inplace_unary(advanced_indexing.index_fill, dim, index, value)

    def index_copy_(self, dim, index, source) -> Tensor:
        return self._inplace_unary(advanced_indexing.index_copy, dim, index, source)

    def masked_scatter_(self, mask, source) -> Tensor:
        return self._inplace_unary(advanced_indexing.masked_scatter, mask, source)

    def put_(self, index, source, accumulate=False) -> Tensor:
        return self._inplace_unary(advanced_indexing.put, index, source, accumulate)

    def index_put_(self, indices, values, accumulate=False) -> Tensor:
        if isinstance(indices, Tensor):
            raise TypeError("index_put_(): argument 'indices' (position 1) must be tuple of Tensors, not Tensor")
        return self._inplace_unary(advanced_indexing.index_put, indices, values, accumulate)

    def addmm_(self, mat1, mat2, *, beta=1, alpha=1) -> Tensor:
        return self._inplace_unary(linalg.addmm, mat1, mat2, beta=beta, alpha=alpha)

    def renorm_(self, p, dim, maxnorm) -> Tensor:
        return self._inplace_unary(norms.renorm, p, dim, maxnorm)

    def baddbmm_(self, batch1, batch2, *, beta=1, alpha=1) -> Tensor:
        return self._inplace_unary(products.baddbmm, batch1, batch2, beta=beta, alpha=alpha)

    def addbmm_(self, batch1, batch2, *, beta=1, alpha=1) -> Tensor:
        return self._inplace_unary(products.addbmm, batch1, batch2, beta=beta, alpha=alpha)

    def addmv_(self, mat, vec, *, beta=1, alpha=1) -> Tensor:
        return self._inplace_unary(products.addmv, mat, vec, beta=beta, alpha=alpha)

    def addr_(self, vec1, vec2, *, beta=1, alpha=1) -> Tensor:
        return self._inplace_unary(products.addr, vec1, vec2, beta=beta, alpha=alpha)

    # --- the rest of torch's Tensor methods real code reaches for ----------------------------------
    # (ops in ``_ops/pointwise_float.py``, ``shape_views.py``, ...; in-place forms through ``_inplace``'s
    # leaf and version rules)

    @property
    def H(self) -> Tensor:  # noqa: N802
        return shape_views.hermitian_t(self)

    @property
    def mH(self) -> Tensor:  # noqa: N802
        return shape_views.hermitian_mt(self)

    positive, sgn, absolute, fix = pointwise_float.positive, pointwise_float.sgn, pointwise.abs, pointwise.trunc
    greater, greater_equal, less, less_equal, not_equal = (pointwise.gt, pointwise.ge, pointwise.lt,
                                                           pointwise.le, pointwise.ne)
    heaviside, copysign = pointwise_float.heaviside, pointwise_float.copysign
    gcd, lcm = pointwise_integer.gcd, pointwise_integer.lcm
    ldexp, frexp, nextafter = pointwise_float.ldexp, pointwise_float.frexp, pointwise_float.nextafter
    unique_consecutive = sets.unique_consecutive
    hsplit, vsplit, dsplit = shape_views.hsplit, shape_views.vsplit, shape_views.dsplit
    split_with_sizes, sum_to_size = shape_views.split_with_sizes, shape_views.sum_to_size

    def bernoulli(self, p: Any = None, *, generator=None) -> Tensor:
        """Draws of 0/1 (this dtype) with probabilities ``self`` (or ``p``)."""
        return bernoulli(self if p is None else Tensor._wrap(np.full(self.shape, p, self._data.dtype)),
                         generator=generator)

    # in place through the out-of-place op (result written back in this tensor's dtype)
    def sin_(self): return self._inplace_unary(pointwise.sin)  # noqa: E704
    def cos_(self): return self._inplace_unary(pointwise.cos)  # noqa: E704
    def tan_(self): return self._inplace_unary(pointwise.tan)  # noqa: E704
    def asin_(self): return self._inplace_unary(special.asin)  # noqa: E704
    def acos_(self): return self._inplace_unary(special.acos)  # noqa: E704
    def atan_(self): return self._inplace_unary(special.atan)  # noqa: E704
    def sinh_(self): return self._inplace_unary(special.sinh)  # noqa: E704
    def cosh_(self): return self._inplace_unary(special.cosh)  # noqa: E704
    def asinh_(self): return self._inplace_unary(special.asinh)  # noqa: E704
    def acosh_(self): return self._inplace_unary(special.acosh)  # noqa: E704
    def atanh_(self): return self._inplace_unary(special.atanh)  # noqa: E704
    arcsin_, arccos_, arctan_, arcsinh_, arccosh_, arctanh_ = asin_, acos_, atan_, asinh_, acosh_, atanh_
    def log10_(self): return self._inplace_unary(special.log10)  # noqa: E704
    def log1p_(self): return self._inplace_unary(pointwise.log1p)  # noqa: E704
    def log2_(self): return self._inplace_unary(pointwise.log2)  # noqa: E704
    def expm1_(self): return self._inplace_unary(pointwise.expm1)  # noqa: E704
    def exp2_(self): return self._inplace_unary(special.exp2)  # noqa: E704
    def rsqrt_(self): return self._inplace_unary(pointwise.rsqrt)  # noqa: E704
    def reciprocal_(self): return self._inplace_unary(pointwise.reciprocal)  # noqa: E704
    def erfc_(self): return self._inplace_unary(special.erfc)  # noqa: E704
    def deg2rad_(self): return self._inplace_unary(special.deg2rad)  # noqa: E704
    def rad2deg_(self): return self._inplace_unary(special.rad2deg)  # noqa: E704
    def sinc_(self): return self._inplace_unary(special.sinc)  # noqa: E704
    def sgn_(self): return self._inplace_unary(pointwise_float.sgn)  # noqa: E704
    def hypot_(self, other): return self._inplace_unary(special.hypot, other)  # noqa: E704
    def xlogy_(self, other): return self._inplace_unary(special.xlogy, other)  # noqa: E704
    def copysign_(self, other): return self._inplace_unary(pointwise_float.copysign, other)  # noqa: E704
    def gcd_(self, other): return self._inplace_unary(pointwise_integer.gcd, other)  # noqa: E704
    def lcm_(self, other): return self._inplace_unary(pointwise_integer.lcm, other)  # noqa: E704
    def heaviside_(self, values): return self._inplace_unary(pointwise_float.heaviside, values)  # noqa: E704
    def nextafter_(self, other): return self._inplace_unary(pointwise_float.nextafter, other)  # noqa: E704
    absolute_, fix_, negative_, clip_ = abs_, trunc_, neg_, clamp_
    multiply_, subtract_, true_divide_ = mul_, sub_, div_

    def ldexp_(self, other: Tensor) -> Tensor:
        if self._data.dtype.kind != "f":
            raise RuntimeError(f"ldexp can't be cast to the desired output type "
                               f"{_dtype.scalar_type_name(self._data.dtype)}")
        return self._inplace_unary(pointwise_float.ldexp, other)

    def divide_(self, other: Any, *, rounding_mode: str | None = None) -> Tensor:
        if rounding_mode is None:
            return self.div_(other)
        return self._inplace_unary(pointwise.div, other, rounding_mode=rounding_mode)

    def float_power_(self, exponent: Any) -> Tensor:
        """``float_power`` in place: only a float64 tensor can hold its (double) result."""
        if self._data.dtype != np.float64:
            raise RuntimeError(f"the base given to float_power_ has dtype "
                               f"{_dtype.scalar_type_name(self._data.dtype)} but the operation's result "
                               "requires dtype Double")
        return self._inplace_unary(pointwise_float.float_power, exponent)

    def _inplace_compare(self, op: Callable, name: str, other: Any) -> Tensor:
        """``eq_`` and friends: the comparison's 0/1 in this dtype; zero gradient (torch's)."""
        def compute(old):
            data = op(old, other)._data.astype(old._data.dtype)
            return _core.result(data, name, (old,), lambda g: (np.zeros_like(g),))
        return self._inplace(compute, None, other)

    def eq_(self, other): return self._inplace_compare(pointwise.eq, "EqBackward0", other)  # noqa: E704
    def ne_(self, other): return self._inplace_compare(pointwise.ne, "NeBackward0", other)  # noqa: E704
    def lt_(self, other): return self._inplace_compare(pointwise.lt, "LtBackward0", other)  # noqa: E704
    def le_(self, other): return self._inplace_compare(pointwise.le, "LeBackward0", other)  # noqa: E704
    def gt_(self, other): return self._inplace_compare(pointwise.gt, "GtBackward0", other)  # noqa: E704
    def ge_(self, other): return self._inplace_compare(pointwise.ge, "GeBackward0", other)  # noqa: E704
    greater_, greater_equal_, less_, less_equal_, not_equal_ = gt_, ge_, lt_, le_, ne_

    def cumsum_(self, dim: int, dtype=None) -> Tensor:
        return self._scan_(reduction.cumsum, dim, dtype)

    def cumprod_(self, dim: int, dtype=None) -> Tensor:
        return self._scan_(reduction.cumprod, dim, dtype)

    def t_(self) -> Tensor:
        return self._inplace_view(lambda s: _renamed(shape_ops.t(s), "TBackward1"))

    def transpose_(self, dim0: int, dim1: int) -> Tensor:
        return self._inplace_view(lambda s: _renamed(shape_ops.transpose(s, dim0, dim1), "TransposeBackward1"))

    swapdims_ = swapaxes_ = transpose_

    def squeeze_(self, dim: Any = None) -> Tensor:
        name = "SqueezeBackward3" if dim is None else "SqueezeBackward4" if isinstance(dim, int) else \
            "SqueezeBackward5"
        return self._inplace_view(lambda s: shape_ops.squeeze(s, dim, node_name=name))

    def unsqueeze_(self, dim: int) -> Tensor:
        return self._inplace_view(lambda s: _renamed(shape_ops.unsqueeze(s, dim), "UnsqueezeBackward1"))

    def fill_diagonal_(self, fill_value: Any, wrap: bool = False) -> Tensor:
        """Set the main diagonal (all dims equal when more than 2; ``wrap``: restart below a tall
        matrix's square, as torch does)."""
        def compute(old):
            data = fills.fill_diagonal_values(old._data, fill_value, wrap)
            mask = fills.fill_diagonal_values(np.ones(old.shape, bool), False, wrap)
            return _core.result(data, "FillBackward2", (old,), lambda g: (g * mask,))
        return self._inplace(compute, None)

    def random_(self, from_: Any = 0, to: Any = None, *, generator=None, **kw: Any) -> Tensor:
        """Integers drawn uniformly from [from, to) (``random_(to)``: [0, to); ``random_()``:
        [0, 2**mantissa] for floats, the non-negative range for integers), in this dtype."""
        lo, hi = fills.random_bounds(self._data.dtype, kw.pop("from", from_), kw.pop("to", to))
        return self._random_fill(lambda rng: rng.integers(lo, hi, size=self.shape, dtype=np.int64), generator)

    def exponential_(self, lambd: float = 1, *, generator=None) -> Tensor:
        fills.check_float_fill("exponential_", self._data.dtype, "Exponential")
        if not lambd > 0:
            raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
        return self._random_fill(lambda rng: rng.exponential(1.0 / lambd, size=self.shape), generator)

    def log_normal_(self, mean: float = 1, std: float = 2, *, generator=None) -> Tensor:
        fills.check_float_fill("log_normal_", self._data.dtype, "LogNormal")
        if not std > 0:
            raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
        return self._random_fill(lambda rng: rng.lognormal(mean, std, size=self.shape), generator)

    def cauchy_(self, median: float = 0, sigma: float = 1, *, generator=None) -> Tensor:
        fills.check_float_fill("cauchy_", self._data.dtype, "Cauchy")
        if not sigma > 0:
            raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
        return self._random_fill(lambda rng: median + sigma * rng.standard_cauchy(size=self.shape), generator)

    addmm, histogram = linalg.addmm, _namespace.histogram
    adjoint, isreal, dim_order, narrow_copy = (shape_views.adjoint, pointwise_float.isreal, shape_views.dim_order,
                                               shape_views.narrow_copy)
    bitwise_left_shift = pointwise_integer.bitwise_left_shift
    bitwise_right_shift = pointwise_integer.bitwise_right_shift
    __lshift__, __rshift__ = bitwise_left_shift, bitwise_right_shift
    def __rlshift__(self, o): return pointwise_integer.bitwise_left_shift(o, self)  # noqa: E704
    def __rrshift__(self, o): return pointwise_integer.bitwise_right_shift(o, self)  # noqa: E704
    def bitwise_left_shift_(self, other): return self._inplace_unary(pointwise_integer.bitwise_left_shift, other)  # noqa: E704
    def bitwise_right_shift_(self, other): return self._inplace_unary(pointwise_integer.bitwise_right_shift, other)  # noqa: E704
    __ilshift__, __irshift__ = bitwise_left_shift_, bitwise_right_shift_
    unsafe_chunk, unsafe_split = shape_ops.unsafe_chunk, shape_ops.unsafe_split
    unsafe_split_with_sizes = shape_ops.unsafe_split

    def conj_physical(self) -> Tensor:
        """The conjugate as a new tensor (a copy of a real tensor)."""
        return self.conj() if self.is_complex() else shape_ops.clone(self)

    def hardshrink(self, lambd: float = 0.5) -> Tensor:
        return F.hardshrink(self, lambd)

    def prelu(self, weight: Tensor) -> Tensor:
        return F.prelu(self, weight)

    def map_(self, tensor: Tensor, callable: Callable[[Any, Any], Any]) -> Tensor:  # noqa: A002
        """Replace each element by ``callable(element, other)``, ``tensor`` broadcast to this
        shape (a Python loop, as torch's own)."""
        if self._requires_grad or tensor._requires_grad:
            raise RuntimeError("Can't call map_() on Variable that requires grad. Use var.detach().map_() "
                               "instead.")
        other = shape_ops.expand(tensor, self.shape)._data.reshape(-1).tolist()
        conv = _element_caster(self._data.dtype)
        values = [conv(callable(a, b)) for a, b in zip(self._data.reshape(-1).tolist(), other)]
        self._check_inplace()
        self._data[...] = np.array(values, self._data.dtype).reshape(self.shape)
        self._version_counter[0] += 1
        return self
def _to_copy(t: Tensor, npdt: np.dtype, out: np.ndarray | None = None) -> Tensor:
    """``t`` as ``npdt`` (``out`` when the caller already made that copy), a ToCopyBackward0 node."""
    src_dtype = t._data.dtype
    out = t._data.astype(npdt) if out is None else out
    if npdt.kind != "f":
        return Tensor._wrap(out)
    return _core.result(out, "ToCopyBackward0", (t,), lambda g: (g.astype(src_dtype),))


_NOT_METHODS = frozenset({"__module__", "__qualname__", "__doc__", "__dict__", "__weakref__", "__firstlineno__",
                          "__static_attributes__"})


def _bind(cls: type, methods: type) -> None:
    """Copy ``methods``' attributes onto ``cls``, named ``Tensor.<name>`` as if written there."""
    for name, value in vars(methods).items():
        if name in _NOT_METHODS or (name == "__hash__" and value is None):  # None: implied by __eq__
            continue
        for fn in (value.fget, value.fset, value.fdel) if isinstance(value, property) else (
                getattr(value, "__func__", value),):
            if fn is not None and getattr(fn, "__qualname__", "").startswith(methods.__name__ + "."):
                fn.__qualname__ = cls.__name__ + fn.__qualname__[len(methods.__name__):]
        setattr(cls, name, value)


_bind(Tensor, _TensorMethods)
