"""Activation, normalisation and dropout layers against torch: PReLU, RReLU, Threshold, Hardshrink,
Softshrink, Softmin, Softmax2d, RMSNorm, Bilinear, BatchNorm3d, InstanceNorm3d (values, gradients,
grad_fn graphs, reprs, state_dict keys, errors); the random ones (RReLU training, dropout1d/3d, alpha
dropout, gumbel_softmax) by statistics, shapes and straight-through gradients; finite differences."""

from __future__ import annotations

import numpy as np
import pytest

import engine
import engine.nn.functional as EF
from tests.gradcheck import gradcheck

from .conftest import close, error_of, f64, rnd, run_both

ACTIVATIONS = [
    lambda L, x: L.nn.functional.threshold(x, 0.1, -2.0),
    lambda L, x: L.nn.functional.hardshrink(x, 0.4),
    lambda L, x: L.nn.functional.softshrink(x, 0.3),
    lambda L, x: L.nn.functional.softmin(x, 1),
    lambda L, x: L.nn.functional.rrelu(x),
    lambda L, x: L.nn.functional.rrelu(x, 0.1, 0.9, training=False),
    lambda L, x: L.nn.Threshold(0.0, 1.5)(x),
    lambda L, x: L.nn.Hardshrink()(x),
    lambda L, x: L.nn.Softshrink()(x),
    lambda L, x: L.nn.Softmin(dim=-1)(x),
    lambda L, x: L.nn.RReLU().eval()(x),
    lambda L, x: L.nn.Softmax2d()(x.view(2, 3, 2, 2)),
]


@pytest.mark.parametrize("fn", ACTIVATIONS)
def test_activations(torch, fn):
    run_both(torch, fn, [rnd(6, 4)])


@pytest.mark.parametrize("shape,n", [((4, 3), 3), ((2, 3, 5), 1), ((2, 3, 2, 2), 3), ((5,), 1)])
def test_prelu(torch, shape, n):
    w = np.abs(rnd(n, seed=2))
    run_both(torch, lambda L, x, a: L.nn.functional.prelu(x, a), [rnd(*shape), w])
    em, tm = engine.nn.PReLU(n, init=0.1), torch.nn.PReLU(n, init=0.1)
    assert repr(em) == repr(tm) and list(em.state_dict()) == list(tm.state_dict())
    close(em.weight, tm.weight)


def test_rrelu_training_statistics():
    engine.manual_seed(0)
    x = -engine.ones(20000)
    x.requires_grad_(True)
    y = EF.rrelu(x, 0.1, 0.3, training=True)
    slopes = -y.detach().numpy()
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3
    assert abs(slopes.mean() - 0.2) < 0.005 and abs(slopes.std() - 0.2 / np.sqrt(12)) < 0.005
    assert y.grad_fn.name() == "RreluWithNoiseBackward0"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), slopes)  # the gradient is the drawn slope
    pos = engine.ones(5)
    assert EF.rrelu(pos, training=True).tolist() == [1.0] * 5


def test_layer_reprs(torch):
    for name, args in [("RReLU", (0.2, 0.4)), ("Threshold", (0.1, 2.0)), ("Hardshrink", (0.3,)),
                       ("Softshrink", ()), ("Softmin", (1,)), ("Softmax2d", ()), ("PReLU", (4,)),
                       ("Bilinear", (2, 3, 4)), ("RMSNorm", ([3, 4],)), ("Dropout1d", (0.2,)),
                       ("Dropout3d", ()), ("AlphaDropout", (0.3,)), ("FeatureAlphaDropout", ()),
                       ("BatchNorm3d", (3,)), ("InstanceNorm3d", (3,))]:
        e, t = getattr(engine.nn, name)(*args), getattr(torch.nn, name)(*args)
        assert repr(e) == repr(t)
        assert [(k, tuple(v.shape)) for k, v in e.state_dict().items()] == \
            [(k, tuple(v.shape)) for k, v in t.state_dict().items()]
    assert repr(engine.nn.RMSNorm(3, eps=1e-5, elementwise_affine=False)) == \
        repr(torch.nn.RMSNorm(3, eps=1e-5, elementwise_affine=False))
    assert repr(engine.nn.Bilinear(2, 3, 4, bias=False)) == repr(torch.nn.Bilinear(2, 3, 4, bias=False))


