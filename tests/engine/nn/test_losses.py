"""Losses against torch (functional and module forms): values, gradients of input and target,
grad_fn graphs, every reduction, ignore_index, label_smoothing, class weights, legacy args."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import engine
import engine.nn.functional as EF

from .conftest import close, edge_names, graph_names

REDUCTIONS = ["mean", "sum", "none"]


def rnd(*shape, seed=0, low=None, high=None, dtype=np.float32):
    rng = np.random.default_rng(seed)
    if low is not None:
        return rng.uniform(low, high, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def compare(torch, fn_name: str, args: list, kwargs: dict, grads: list[bool], module: tuple | None = None,
            atol: float = 1e-5):
    """Run the loss on both libraries (functional, or ``module=(ClassName, ctor_kwargs)``), compare
    the value, the graph and the gradients of every input that requires grad."""
    def build(lib):
        ins = [lib.tensor(a, requires_grad=g) if isinstance(a, np.ndarray) else a for a, g in zip(args, grads)]
        kw = {k: (lib.tensor(v) if isinstance(v, np.ndarray) else v) for k, v in kwargs.items()}
        if module is None:
            return ins, getattr(lib.nn.functional, fn_name)(*ins, **kw)
        ctor = {k: (lib.tensor(v) if isinstance(v, np.ndarray) else v) for k, v in module[1].items()}
        return ins, getattr(lib.nn, module[0])(**ctor)(*ins)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e_in, e_out = build(engine)
        t_in, t_out = build(torch)
    close(e_out, t_out, atol=atol)
    if not any(grads):
        assert e_out.grad_fn is None and t_out.grad_fn is None
        return
    assert graph_names(e_out, 12) == graph_names(t_out, 12)
    assert edge_names(e_out) == edge_names(t_out)
    g = rnd(*t_out.shape, seed=5)
    e_out.backward(engine.tensor(g))
    t_out.backward(torch.tensor(g))
    for e, t, needs in zip(e_in, t_in, grads):
        if needs:
            close(e.grad, t.grad, atol=atol)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name,cls", [("mse_loss", "MSELoss"), ("l1_loss", "L1Loss")])
def test_regression_losses(torch, reduction, name, cls):
    x, y = rnd(4, 5), rnd(4, 5, seed=1)
    compare(torch, name, [x, y], dict(reduction=reduction), [True, True])
    compare(torch, name, [x, y], {}, [True, False], module=(cls, dict(reduction=reduction)))
    compare(torch, name, [x, y], dict(reduction=reduction, weight=rnd(4, 5, seed=2, low=0.1, high=1)), [True, False])


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss"])
def test_regression_losses_broadcast_with_torch_warning(torch, name):
    compare(torch, name, [rnd(4, 5), rnd(5, seed=1)], {}, [True, True])
    with pytest.warns(UserWarning, match=r"Using a target size \(engine.Size\(\[5\]\)\) that is different"):
        getattr(EF, name)(engine.tensor(rnd(4, 5)), engine.tensor(rnd(5)))


TARGET = np.array([1, 0, 3, 3, 2, 4])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignore_index", [-100, 3])
def test_nll_loss(torch, reduction, weighted, ignore_index):
    kw = dict(reduction=reduction, ignore_index=ignore_index)
    if weighted:
        kw["weight"] = rnd(5, seed=3, low=0.2, high=2)
    logp = rnd(6, 5)
    compare(torch, "nll_loss", [logp, TARGET], kw, [True, False])
    compare(torch, "nll_loss", [logp, TARGET], {}, [True, False], module=("NLLLoss", kw))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignore_index", [-100, 3])
@pytest.mark.parametrize("smoothing", [0.0, 0.25])
def test_cross_entropy_class_indices(torch, reduction, weighted, ignore_index, smoothing):
    kw = dict(reduction=reduction, ignore_index=ignore_index, label_smoothing=smoothing)
    if weighted:
        kw["weight"] = rnd(5, seed=3, low=0.2, high=2)
    scores = rnd(6, 5) * 2
    compare(torch, "cross_entropy", [scores, TARGET], kw, [True, False])
    compare(torch, "cross_entropy", [scores, TARGET], {}, [True, False], module=("CrossEntropyLoss", kw))


@pytest.mark.parametrize("name", ["nll_loss", "cross_entropy"])
@pytest.mark.parametrize("kw", [dict(ignore_index=3), dict(ignore_index=3, label_smoothing=0.25),
                                dict(weight=np.array([0, 0, 0, 1, 1], np.float32))])
@pytest.mark.parametrize("shape", [(4, 5), (2, 5, 2)])
def test_mean_loss_with_no_counted_target(torch, name, kw, shape):
    """Every target ignored, or weighted 0 (a batch of padding): the mean is NaN in both, and the
    gradient is 0 for the ignored targets' rows (NaN only where a target counts with weight 0),
    not NaN everywhere."""
    if name == "nll_loss" and "label_smoothing" in kw:
        pytest.skip("nll_loss has no label_smoothing")
    target = np.full((shape[0],) + shape[2:], 3 if "ignore_index" in kw else 1)
    compare(torch, name, [rnd(*shape), target], kw, [True, False])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("smoothing", [0.0, 0.3])
def test_cross_entropy_spatial_and_unbatched(torch, reduction, smoothing):
    kw = dict(reduction=reduction, label_smoothing=smoothing, weight=rnd(3, seed=3, low=0.2, high=2))
    t4 = np.random.default_rng(0).integers(0, 3, (2, 4, 5))
    compare(torch, "cross_entropy", [rnd(2, 3, 4, 5), t4], kw, [True, False])
    t3 = np.random.default_rng(1).integers(0, 3, (2, 4))
    compare(torch, "cross_entropy", [rnd(2, 3, 4), t3], kw, [True, False])
    t5 = np.random.default_rng(2).integers(0, 3, (2, 2, 2, 3))
    compare(torch, "nll_loss", [rnd(2, 3, 2, 2, 3), t5], dict(reduction=reduction), [True, False])
    compare(torch, "cross_entropy", [rnd(3), np.array(2)], kw, [True, False])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_probability_targets(torch, reduction, smoothing, weighted):
    probs = np.random.default_rng(0).dirichlet(np.ones(5), size=4).astype(np.float32)
    kw = dict(reduction=reduction, label_smoothing=smoothing)
    if weighted:
        kw["weight"] = rnd(5, seed=3, low=0.2, high=2)
    compare(torch, "cross_entropy", [rnd(4, 5), probs], kw, [True, True])


def test_all_targets_ignored_gives_nan_like_torch(torch):
    t = np.full(4, -100)
    for kw in (dict(), dict(label_smoothing=0.1)):
        e = EF.cross_entropy(engine.tensor(rnd(4, 3)), engine.tensor(t), **kw)
        tt = torch.nn.functional.cross_entropy(torch.tensor(rnd(4, 3)), torch.tensor(t), **kw)
        assert np.isnan(e.item()) and np.isnan(tt.item())


def test_byte_targets_are_accepted(torch):
    compare(torch, "nll_loss", [rnd(6, 5), TARGET.astype(np.uint8)], {}, [True, False])


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy(torch, reduction):
    x, y = rnd(4, 5, low=0.02, high=0.98), rnd(4, 5, seed=1, low=0, high=1)
    compare(torch, "binary_cross_entropy", [x, y], dict(reduction=reduction), [True, True])
    w = rnd(5, seed=2, low=0.1, high=2)
    compare(torch, "binary_cross_entropy", [x, y], dict(reduction=reduction, weight=w), [True, False])
    compare(torch, "binary_cross_entropy", [x, y], {}, [True, False],
            module=("BCELoss", dict(reduction=reduction, weight=w)))


def test_binary_cross_entropy_clamps_logs_at_minus_100(torch):
    x = np.array([0.0, 1.0, 0.5], np.float32)
    y = np.array([1.0, 0.0, 1.0], np.float32)
    compare(torch, "binary_cross_entropy", [x, y], dict(reduction="none"), [False, False])


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy_with_logits(torch, reduction):
    x, y = rnd(4, 5) * 4, rnd(4, 5, seed=1, low=0, high=1)
    x[0, :3] = [60.0, -60.0, 0.0]  # stable at large |x|
    compare(torch, "binary_cross_entropy_with_logits", [x, y], dict(reduction=reduction), [True, True])
    kw = dict(weight=rnd(4, 5, seed=2, low=0.1, high=2), pos_weight=rnd(5, seed=3, low=0.1, high=3))
    compare(torch, "binary_cross_entropy_with_logits", [x, y], dict(kw, reduction=reduction), [True, True])
    compare(torch, "binary_cross_entropy_with_logits", [x, y], {}, [True, False],
            module=("BCEWithLogitsLoss", dict(kw, reduction=reduction)))


@pytest.mark.parametrize("legacy,expected", [(dict(size_average=False), "sum"), (dict(reduce=False), "none"),
                                             (dict(size_average=True, reduce=True), "mean")])
def test_legacy_size_average_and_reduce(torch, legacy, expected):
    with pytest.warns(UserWarning, match=f"please use reduction='{expected}' instead"):
        m = engine.nn.MSELoss(**legacy)
    assert m.reduction == expected
    with pytest.warns(UserWarning, match=f"reduction='{expected}'"):
        e = EF.nll_loss(engine.tensor(rnd(6, 5)), engine.tensor(TARGET), **legacy)
    with pytest.warns(UserWarning):
        t = torch.nn.functional.nll_loss(torch.tensor(rnd(6, 5)), torch.tensor(TARGET), **legacy)
    close(e, t)


def test_loss_modules_repr_buffers_and_attributes(torch):
    w = rnd(5, low=0.1, high=1)
    pairs = [("MSELoss", {}), ("L1Loss", dict(reduction="sum")), ("NLLLoss", dict(ignore_index=2)),
             ("CrossEntropyLoss", dict(weight=w, label_smoothing=0.1)), ("BCELoss", {}),
             ("BCEWithLogitsLoss", dict(pos_weight=w))]
    for name, kw in pairs:
        e = getattr(engine.nn, name)(**{k: engine.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()})
        t = getattr(torch.nn, name)(**{k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()})
        assert repr(e) == repr(t)
        assert [n for n, _ in e.named_buffers()] == [n for n, _ in t.named_buffers()]
        assert list(e.state_dict()) == list(t.state_dict())
        for attr in ("reduction", "ignore_index", "label_smoothing"):
            assert getattr(e, attr, None) == getattr(t, attr, None)


def test_mnist_style_log_softmax_then_nll(torch):
    scores = rnd(64, 10)
    target = np.random.default_rng(0).integers(0, 10, 64)
    e_x, t_x = engine.tensor(scores, requires_grad=True), torch.tensor(scores, requires_grad=True)
    e = EF.nll_loss(EF.log_softmax(e_x, dim=1), engine.tensor(target))
    t = torch.nn.functional.nll_loss(torch.nn.functional.log_softmax(t_x, dim=1), torch.tensor(target))
    assert graph_names(e) == graph_names(t) == ["NllLossBackward0", [["LogSoftmaxBackward0", []]]]
    e.backward()
    t.backward()
    close(e, t)
    close(e_x.grad, t_x.grad)
