"""Linear / F.linear, Identity, Flatten, Unflatten, Parameter and Buffer, against torch."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import engine
from tests.gradcheck import gradcheck

from .parity import fill_params, outcome, ramp


def graph_signature(node) -> str:
    """Names and edges of the graph below ``node``."""
    if node is None:
        return "None"
    kids = [f"{graph_signature(n)}@{i}" for n, i in getattr(node, "next_functions", ())]
    name = type(node).__name__.split("::")[-1]
    return name + (f"({', '.join(kids)})" if kids else "")


@pytest.mark.parametrize("shape", [(4,), (2, 4), (3, 2, 4), (2, 1, 3, 4)])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("input_grad", [True, False])
def test_functional_linear_matches_torch(both, shape, bias, input_grad):
    def case(lib):
        w = ramp(lib, 5, 4, requires_grad=True)
        b = ramp(lib, 5, requires_grad=True) if bias else None
        x = ramp(lib, *shape, requires_grad=input_grad)
        y = lib.nn.functional.linear(x, w, b)
        (y * ramp(lib, *y.shape)).sum().backward()
        return graph_signature(y.grad_fn), y, x.grad, w.grad, None if b is None else b.grad

    e, t = both(case)
    assert e == t


def test_functional_linear_gradcheck():
    w = engine.randn(3, 4, dtype=engine.float64, requires_grad=True)
    b = engine.randn(3, dtype=engine.float64, requires_grad=True)
    for shape in [(4,), (2, 4), (2, 2, 4)]:
        x = engine.randn(*shape, dtype=engine.float64, requires_grad=True)
        gradcheck(engine.nn.functional.linear, x, w, b)
        gradcheck(lambda x_, w_: engine.nn.functional.linear(x_, w_), x, w)


def test_linear_module_gradcheck():
    lin = engine.nn.Linear(3, 2).double()
    x = engine.randn(4, 3, dtype=engine.float64, requires_grad=True)
    gradcheck(lambda x_, w_, b_: engine.nn.functional.linear(x_, w_, b_), x, lin.weight, lin.bias)
    assert lin(x).dtype == engine.float64


def test_linear_forward_matches_torch(both):
    def case(lib):
        lin = fill_params(lib.nn.Linear(3, 2), lib)
        x = ramp(lib, 4, 3, requires_grad=True)
        y = lin(x)
        y.sum().backward()
        return y, x.grad, lin.weight.grad, lin.bias.grad, graph_signature(y.grad_fn)

    e, t = both(case)
    assert e == t


def test_linear_init_distribution():
    engine.manual_seed(0)
    lin = engine.nn.Linear(400, 300)
    bound = 1 / math.sqrt(400)
    w, b = lin.weight.detach().numpy(), lin.bias.detach().numpy()
    assert w.shape == (300, 400) and b.shape == (300,) and w.dtype == np.float32
    assert w.max() <= bound and w.min() >= -bound
    assert abs(w.var() / (bound**2 / 3) - 1) < 0.02 and abs(w.mean()) < 0.01 * bound
    assert b.max() <= bound and b.min() >= -bound and b.std() > 0.4 * bound
    assert lin.weight.requires_grad and lin.weight.is_leaf and lin.bias.grad_fn is None


def test_linear_init_follows_manual_seed():
    engine.manual_seed(3)
    a = engine.nn.Linear(4, 4).weight.detach().numpy().copy()
    engine.manual_seed(3)
    assert np.array_equal(a, engine.nn.Linear(4, 4).weight.detach().numpy())


def test_linear_zero_in_features(both):
    def case(lib):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            lin = lib.nn.Linear(0, 3)
        return [str(x.message) for x in w], lin.bias, lin(lib.zeros(2, 0))

    e, t = both(case)
    assert e == t


def test_linear_options(both):
    def case(lib):
        lin = lib.nn.Linear(2, 3, bias=False, device="cpu", dtype=lib.float64)
        return (lin.bias, lin.weight.dtype == lib.float64, list(lin._parameters), lin.in_features,
                lin.out_features, list(lin.state_dict()))

    e, t = both(case)
    assert e == t


@pytest.mark.parametrize("shape", [(2, 3), (3,), (2, 2, 3)])
def test_linear_wrong_input_shape(torch, shape):
    lin = engine.nn.Linear(4, 5)
    with pytest.raises(RuntimeError) as info:
        lin(engine.zeros(*shape))
    with pytest.raises(RuntimeError) as torch_info:
        torch.nn.Linear(4, 5)(torch.zeros(*shape))
    message = str(info.value)
    assert str(torch_info.value) in message               # torch's own words and shapes
    assert "Linear(in_features=4, out_features=5, bias=True)" in message  # the layer
    assert str(list(shape)) in message                     # the input's shape


def test_linear_reset_parameters_redraws():
    lin = engine.nn.Linear(3, 3)
    before = lin.weight.detach().numpy().copy()
    w = lin.weight
    lin.reset_parameters()
    assert lin.weight is w and not np.array_equal(before, w.detach().numpy())


def test_identity(both):
    def case(lib):
        m = lib.nn.Identity(3, key="ignored")
        x = ramp(lib, 2, requires_grad=True)
        return m(x) is x, list(m.parameters())

    e, t = both(case)
    assert e == t


FLATTEN = {
    "flatten_default": lambda lib: lib.nn.Flatten()(ramp(lib, 2, 3, 4, requires_grad=True)),
    "flatten_range": lambda lib: lib.nn.Flatten(0, 1)(ramp(lib, 2, 3, 4, requires_grad=True)),
    "flatten_bad_dims": lambda lib: outcome(lambda: lib.nn.Flatten(2, 1)(ramp(lib, 2, 3, 4))),
    "unflatten": lambda lib: lib.nn.Unflatten(1, (2, 2))(ramp(lib, 3, 4, requires_grad=True)),
    "unflatten_infer": lambda lib: lib.nn.Unflatten(-1, [2, -1])(ramp(lib, 3, 4)),
    "unflatten_size_type": lambda lib: outcome(lambda: lib.nn.Unflatten(1, 4)),
    "unflatten_elem_type": lambda lib: outcome(lambda: lib.nn.Unflatten(1, (2, 2.0))),
}


@pytest.mark.parametrize("name", sorted(FLATTEN))
def test_flatten_unflatten(both, name):
    def case(lib):
        out = FLATTEN[name](lib)
        return out, graph_signature(getattr(out, "grad_fn", None))

    e, t = both(case)
    assert e == t


PARAMETER = {
    "default": lambda lib: lib.nn.Parameter(lib.zeros(2)),
    "none": lambda lib: lib.nn.Parameter(),
    "no_grad_context": lambda lib: _in_no_grad(lib),
    "from_nonleaf": lambda lib: _from_nonleaf(lib),
    "int_requires_grad": lambda lib: type(outcome(lambda: lib.nn.Parameter(lib.zeros(2, dtype=lib.long)))).__name__,
    "int_no_grad": lambda lib: lib.nn.Parameter(lib.zeros(2, dtype=lib.long), requires_grad=False),
    "op_result_type": lambda lib: [type(r).__name__ for r in _ops_on_param(lib)],
    "buffer": lambda lib: _buffer(lib),
}


def _in_no_grad(lib):
    with lib.no_grad():
        return lib.nn.Parameter(lib.zeros(1))


def _from_nonleaf(lib):
    x = ramp(lib, 2, requires_grad=True) * 2
    p = lib.nn.Parameter(x)
    return p, p.is_leaf, p.grad_fn is None


def _ops_on_param(lib):
    p = lib.nn.Parameter(lib.ones(2))
    return p * 2, p.detach(), p.data, p.clone(), p[0]


def _buffer(lib):
    b = lib.nn.Buffer(lib.ones(2), persistent=False)
    return (type(b).__name__, isinstance(b, lib.nn.Buffer), isinstance(lib.ones(1), lib.nn.Buffer), b.persistent,
            lib.nn.Buffer(ramp(lib, 2, requires_grad=True)).requires_grad, isinstance(b, lib.nn.Parameter))


@pytest.mark.parametrize("name", sorted(PARAMETER))
def test_parameter_matches_torch(both, name):
    e, t = both(PARAMETER[name])
    assert e == t


def test_parameter_shares_memory_and_is_leaf():
    x = engine.zeros(3)
    p = engine.nn.Parameter(x)
    with engine.no_grad():
        p.add_(1)
    assert x.tolist() == [1.0, 1.0, 1.0]
    assert isinstance(p, engine.Tensor) and p.is_leaf and p.requires_grad
    (p * 2).sum().backward()
    assert p.grad.tolist() == [2.0, 2.0, 2.0]


def test_parameter_rejects_non_tensor():
    with pytest.raises(TypeError, match="Tensor"):
        engine.nn.Parameter([1.0, 2.0])
