"""The ``torch.*`` spellings of ``nn.functional`` ops and of Tensor methods.

torch exposes many functional ops at top level with the ATen signature, which can differ from
``nn.functional``'s: ``torch.batch_norm(input, weight, bias, running_mean, running_var, training,
momentum, eps, cudnn_enabled)`` (F: running stats first), ``torch.embedding(weight, indices)``
(swapped), ``torch.dropout(input, p, train)`` (all required), losses with an integer
``reduction`` (0 none, 1 mean, 2 sum; omitted: none, not F's mean), ``torch.adaptive_max_pool1d``
returning the indices too.
Each alias here takes torch's top-level signature and calls the engine's functional.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import engine.nn.functional as F  # noqa: N812 - torch's own spelling

from .constructors import triu_indices
from .reduction import norm

# The names this module adds to torch's top-level namespace (engine/__init__.py star-imports
# them: this list is the one place they are named).
__all__ = ["adaptive_avg_pool1d", "adaptive_max_pool1d", "alpha_dropout", "alpha_dropout_", "avg_pool1d",
           "batch_norm", "bilinear", "binary_cross_entropy_with_logits", "celu", "celu_", "channel_shuffle", "conv1d",
           "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "cosine_embedding_loss",
           "cosine_similarity", "ctc_loss", "dropout", "dropout_", "embedding", "feature_alpha_dropout",
           "feature_alpha_dropout_", "fill", "group_norm", "hardshrink", "hinge_embedding_loss", "instance_norm",
           "kl_div", "layer_norm", "margin_ranking_loss", "max_pool1d", "max_pool2d", "max_pool3d",
           "pairwise_distance", "pdist", "pixel_shuffle", "pixel_unshuffle", "poisson_nll_loss", "prelu", "relu_",
           "rms_norm", "rrelu", "rrelu_", "selu", "selu_", "threshold", "threshold_", "triplet_margin_loss"]

conv1d, conv2d, conv3d = F.conv1d, F.conv2d, F.conv3d
conv_transpose1d, conv_transpose2d, conv_transpose3d = F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d
pixel_shuffle, pixel_unshuffle, channel_shuffle = F.pixel_shuffle, F.pixel_unshuffle, F.channel_shuffle
cosine_similarity, pairwise_distance, bilinear = F.cosine_similarity, F.pairwise_distance, F.bilinear
prelu, hardshrink, adaptive_avg_pool1d = F.prelu, F.hardshrink, F.adaptive_avg_pool1d


def _reduction(value: Any, fname: str, position: int) -> str:
    """ATen's integer reduction (1 mean, 2 sum, anything else none), torch's TypeError otherwise.
    Omitted, it is 0 (none) at torch's top level: ``torch.kl_div(x, y)`` is element-wise, unlike F's."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{fname}(): argument 'reduction' (position {position}) must be int, not "
                        f"{type(value).__name__}")
    return {1: "mean", 2: "sum"}.get(value, "none")


def dropout(input, p: float, train: bool):  # noqa: A002 - torch's names
    return F.dropout(input, p, train)


def dropout_(input, p: float, train: bool):  # noqa: A002
    return F.dropout(input, p, train, inplace=True)


def alpha_dropout(input, p: float, train: bool):  # noqa: A002
    return F.alpha_dropout(input, p, train)


def alpha_dropout_(input, p: float, train: bool):  # noqa: A002
    return F.alpha_dropout(input, p, train, inplace=True)


def feature_alpha_dropout(input, p: float, train: bool):  # noqa: A002
    return F.feature_alpha_dropout(input, p, train)


def feature_alpha_dropout_(input, p: float, train: bool):  # noqa: A002
    return F.feature_alpha_dropout(input, p, train, inplace=True)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps: float = 1e-5,  # noqa: A002
               cudnn_enable: bool = True):
    return F.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input, num_groups: int, weight=None, bias=None, eps: float = 1e-5,  # noqa: A002
               cudnn_enabled: bool = True):
    return F.group_norm(input, num_groups, weight, bias, eps)


def batch_norm(input, weight, bias, running_mean, running_var, training: bool, momentum: float,  # noqa: A002
               eps: float, cudnn_enabled: bool):
    """ATen's order: affine parameters before the running statistics."""
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats: bool,  # noqa: A002
                  momentum: float, eps: float, cudnn_enabled: bool):
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def rms_norm(input, normalized_shape, weight=None, eps: float | None = None):  # noqa: A002
    return F.rms_norm(input, normalized_shape, weight, eps)


