"""``engine.nn.utils``: gradient clipping, parameter/vector conversion, pruning (``prune``) (torch.nn.utils)."""

import engine.nn.utils.parametrizations as parametrizations
import engine.nn.utils.parametrize as parametrize
import engine.nn.utils.prune as prune
import engine.nn.utils.rnn as rnn
import engine.nn.utils.stateless as stateless

from .clip_grad import clip_grad_norm, clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm
from .convert_parameters import parameters_to_vector, vector_to_parameters
from .fusion import fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval, fuse_linear_bn_weights
from .init import skip_init
from .spectral_norm import remove_spectral_norm, spectral_norm
from .weight_norm import remove_weight_norm, weight_norm

__all__ = [
    "clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm",
    "parameters_to_vector", "parametrizations", "parametrize", "prune", "remove_spectral_norm", "remove_weight_norm",
    "rnn", "spectral_norm", "stateless", "vector_to_parameters", "weight_norm",
    "fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights", "skip_init",
]
