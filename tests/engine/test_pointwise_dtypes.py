"""Element-wise ops across dtypes against PyTorch: type promotion (tensor-tensor, 0-dim, Python
numbers), integer wrap-around, bool and integer error paths, and the element-wise ops atan2,
fmod, frac, logical_* and bitwise_* with their gradients (finite differences run without torch).
"""

from __future__ import annotations

import itertools
import operator

import numpy as np
import pytest

import engine
from tests.gradcheck import gradcheck, rand

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy warns where torch gives inf/nan quietly

DTYPES = ["float32", "float64", "int64", "int32", "int8", "uint8", "bool"]


def make(lib, dtype: str, shape, seed: int = 0):
    """The same values as an engine or torch tensor; integers small enough not to overflow in
    products, uint8/int8 over their full range so that wrap-around shows."""
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        data = rng.random(shape) > 0.5
    elif dtype.startswith("float"):
        data = rng.standard_normal(shape) * 3
    elif dtype in ("uint8", "int8"):
        info = np.iinfo(dtype)
        data = rng.integers(info.min, info.max + 1, shape)
    else:
        data = rng.integers(-5, 6, shape)
    return lib.from_numpy(np.array(np.asarray(data).astype(dtype)).reshape(shape))


def outcome(fn):
    """``("ok", dtype name, values)`` or ``("err", exception type name, message)``."""
    try:
        r = fn()
    except Exception as e:  # noqa: BLE001 - the exception itself is the result compared
        return ("err", type(e).__name__, str(e).split("\n")[0])
    return ("ok", str(r.dtype).split(".")[-1], np.asarray(r.numpy() if hasattr(r, "numpy") else r))


def assert_same(fn):
    """``fn(lib)`` gives the same dtype and values, or the same error, on engine and torch."""
    torch = pytest.importorskip("torch")
    e, t = outcome(lambda: fn(engine)), outcome(lambda: fn(torch))
    assert e[:2] == t[:2], (e, t)
    if e[0] == "err":
        assert e[2] == t[2]
        return
    assert e[2].shape == t[2].shape
    if e[2].dtype.kind == "f":
        np.testing.assert_allclose(e[2], t[2], rtol=1e-5, atol=1e-6, equal_nan=True)
    else:
        np.testing.assert_array_equal(e[2], t[2])


# --- the promotion table ----------------------------------------------------------------------

SHAPES = [((2, 3), (2, 3)), ((1, 3), (2, 1)), ((), (3,)), ((3,), ()), ((), ())]
SCALARS = [True, False, 3, -2, 0, 2.5, 300]
TABLE_OPS = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv,
    "floordiv": operator.floordiv, "mod": operator.mod, "pow": operator.pow, "lt": operator.lt,
    "ge": operator.ge, "eq": operator.eq,
}


@pytest.mark.parametrize("op", list(TABLE_OPS))
@pytest.mark.parametrize("da,db", list(itertools.product(DTYPES, DTYPES)))
def test_promotion_tensor_tensor(op, da, db):
    """Every dtype pair, dimensioned and 0-dim operands, broadcasting: dtype, values, errors."""
    f = TABLE_OPS[op]
    for k, (sa, sb) in enumerate(SHAPES):
        assert_same(lambda lib, sa=sa, sb=sb, k=k: f(make(lib, da, sa, k), make(lib, db, sb, k + 7)))


@pytest.mark.parametrize("op", list(TABLE_OPS) + ["radd", "rsub", "rmul", "rpow", "rmod", "rfloordiv"])
@pytest.mark.parametrize("da", DTYPES)
def test_promotion_tensor_scalar(op, da):
    """Python bool/int/float with each dtype, on either side, incl. out-of-range ints that wrap."""
    g = getattr(operator, op[1:] if op.startswith("r") else op)
    f = TABLE_OPS.get(op) or (lambda a, s: g(s, a))
    for s in SCALARS:
        for shape in [(2, 3), ()]:
            assert_same(lambda lib, shape=shape, s=s: f(make(lib, da, shape, 1), s))


