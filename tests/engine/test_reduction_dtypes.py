"""Reductions and scans across dtypes against PyTorch: result dtype, values and shape for every
dtype x dim x keepdim, 0-dim and empty inputs, the error paths (type and message), and the ops
cumsum, cumprod, median, aminmax, var_mean, std_mean, nansum and count_nonzero with their
gradients (finite differences run without torch).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import engine
from tests.gradcheck import gradcheck, rand

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::RuntimeWarning")

DTYPES = ["float32", "float64", "int64", "int32", "int8", "uint8", "bool"]
SHAPES = [(), (3,), (2, 3), (1, 3), (2, 1), (4, 1, 3), (0, 3)]
INF = float("inf")


def make(lib, dtype: str, shape, seed: int = 0):
    """The same values as an engine or torch tensor (small integers: products do not overflow)."""
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        data = rng.random(shape) > 0.5
    elif dtype.startswith("float"):
        data = rng.standard_normal(shape)
    elif dtype == "uint8":
        data = rng.integers(0, 5, shape)
    else:
        data = rng.integers(-3, 4, shape)
    return lib.from_numpy(np.array(np.asarray(data).astype(dtype)).reshape(shape))


def _leaves(out):
    out = tuple(out) if isinstance(out, tuple | list) else (out,)
    return [(str(o.dtype).split(".")[-1], tuple(o.shape), o.detach().numpy().copy()) for o in out]


def outcome(fn, *args):
    """``fn(*args)`` as ``("ok", [(dtype, shape, values), ...])`` or ``("err", exception type, message)``."""
    try:
        return ("ok", _leaves(fn(*args)))
    except Exception as e:  # noqa: BLE001 - any exception is an outcome to compare
        return ("err", type(e).__name__, str(e).split("\n")[0])


def assert_same(e, t, what):
    assert e[0] == t[0], f"{what}: engine {e} vs torch {t}"
    if e[0] == "err":
        assert e[1:] == t[1:], f"{what}: engine {e[1:]} vs torch {t[1:]}"
        return
    assert len(e[1]) == len(t[1]), what
    for (ed, es, ev), (td, ts, tv) in zip(e[1], t[1]):
        assert (ed, es) == (td, ts), f"{what}: engine {ed}{es} vs torch {td}{ts}"
        if ev.dtype.kind == "f":
            np.testing.assert_allclose(ev, tv, rtol=1e-5, atol=1e-6, equal_nan=True, err_msg=what)
        else:
            np.testing.assert_array_equal(ev, tv, err_msg=what)


def _kw(name, d, kd):
    """``x.name(d, keepdim=kd)``; ``d`` None means no dim argument (and no keepdim)."""
    def call(lib, x):
        out = getattr(x, name)() if d is None else getattr(x, name)(d, keepdim=kd)
        return tuple(out) if isinstance(out, tuple) else out
    return call


DIMS = [(None, False), (0, False), (0, True), (-1, True), (1, False), (5, False), ((0, -1), True), ((0, 0), False)]
REDUCTIONS = {name: [(d, kd) for d, kd in DIMS if not (isinstance(d, tuple) and name in single)]
              for single in [{"max", "min", "argmax", "argmin", "median", "prod", "logsumexp_"}]
              for name in ["sum", "mean", "prod", "var", "std", "amax", "amin", "all", "any", "max", "min",
                           "argmax", "argmin", "median", "logsumexp", "nansum"]}
REDUCTIONS["logsumexp"] = [(d, kd) for d, kd in DIMS if d is not None]
SCANS = ["cumsum", "cumprod", "softmax", "log_softmax"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reduction_matches_torch(torch, name, dtype):
    """Result dtype, shape and values (or the error) for every shape x dim x keepdim."""
    for shape in SHAPES:
        for d, kd in REDUCTIONS[name]:
            fn = _kw(name, d, kd)
            e = outcome(fn, engine, make(engine, dtype, shape))
            t = outcome(fn, torch, make(torch, dtype, shape))
            if name == "median" and d is None and shape == (0, 3):
                continue  # torch returns an unspecified value for the median of nothing
            assert_same(e, t, f"{name}(dim={d}, keepdim={kd}) of {dtype}{shape}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", SCANS)
def test_scan_and_softmax_match_torch(torch, name, dtype):
    for shape in SHAPES:
        for d in (0, -1, 1, 5):
            e = outcome(getattr(make(engine, dtype, shape), name), d)
            t = outcome(getattr(make(torch, dtype, shape), name), d)
            assert_same(e, t, f"{name}({d}) of {dtype}{shape}")


@pytest.mark.parametrize("out", ["float32", "float64", "int64", "int32", "uint8", "bool"])
@pytest.mark.parametrize("dtype", ["float32", "int32", "uint8", "bool"])
def test_dtype_argument_matches_torch(torch, dtype, out):
    calls = [lambda lib, x, o: x.sum(dtype=o), lambda lib, x, o: x.sum(1, dtype=o),
             lambda lib, x, o: x.mean(dtype=o), lambda lib, x, o: x.prod(dtype=o),
             lambda lib, x, o: x.prod(0, dtype=o), lambda lib, x, o: x.cumsum(0, dtype=o),
             lambda lib, x, o: x.cumprod(1, dtype=o), lambda lib, x, o: x.softmax(0, dtype=o),
             lambda lib, x, o: x.log_softmax(1, dtype=o), lambda lib, x, o: lib.nansum(x, dtype=o)]
    for k, call in enumerate(calls):
        e = outcome(call, engine, make(engine, dtype, (2, 3)), getattr(engine, out))
        t = outcome(call, torch, make(torch, dtype, (2, 3)), getattr(torch, out))
        assert_same(e, t, f"call {k} with dtype={out} on {dtype}")


NORM_PS = [0, 1, 2, 3, 0.5, -1, INF, -INF, "fro", "nuc"]
NORM_DIMS = [(None, False), (0, False), (1, True), ((0, 1), False), ((0, 1), True), (-1, False)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("p", NORM_PS, ids=str)
def test_norm_matches_torch(torch, p, dtype):
    for shape in SHAPES:
        for d, kd in NORM_DIMS:
            e = outcome(engine.norm, make(engine, dtype, shape), p, d, kd)
            t = outcome(torch.norm, make(torch, dtype, shape), p, d, kd)
            assert_same(e, t, f"norm(p={p}, dim={d}, keepdim={kd}) of {dtype}{shape}")


@pytest.mark.parametrize("dtype", DTYPES)
def test_new_reductions_match_torch(torch, dtype):
    calls = {
        "count_nonzero": lambda lib, x: lib.count_nonzero(x),
        "count_nonzero1": lambda lib, x: lib.count_nonzero(x, 1),
        "count_nonzero01": lambda lib, x: x.count_nonzero((0, 1)),
        "aminmax": lambda lib, x: tuple(lib.aminmax(x)),
        "aminmax1": lambda lib, x: tuple(x.aminmax(dim=1, keepdim=True)),
        "aminmax0": lambda lib, x: tuple(lib.aminmax(x, dim=0)),
        "var_mean": lambda lib, x: lib.var_mean(x, 1),
        "std_mean": lambda lib, x: lib.std_mean(x, (0, 1), keepdim=True, correction=0),
        "median0": lambda lib, x: tuple(lib.median(x, 0)),
    }
    for shape in [(), (2, 3), (0, 3), (4, 1, 3)]:
        for name, call in calls.items():
            e = outcome(call, engine, make(engine, dtype, shape))
            t = outcome(call, torch, make(torch, dtype, shape))
            assert_same(e, t, f"{name} of {dtype}{shape}")


# --- the fixed bugs, with torch's results written out (run without torch) -------------------------


def test_prod_of_integers_is_int64():
    x = engine.tensor([[1, 2, 3], [4, 5, 6]], dtype=engine.int32)
    assert x.prod().dtype == engine.int64 and x.prod().item() == 720
    assert x.prod(1).tolist() == [6, 120] and x.prod(1).dtype == engine.int64
    assert engine.tensor([True, False]).prod().dtype == engine.int64
    assert engine.tensor([100, 100], dtype=engine.int8).prod().item() == 10000
    assert x.prod(dtype=engine.float32).dtype == engine.float32
    assert engine.tensor([1.5, 2.5]).prod(dtype=engine.int64).item() == 2  # cast, then multiply


def test_all_any_keep_uint8():
    u = engine.tensor([[1, 0], [2, 3]], dtype=engine.uint8)
    assert u.all().dtype == engine.uint8 and u.all().item() == 0
    assert u.any(0, keepdim=True).dtype == engine.uint8 and u.any(0, keepdim=True).tolist() == [[1, 1]]
    assert engine.tensor([2, 0], dtype=engine.int8).all().dtype == engine.bool
    assert engine.tensor([[1.0, 2.0]]).all(dim=(0, 1)).item() is True


def test_norm_p0_counts_nonzeros_and_other_orders():
    x = engine.tensor([[0.0, 3.0, 0.0], [2.0, 0.0, -1.0]])
    assert engine.norm(x, 0).item() == 3.0
    assert x.norm(0, 1, keepdim=True).tolist() == [[1.0], [2.0]]
    assert x.norm(INF).item() == 3.0 and x.norm(-INF).item() == 0.0
    assert x.norm(1).item() == 6.0
    assert x.norm("fro").item() == pytest.approx(math.sqrt(14))
    assert x.norm(3, 0).tolist() == pytest.approx([2.0, 3.0, 1.0])
    assert x.norm(-INF, 1).tolist() == [0.0, 0.0]
    s = np.linalg.svd(x.numpy(), compute_uv=False).sum()
    assert x.norm("nuc").item() == pytest.approx(s, rel=1e-6)


def test_sum_and_mean_dtype_rules():
    assert engine.tensor([1, 2], dtype=engine.int32).sum().dtype == engine.int64
    assert engine.tensor([True, True]).sum().item() == 2
    assert engine.tensor([200, 100], dtype=engine.uint8).sum().item() == 300
    assert engine.tensor([200, 100], dtype=engine.uint8).sum(dtype=engine.uint8).item() == 44
    assert engine.tensor([1, 2], dtype=engine.int32).sum(dtype=engine.int32).dtype == engine.int32
    assert engine.tensor([1.5, 2.5]).sum(dtype=engine.int64).item() == 3
    assert engine.tensor([1, 2, 3]).mean(dtype=engine.float32).item() == 2.0
    with pytest.raises(RuntimeError, match=r"^mean\(\): could not infer output dtype. Input dtype must be "
                                           r"either a floating point or complex dtype. Got: Long$"):
        engine.tensor([1, 2]).mean()
    with pytest.raises(RuntimeError, match="Optional dtype must be either a floating point or complex "
                                           "dtype. Got: Byte$"):
        engine.tensor([1.0]).mean(dtype=engine.uint8)


def test_zero_dim_and_all_dims():
    s = engine.tensor(3.0)
    for op in ("sum", "mean", "prod", "amax", "logsumexp", "norm"):
        assert (getattr(engine, op)(s, 0) if op != "norm" else s.norm(2, 0)).item() == pytest.approx(3.0), op
    assert s.max(0).indices.item() == 0 and s.cumprod(-1).item() == 3.0
    x = engine.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert x.sum(()).item() == 10.0 and x.mean([]).item() == 2.5 and x.amax(()).item() == 4.0


ERRORS = [
    (lambda t, x: x.int().std(), RuntimeError, "std and var only support floating point and complex dtypes"),
    (lambda t, x: x.bool().var(1), RuntimeError, "std and var only support floating point and complex dtypes"),
    (lambda t, x: t.var_mean(x.long()), RuntimeError, "var_mean only support floating point and complex dtypes"),
    (lambda t, x: t.std_mean(x.long()), RuntimeError, "std_mean only support floating point and complex dtypes"),
    (lambda t, x: x.int().norm(), RuntimeError,
     "linalg.vector_norm: Expected a floating point or complex tensor as input. Got Int"),
    (lambda t, x: x.bool().norm(1, 0), RuntimeError,
     "linalg.vector_norm: Expected a floating point or complex tensor as input. Got Bool"),
    (lambda t, x: x.norm("nuc", 0), RuntimeError, "linalg.matrix_norm: dim must be a 2-tuple. Got 0"),
    (lambda t, x: x[0].norm("nuc"), RuntimeError, "linalg.matrix_norm: The input tensor A must have at least 2 dimensions."),
    (lambda t, x: x.norm("abc"), RuntimeError, "linalg.matrix_norm: Order abc not supported."),
    (lambda t, x: x[:0].norm(INF), RuntimeError, "linalg.vector_norm cannot compute the inf norm on an empty "
     "tensor because the operation does not have an identity"),
    (lambda t, x: x.long().softmax(1), NotImplementedError, "\"softmax_lastdim_kernel_impl\" not implemented for 'Long'"),
    (lambda t, x: x.int().softmax(0), NotImplementedError, "\"softmax_kernel_impl\" not implemented for 'Int'"),
    (lambda t, x: x.bool().log_softmax(0), NotImplementedError, "\"log_softmax_kernel_impl\" not implemented for 'Bool'"),
    (lambda t, x: x.softmax(1, dtype=t.int64), NotImplementedError,
     "\"softmax_lastdim_kernel_impl\" not implemented for 'Long'"),
    (lambda t, x: x.bool().argmax(), RuntimeError, "argmax(): does not support bool input"),
    (lambda t, x: x.bool().argmin(5), RuntimeError, "argmin(): does not support bool input"),
    (lambda t, x: x[:0].max(0), IndexError, "max(): Expected reduction dim 0 to have non-zero size."),
    (lambda t, x: x[:0].min(-2), IndexError, "min(): Expected reduction dim 0 to have non-zero size."),
    (lambda t, x: x[:0].argmax(), IndexError, "argmax(): Expected reduction dim to be specified for input.numel() == 0."),
    (lambda t, x: x[:0].amax(), RuntimeError, "amax(): Expected reduction dim to be specified for input.numel() == 0. "
     "Specify the reduction dim with the 'dim' argument."),
    (lambda t, x: x[:0].amin((0, 1)), IndexError, "amin(): Expected reduction dim 0 to have non-zero size."),
    (lambda t, x: x[:0].median(0), IndexError, "median(): Expected reduction dim 0 to have non-zero size."),
    (lambda t, x: x[:0].aminmax(), RuntimeError, "aminmax(): cannot compute aminmax over an empty dimension as the "
     "operation has no identity."),
    (lambda t, x: x[:0].aminmax(dim=0), IndexError, "aminmax: Expected reduction dim 0 to have non-zero size."),
    (lambda t, x: x.bool().median(), NotImplementedError, "\"median_cpu\" not implemented for 'Bool'"),
    (lambda t, x: x.sum(5), IndexError, "Dimension out of range (expected to be in range of [-2, 1], but got 5)"),
    (lambda t, x: x.max(-3), IndexError, "Dimension out of range (expected to be in range of [-2, 1], but got -3)"),
    (lambda t, x: x.cumsum(2), IndexError, "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    (lambda t, x: x.sum()[None][0].amax(1), IndexError,
     "Dimension out of range (expected to be in range of [-1, 0], but got 1)"),
    (lambda t, x: x.sum((0, -2)), RuntimeError, "dim 0 appears multiple times in the list of dims"),
    (lambda t, x: x.bool().cumsum(0, dtype=t.bool), NotImplementedError, "\"cumsum_out_cpu\" not implemented for 'Bool'"),
    (lambda t, x: x.requires_grad_().sum(dtype=t.int64), RuntimeError, "Autograd not support dtype: Long"),
]


def _error_input(lib):
    return lib.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])


@pytest.mark.parametrize("k", range(len(ERRORS)))
def test_error_messages(k):
    fn, exc, msg = ERRORS[k]
    with pytest.raises(exc) as info:
        fn(engine, _error_input(engine))
    assert str(info.value) == msg


@pytest.mark.parametrize("k", range(len(ERRORS)))
def test_error_messages_are_torchs(torch, k):
    fn, exc, msg = ERRORS[k]
    with pytest.raises(exc) as info:
        fn(torch, _error_input(torch))
    assert str(info.value).split("\n")[0] == msg


# --- gradients and grad_fn names against torch ------------------------------------------------------


GRAD_CASES = {
    "cumsum": lambda t, x: x.cumsum(1),
    "cumsum_dtype": lambda t, x: x.cumsum(0, dtype=t.float64),
    "cumprod": lambda t, x: x.cumprod(1),
    "cumprod_zeros": lambda t, x: (x * (x > 0.3)).cumprod(1),
    "median": lambda t, x: x.median(),
    "median_dim": lambda t, x: x.median(1).values,
    "median_keep": lambda t, x: t.median(x, 0, True)[0],
    "aminmax": lambda t, x: t.aminmax(x)[0] * 2 + t.aminmax(x)[1],
    "aminmax_dim": lambda t, x: t.aminmax(x, dim=1).max,
    "var_mean": lambda t, x: t.var_mean(x, 1)[0] * 3 + t.var_mean(x, 1)[1],
    "std_mean": lambda t, x: t.std_mean(x, 0, keepdim=True)[0] - t.std_mean(x, 0, keepdim=True)[1],
    "nansum": lambda t, x: x.nansum(1),
    "prod_zeros": lambda t, x: (x * (x > 0.3)).prod(1),
    "sum_dtype": lambda t, x: x.sum(1, dtype=t.float64),
    "softmax_dtype": lambda t, x: x.softmax(1, dtype=t.float64),
    "norm0": lambda t, x: x.norm(0) + x.sum(),
    "norm1": lambda t, x: x.norm(1, 1),
    "norm3": lambda t, x: x.norm(3, 0, keepdim=True),
    "norm_half": lambda t, x: (x * (x > 0.3)).norm(0.5),
    "norm_neg": lambda t, x: x.norm(-1, 1),
    "norm_inf": lambda t, x: x.norm(INF, 1),
    "norm_ninf": lambda t, x: x.norm(-INF),
    "norm_fro": lambda t, x: x.norm("fro", (0, 1)),
    "norm_nuc": lambda t, x: x.norm("nuc"),
    "max_all": lambda t, x: x.max(),
    "var0d": lambda t, x: x[0, 0].var(),
}


def _grad_run(lib, name):
    x = lib.tensor(np.random.default_rng(3).standard_normal((3, 4)), dtype=lib.float32, requires_grad=True)
    out = GRAD_CASES[name](lib, x)
    w = lib.tensor(np.random.default_rng(4).standard_normal(tuple(out.shape)), dtype=out.dtype)
    (out * w).sum().backward()
    return (type(out.grad_fn).__name__, str(out.dtype).split(".")[-1], out.detach().numpy(),
            None if x.grad is None else x.grad.numpy())


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_values_grads_and_grad_fn_match_torch(torch, name):
    e, t = _grad_run(engine, name), _grad_run(torch, name)
    assert e[:2] == t[:2]
    np.testing.assert_allclose(e[2], t[2], rtol=1e-5, atol=1e-6, equal_nan=True)
    np.testing.assert_allclose(e[3], t[3], rtol=1e-4, atol=1e-5, equal_nan=True)


def test_multi_output_grad_fns(torch):
    for lib in (engine, torch):
        x = lib.randn(2, 3, requires_grad=True)
        assert type(lib.median(x, 1).values.grad_fn).__name__ == "MedianBackward1"
        assert lib.median(x, 1).indices.grad_fn is None
        assert {type(o.grad_fn).__name__ for o in lib.aminmax(x)} == {"AminmaxBackward0"}
        assert {type(o.grad_fn).__name__ for o in lib.var_mean(x)} == {"VarMeanBackward0"}
        assert {type(o.grad_fn).__name__ for o in lib.std_mean(x, 1)} == {"StdMeanBackward0"}
        assert type(x.cumsum(0).grad_fn).__name__ == "CumsumBackward0"
        assert type(x.nansum().grad_fn).__name__ == "NansumBackward0"


def test_namedtuples():
    x = engine.tensor([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
    m = x.median(1)
    assert type(m).__name__ == "median" and m.values.tolist() == [2.0, 4.0] and m.indices.tolist() == [2, 2]
    lo, hi = engine.aminmax(x, dim=0)
    assert type(engine.aminmax(x)).__name__ == "aminmax" and engine.aminmax(x).max.item() == 5.0
    assert lo.tolist() == [0.0, 1.0, 2.0] and hi.tolist() == [3.0, 5.0, 4.0]
    nan = engine.tensor([[1.0, float("nan"), 3.0], [1.0, 2.0, 3.0]])
    assert nan.median(1).indices.tolist() == [1, 1] and math.isnan(nan.median().item())


# --- finite differences (no torch) ---------------------------------------------------------------


@pytest.mark.parametrize("fn", [
    lambda x: x.cumsum(0), lambda x: x.cumsum(-1), lambda x: x.cumprod(1), lambda x: x.cumprod(0),
    lambda x: x.median(), lambda x: x.median(1).values, lambda x: engine.median(x, 0, keepdim=True)[0],
    lambda x: engine.aminmax(x, dim=1).min, lambda x: engine.var_mean(x, 0)[0] + engine.var_mean(x, 0)[1],
    lambda x: engine.std_mean(x)[0] * engine.std_mean(x)[1], lambda x: x.norm(3, 1), lambda x: x.norm(-1),
    lambda x: x.norm(0.5, 0), lambda x: x.norm("nuc"), lambda x: x.norm(INF, 0), lambda x: x.nansum(0),
], ids=["cumsum0", "cumsum1", "cumprod1", "cumprod0", "median", "median_dim", "median_keep", "aminmax",
        "var_mean", "std_mean", "norm3", "norm_neg", "norm_half", "nuc", "norm_inf", "nansum"])
def test_gradcheck(fn):
    gradcheck(fn, rand(3, 4, seed=5))


def test_cumprod_gradient_with_zeros():
    x = engine.tensor([1.0, 0.0, 3.0, 0.0, 2.0], requires_grad=True)
    x.cumprod(0).backward(engine.tensor([1.0, 2.0, 3.0, 4.0, 5.0]))
    assert x.grad.tolist() == [1.0, 11.0, 0.0, 0.0, 0.0]  # torch's values
    y = rand(2, 5, seed=6)
    with engine.no_grad():
        y[0, 1] = 0.0
        y[1, 3] = 0.0
    gradcheck(lambda t: t.cumprod(1), y)
