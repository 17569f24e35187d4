"""The engine against PyTorch on the same code: values, gradients, ``grad_fn`` names and the
``next_functions`` structure below them, dtype promotion, error types and messages, reprs.

Each case is a function of ``(lib, tensors)`` that runs unchanged on ``engine`` and on ``torch``.
"""

from __future__ import annotations

import numpy as np
import pytest

import engine

SHAPES = dict(a=(3, 4), b=(3, 4), m=(4, 5), v=(4,), B=(2, 3, 4), C=(2, 4, 5), D=(4, 5), B4=(2, 1, 3, 4),
              C4=(3, 4, 5), p=(3, 4))


def make_inputs(lib):
    rng = np.random.default_rng(0)
    out = {}
    for name, shape in SHAPES.items():
        data = rng.standard_normal(shape).astype(np.float32)
        if name == "p":
            data = np.abs(data) + 0.5
        out[name] = lib.tensor(data, requires_grad=True)
    return out


def graph_signature(node) -> str:
    """Names and edges of the whole graph below ``node`` (``Name(child@index, ...)``)."""
    if node is None:
        return "None"
    kids = [f"{graph_signature(n)}@{i}" for n, i in getattr(node, "next_functions", ())]
    return type(node).__name__ + (f"({', '.join(kids)})" if kids else "")


def _setitem(x, key, value):
    x[key] = value
    return x


