"""Finite-difference gradient checks (float64) for every functional op, layer and loss."""

from __future__ import annotations

import numpy as np
import pytest

import engine
import engine.nn.functional as F
from tests.gradcheck import gradcheck, rand

# padding='same' with an even kernel warns (as torch does); test_errors.py asserts the warning.
pytestmark = pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel lengths")

CONV2D = [
    dict(),
    dict(stride=2),
    dict(padding=1),
    dict(padding=(2, 0), stride=(1, 2)),
    dict(dilation=2, padding=1),
    dict(groups=2),
    dict(groups=2, stride=2, padding=1, dilation=(1, 2)),
    dict(padding="same", dilation=2),
    dict(padding="valid"),
]



@pytest.mark.parametrize("kw", CONV2D, ids=str)
@pytest.mark.parametrize("bias", [True, False])
def test_conv2d(kw, bias):
    x = rand(2, 4, 6, 5, seed=1)
    w = rand(4, 4 // kw.get("groups", 1), 3, 2, seed=2)
    b = rand(4, seed=3) if bias else None
    gradcheck(lambda x, w, b: F.conv2d(x, w, b, **kw), x, w, b)


@pytest.mark.parametrize("kw,mult", [(dict(padding=1), 1), (dict(stride=2, padding=(1, 0), dilation=(1, 2)), 1),
                                     (dict(stride=(1, 2), padding=1), 2), (dict(padding="same"), 3)], ids=str)
@pytest.mark.parametrize("bias", [True, False])
def test_depthwise_conv2d(kw, mult, bias):
    """groups == in_channels (one input channel per group) runs as a sum over kernel taps."""
    x = rand(2, 3, 6, 5, seed=1)
    w = rand(3 * mult, 1, 3, 2, seed=2)
    b = rand(3 * mult, seed=3) if bias else None
    gradcheck(lambda x, w, b: F.conv2d(x, w, b, groups=3, **kw), x, w, b)
    gradcheck(lambda x, w: F.conv2d(x, w, groups=3, **kw), rand(3, 5, 4, seed=4), w)  # unbatched


def test_conv2d_unbatched_and_even_same_padding():
    gradcheck(lambda x, w: F.conv2d(x, w, padding="same"), rand(2, 5, 4, seed=1), rand(3, 2, 2, 2, seed=2))


def test_conv2d_only_weight_needs_grad():
    x = rand(2, 3, 5, 5, seed=1, requires_grad=False)
    gradcheck(lambda w: F.conv2d(x, w, stride=2), rand(2, 3, 3, 3, seed=2))


@pytest.mark.parametrize("kw", [dict(), dict(stride=2, padding=1), dict(dilation=2, groups=3),
                                dict(padding="same"), dict(padding=(1,), stride=(3,))], ids=str)
def test_conv1d(kw):
    x = rand(2, 3, 9, seed=1)
    w = rand(6, 3 // kw.get("groups", 1), 3, seed=2)
    gradcheck(lambda x, w, b: F.conv1d(x, w, b, **kw), x, w, rand(6, seed=3))
    gradcheck(lambda x, w: F.conv1d(x, w, **kw), rand(3, 9, seed=4), w)


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                dict(kernel_size=(2, 3), stride=1, dilation=(2, 1)),
                                dict(kernel_size=3, stride=2, ceil_mode=True), dict(kernel_size=2, stride=3)],
                         ids=str)
def test_max_pool2d(kw):
    gradcheck(lambda x: F.max_pool2d(x, **kw), rand(2, 2, 7, 6, seed=5))
    gradcheck(lambda x: F.max_pool2d(x, return_indices=True, **kw)[0], rand(2, 7, 6, seed=6))


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
                                dict(kernel_size=(3, 2), stride=2, ceil_mode=True, padding=1),
                                dict(kernel_size=2, divisor_override=3)], ids=str)
def test_avg_pool2d(kw):
    gradcheck(lambda x: F.avg_pool2d(x, **kw), rand(2, 2, 7, 6, seed=7))


@pytest.mark.parametrize("size", [(3, 2), 1, (None, 4), (7, 9)], ids=str)
def test_adaptive_avg_pool2d(size):
    gradcheck(lambda x: F.adaptive_avg_pool2d(x, size), rand(2, 2, 7, 6, seed=8))


