"""erf/erfc/erfinv, lerp, addcmul/addcdiv, nan_to_num, logit (engine/_ops/special.py) and their
in-place methods: values, gradients and grad_fn names against torch, finite-difference gradient
checks without torch, and torch's errors."""

from __future__ import annotations

import numpy as np
import pytest

import engine
from tests.gradcheck import gradcheck

RNG = np.random.default_rng(0)
X = RNG.uniform(-2.5, 2.5, (3, 4))
P = RNG.uniform(0.05, 0.95, (3, 4))
U = RNG.uniform(-0.95, 0.95, (3, 4))
B = RNG.uniform(0.5, 2.0, (4,))

# name -> (call(lib, *tensors), inputs)
CASES = {
    "erf": (lambda lib, x: lib.erf(x), [X]),
    "erf_large": (lambda lib, x: lib.erf(x), [X * 3]),
    "erfc": (lambda lib, x: lib.erfc(x), [X * 2.5]),
    "erfinv": (lambda lib, x: lib.erfinv(x), [U]),
    "lerp_scalar": (lambda lib, a, b: lib.lerp(a, b, 0.3), [X, B]),
    "lerp_tensor": (lambda lib, a, b, w: lib.lerp(a, b, w), [X, B, P]),
    "lerp_method": (lambda lib, a, b: a.lerp(b, 0.9), [X, X[::-1].copy()]),
    "addcmul": (lambda lib, a, b, c: lib.addcmul(a, b, c, value=0.5), [X, B, P]),
    "addcdiv": (lambda lib, a, b, c: lib.addcdiv(a, b, c, value=-2), [B, X, P]),
    "addcdiv_method": (lambda lib, a, b, c: a.addcdiv(b, c), [X, P, B]),
    "logit": (lambda lib, p: lib.logit(p), [P]),
    "logit_eps": (lambda lib, p: lib.logit(p, eps=0.2), [P]),
    "nan_to_num": (lambda lib, x: lib.nan_to_num(
        lib.where(x > 1.5, float("inf"), lib.where(x < -1.5, float("nan"), x)), posinf=7.0), [X]),
}


def _run(lib, name, dtype):
    call, arrays = CASES[name]
    ts = [lib.tensor(a, dtype=dtype, requires_grad=True) for a in arrays]
    out = call(lib, *ts)
    out.backward(lib.tensor(np.linspace(-1, 1, out.numel()).reshape(tuple(out.shape)), dtype=dtype))
    return out, [t.grad for t in ts]


@pytest.mark.parametrize("name", sorted(CASES))
def test_parity(name):
    torch = pytest.importorskip("torch")
    e_out, e_grads = _run(engine, name, engine.float32)
    t_out, t_grads = _run(torch, name, torch.float32)
    np.testing.assert_allclose(e_out.detach().numpy(), t_out.detach().numpy(), rtol=2e-6, atol=1e-6)
    for e, t in zip(e_grads, t_grads):
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=2e-5, atol=1e-5)
    assert e_out.grad_fn.name() == t_out.grad_fn.name()


@pytest.mark.parametrize("name", sorted(set(CASES) - {"nan_to_num", "erf_large"}))
def test_gradcheck(name):
    call, arrays = CASES[name]
    gradcheck(lambda *ts: call(engine, *ts),
              *[engine.tensor(a, dtype=engine.float64, requires_grad=True) for a in arrays])


def test_nan_to_num_gradient_is_zero_where_replaced():
    x = engine.tensor([1.0, float("nan"), float("inf"), -float("inf")], requires_grad=True)
    y = engine.nan_to_num(x)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1, 0, 0, 0])
    big = float(np.finfo(np.float32).max)
    np.testing.assert_array_equal(y.detach().numpy(), [1.0, 0.0, big, -big])


def test_edges_as_torch():
    torch = pytest.importorskip("torch")
    for lib_call in (lambda lib: lib.erfinv(lib.tensor([1.0, -1.0, 1.5, 0.0])),
                     lambda lib: lib.logit(lib.tensor([0.0, 1.0, 0.5, -0.1])),
                     lambda lib: lib.logit(lib.tensor([0.0, 1.0, 0.5, -0.1]), eps=0.1),
                     lambda lib: lib.erfc(lib.tensor([5.0, 9.0, -3.0, 0.2])),
                     lambda lib: lib.erf(lib.tensor([1, 2])),
                     lambda lib: lib.nan_to_num(lib.tensor([1, 2]))):
        e, t = lib_call(engine), lib_call(torch)
        assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6)
    # logit's gradient outside [0, 1] is NaN without eps and 0 outside [eps, 1 - eps] with it
    for eps in (None, 0.1):
        grads = []
        for lib in (engine, torch):
            p = lib.tensor([-0.1, 0.05, 0.5, 1.2], requires_grad=True)
            lib.logit(p, eps=eps).sum().backward()
            grads.append(p.grad.numpy())
        np.testing.assert_allclose(grads[0], grads[1], rtol=1e-6)


