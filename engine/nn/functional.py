"""engine.nn.functional: stateless neural-network ops (torch.nn.functional's names)."""

from __future__ import annotations

import engine._ops.linalg as _linalg
import engine._ops.shape as _shape

from ._functional.activation import (
    celu,
    elu,
    gelu,
    glu,
    hardsigmoid,
    hardswish,
    hardtanh,
    leaky_relu,
    log_softmax,
    logsigmoid,
    mish,
    relu,
    relu6,
    selu,
    sigmoid,
    silu,
    softmax,
    softplus,
    softsign,
    tanh,
    tanhshrink,
)
from ._functional.activation_more import hardshrink, prelu, rrelu, softmin, softshrink, threshold
from ._functional.attention import multi_head_attention_forward, scaled_dot_product_attention
from ._functional.conv import conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d, conv_transpose3d
from ._functional.ctc import ctc_loss
from ._functional.distance import cosine_similarity, normalize, pairwise_distance
from ._functional.dropout import dropout, dropout2d
from ._functional.loss import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cross_entropy,
    l1_loss,
    mse_loss,
    nll_loss,
)
from ._functional.loss_more import (
    cosine_embedding_loss,
    gaussian_nll_loss,
    hinge_embedding_loss,
    huber_loss,
    kl_div,
    margin_ranking_loss,
    multi_margin_loss,
    multilabel_margin_loss,
    multilabel_soft_margin_loss,
    poisson_nll_loss,
    smooth_l1_loss,
    soft_margin_loss,
    triplet_margin_loss,
    triplet_margin_with_distance_loss,
)
from ._functional.misc_more import (
    alpha_dropout,
    bilinear,
    dropout1d,
    dropout3d,
    feature_alpha_dropout,
    gumbel_softmax,
    rms_norm,
)
from ._functional.normalization import batch_norm, group_norm, instance_norm, layer_norm, local_response_norm
from ._functional.pooling import (
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_max_pool2d,
    avg_pool1d,
    avg_pool2d,
    max_pool1d,
    max_pool2d,
)
from ._functional.pooling3d import adaptive_max_pool1d, avg_pool3d, max_pool3d
from ._functional.pooling_more import (
    adaptive_avg_pool3d,
    adaptive_max_pool3d,
    adaptive_max_pool3d_with_indices,
    fractional_max_pool2d,
    fractional_max_pool2d_with_indices,
    fractional_max_pool3d,
    fractional_max_pool3d_with_indices,
    lp_pool1d,
    lp_pool2d,
    lp_pool3d,
)
from ._functional.sampling import (
    affine_grid,
    channel_shuffle,
    fold,
    grid_sample,
    interpolate,
    pad,
    pixel_shuffle,
    pixel_unshuffle,
    unfold,
)
from ._functional.sparse import embedding, embedding_bag, one_hot
from ._functional.unpool import (
    adaptive_max_pool1d_with_indices,
    adaptive_max_pool2d_with_indices,
    max_pool1d_with_indices,
    max_pool2d_with_indices,
    max_pool3d_with_indices,
    max_unpool1d,
    max_unpool2d,
    max_unpool3d,
)

__all__ = [
    "adaptive_avg_pool2d", "avg_pool2d", "batch_norm", "binary_cross_entropy",
    "binary_cross_entropy_with_logits", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
    "conv_transpose3d", "cross_entropy", "dropout", "dropout2d",
    "embedding", "gelu", "l1_loss", "layer_norm", "leaky_relu", "linear", "log_softmax", "max_pool2d",
    "mse_loss", "multi_head_attention_forward", "nll_loss", "one_hot", "pad", "relu",
    "scaled_dot_product_attention", "sigmoid", "softmax", "tanh",
    # activations, distances, resampling, 1-D pools, group/instance/local-response norms
    "adaptive_avg_pool1d", "adaptive_max_pool2d", "avg_pool1d", "celu", "channel_shuffle", "cosine_similarity",
    "elu", "fold", "glu", "group_norm", "hardsigmoid", "hardswish", "hardtanh", "instance_norm", "interpolate",
    "local_response_norm", "logsigmoid", "max_pool1d", "mish", "normalize", "pairwise_distance", "pixel_shuffle",
    "pixel_unshuffle", "relu6", "selu", "silu", "softplus", "softsign", "tanhshrink", "unfold", "affine_grid",
    "grid_sample",
    # the remaining losses
    "cosine_embedding_loss", "gaussian_nll_loss", "hinge_embedding_loss", "huber_loss", "kl_div",
    "margin_ranking_loss", "multi_margin_loss", "multilabel_margin_loss", "multilabel_soft_margin_loss",
    "poisson_nll_loss", "smooth_l1_loss", "soft_margin_loss", "triplet_margin_loss",
    "triplet_margin_with_distance_loss", "ctc_loss",
    # the remaining activations, norms, dropouts
    "alpha_dropout", "bilinear", "dropout1d", "dropout3d", "feature_alpha_dropout", "gumbel_softmax", "hardshrink",
    "prelu", "rms_norm", "rrelu", "softmin", "softshrink", "threshold",
    "adaptive_max_pool1d", "avg_pool3d", "embedding_bag", "max_pool3d",
    # unpooling, the *_with_indices spellings, 3-D adaptive, power-average and fractional pools
    "adaptive_avg_pool3d", "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
    "adaptive_max_pool3d", "adaptive_max_pool3d_with_indices", "fractional_max_pool2d",
    "fractional_max_pool2d_with_indices", "fractional_max_pool3d", "fractional_max_pool3d_with_indices",
    "lp_pool1d", "lp_pool2d", "lp_pool3d", "max_pool1d_with_indices", "max_pool2d_with_indices",
    "max_pool3d_with_indices", "max_unpool1d", "max_unpool2d", "max_unpool3d",
]


def linear(input, weight, bias=None):  # noqa: A002
    """``input @ weight.T + bias`` recorded as torch records it: ``AddmmBackward0`` for 2-D input
    with a bias, ``ViewBackward0(AddmmBackward0)`` for other ranks (the rows folded into one
    matrix); without a bias ``mm`` (2-D) or ``matmul``."""
    w_t = _shape.t(weight)
    if bias is None:
        return _linalg.mm(input, w_t) if input.ndim == 2 else _linalg.matmul(input, w_t)
    if input.ndim == 2:
        return _linalg.addmm(bias, input, w_t)
    rows = _shape.reshape(input, -1, input.shape[-1]) if input.ndim else input
    out = _linalg.addmm(bias, rows, w_t)
    return _shape.view(out, *input.shape[:-1], weight.shape[0])