@pytest.mark.parametrize("shape", [(5, 3), (4, 3, 5), (3, 3, 2, 4)])
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm(shape, training):
    rm, rv = rand(3, requires_grad=False, seed=1), rand(3, low=0.5, high=2, requires_grad=False, seed=2)
    gradcheck(lambda x, w, b: F.batch_norm(x, rm.clone(), rv.clone(), w, b, training, 0.1, 1e-3),
              rand(*shape, seed=9), rand(3, seed=10), rand(3, seed=11))


def test_batch_norm_without_affine_or_running_stats():
    gradcheck(lambda x: F.batch_norm(x, None, None, training=True), rand(4, 3, 2, seed=12))


@pytest.mark.parametrize("shape,normalized", [((4, 5), (5,)), ((2, 3, 4), (3, 4)), ((3, 4), 4)], ids=str)
def test_layer_norm(shape, normalized):
    ns = (normalized,) if isinstance(normalized, int) else normalized
    gradcheck(lambda x, w, b: F.layer_norm(x, normalized, w, b, 1e-3), rand(*shape, seed=13),
              rand(*ns, seed=14), rand(*ns, seed=15))
    gradcheck(lambda x: F.layer_norm(x, normalized), rand(*shape, seed=16))


@pytest.mark.parametrize("op", [
    lambda x: F.leaky_relu(x, 0.2),
    lambda x: F.gelu(x),
    lambda x: F.gelu(x, approximate="tanh"),
    lambda x: F.gelu(x * 4),  # every branch of erf: |x/√2| up to ~2.8
    F.tanh,
    F.sigmoid,
    lambda x: F.relu(x),
    lambda x: F.softmax(x, 1),
    lambda x: F.log_softmax(x, 0),
], ids=["leaky_relu", "gelu", "gelu_tanh", "gelu_wide", "tanh", "sigmoid", "relu", "softmax", "log_softmax"])
def test_activations(op):
    gradcheck(op, rand(3, 5, seed=17))


def test_gelu_far_tail():
    # |x| > 4·√2 exercises erf's large-argument branch.
    x = engine.tensor([-9.0, -6.5, 6.0, 12.0], dtype=engine.float64, requires_grad=True)
    gradcheck(F.gelu, x)


def test_embedding():
    idx = engine.tensor([[1, 3, 1], [0, 4, 1]])
    gradcheck(lambda w: F.embedding(idx, w), rand(5, 3, seed=18))
    # padding_idx=2 is not looked up. A looked-up padding row's zero gradient and
    # scale_grad_by_freq are deliberate non-derivatives: the parity tests cover them.
    gradcheck(lambda w: F.embedding(idx, w, padding_idx=2), rand(5, 3, seed=19))


def test_dropout_gradient_is_the_mask():
    engine.manual_seed(0)
    x = rand(50, seed=20)
    y = F.dropout(x, 0.3)
    y.backward(engine.ones_like(y))
    kept = y.detach().numpy() != 0
    np.testing.assert_allclose(x.grad.numpy(), kept / 0.7)


# --- losses ------------------------------------------------------------------------------------

REDUCTIONS = ["mean", "sum", "none"]


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_mse_and_l1(reduction):
    gradcheck(lambda a, b: F.mse_loss(a, b, reduction=reduction), rand(3, 4, seed=21), rand(3, 4, seed=22))
    gradcheck(lambda a, b: F.l1_loss(a, b, reduction=reduction), rand(3, 4, seed=23), rand(3, 4, seed=24))
    w = rand(3, 4, low=0.1, high=1, requires_grad=False, seed=25)
    t = rand(3, 4, requires_grad=False, seed=26)
    gradcheck(lambda a: F.mse_loss(a, t, reduction=reduction, weight=w), rand(3, 4, seed=27))
    gradcheck(lambda a: F.l1_loss(a, t, reduction=reduction, weight=w), rand(3, 4, seed=28))


def test_mse_broadcast_target():
    with pytest.warns(UserWarning, match="different to the input size"):
        gradcheck(lambda a, b: F.mse_loss(a, b), rand(3, 4, seed=28), rand(4, seed=29))