def test_in_place_methods_as_torch():
    torch = pytest.importorskip("torch")
    results = []
    for lib in (engine, torch):
        ema = lib.tensor(X, dtype=lib.float32)
        p = lib.tensor(P, dtype=lib.float32)
        ema.lerp_(p, 0.1).addcmul_(p, p, value=0.5).addcdiv_(p, p + 1, value=2).erf_()
        half = lib.tensor(U, dtype=lib.float32).erfinv_()
        q = lib.tensor(P, dtype=lib.float32).logit_(eps=0.3)
        r = lib.tensor([float("nan"), 1.0]).nan_to_num_(nan=5.0)
        results.append([v.numpy() for v in (ema, half, q, r)])
    for e, t in zip(*results):
        np.testing.assert_allclose(e, t, rtol=2e-6, atol=1e-6)


def test_in_place_lerp_records_the_graph():
    torch = pytest.importorskip("torch")
    grads = []
    for lib in (engine, torch):
        w = lib.tensor(X, dtype=lib.float32, requires_grad=True)
        target = lib.tensor(P, dtype=lib.float32, requires_grad=True)
        y = w * 1.0
        y.lerp_(target, 0.25)
        assert y.grad_fn.name() == "LerpBackward0"
        (y * y).sum().backward()
        grads.append((w.grad.numpy(), target.grad.numpy()))
    for e, t in zip(*grads):
        np.testing.assert_allclose(e, t, rtol=1e-6)


@pytest.mark.parametrize("case", ["lerp_dtype", "lerp_int", "addcdiv_int", "addcmul_shapes"])
def test_errors_as_torch(case):
    torch = pytest.importorskip("torch")
    calls = {
        "lerp_dtype": lambda lib: lib.lerp(lib.zeros(2), lib.zeros(2, dtype=lib.float64), 0.5),
        "lerp_int": lambda lib: lib.lerp(lib.zeros(2, dtype=lib.long), lib.zeros(2, dtype=lib.long), 0.5),
        "addcdiv_int": lambda lib: lib.addcdiv(lib.zeros(2, dtype=lib.long), lib.ones(2, dtype=lib.long),
                                               lib.ones(2, dtype=lib.long)),
        "addcmul_shapes": lambda lib: lib.addcmul(lib.zeros(2), lib.zeros(3), lib.zeros(2)),
    }
    with pytest.raises(Exception) as t_err:
        calls[case](torch)
    with pytest.raises(Exception) as e_err:
        calls[case](engine)
    assert type(e_err.value) is type(t_err.value)
    assert str(e_err.value) == str(t_err.value)


def test_errors_without_torch():
    with pytest.raises(RuntimeError, match="expected dtype float for `end` but got dtype double"):
        engine.lerp(engine.zeros(2), engine.zeros(2, dtype=engine.float64), 0.5)
    with pytest.raises(NotImplementedError, match="\"lerp_kernel_scalar\" not implemented for 'Long'"):
        engine.lerp(engine.zeros(2, dtype=engine.long), engine.zeros(2, dtype=engine.long), 0.5)
    with pytest.raises(RuntimeError, match="Integer division with addcdiv is no longer supported"):
        engine.addcdiv(engine.zeros(2), engine.ones(2, dtype=engine.long), engine.ones(2, dtype=engine.long))


# --- exp2, log10, hyperbolic/inverse trig, deg2rad/rad2deg, sinc, hypot, logaddexp, xlogy -------

