"""``MultiheadAttention`` (torch's parameters, names and slow path) and the ``Linear`` subclass
torch uses for its output projection."""

from __future__ import annotations

from typing import Any

import engine.nn._functional.attention as _attention
import engine.nn.init as init

from ..._creation import empty
from ..._tensor import Tensor
from .._functional._utils import shape_str
from ..parameter import Parameter
from .linear import Linear
from .module import Module

__all__ = ["MultiheadAttention", "NonDynamicallyQuantizableLinear"]


class NonDynamicallyQuantizableLinear(Linear):
    """A ``Linear`` under another name: torch's type for ``MultiheadAttention.out_proj`` (it only
    steers quantization), kept so reprs and ``type(...).__name__`` match torch's."""


class MultiheadAttention(Module):
    """``MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O`` with
    ``head_i = softmax(Q W_i^Q (K W_i^K)^T / sqrt(d_head) + mask) V W_i^V``.

    Parameters as torch's: ``in_proj_weight`` (3E, E) and ``in_proj_bias`` (3E) when key and
    value have ``embed_dim`` features, else ``q_proj_weight``, ``k_proj_weight`` (E, kdim),
    ``v_proj_weight`` (E, vdim); ``out_proj`` a ``NonDynamicallyQuantizableLinear(E, E)``;
    ``bias_k``/``bias_v`` (1, 1, E) with ``add_bias_kv``. Weights start Xavier-uniform, biases 0.

    ``forward(query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
    average_attn_weights=True, is_causal=False)`` returns ``(attn_output, attn_weights)`` with
    torch's shapes and numbers: masks may be bool (True = masked out) or additive float;
    ``is_causal`` is a hint that needs ``attn_mask`` too. A query whose last dim is not
    ``embed_dim`` raises ``AssertionError`` naming the layer and both shapes.

    Example::

        >>> mha = engine.nn.MultiheadAttention(8, 2, batch_first=True)
        >>> x = engine.randn(3, 5, 8)
        >>> out, weights = mha(x, x, x)
        >>> out.shape, weights.shape
        (engine.Size([3, 5, 8]), engine.Size([3, 5, 5]))
    """

    __constants__ = ["batch_first"]

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: int | None = None,
                 vdim: int | None = None, batch_first: bool = False, device: Any = None, dtype: Any = None) -> None:
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                             f"num_heads={num_heads} instead")
        super().__init__()
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != self.embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        kw = {"device": device, "dtype": dtype}
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = Parameter(empty((embed_dim, embed_dim), **kw))
            self.k_proj_weight = Parameter(empty((embed_dim, self.kdim), **kw))
            self.v_proj_weight = Parameter(empty((embed_dim, self.vdim), **kw))
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = Parameter(empty((3 * embed_dim, embed_dim), **kw))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(empty(3 * embed_dim, **kw))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **kw)
        if add_bias_kv:
            self.bias_k = Parameter(empty((1, 1, embed_dim), **kw))
            self.bias_v = Parameter(empty((1, 1, embed_dim), **kw))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        """Xavier-uniform projections, zero biases, Xavier-normal ``bias_k``/``bias_v``."""
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def forward(self, query: Tensor, key: Tensor, value: Tensor, key_padding_mask: Tensor | None = None,
                need_weights: bool = True, attn_mask: Tensor | None = None, average_attn_weights: bool = True,
                is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
        """Attend from ``query`` (L, N, E) — (N, L, E) with ``batch_first``, (L, E) unbatched —
        to ``key``/``value`` (S, N, kdim/vdim). ``key_padding_mask`` (N, S) marks keys to ignore;
        ``attn_mask`` (L, S) or (N·heads, L, S) masks or biases each score. Returns the output
        shaped like ``query`` and, when ``need_weights``, the attention weights (N, L, S),
        or (N, heads, L, S) without ``average_attn_weights``; else None."""
        for mask in (attn_mask, key_padding_mask):  # torch's first look at the masks
            if mask is not None and not isinstance(mask, Tensor):
                raise TypeError("is_floating_point(): argument 'input' (position 1) must be Tensor, not "
                                f"{type(mask).__name__}")
        is_batched = query.dim() == 3
        key_padding_mask = _attention._canonical_mask(key_padding_mask, "key_padding_mask",
                                                      _attention._none_or_dtype(attn_mask), "attn_mask", query.dtype)
        attn_mask = _attention._canonical_mask(attn_mask, "attn_mask", None, "", query.dtype, check_other=False)
        query_shape = query.shape
        if self.batch_first and is_batched:
            # Transposing once per distinct tensor keeps "query is key" true for the packed path.
            if key is value:
                if query is key:
                    query = key = value = query.transpose(1, 0)
                else:
                    query, key = (x.transpose(1, 0) for x in (query, key))
                    value = key
            else:
                query, key, value = (x.transpose(1, 0) for x in (query, key, value))
        separate = {} if self._qkv_same_embed_dim else {
            "use_separate_proj_weight": True, "q_proj_weight": self.q_proj_weight,
            "k_proj_weight": self.k_proj_weight, "v_proj_weight": self.v_proj_weight}
        try:
            attn_output, attn_weights = _attention.multi_head_attention_forward(
                query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight, self.in_proj_bias,
                self.bias_k, self.bias_v, self.add_zero_attn, self.dropout, self.out_proj.weight,
                self.out_proj.bias, training=self.training, key_padding_mask=key_padding_mask,
                need_weights=need_weights, attn_mask=attn_mask, average_attn_weights=average_attn_weights,
                is_causal=is_causal, **separate)
        except AssertionError as err:
            if not str(err).startswith("was expecting embedding dimension"):
                raise
            raise AssertionError(f"{err}: {self!r} expects query of shape {self._expected_query()} but got query "
                                 f"of shape {shape_str(query_shape)}") from None
        if self.batch_first and is_batched:
            attn_output = attn_output.transpose(1, 0)
        return attn_output, attn_weights

    def _expected_query(self) -> str:
        return f"({'N, L' if self.batch_first else 'L, N'}, {self.embed_dim}) or (L, {self.embed_dim})"

    def merge_masks(self, attn_mask: Tensor | None, key_padding_mask: Tensor | None, query: Tensor
                    ) -> tuple[Tensor | None, int | None]:
        """One mask of shape (N, heads, L, L) from ``attn_mask`` and ``key_padding_mask`` (already
        canonical floats) and its type: 1 for padding only, 2 otherwise, None without masks."""
        mask_type: int | None = None
        merged: Tensor | None = None
        if key_padding_mask is not None:
            mask_type, merged = 1, key_padding_mask
        if attn_mask is not None:
            batch_size, seq_len, _ = query.shape
            mask_type = 2
            if attn_mask.dim() == 3:
                expanded = attn_mask.view(batch_size, -1, seq_len, seq_len)
            else:
                expanded = attn_mask.view(1, 1, seq_len, seq_len).expand(batch_size, self.num_heads, -1, -1)
            merged = expanded
            if key_padding_mask is not None:
                merged = expanded + key_padding_mask.view(batch_size, 1, 1, seq_len).expand(-1, self.num_heads, -1, -1)
        return merged, mask_type