CASES = {
    # arithmetic and broadcasting
    "add": lambda t, a, b, **_: a + b, "add_scalar": lambda t, a, **_: a + 2, "radd": lambda t, a, **_: 2 + a,
    "sub_bcast": lambda t, a, v, **_: a - v, "rsub": lambda t, a, **_: 1 - a, "mul": lambda t, a, b, **_: a * b,
    "mul_scalar": lambda t, a, **_: a * 2, "div": lambda t, a, p, **_: a / p, "rdiv": lambda t, p, **_: 2 / p,
    "pow": lambda t, a, **_: a ** 2, "pow_t": lambda t, p, b, **_: p ** b, "rpow": lambda t, a, **_: 2 ** a,
    "neg": lambda t, a, **_: -a, "abs": lambda t, a, **_: a.abs(), "exp": lambda t, a, **_: a.exp(),
    "log": lambda t, p, **_: p.log(), "sqrt": lambda t, p, **_: p.sqrt(), "sin": lambda t, a, **_: a.sin(),
    "cos": lambda t, a, **_: a.cos(), "tanh": lambda t, a, **_: a.tanh(), "sigmoid": lambda t, a, **_: a.sigmoid(),
    "relu": lambda t, a, **_: a.relu(), "clamp": lambda t, a, **_: a.clamp(-0.5, 0.5),
    "clamp_min": lambda t, a, **_: a.clamp(min=0), "clamp_t": lambda t, a, v, **_: a.clamp(min=v),
    "maximum": lambda t, a, b, **_: t.maximum(a, b), "minimum": lambda t, a, b, **_: t.minimum(a, b),
    "where": lambda t, a, b, **_: t.where(a > 0, a, b), "where_scalar": lambda t, a, **_: t.where(a > 0, a, 0.0),
    "masked_fill": lambda t, a, **_: a.masked_fill(a > 0, 0.0), "square": lambda t, a, **_: a.square(),
    "reciprocal": lambda t, p, **_: p.reciprocal(), "rsqrt": lambda t, p, **_: p.rsqrt(),
    # reductions
    "sum": lambda t, a, **_: a.sum(), "sum1": lambda t, a, **_: a.sum(1), "sum_keep": lambda t, a, **_: a.sum(1, keepdim=True),
    "sum_tuple": lambda t, B, **_: B.sum((0, 2)), "mean": lambda t, a, **_: a.mean(), "mean1": lambda t, a, **_: a.mean(-1),
    "var": lambda t, a, **_: a.var(), "var1": lambda t, a, **_: a.var(1, keepdim=True), "std": lambda t, a, **_: a.std(0),
    "std_biased": lambda t, a, **_: a.std(unbiased=False), "max": lambda t, a, **_: a.max(), "max1": lambda t, a, **_: a.max(1)[0],
    "min1_keep": lambda t, a, **_: a.min(1, keepdim=True).values, "amax": lambda t, a, **_: a.amax(1),
    "softmax": lambda t, a, **_: a.softmax(1) * a, "log_softmax": lambda t, a, **_: a.log_softmax(0) * a,
    "logsumexp": lambda t, a, **_: a.logsumexp(1), "norm": lambda t, a, **_: a.norm(), "prod": lambda t, p, **_: p.prod(1),
    # linear algebra, with torch's matmul decomposition
    "mm": lambda t, a, m, **_: a.mm(m), "bmm": lambda t, B, C, **_: B.bmm(C), "mv": lambda t, a, v, **_: a.mv(v),
    "dot": lambda t, v, **_: v.dot(v * 2), "matmul_2_2": lambda t, a, m, **_: a @ m, "matmul_1_1": lambda t, v, **_: v @ v,
    "matmul_2_1": lambda t, a, v, **_: a @ v, "matmul_1_2": lambda t, v, m, **_: v @ m, "matmul_3_3": lambda t, B, C, **_: B @ C,
    "matmul_3_2": lambda t, B, D, **_: B @ D, "matmul_3_1": lambda t, B, v, **_: B @ v, "matmul_2_3": lambda t, a, C, **_: a @ C,
    "matmul_1_3": lambda t, v, C, **_: v @ C, "matmul_4_3": lambda t, B4, C4, **_: B4 @ C4,
    "matmul_t_2": lambda t, B, D, **_: B.transpose(0, 1) @ D, "addmm": lambda t, a, m, D, **_: t.addmm(D[0], a, m),
    # shapes and views
    "reshape": lambda t, a, **_: a.reshape(12), "reshape_t": lambda t, a, **_: a.t().reshape(2, 6),
    "view": lambda t, a, **_: a.view(2, 6), "flatten": lambda t, B, **_: B.flatten(1), "flatten_t": lambda t, a, **_: a.t().flatten(),
    "squeeze": lambda t, a, **_: a.unsqueeze(0).squeeze(), "squeeze0": lambda t, a, **_: a.unsqueeze(0).squeeze(0),
    "expand": lambda t, v, **_: v.expand(3, 4) * 1, "expand_as": lambda t, v, a, **_: v.expand_as(a) * a,
    "permute": lambda t, B, **_: B.permute(2, 0, 1), "transpose": lambda t, B, **_: B.transpose(0, 1),
    "t": lambda t, a, **_: a.t(), "T": lambda t, a, **_: a.T, "mT": lambda t, B, **_: B.mT,
    "contiguous": lambda t, a, **_: a.t().contiguous(), "clone": lambda t, a, **_: a.clone(),
    "cat": lambda t, a, b, **_: t.cat([a, b], 1), "stack": lambda t, a, b, **_: t.stack([a, b], 2),
    "split": lambda t, a, **_: a.split(2)[1], "split_sizes": lambda t, a, **_: a.split([1, 3], 1)[1],
    "chunk": lambda t, a, **_: a.chunk(3, 1)[1], "unbind": lambda t, a, **_: a.unbind(1)[2],
    "narrow": lambda t, a, **_: a.narrow(1, 1, 2), "repeat": lambda t, v, **_: v.repeat(2, 3),
    "flip": lambda t, a, **_: a.flip(0), "iter": lambda t, a, **_: list(a)[1],
    "pad": lambda t, a, **_: t.nn.functional.pad(a, (1, 2, -1, 1), value=0.5), "double": lambda t, a, **_: a.double() * 2,
    # indexing
    "getitem_int": lambda t, a, **_: a[0], "getitem_neg": lambda t, a, **_: a[-1], "getitem_slice": lambda t, a, **_: a[1:],
    "getitem_full": lambda t, a, **_: a[:], "getitem_2d": lambda t, a, **_: a[:, 1:], "getitem_tuple": lambda t, a, **_: a[0, 1:3],
    "getitem_step": lambda t, a, **_: a[::2, 1::2], "getitem_none": lambda t, a, **_: a[None, 1:, ..., None],
    "getitem_ellipsis": lambda t, B, **_: B[..., 1], "getitem_arr": lambda t, a, **_: a[t.tensor([0, 2])],
    "getitem_list2": lambda t, a, **_: a[[0, 1], [1, 2]], "getitem_mask": lambda t, a, **_: a[a > 0],
    "getitem_mixed": lambda t, B, **_: B[0, :, [1, 2]], "getitem_split_adv": lambda t, B, **_: B[[0, 1], :, [1, 2]],
    "gather": lambda t, a, **_: a.gather(1, t.tensor([[0], [1], [2]])), "index_select": lambda t, a, **_: a.index_select(1, t.tensor([0, 0, 3])),
    # setitem and in-place
    "setitem": lambda t, a, b, **_: _setitem(a.clone(), 0, b[0]), "setitem_scalar": lambda t, a, **_: _setitem(a * 1, (slice(None), 1), 5.0),
    "setitem_adv": lambda t, a, b, **_: _setitem(a * 1, t.tensor([0, 2]), b[:2]),
    "setitem_into_zeros": lambda t, a, **_: _setitem(t.zeros(3, 4), 1, a[0] * 2),
    "setitem_mask": lambda t, a, **_: _setitem(a * 1, a > 0, 0.0),
    "inplace_view": lambda t, a, b, **_: (lambda x: (x[0].mul_(b[0]), x)[1])(a * 1),
    "iadd": lambda t, a, b, **_: (lambda x: (x.__iadd__(b), x)[1])(a * 1),
    "add_alpha_": lambda t, a, b, **_: (a * 1).add_(b, alpha=2), "mul_then_square": lambda t, a, b, **_: (lambda x: (x.mul_(b), x * x)[1])(a * 1),
    "clamp_": lambda t, a, **_: (a * 1).clamp_(-0.3, 0.3),
}


