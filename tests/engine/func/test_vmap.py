"""engine/func/_vmap.py: ``vmap`` against torch's: the same values and shapes for in_dims/out_dims
(ints, None, nested tuples, dicts, negative dims), nested vmaps, gradients through it, and the
same errors (type and message) for bad in_dims/out_dims, batch sizes, randomness, chunk_size."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pytest

import engine
from tests.engine._outcomes import assert_as_torch, outcome

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 4)).astype(np.float32)
Y = RNG.standard_normal(4).astype(np.float32)
Z = RNG.standard_normal((5, 4)).astype(np.float32)
B = RNG.standard_normal((2, 3, 4)).astype(np.float32)


def t(lib: Any, a: np.ndarray) -> Any:
    return lib.tensor(a)


CASES = {
    "dot_none": lambda L: L.vmap(L.dot, in_dims=(0, None))(t(L, X), t(L, Y)),
    "dot_both": lambda L: L.func.vmap(L.dot)(t(L, X), t(L, X)),
    "in_dim_1": lambda L: L.vmap(L.sum, in_dims=1)(t(L, X)),
    "in_dim_negative": lambda L: L.vmap(lambda a: a + 1, in_dims=-1)(t(L, X)),
    "out_dim_1": lambda L: L.vmap(lambda a: a * 2, out_dims=1)(t(L, X)),
    "out_dims_tuple": lambda L: L.vmap(lambda a: (a, a.sum()), out_dims=(1, 0))(t(L, X)),
    "out_dims_none": lambda L: L.vmap(lambda a: (a * 2, t(L, Y) * 3), out_dims=(0, None))(t(L, X)),
    "out_dims_one_tuple": lambda L: L.vmap(lambda a: a.exp(), out_dims=(0,))(t(L, X)),
    "dict_in_dims": lambda L: L.vmap(lambda d: d["a"] + d["b"], in_dims=({"a": 0, "b": None},))(
        {"a": t(L, X), "b": t(L, Y)}),
    "list_input": lambda L: L.vmap(lambda a, b: a + b[0], in_dims=(0, [0]))(t(L, X), [t(L, X)]),
    "dict_output": lambda L: list(L.vmap(lambda a: {"k": a, "s": a.sum()}, out_dims={"k": 1, "s": 0})(t(L, X)).items()),
    "list_output": lambda L: L.vmap(lambda a: [a, a], out_dims=[0, 1])(t(L, X)),
    "kwargs_unmapped": lambda L: L.vmap(lambda a, k=None: a * k)(t(L, X), k=t(L, Y)),
    "nested": lambda L: L.vmap(L.vmap(L.dot))(t(L, B), t(L, B)),
    "nested_inner_none": lambda L: L.vmap(L.vmap(L.mul, in_dims=(0, None)), in_dims=(0, None))(t(L, B), t(L, Y)),
    "matmul_per_example": lambda L: L.vmap(lambda a: a @ a.T)(t(L, B)),
    "reduction_no_dim": lambda L: L.vmap(lambda a: a.sum())(t(L, X)),
    "softmax_dim0": lambda L: L.vmap(lambda a: L.softmax(a, dim=0))(t(L, X)),
    "module": lambda L: L.vmap(_linear(L))(t(L, X)),
    "partial": lambda L: L.vmap(functools.partial(_mul, b=t(L, Y)))(t(L, X)),
    "empty_batch": lambda L: L.vmap(lambda a: a * 2)(L.zeros(0, 3)),
    "empty_batch_reduce": lambda L: L.vmap(lambda a: a.sum(), out_dims=0)(L.zeros(0, 3)),
    "inplace_on_example": lambda L: _inplace(L),
    # errors
    "in_dims_struct": lambda L: L.vmap(L.dot, in_dims=(0,))(t(L, X), t(L, Y)),
    "in_dims_struct_3": lambda L: L.vmap(L.dot, in_dims=(0, 0, 0))(t(L, X), t(L, Y)),
    "in_dim_range": lambda L: L.vmap(L.dot, in_dims=(2, None))(t(L, X), t(L, Y)),
    "in_dim_0d": lambda L: L.vmap(lambda a: a + 1)(L.tensor(1.0)),
    "no_mapped_tensor": lambda L: L.vmap(L.dot, in_dims=(None, None))(t(L, X), t(L, Y)),
    "in_dims_str": lambda L: L.vmap(L.dot, in_dims="a")(t(L, X), t(L, Y)),
    "in_dims_list": lambda L: L.vmap(lambda a: a + 1, in_dims=[0])(t(L, X)),
    "in_dims_float": lambda L: L.vmap(lambda a: a + 1, in_dims=0.5)(t(L, X)),
    "in_dims_none": lambda L: L.vmap(lambda a: a + 1, in_dims=None)(t(L, X)),
    "in_dim_not_int": lambda L: L.vmap(lambda a: a, in_dims=("x",))(t(L, X)),
    "sizes_differ": lambda L: L.vmap(L.dot)(t(L, X), t(L, Z)),
    "map_a_number": lambda L: L.vmap(lambda a, b: a + b, in_dims=(0, 0))(t(L, X), 3),
    "no_inputs": lambda L: L.vmap(lambda: 1)(),
    "returns_int": lambda L: L.vmap(lambda a: 3)(t(L, X)),
    "returns_none": lambda L: L.vmap(lambda a: None)(t(L, X)),
    "out_dim_range": lambda L: L.vmap(lambda a: a * 2, out_dims=3)(t(L, X)),
    "out_dim_scalar_range": lambda L: L.vmap(lambda a: a.sum(), out_dims=1)(t(L, X)),
    "out_dims_struct": lambda L: L.vmap(lambda a: a * 2, out_dims=(1, 0))(t(L, X)),
    "out_dims_list_vs_tuple": lambda L: L.vmap(lambda a: [a, a], out_dims=(0, 1))(t(L, X)),
    "out_dims_str": lambda L: L.vmap(lambda a: a + 1, out_dims="x")(t(L, X)),
    "batched_at_none": lambda L: L.vmap(lambda a: (a * 2, a), out_dims=(0, None))(t(L, X)),
    "module_name_in_error": lambda L: L.vmap(_linear(L), in_dims=(5,))(t(L, X)),
    "partial_name_in_error": lambda L: L.vmap(functools.partial(_mul, b=1), in_dims=(5,))(t(L, X)),
    "randomness_bad": lambda L: L.vmap(lambda a: a, randomness="bad"),
    "chunk_size_0": lambda L: L.vmap(lambda a: a, chunk_size=0),
    "random_in_error_mode": lambda L: L.vmap(lambda a: a + L.rand(4))(t(L, X)),
    "randn_in_error_mode": lambda L: L.vmap(lambda a: L.randn_like(a))(t(L, X)),
}


def _mul(a: Any, b: Any) -> Any:
    return a * b


def _linear(lib: Any) -> Any:
    lin = lib.nn.Linear(4, 2)
    with lib.no_grad():
        lin.weight.copy_(lib.tensor(Z[:2]))
        lin.bias.copy_(lib.tensor(Y[:2]))
    return lin


def _inplace(lib: Any) -> Any:
    """An in-place op on the mapped example writes through to the input, as torch's does."""
    x = t(lib, X)
    out = lib.vmap(lambda a: a.add_(1))(x)
    return out, x