@pytest.mark.parametrize("eps", [None, 1e-3])
@pytest.mark.parametrize("affine", [True, False])
def test_rms_norm(torch, eps, affine):
    x = rnd(2, 3, 4)
    if affine:
        run_both(torch, lambda L, a, w: L.nn.functional.rms_norm(a, (3, 4), w, eps), [x, rnd(3, 4, seed=1)])
    else:
        run_both(torch, lambda L, a: L.nn.functional.rms_norm(a, [4], eps=eps), [x])
    e, t = engine.nn.RMSNorm(4, eps=eps), torch.nn.RMSNorm(4, eps=eps)
    close(e(engine.tensor(x)), t(torch.tensor(x)), atol=1e-5)


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("shape", [(5,), (2, 5)])
def test_bilinear(torch, bias, shape):
    arrays = [rnd(*shape, 3), rnd(*shape, 4, seed=1), rnd(6, 3, 4, seed=2)] + ([rnd(6, seed=3)] if bias else [])
    run_both(torch, lambda L, *a: L.nn.functional.bilinear(*a), arrays)
    em, tm = engine.nn.Bilinear(3, 4, 6, bias=bias), torch.nn.Bilinear(3, 4, 6, bias=bias)
    assert abs(em.weight).max().item() <= 1 / np.sqrt(3)
    em.load_state_dict({k: engine.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    close(em(engine.tensor(arrays[0]), engine.tensor(arrays[1])), tm(torch.tensor(arrays[0]),
                                                                     torch.tensor(arrays[1])), atol=1e-5)


def test_batchnorm3d_instancenorm3d(torch):
    x = rnd(2, 3, 2, 3, 4)
    for name, kw in [("BatchNorm3d", {}), ("InstanceNorm3d", dict(affine=True, track_running_stats=True))]:
        e, t = getattr(engine.nn, name)(3, **kw), getattr(torch.nn, name)(3, **kw)
        run_both(torch, lambda L, a, e=e, t=t: (e if L is engine else t)(a), [x])
        for k, v in t.state_dict().items():
            close(e.state_dict()[k], v, atol=1e-5)
        e.eval(), t.eval()
        close(e(engine.tensor(x)), t(torch.tensor(x)), atol=1e-5)
    close(engine.nn.InstanceNorm3d(3)(engine.tensor(x[0])), torch.nn.InstanceNorm3d(3)(torch.tensor(x[0])),
          atol=1e-5)




@pytest.mark.parametrize("case", [
    lambda L: L.nn.functional.prelu(L.zeros(2, 3), L.ones(2)),
    lambda L: L.nn.functional.prelu(L.zeros(2, 3), L.ones(1, 3)),
    lambda L: L.nn.functional.prelu(L.tensor(1.0), L.ones(3)),
    lambda L: L.nn.functional.rrelu(L.zeros(3), 0.5, 0.1, training=True),
    lambda L: L.nn.functional.softshrink(L.zeros(3), -1.0),
    lambda L: L.nn.Softmax2d()(L.zeros(2, 3)),
    lambda L: L.nn.functional.rms_norm(L.zeros(4, 3), (5,)),
    lambda L: L.nn.functional.bilinear(L.zeros(2, 3), L.zeros(3, 4), L.zeros(5, 3, 4)),
    lambda L: L.nn.functional.bilinear(L.zeros(2, 3), L.zeros(2, 4), L.zeros(5, 3, 3)),
    lambda L: L.nn.functional.bilinear(L.zeros(2, 4), L.zeros(2, 4), L.zeros(5, 3, 4)),
    lambda L: L.nn.functional.bilinear(L.zeros(2, 3), L.zeros(2, 4), L.zeros(5, 3, 4), L.zeros(4)),
    lambda L: L.nn.functional.dropout1d(L.zeros(2, 3, 4, 5)),
    lambda L: L.nn.functional.dropout1d(L.zeros(2, 3), p=1.5),
    lambda L: L.nn.functional.alpha_dropout(L.zeros(3), p=2.0),
    lambda L: L.nn.BatchNorm3d(3)(L.zeros(2, 3, 4)),
    lambda L: L.nn.InstanceNorm3d(3)(L.zeros(2, 3, 4)),
])
def test_errors(torch, case):
    e, t = error_of(engine, case), error_of(torch, case)
    assert e[0] == t[0] and e[1].startswith(t[1])  # the layers add their own name and shapes


def test_dropout1d_and_3d_drop_whole_channels(torch):
    engine.manual_seed(0)
    x = engine.ones(400, 8, 5, requires_grad=True)
    y = EF.dropout1d(x, 0.25)
    per_channel = y.detach().numpy()
    assert np.all(per_channel == per_channel[..., :1])  # a channel is all kept or all dropped
    kept = per_channel[..., 0] != 0
    assert abs(kept.mean() - 0.75) < 0.03 and np.allclose(per_channel[kept], 1 / 0.75)
    assert y.grad_fn.name() == "MulBackward0"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), per_channel)
    unbatched = EF.dropout1d(engine.ones(8, 5), 0.5)
    assert unbatched.shape == (8, 5) and np.all(unbatched.numpy() == unbatched.numpy()[:, :1])
    assert EF.dropout1d(x, 0.5, training=False) is x
    m = engine.nn.Dropout1d(0.5).eval()
    assert m(x) is x
    v = EF.dropout3d(engine.ones(50, 4, 2, 2, 2), 0.5).numpy()
    assert np.all(v.reshape(50, 4, -1) == v.reshape(50, 4, -1)[..., :1])


