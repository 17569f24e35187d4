"""The element-wise update rules (engine/optim/_functional.py) run block by block on large
parameters: every value must come out bit for bit as from one pass over the whole arrays, for
every rule and option, with gradients in another layout and parameters that cannot be split."""

from __future__ import annotations

import numpy as np
import pytest

from engine.optim import _functional as F

SHAPE = (457, 217)  # 99,169 values: three full blocks and a ragged one

RULES = [
    ("sgd", 1, {"lr": 0.1, "momentum": 0.9, "dampening": 0.1, "weight_decay": 0.01, "nesterov": False,
                "maximize": False}),
    ("sgd", 1, {"lr": 0.1, "momentum": 0.9, "dampening": 0.0, "weight_decay": 0.0, "nesterov": True,
                "maximize": True}),
    ("sgd", 0, {"lr": 0.1, "momentum": 0.0, "dampening": 0.0, "weight_decay": 0.1, "nesterov": False,
                "maximize": False}),
    ("adam", 3, {"lr": 1e-3, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 0.01, "maximize": False,
                 "decoupled_weight_decay": True}),
    ("adam", 3, {"lr": 1e-3, "beta1": 0.8, "beta2": 0.99, "eps": 1e-6, "weight_decay": 0.1, "maximize": True,
                 "decoupled_weight_decay": False}),
    ("rmsprop", 3, {"lr": 1e-2, "alpha": 0.9, "eps": 1e-8, "weight_decay": 0.1, "momentum": 0.5,
                    "maximize": False}),
    ("adadelta", 2, {"lr": 1.0, "rho": 0.9, "eps": 1e-6, "weight_decay": 0.01, "maximize": False}),
    ("adagrad", 1, {"lr": 0.1, "lr_decay": 0.01, "weight_decay": 0.0, "eps": 1e-10, "maximize": False}),
    ("adamax", 2, {"lr": 2e-3, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 0.0, "maximize": True}),
    ("radam", 2, {"lr": 1e-3, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 0.01,
                  "decoupled_weight_decay": True, "maximize": False}),
]


def _run(rule: str, n_states: int, kwargs: dict, grad_order: str, whole: bool, monkeypatch) -> list[np.ndarray]:
    """Six steps of ``rule`` on fresh arrays; ``whole`` makes the blocks as large as the arrays."""
    rng = np.random.default_rng(1)
    p = rng.standard_normal(SHAPE).astype(np.float32)
    assert p.size > 3 * F.BLOCK and p.size % F.BLOCK
    # positive states; RMSprop's centered average kept below its square average (a real root)
    states = [(np.abs(rng.standard_normal(p.shape)) * (0.1 if k == 1 else 1.0) + (k == 0)).astype(np.float32)
              for k in range(n_states)]
    if whole:
        monkeypatch.setattr(F, "BLOCK", p.size)
    buf = None
    for step in range(1, 7):
        grad = np.asarray(rng.standard_normal(p.shape).astype(np.float32), order=grad_order)
        if rule == "sgd":
            buf = F.sgd(p, grad, buf, **kwargs)
        elif rule == "adam":
            F.adam(p, grad, states[0], states[1], states[2], float(step), **kwargs)
        elif rule == "rmsprop":
            F.rmsprop(p, grad, *states, **kwargs)
        elif rule in ("adadelta",):
            F.adadelta(p, grad, *states, **kwargs)
        else:
            getattr(F, rule)(p, grad, *states, float(step), **kwargs)
    monkeypatch.undo()
    return [p, *states] + ([buf] if buf is not None else [])


@pytest.mark.parametrize(("rule", "n_states", "kwargs"), RULES, ids=[f"{r}-{i}" for i, (r, _, _) in enumerate(RULES)])
@pytest.mark.parametrize("grad_order", ["C", "F"])
def test_blocks_give_the_whole_arrays_values_bit_for_bit(rule, n_states, kwargs, grad_order, monkeypatch):
    blocked = _run(rule, n_states, kwargs, grad_order, whole=False, monkeypatch=monkeypatch)
    whole = _run(rule, n_states, kwargs, grad_order, whole=True, monkeypatch=monkeypatch)
    for b, w in zip(blocked, whole):
        assert b.shape == w.shape and b.dtype == w.dtype and np.isfinite(b).all()
        np.testing.assert_array_equal(b, w)


def test_blocks_split_large_contiguous_arrays_and_leave_the_rest_whole():
    p = np.zeros((F.BLOCK + 5,), np.float32)
    g = np.ones_like(p)
    pieces = list(F.blocks(p, g, None))
    assert [len(b[0]) for b in pieces] == [F.BLOCK, 5]
    assert all(b[2] is None for b in pieces)
    assert all(np.shares_memory(b[0], p) for b in pieces)  # the parameter's blocks are views: written in place
    # a parameter that is not C-contiguous, a state in another layout, or another dtype: one piece
    strided = np.zeros((2 * F.BLOCK + 2,), np.float32)[::2]
    assert len(list(F.blocks(strided, np.ones_like(strided)))) == 1
    square = np.zeros((400, 400), np.float32)
    assert len(list(F.blocks(square, square, np.asfortranarray(square)))) == 1
    assert len(list(F.blocks(p, g.astype(np.float64)))) == 1
    small = np.zeros(10, np.float32)
    assert len(list(F.blocks(small, small))) == 1
