"""Attention: ``scaled_dot_product_attention`` and ``multi_head_attention_forward`` (torch's slow
path, step for step).

Composed from recorded ops so a graph reads like torch's and every product is an ``mm``/``addmm``/
``bmm`` node (what modscope counts as multiply-adds): projections through ``linear``, scores and
the weighted sum through ``bmm``. Where torch fuses the mask into ``baddbmm`` this adds it after
the ``bmm``: the same sum, one more node.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

import engine._ops.linalg as linalg
import engine._ops.pointwise as pointwise
import engine._ops.reduction as reduction
import engine._ops.shape as _shape

from ... import _dtype
from ..._errstate import quiet
from ..._ops._core import result
from ..._tensor import Tensor as _Tensor
from .dropout import dropout as _dropout
from .sdp_backend import check_backend as _check_backend

__all__ = ["multi_head_attention_forward", "scaled_dot_product_attention"]


def _linear(x, weight, bias=None):
    from .linear import linear  # engine.nn's __init__ (run by its imports) imports this module

    return linear(x, weight, bias)


def _none_or_dtype(input) -> _dtype.dtype | None:  # noqa: A002
    if input is None:
        return None
    if isinstance(input, _Tensor):
        return input.dtype
    raise RuntimeError("input to _none_or_dtype() must be None or engine.Tensor")


def _canonical_mask(mask, mask_name: str, other_type, other_name: str, target_type,
                    check_other: bool = True):
    """A bool mask becomes an additive float mask (``-inf`` where True) of ``target_type``;
    float masks pass through. Other dtypes raise ``AssertionError``; mixing a bool and a float
    mask warns, as in torch."""
    if mask is None:
        return None
    is_float = mask.is_floating_point()
    if mask.dtype != _dtype.bool_ and not is_float:
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    if check_other and other_type is not None and mask.dtype != other_type:
        warnings.warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. Use same type for "
                      "both instead.", stacklevel=3)
    if is_float:
        return mask
    return _Tensor._wrap(np.where(mask._data, -np.inf, 0.0).astype(_dtype.to_numpy_dtype(target_type)))


def _safe_softmax(x, dim: int):
    """softmax whose rows of only ``-inf`` give zeros instead of NaN (torch's ``_safe_softmax``,
    used by the attention kernels)."""
    data = x._data
    masked_row = np.all(data == -np.inf, axis=dim, keepdims=True)
    with quiet():
        e = np.exp(data - np.where(masked_row, 0, data.max(axis=dim, keepdims=True)))
        out = np.where(masked_row, 0, e / np.where(masked_row, 1, e.sum(axis=dim, keepdims=True)))
    out = out.astype(data.dtype, copy=False)

    def backward(g):
        return (out * (g - (g * out).sum(axis=dim, keepdims=True)),)

    return result(out, "SafeSoftmaxBackward0", (x,), backward, save_output=True)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: float | None = None, enable_gqa: bool = False):
    """``softmax(Q K^T · scale + mask) V`` over the last two dims (batch dims broadcast).

    A bool ``attn_mask`` marks the positions that *take part* (True = attend); a float mask is
    added to the scores. ``is_causal`` applies a lower-triangular mask (and may not be combined
    with ``attn_mask``). Rows that attend to nothing give zeros. ``scale`` defaults to
    ``1/sqrt(E)``."""
    _check_backend(query, key, value, dropout_p, enable_gqa)
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")
    if enable_gqa:
        raise NotImplementedError("scaled_dot_product_attention: enable_gqa is not supported by engine")
    L, S = query.size(-2), key.size(-2)
    factor = 1.0 / math.sqrt(query.size(-1)) if scale is None else scale
    scores = linalg.matmul(pointwise.mul(query, factor), _shape.transpose(key, -2, -1))
    if is_causal:
        attn_mask = _Tensor._wrap(np.tril(np.ones((L, S), dtype=bool)))
    if attn_mask is not None:
        if attn_mask.dtype == _dtype.bool_:
            scores = pointwise.masked_fill(scores, _Tensor._wrap(~attn_mask._data), float("-inf"))
        else:
            scores = pointwise.add(scores, attn_mask)
    weights = _safe_softmax(scores, scores.ndim - 1)
    if dropout_p > 0.0:
        weights = _dropout(weights, dropout_p)
    return linalg.matmul(weights, value)


def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads: int) -> bool:
    """torch's rank checks; True for batched (3-D) input."""
    if query.dim() == 3:
        if key.dim() != 3 or value.dim() != 3:
            raise AssertionError("For batched (3-D) `query`, expected `key` and `value` to be 3-D but found "
                                 f"{key.dim()}-D and {value.dim()}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 2:
            raise AssertionError("For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D but "
                                 f"found {key_padding_mask.dim()}-D tensor instead")
        if attn_mask is not None and attn_mask.dim() not in (2, 3):
            raise AssertionError("For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but "
                                 f"found {attn_mask.dim()}-D tensor instead")
        return True
    if query.dim() == 2:
        if key.dim() != 2 or value.dim() != 2:
            raise AssertionError("For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found "
                                 f"{key.dim()}-D and {value.dim()}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 1:
            raise AssertionError("For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D but "
                                 f"found {key_padding_mask.dim()}-D tensor instead")
        if attn_mask is not None:
            if attn_mask.dim() not in (2, 3):
                raise AssertionError("For unbatched (2-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D "
                                     f"but found {attn_mask.dim()}-D tensor instead")
            expected = (num_heads, query.shape[0], key.shape[0])
            if attn_mask.dim() == 3 and tuple(attn_mask.shape) != expected:
                raise AssertionError(f"Expected `attn_mask` shape to be {expected} but got {attn_mask.shape}")
        return False
    raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received {query.dim()}-D query "
                         "tensor")


def _in_projection_packed(q, k, v, w, b=None) -> list:
    """q, k, v projected by the packed (3E, E) weight, in one product when they are one tensor
    (self-attention) and two when only key and value are (encoder-decoder)."""
    E = q.size(-1)
    if k is v:
        if q is k:
            proj = _linear(q, w, b).unflatten(-1, (3, E)).unsqueeze(0).transpose(0, -2).squeeze(-2).contiguous()
            return [proj[0], proj[1], proj[2]]
        w_q, w_kv = w.split([E, E * 2])
        b_q, b_kv = (None, None) if b is None else b.split([E, E * 2])
        kv = _linear(k, w_kv, b_kv).unflatten(-1, (2, E)).unsqueeze(0).transpose(0, -2).squeeze(-2).contiguous()
        return [_linear(q, w_q, b_q), kv[0], kv[1]]
    w_q, w_k, w_v = w.chunk(3)
    b_q, b_k, b_v = (None, None, None) if b is None else b.chunk(3)
    return [_linear(q, w_q, b_q), _linear(k, w_k, b_k), _linear(v, w_v, b_v)]


def _in_projection(q, k, v, w_q, w_k, w_v, b_q=None, b_k=None, b_v=None) -> tuple:
    """q, k, v projected by separate weights (``kdim``/``vdim`` differ from ``embed_dim``)."""
    Eq, Ek, Ev = q.size(-1), k.size(-1), v.size(-1)
    for name, t, shape in (("query weights", w_q, (Eq, Eq)), ("key weights", w_k, (Eq, Ek)),
                           ("value weights", w_v, (Eq, Ev)), ("query bias", b_q, (Eq,)),
                           ("key bias", b_k, (Eq,)), ("value bias", b_v, (Eq,))):
        if t is not None and tuple(t.shape) != shape:
            raise AssertionError(f"expecting {name} shape of {shape}, but got {t.shape}")
    return _linear(q, w_q, b_q), _linear(k, w_k, b_k), _linear(v, w_v, b_v)


def _check_key_padding_mask(key_padding_mask, src_len: int, bsz: int) -> None:
    if key_padding_mask.shape[0] != bsz:
        raise AssertionError(f"Expected key_padded_mask.shape[0] to be {bsz}, but got {key_padding_mask.shape[0]}")
    if key_padding_mask.shape[1] != src_len:
        raise AssertionError(f"Expected key_padded_mask.shape[1] to be {src_len}, but got "
                             f"{key_padding_mask.shape[1]}")


def _prepare_attn_mask(attn_mask, tgt_len: int, src_len: int, bsz: int, num_heads: int):
    """A 2-D mask becomes (1, L, S); a 3-D one must be (N·heads, L, S)."""
    if attn_mask.dim() == 2:
        if tuple(attn_mask.shape) != (tgt_len, src_len):
            raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but should be "
                               f"{(tgt_len, src_len)}.")
        return attn_mask.unsqueeze(0)
    if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
        raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but should be "
                           f"{(bsz * num_heads, tgt_len, src_len)}.")
    return attn_mask


