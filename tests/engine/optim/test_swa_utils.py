"""``engine.optim.swa_utils`` against torch 2.13: averaged weights after a training loop (SWA,
EMA by ``avg_fn`` and by ``multi_avg_fn``, with and without buffers), SWALR's lr sequences and
state dict, ``update_bn``'s running statistics, and torch's errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import engine
from engine.optim import swa_utils


def arr(seed, *shape):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def model(lib):
    return lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.BatchNorm1d(8), lib.nn.ReLU(), lib.nn.Linear(8, 1))


def twins(torch):
    tm, em = model(torch), model(engine)
    em.load_state_dict({k: engine.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    return em, tm


def swa(lib):
    return lib.optim.swa_utils


AVERAGERS = {
    "swa": lambda su: {},
    "ema_avg_fn": lambda su: {"avg_fn": su.get_ema_avg_fn(0.9)},
    "ema_multi": lambda su: {"multi_avg_fn": su.get_ema_multi_avg_fn(0.9)},
    "swa_multi": lambda su: {"multi_avg_fn": su.get_swa_multi_avg_fn()},
    "swa_avg_fn": lambda su: {"avg_fn": su.get_swa_avg_fn()},
}


def averaged_after_training(lib, m, kind, use_buffers, steps=6):
    avg = swa(lib).AveragedModel(m, use_buffers=use_buffers, **AVERAGERS[kind](swa(lib)))
    opt = lib.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    for step in range(steps):
        x, y = lib.tensor(arr(step, 16, 4)), lib.tensor(arr(100 + step, 16, 1))
        opt.zero_grad()
        ((m(x) - y) ** 2).mean().backward()
        opt.step()
        avg.update_parameters(m)
    return avg


@pytest.mark.parametrize("use_buffers", [False, True], ids=["params", "params_and_buffers"])
@pytest.mark.parametrize("kind", list(AVERAGERS))
def test_averaged_weights_match_torch(torch, kind, use_buffers):
    em, tm = twins(torch)
    if kind == "swa_multi" and use_buffers:  # num_batches_tracked (int64) meets addcdiv: torch refuses it
        for lib, m in ((engine, em), (torch, tm)):
            with pytest.raises(RuntimeError, match="^Integer division with addcdiv is no longer supported"):
                averaged_after_training(lib, m, kind, use_buffers)
        return
    e_avg = averaged_after_training(engine, em, kind, use_buffers)
    t_avg = averaged_after_training(torch, tm, kind, use_buffers)
    e_state, t_state = e_avg.state_dict(), t_avg.state_dict()
    assert list(e_state) == list(t_state)
    for k in t_state:
        np.testing.assert_allclose(e_state[k].numpy(), t_state[k].numpy(), rtol=1e-5, atol=1e-6, err_msg=k)
    assert int(e_avg.n_averaged) == 6
    x = arr(50, 5, 4)
    e_avg.eval()
    t_avg.eval()
    np.testing.assert_allclose(e_avg(engine.tensor(x)).detach().numpy(), t_avg(torch.tensor(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-6)


def test_average_differs_from_the_model_and_the_model_is_untouched():
    m = model(engine)
    avg = averaged_after_training(engine, m, "swa", False)
    assert avg.module is not m
    assert not np.allclose(avg.module[0].weight.detach().numpy(), m[0].weight.detach().numpy())
    np.testing.assert_array_equal(avg.module[1].running_mean.numpy(), m[1].running_mean.numpy())  # buffers copied


def test_swa_mean_is_the_plain_mean():
    """Three snapshots averaged by SWA equal their arithmetic mean."""
    lin = engine.nn.Linear(2, 2)
    avg = swa_utils.AveragedModel(lin)
    snaps = []
    for i in range(3):
        with engine.no_grad():
            lin.weight.copy_(engine.tensor(arr(i, 2, 2)))
        snaps.append(lin.weight.detach().numpy().copy())
        avg.update_parameters(lin)
    np.testing.assert_allclose(avg.module.weight.detach().numpy(), np.mean(snaps, axis=0), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("strategy", ["cos", "linear"])
@pytest.mark.parametrize("anneal_epochs", [0, 1, 4])
def test_swalr_sequence_matches_torch(torch, strategy, anneal_epochs):
    seqs = {}
    for lib in (engine, torch):
        params = [lib.nn.Parameter(lib.ones(1)), lib.nn.Parameter(lib.ones(1))]
        opt = lib.optim.SGD([{"params": params[:1], "lr": 0.5}, {"params": params[1:], "lr": 0.2}])
        sched = swa(lib).SWALR(opt, swa_lr=[0.05, 0.01], anneal_epochs=anneal_epochs, anneal_strategy=strategy)
        seq = [sched.get_last_lr()]
        for _ in range(7):
            opt.step()
            sched.step()
            seq.append(sched.get_last_lr())
        seqs[lib.__name__] = seq
    np.testing.assert_allclose(seqs["engine"], seqs["torch"], rtol=1e-12)


def test_swalr_after_a_cosine_schedule_matches_torch(torch):
    """The usual recipe: CosineAnnealingLR, then SWALR from epoch 5."""
    seqs = {}
    for lib in (engine, torch):
        opt = lib.optim.SGD([lib.nn.Parameter(lib.ones(1))], lr=1.0)
        cos = lib.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10)
        swa_sched = None
        seq = []
        for epoch in range(10):
            opt.step()
            if epoch < 5:
                cos.step()
            else:
                swa_sched = swa_sched or swa(lib).SWALR(opt, swa_lr=0.05, anneal_epochs=3)
                swa_sched.step()
            seq.append(opt.param_groups[0]["lr"])
        seqs[lib.__name__] = seq
    np.testing.assert_allclose(seqs["engine"], seqs["torch"], rtol=1e-12)


def test_swalr_state_dict_round_trip_as_torch(torch):
    for lib in (engine, torch):
        opt = lib.optim.SGD([lib.nn.Parameter(lib.ones(1))], lr=0.5)
        sched = swa(lib).SWALR(opt, swa_lr=0.05, anneal_epochs=5, anneal_strategy="linear")
        opt.step()
        sched.step()
        state = sched.state_dict()
        assert "optimizer" not in state and "anneal_func" not in state and state["_anneal_strategy"] == "linear"
        opt2 = lib.optim.SGD([lib.nn.Parameter(lib.ones(1))], lr=0.5)
        other = swa(lib).SWALR(opt2, swa_lr=0.05, anneal_epochs=5, anneal_strategy="cos")
        other.load_state_dict(state)
        assert other.anneal_func(0.3) == pytest.approx(0.3)  # linear again
        assert other.anneal_epochs == 5 and other.last_epoch == sched.last_epoch


def test_swalr_get_lr_outside_step_warns_as_torch(torch):
    for lib in (engine, torch):
        opt = lib.optim.SGD([lib.nn.Parameter(lib.ones(1))], lr=0.5)
        sched = swa(lib).SWALR(opt, swa_lr=0.05)
        with pytest.warns(UserWarning, match="^To get the last learning rate computed by the scheduler, please use "
                                             r"`get_last_lr\(\)`.$"):
            sched.get_lr()


@pytest.mark.parametrize("kw, message", [
    (dict(anneal_strategy="step"), "anneal_strategy must be one of 'cos' or 'linear', instead got step"),
    (dict(anneal_epochs=-1), "anneal_epochs must be equal or greater than 0, got -1"),
    (dict(anneal_epochs=2.5), "anneal_epochs must be equal or greater than 0, got 2.5"),
    (dict(swa_lr=[0.1, 0.2]), "swa_lr must have the same length as optimizer.param_groups. swa_lr has 2 values, "
                              "param_groups has 1."),
])
def test_swalr_errors_as_torch(torch, kw, message):
    for lib in (engine, torch):
        opt = lib.optim.SGD([lib.nn.Parameter(lib.ones(1))], lr=0.5)
        with pytest.raises(ValueError) as info:
            swa(lib).SWALR(opt, **{"swa_lr": 0.05, **kw})
        assert str(info.value) == message


def test_averager_errors_as_torch(torch):
    for lib in (engine, torch):
        su = swa(lib)
        for make in (su.get_ema_avg_fn, su.get_ema_multi_avg_fn):
            with pytest.raises(ValueError, match=r"^Invalid decay value 1.5 provided. Please provide a value in "
                                                 r"\[0,1\] range.$"):
                make(1.5)
        with pytest.raises(AssertionError, match="^Only one of avg_fn and multi_avg_fn should be provided$"):
            su.AveragedModel(lib.nn.Linear(1, 1), avg_fn=su.get_swa_avg_fn(), multi_avg_fn=su.get_swa_multi_avg_fn())


def bn_model(lib):
    return lib.nn.Sequential(lib.nn.Conv2d(2, 3, 3), lib.nn.BatchNorm2d(3, momentum=0.3), lib.nn.ReLU(),
                             lib.nn.Flatten(), lib.nn.Linear(12, 4), lib.nn.BatchNorm1d(4))


@pytest.mark.parametrize("batches", ["tensors", "pairs"])
def test_update_bn_matches_torch(torch, batches):
    """Statistics recomputed over the loader as a cumulative average; momenta and the training
    flag restored."""
    res = {}
    tm, em = bn_model(torch), bn_model(engine)
    em.load_state_dict({k: engine.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    for lib, m in ((engine, em), (torch, tm)):
        m.eval()
        xs = [lib.tensor(arr(i, 5, 2, 4, 4)) for i in range(4)]
        loader = xs if batches == "tensors" else [(x, lib.zeros(5)) for x in xs]
        swa(lib).update_bn(loader, m)
        assert not m.training and m[1].momentum == 0.3 and m[5].momentum == 0.1
        res[lib.__name__] = {k: v.numpy() for k, v in m.state_dict().items() if "running" in k or "tracked" in k}
    assert res["engine"].keys() == res["torch"].keys()
    for k in res["torch"]:
        np.testing.assert_allclose(res["engine"][k], res["torch"][k], rtol=1e-5, atol=1e-6, err_msg=k)


def test_update_bn_without_batch_norm_does_nothing():
    calls = []
    m = engine.nn.Linear(2, 2)
    m.register_forward_hook(lambda *a: calls.append(1))
    swa_utils.update_bn([engine.ones(1, 2)], m)
    assert calls == []


def test_import_styles():
    import engine.optim.swa_utils as su
    from engine.optim.swa_utils import SWALR, AveragedModel

    assert su.AveragedModel is AveragedModel and su.SWALR is SWALR
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert engine.optim.swa_utils is su