def embedding(weight, indices, padding_idx: int = -1, scale_grad_by_freq: bool = False,
              sparse: bool = False):
    """ATen's order (``weight`` first); ``padding_idx=-1`` means none, as there."""
    return F.embedding(indices, weight, None if padding_idx == -1 else padding_idx,
                       scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def threshold(input, threshold: float, value: float):  # noqa: A002
    return F.threshold(input, threshold, value)


def threshold_(input, threshold: float, value: float):  # noqa: A002
    return F.threshold(input, threshold, value, inplace=True)


def selu(input):  # noqa: A002
    return F.selu(input)


def selu_(input):  # noqa: A002
    return F.selu(input, inplace=True)


def celu(input, alpha: float = 1.0):  # noqa: A002
    return F.celu(input, alpha)


def celu_(input, alpha: float = 1.0):  # noqa: A002
    return F.celu(input, alpha, inplace=True)


def _no_generator(fname: str, generator: Any) -> None:
    if generator is not None:
        raise NotImplementedError(f"engine.{fname}: generator= is not supported (rrelu draws from the global "
                                  "generator; seed it with engine.manual_seed)")


def rrelu(input, lower: float = 0.125, upper: float = 1.0 / 3, training: bool = False,  # noqa: A002
          generator: Any = None):
    _no_generator("rrelu", generator)
    return F.rrelu(input, lower, upper, training)


def rrelu_(input, lower: float = 0.125, upper: float = 1.0 / 3, training: bool = False,  # noqa: A002
           generator: Any = None):
    _no_generator("rrelu_", generator)
    return F.rrelu(input, lower, upper, training, inplace=True)


def relu_(input):  # noqa: A002
    return input.relu_()


def _stride(stride: Any) -> Any:
    """ATen's ``stride=[]`` (the default) means the kernel size, F's ``None``."""
    return None if stride is None or (isinstance(stride, list | tuple) and len(stride) == 0) else stride


def max_pool1d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode: bool = False):  # noqa: A002
    return F.max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool2d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode: bool = False):  # noqa: A002
    return F.max_pool2d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool3d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode: bool = False):  # noqa: A002
    return F.max_pool3d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def avg_pool1d(input, kernel_size, stride=(), padding=0, ceil_mode: bool = False,  # noqa: A002
               count_include_pad: bool = True):
    return F.avg_pool1d(input, kernel_size, _stride(stride), padding, ceil_mode, count_include_pad)


def adaptive_max_pool1d(input, output_size):  # noqa: A002
    """``(values, indices)``: ATen's op always returns both."""
    return F.adaptive_max_pool1d(input, output_size, return_indices=True)


def pdist(input, p: float = 2.0):  # noqa: A002
    """The p-norm distances between the rows of an (N, M) tensor: the upper triangle of the
    distance matrix, row by row (length N(N-1)/2), as torch's ``pdist``; differentiable through
    indexing and ``norm``."""
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    i, j = triu_indices(input.shape[0], input.shape[0], 1)
    return norm(input[i] - input[j], p, dim=1)


def kl_div(input, target, reduction: int = 0, *, log_target: bool = False):  # noqa: A002
    """ATen's ``kl_div``: reduction 1 is a plain mean (no ``batchmean`` warning: that is F's),
    omitted it is none."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return F.kl_div(input, target, reduction=_reduction(reduction, "kl_div", 3), log_target=log_target)


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction: int = 0):  # noqa: A002
    how = _reduction(reduction, "binary_cross_entropy_with_logits", 5)
    return F.binary_cross_entropy_with_logits(input, target, weight, reduction=how, pos_weight=pos_weight)


def cosine_embedding_loss(input1, input2, target, margin: float = 0.0, reduction: int = 0):
    return F.cosine_embedding_loss(input1, input2, target, margin,
                                   reduction=_reduction(reduction, "cosine_embedding_loss", 5))


def hinge_embedding_loss(input, target, margin: float = 1.0, reduction: int = 0):  # noqa: A002
    return F.hinge_embedding_loss(input, target, margin, reduction=_reduction(reduction, "hinge_embedding_loss", 4))


def margin_ranking_loss(input1, input2, target, margin: float = 0.0, reduction: int = 0):
    return F.margin_ranking_loss(input1, input2, target, margin,
                                 reduction=_reduction(reduction, "margin_ranking_loss", 5))


def triplet_margin_loss(anchor, positive, negative, margin: float = 1.0, p: float = 2.0, eps: float = 1e-6,
                        swap: bool = False, reduction: int = 0):
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                 reduction=_reduction(reduction, "triplet_margin_loss", 8))


def poisson_nll_loss(input, target, log_input: bool, full: bool, eps: float, reduction: int):  # noqa: A002
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps,
                              reduction=_reduction(reduction, "poisson_nll_loss", 6))


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank: int = 0, reduction: int = 0,
             zero_infinity: bool = False):
    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                      _reduction(reduction, "ctc_loss", 6), zero_infinity)


# --- torch.<method>(tensor, ...) for in-place and other Tensor methods -----------------------------

METHOD_ALIASES = (
    "abs_", "acos_", "acosh_", "arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_", "arctanh_", "asin_",
    "asinh_", "atan_", "atanh_", "ceil_", "clamp_", "clamp_max_", "clamp_min_", "clip_", "cos_", "cosh_",
    "deg2rad_", "detach", "detach_", "erf_", "erfc_", "exp2_", "exp_", "expm1_", "fill_", "fix_", "floor_", "frac_",
    "gcd_", "i0_", "lcm_", "ldexp_", "log10_", "log1p_", "log2_", "log_", "logit_", "nan_to_num_", "neg_",
    "negative_", "rad2deg_", "reciprocal_", "round_", "rsqrt_", "sigmoid_", "sin_", "sinc_", "sinh_", "sqrt_",
    "square_", "tan_", "tanh_", "trunc_", "xlogy_", "zero_", "addmv_", "get_device", "adjoint", "is_same_size",
    "is_conj", "is_neg",
    "resolve_conj", "resolve_neg", "conj_physical", "conj_physical_", "narrow_copy", "unsafe_chunk", "unsafe_split",
    "unsafe_split_with_sizes", "resize_as_",
)


def method_alias(name: str) -> Callable:
    """``torch.<name>(input, *args)``: ``input.<name>(*args)``."""
    def fn(input, *args: Any, **kwargs: Any):  # noqa: A002
        return getattr(input, name)(*args, **kwargs)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``input.{name}(*args, **kwargs)`` (torch.{name})."
    return fn


def fill(input, value):  # noqa: A002
    """A new tensor shaped and typed as ``input``, filled with ``value`` (out of place)."""
    return input.clone().fill_(value)