@pytest.mark.parametrize("op", ["maximum", "minimum", "atan2", "fmod", "remainder", "bitwise_and",
                                "bitwise_or", "bitwise_xor", "logical_and", "logical_or", "logical_xor"])
@pytest.mark.parametrize("da,db", list(itertools.product(DTYPES, DTYPES)))
def test_binary_functions_tensor_tensor(op, da, db):
    for k, (sa, sb) in enumerate(SHAPES):
        assert_same(lambda lib, sa=sa, sb=sb, k=k: getattr(lib, op)(make(lib, da, sa, k), make(lib, db, sb, k + 7)))


@pytest.mark.parametrize("op", ["div_floor", "div_trunc", "floor_divide"])
@pytest.mark.parametrize("da,db", list(itertools.product(DTYPES, DTYPES)))
def test_rounding_division(op, da, db):
    fns = {"div_floor": lambda lib, x, y: lib.div(x, y, rounding_mode="floor"),
           "div_trunc": lambda lib, x, y: lib.div(x, y, rounding_mode="trunc"),
           "floor_divide": lambda lib, x, y: lib.floor_divide(x, y)}
    for k, (sa, sb) in enumerate(SHAPES):
        assert_same(lambda lib, sa=sa, sb=sb, k=k: fns[op](lib, make(lib, da, sa, k), make(lib, db, sb, k + 7)))


UNARY = ["relu", "abs", "floor", "ceil", "round", "trunc", "sign", "neg", "exp", "sqrt", "sigmoid",
         "tanh", "reciprocal", "log", "square", "frac", "logical_not", "bitwise_not"]


@pytest.mark.parametrize("op", UNARY)
@pytest.mark.parametrize("da", DTYPES)
def test_unary_dtypes(op, da):
    for shape in [(2, 3), ()]:
        assert_same(lambda lib, shape=shape: getattr(lib, op)(make(lib, da, shape, 3)))


CLAMPS = {
    "min": lambda lib, x, s: lib.clamp(x, min=s), "max": lambda lib, x, s: lib.clamp(x, max=s),
    "both": lambda lib, x, s: lib.clamp(x, s, s + 1 if not isinstance(s, bool) else True),
    "tensor_min": lambda lib, x, s: lib.clamp(x, min=lib.tensor(s)),
    "tensor_both": lambda lib, x, s: lib.clamp(x, min=lib.tensor(s), max=lib.tensor(s)),
}


@pytest.mark.parametrize("kind", list(CLAMPS))
@pytest.mark.parametrize("da", DTYPES)
def test_clamp_dtypes(kind, da):
    for s in SCALARS + [-1, 0.5, -300]:
        assert_same(lambda lib, s=s: CLAMPS[kind](lib, make(lib, da, (2, 3), 5), s))


# --- the fixed bugs, one by one ---------------------------------------------------------------

def test_pow_int_tensors_broadcast():
    assert_same(lambda lib: lib.pow(make(lib, "bool", (1, 3)), make(lib, "int8", (2, 1), 1)))
    # negative integer exponents: 1, -1 or 0, as torch
    assert_same(lambda lib: lib.tensor([0, 1, -1, 2, -1, 0]) ** lib.tensor([-1, -1, -1, -1, -2, 0]))
    assert_same(lambda lib: 2 ** lib.tensor([-1, 2]))
    assert_same(lambda lib: lib.tensor([2, 3]) ** -1)
    assert_same(lambda lib: lib.tensor([2, 3], dtype=lib.int8) ** 300)


def test_remainder_uint8_by_int32_0d():
    x = engine.tensor([5, 7, 250], dtype=engine.uint8)
    out = x % engine.tensor(-3, dtype=engine.int32)  # -3 wraps to 253 in uint8
    assert out.dtype == engine.uint8 and out.tolist() == [5, 7, 250]
    assert_same(lambda lib: lib.tensor([5, 7, 250], dtype=lib.uint8) % lib.tensor(-3, dtype=lib.int32))


