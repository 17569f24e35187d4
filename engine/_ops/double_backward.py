"""Double backward for ops whose code cannot carry a tensor backward itself.

Most ops hand ``result(...)`` a ``tensor_backward``: their backward written with engine ops on
Tensors, so that the gradients ``create_graph=True`` computes have a graph of their own. The
element-wise activations of ``engine.nn.functional`` (silu, softplus, gelu, elu/selu,
leaky_relu) are built by generic helpers there; their tensor backward is a rule here, keyed by
node name, that reads the saved input and the activation's parameters from the node's array
backward (the closure ``_elementwise`` builds: ``grad`` and ``x``). A node with neither raises
torch-style ``NotImplementedError`` naming it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

import engine._ops._core as _core

from .._tensor import view_adjoint
from ._core import result
from ._erf import erf

RULES: dict[str, Callable[[Any], Callable[..., tuple] | None]] = {}


def tensor_backward_of(node: Any) -> Callable[..., tuple]:
    """The tensor backward of ``node`` (its ``_tbw`` or a rule), or torch-style
    NotImplementedError naming the op."""
    tbw = getattr(node, "_tbw", None)
    if tbw is not None:
        return tbw
    rule = RULES.get(node.name())
    tbw = rule(node) if rule is not None and node._fn is not None else None
    if tbw is None:
        raise NotImplementedError(
            f"double backward through {node.name()} is not supported by engine (create_graph=True)"
        )
    return tbw


def _cells(fn: Callable) -> dict[str, Any]:
    """The variables a closure captured, by name."""
    return dict(zip(fn.__code__.co_freevars, (c.cell_contents for c in fn.__closure__ or ())))


def derivative(a: Any, x: np.ndarray, deriv: Callable[[int, np.ndarray], np.ndarray | None], k: int,
               name: str) -> Any:
    """``deriv(k, x)`` (the k-th derivative of an element-wise function at ``x = a``'s value) as a
    Tensor whose gradient flows to ``a`` through the (k+1)-th, and so on while ``deriv`` has
    one (``None`` past the highest order it knows)."""
    value = deriv(k, x).astype(x.dtype, copy=False)
    nxt = deriv(k + 1, x)

    def backward(g):
        return ((g * nxt).astype(g.dtype, copy=False),)

    def tensor_backward(g):
        return (g * derivative(a, x, deriv, k + 1, name),)

    has_next = deriv(k + 2, x) is not None if nxt is not None else False
    return result(value, name, (a,), backward if nxt is not None else None, saved=(a,),
                  tensor_backward=tensor_backward if has_next else None)


def _elementwise_rule(derivs: Callable[[dict], Callable[[int, np.ndarray], np.ndarray | None]]):
    """A rule for an ``_elementwise`` node: ``g * f'(a)`` with ``f'`` differentiable further."""

    def rule(node: Any) -> Callable[..., tuple] | None:
        if not node._saved or node._saved[0][2] is None:
            return None
        a = node._saved[0][2]
        cells = _cells(node._fn)
        deriv = derivs(cells)
        if deriv is None:
            return None
        x = cells["x"] if "x" in cells else a._data
        name = node.name().replace("Backward", "BackwardBackward", 1)
        return lambda g: (g * derivative(a, x, deriv, 1, name),)

    return rule


def _sigmoid(x: np.ndarray) -> np.ndarray:
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _silu(cells: dict):
    def deriv(k, x):
        s = _sigmoid(x)
        return {1: lambda: s * (1 + x * (1 - s)),
                2: lambda: s * (1 - s) * (2 + x * (1 - 2 * s))}.get(k, lambda: None)()
    return deriv


def _softplus(cells: dict):
    inner = _cells(cells["grad"])
    beta, threshold = inner["beta"], inner["threshold"]

    def deriv(k, x):
        bx = x * beta
        lin = bx > threshold  # torch's linear region: slope 1, no curvature
        s = _sigmoid(bx)
        vals = {1: lambda: np.where(lin, 1.0, s),
                2: lambda: np.where(lin, 0.0, beta * s * (1 - s)),
                3: lambda: np.where(lin, 0.0, beta * beta * s * (1 - s) * (1 - 2 * s))}
        return vals.get(k, lambda: None)()
    return deriv


def _gelu(cells: dict):
    if "cdf" not in cells:  # approximate='tanh': not covered
        return None

    def deriv(k, x):
        xd = x.astype(np.float64)
        pdf = np.exp(-0.5 * xd * xd) / math.sqrt(2 * math.pi)
        vals = {1: lambda: 0.5 * (1 + _erf(xd / math.sqrt(2))) + xd * pdf,
                2: lambda: pdf * (2 - xd * xd),
                3: lambda: pdf * (xd ** 3 - 4 * xd)}
        return vals.get(k, lambda: None)()
    return deriv


def _erf(x: np.ndarray) -> np.ndarray:
    return erf(x)


def _elu(cells: dict):
    inner = _cells(cells["grad"])
    alpha, scale, input_scale = inner["alpha"], inner["scale"], inner["input_scale"]

    def deriv(k, x):
        neg = np.minimum(x, 0)
        return np.where(x > 0, scale if k == 1 else 0.0,
                        scale * alpha * input_scale ** k * np.exp(neg * input_scale))
    return deriv


def _leaky_relu(node: Any) -> Callable[..., tuple] | None:
    """``g`` times 1 or the slope; a zero edge to the value the node saved (its input, or its
    output for the in-place ``LeakyReluBackward1``, whose array ``ref`` then is that output)."""
    cells = _cells(node._fn)
    ref = cells["ref"]
    slope = np.where(ref > 0, 1.0, cells["slope"]).astype(ref.dtype)
    saved = node._saved[0][2]

    def tensor_backward(g):
        through = saved if saved is not None else _core.saved_output(ref)
        return (_core.masked(g, slope, through, "LeakyReluBackwardBackward0"),)

    return tensor_backward


RULES.update({
    "SiluBackward0": _elementwise_rule(_silu),
    "SoftplusBackward0": _elementwise_rule(_softplus),
    "GeluBackward0": _elementwise_rule(_gelu),
    "EluBackward0": _elementwise_rule(_elu),
    "EluBackward1": _elementwise_rule(_elu),
    "LeakyReluBackward0": _leaky_relu,
    "LeakyReluBackward1": _leaky_relu,
})


def _mse_loss(node: Any) -> Callable[..., tuple] | None:
    """``2 (input - target) g`` (spread over the elements for 'mean'/'sum') on Tensors."""
    cells = _cells(node._fn)
    (_, _, inp), (_, _, target) = node._saved
    how, n = cells["how"], cells["n"]
    ra, rb = cells["ra"], cells["rb"]

    def tensor_backward(g):
        scale = g / n if how == "mean" else g
        gd = (inp - target) * scale * 2
        return (gd if ra else None, -gd if rb else None)

    return tensor_backward


def _nll_loss(node: Any) -> Callable[..., tuple]:
    """NLL's gradient does not depend on the input's values: a linear map of ``g`` whose adjoint
    picks ``-w * input[row, target]`` and reduces it as the forward does."""
    cells = _cells(node._fn)
    w, rows, safe, how = cells["w"], cells["rows"], cells["safe"], cells["how"]
    total_weight, x_shape, c = cells["total_weight"], cells["x_shape"], cells["c"]
    out_shape = node._out_meta[0][0]

    def adjoint(gg: np.ndarray) -> np.ndarray:
        ggc = gg.reshape(1, c) if len(x_shape) == 1 else np.moveaxis(gg, 1, -1).reshape(-1, c)
        per = -w * ggc[rows, safe]
        if how == "none":
            return per.reshape(out_shape)
        total = per.sum()
        if how == "mean":
            with np.errstate(invalid="ignore", divide="ignore"):
                total = total / total_weight if total_weight != 0 else total * 0
        return np.asarray(total, gg.dtype)

    return _core.linear_backward(node.name(), node._fn, adjoint)


RULES.update({
    "MseLossBackward0": _mse_loss,
    "NllLossBackward0": _nll_loss,
    "NllLoss2DBackward0": _nll_loss,
})


# --- convolution ---------------------------------------------------------------------------------
# A convolution is bilinear in (input, weight): its input gradient is linear in (g, weight), its
# weight gradient linear in (g, input), and the derivatives of those are the convolution and its
# two gradients again, which the node's geometry object (``engine.nn._functional.conv``) computes
# on arrays for any operands of the saved shapes.


class _ConvArrays:
    """The three products of one convolution's geometry, on arrays of the node's shapes (a
    1-D convolution runs as 2-D over a height of 1, as its forward did)."""

    def __init__(self, geo: Any, nd: int, x_shape: tuple, w_shape: tuple, out_shape: tuple) -> None:
        self.geo, self.row = geo, type(geo).__name__ == "_RowGeometry"
        self.nd, self.x_shape, self.w_shape, self.out_shape = nd, x_shape, w_shape, out_shape

    def _2d(self, a: np.ndarray) -> np.ndarray:
        return a[:, :, None, :] if self.nd == 1 else a

    def conv(self, x: np.ndarray, w: np.ndarray) -> np.ndarray:
        x, w = self._2d(x), self._2d(w)
        y = self.geo.forward(x, w, None, False)[0] if self.row else self.geo.forward(x, w, None)
        return y.reshape(self.out_shape)

    def input_grad(self, g: np.ndarray, w: np.ndarray) -> np.ndarray:
        g, w = self._2d(g), self._2d(w)
        gx = (self.geo.backward(None, g, w, True, False, False) if self.row
              else self.geo.backward(None, g, w, None, True, False))[0]
        return gx.reshape(self.x_shape)

    def weight_grad(self, x: np.ndarray, g: np.ndarray) -> np.ndarray:
        x, g = self._2d(x), self._2d(g)
        gw = (self.geo.backward(self.geo.unfold(x), g, None, False, True, False) if self.row
              else self.geo.backward(x, g, None, None, False, True))[1]
        return gw.reshape(self.w_shape)


_CONV_BB = "ConvolutionBackwardBackward0"


def _conv_input_grad(g: Any, w: Any, ops: _ConvArrays) -> Any:
    """dX = B(g, w) as a Tensor: d/dg of <gg, dX> is conv(gg, w), d/dw is conv's weight
    gradient for input gg and output gradient g."""
    gd, wd = g._data, w._data
    rg, rw = g._requires_grad, w._requires_grad

    def backward(gg):
        return (ops.conv(gg, wd) if rg else None, ops.weight_grad(gg, gd) if rw else None)

    return result(ops.input_grad(gd, wd), _CONV_BB, (g, w), backward, saved=(w,))


def _conv_weight_grad(g: Any, x: Any, ops: _ConvArrays) -> Any:
    """dW = B(g, x) as a Tensor: d/dg of <gg, dW> is conv(x, gg), d/dx is conv's input
    gradient for output gradient g and weight gg."""
    gd, xd = g._data, x._data
    rg, rx = g._requires_grad, x._requires_grad

    def backward(gg):
        return (ops.conv(xd, gg) if rg else None, ops.input_grad(gd, gg) if rx else None)

    return result(ops.weight_grad(xd, gd), _CONV_BB, (g, x), backward, saved=(x,))


def _convolution(node: Any) -> Callable[..., tuple] | None:
    cells = _cells(node._fn)
    geo = cells.get("geo")
    if geo is None or len(node._saved) != 2:  # conv_transpose: not covered
        return None
    (_, _, inp), (_, _, weight) = node._saved
    need_x, need_w, need_b = cells["need_x"], cells["need_w"], cells["need_b"]
    ops = _ConvArrays(geo, cells.get("nd", 2), inp.shape, weight.shape, node._out_meta[0][0])

    def tensor_backward(g):
        return (_conv_input_grad(g, weight, ops) if need_x else None,
                _conv_weight_grad(g, inp, ops) if need_w else None,
                g.sum((0, *range(2, g.ndim))) if need_b else None)

    return tensor_backward


RULES["ConvolutionBackward0"] = _convolution


def _as_strided(node: Any) -> Callable[..., tuple]:
    """A view re-derived from its base (``engine._tensor._as_strided_node``): its gradient written
    into zeros of the base's shape is linear in g, with the view itself as adjoint."""
    cells = _cells(node._fn)
    view_fn, ((shape, dtype),) = cells["view_fn"], cells["base_meta"]

    def scatter(arr: np.ndarray) -> tuple:
        return (view_adjoint(view_fn, arr, shape, dtype),)

    return _core.linear_backward(node.name(), scatter, lambda arr: np.array(view_fn(arr)))


RULES["AsStridedBackward0"] = _as_strided


# --- pooling -------------------------------------------------------------------------------------
# A pool's gradient is linear in g and does not depend on the input's values (max pool: not
# locally): its derivative for g is the pool's adjoint, for the input zeros. The input stays an
# edge (torch's ``self: zeros_like(self)``), so what lies behind it gets zeros rather than none.


def _input_edge(node: Any) -> Any:
    """A stand-in Tensor on the node's input edge (``None`` if the input needs no gradient):
    only its edge is used, to give the input a zero gradient."""
    nxt, nr = node.next_functions[0]
    if nxt is None:
        return None
    t = _core.Tensor._wrap(np.zeros((), nxt._out_meta[nr][1]))
    t._requires_grad, t.grad_fn, t._output_nr = True, nxt, nr
    return t


def _pool_rule(adjoint_of: Callable[[dict], Callable[[np.ndarray], np.ndarray]]):
    def rule(node: Any) -> Callable[..., tuple]:
        bw = node._fn
        adj = adjoint_of(_cells(bw))
        name = node.name().replace("Backward", "BackwardBackward", 1)
        in_shape, in_dtype = node.next_functions[0][0]._out_meta[node.next_functions[0][1]] \
            if node.next_functions[0][0] is not None else ((), np.float32)

        def fwd(arr):
            return bw(arr)[0]

        def op(g):
            through = _input_edge(node)

            def backward(gg):
                return adj(gg), (np.zeros(in_shape, in_dtype) if through is not None else None)

            def tensor_backward(gg):
                return (_core.linear(gg, node.name(), adj, fwd, name),
                        _core.Tensor._wrap(np.zeros(in_shape, in_dtype)) if through is not None else None)

            return result(fwd(g._data), name, (g, through), backward, tensor_backward=tensor_backward)

        return lambda g, *_indices: (op(g),)  # max_pool2d(return_indices=True): indices get none

    return rule


def _max_pool_adjoint(cells: dict) -> Callable[[np.ndarray], np.ndarray]:
    """Each window's value of ``gg`` at the window's (first) maximum."""
    xp, y, taps, p, x_shape = cells["xp"], cells["y"], cells["taps"], cells["p"], cells["x_shape"]

    def adjoint(gg: np.ndarray) -> np.ndarray:
        ggp = _pad_like(gg, xp.shape, x_shape, p)
        out = np.zeros(y.shape, gg.dtype)
        taken = None
        for _, _, rows, cols in taps:
            hit = np.equal(xp[..., rows, cols], y)
            if taken is None:
                taken = hit
            else:
                hit &= ~taken
                taken |= hit
            out += ggp[..., rows, cols] * hit
        return out

    return adjoint


def _avg_pool_adjoint(cells: dict) -> Callable[[np.ndarray], np.ndarray]:
    """Each window's sum of ``gg`` over its divisor: the pool itself."""
    div, taps, p, x_shape, xp_shape = cells["div"], cells["taps"], cells["p"], cells["x_shape"], cells["xp_shape"]

    def adjoint(gg: np.ndarray) -> np.ndarray:
        ggp = _pad_like(gg, xp_shape, x_shape, p)
        total = sum(ggp[..., rows, cols] for _, _, rows, cols in taps)
        return total / div.astype(gg.dtype)

    return adjoint


def _adaptive_avg_pool_adjoint(cells: dict) -> Callable[[np.ndarray], np.ndarray]:
    ph, pw = cells["ph"], cells["pw"]
    return lambda gg: ph @ gg @ pw.T


def _pad_like(g: np.ndarray, xp_shape: tuple, x_shape: tuple, p) -> np.ndarray:
    """``g`` (input-shaped) placed in the pool's padded frame, zeros around."""
    if tuple(xp_shape) == tuple(x_shape):
        return g
    gp = np.zeros(xp_shape, g.dtype)
    h, w = x_shape[-2:]
    gp[..., p[0]:p[0] + h, p[1]:p[1] + w] = g
    return gp


RULES.update({
    "MaxPool2DWithIndicesBackward0": _pool_rule(_max_pool_adjoint),
    "AvgPool2DBackward0": _pool_rule(_avg_pool_adjoint),
    "AdaptiveAvgPool2DBackward0": _pool_rule(_adaptive_avg_pool_adjoint),
})


# --- clamp, layer_norm ---------------------------------------------------------------------------


def _clamp(node: Any) -> Callable[..., tuple] | None:
    """``ClampBackward1`` (number bounds): ``g`` where the input was inside. The mask is a
    constant, with no edge to the input (torch's formula reads it the same way)."""
    cells = _cells(node._fn)
    if cells.get("tensor_bounds"):
        return None
    x, lo, hi = cells["x"], cells["lo"], cells["hi"]
    keep = np.ones(x.shape, dtype=bool)
    if lo is not None:
        keep &= x >= lo
    if hi is not None:
        keep &= x <= hi
    factor = _core.Tensor._wrap(keep)
    return lambda g: (g * factor,)


def _inverse_std(x: Any, invstd: np.ndarray, xc: np.ndarray, axes: tuple, n: int) -> Any:
    """``1 / sqrt(var(x) + eps)`` over ``axes`` as a Tensor of ``x`` (value ``invstd``, known):
    its derivative ``-invstd³ (x - mean) / n`` needs no ``eps``. (Not differentiable further.)"""
    def backward(gg):
        return ((gg * -(invstd ** 3)) * xc / np.asarray(n, xc.dtype),)

    return result(invstd, "RsqrtBackward0", (x,), backward, saved=(x,))


def _layer_norm(node: Any) -> Callable[..., tuple] | None:
    """``NativeLayerNormBackward0`` written with engine ops on the saved input and weight."""
    cells = _cells(node._fn)
    xhat, invstd, axes, lead = cells["xhat"], cells["invstd"], cells["axes"], cells["lead"]
    need_w, need_b, has_w = cells["need_w"], cells["need_b"], cells["w"] is not None
    saved = [t for _, _, t in node._saved]
    x, weight = saved[0], (saved[1] if has_w else None)
    need_x = x._requires_grad
    n = 1
    for d in axes:
        n *= xhat.shape[d]
    xc = xhat / invstd

    def lead_sum(t):
        return t.sum(lead) if lead else t

    def tensor_backward(g):
        inv = _inverse_std(x, invstd, xc, axes, n)
        xh = (x - x.mean(axes, keepdim=True)) * inv
        gx = None
        if need_x:
            gh = g * weight if weight is not None else g
            gx = (gh - gh.mean(axes, keepdim=True) - xh * (gh * xh).mean(axes, keepdim=True)) * inv
        return (gx, lead_sum(g * xh) if need_w else None, lead_sum(g) if need_b else None)

    return tensor_backward


RULES.update({"ClampBackward1": _clamp, "NativeLayerNormBackward0": _layer_norm})