TARGETS = engine.tensor([1, 0, 3, 3, 2])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignore_index", [-100, 3])
def test_nll_and_cross_entropy(reduction, weighted, ignore_index):
    w = rand(4, low=0.2, high=1.5, requires_grad=False, seed=30) if weighted else None
    kw = dict(weight=w, ignore_index=ignore_index, reduction=reduction)
    gradcheck(lambda x: F.nll_loss(x, TARGETS, **kw), rand(5, 4, seed=31))
    gradcheck(lambda x: F.cross_entropy(x, TARGETS, **kw), rand(5, 4, seed=32))
    gradcheck(lambda x: F.cross_entropy(x, TARGETS, label_smoothing=0.2, **kw), rand(5, 4, seed=33))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_losses_spatial_and_unbatched(reduction):
    t3 = engine.tensor([[[0, 2, 1], [1, 1, 0]], [[2, 2, 0], [0, 1, 1]]])
    gradcheck(lambda x: F.cross_entropy(x, t3, reduction=reduction), rand(2, 3, 2, 3, seed=34))
    gradcheck(lambda x: F.nll_loss(x, engine.tensor([[0, 2], [1, 1]]), reduction=reduction), rand(2, 3, 2, seed=35))
    gradcheck(lambda x: F.cross_entropy(x, engine.tensor(2), reduction=reduction), rand(4, seed=36))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_probability_targets(reduction):
    p = engine.tensor(np.random.default_rng(0).dirichlet(np.ones(4), size=3))
    w = rand(4, low=0.2, high=1.5, requires_grad=False, seed=37)
    gradcheck(lambda x: F.cross_entropy(x, p, reduction=reduction), rand(3, 4, seed=38))
    gradcheck(lambda x: F.cross_entropy(x, p, weight=w, reduction=reduction, label_smoothing=0.1),
              rand(3, 4, seed=39))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy(reduction):
    w = rand(3, 4, low=0.2, high=1.5, requires_grad=False, seed=40)
    gradcheck(lambda x, t: F.binary_cross_entropy(x, t, reduction=reduction),
              rand(3, 4, low=0.05, high=0.95, seed=41), rand(3, 4, low=0, high=1, seed=42))
    t = rand(3, 4, low=0, high=1, requires_grad=False, seed=43)
    gradcheck(lambda x: F.binary_cross_entropy(x, t, weight=w, reduction=reduction),
              rand(3, 4, low=0.05, high=0.95, seed=43))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy_with_logits(reduction):
    w = rand(3, 4, low=0.2, high=1.5, requires_grad=False, seed=44)
    pw = rand(4, low=0.2, high=3, requires_grad=False, seed=45)
    gradcheck(lambda x, t: F.binary_cross_entropy_with_logits(x, t, reduction=reduction),
              rand(3, 4, low=-4, high=4, seed=46), rand(3, 4, low=0, high=1, seed=47))
    gradcheck(lambda x, t: F.binary_cross_entropy_with_logits(x, t, w, reduction=reduction, pos_weight=pw),
              rand(3, 4, low=-4, high=4, seed=48), rand(3, 4, low=0, high=1, seed=49))


# --- layers ------------------------------------------------------------------------------------

@pytest.mark.parametrize("make,shape", [
    (lambda: engine.nn.Conv2d(2, 4, 3, stride=2, padding=1, groups=2), (2, 2, 5, 5)),
    (lambda: engine.nn.Conv1d(2, 3, 2, dilation=2), (2, 2, 6)),
    (lambda: engine.nn.BatchNorm1d(3), (4, 3)),
    (lambda: engine.nn.BatchNorm2d(3).eval(), (2, 3, 2, 2)),
    (lambda: engine.nn.LayerNorm((2, 3)), (2, 2, 3)),
    (lambda: engine.nn.Sequential(engine.nn.MaxPool2d(2), engine.nn.AvgPool2d(2, 1),
                                  engine.nn.AdaptiveAvgPool2d(2)), (1, 2, 8, 8)),
], ids=["conv2d", "conv1d", "bn1d", "bn2d_eval", "layernorm", "pools"])
def test_layers_input_and_parameter_gradients(make, shape):
    layer = make().double()
    values = [p.detach().clone().requires_grad_() for p in layer.parameters()]
    gradcheck(lambda x, *ps: _call_with(layer, x, ps), rand(*shape, seed=50), *values)


def _call_with(layer, x, values):
    """Run ``layer`` with its parameters replaced by ``values`` (tensors that require grad)."""
    saved = {}
    for (name, p), v in zip(list(layer.named_parameters()), values):
        saved[name] = p
        mod, attr = _owner(layer, name)
        mod._parameters[attr] = v
    try:
        return layer(x)
    finally:
        for name, p in saved.items():
            mod, attr = _owner(layer, name)
            mod._parameters[attr] = p


def _owner(layer, name):
    *path, attr = name.split(".")
    mod = layer
    for part in path:
        mod = getattr(mod, part)
    return mod, attr