def test_uint8_int8_comparisons_promote():
    u = engine.tensor([200, 3], dtype=engine.uint8)
    i = engine.tensor([-1, 4], dtype=engine.int8)
    assert (u < i).tolist() == [False, True]  # compared as int16, not as wrapped bytes
    assert (u >= i).tolist() == [True, False]
    assert_same(lambda lib: lib.tensor([200, 3], dtype=lib.uint8) < lib.tensor(-1, dtype=lib.int8))


@pytest.mark.parametrize("fn", [
    lambda lib, x, y: x % y, lambda lib, x, y: x // y, lambda lib, x, y: lib.fmod(x, y),
    lambda lib, x, y: lib.div(x, y, rounding_mode="floor"),
    lambda lib, x, y: lib.div(x, y, rounding_mode="trunc"),
])
def test_integer_division_by_zero_raises(fn):
    with pytest.raises(RuntimeError, match="^ZeroDivisionError$"):
        fn(engine, engine.tensor([5, -7]), engine.tensor([2, 0]))
    with pytest.raises(RuntimeError, match="^ZeroDivisionError$"):
        fn(engine, engine.tensor([5, -7]), 0)
    out = fn(engine, engine.tensor([5.0, -7.0]), 0.0)  # floats give inf/nan
    assert out.dtype == engine.float32


def test_sign_and_clamp_keep_bool_and_wrap():
    b = engine.tensor([True, False])
    assert engine.sign(b).dtype == engine.bool and engine.sign(b).tolist() == [True, False]
    out = engine.clamp(b, min=engine.tensor([False, True]))
    assert out.dtype == engine.bool and out.tolist() == [True, True]
    u = engine.tensor([3, 250, 0], dtype=engine.uint8)
    assert engine.clamp(u, -1, 2).tolist() == [2, 2, 2]  # -1 is 255 in uint8
    assert_same(lambda lib: lib.clamp(lib.tensor([3, 250, 0], dtype=lib.uint8), -1, 2))
    assert_same(lambda lib: lib.clamp(lib.tensor([3, 250, 0], dtype=lib.uint8), 300))


def test_integer_scalars_wrap_instead_of_overflowing():
    for fn in (lambda lib: lib.tensor([100, 3], dtype=lib.int8) + 300,
               lambda lib: lib.tensor([100, 3], dtype=lib.uint8) * -2,
               lambda lib: lib.tensor([2, 3], dtype=lib.uint8) == 258,
               lambda lib: lib.tensor([2, 3], dtype=lib.int32) + 2 ** 40,
               lambda lib: lib.tensor([2, 3], dtype=lib.uint8).add_(300),
               lambda lib: lib.add(lib.tensor([2, 3], dtype=lib.uint8), lib.tensor([1, 1], dtype=lib.uint8),
                                   alpha=-2)):
        assert_same(fn)


# --- errors torch raises ----------------------------------------------------------------------