def run_case(lib, fn):
    ts = make_inputs(lib)
    try:
        y = fn(lib, **ts)
    except Exception as e:  # noqa: BLE001 - the exception is the result being compared
        return ("raised", type(e).__name__, str(e)), None, None, {}
    sig = graph_signature(y.grad_fn)
    y.sum().backward() if y.requires_grad else None
    grads = {k: t.grad.numpy().copy() for k, t in ts.items() if t.grad is not None}
    return sig, y.detach().numpy().copy(), y.dtype, grads


@pytest.mark.parametrize("name", list(CASES))
def test_matches_torch(torch, name):
    e_sig, e_val, e_dtype, e_grads = run_case(engine, CASES[name])
    t_sig, t_val, t_dtype, t_grads = run_case(torch, CASES[name])
    assert e_sig == t_sig
    if isinstance(t_sig, tuple):  # both raised: the same exception type and message
        return
    np.testing.assert_allclose(e_val, t_val, rtol=1e-5, atol=1e-5)
    assert str(e_dtype).split(".")[-1] == str(t_dtype).split(".")[-1]
    assert e_grads.keys() == t_grads.keys()
    for k in e_grads:
        np.testing.assert_allclose(e_grads[k], t_grads[k], rtol=1e-4, atol=1e-5, err_msg=k)


PROMOTIONS = [
    ("float32", "py_float"), ("int64", "py_float"), ("int32", "py_int"), ("bool", "py_int"),
    ("float32", "float64_0d"), ("int32", "int64_0d"), ("int32", "float64_0d"), ("float16", "int64"),
    ("int32", "int64"), ("bool", "bool"), ("float32", "float64"), ("int64", "bool_0d"),
]


def _operand(lib, spec):
    if spec == "py_float":
        return 2.5
    if spec == "py_int":
        return 3
    name, zero_d = spec.removesuffix("_0d"), spec.endswith("_0d")
    data = np.ones(() if zero_d else (2,), dtype=np.bool_ if name == "bool" else name)
    return lib.from_numpy(data)


