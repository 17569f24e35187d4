"""The last missing layers against torch: PReLU, RReLU, Threshold, Hardshrink, Softshrink, Softmin,
Softmax2d, RMSNorm, Bilinear, BatchNorm3d, InstanceNorm3d (values, gradients, grad_fn graphs, reprs,
state_dict keys, errors); the random ones (RReLU training, dropout1d/3d, alpha dropout,
gumbel_softmax) by statistics, shapes and straight-through gradients; finite-difference checks."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import engine
import engine.nn.functional as EF
from tests.gradcheck import gradcheck

from .conftest import close, graph_names


def rnd(*shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def run_both(torch, fn, arrays, grads=None, seed=5):
    """``fn(lib, *tensors)`` on both libraries: outputs, graphs and gradients compared."""
    grads = grads or [True] * len(arrays)
    res = []
    for lib in (engine, torch):
        ins = [lib.tensor(a, requires_grad=g) for a, g in zip(arrays, grads)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = fn(lib, *ins)
        out.backward(lib.tensor(rnd(*out.shape, seed=seed)))
        res.append((out, ins))
    (eo, ei), (to, ti) = res
    close(eo, to, atol=1e-5)
    assert graph_names(eo, 6) == graph_names(to, 6)
    for e, t, g in zip(ei, ti, grads):
        if g:
            close(e.grad, t.grad, atol=1e-5)
    return eo, to


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


def _error(lib, fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fn(lib)
        except Exception as err:  # noqa: BLE001 - the test compares type and message
            return type(err).__name__, str(err)
    raise AssertionError("no error")


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
    e, t = _error(engine, case), _error(torch, case)
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


def f64(*shape, seed=0):
    return engine.tensor(rnd(*shape, seed=seed, dtype=np.float64), requires_grad=True)


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


# --- nn.init: trunc_normal_, orthogonal_, sparse_, eye_, dirac_, calculate_gain ---------------

def test_trunc_normal_statistics(torch):
    e = engine.nn.init.trunc_normal_(engine.empty(200000), mean=0.5, std=2.0, a=-1.0, b=3.0)
    t = torch.nn.init.trunc_normal_(torch.empty(200000), mean=0.5, std=2.0, a=-1.0, b=3.0)
    v, w = e.numpy(), t.numpy()
    assert v.min() >= -1.0 and v.max() <= 3.0
    assert abs(v.mean() - w.mean()) < 0.02 and abs(v.std() - w.std()) < 0.02
    with pytest.warns(UserWarning, match="mean is more than 2 std from"):
        engine.nn.init.trunc_normal_(engine.empty(3), mean=10.0)


@pytest.mark.parametrize("shape", [(6, 4), (3, 8), (4, 2, 3)])
def test_orthogonal(shape):
    w = engine.nn.init.orthogonal_(engine.empty(*shape), gain=2.0)
    m = w.numpy().reshape(shape[0], -1).astype(np.float64)
    gram = m @ m.T if m.shape[0] <= m.shape[1] else m.T @ m
    np.testing.assert_allclose(gram, 4.0 * np.eye(gram.shape[0]), atol=1e-5)


def test_generator_makes_draws_reproducible():
    for fn in (lambda t, g: engine.nn.init.trunc_normal_(t, generator=g),
               lambda t, g: engine.nn.init.orthogonal_(t, generator=g),
               lambda t, g: engine.nn.init.sparse_(t, 0.5, generator=g),
               lambda t, g: engine.nn.init.uniform_(t, generator=g),
               lambda t, g: engine.nn.init.normal_(t, generator=g)):
        a = fn(engine.empty(5, 4), engine.Generator().manual_seed(3)).numpy()
        b = fn(engine.empty(5, 4), engine.Generator().manual_seed(3)).numpy()
        c = fn(engine.empty(5, 4), engine.Generator().manual_seed(4)).numpy()
        np.testing.assert_array_equal(a, b)
        assert not np.array_equal(a, c)


def test_sparse_zeroes_rows_per_column():
    w = engine.nn.init.sparse_(engine.empty(10, 6), sparsity=0.25, std=0.5).numpy()
    assert np.all((w == 0).sum(0) == 3)  # ceil(0.25 * 10) per column
    assert 0.2 < w[w != 0].std() < 1.0


def test_eye_dirac_and_gains_equal_torch(torch):
    close(engine.nn.init.eye_(engine.empty(3, 5)), torch.nn.init.eye_(torch.empty(3, 5)))
    for shape, groups in [((4, 2, 3), 1), ((6, 3, 3, 3), 2), ((4, 4, 1, 3, 5), 2), ((2, 5, 3), 1)]:
        close(engine.nn.init.dirac_(engine.empty(*shape), groups), torch.nn.init.dirac_(torch.empty(*shape), groups))
    for name in ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                 "conv_transpose3d", "sigmoid", "tanh", "relu", "leaky_relu", "selu"]:
        assert engine.nn.init.calculate_gain(name) == pytest.approx(torch.nn.init.calculate_gain(name))
    assert engine.nn.init.calculate_gain("leaky_relu", 0.2) == pytest.approx(
        torch.nn.init.calculate_gain("leaky_relu", 0.2))


@pytest.mark.parametrize("case", [
    lambda L: L.nn.init.orthogonal_(L.ones(3)),
    lambda L: L.nn.init.sparse_(L.ones(3, 2, 2), 0.1),
    lambda L: L.nn.init.eye_(L.ones(3)),
    lambda L: L.nn.init.dirac_(L.ones(3, 3)),
    lambda L: L.nn.init.dirac_(L.ones(3, 3, 3), groups=2),
    lambda L: L.nn.init.calculate_gain("gelu"),
    lambda L: L.autograd.Variable(3),
])
def test_init_errors(torch, case):
    assert _error(engine, case) == _error(torch, case)


def test_variable(torch):
    from engine.autograd import Variable

    t = engine.ones(3)
    v = Variable(t, requires_grad=True)
    assert v is not t and v.requires_grad and v.is_leaf and v.grad_fn is None
    assert type(v) is engine.Tensor and isinstance(t, Variable)
    v.data[0] = 5.0
    assert t[0].item() == 5.0  # shares the data, as torch's
    w = Variable(v * 2)
    assert not w.requires_grad and w.grad_fn is None
    (v * 3).sum().backward()
    assert v.grad.tolist() == [3.0, 3.0, 3.0]
    with pytest.warns(UserWarning, match="volatile was removed"):
        Variable(t, volatile=True)


# --- 3-D pools and adaptive_max_pool1d ---------------------------------------------------------

POOL3D = [
    ("max_pool3d", dict(kernel_size=2)),
    ("max_pool3d", dict(kernel_size=(2, 3, 2), stride=(1, 2, 1), padding=(1, 1, 0), return_indices=True)),
    ("max_pool3d", dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, return_indices=True)),
    ("max_pool3d", dict(kernel_size=2, dilation=(2, 1, 1))),
    ("avg_pool3d", dict(kernel_size=2)),
    ("avg_pool3d", dict(kernel_size=(2, 3, 2), stride=(1, 2, 1), padding=(1, 1, 0), count_include_pad=False)),
    ("avg_pool3d", dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    ("avg_pool3d", dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)),
    ("avg_pool3d", dict(kernel_size=2, divisor_override=3)),
]


@pytest.mark.parametrize("name,kw", POOL3D)
@pytest.mark.parametrize("shape", [(2, 3, 5, 6, 7), (3, 4, 4, 5)])
def test_pool3d(torch, name, kw, shape):
    x = rnd(*shape)
    res = []
    for lib in (engine, torch):
        xt = lib.tensor(x, requires_grad=True)
        out = getattr(lib.nn.functional, name)(xt, **kw)
        idx = None
        if isinstance(out, tuple):
            out, idx = out
        out.backward(lib.tensor(rnd(*out.shape, seed=4)))
        res.append((out, idx, xt.grad))
    (eo, ei, eg), (to, ti, tg) = res
    close(eo, to, atol=1e-6)
    close(eg, tg, atol=1e-5)
    assert eo.grad_fn.name() == to.grad_fn.name()
    if ei is not None:
        assert ei.dtype == engine.int64 and ei.tolist() == ti.tolist()


def test_pool_modules_and_adaptive_max_pool1d(torch):
    x = rnd(2, 3, 4, 5, 6)
    for name, args, kw in [("MaxPool3d", (2,), {}), ("AvgPool3d", (3,), dict(stride=1, padding=1)),
                           ("AvgPool3d", (2,), dict(divisor_override=3))]:
        e, t = getattr(engine.nn, name)(*args, **kw), getattr(torch.nn, name)(*args, **kw)
        assert repr(e) == repr(t)
        close(e(engine.tensor(x)), t(torch.tensor(x)), atol=1e-6)
    for size in (2, 3, 5):
        eo, to = run_both(torch, lambda L, a, s=size: L.nn.functional.adaptive_max_pool1d(a, s), [rnd(2, 3, 7)])
        e_out, e_idx = engine.nn.AdaptiveMaxPool1d(size, return_indices=True)(engine.tensor(rnd(3, 7)))
        t_out, t_idx = torch.nn.AdaptiveMaxPool1d(size, return_indices=True)(torch.tensor(rnd(3, 7)))
        close(e_out, t_out)
        assert e_idx.tolist() == t_idx.tolist()
    assert repr(engine.nn.AdaptiveMaxPool1d(3)) == repr(torch.nn.AdaptiveMaxPool1d(3))


@pytest.mark.parametrize("case", [
    lambda L: L.nn.functional.max_pool3d(L.zeros(2, 3, 4), 2),
    lambda L: L.nn.functional.avg_pool3d(L.zeros(2, 3, 4), 2),
    lambda L: L.nn.functional.max_pool3d(L.zeros(1, 2, 4, 4, 4), 2, padding=2),
    lambda L: L.nn.functional.avg_pool3d(L.zeros(1, 2, 4, 4, 4), 2, padding=2),
    lambda L: L.nn.functional.max_pool3d(L.zeros(1, 1, 1, 1, 1), 2),
    lambda L: L.nn.functional.avg_pool3d(L.zeros(1, 1, 1, 1, 1), 2),
    lambda L: L.nn.functional.max_pool3d(L.zeros(1, 2, 4, 4, 4), (2, 2)),
    lambda L: L.nn.functional.adaptive_max_pool1d(L.zeros(2, 3, 4, 5), 2),
    lambda L: L.nn.functional.adaptive_max_pool1d(L.zeros(2, 3, 4), (2, 2)),
])
def test_pool_errors(torch, case):
    assert _error(engine, case) == _error(torch, case)


def test_pool_gradchecks():
    x = f64(1, 2, 4, 5, 3)
    gradcheck(lambda a: EF.max_pool3d(a, 2, stride=1, padding=1), x)
    gradcheck(lambda a: EF.avg_pool3d(a, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=False), x)
    gradcheck(lambda a: EF.adaptive_max_pool1d(a, 3), f64(2, 3, 7))


# --- EmbeddingBag -------------------------------------------------------------------------------

BAGS = [
    dict(input=np.array([1, 2, 4, 5, 4, 3, 2, 9]), offsets=np.array([0, 4])),
    dict(input=np.array([1, 2, 4, 5, 4, 3, 2, 9]), offsets=np.array([0, 3, 3, 7])),  # an empty bag
    dict(input=np.array([[1, 2, 4], [5, 4, 3]])),
    dict(input=np.array([1, 0, 4, 0, 4, 3, 2, 9]), offsets=np.array([0, 2, 5, 8]), include_last_offset=True),
    dict(input=np.array([1, 0, 4, 0, 0, 3, 2, 9]), offsets=np.array([0, 2, 3, 5]), padding_idx=0),
]


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("case", range(len(BAGS)))
def test_embedding_bag(torch, mode, case):
    kw = dict(BAGS[case])
    w = rnd(10, 3)
    res = []
    for lib in (engine, torch):
        wt = lib.tensor(w, requires_grad=True)
        args = {k: (lib.tensor(v) if isinstance(v, np.ndarray) else v) for k, v in kw.items()}
        out = lib.nn.functional.embedding_bag(weight=wt, mode=mode, **args)
        out.backward(lib.tensor(rnd(*out.shape, seed=2)))
        res.append((out, wt.grad))
    (eo, eg), (to, tg) = res
    close(eo, to, atol=1e-6)
    close(eg, tg, atol=1e-6)
    assert eo.grad_fn.name() == to.grad_fn.name() == "EmbeddingBagBackward0"


def test_embedding_bag_per_sample_weights_and_module(torch):
    idx, off = np.array([1, 2, 4, 5, 4, 3, 2, 9]), np.array([0, 4])
    run_both(torch, lambda L, w, p: L.nn.functional.embedding_bag(L.tensor(idx), w, L.tensor(off), mode="sum",
                                                                     per_sample_weights=p),
             [rnd(10, 3), rnd(8, seed=1)])
    e, t = engine.nn.EmbeddingBag(10, 3, mode="max"), torch.nn.EmbeddingBag(10, 3, mode="max")
    assert repr(e) == repr(t) and list(e.state_dict()) == list(t.state_dict())
    e.load_state_dict({"weight": engine.tensor(t.weight.detach().numpy())})
    close(e(engine.tensor(idx), engine.tensor(off)), t(torch.tensor(idx), torch.tensor(off)))
    p = engine.nn.EmbeddingBag(10, 3, padding_idx=2)
    assert p.weight[2].tolist() == [0.0, 0.0, 0.0]
    assert repr(p) == repr(torch.nn.EmbeddingBag(10, 3, padding_idx=2))
    engine_max_norm = engine.nn.EmbeddingBag(10, 3, max_norm=1.0, mode="sum")
    engine_max_norm(engine.tensor([[1, 2]]))
    assert np.linalg.norm(engine_max_norm.weight.detach().numpy()[[1, 2]], axis=1).max() <= 1.0 + 1e-5


@pytest.mark.parametrize("case", [
    lambda L: L.nn.functional.embedding_bag(L.tensor([1, 2]), L.zeros(10, 3)),
    lambda L: L.nn.functional.embedding_bag(L.tensor([[1, 2]]), L.zeros(10, 3), L.tensor([0])),
    lambda L: L.nn.functional.embedding_bag(L.tensor([1, 2]), L.zeros(10, 3), L.tensor([0]), mode="mean",
                                            per_sample_weights=L.ones(2)),
    lambda L: L.nn.functional.embedding_bag(L.tensor([1, 2]), L.zeros(10, 3), L.tensor([1])),
    lambda L: L.nn.functional.embedding_bag(L.tensor([1, 2]), L.zeros(10, 3), L.tensor([0, 3])),
    lambda L: L.nn.functional.embedding_bag(L.tensor([1, 2]), L.zeros(10, 3), L.tensor([0]), mode="avg"),
    lambda L: L.nn.functional.embedding_bag(L.tensor([1, 2]), L.zeros(10, 3), L.tensor([[0]])),
    lambda L: L.nn.functional.embedding_bag(L.tensor([1, 2]), L.zeros(10, 3), L.tensor([0]), mode="max",
                                            scale_grad_by_freq=True),
    lambda L: L.nn.functional.embedding_bag(L.tensor([[[1, 2]]]), L.zeros(10, 3)),
])
def test_embedding_bag_errors(torch, case):
    e, t = _error(engine, case), _error(torch, case)
    assert e[0] == t[0]
    assert e[1].split(" of type")[0] == t[1].split(" of type")[0]


def test_embedding_bag_gradcheck():
    idx, off = engine.tensor([1, 2, 4, 5, 4, 3, 2, 9]), engine.tensor([0, 3, 3])
    for mode in ("sum", "mean", "max"):
        gradcheck(lambda w, m=mode: EF.embedding_bag(idx, w, off, mode=m), f64(10, 3))
    gradcheck(lambda w, p: EF.embedding_bag(idx, w, off, mode="sum", per_sample_weights=p), f64(10, 3), f64(8))


# --- nn.utils: weight_norm (hook-based), parameters_to_vector, clip_grad_value_ ---------------

@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm(torch, dim):
    with pytest.warns(FutureWarning, match="`torch.nn.utils.weight_norm` is deprecated"):
        em = engine.nn.utils.weight_norm(engine.nn.Conv1d(3, 4, 2), dim=dim)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tm = torch.nn.utils.weight_norm(torch.nn.Conv1d(3, 4, 2), dim=dim)
    assert [(k, tuple(v.shape)) for k, v in em.state_dict().items()] == \
        [(k, tuple(v.shape)) for k, v in tm.state_dict().items()]
    em.load_state_dict({k: engine.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    x = rnd(2, 3, 5)
    eo, to = em(engine.tensor(x)), tm(torch.tensor(x))
    close(eo, to, atol=1e-6)
    eo.sum().backward(), to.sum().backward()
    close(em.weight_g.grad, tm.weight_g.grad, atol=1e-5)
    close(em.weight_v.grad, tm.weight_v.grad, atol=1e-5)
    with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks on the same parameter weight"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            engine.nn.utils.weight_norm(em, dim=dim)
    engine.nn.utils.remove_weight_norm(em)
    torch.nn.utils.remove_weight_norm(tm)
    assert list(em.state_dict()) == list(tm.state_dict())
    close(em.weight, tm.weight, atol=1e-6)
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found in"):
        engine.nn.utils.remove_weight_norm(em)


def test_parameters_to_vector_and_clip_grad_value(torch):
    e, t = engine.nn.Linear(3, 2), torch.nn.Linear(3, 2)
    e.load_state_dict({k: engine.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    ev = engine.nn.utils.parameters_to_vector(e.parameters())
    tv = torch.nn.utils.parameters_to_vector(t.parameters())
    close(ev, tv)
    engine.nn.utils.vector_to_parameters(ev * 2, e.parameters())
    torch.nn.utils.vector_to_parameters(tv * 2, t.parameters())
    close(e.weight, t.weight)
    x = rnd(4, 3) * 10
    e(engine.tensor(x)).pow(2).sum().backward()
    t(torch.tensor(x)).pow(2).sum().backward()
    engine.nn.utils.clip_grad_value_(e.parameters(), 0.5)
    torch.nn.utils.clip_grad_value_(t.parameters(), 0.5)
    close(e.weight.grad, t.weight.grad)
    close(e.bias.grad, t.bias.grad)


@pytest.mark.parametrize("kind", ["Linear", "Conv2d", "ConvTranspose2d"])
def test_spectral_norm(torch, kind):
    args = (3, 4) if kind == "Linear" else (3, 4, 2)
    tm = torch.nn.utils.spectral_norm(getattr(torch.nn, kind)(*args))
    em = engine.nn.utils.spectral_norm(getattr(engine.nn, kind)(*args))
    assert [(k, tuple(v.shape)) for k, v in em.state_dict().items()] == \
        [(k, tuple(v.shape)) for k, v in tm.state_dict().items()]
    em.load_state_dict({k: engine.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    x = rnd(2, 3) if kind == "Linear" else rnd(2, 3, 5, 5)
    for mode in ("train", "eval", "train"):
        getattr(tm, mode)(), getattr(em, mode)()
        eo, to = em(engine.tensor(x)), tm(torch.tensor(x))
        close(eo, to, atol=1e-5)
        close(em.weight_u, tm.weight_u, atol=1e-5)  # power iteration only in training mode
    eo.sum().backward(), to.sum().backward()
    close(em.weight_orig.grad, tm.weight_orig.grad, atol=1e-4)
    with pytest.raises(RuntimeError, match="Cannot register two spectral_norm hooks on the same parameter weight"):
        engine.nn.utils.spectral_norm(em)
    engine.nn.utils.remove_spectral_norm(em)
    torch.nn.utils.remove_spectral_norm(tm)
    assert list(em.state_dict()) == list(tm.state_dict())
    close(em.weight, tm.weight, atol=1e-5)
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found in"):
        engine.nn.utils.remove_spectral_norm(em)


@pytest.mark.parametrize("dim", [0, 1, None])
def test_parametrizations_weight_norm(torch, dim):
    from torch.nn.utils import parametrize as tpz

    em = engine.nn.utils.parametrizations.weight_norm(engine.nn.Conv1d(3, 4, 2), dim=dim)
    tm = torch.nn.utils.parametrizations.weight_norm(torch.nn.Conv1d(3, 4, 2), dim=dim)
    assert repr(em) == repr(tm) and type(em).__name__ == "ParametrizedConv1d"
    assert [(k, tuple(v.shape)) for k, v in em.state_dict().items()] == \
        [(k, tuple(v.shape)) for k, v in tm.state_dict().items()]
    em.load_state_dict({k: engine.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    assert engine.nn.utils.parametrize.is_parametrized(em, "weight")
    x = rnd(2, 3, 5)
    eo, to = em(engine.tensor(x)), tm(torch.tensor(x))
    close(eo, to, atol=1e-6)
    eo.sum().backward(), to.sum().backward()
    for k in ("original0", "original1"):
        close(getattr(em.parametrizations.weight, k).grad, getattr(tm.parametrizations.weight, k).grad, atol=1e-5)
    with engine.no_grad():
        em.weight = engine.ones(4, 3, 2)  # the setter goes through right_inverse
    np.testing.assert_allclose(em.weight.detach().numpy(), np.ones((4, 3, 2)), atol=1e-6)
    engine.nn.utils.parametrize.remove_parametrizations(em, "weight")
    with torch.no_grad():
        tm.weight = torch.ones(4, 3, 2)
    tpz.remove_parametrizations(tm, "weight")
    assert type(em).__name__ == "Conv1d" and repr(em) == repr(tm)
    assert list(em.state_dict()) == list(tm.state_dict())
    close(em.weight, tm.weight, atol=1e-6)


@pytest.mark.parametrize("case", [
    lambda L: L.nn.utils.parametrize.register_parametrization(L.nn.Linear(2, 2), "scale", L.nn.Identity()),
    lambda L: L.nn.utils.parametrize.remove_parametrizations(
        L.nn.utils.parametrizations.weight_norm(L.nn.Linear(2, 2)), "weight", leave_parametrized=False),
])
def test_parametrize_errors(torch, case):
    e, t = _error(engine, case), _error(torch, case)
    assert e[0] == t[0] and e[1].split("'")[-2:] == t[1].split("'")[-2:]


def test_user_parametrization(torch):
    class Symmetric(engine.nn.Module):
        def forward(self, x):
            return x.triu() + x.triu(1).transpose(0, 1)

    m = engine.nn.utils.parametrize.register_parametrization(engine.nn.Linear(3, 3), "weight", Symmetric())
    w = m.weight.detach().numpy()
    np.testing.assert_array_equal(w, w.T)
    assert list(m.state_dict()) == ["bias", "parametrizations.weight.original"]
    m(engine.randn(2, 3)).sum().backward()
    g = m.parametrizations.weight.original.grad.numpy()
    assert np.all(np.tril(g, -1) == 0)  # the strictly-lower part is never used