def test_alpha_dropout_keeps_mean_and_variance(torch):
    engine.manual_seed(0)
    x = engine.randn(200000, requires_grad=True)
    y = EF.alpha_dropout(x, 0.2, training=True)
    v = y.detach().numpy()
    assert abs(v.mean()) < 0.02 and abs(v.std() - 1) < 0.02
    assert y.grad_fn.name() == "AddBackward0"
    assert EF.alpha_dropout(x, 0.2) is x  # training=False by default, as in torch
    t = torch.nn.functional.alpha_dropout(torch.randn(200000), 0.2, training=True)
    assert abs(t.mean().item() - v.mean()) < 0.03 and abs(t.std().item() - v.std()) < 0.03
    f = EF.feature_alpha_dropout(engine.randn(100, 6, 4), 0.5, training=True).numpy()
    assert f.shape == (100, 6, 4)


@pytest.mark.parametrize("hard", [False, True])
def test_gumbel_softmax(torch, hard):
    engine.manual_seed(0)
    logits = engine.tensor(np.log(np.array([[0.1, 0.2, 0.7]] * 20000, np.float32)), requires_grad=True)
    y = EF.gumbel_softmax(logits, tau=0.5, hard=hard)
    v = y.detach().numpy()
    np.testing.assert_allclose(v.sum(1), 1, rtol=1e-5)
    if hard:
        assert set(np.unique(v)) <= {0.0, 1.0}
        freq = v.mean(0)
        np.testing.assert_allclose(freq, [0.1, 0.2, 0.7], atol=0.015)  # Gumbel-max samples the softmax
        assert y.grad_fn.name() == "AddBackward0"
    else:
        assert y.grad_fn.name() == "SoftmaxBackward0"
    w = engine.tensor(rnd(20000, 3))
    (y * w).sum().backward()
    assert logits.grad.shape == (20000, 3) and np.isfinite(logits.grad.numpy()).all()
    t = torch.nn.functional.gumbel_softmax(torch.zeros(5, 3), hard=hard)
    assert t.grad_fn is None and tuple(EF.gumbel_softmax(engine.zeros(5, 3), hard=hard).shape) == tuple(t.shape)


def test_gumbel_straight_through_gradient_equals_soft_gradient():
    engine.manual_seed(3)
    logits = engine.randn(4, 5, requires_grad=True)
    engine.manual_seed(7)
    hard = EF.gumbel_softmax(logits, tau=0.7, hard=True, dim=1)
    w = engine.tensor(rnd(4, 5, seed=1))
    (hard * w).sum().backward()
    g_hard = logits.grad.numpy().copy()
    logits.grad = None
    engine.manual_seed(7)
    soft = EF.gumbel_softmax(logits, tau=0.7, hard=False, dim=1)
    (soft * w).sum().backward()
    np.testing.assert_allclose(g_hard, logits.grad.numpy(), rtol=1e-5, atol=1e-7)
    assert np.all(hard.detach().numpy().argmax(1) == soft.detach().numpy().argmax(1))


def test_gradchecks():
    x = f64(3, 4)
    gradcheck(lambda a, w: EF.prelu(a, w), x, f64(1, seed=1))
    gradcheck(lambda a, w: EF.prelu(a.reshape(4, 3), w), x, f64(3, seed=2))
    gradcheck(lambda a: EF.threshold(a, 0.1, 2.0), x)
    gradcheck(lambda a: EF.hardshrink(a, 0.3), x)
    gradcheck(lambda a: EF.softshrink(a, 0.3), x)
    gradcheck(lambda a: EF.softmin(a, 1), x)
    gradcheck(lambda a: EF.rrelu(a, training=False), x)
    gradcheck(lambda a, w: EF.rms_norm(a, (4,), w), x, f64(4, seed=3))
    gradcheck(lambda a, b, w, c: EF.bilinear(a, b, w, c), x, f64(3, 2, seed=4), f64(5, 4, 2, seed=5),
              f64(5, seed=6))
