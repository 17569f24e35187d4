"""engine.nn.functional: stateless neural-network ops (torch.nn.functional's names)."""

# ruff: noqa: F401 - a namespace: every import below is a re-export (``__all__`` is derived from them)
from __future__ import annotations

from ._functional.activation import (
    celu,
    elu,
    gelu,
    glu,
    gumbel_softmax,
    hardshrink,
    hardsigmoid,
    hardswish,
    hardtanh,
    leaky_relu,
    log_softmax,
    logsigmoid,
    mish,
    prelu,
    relu,
    relu6,
    rrelu,
    selu,
    sigmoid,
    silu,
    softmax,
    softmin,
    softplus,
    softshrink,
    softsign,
    tanh,
    tanhshrink,
    threshold,
)
from ._functional.attention import multi_head_attention_forward, scaled_dot_product_attention
from ._functional.conv import conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d, conv_transpose3d
from ._functional.ctc import ctc_loss
from ._functional.distance import cosine_similarity, normalize, pairwise_distance
from ._functional.dropout import alpha_dropout, dropout, dropout1d, dropout2d, dropout3d, feature_alpha_dropout
from ._functional.linear import bilinear, linear
from ._functional.loss import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cosine_embedding_loss,
    cross_entropy,
    gaussian_nll_loss,
    hinge_embedding_loss,
    huber_loss,
    kl_div,
    l1_loss,
    margin_ranking_loss,
    mse_loss,
    multi_margin_loss,
    multilabel_margin_loss,
    multilabel_soft_margin_loss,
    nll_loss,
    poisson_nll_loss,
    smooth_l1_loss,
    soft_margin_loss,
    triplet_margin_loss,
    triplet_margin_with_distance_loss,
)
from ._functional.normalization import batch_norm, group_norm, instance_norm, layer_norm, local_response_norm, rms_norm
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
from ._functional.pooling_adaptive3d_lp_fractional import (
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

# every name imported above is public: the export list is derived from the imports, not kept twice
__all__ = sorted(name for name in globals() if not name.startswith("_") and name != "annotations")
