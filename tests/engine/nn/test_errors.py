"""Error paths: the functional ops raise torch's exception types and messages; the layers raise
torch's message extended with the layer and both shapes."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import engine


def _t(lib, shape, dtype=None, seed=0, low=None, high=None, requires_grad=False):
    rng = np.random.default_rng(seed)
    data = rng.uniform(low, high, shape) if low is not None else rng.standard_normal(shape)
    data = data.astype(np.float32 if dtype is None else dtype)
    return lib.tensor(data, requires_grad=requires_grad)


def _idx(lib, values, dtype=np.int64):
    return lib.tensor(np.asarray(values, dtype=dtype))


X4 = (2, 3, 8, 8)
W4 = (4, 3, 3, 3)

# (id, call(lib) -> raises). Each is run on torch and on engine; type and message must agree.
CASES = [
    # conv
    ("conv_channels", lambda L: L.nn.functional.conv2d(_t(L, (2, 2, 8, 8)), _t(L, W4))),
    ("conv_input_rank", lambda L: L.nn.functional.conv2d(_t(L, (8, 8)), _t(L, W4))),
    ("conv1d_input_rank", lambda L: L.nn.functional.conv1d(_t(L, X4), _t(L, (4, 3, 3)))),
    ("conv_weight_rank", lambda L: L.nn.functional.conv2d(_t(L, X4), _t(L, (3, 3, 3)))),
    ("conv_groups_input", lambda L: L.nn.functional.conv2d(_t(L, X4), _t(L, W4), groups=2)),
    ("conv_groups_weight", lambda L: L.nn.functional.conv2d(_t(L, X4), _t(L, (4, 1, 3, 3)), groups=3)),
    ("conv_bias_shape", lambda L: L.nn.functional.conv2d(_t(L, X4), _t(L, W4), _t(L, (3,)))),
    ("conv_kernel_too_big", lambda L: L.nn.functional.conv2d(_t(L, X4), _t(L, (4, 3, 9, 9)))),
    ("conv1d_kernel_too_big", lambda L: L.nn.functional.conv1d(_t(L, (2, 3, 2)), _t(L, (4, 3, 3)))),
    ("conv_stride_zero", lambda L: L.nn.functional.conv2d(_t(L, X4), _t(L, W4), stride=0)),
    ("conv_negative_padding", lambda L: L.nn.functional.conv2d(_t(L, X4), _t(L, W4), padding=-1)),
    ("conv_dilation_zero", lambda L: L.nn.functional.conv2d(_t(L, X4), _t(L, W4), dilation=0)),
    ("conv_groups_zero", lambda L: L.nn.functional.conv2d(_t(L, X4), _t(L, W4), groups=0)),
    ("conv_same_strided", lambda L: L.nn.functional.conv2d(_t(L, X4), _t(L, W4), stride=2, padding="same")),
    ("conv_padding_string", lambda L: L.nn.functional.conv2d(_t(L, X4), _t(L, W4), padding="foo")),
    ("conv_stride_length", lambda L: L.nn.functional.conv2d(_t(L, X4), _t(L, W4), stride=(1, 2, 3))),
    ("conv_padding_length", lambda L: L.nn.functional.conv2d(_t(L, X4), _t(L, W4), padding=(1, 2, 3))),
    ("conv_bias_dtype", lambda L: L.nn.functional.conv2d(_t(L, X4), _t(L, W4), _t(L, (4,), np.float64))),
    # pooling
    ("pool_pad_too_big", lambda L: L.nn.functional.max_pool2d(_t(L, X4), 3, padding=2)),
    ("avgpool_pad_too_big", lambda L: L.nn.functional.avg_pool2d(_t(L, X4), 3, padding=2)),
    ("pool_rank", lambda L: L.nn.functional.max_pool2d(_t(L, (8, 8)), 2)),
    ("pool_empty", lambda L: L.nn.functional.max_pool2d(_t(L, (2, 3, 0, 4)), 2)),
    ("pool_stride_zero", lambda L: L.nn.functional.max_pool2d(_t(L, X4), 2, stride=0)),
    ("pool_kernel_zero", lambda L: L.nn.functional.avg_pool2d(_t(L, X4), (0, 2))),
    ("pool_negative_stride", lambda L: L.nn.functional.max_pool2d(_t(L, X4), 2, stride=-1)),
    ("pool_negative_padding", lambda L: L.nn.functional.max_pool2d(_t(L, X4), 2, padding=-1)),
    ("avgpool_negative_padding", lambda L: L.nn.functional.avg_pool2d(_t(L, X4), 2, padding=-1)),
    ("pool_dilation_zero", lambda L: L.nn.functional.max_pool2d(_t(L, X4), 3, dilation=0)),
    ("pool_too_small", lambda L: L.nn.functional.max_pool2d(_t(L, X4), 9)),
    ("avgpool_too_small", lambda L: L.nn.functional.avg_pool2d(_t(L, X4), 9)),
    ("pool_kernel_tuple", lambda L: L.nn.functional.max_pool2d(_t(L, X4), (2, 2, 2))),
    ("pool_stride_tuple", lambda L: L.nn.functional.max_pool2d(_t(L, X4), 2, stride=(1, 1, 1))),
    ("pool_padding_tuple", lambda L: L.nn.functional.max_pool2d(_t(L, X4), 2, padding=(1, 1, 1))),
    ("pool_dilation_tuple", lambda L: L.nn.functional.max_pool2d(_t(L, X4), 2, dilation=(1, 1, 1))),
    ("avgpool_kernel_tuple", lambda L: L.nn.functional.avg_pool2d(_t(L, X4), (2, 2, 2))),
    ("avgpool_divisor_zero", lambda L: L.nn.functional.avg_pool2d(_t(L, X4), 2, divisor_override=0)),
    ("adaptive_rank", lambda L: L.nn.functional.adaptive_avg_pool2d(_t(L, (8, 8)), 3)),
    ("adaptive_size_len", lambda L: L.nn.functional.adaptive_avg_pool2d(_t(L, X4), (1, 2, 3))),
    ("adaptive_empty", lambda L: L.nn.functional.adaptive_avg_pool2d(_t(L, (2, 3, 0, 4)), 2)),
    ("adaptive_negative", lambda L: L.nn.functional.adaptive_avg_pool2d(_t(L, X4), -1)),
    # normalisation
    ("bn_one_value", lambda L: L.nn.functional.batch_norm(_t(L, (1, 3, 1)), None, None, training=True)),
    ("bn_rank", lambda L: L.nn.functional.batch_norm(_t(L, (4,)), None, None, training=True)),
    ("bn_1d_eval", lambda L: L.nn.functional.batch_norm(_t(L, (3,)), L.zeros(3), L.ones(3))),
    ("bn_running_mean", lambda L: L.nn.functional.batch_norm(_t(L, (2, 3, 4)), L.zeros(4), L.ones(3), training=True)),
    ("bn_running_var", lambda L: L.nn.functional.batch_norm(_t(L, (2, 3, 4)), L.zeros(3), L.ones(4), training=True)),
    ("bn_weight", lambda L: L.nn.functional.batch_norm(_t(L, (2, 3, 4)), None, None, L.ones(4), training=True)),
    ("bn_bias", lambda L: L.nn.functional.batch_norm(_t(L, (2, 3, 4)), None, None, None, L.ones(4), training=True)),
    ("bn_eval_without_stats", lambda L: L.nn.functional.batch_norm(_t(L, (2, 3, 4)), None, None)),
    ("bn_mixed_dtype", lambda L: L.nn.functional.batch_norm(_t(L, (2, 3, 4), np.float64), L.zeros(3), L.ones(3),
                                                            training=True)),
    ("bn_param_dtype", lambda L: L.nn.functional.batch_norm(_t(L, (2, 3, 4)), L.zeros(3).double(),
                                                            L.ones(3).double(), training=True)),
    ("ln_input", lambda L: L.nn.functional.layer_norm(_t(L, (2, 3, 4)), (5,))),
    ("ln_too_many_dims", lambda L: L.nn.functional.layer_norm(_t(L, (2, 3, 4)), (2, 3, 4, 5))),
    ("ln_weight", lambda L: L.nn.functional.layer_norm(_t(L, (2, 3, 4)), (3, 4), L.ones(4))),
    ("ln_bias", lambda L: L.nn.functional.layer_norm(_t(L, (2, 3, 4)), (3, 4), L.ones(3, 4), L.ones(4))),
    ("ln_empty_shape", lambda L: L.nn.functional.layer_norm(_t(L, (2, 3, 4)), ())),
    # activations
    ("gelu_approximate", lambda L: L.nn.functional.gelu(_t(L, (3,)), approximate="foo")),
    ("gelu_int", lambda L: L.nn.functional.gelu(_idx(L, [1, 2]))),
    ("leaky_relu_int", lambda L: L.nn.functional.leaky_relu(_idx(L, [1, 2]))),
    # dropout
    ("dropout_p", lambda L: L.nn.functional.dropout(_t(L, (3, 4)), 1.5)),
    ("dropout2d_p", lambda L: L.nn.functional.dropout2d(_t(L, (3, 4, 2, 2)), -0.1)),
    ("dropout2d_rank", lambda L: L.nn.functional.dropout2d(_t(L, (3,)))),
    ("dropout_module_p", lambda L: L.nn.Dropout(2)),
    # embedding / one_hot
    ("embedding_range", lambda L: L.nn.functional.embedding(_idx(L, [5]), _t(L, (5, 3)))),
    ("embedding_negative", lambda L: L.nn.functional.embedding(_idx(L, [-1]), _t(L, (5, 3)))),
    ("embedding_weight_rank", lambda L: L.nn.functional.embedding(_idx(L, [1]), _t(L, (5,)))),
    ("embedding_padding_idx", lambda L: L.nn.functional.embedding(_idx(L, [1]), _t(L, (5, 3)), padding_idx=5)),
    ("embedding_module_padding_idx", lambda L: L.nn.Embedding(5, 3, padding_idx=-6)),
    ("embedding_module_padding_idx_hi", lambda L: L.nn.Embedding(5, 3, padding_idx=5)),
    ("embedding_weight_shape", lambda L: L.nn.Embedding(5, 3, _weight=L.ones(4, 3))),
    ("embedding_pretrained_rank", lambda L: L.nn.Embedding.from_pretrained(L.ones(4))),
    ("one_hot_dtype", lambda L: L.nn.functional.one_hot(_idx(L, [1], np.int32))),
    ("one_hot_negative", lambda L: L.nn.functional.one_hot(_idx(L, [-1]))),
    ("one_hot_too_big", lambda L: L.nn.functional.one_hot(_idx(L, [3]), 2)),
    ("one_hot_empty", lambda L: L.nn.functional.one_hot(_idx(L, []))),
    # losses
    ("reduction", lambda L: L.nn.functional.mse_loss(_t(L, (3,)), _t(L, (3,)), reduction="foo")),
    ("reduction_module", lambda L: L.nn.L1Loss(reduction="foo")(_t(L, (3,)), _t(L, (3,)))),
    ("mse_broadcast", lambda L: L.nn.functional.mse_loss(_t(L, (4, 5)), _t(L, (4, 4)))),
    ("mse_weight_shape", lambda L: L.nn.functional.mse_loss(_t(L, (4, 5)), _t(L, (4, 5)), weight=_t(L, (5,)))),
    ("l1_weight_shape", lambda L: L.nn.functional.l1_loss(_t(L, (4, 5)), _t(L, (4, 5)), weight=_t(L, (5,)))),
    ("nll_target_range", lambda L: L.nn.functional.nll_loss(_t(L, (4, 5)), _idx(L, [1, 2, 3, 7]))),
    ("nll_target_negative", lambda L: L.nn.functional.nll_loss(_t(L, (4, 5)), _idx(L, [1, 2, 3, -1]))),
    ("nll_batch", lambda L: L.nn.functional.nll_loss(_t(L, (4, 5)), _idx(L, [1, 2, 3]))),
    ("nll_target_dtype", lambda L: L.nn.functional.nll_loss(_t(L, (4, 5)), _t(L, (4,)))),
    ("nll_target_int32", lambda L: L.nn.functional.nll_loss(_t(L, (4, 5)), _idx(L, [1, 2, 3, 0], np.int32))),
    ("nll_weight_size", lambda L: L.nn.functional.nll_loss(_t(L, (4, 5)), _idx(L, [1, 2, 3, 0]), _t(L, (4,)))),
    ("nll_1d_target", lambda L: L.nn.functional.nll_loss(_t(L, (5,)), _idx(L, [1, 2, 3, 0]))),
    ("nll_multi_target", lambda L: L.nn.functional.nll_loss(_t(L, (4, 5)), _idx(L, np.zeros((4, 2))))),
    ("nll_scalar_input", lambda L: L.nn.functional.nll_loss(_t(L, ()), _idx(L, 0))),
    ("nll_spatial_target", lambda L: L.nn.functional.nll_loss(_t(L, (2, 3, 4)), _idx(L, np.zeros((2, 5))))),
    ("nll_2d_target_rank", lambda L: L.nn.functional.nll_loss(_t(L, (2, 3, 4, 5)), _idx(L, np.zeros((2, 4))))),
    ("nll_weight_grad", lambda L: L.nn.functional.nll_loss(_t(L, (4, 5)), _idx(L, [1, 2, 3, 0]),
                                                           _t(L, (5,), requires_grad=True))),
    ("ce_smoothing", lambda L: L.nn.functional.cross_entropy(_t(L, (4, 5)), _idx(L, [1, 2, 3, 0]),
                                                             label_smoothing=1.5)),
    ("ce_float_target_ignore", lambda L: L.nn.functional.cross_entropy(_t(L, (4, 5)), _t(L, (4, 5), low=0, high=1),
                                                                       ignore_index=1)),
    ("ce_prob_weight", lambda L: L.nn.functional.cross_entropy(_t(L, (4, 5)), _t(L, (4, 5), low=0, high=1),
                                                               weight=_t(L, (4,)))),
    ("ce_multi_target", lambda L: L.nn.functional.cross_entropy(_t(L, (4, 5)), _t(L, (4, 4), low=0, high=1))),
    ("bce_size", lambda L: L.nn.functional.binary_cross_entropy(_t(L, (4, 5), low=0, high=1), _t(L, (5,)))),
    ("bce_range", lambda L: L.nn.functional.binary_cross_entropy(_t(L, (4, 5)) * 9, _t(L, (4, 5), low=0, high=1))),
    ("bce_dtype", lambda L: L.nn.functional.binary_cross_entropy(_t(L, (4, 5), low=0, high=1),
                                                                 _t(L, (4, 5), np.float64, low=0, high=1))),
    ("bce_weight_grad", lambda L: L.nn.functional.binary_cross_entropy(
        _t(L, (4, 5), low=0, high=1), _t(L, (4, 5), low=0, high=1), _t(L, (5,), requires_grad=True))),
    ("bcel_size", lambda L: L.nn.functional.binary_cross_entropy_with_logits(_t(L, (4, 5)), _t(L, (5,)))),
    ("bcel_weight_grad", lambda L: L.nn.functional.binary_cross_entropy_with_logits(
        _t(L, (4, 5)), _t(L, (4, 5)), _t(L, (5,), requires_grad=True))),
    ("bcel_pos_weight_grad", lambda L: L.nn.functional.binary_cross_entropy_with_logits(
        _t(L, (4, 5)), _t(L, (4, 5)), pos_weight=_t(L, (5,), requires_grad=True))),
    ("bcel_weight_broadcast", lambda L: L.nn.functional.binary_cross_entropy_with_logits(
        _t(L, (4, 5)), _t(L, (4, 5)), _t(L, (3,)))),
    # conv modules
    ("conv_module_groups", lambda L: L.nn.Conv2d(4, 4, 3, groups=0)),
    ("conv_module_in_groups", lambda L: L.nn.Conv2d(3, 4, 3, groups=2)),
    ("conv_module_out_groups", lambda L: L.nn.Conv2d(4, 3, 3, groups=2)),
    ("conv_module_padding_string", lambda L: L.nn.Conv2d(4, 4, 3, padding="full")),
    ("conv_module_same_strided", lambda L: L.nn.Conv1d(4, 4, 3, stride=2, padding="same")),
    ("conv_module_padding_mode", lambda L: L.nn.Conv2d(4, 4, 3, padding_mode="mirror")),
    # init
    ("gain_name", lambda L: L.nn.init.calculate_gain("foo")),
    ("gain_param", lambda L: L.nn.init.calculate_gain("leaky_relu", True)),
    ("fan_rank", lambda L: L.nn.init.xavier_uniform_(L.empty(3))),
    ("fan_mode", lambda L: L.nn.init.kaiming_uniform_(L.empty(3, 4), mode="fan_x")),
]


def _normalise(msg: str) -> str:
    """torch -> engine; printed sets of strings sorted (their order follows the string hash seed)."""
    def sort_set(m: re.Match) -> str:
        return "{" + ", ".join(sorted(m.group(1).split(", "))) + "}"
    return re.sub(r"\{('[^{}]*')\}", sort_set, msg.replace("torch", "engine"))


@pytest.mark.parametrize("call", [c for _, c in CASES], ids=[i for i, _ in CASES])
def test_errors_match_torch(torch, call):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception) as t_err:
            call(torch)
        with pytest.raises(Exception) as e_err:
            call(engine)
    assert type(e_err.value) is type(t_err.value)
    assert _normalise(str(e_err.value)) == _normalise(str(t_err.value))


def test_conv_dtype_mismatch_names_engine_types():
    with pytest.raises(RuntimeError, match=re.escape(
            "Input type (engine.FloatTensor) and weight type (engine.DoubleTensor) should be the same")):
        engine.nn.functional.conv2d(engine.ones(1, 1, 3, 3), engine.ones(1, 1, 2, 2, dtype=engine.float64))


def test_sparse_embedding_gradients_are_not_implemented():
    with pytest.raises(NotImplementedError, match="sparse"):
        engine.nn.functional.embedding(engine.tensor([1]), engine.ones(3, 2), sparse=True)


def test_same_padding_with_even_kernel_warns_like_torch():
    with pytest.warns(UserWarning, match="Using padding='same' with even kernel lengths") as rec:
        engine.nn.functional.conv2d(engine.ones(1, 1, 4, 4), engine.ones(1, 1, 2, 2), padding="same")
    assert rec[0].filename == __file__  # points at the caller, not at engine internals


# --- layers: torch's message, the layer and both shapes -----------------------------------------

LAYER_CASES = [
    (lambda: engine.nn.Conv2d(3, 8, 3), (2, 4, 8, 8),
     "Given groups=1, weight of size [8, 3, 3, 3], expected input[2, 4, 8, 8] to have 3 channels, but got 4 channels "
     "instead: Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1)) expects input of shape (N, 3, H, W) or (3, H, W) but "
     "got input of shape [2, 4, 8, 8]"),
    (lambda: engine.nn.Conv2d(3, 8, 3), (3, 8),
     "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [3, 8]: Conv2d(3, 8, "
     "kernel_size=(3, 3), stride=(1, 1)) expects input of shape (N, 3, H, W) or (3, H, W) but got input of shape "
     "[3, 8]"),
    (lambda: engine.nn.Conv1d(2, 4, 3), (5, 3, 7),
     "Given groups=1, weight of size [4, 2, 3], expected input[5, 3, 7] to have 2 channels, but got 3 channels "
     "instead: Conv1d(2, 4, kernel_size=(3,), stride=(1,)) expects input of shape (N, 2, L) or (2, L) but got input "
     "of shape [5, 3, 7]"),
    (lambda: engine.nn.MaxPool2d(2), (8, 8),
     "non-empty 3D or 4D (batch mode) tensor expected for input: MaxPool2d(kernel_size=2, stride=2, padding=0, "
     "dilation=1, ceil_mode=False) expects input of shape (N, C, H, W) or (C, H, W) but got input of shape [8, 8]"),
    (lambda: engine.nn.AvgPool2d(2), (1, 2, 3, 0),
     "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:[1, 2, 3, 0]: "
     "AvgPool2d(kernel_size=2, stride=2, padding=0) expects input of shape (N, C, H, W) or (C, H, W) but got input "
     "of shape [1, 2, 3, 0]"),
    (lambda: engine.nn.AdaptiveAvgPool2d(3), (4, 5),
     "adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got [4, 5]: AdaptiveAvgPool2d(output_size=3) expects "
     "input of shape (N, C, H, W) or (C, H, W) but got input of shape [4, 5]"),
    (lambda: engine.nn.BatchNorm2d(3), (2, 3, 4),
     "expected 4D input (got 3D input): BatchNorm2d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, "
     "track_running_stats=True) expects input of shape (N, 3, H, W) but got input of shape [2, 3, 4]"),
    (lambda: engine.nn.BatchNorm1d(3), (2, 4),
     "running_mean should contain 4 elements not 3: BatchNorm1d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, "
     "track_running_stats=True) expects input of shape (N, 3) or (N, 3, L) but got input of shape [2, 4]"),
    (lambda: engine.nn.LayerNorm(5), (2, 4),
     "Given normalized_shape=[5], expected input with shape [*, 5], but got input of size[2, 4]: LayerNorm((5,), "
     "eps=1e-05, elementwise_affine=True, bias=True) expects input of shape (*, 5) but got input of shape [2, 4]"),
]


@pytest.mark.parametrize("make,shape,message", LAYER_CASES, ids=lambda v: str(v)[:30])
def test_layer_shape_errors_name_layer_and_shapes(make, shape, message):
    layer = make()
    with pytest.raises((RuntimeError, ValueError)) as err:
        layer(engine.ones(*shape))
    assert str(err.value) == message


def test_layer_shape_error_keeps_torch_type_and_message_prefix(torch):
    """The engine message starts with torch's own message for the same mistake."""
    for make_e, make_t, shape in [
        (lambda: engine.nn.Conv2d(3, 8, 3), lambda: torch.nn.Conv2d(3, 8, 3), (2, 4, 8, 8)),
        (lambda: engine.nn.BatchNorm1d(3), lambda: torch.nn.BatchNorm1d(3), (2, 3, 4, 5)),
        (lambda: engine.nn.LayerNorm(5), lambda: torch.nn.LayerNorm(5), (2, 4)),
    ]:
        with pytest.raises(Exception) as t_err:
            make_t()(torch.ones(*shape))
        with pytest.raises(Exception) as e_err:
            make_e()(engine.ones(*shape))
        assert type(e_err.value) is type(t_err.value)
        assert str(e_err.value).startswith(str(t_err.value))