@pytest.mark.parametrize("lhs,rhs", PROMOTIONS)
@pytest.mark.parametrize("op", ["add", "mul", "truediv"])
def test_dtype_promotion(torch, lhs, rhs, op):
    def dtype_of(lib):
        x, y = _operand(lib, lhs), _operand(lib, rhs)
        return str(getattr(x, f"__{op}__")(y).dtype).split(".")[-1]

    assert dtype_of(engine) == dtype_of(torch)


CREATION = {
    "tensor_floats": lambda t: t.tensor([1.0, 2.0]), "tensor_ints": lambda t: t.tensor([1, 2]),
    "tensor_bools": lambda t: t.tensor([True]), "tensor_scalar": lambda t: t.tensor(2.5),
    "tensor_mixed": lambda t: t.tensor([1, 2.0]), "tensor_np64": lambda t: t.tensor(np.zeros(2)),
    "from_numpy32": lambda t: t.from_numpy(np.zeros(2, np.float32)), "as_tensor": lambda t: t.as_tensor([1, 2]),
    "arange_int": lambda t: t.arange(5), "arange_float": lambda t: t.arange(0.0, 1.0, 0.25),
    "arange_step": lambda t: t.arange(1, 10, 3), "linspace": lambda t: t.linspace(0, 1, 5),
    "eye": lambda t: t.eye(3, 2), "full_int": lambda t: t.full((2,), 3), "full_float": lambda t: t.full((2,), 3.0),
    "zeros_like": lambda t: t.zeros_like(t.tensor([1, 2])), "ones": lambda t: t.ones(2, 3, dtype=t.float64),
    "empty_shape": lambda t: t.empty((2, 0)),
    "np_int32_scalar": lambda t: t.as_tensor(np.int32(1)), "np_float64_scalar": lambda t: t.tensor(np.float64(1.5)),
    "as_tensor_np_float64": lambda t: t.as_tensor(np.float64(1.5)),
}


@pytest.mark.parametrize("name", list(CREATION))
def test_creation(torch, name):
    e, t = CREATION[name](engine), CREATION[name](torch)
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    assert tuple(e.shape) == tuple(t.shape)
    if e.numel() and name != "empty_shape":
        np.testing.assert_allclose(e.numpy(), t.numpy())


REPRS = {
    "small": lambda t: t.tensor([[1.5, -2.25], [3.0, 4.125]]),
    "ints": lambda t: t.tensor([1, 20, 300]),
    "int32": lambda t: t.tensor([1, 2], dtype=t.int32),
    "int_valued_floats": lambda t: t.tensor([1.0, 2.0, -3.0]),
    "sci": lambda t: t.tensor([1e-8, 1e8]),
    "nan_inf": lambda t: t.tensor([float("nan"), float("inf"), -1.5]),
    "scalar": lambda t: t.tensor(3.5),
    "bool": lambda t: t.tensor([True, False]),
    "float64": lambda t: t.zeros(2, 3, dtype=t.float64),
    "requires_grad": lambda t: t.tensor([[0.5, 1.25], [2.0, 3.0]], requires_grad=True),
    "grad_fn": lambda t: t.tensor([0.5, 1.25], requires_grad=True) * 2,
    "summarised": lambda t: t.arange(2000),
    "summarised_2d": lambda t: t.arange(40000.0).reshape(200, 200) / 7,
    "wide": lambda t: t.arange(30.0) / 3,
    "empty": lambda t: t.zeros(0, 3),
    "3d": lambda t: t.arange(24.0).reshape(2, 3, 4) / 4,
}


@pytest.mark.parametrize("name", list(REPRS))
def test_repr(torch, name):
    assert repr(REPRS[name](engine)) == repr(REPRS[name](torch)).replace("torch.", "engine.")


def test_size_repr(torch):
    assert repr(engine.zeros(2, 3).shape) == repr(torch.zeros(2, 3).shape).replace("torch.", "engine.")
    assert repr(engine.zeros(2, 3).shape[1:]) == repr(torch.zeros(2, 3).shape[1:]).replace("torch.", "engine.")
