"""tile, movedim/moveaxis, broadcast_tensors/broadcast_shapes, atleast_1d/2d/3d, hstack, vstack,
column_stack against torch: shapes, values, gradients, grad_fn names and errors."""

from __future__ import annotations

import numpy as np
import pytest

import engine
from tests.gradcheck import gradcheck

RNG = np.random.default_rng(0)
A = RNG.standard_normal((2, 3))
V = RNG.standard_normal((3,))
C = RNG.standard_normal((2, 3, 4))

CASES = {
    "tile_short": (lambda lib, a: lib.tile(a, (2,)), [A]),
    "tile_long": (lambda lib, a: a.tile((2, 1, 2)), [A]),
    "movedim": (lambda lib, c: lib.movedim(c, 0, -1), [C]),
    "movedim_seq": (lambda lib, c: c.movedim((0, 2), (2, 0)), [C]),
    "moveaxis": (lambda lib, c: lib.moveaxis(c, 1, 0), [C]),
    "broadcast_tensors": (lambda lib, a, v: lib.cat([t.reshape(-1) for t in lib.broadcast_tensors(a, v)]), [A, V]),
    "atleast_2d": (lambda lib, v: lib.atleast_2d(v), [V]),
    "atleast_3d": (lambda lib, a: lib.atleast_3d(a), [A]),
    "hstack": (lambda lib, a, c: lib.hstack([a, c[:, :, 0]]), [A, C]),
    "hstack_1d": (lambda lib, v: lib.hstack([v, v]), [V]),
    "vstack": (lambda lib, v, a: lib.vstack([v, a]), [V, A]),
    "column_stack": (lambda lib, v, a: lib.column_stack([v[:2], a]), [V, A]),
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
    assert tuple(e_out.shape) == tuple(t_out.shape)
    np.testing.assert_allclose(e_out.detach().numpy(), t_out.detach().numpy())
    for e, t in zip(e_grads, t_grads):
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6)
    assert e_out.grad_fn.name() == t_out.grad_fn.name()


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradcheck(name):
    call, arrays = CASES[name]
    gradcheck(lambda *ts: call(engine, *ts), *[engine.tensor(a, dtype=engine.float64, requires_grad=True)
                                                for a in arrays])


def test_broadcast_shapes_and_identity_as_torch():
    torch = pytest.importorskip("torch")
    for shapes in [((2, 1), (3,)), ((1,), (4, 1, 5), 5), ((),), ((0, 1), (3,))]:
        assert tuple(engine.broadcast_shapes(*shapes)) == tuple(torch.broadcast_shapes(*shapes))
    x = engine.zeros(2, 3)
    same, expanded = engine.broadcast_tensors(x, engine.zeros(3))
    assert same is x and tuple(expanded.shape) == (2, 3)
    assert [tuple(t.shape) for t in engine.atleast_1d(engine.tensor(1.0), engine.zeros(2, 2))] == [(1,), (2, 2)]


@pytest.mark.parametrize("case", ["shapes", "tensors", "movedim_len", "movedim_repeat", "hstack_type"])
def test_errors_as_torch(case):
    torch = pytest.importorskip("torch")
    calls = {
        "shapes": lambda lib: lib.broadcast_shapes((2,), (3,)),
        "tensors": lambda lib: lib.broadcast_tensors(lib.zeros(2), lib.zeros(3)),
        "movedim_len": lambda lib: lib.movedim(lib.zeros(2, 3), (0, 1), (1,)),
        "movedim_repeat": lambda lib: lib.movedim(lib.zeros(2, 3), (0, 0), (1, 0)),
        "hstack_type": lambda lib: lib.hstack([lib.zeros(2), 1]),
    }
    with pytest.raises((RuntimeError, TypeError)) as t_err:
        calls[case](torch)
    with pytest.raises((RuntimeError, TypeError)) as e_err:
        calls[case](engine)
    assert type(e_err.value) is type(t_err.value)
    assert str(e_err.value) == str(t_err.value)


def test_errors_without_torch():
    with pytest.raises(RuntimeError, match="Attempting to broadcast a dimension of length 3 at -1!"):
        engine.broadcast_shapes((2,), (3,))
    with pytest.raises(RuntimeError, match=r"movedim: repeated dim in `source` \(\[0, 0\]\)"):
        engine.movedim(engine.zeros(2, 3), (0, 0), (1, 0))