@pytest.mark.parametrize("name", CASES)
def test_vmap_matches_torch(name):
    assert_as_torch(name, CASES[name], torch)


def test_the_error_cases_are_errors_in_torch():
    """The list above covers torch's error paths (a case that stopped raising would still pass the
    comparison, so count them)."""
    errors = [n for n, fn in CASES.items() if outcome(torch, fn, torch)[0] == "err"]
    assert len(errors) == 27


def test_gradients_flow_through_vmap():
    grads = []
    for lib in (engine, torch):
        x = lib.tensor(X, requires_grad=True)
        w = lib.tensor(Y, requires_grad=True)
        lib.vmap(lambda a, w=w: (a * w).tanh().sum())(x).pow(2).sum().backward()
        grads.append((x.grad.numpy(), w.grad.numpy()))
    np.testing.assert_allclose(grads[0][0], grads[1][0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(grads[0][1], grads[1][1], rtol=1e-5, atol=1e-6)


def test_per_example_gradients_with_grad_and_functional_call():
    """The torch.func idiom: vmap(grad(loss), in_dims=(None, 0, 0)) over a batch."""
    results = []
    for lib in (engine, torch):
        model = _linear(lib)
        params = {k: v.detach() for k, v in model.named_parameters()}

        def loss(p, x, y, lib=lib, model=model):
            out = lib.func.functional_call(model, p, (x.unsqueeze(0),))
            return ((out - y) ** 2).sum()

        g = lib.func.vmap(lib.func.grad(loss), in_dims=(None, 0, 0))(params, lib.tensor(X), lib.tensor(X[:, :2]))
        results.append({k: v.detach().numpy() for k, v in g.items()})
    for k in results[1]:
        assert results[0][k].shape == results[1][k].shape == (3, *dict(weight=(2, 4), bias=(2,))[k])
        np.testing.assert_allclose(results[0][k], results[1][k], rtol=1e-5, atol=1e-5)


def test_randomness_same_and_different():
    engine.manual_seed(0)
    same_rows = engine.vmap(lambda a: engine.rand(4) + 0 * a, randomness="same")(engine.zeros(3, 4))
    assert all(np.array_equal(same_rows[0].numpy(), r.numpy()) for r in same_rows)
    engine.manual_seed(0)
    different = engine.vmap(lambda a: engine.rand(4) + 0 * a, randomness="different")(engine.zeros(3, 4))
    assert not np.array_equal(different[0].numpy(), different[1].numpy())
    assert same_rows.shape == different.shape == (3, 4)


def test_random_outside_vmap_still_works_after_an_error():
    with pytest.raises(RuntimeError, match="randomness error mode"):
        engine.vmap(lambda a: a + engine.rand(4))(engine.zeros(3, 4))
    assert engine.rand(2).shape == (2,)


def test_vmap_is_torchs_name_and_signature():
    import inspect

    assert engine.vmap is engine.func.vmap and torch.vmap is torch.func.vmap
    got = inspect.signature(engine.vmap).parameters
    want = inspect.signature(torch.vmap).parameters
    assert list(got) == list(want) and [p.kind for p in got.values()] == [p.kind for p in want.values()]
    assert [p.default for p in got.values()] == [p.default for p in want.values()]


@pytest.mark.parametrize("fn", [
    lambda a, b: (b.add_(1), a * 2)[1],  # torch: b updated once
    lambda a, b: b.add_(a),  # torch: refused (a mapped value into an unmapped tensor)
], ids=["unmapped_update", "mapped_into_unmapped"])
def test_an_inplace_update_of_an_unmapped_input_is_refused(fn):
    y = engine.zeros(4)
    with pytest.raises(RuntimeError, match=r"modified in place an input that is not mapped over \(in_dims=None\)"):
        engine.vmap(fn, in_dims=(0, None))(engine.ones(3, 4), y)
    assert y.tolist() == [1.0] * 4  # the first example's update, then the refusal


def test_an_inplace_update_of_a_mapped_input_still_writes_through():
    x = engine.zeros(3, 4)
    engine.vmap(lambda a, b: a.add_(b), in_dims=(0, None))(x, engine.ones(4))
    assert x.tolist() == [[1.0] * 4] * 3