POS = RNG.uniform(0.2, 3.0, (3, 4))
GT1 = RNG.uniform(1.2, 3.0, (3, 4))
UNARY = {  # name -> input array (inside the domain, away from kinks)
    "exp2": X, "log10": POS, "sinh": X, "cosh": X, "asin": U, "acos": U, "atan": X * 2, "asinh": X * 2,
    "acosh": GT1, "atanh": U, "deg2rad": X * 50, "rad2deg": X, "sinc": X,
}
BINARY = {
    "hypot": (lambda lib, a, b: lib.hypot(a, b), [X, B]),
    "logaddexp": (lambda lib, a, b: lib.logaddexp(a, b * 30), [X * 30, B]),
    "xlogy": (lambda lib, a, b: lib.xlogy(a, b), [X, P]),
    "xlogy_number_y": (lambda lib, a: lib.xlogy(a, 2.5), [X]),
    "xlogy_number_x": (lambda lib, b: lib.xlogy(1.5, b), [P]),
    "xlogy_method": (lambda lib, a, b: a.xlogy(b), [P, B]),
}


def _run_case(lib, call, arrays, dtype):
    ts = [lib.tensor(a, dtype=dtype, requires_grad=True) for a in arrays]
    out = call(lib, *ts)
    out.backward(lib.tensor(np.linspace(-1, 1, out.numel()).reshape(tuple(out.shape)), dtype=dtype))
    return out, [t.grad for t in ts]


def _function(name):
    return lambda lib, a: getattr(lib, name)(a)


def _method(name):
    return lambda lib, a: getattr(a, name)()


def _all_cases():
    cases = {f"unary_{n}": (_function(n), [arr]) for n, arr in UNARY.items()}
    cases.update({f"method_{n}": (_method(n), [arr]) for n, arr in UNARY.items()})
    cases.update(BINARY)
    return cases


MORE = _all_cases()


@pytest.mark.parametrize("name", sorted(MORE))
def test_more_parity(name):
    torch = pytest.importorskip("torch")
    call, arrays = MORE[name]
    e_out, e_grads = _run_case(engine, call, arrays, engine.float32)
    t_out, t_grads = _run_case(torch, call, arrays, torch.float32)
    np.testing.assert_allclose(e_out.detach().numpy(), t_out.detach().numpy(), rtol=2e-6, atol=1e-6)
    for e, t in zip(e_grads, t_grads):
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=2e-5, atol=1e-5)
    assert e_out.grad_fn.name() == t_out.grad_fn.name()


@pytest.mark.parametrize("name", sorted(MORE))
def test_more_gradcheck(name):
    call, arrays = MORE[name]
    gradcheck(lambda *ts: call(engine, *ts), *[engine.tensor(a, dtype=engine.float64, requires_grad=True)
                                                for a in arrays])


def test_more_edges_as_torch():
    torch = pytest.importorskip("torch")
    calls = [lambda lib: lib.sinc(lib.tensor([0.0, 1.0, -2.5])),
             lambda lib: lib.xlogy(lib.tensor([0.0, 0.0, 2.0]), lib.tensor([0.0, float("nan"), 0.0])),
             lambda lib: lib.exp2(lib.tensor([1, 2])),
             lambda lib: lib.deg2rad(lib.tensor([90, 180])),
             lambda lib: lib.signbit(lib.tensor([-0.0, 0.0, -1.0, 2.0])),
             lambda lib: lib.arctan(lib.tensor([1.0])),
             lambda lib: lib.logaddexp(lib.tensor([1000.0, -1000.0]), lib.tensor([1000.0, -1000.0]))]
    for call in calls:
        e, t = call(engine), call(torch)
        assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6)
    grads = []
    for lib in (engine, torch):  # the gradient of sinc at 0 is 0, not NaN
        z = lib.tensor([0.0, 0.5], requires_grad=True)
        lib.sinc(z).sum().backward()
        grads.append(z.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("op", ["hypot", "logaddexp"])
def test_integer_inputs_refused_as_torch(op):
    torch = pytest.importorskip("torch")
    with pytest.raises(NotImplementedError) as t_err:
        getattr(torch, op)(torch.tensor([1, 2]), torch.tensor([1, 2]))
    with pytest.raises(NotImplementedError) as e_err:
        getattr(engine, op)(engine.tensor([1, 2]), engine.tensor([1, 2]))
    assert str(e_err.value) == str(t_err.value)


def test_in_place_log_square_clamp_min_max():
    torch = pytest.importorskip("torch")
    out = []
    for lib in (engine, torch):
        t = lib.tensor(POS, dtype=lib.float32)
        t.log_().square_().clamp_min_(0.1).clamp_max_(2.0)
        out.append(t.numpy())
    np.testing.assert_allclose(out[0], out[1], rtol=1e-6)
