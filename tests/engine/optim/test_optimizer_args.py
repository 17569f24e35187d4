"""Argument checks of SGD, Adam, AdamW and RMSprop: the same errors and messages as torch."""

from __future__ import annotations

import pytest

import engine
from tests.engine._parity import assert_same_error


def p(lib):
    return [lib.zeros(2, requires_grad=True)]


CASES = [
    ("SGD", {"lr": -0.1}), ("SGD", {"lr": 0.1, "momentum": -1}), ("SGD", {"lr": 0.1, "weight_decay": -1}),
    ("SGD", {"lr": 0.1, "nesterov": True}), ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.1, "nesterov": True}),
    ("Adam", {"lr": -1.0}), ("Adam", {"eps": -1.0}), ("Adam", {"betas": (1.0, 0.999)}),
    ("Adam", {"betas": (-0.1, 0.999)}), ("Adam", {"betas": (0.9, 1.0)}), ("Adam", {"weight_decay": -0.1}),
    ("Adam", {"betas": (0.9, 0)}), ("AdamW", {"lr": -1.0}), ("AdamW", {"betas": (0.9, 1.5)}),
    ("AdamW", {"weight_decay": -1.0}), ("RMSprop", {"lr": -1.0}), ("RMSprop", {"eps": -1.0}),
    ("RMSprop", {"momentum": -1.0}), ("RMSprop", {"weight_decay": -1.0}), ("RMSprop", {"alpha": -1.0}),
]
IDS = [f"{name}-{kw}" for name, kw in CASES]


@pytest.mark.parametrize(("name", "kwargs"), CASES, ids=IDS)
def test_invalid_arguments_raise_value_error(name, kwargs):
    with pytest.raises(ValueError):
        getattr(engine.optim, name)(p(engine), **kwargs)


@pytest.mark.parametrize(("name", "kwargs"), CASES, ids=IDS)
def test_invalid_arguments_match_torch(torch, name, kwargs):
    assert_same_error(lambda: getattr(engine.optim, name)(p(engine), **kwargs),
                      lambda: getattr(torch.optim, name)(p(torch), **kwargs))


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop"])
def test_a_tensor_lr_must_have_one_element_and_then_works(torch, name):
    assert_same_error(lambda: getattr(engine.optim, name)(p(engine), lr=engine.tensor([0.1, 0.2])),
                      lambda: getattr(torch.optim, name)(p(torch), lr=torch.tensor([0.1, 0.2])))
    a, b = engine.tensor([1.0, 2.0], requires_grad=True), engine.tensor([1.0, 2.0], requires_grad=True)
    a.grad, b.grad = engine.tensor([0.5, -1.0]), engine.tensor([0.5, -1.0])
    getattr(engine.optim, name)([a], lr=engine.tensor(0.1)).step()
    getattr(engine.optim, name)([b], lr=0.1).step()
    assert a.tolist() == b.tolist()
