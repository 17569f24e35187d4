"""EmbeddingBag and F.embedding_bag against torch: every mode, offsets and per-sample weights,
the module, torch's errors and finite differences."""

from __future__ import annotations

import numpy as np
import pytest

import engine
import engine.nn.functional as EF
from tests.gradcheck import gradcheck

from .conftest import close, error_of, f64, rnd, run_both

BAGS = [
    dict(input=np.array([1, 2, 4, 5, 4, 3, 2, 9]), offsets=np.array([0, 4])),
    dict(input=np.array([1, 2, 4, 5, 4, 3, 2, 9]), offsets=np.array([0, 3, 3, 7])),  # an empty bag
    dict(input=np.array([[1, 2, 4], [5, 4, 3]])),
    dict(input=np.array([1, 0, 4, 0, 4, 3, 2, 9]), offsets=np.array([0, 2, 5, 8]), include_last_offset=True),
    dict(input=np.array([1, 0, 4, 0, 0, 3, 2, 9]), offsets=np.array([0, 2, 3, 5]), padding_idx=0),
]


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("case", range(len(BAGS)))
def test_embedding_bag(torch, mode, case):
    kw = dict(BAGS[case])
    w = rnd(10, 3)
    res = []
    for lib in (engine, torch):
        wt = lib.tensor(w, requires_grad=True)
        args = {k: (lib.tensor(v) if isinstance(v, np.ndarray) else v) for k, v in kw.items()}
        out = lib.nn.functional.embedding_bag(weight=wt, mode=mode, **args)
        out.backward(lib.tensor(rnd(*out.shape, seed=2)))
        res.append((out, wt.grad))
    (eo, eg), (to, tg) = res
    close(eo, to, atol=1e-6)
    close(eg, tg, atol=1e-6)
    assert eo.grad_fn.name() == to.grad_fn.name() == "EmbeddingBagBackward0"


def test_embedding_bag_per_sample_weights_and_module(torch):
    idx, off = np.array([1, 2, 4, 5, 4, 3, 2, 9]), np.array([0, 4])
    run_both(torch, lambda L, w, p: L.nn.functional.embedding_bag(L.tensor(idx), w, L.tensor(off), mode="sum",
                                                                     per_sample_weights=p),
             [rnd(10, 3), rnd(8, seed=1)])
    e, t = engine.nn.EmbeddingBag(10, 3, mode="max"), torch.nn.EmbeddingBag(10, 3, mode="max")
    assert repr(e) == repr(t) and list(e.state_dict()) == list(t.state_dict())
    e.load_state_dict({"weight": engine.tensor(t.weight.detach().numpy())})
    close(e(engine.tensor(idx), engine.tensor(off)), t(torch.tensor(idx), torch.tensor(off)))
    p = engine.nn.EmbeddingBag(10, 3, padding_idx=2)
    assert p.weight[2].tolist() == [0.0, 0.0, 0.0]
    assert repr(p) == repr(torch.nn.EmbeddingBag(10, 3, padding_idx=2))
    engine_max_norm = engine.nn.EmbeddingBag(10, 3, max_norm=1.0, mode="sum")
    engine_max_norm(engine.tensor([[1, 2]]))
    assert np.linalg.norm(engine_max_norm.weight.detach().numpy()[[1, 2]], axis=1).max() <= 1.0 + 1e-5


@pytest.mark.parametrize("case", [
    lambda L: L.nn.functional.embedding_bag(L.tensor([1, 2]), L.zeros(10, 3)),
    lambda L: L.nn.functional.embedding_bag(L.tensor([[1, 2]]), L.zeros(10, 3), L.tensor([0])),
    lambda L: L.nn.functional.embedding_bag(L.tensor([1, 2]), L.zeros(10, 3), L.tensor([0]), mode="mean",
                                            per_sample_weights=L.ones(2)),
    lambda L: L.nn.functional.embedding_bag(L.tensor([1, 2]), L.zeros(10, 3), L.tensor([1])),
    lambda L: L.nn.functional.embedding_bag(L.tensor([1, 2]), L.zeros(10, 3), L.tensor([0, 3])),
    lambda L: L.nn.functional.embedding_bag(L.tensor([1, 2]), L.zeros(10, 3), L.tensor([0]), mode="avg"),
    lambda L: L.nn.functional.embedding_bag(L.tensor([1, 2]), L.zeros(10, 3), L.tensor([[0]])),
    lambda L: L.nn.functional.embedding_bag(L.tensor([1, 2]), L.zeros(10, 3), L.tensor([0]), mode="max",
                                            scale_grad_by_freq=True),
    lambda L: L.nn.functional.embedding_bag(L.tensor([[[1, 2]]]), L.zeros(10, 3)),
])
def test_embedding_bag_errors(torch, case):
    e, t = error_of(engine, case), error_of(torch, case)
    assert e[0] == t[0]
    assert e[1].split(" of type")[0] == t[1].split(" of type")[0]


def test_embedding_bag_gradcheck():
    idx, off = engine.tensor([1, 2, 4, 5, 4, 3, 2, 9]), engine.tensor([0, 3, 3])
    for mode in ("sum", "mean", "max"):
        gradcheck(lambda w, m=mode: EF.embedding_bag(idx, w, off, mode=m), f64(10, 3))
    gradcheck(lambda w, p: EF.embedding_bag(idx, w, off, mode="sum", per_sample_weights=p), f64(10, 3), f64(8))