def multi_head_attention_forward(query, key, value, embed_dim_to_check: int, num_heads: int, in_proj_weight,
                                 in_proj_bias, bias_k, bias_v, add_zero_attn: bool, dropout_p: float,
                                 out_proj_weight, out_proj_bias, training: bool = True, key_padding_mask=None,
                                 need_weights: bool = True, attn_mask=None, use_separate_proj_weight: bool = False,
                                 q_proj_weight=None, k_proj_weight=None, v_proj_weight=None, static_k=None,
                                 static_v=None, average_attn_weights: bool = True, is_causal: bool = False):
    """torch's ``F.multi_head_attention_forward``: (L, N, E) query, (S, N, E_k/E_v) key/value, or
    unbatched (L, E)/(S, E). Returns ``(attn_output, attn_weights)``; the weights, (N, L, S)
    averaged over heads or (N, heads, L, S), only when ``need_weights`` (else None)."""
    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask", _none_or_dtype(attn_mask), "attn_mask",
                                       query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None  # the hint alone: scaled_dot_product_attention applies the causal mask
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype, check_other=False)
        if key_padding_mask is not None:
            is_causal = False  # merged with the padding mask, it is no longer causal
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if key.shape[:2] != value.shape[:2]:
            raise AssertionError(f"key's sequence and batch dims {key.shape[:2]} do not match value's "
                                 f"{value.shape[:2]}")
    elif key.shape != value.shape:
        raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")

    q, k, v = _project(query, key, value, in_proj_weight, in_proj_bias, use_separate_proj_weight,
                       q_proj_weight, k_proj_weight, v_proj_weight)
    if attn_mask is not None:
        attn_mask = _prepare_attn_mask(attn_mask, tgt_len, src_len, bsz, num_heads)
    if bias_k is not None and bias_v is not None:
        if static_k is not None:
            raise AssertionError("bias cannot be added to static key.")
        if static_v is not None:
            raise AssertionError("bias cannot be added to static value.")
        k = _shape.cat([k, bias_k.repeat(1, bsz, 1)])
        v = _shape.cat([v, bias_v.repeat(1, bsz, 1)])
        attn_mask = None if attn_mask is None else _shape.pad(attn_mask, (0, 1))
        key_padding_mask = None if key_padding_mask is None else _shape.pad(key_padding_mask, (0, 1))
    elif bias_k is not None:
        raise AssertionError("bias_k is set but bias_v is None")
    elif bias_v is not None:
        raise AssertionError("bias_v is set but bias_k is None")

    # (L, N, E) -> (N·heads, L, head_dim): every head of every sample is one bmm batch entry.
    q = q.view(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = _heads(k, static_k, "static_k", bsz * num_heads, head_dim)
    v = _heads(v, static_v, "static_v", bsz * num_heads, head_dim)
    if add_zero_attn:
        zero = _Tensor._wrap(np.zeros((bsz * num_heads, 1, head_dim), dtype=k._data.dtype))
        k = _shape.cat([k, zero], dim=1)
        v = _shape.cat([v, zero.to(v.dtype)], dim=1)
        attn_mask = None if attn_mask is None else _shape.pad(attn_mask, (0, 1))
        key_padding_mask = None if key_padding_mask is None else _shape.pad(key_padding_mask, (0, 1))
    src_len = k.size(1)
    if key_padding_mask is not None:
        _check_key_padding_mask(key_padding_mask, src_len, bsz)
        key_padding_mask = (key_padding_mask.view(bsz, 1, 1, src_len).expand(-1, num_heads, -1, -1)
                            .reshape(bsz * num_heads, 1, src_len))
        attn_mask = key_padding_mask if attn_mask is None else pointwise.add(attn_mask, key_padding_mask)
    if not training:
        dropout_p = 0.0

    if need_weights:
        return _attend_with_weights(q, k, v, attn_mask, dropout_p, out_proj_weight, out_proj_bias,
                                    (tgt_len, bsz, embed_dim, num_heads, src_len), average_attn_weights,
                                    is_batched)
    if attn_mask is not None:
        attn_mask = attn_mask.unsqueeze(0) if attn_mask.size(0) == 1 and attn_mask.dim() == 3 \
            else attn_mask.view(bsz, num_heads, -1, src_len)
    q = q.view(bsz, num_heads, tgt_len, head_dim)
    k = k.view(bsz, num_heads, src_len, head_dim)
    v = v.view(bsz, num_heads, src_len, head_dim)
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    out = out.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
    out = _linear(out, out_proj_weight, out_proj_bias).view(tgt_len, bsz, out_proj_weight.size(0))
    return (out if is_batched else out.squeeze(1)), None


def _project(query, key, value, in_proj_weight, in_proj_bias, separate: bool, q_proj_weight, k_proj_weight,
             v_proj_weight) -> tuple:
    if not separate:
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        return tuple(_in_projection_packed(query, key, value, in_proj_weight, in_proj_bias))
    for name, w in (("q_proj_weight", q_proj_weight), ("k_proj_weight", k_proj_weight),
                    ("v_proj_weight", v_proj_weight)):
        if w is None:
            raise AssertionError(f"use_separate_proj_weight is True but {name} is None")
    b_q, b_k, b_v = (None, None, None) if in_proj_bias is None else in_proj_bias.chunk(3)
    return _in_projection(query, key, value, q_proj_weight, k_proj_weight, v_proj_weight, b_q, b_k, b_v)


def _heads(t, static, name: str, batch_heads: int, head_dim: int):
    """(S, N, E) -> (N·heads, S, head_dim), or the caller's precomputed ``static`` tensor."""
    if static is None:
        return t.view(t.shape[0], batch_heads, head_dim).transpose(0, 1)
    if static.size(0) != batch_heads:
        raise AssertionError(f"expecting {name}.size(0) of {batch_heads}, but got {static.size(0)}")
    if static.size(2) != head_dim:
        raise AssertionError(f"expecting {name}.size(2) of {head_dim}, but got {static.size(2)}")
    return static


def _attend_with_weights(q, k, v, attn_mask, dropout_p: float, out_proj_weight, out_proj_bias, dims: tuple,
                         average_attn_weights: bool, is_batched: bool) -> tuple:
    """torch's explicit path: scores = (q/sqrt(E)) k^T + mask, softmax, dropout, weights·v."""
    tgt_len, bsz, embed_dim, num_heads, src_len = dims
    q_scaled = pointwise.mul(q, math.sqrt(1.0 / float(q.shape[-1])))
    weights = linalg.bmm(q_scaled, _shape.transpose(k, -2, -1))
    if attn_mask is not None:
        weights = pointwise.add(attn_mask, weights)
    weights = reduction.softmax(weights, -1)
    if dropout_p > 0.0:
        weights = _dropout(weights, p=dropout_p)
    out = linalg.bmm(weights, v)
    out = out.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
    out = _linear(out, out_proj_weight, out_proj_bias)
    out = out.view(tgt_len, bsz, out.size(1))
    weights = weights.view(bsz, num_heads, tgt_len, src_len)
    if average_attn_weights:
        weights = weights.mean(dim=1)
    if not is_batched:
        out, weights = out.squeeze(1), weights.squeeze(0)
    return out, weights