BOOL_ERRORS = {
    "neg": lambda lib, b: -b, "sub_bb": lambda lib, b: b - b, "sub_bi": lambda lib, b: b - lib.tensor([1, 2]),
    "sub_ib": lambda lib, b: lib.tensor([1, 2]) - b, "sub_fb": lambda lib, b: lib.tensor([1.0, 2.0]) - b,
    "sub_b1": lambda lib, b: b - 1, "rsub_1b": lambda lib, b: 1 - b, "rsub_Tb": lambda lib, b: True - b,
    "sub_bT": lambda lib, b: b - True, "sub_fT": lambda lib, b: lib.tensor([1.0, 2.0]) - True,
    "isub_fb": lambda lib, b: lib.tensor([1.0, 2.0]).sub_(b),
    "relu": lambda lib, b: lib.relu(b), "abs": lambda lib, b: lib.abs(b), "floor": lambda lib, b: lib.floor(b),
    "ceil": lambda lib, b: lib.ceil(b), "round": lambda lib, b: lib.round(b), "trunc": lambda lib, b: lib.trunc(b),
    "frac": lambda lib, b: lib.frac(b), "pow_bb": lambda lib, b: lib.pow(b, b), "rpow_Tb": lambda lib, b: True ** b,
    "rem_bb": lambda lib, b: lib.remainder(b, b), "rem_bT": lambda lib, b: b % True,
    "fmod_bb": lambda lib, b: lib.fmod(b, b), "floordiv_bb": lambda lib, b: b // b,
    "clamp_scalars": lambda lib, b: lib.clamp(b, False, True), "clamp_min": lambda lib, b: lib.clamp(b, True),
    "alpha_float": lambda lib, b: lib.add(lib.tensor([1, 2]), 1, alpha=0.5),
    "alpha_bool": lambda lib, b: lib.add(lib.tensor([1.0, 2.0]), 1.0, alpha=True),
    "maximum_int": lambda lib, b: lib.maximum(lib.tensor([1.0]), 2),
    "minimum_float": lambda lib, b: lib.minimum(lib.tensor([1.0]), 2.5),
    "logical_and_bool": lambda lib, b: lib.logical_and(b, True),
    "atan2_int": lambda lib, b: lib.atan2(lib.tensor([1.0]), 1),
    "bitwise_float": lambda lib, b: lib.tensor([1.0]) & lib.tensor([1.0]),
    "invert_float": lambda lib, b: ~lib.tensor([1.0]), "bitwise_not_float": lambda lib, b: lib.bitwise_not(lib.tensor([1.0])),
    "frac_int": lambda lib, b: lib.frac(lib.tensor([1, 2])),
    "int_pow_neg": lambda lib, b: lib.tensor([1, 2]) ** -2,
    "rounding_mode": lambda lib, b: lib.div(b, b, rounding_mode="x"),
    "clamp_overflow": lambda lib, b: lib.clamp(lib.tensor([1], dtype=lib.int8), 2 ** 40),
}


@pytest.mark.parametrize("name", list(BOOL_ERRORS))
def test_errors_match_torch(name):
    torch = pytest.importorskip("torch")
    e = outcome(lambda: BOOL_ERRORS[name](engine, engine.tensor([True, False])))
    t = outcome(lambda: BOOL_ERRORS[name](torch, torch.tensor([True, False])))
    assert t[0] == "err", t
    assert e[:3] == t[:3]


def test_bool_error_messages_without_torch():
    b = engine.tensor([True, False])
    with pytest.raises(RuntimeError, match=r"^Negation, the `-` operator, on a bool tensor is not supported"):
        _ = -b
    with pytest.raises(RuntimeError, match="with two bool tensors is not supported"):
        _ = b - b
    with pytest.raises(NotImplementedError, match="\"round_vml_cpu\" not implemented for 'Bool'"):
        engine.round(b)
    with pytest.raises(TypeError, match=r"^maximum\(\): argument 'other' \(position 2\) must be Tensor, not int$"):
        engine.maximum(b, 1)


# --- new ops: values, in-place variants, operators, gradients ---------------------------------

NEW_OPS = {
    "atan2": lambda lib, a, b: lib.atan2(a, b), "fmod_t": lambda lib, a, b: lib.fmod(a, b),
    "fmod_s": lambda lib, a, b: lib.fmod(a, 0.7), "rem_t": lambda lib, a, b: lib.remainder(a, b),
    "rem_s": lambda lib, a, b: a % 0.7, "frac": lambda lib, a, b: lib.frac(a * 3),
    "frac_method": lambda lib, a, b: (a * 3).frac(), "atan2_bcast": lambda lib, a, b: a.atan2(b[:1]),
    "div_floor": lambda lib, a, b: lib.div(a, b, rounding_mode="floor") + a,
}