def test_layer_errors_unrelated_to_shape_pass_through():
    conv = engine.nn.Conv2d(1, 1, 2)
    with pytest.raises(RuntimeError) as err:
        conv(engine.ones(1, 1, 3, 3, dtype=engine.float64))
    assert "expects input of shape" not in str(err.value)
    bn = engine.nn.BatchNorm1d(3)
    with pytest.raises(ValueError, match=r"^Expected more than 1 value per channel when training, got input size "
                                         r"engine.Size\(\[1, 3\]\)$"):
        bn(engine.ones(1, 3))


def test_embedding_layer_names_the_bad_indices():
    emb = engine.nn.Embedding(10, 3)
    with pytest.raises(IndexError, match=re.escape(
            "index out of range in self: Embedding(10, 3) expects indices in [0, 10) but got indices in [-1, 12]")):
        emb(engine.tensor([[1, 12], [-1, 0]]))


def test_loss_layers_name_layer_and_both_shapes():
    with pytest.raises(ValueError, match=re.escape(
            "Expected input batch_size (4) to match target batch_size (3).: CrossEntropyLoss() got input of shape "
            "[4, 5] and target of shape [3]")):
        engine.nn.CrossEntropyLoss()(engine.ones(4, 5), engine.tensor([1, 2, 3]))
    with pytest.raises(ValueError, match=re.escape(
            "Target size (engine.Size([5])) must be the same as input size (engine.Size([4, 5])): "
            "BCEWithLogitsLoss() got input of shape [4, 5] and target of shape [5]")):
        engine.nn.BCEWithLogitsLoss()(engine.ones(4, 5), engine.ones(5))
    with pytest.raises(RuntimeError, match=re.escape("MSELoss() got input of shape [4, 5] and target of shape [4, 4]")), \
            pytest.warns(UserWarning, match="different to the input size"):
        engine.nn.MSELoss()(engine.ones(4, 5), engine.ones(4, 4))


def test_kaiming_on_zero_element_tensor_warns_and_returns_it(torch):
    for fn in (engine.nn.init.kaiming_uniform_, engine.nn.init.kaiming_normal_):
        t = engine.empty(0, 3)
        with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
            assert fn(t) is t
