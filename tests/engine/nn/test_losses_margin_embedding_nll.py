"""The remaining losses against torch (smooth_l1/huber, kl_div, margin, embedding, NLL losses):
values, gradients, grad_fn graphs, every reduction, module forms, reprs, errors; finite-difference
gradient checks without torch."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import engine
import engine.nn.functional as EF
from tests.gradcheck import gradcheck

from .conftest import close
from .test_losses import REDUCTIONS, compare, rnd


def signs(*shape, seed=0):
    return np.where(rnd(*shape, seed=seed) > 0, 1.0, -1.0).astype(np.float32)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("beta", [1.0, 0.5, 0.0])
def test_smooth_l1(torch, reduction, beta):
    x, y = rnd(4, 5) * 2, rnd(4, 5, seed=1)
    compare(torch, "smooth_l1_loss", [x, y], dict(reduction=reduction, beta=beta), [True, True])
    compare(torch, "smooth_l1_loss", [x, y], {}, [True, False],
            module=("SmoothL1Loss", dict(reduction=reduction, beta=beta)))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("delta", [1.0, 0.3])
def test_huber(torch, reduction, delta):
    x, y = rnd(4, 5) * 2, rnd(4, 5, seed=1)
    compare(torch, "huber_loss", [x, y], dict(reduction=reduction, delta=delta), [True, True])
    compare(torch, "huber_loss", [x, y], dict(reduction=reduction, weight=rnd(4, 5, seed=3, low=0, high=1)),
            [True, False])
    compare(torch, "huber_loss", [x, y], {}, [True, True], module=("HuberLoss", dict(reduction=reduction,
                                                                                     delta=delta)))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none", "batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(torch, reduction, log_target):
    x = np.log(rnd(3, 4, low=0.1, high=1))
    y = np.log(rnd(3, 4, seed=1, low=0.1, high=1)) if log_target else rnd(3, 4, seed=1, low=0, high=1)
    compare(torch, "kl_div", [x, y], dict(reduction=reduction, log_target=log_target), [True, True])
    compare(torch, "kl_div", [x, y], {}, [True, False],
            module=("KLDivLoss", dict(reduction=reduction, log_target=log_target)))


def test_kl_div_mean_warns(torch):
    x, y = engine.zeros(2, 3), engine.ones(2, 3) / 3
    with pytest.warns(UserWarning, match="'batchmean' divides only by the batch size"):
        EF.kl_div(x, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        EF.kl_div(x, y, reduction="batchmean")


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_soft_margin_and_multilabel_soft_margin(torch, reduction):
    x, y = rnd(4, 5) * 3, signs(4, 5, seed=1)
    compare(torch, "soft_margin_loss", [x, y], dict(reduction=reduction), [True, False])
    compare(torch, "soft_margin_loss", [x, y], {}, [True, False], module=("SoftMarginLoss",
                                                                          dict(reduction=reduction)))
    t = (y > 0).astype(np.float32)
    compare(torch, "multilabel_soft_margin_loss", [x, t], dict(reduction=reduction), [True, True])
    compare(torch, "multilabel_soft_margin_loss", [x, t], {}, [True, False],
            module=("MultiLabelSoftMarginLoss", dict(reduction=reduction, weight=rnd(5, seed=2, low=0, high=1))))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_margin_ranking_hinge_cosine(torch, reduction):
    a, b, y = rnd(6), rnd(6, seed=1), signs(6, seed=2)
    compare(torch, "margin_ranking_loss", [a, b, y], dict(margin=0.3, reduction=reduction), [True, True, False])
    compare(torch, "margin_ranking_loss", [a, b, y], {}, [True, True, False],
            module=("MarginRankingLoss", dict(margin=0.1, reduction=reduction)))
    x = rnd(4, 5)
    compare(torch, "hinge_embedding_loss", [x, signs(4, 5, seed=3)], dict(margin=0.5, reduction=reduction),
            [True, False])
    compare(torch, "hinge_embedding_loss", [x, signs(4, 5, seed=3)], {}, [True, False],
            module=("HingeEmbeddingLoss", dict(reduction=reduction)))
    x1, x2 = rnd(6, 5), rnd(6, 5, seed=1)
    compare(torch, "cosine_embedding_loss", [x1, x2, y], dict(margin=0.1, reduction=reduction),
            [True, True, False])
    compare(torch, "cosine_embedding_loss", [x1[0], x2[0], np.array(-1.0, np.float32)],
            dict(margin=-0.9, reduction=reduction), [True, True, False])
    compare(torch, "cosine_embedding_loss", [x1, x2, y], {}, [True, True, False],
            module=("CosineEmbeddingLoss", dict(reduction=reduction)))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("p,swap", [(2.0, False), (1.0, True), (3.0, True)])
def test_triplet(torch, reduction, p, swap):
    a, pos, neg = rnd(5, 4), rnd(5, 4, seed=1), rnd(5, 4, seed=2)
    compare(torch, "triplet_margin_loss", [a, pos, neg], dict(p=p, swap=swap, margin=2.0, reduction=reduction),
            [True, True, True])
    compare(torch, "triplet_margin_loss", [a, pos, neg], {}, [True, True, True],
            module=("TripletMarginLoss", dict(p=p, swap=swap, margin=1.5, reduction=reduction)))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("full", [False, True])
def test_gaussian_nll(torch, reduction, full):
    x, y = rnd(4, 3), rnd(4, 3, seed=1)
    var = rnd(4, 3, seed=2, low=0, high=2)
    var[0, 0] = 1e-9  # clamped to eps outside autograd
    compare(torch, "gaussian_nll_loss", [x, y, var], dict(full=full, reduction=reduction), [True, True, True])
    compare(torch, "gaussian_nll_loss", [x, y, var[:, :1]], {}, [True, False, True],
            module=("GaussianNLLLoss", dict(full=full, reduction=reduction)))
    compare(torch, "gaussian_nll_loss", [x, y, var[:, 0]], dict(reduction=reduction), [True, False, True])
    compare(torch, "gaussian_nll_loss", [x, y, 0.7], dict(reduction=reduction), [True, False, False])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("log_input,full", [(True, False), (False, False), (True, True), (False, True)])
def test_poisson_nll(torch, reduction, log_input, full):
    x = rnd(4, 3) if log_input else rnd(4, 3, low=0.1, high=3)
    y = np.floor(rnd(4, 3, seed=1, low=0, high=5))
    compare(torch, "poisson_nll_loss", [x, y], dict(log_input=log_input, full=full, reduction=reduction),
            [True, False])
    compare(torch, "poisson_nll_loss", [x, y], {}, [True, False],
            module=("PoissonNLLLoss", dict(log_input=log_input, full=full, reduction=reduction)))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("p,margin", [(1, 1.0), (2, 0.5)])
def test_multi_margin(torch, reduction, p, margin):
    x, y = rnd(5, 4), np.array([0, 3, 1, 1, 2])
    compare(torch, "multi_margin_loss", [x, y], dict(p=p, margin=margin, reduction=reduction), [True, False])
    compare(torch, "multi_margin_loss", [x, y], {}, [True, False],
            module=("MultiMarginLoss", dict(p=p, margin=margin, weight=rnd(4, seed=3, low=0, high=1),
                                            reduction=reduction)))
    compare(torch, "multi_margin_loss", [x[0], y[:1]], dict(p=p, reduction=reduction), [True, False])


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multilabel_margin(torch, reduction):
    x = rnd(3, 5)
    y = np.array([[3, 0, -1, 1, 2], [1, 2, 4, 0, 3], [-1, 0, 0, 0, 0]])
    compare(torch, "multilabel_margin_loss", [x, y], dict(reduction=reduction), [True, False])
    compare(torch, "multilabel_margin_loss", [x[0], y[0]], dict(reduction=reduction), [True, False])
    compare(torch, "multilabel_margin_loss", [x, y], {}, [True, False],
            module=("MultiLabelMarginLoss", dict(reduction=reduction)))


def test_reprs_and_state(torch):
    for name, kw in [("SmoothL1Loss", dict(beta=0.5)), ("HuberLoss", dict(delta=2.0)), ("KLDivLoss", {}),
                     ("TripletMarginLoss", dict(p=1.0)), ("GaussianNLLLoss", dict(full=True)),
                     ("PoissonNLLLoss", {}), ("MarginRankingLoss", {}), ("CosineEmbeddingLoss", {})]:
        e, t = getattr(engine.nn, name)(**kw), getattr(torch.nn, name)(**kw)
        assert repr(e) == repr(t)
        assert list(e.state_dict()) == list(t.state_dict())
        assert e.reduction == t.reduction
    e = engine.nn.MultiMarginLoss(weight=engine.ones(3))
    assert list(e.state_dict()) == list(torch.nn.MultiMarginLoss(weight=torch.ones(3)).state_dict()) == ["weight"]
    assert engine.nn.HuberLoss().delta == 1.0 and engine.nn.SmoothL1Loss().beta == 1.0


def _error(lib, fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fn(lib)
        except Exception as err:  # noqa: BLE001 - the test compares type and message
            return type(err).__name__, str(err).replace("engine.Size", "torch.Size")
    raise AssertionError("no error")


@pytest.mark.parametrize("case", [
    lambda L: L.nn.functional.smooth_l1_loss(L.zeros(3), L.zeros(3), beta=-1.0),
    lambda L: L.nn.functional.huber_loss(L.zeros(3), L.zeros(3), delta=0.0),
    lambda L: L.nn.functional.huber_loss(L.zeros(3), L.zeros(3), weight=L.ones(2)),
    lambda L: L.nn.functional.margin_ranking_loss(L.zeros(3), L.zeros(3, 1), L.zeros(3)),
    lambda L: L.nn.functional.cosine_embedding_loss(L.zeros(3, 2), L.zeros(3, 2), L.zeros(3, 1)),
    lambda L: L.nn.functional.cosine_embedding_loss(L.zeros(3), L.zeros(3), L.zeros(3)),
    lambda L: L.nn.functional.cosine_embedding_loss(L.zeros(3, 2), L.zeros(3, 2), L.zeros(())),
    lambda L: L.nn.functional.triplet_margin_loss(L.zeros(3), L.zeros(3), L.zeros(3), margin=0.0),
    lambda L: L.nn.functional.triplet_margin_loss(L.zeros(3, 2), L.zeros(3), L.zeros(3, 2)),
    lambda L: L.nn.functional.gaussian_nll_loss(L.zeros(3), L.zeros(3), -1.0),
    lambda L: L.nn.functional.gaussian_nll_loss(L.zeros(3), L.zeros(3), -L.ones(3)),
    lambda L: L.nn.functional.gaussian_nll_loss(L.zeros(3, 2), L.zeros(3, 2), L.ones(2, 3)),
    lambda L: L.nn.functional.gaussian_nll_loss(L.zeros(3), L.zeros(3), L.ones(3), reduction="avg"),
    lambda L: L.nn.functional.poisson_nll_loss(L.zeros(3), L.zeros(3), reduction="avg"),
    lambda L: L.nn.functional.multilabel_soft_margin_loss(L.zeros(3), L.zeros(3), reduction="avg"),
    lambda L: L.nn.functional.multi_margin_loss(L.zeros(2, 3), L.tensor([0, 1]), p=3),
    lambda L: L.nn.functional.multi_margin_loss(L.zeros(2, 3), L.tensor([0, 1]), weight=L.ones(1, 3)),
    lambda L: L.nn.functional.multi_margin_loss(L.zeros(2, 3), L.tensor([0, 1, 2])),
    lambda L: L.nn.functional.multilabel_margin_loss(L.zeros(2, 3), L.tensor([0, 1])),
    lambda L: L.nn.functional.multilabel_margin_loss(L.zeros(2, 3), L.tensor([[0, 5, -1], [0, 1, -1]])),
    lambda L: L.nn.functional.multilabel_margin_loss(L.zeros(2, 3), L.zeros(2, 3)),
    lambda L: L.nn.functional.multilabel_margin_loss(L.zeros(2, 3, 1), L.zeros(2, 3, 1).long()),
    lambda L: L.nn.functional.multi_margin_loss(L.zeros(2, 3), L.tensor(1)),
    lambda L: L.nn.functional.multi_margin_loss(L.zeros(2, 3), L.tensor([0, 5])),
    lambda L: L.nn.functional.multi_margin_loss(L.zeros(2, 3), L.tensor([0.0, 1.0])),
    lambda L: L.nn.functional.kl_div(L.zeros(3), L.zeros(3), reduction="avg"),
    lambda L: L.nn.TripletMarginLoss(margin=-1.0),
    lambda L: L.nn.MultiMarginLoss(p=0),
    lambda L: L.nn.MultiMarginLoss(weight=L.ones(2, 2)),
])
def test_errors(torch, case):
    assert _error(engine, case) == _error(torch, case)


def f64(*shape, seed=0, low=None, high=None):
    return engine.tensor(rnd(*shape, seed=seed, low=low, high=high, dtype=np.float64), requires_grad=True)


def test_gradcheck_fused():
    x, y = f64(3, 4), f64(3, 4, seed=1)
    for red in REDUCTIONS:
        gradcheck(lambda a, b, r=red: EF.smooth_l1_loss(a, b, reduction=r, beta=0.7), x, y)
        gradcheck(lambda a, b, r=red: EF.huber_loss(a, b, reduction=r, delta=0.6), x, y)
        gradcheck(lambda a, r=red: EF.soft_margin_loss(a, engine.tensor(signs(3, 4, seed=4), dtype=engine.float64),
                                                       reduction=r), x)
        gradcheck(lambda a, r=red: EF.multi_margin_loss(a, engine.tensor([0, 3, 1]), p=2, margin=0.9,
                                                        reduction=r), x)
        gradcheck(lambda a, r=red: EF.multilabel_margin_loss(a, engine.tensor([[1, 2, -1, 0], [3, -1, 0, 0],
                                                                               [0, 1, 2, 3]]), reduction=r), x)


def test_gradcheck_composed():
    a, b, c = f64(4, 3), f64(4, 3, seed=1), f64(4, 3, seed=2)
    y = engine.tensor([1.0, -1.0, 1.0, -1.0], dtype=engine.float64)
    gradcheck(lambda u, v: EF.kl_div(u, v.abs(), reduction="batchmean"), a, b)
    gradcheck(lambda u, v, w: EF.triplet_margin_loss(u, v, w, swap=True, margin=3.0), a, b, c)
    gradcheck(lambda u, v: EF.cosine_embedding_loss(u, v, y, margin=-0.5), a, b)
    gradcheck(lambda u, v, w: EF.gaussian_nll_loss(u, v, w.abs() + 0.5, full=True), a, b, c)
    gradcheck(lambda u: EF.poisson_nll_loss(u, b.detach().abs(), full=True), a)
    gradcheck(lambda u, v: EF.multilabel_soft_margin_loss(u, v.sigmoid()), a, b)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("swap", [False, True])
def test_triplet_with_distance(torch, reduction, swap):
    a, pos, neg = rnd(5, 4), rnd(5, 4, seed=1), rnd(5, 4, seed=2)
    compare(torch, "triplet_margin_with_distance_loss", [a, pos, neg], dict(swap=swap, margin=2.0,
                                                                              reduction=reduction),
            [True, True, True])
    compare(torch, "triplet_margin_with_distance_loss", [a, pos, neg], {}, [True, True, True],
            module=("TripletMarginWithDistanceLoss", dict(swap=swap, reduction=reduction)))
    e = engine.nn.TripletMarginWithDistanceLoss(distance_function=lambda x, y: 1.0 - EF.cosine_similarity(x, y),
                                                reduction=reduction)
    t = torch.nn.TripletMarginWithDistanceLoss(
        distance_function=lambda x, y: 1.0 - torch.nn.functional.cosine_similarity(x, y), reduction=reduction)
    close(e(engine.tensor(a), engine.tensor(pos), engine.tensor(neg)),
          t(torch.tensor(a), torch.tensor(pos), torch.tensor(neg)), atol=1e-5)
    assert repr(engine.nn.TripletMarginWithDistanceLoss()) == repr(torch.nn.TripletMarginWithDistanceLoss())


@pytest.mark.parametrize("case", [
    lambda L: L.nn.TripletMarginWithDistanceLoss(margin=0),
    lambda L: L.nn.functional.triplet_margin_with_distance_loss(L.zeros(2), L.zeros(2), L.zeros(2),
                                                                reduction="avg"),
    lambda L: L.nn.functional.triplet_margin_with_distance_loss(L.zeros(2), L.zeros(2), L.zeros(2), margin=-1.0),
    lambda L: L.nn.functional.triplet_margin_with_distance_loss(L.zeros(2), L.zeros(2, 1), L.zeros(2)),
])
def test_triplet_with_distance_errors(torch, case):
    assert _error(engine, case) == _error(torch, case)
