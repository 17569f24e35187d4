"""Finite-difference checks (float64) for every differentiable op of the engine core, with
broadcasting and every reduction's dim/keepdim variants."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import engine
import engine.nn.functional as F
from tests.gradcheck import gradcheck, rand


def pos(*shape, seed=0):
    return rand(*shape, low=0.5, high=2.0, seed=seed)


BINARY = {
    "add": lambda a, b: a + b,
    "add_alpha": lambda a, b: engine.add(a, b, alpha=2.5),
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / (b.abs() + 0.5),
    "maximum": engine.maximum,
    "minimum": engine.minimum,
    "pow_tensor": lambda a, b: (a.abs() + 0.5) ** b,
    "where": lambda a, b: engine.where(a > 0, a, b),
    "atan2_like": lambda a, b: (a * b).sin() + (a / (b * b + 1)),
}
SHAPES = [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 4), (3, 1)), ((), (2, 3)), ((1, 3), (2, 1))]


@pytest.mark.parametrize("shapes", SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("name", list(BINARY))
def test_binary_broadcasting(name, shapes):
    gradcheck(BINARY[name], rand(*shapes[0], seed=1), rand(*shapes[1], seed=2))


SCALAR_BINARY = {
    "add_scalar": lambda a: a + 2.5, "radd": lambda a: 2.5 + a, "sub_scalar": lambda a: a - 1.5,
    "rsub": lambda a: 1.5 - a, "mul_scalar": lambda a: a * 3.0, "rmul": lambda a: 3.0 * a,
    "div_scalar": lambda a: a / 4.0, "rdiv": lambda a: 2.0 / (a + 3), "pow_scalar": lambda a: a ** 3,
    "pow_frac": lambda a: (a + 2) ** 0.5, "rpow": lambda a: 2.0 ** a, "square": lambda a: a.square(),
    "remainder": lambda a: a % 0.7,
}


@pytest.mark.parametrize("name", list(SCALAR_BINARY))
def test_binary_with_number(name):
    gradcheck(SCALAR_BINARY[name], rand(3, 4))


UNARY = {
    "neg": lambda a: -a, "abs": lambda a: a.abs(), "exp": lambda a: a.exp(), "log": lambda a: (a + 2).log(),
    "log2": lambda a: (a + 2).log2(), "log1p": lambda a: a.log1p(), "expm1": lambda a: a.expm1(),
    "sqrt": lambda a: (a + 2).sqrt(), "rsqrt": lambda a: (a + 2).rsqrt(), "sin": lambda a: a.sin(),
    "cos": lambda a: a.cos(), "tan": lambda a: a.tan(), "tanh": lambda a: a.tanh(),
    "sigmoid": lambda a: a.sigmoid(), "relu": lambda a: a.relu(), "reciprocal": lambda a: (a + 2).reciprocal(),
    "clamp": lambda a: a.clamp(-0.5, 0.5), "clamp_min": lambda a: a.clamp(min=0.1),
    "clamp_max": lambda a: a.clamp(max=0.1), "masked_fill": lambda a: a.masked_fill(a > 0.3, 2.0),
    "softmax0": lambda a: a.softmax(0), "softmax1": lambda a: a.softmax(-1),
    "log_softmax0": lambda a: a.log_softmax(0), "log_softmax1": lambda a: a.log_softmax(1),
    "pad": lambda a: F.pad(a, (1, 2, 0, 1), value=0.5), "pad_crop": lambda a: F.pad(a, (-1, 1)),
}


@pytest.mark.parametrize("name", list(UNARY))
def test_unary(name):
    gradcheck(UNARY[name], rand(3, 4))


def test_dtype_round_trip_is_differentiable():
    # float32 in the middle: a coarse step and tolerance, since float32 rounds at ~1e-7.
    gradcheck(lambda a: a.float().double() * 2, rand(3, 4), eps=1e-3, atol=1e-3)
    assert type((rand(2).float()).grad_fn).__name__ == "ToCopyBackward0"


def test_clamp_with_tensor_bounds():
    gradcheck(lambda a, lo: a.clamp(min=lo), rand(3, 4), rand(4, seed=5))
    gradcheck(lambda a, hi: a.clamp(max=hi), rand(3, 4), rand(4, seed=5))


def test_masked_fill_with_tensor_value():
    gradcheck(lambda a, v: a.masked_fill(a > 0, v), rand(3, 4), rand(seed=3))


REDUCTIONS = {
    "sum": lambda a, **k: a.sum(**k), "mean": lambda a, **k: a.mean(**k),
    "var": lambda a, **k: a.var(**k), "std": lambda a, **k: a.std(**k),
    "var_biased": lambda a, **k: a.var(**k, unbiased=False), "std_corr0": lambda a, **k: a.std(**k, correction=0),
    "amax": lambda a, **k: a.amax(**k), "amin": lambda a, **k: a.amin(**k),
    "logsumexp": lambda a, **k: a.logsumexp(**k), "norm": lambda a, **k: a.norm(**k),
    "norm1": lambda a, **k: a.norm(p=1, **k), "norm3": lambda a, **k: a.norm(p=3, **k),
    "prod": lambda a, **k: a.prod(**k),
}
DIMS = [{}, {"dim": 0}, {"dim": 1}, {"dim": -1, "keepdim": True}, {"dim": (0, 2)}, {"dim": (0, 2), "keepdim": True}]


@pytest.mark.parametrize("kw", DIMS, ids=str)
@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_reductions(name, kw):
    if name in ("logsumexp", "amax", "amin") and not kw:
        kw = {"dim": (0, 1, 2)}
    if name == "prod" and isinstance(kw.get("dim"), tuple):
        pytest.skip("torch's prod takes a single dim")
    gradcheck(lambda a: REDUCTIONS[name](a, **kw), rand(2, 3, 4))


@pytest.mark.parametrize("kw", [{}, {"dim": 1}, {"dim": 0, "keepdim": True}], ids=str)
@pytest.mark.parametrize("fn", ["max", "min"])
def test_max_min(fn, kw):
    def f(a):
        out = getattr(a, fn)(**kw)
        return out if not kw else out.values

    gradcheck(f, rand(3, 4))


def test_max_ties_split_evenly():
    a = engine.tensor([1.0, 3.0, 3.0], requires_grad=True)
    a.max().backward()
    assert a.grad.tolist() == [0.0, 0.5, 0.5]


LINALG = {
    "mm": ((3, 4), (4, 5), lambda a, b: a.mm(b)),
    "matmul_2x2": ((3, 4), (4, 5), lambda a, b: a @ b),
    "matmul_1x1": ((4,), (4,), lambda a, b: a @ b),
    "matmul_2x1": ((3, 4), (4,), lambda a, b: a @ b),
    "matmul_1x2": ((4,), (4, 5), lambda a, b: a @ b),
    "matmul_3x2": ((2, 3, 4), (4, 5), lambda a, b: a @ b),
    "matmul_3x1": ((2, 3, 4), (4,), lambda a, b: a @ b),
    "matmul_2x3": ((3, 4), (2, 4, 5), lambda a, b: a @ b),
    "matmul_1x3": ((4,), (2, 4, 5), lambda a, b: a @ b),
    "matmul_3x3": ((2, 3, 4), (2, 4, 5), lambda a, b: a @ b),
    "matmul_4x3_bcast": ((2, 1, 3, 4), (3, 4, 2), lambda a, b: a @ b),
    "matmul_transposed": ((4, 2, 3), (5, 4), lambda a, b: a.transpose(0, 2) @ b[:2].t()),
    "bmm": ((2, 3, 4), (2, 4, 5), lambda a, b: a.bmm(b)),
    "mv": ((3, 4), (4,), lambda a, b: a.mv(b)),
    "dot": ((4,), (4,), lambda a, b: a.dot(b)),
    "addmm": ((3, 4), (4, 5), lambda a, b: engine.addmm(b[0], a, b, beta=0.5, alpha=2.0)),
}


@pytest.mark.parametrize("name", list(LINALG))
def test_linalg(name):
    sa, sb, fn = LINALG[name]
    gradcheck(fn, rand(*sa, seed=1), rand(*sb, seed=2))


SHAPE_OPS = {
    "reshape": lambda a: a.reshape(4, 6), "reshape_noncontig": lambda a: a.transpose(0, 2).reshape(-1),
    "view": lambda a: a.view(6, -1), "flatten": lambda a: a.flatten(1), "flatten_all": lambda a: a.flatten(),
    "unflatten": lambda a: a.unflatten(2, (2, 2)), "squeeze": lambda a: a[:, :1].squeeze(),
    "squeeze_dim": lambda a: a[:, :1].squeeze(1), "unsqueeze": lambda a: a.unsqueeze(1) * 1,
    "expand": lambda a: a[:, :1].expand(2, 5, 4), "expand_new_dim": lambda a: a.expand(3, 2, 3, 4),
    "expand_as": lambda a: a[:1].expand_as(a), "permute": lambda a: a.permute(2, 0, 1),
    "transpose": lambda a: a.transpose(0, 1), "T": lambda a: a[0].T, "t": lambda a: a[0].t(), "mT": lambda a: a.mT,
    "contiguous": lambda a: a.transpose(1, 2).contiguous(), "clone": lambda a: a.clone(),
    "split": lambda a: a.split(1, 1), "split_sizes": lambda a: a.split([1, 3], 2), "chunk": lambda a: a.chunk(2, 2),
    "unbind": lambda a: a.unbind(1), "narrow": lambda a: a.narrow(2, 1, 2), "repeat": lambda a: a.repeat(2, 1, 1, 2),
    "flip": lambda a: a.flip((0, 2)), "cat": lambda a: engine.cat([a, a * 2], 1),
    "stack": lambda a: engine.stack([a, a.exp()], 3), "iter": lambda a: list(a),
}


@pytest.mark.parametrize("name", list(SHAPE_OPS))
def test_shape_ops(name):
    gradcheck(SHAPE_OPS[name], rand(2, 3, 4))


INDEXING = {
    "int": lambda a: a[1], "neg_int": lambda a: a[-1, 2], "slice": lambda a: a[:, 1:3],
    "step": lambda a: a[:, ::2], "none": lambda a: a[None, :, None], "ellipsis": lambda a: a[..., 1],
    "int_array": lambda a: a[engine.tensor([0, 1, 1])], "list": lambda a: a[[1, 0]],
    "two_arrays": lambda a: a[[0, 1], :, [3, 3]], "mixed": lambda a: a[1, :, [0, 2, 2]],
    "mask": lambda a: a[a > 0], "row_mask": lambda a: a[:, engine.tensor([True, False, True])],
    "gather": lambda a: a.gather(2, engine.tensor([[[0, 0], [1, 3], [2, 2]]] * 2)),
    "gather_small": lambda a: a.gather(1, engine.tensor([[[0, 1, 2, 0]], [[2, 2, 1, 1]]])),
    "index_select": lambda a: a.index_select(2, engine.tensor([3, 0, 0])),
}


@pytest.mark.parametrize("name", list(INDEXING))
def test_indexing(name):
    gradcheck(INDEXING[name], rand(2, 3, 4))


SETITEM = {
    "basic_tensor": lambda x, v: x.__setitem__((0, slice(1, 3)), v[0, :2]),
    "basic_scalar": lambda x, v: x.__setitem__((slice(None), 1), 5.0),
    "advanced": lambda x, v: x.__setitem__(engine.tensor([2, 0]), v[:2]),
    "mask": lambda x, v: x.__setitem__(x > 0.5, 0.0),
    "broadcast_row": lambda x, v: x.__setitem__(1, v[2]),
}


@pytest.mark.parametrize("name", list(SETITEM))
def test_setitem_is_recorded(name):
    def fn(a, v):
        x = a * 1.0
        SETITEM[name](x, v)
        return x * x

    gradcheck(fn, rand(3, 4, seed=1), rand(3, 4, seed=2))


def test_setitem_into_tensor_without_grad():
    def fn(v):
        x = engine.zeros(3, 4, dtype=engine.float64)
        x[1] = v[0] * 2
        x[:, 3] = v[:, 0]
        return x.exp()

    gradcheck(fn, rand(3, 4))


def test_inplace_ops_on_non_leaf():
    def fn(a, b):
        x = a * 1.0
        x.mul_(b)
        x += b
        x.sub_(a, alpha=0.5)
        x.div_(b.abs() + 1)
        x.clamp_(-0.7, 0.7)
        return x

    gradcheck(fn, rand(3, 4, seed=1), rand(3, 4, seed=2))


def test_inplace_on_view_rewrites_base():
    def fn(a, b):
        x = a * 2.0  # exp would save its output, and torch forbids modifying it then
        row = x[1]
        row.mul_(b[0])
        x[:, 0].add_(b[:, 1])
        return x * a

    gradcheck(fn, rand(3, 4, seed=1), rand(3, 4, seed=2))


@settings(max_examples=25, deadline=None)
@given(
    a_shape=st.lists(st.integers(1, 3), min_size=0, max_size=3),
    drop=st.lists(st.booleans(), min_size=3, max_size=3),
    op=st.sampled_from(["add", "mul", "sub", "div", "maximum"]),
)
def test_broadcasting_any_shapes(a_shape, drop, op):
    """Hypothesis: b's shape is a's with some dims set to 1 and maybe leading dims dropped."""
    b_shape = [1 if d else n for n, d in zip(a_shape, drop)]
    b_shape = b_shape[len(b_shape) // 2:] if drop[0] else b_shape
    fns = {"add": lambda a, b: a + b, "mul": lambda a, b: a * b, "sub": lambda a, b: b - a,
           "div": lambda a, b: a / (b.abs() + 1), "maximum": engine.maximum}
    gradcheck(fns[op], rand(*a_shape, seed=1), rand(*b_shape, seed=2))


@settings(max_examples=20, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3), data=st.data())
def test_reductions_any_dims(shape, data):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    keepdim = data.draw(st.booleans())
    fn = data.draw(st.sampled_from(["sum", "mean", "logsumexp", "softmax", "std"]))
    if fn == "std" and shape[dim % len(shape)] == 1:
        fn = "var"  # a 1-element unbiased std is NaN in torch too
        shape = list(shape)
        shape[dim % len(shape)] = 2
    ops = {"sum": lambda a: a.sum(dim, keepdim=keepdim), "mean": lambda a: a.mean(dim, keepdim=keepdim),
           "logsumexp": lambda a: a.logsumexp(dim, keepdim=keepdim), "softmax": lambda a: a.softmax(dim),
           "std": lambda a: a.std(dim, keepdim=keepdim), "var": lambda a: a.var(dim, keepdim=keepdim)}
    gradcheck(ops[fn], rand(*shape))


def test_gradcheck_detects_a_wrong_backward():
    """The checker itself must fail on a wrong formula, or every test above proves nothing."""

    class WrongExp(engine.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.exp()

        @staticmethod
        def backward(ctx, g):
            return g * 2

    with pytest.raises(AssertionError, match="gradient mismatch"):
        gradcheck(WrongExp.apply, rand(3))


def test_float32_stays_float32():
    a = engine.randn(3, 4, requires_grad=True)
    b = engine.randn(4, requires_grad=True)
    y = ((a * 2.5 + b) / 3).exp().log_softmax(1).mean() ** 2
    assert y.dtype == engine.float32
    y.backward()
    assert a.grad.dtype == engine.float32 and b.grad.dtype == engine.float32
    assert np.isfinite(a.grad.numpy()).all()
