"""Pooling against torch: unpooling, the *_with_indices pools, 3-D (adaptive) pools and their modules,
adaptive_max_pool1d, LP pools and fractional max pools: values, indices, gradients (and finite
differences), grad_fn names, module attributes/reprs and torch's errors for bad sizes."""

from __future__ import annotations

import numpy as np
import pytest

import engine
import engine.nn as enn
import engine.nn.functional as EF
from tests.gradcheck import gradcheck

from .conftest import close, error_of, f64, rnd, run_both

torch = pytest.importorskip("torch")
TF = torch.nn.functional

RNG = np.random.default_rng(7)


def pair(shape, seed=0, dtype=np.float32):
    a = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return engine.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


def check(e_out, t_out, e_in, t_in, atol=1e-5):
    """Values equal; gradients of a random-weighted sum equal."""
    np.testing.assert_allclose(e_out.detach().numpy(), t_out.detach().numpy(), rtol=1e-5, atol=atol)
    w = np.random.default_rng(1).standard_normal(tuple(t_out.shape)).astype(np.float32)
    (e_out * engine.tensor(w)).sum().backward()
    (t_out * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(e_in.grad.numpy(), t_in.grad.numpy(), rtol=1e-5, atol=atol)


# --- unpooling --------------------------------------------------------------------------------

@pytest.mark.parametrize("nd,shape,kw", [
    (1, (2, 3, 9), dict(kernel_size=2)),
    (1, (3, 8), dict(kernel_size=3, stride=2, padding=1)),
    (2, (2, 3, 5, 6), dict(kernel_size=2)),
    (2, (3, 7, 7), dict(kernel_size=3, stride=2, padding=1)),
    (3, (2, 2, 4, 6, 6), dict(kernel_size=2)),
    (3, (2, 5, 5, 5), dict(kernel_size=3, stride=2, padding=1)),
])
def test_max_unpool_matches_torch(nd, shape, kw):
    ex, tx = pair(shape)
    epool, tpool = getattr(EF, f"max_pool{nd}d"), getattr(TF, f"max_pool{nd}d")
    ey, ei = epool(ex, return_indices=True, **kw)
    ty, ti = tpool(tx, return_indices=True, **kw)
    np.testing.assert_array_equal(ei.numpy(), ti.numpy())
    eu = getattr(EF, f"max_unpool{nd}d")(ey, ei, **kw)
    tu = getattr(TF, f"max_unpool{nd}d")(ty, ti, **kw)
    assert eu.grad_fn.name() == tu.grad_fn.name()
    check(eu, tu, ex, tx)


def test_max_unpool_output_size_and_module():
    ex, tx = pair((2, 3, 5, 7))
    ey, ei = enn.MaxPool2d(2, return_indices=True)(ex)
    ty, ti = torch.nn.MaxPool2d(2, return_indices=True)(tx)
    for size in [(5, 7), [2, 3, 5, 7], engine.Size([5, 7])]:
        eu = enn.MaxUnpool2d(2)(ey, ei, output_size=size)
        tu = torch.nn.MaxUnpool2d(2)(ty, ti, output_size=tuple(size))
        assert tuple(eu.shape) == tuple(tu.shape) == (2, 3, 5, 7)
        np.testing.assert_array_equal(eu.detach().numpy(), tu.detach().numpy())
    for cls in ("MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d"):
        e, t = getattr(enn, cls)(2, stride=1, padding=1), getattr(torch.nn, cls)(2, stride=1, padding=1)
        assert repr(e) == repr(t)
        assert (e.kernel_size, e.stride, e.padding) == (t.kernel_size, t.stride, t.padding)


def _err(fn_e, fn_t):
    with pytest.raises(Exception) as te:
        fn_t()
    with pytest.raises(type(te.value)) as ee:
        fn_e()
    assert str(ee.value) == str(te.value)


def test_max_unpool_errors_match_torch():
    ex, tx = pair((2, 3, 4, 6))
    ey, ei = EF.max_pool2d(ex, 2, return_indices=True)
    ty, ti = TF.max_pool2d(tx, 2, return_indices=True)
    ex3, tx3 = pair((1, 2, 4, 4, 4))
    ey3, ei3 = EF.max_pool3d(ex3, 2, return_indices=True)
    ty3, ti3 = TF.max_pool3d(tx3, 2, return_indices=True)
    cases = [
        (lambda F, y, i: F.max_unpool2d(y, i, 2, output_size=(3, 3))),
        (lambda F, y, i: F.max_unpool2d(y, i, 2, output_size=(1, 2, 3))),
        (lambda F, y, i: F.max_unpool2d(y, i + (i == i.max()) * 100, 2)),
        (lambda F, y, i: F.max_unpool2d(y, i - (i == i.min()) * 100, 2)),
        (lambda F, y, i: F.max_unpool2d(y, i.float(), 2)),
        (lambda F, y, i: F.max_unpool2d(y, i[:, :1], 2)),
        (lambda F, y, i: F.max_unpool2d(y[0, 0], i[0, 0], 2)),
        (lambda F, y, i: F.max_unpool1d(y[0], i[0] + (i[0] == i[0].max()) * 1000, 2)),
    ]
    for case in cases:
        _err(lambda case=case: case(EF, ey, ei), lambda case=case: case(TF, ty, ti))
    _err(lambda: EF.max_unpool3d(ey3, ei3 + (ei3 == ei3.max()) * 1000, 2),
         lambda: TF.max_unpool3d(ty3, ti3 + (ti3 == ti3.max()) * 1000, 2))
    _err(lambda: EF.max_unpool3d(ey3[0, 0], ei3[0, 0], 2), lambda: TF.max_unpool3d(ty3[0, 0], ti3[0, 0], 2))


def test_max_unpool_gradcheck():
    x = engine.tensor(RNG.standard_normal((1, 2, 4, 6)), requires_grad=True)
    _, i = EF.max_pool2d(x.detach(), 2, return_indices=True)
    gradcheck(lambda v: EF.max_unpool2d(v, i, 2), engine.tensor(RNG.standard_normal((1, 2, 2, 3)),
                                                                 requires_grad=True))


# --- the *_with_indices spellings --------------------------------------------------------------

@pytest.mark.parametrize("name,shape,args", [
    ("max_pool1d_with_indices", (2, 3, 9), (3, 2, 1)),
    ("max_pool2d_with_indices", (2, 3, 7, 6), (3, 2, 1)),
    ("max_pool3d_with_indices", (1, 2, 5, 6, 4), (2,)),
    ("adaptive_max_pool1d_with_indices", (2, 3, 10), (4,)),
    ("adaptive_max_pool2d_with_indices", (2, 3, 7, 9), ((3, 4),)),
    ("adaptive_max_pool3d_with_indices", (1, 2, 5, 7, 6), ((2, 3, 4),)),
])
def test_with_indices_spellings(name, shape, args):
    ex, tx = pair(shape)
    ey, ei = getattr(EF, name)(ex, *args)
    ty, ti = getattr(TF, name)(tx, *args)
    np.testing.assert_array_equal(ei.numpy(), ti.numpy())
    assert ei.dtype == engine.int64
    check(ey, ty, ex, tx)


# --- 3-D adaptive pools ------------------------------------------------------------------------

@pytest.mark.parametrize("shape,size", [
    ((2, 3, 5, 7, 6), (2, 3, 4)), ((3, 6, 6, 6), 3), ((1, 2, 5, 7, 6), (None, 2, 5)),
    ((1, 2, 4, 4, 4), 1), ((1, 1, 3, 4, 5), (5, 6, 7)),
])
def test_adaptive_pool3d_matches_torch(shape, size):
    for name in ("adaptive_avg_pool3d", "adaptive_max_pool3d"):
        ex, tx = pair(shape)
        ey, ty = getattr(EF, name)(ex, size), getattr(TF, name)(tx, size)
        assert ey.grad_fn.name() == ty.grad_fn.name()
        check(ey, ty, ex, tx)
    e_mod = enn.AdaptiveMaxPool3d(size, return_indices=True)
    t_mod = torch.nn.AdaptiveMaxPool3d(size, return_indices=True)
    assert repr(e_mod) == repr(t_mod) and repr(enn.AdaptiveAvgPool3d(size)) == repr(torch.nn.AdaptiveAvgPool3d(size))
    ex, tx = pair(shape, seed=3)
    np.testing.assert_array_equal(e_mod(ex)[1].numpy(), t_mod(tx)[1].numpy())


def test_adaptive_pool3d_gradcheck_and_errors():
    x = engine.tensor(RNG.standard_normal((1, 2, 4, 5, 3)), requires_grad=True)
    gradcheck(lambda v: EF.adaptive_avg_pool3d(v, (3, 2, 2)), x)
    gradcheck(lambda v: EF.adaptive_max_pool3d(v, (3, 2, 2)), x)
    for name in ("adaptive_avg_pool3d", "adaptive_max_pool3d"):
        ex, tx = pair((3, 4, 5))
        _err(lambda name=name, ex=ex: getattr(EF, name)(ex, 2), lambda name=name, tx=tx: getattr(TF, name)(tx, 2))
        ex, tx = pair((1, 0, 4, 5, 2))
        _err(lambda name=name, ex=ex: getattr(EF, name)(ex, 2), lambda name=name, tx=tx: getattr(TF, name)(tx, 2))


# --- LP pools ------------------------------------------------------------------------------------

@pytest.mark.parametrize("nd,shape,args", [
    (1, (2, 3, 9), (2.0, 3)), (1, (3, 10), (3.0, 3, 2, True)), (1, (2, 3, 9), (float("inf"), 2)),
    (2, (2, 3, 7, 6), (2.0, 3)), (2, (2, 3, 7, 6), (1.5, (2, 3), 2, True)), (2, (3, 6, 6), (-float("inf"), 2)),
    (3, (1, 2, 5, 6, 4), (2.0, 2)), (3, (2, 4, 4, 4), (3.0, (2, 1, 2), (1, 1, 2))),
])
def test_lp_pool_matches_torch(nd, shape, args):
    ex, tx = pair(shape)
    if args[0] not in (2.0, float("inf"), -float("inf")):  # fractional powers of negatives are NaN in both
        ex = engine.tensor(np.abs(ex.detach().numpy()) + 0.1, requires_grad=True)
        tx = torch.tensor(ex.detach().numpy(), requires_grad=True)
    ey = getattr(EF, f"lp_pool{nd}d")(ex, *args)
    ty = getattr(TF, f"lp_pool{nd}d")(tx, *args)
    assert ey.grad_fn.name() == ty.grad_fn.name()
    check(ey, ty, ex, tx, atol=1e-4)
    e_mod, t_mod = getattr(enn, f"LPPool{nd}d")(*args), getattr(torch.nn, f"LPPool{nd}d")(*args)
    assert repr(e_mod) == repr(t_mod)
    np.testing.assert_allclose(e_mod(ex).detach().numpy(), t_mod(tx).detach().numpy(), rtol=1e-5, atol=1e-5)


def test_lp_pool_gradcheck():
    x = engine.tensor(RNG.uniform(0.5, 2.0, (1, 2, 5, 4)), requires_grad=True)
    gradcheck(lambda v: EF.lp_pool2d(v, 3.0, 2, 1), x)


def test_lp_pool_too_small_input_is_torch_error():
    ex, tx = pair((1, 1, 2, 2))
    _err(lambda: EF.lp_pool2d(ex, 2.0, 3), lambda: TF.lp_pool2d(tx, 2.0, 3))


# --- fractional max pools -----------------------------------------------------------------------

@pytest.mark.parametrize("nd,shape,k,kw", [
    (2, (2, 3, 11, 9), 3, dict(output_size=(5, 4))),
    (2, (3, 10, 10), (2, 3), dict(output_ratio=(0.5, 0.5))),
    (2, (2, 2, 7, 8), 2, dict(output_size=6)),
    (2, (1, 2, 6, 6), 2, dict(output_size=1)),
    (3, (2, 2, 8, 7, 9), 2, dict(output_size=(3, 4, 5))),
    (3, (2, 7, 7, 7), (2, 3, 2), dict(output_ratio=(0.5, 0.6, 0.7))),
])
def test_fractional_max_pool_matches_torch_with_same_samples(nd, shape, k, kw):
    n = 1 if len(shape) == nd + 1 else shape[0]
    for seed in range(3):
        samples = np.random.default_rng(seed).uniform(0, 1, (n, shape[-nd - 1], nd)).astype(np.float32)
        ex, tx = pair(shape, seed=seed)
        ey, ei = getattr(EF, f"fractional_max_pool{nd}d")(ex, k, return_indices=True,
                                                           _random_samples=engine.tensor(samples), **kw)
        ty, ti = getattr(TF, f"fractional_max_pool{nd}d")(tx, k, return_indices=True,
                                                           _random_samples=torch.tensor(samples), **kw)
        np.testing.assert_array_equal(ei.numpy(), ti.numpy())
        assert ey.grad_fn.name() == ty.grad_fn.name()
        check(ey, ty, ex, tx)


def test_fractional_max_pool_double_and_module_buffer():
    samples = np.random.default_rng(5).uniform(0, 1, (2, 3, 2))
    ex, tx = pair((2, 3, 9, 9), dtype=np.float64)
    e_mod = enn.FractionalMaxPool2d(3, output_size=4, _random_samples=engine.tensor(samples))
    t_mod = torch.nn.FractionalMaxPool2d(3, output_size=4, _random_samples=torch.tensor(samples))
    assert list(e_mod.state_dict()) == list(t_mod.state_dict()) == ["_random_samples"]
    assert repr(e_mod) == repr(t_mod)
    check(e_mod(ex), t_mod(tx), ex, tx)
    gradcheck(lambda v: e_mod(v), engine.tensor(RNG.standard_normal((2, 3, 9, 9)), requires_grad=True))
    plain = enn.FractionalMaxPool3d(2, output_ratio=0.5)
    assert plain.output_ratio == (0.5, 0.5, 0.5) and plain.output_size is None
    assert list(plain.state_dict()) == []


def test_fractional_max_pool_draws_samples_with_the_generator():
    x = engine.randn(2, 3, 10, 10)
    engine.manual_seed(0)
    a = EF.fractional_max_pool2d(x, 2, output_size=5)
    engine.manual_seed(0)
    b = EF.fractional_max_pool2d(x, 2, output_size=5)
    engine.manual_seed(1)
    c, ci = EF.fractional_max_pool2d(x, 2, output_size=5, return_indices=True)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert tuple(c.shape) == (2, 3, 5, 5)
    # every output is the maximum of some 2x2 block of its plane
    np.testing.assert_array_equal(np.take_along_axis(x.numpy().reshape(2, 3, -1), ci.numpy().reshape(2, 3, -1), -1),
                                  c.numpy().reshape(2, 3, -1))


def test_fractional_max_pool_errors_match_torch():
    ex, tx = pair((2, 3, 5, 6))
    ex3, tx3 = pair((1, 2, 4, 4, 4))
    for make in [lambda m: m.FractionalMaxPool2d(3), lambda m: m.FractionalMaxPool2d(3, 2, 0.5),
                 lambda m: m.FractionalMaxPool2d(3, output_ratio=1.5),
                 lambda m: m.FractionalMaxPool3d(2, output_ratio=(0.5, 0.5, 0.0))]:
        _err(lambda make=make: make(enn), lambda make=make: make(torch.nn))
    _err(lambda: EF.fractional_max_pool2d(ex, 3, output_size=(5, 5)),
         lambda: TF.fractional_max_pool2d(tx, 3, output_size=(5, 5)))
    _err(lambda: EF.fractional_max_pool2d(ex, 3, output_size=(2, 5)),
         lambda: TF.fractional_max_pool2d(tx, 3, output_size=(2, 5)))
    _err(lambda: EF.fractional_max_pool2d(ex, 3, output_size=2, _random_samples=engine.rand(1, 3, 2)),
         lambda: TF.fractional_max_pool2d(tx, 3, output_size=2, _random_samples=torch.rand(1, 3, 2)))
    _err(lambda: EF.fractional_max_pool2d(ex, 3), lambda: TF.fractional_max_pool2d(tx, 3))
    _err(lambda: EF.fractional_max_pool3d(ex3, 2, output_size=4),
         lambda: TF.fractional_max_pool3d(tx3, 2, output_size=4))
    _err(lambda: EF.fractional_max_pool3d(ex3, 2, output_size=3),
         lambda: TF.fractional_max_pool3d(tx3, 2, output_size=3))


def test_fractional_max_pool_nan_windows_match_torch():
    """torch takes a NaN over any number, and the last NaN of a window over an earlier one."""
    x = np.random.default_rng(8).standard_normal((1, 2, 9, 9)).astype(np.float32)
    x[0, 0, 2, 3] = x[0, 0, 3, 4] = x[0, 1, 5, 5] = np.nan
    samples = np.random.default_rng(9).uniform(0, 1, (1, 2, 2)).astype(np.float32)
    ey, ei = EF.fractional_max_pool2d(engine.tensor(x), 3, output_size=4, return_indices=True,
                                      _random_samples=engine.tensor(samples))
    ty, ti = TF.fractional_max_pool2d(torch.tensor(x), 3, output_size=4, return_indices=True,
                                      _random_samples=torch.tensor(samples))
    np.testing.assert_array_equal(ei.numpy(), ti.numpy())
    np.testing.assert_array_equal(np.isnan(ey.numpy()), np.isnan(ty.numpy()))
    assert np.isnan(ey.numpy()).any()


# 3-D pools and adaptive_max_pool1d: modules, values, graphs, errors

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
    assert error_of(engine, case) == error_of(torch, case)


def test_pool_gradchecks():
    x = f64(1, 2, 4, 5, 3)
    gradcheck(lambda a: EF.max_pool3d(a, 2, stride=1, padding=1), x)
    gradcheck(lambda a: EF.avg_pool3d(a, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=False), x)
    gradcheck(lambda a: EF.adaptive_max_pool1d(a, 3), f64(2, 3, 7))