@pytest.mark.parametrize("name", list(NEW_OPS))
def test_new_ops_match_torch_with_grads(name):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    xa, xb = rng.standard_normal((3, 4)) * 2, rng.standard_normal((3, 4)) + 0.1

    def run(lib):
        a = lib.tensor(xa, dtype=lib.float64, requires_grad=True)
        b = lib.tensor(xb, dtype=lib.float64, requires_grad=True)
        out = NEW_OPS[name](lib, a, b)
        names = []
        node = out.grad_fn
        while node is not None:
            names.append(type(node).__name__)
            kids = [n for n, _ in node.next_functions if n is not None and "Accumulate" not in type(n).__name__]
            node = kids[0] if kids else None
        out.backward(lib.tensor(np.linspace(-1, 1, out.numel()).reshape(tuple(out.shape))))
        grads = [None if t.grad is None else t.grad.numpy() for t in (a, b)]
        return out.detach().numpy(), names, grads

    (ev, en, eg), (tv, tn, tg) = run(engine), run(torch)
    np.testing.assert_allclose(ev, tv, rtol=1e-12, atol=1e-12)
    assert en == tn
    for e, t in zip(eg, tg):
        assert (e is None) == (t is None)
        if e is not None:
            np.testing.assert_allclose(e, t, rtol=1e-10, atol=1e-12)


def test_new_ops_gradcheck():
    a, b = rand(3, 4, seed=1), rand(3, 4, low=0.5, high=2.0, seed=2)
    gradcheck(lambda x, y: engine.atan2(x, y), a, b)
    gradcheck(lambda x, y: engine.atan2(x, y[:1]), a, b)
    gradcheck(lambda x, y: engine.fmod(x * 3, y), a, b)
    gradcheck(lambda x, y: engine.remainder(x * 3, y), a, b)
    gradcheck(lambda x: engine.fmod(x * 3, 0.7), a)
    gradcheck(lambda x: (x * 3 + 0.01).frac(), a)


def test_inplace_variants_and_operators():
    x = engine.tensor([0b1100, 0b1010], dtype=engine.int32)
    assert (x & 0b0110).tolist() == [4, 2] and (x | 1).tolist() == [13, 11] and (x ^ x).tolist() == [0, 0]
    assert (6 & x).tolist() == [4, 2] and (~x).tolist() == [-13, -11]
    assert (engine.tensor([True, False]) & engine.tensor([True, True])).dtype == engine.bool
    y = x.clone()
    y &= 0b1000
    y |= 1
    y ^= 2
    assert y.tolist() == [11, 11]
    z = engine.tensor([7, -7])
    z //= 2
    assert z.tolist() == [3, -4]
    z %= 3
    assert z.tolist() == [0, 2]
    f = engine.tensor([1.5, -2.25])
    assert f.clone().frac_().tolist() == [0.5, -0.25]
    assert f.clone().fmod_(1.0).tolist() == [0.5, -0.25]
    assert f.clone().remainder_(1.0).tolist() == [0.5, 0.75]
    assert engine.allclose(f.clone().atan2_(engine.tensor([1.0, 1.0])), engine.atan2(f, engine.tensor([1.0, 1.0])))
    assert engine.tensor([True, False]).logical_not_().tolist() == [False, True]
    assert engine.tensor([1, 0]).bitwise_not_().tolist() == [-2, -1]
    assert engine.logical_not(engine.tensor([0.0, 2.0])).tolist() == [True, False]
    assert engine.floor_divide(7, engine.tensor([2, -2])).tolist() == [3, -4]
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
        engine.tensor([1, 2]).atan2_(engine.tensor([1, 1]))


def test_inplace_grads_match_torch():
    torch = pytest.importorskip("torch")

    def run(lib):
        a = lib.tensor([1.5, -2.25, 0.3], requires_grad=True)
        b = lib.tensor([0.7, 1.1, -0.4], requires_grad=True)
        c = a * 1
        c.fmod_(b)
        c.atan2_(b)
        c.frac_()
        c.sum().backward()
        return type(c.grad_fn).__name__, a.grad.numpy(), b.grad.numpy()

    (en, ea, eb), (tn, ta, tb) = run(engine), run(torch)
    assert en == tn
    np.testing.assert_allclose(ea, ta, rtol=1e-5)
    np.testing.assert_allclose(eb, tb, rtol=1e-5)
