"""LR schedulers against torch: the learning rates of 40 steps (chained form), of ``step(epoch)``
(closed form), of two schedulers composed, state_dict round trips, warnings and errors."""

from __future__ import annotations

import math
import warnings

import pytest

import engine
from engine.optim import lr_scheduler as elrs
from tests.engine._parity import assert_same_error


class Scale:
    """A callable object (its __dict__ is what LambdaLR's state_dict saves)."""

    def __init__(self, factor):
        self.factor = factor

    def __call__(self, epoch):
        return self.factor ** epoch


SCHEDULERS = [
    ("StepLR", {"step_size": 7, "gamma": 0.5}),
    ("StepLR", {"step_size": 1, "gamma": 0.9}),
    ("MultiStepLR", {"milestones": [3, 10, 10, 25], "gamma": 0.3}),
    ("ExponentialLR", {"gamma": 0.93}),
    ("CosineAnnealingLR", {"T_max": 10}),
    ("CosineAnnealingLR", {"T_max": 13, "eta_min": 0.001}),
    ("LambdaLR", {"lr_lambda": lambda e: 1 / (e + 1)}),
    ("LambdaLR", {"lr_lambda": [lambda e: 0.97 ** e, Scale(0.9)]}),
    ("MultiplicativeLR", {"lr_lambda": lambda e: 0.95}),
    ("ConstantLR", {"factor": 0.25, "total_iters": 6}),
    ("LinearLR", {"start_factor": 0.1, "end_factor": 0.9, "total_iters": 12}),
]
IDS = [f"{n}-{i}" for i, (n, _) in enumerate(SCHEDULERS)]


def make(lib, name, kwargs, lrs=(0.1, 0.03)):
    params = [{"params": [lib.zeros(1, requires_grad=True)], "lr": lr} for lr in lrs]
    opt = lib.optim.SGD(params, lr=0.1)
    return opt, getattr(lib.optim.lr_scheduler, name)(opt, **kwargs)


def lr_sequence(lib, name, kwargs, steps=40):
    opt, sched = make(lib, name, kwargs)
    seq = [sched.get_last_lr()]
    for _ in range(steps):
        opt.step()
        sched.step()
        seq.append(sched.get_last_lr())
        assert seq[-1] == [g["lr"] for g in opt.param_groups]
    return seq


@pytest.mark.parametrize(("name", "kwargs"), SCHEDULERS, ids=IDS)
def test_chained_learning_rates_equal_torchs(torch, name, kwargs):
    assert lr_sequence(engine, name, kwargs) == lr_sequence(torch, name, kwargs)  # exact floats


@pytest.mark.parametrize(("name", "kwargs"), SCHEDULERS, ids=IDS)
def test_closed_form_learning_rates_equal_torchs(torch, name, kwargs):
    def seq(lib):
        opt, sched = make(lib, name, kwargs)
        out = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for epoch in (3, 0, 17, 10, 31, 5):
                opt.step()
                sched.step(epoch)
                out.append(sched.get_last_lr())
        return out

    assert seq(engine) == seq(torch)


def test_cosine_annealing_follows_the_closed_form_closely():
    opt, sched = make(engine, "CosineAnnealingLR", {"T_max": 20, "eta_min": 0.01}, lrs=(0.1,))
    for epoch in range(1, 41):
        opt.step()
        sched.step()
        expected = 0.01 + (0.1 - 0.01) * (1 + math.cos(math.pi * epoch / 20)) / 2
        assert sched.get_last_lr()[0] == pytest.approx(expected, rel=1e-9, abs=1e-12)


def test_two_schedulers_compose_as_in_torch(torch):
    def seq(lib):
        opt = lib.optim.SGD([lib.zeros(1, requires_grad=True)], lr=0.5)
        s1 = lib.optim.lr_scheduler.ExponentialLR(opt, gamma=0.9)
        s2 = lib.optim.lr_scheduler.MultiStepLR(opt, milestones=[4, 8], gamma=0.1)
        out = []
        for _ in range(12):
            opt.step()
            s1.step()
            s2.step()
            out.append(opt.param_groups[0]["lr"])
        return out

    assert seq(engine) == seq(torch)


@pytest.mark.parametrize(("name", "kwargs"), SCHEDULERS, ids=IDS)
def test_state_dict_matches_torch_and_round_trips_through_save(torch, tmp_path, name, kwargs):
    def states(lib):
        opt, sched = make(lib, name, kwargs)
        for _ in range(5):
            opt.step()
            sched.step()
        return opt, sched, sched.state_dict()

    eopt, esched, esd = states(engine)
    _, _, tsd = states(torch)
    assert esd == tsd
    engine.save(esd, tmp_path / "sched.pt")
    opt2, fresh = make(engine, name, kwargs)
    fresh.load_state_dict(engine.load(tmp_path / "sched.pt"))
    opt2.load_state_dict(eopt.state_dict())
    for _ in range(10):
        for o, s in ((eopt, esched), (opt2, fresh)):
            o.step()
            s.step()
        assert fresh.get_last_lr() == esched.get_last_lr()


def test_lambda_state_keeps_callable_objects_state():
    scale = Scale(0.5)
    opt, sched = make(engine, "LambdaLR", {"lr_lambda": [lambda e: 1.0, scale]})
    sd = sched.state_dict()
    assert sd["lr_lambdas"] == [None, {"factor": 0.5}]
    other = Scale(0.1)
    opt2, sched2 = make(engine, "LambdaLR", {"lr_lambda": [lambda e: 1.0, other]})
    sched2.load_state_dict(sd)
    assert other.factor == 0.5 and "lr_lambdas" in sd


def test_initial_lr_and_base_lrs_and_resuming(torch):
    def case(lib):
        opt, sched = make(lib, "StepLR", {"step_size": 2})
        groups = [(g["initial_lr"], g["lr"]) for g in opt.param_groups]
        resumed = lib.optim.lr_scheduler.StepLR(opt, step_size=2, last_epoch=3)
        return groups, sched.base_lrs, resumed.last_epoch, resumed.get_last_lr()

    assert case(engine) == case(torch)


def test_warnings_match_torch(torch):
    def case(lib):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            opt, sched = make(lib, "StepLR", {"step_size": 2})
            sched.step()  # before any optimizer.step(): warns
            sched.get_lr()  # outside step(): warns
            sched.step(5)  # epoch argument: deprecation warning
            opt2, sched2 = make(lib, "ExponentialLR", {"gamma": 0.5})
            opt2.step = lambda closure=None: None  # step replaced after the scheduler wrapped it
            sched2.step()
        return [str(w.message).split(".")[0] for w in caught]

    got = case(engine)
    assert got == case(torch)
    assert len(got) == 4


ERRORS = {
    "not an optimizer": lambda lib: lib.optim.lr_scheduler.StepLR(object(), step_size=1),
    "resume without initial_lr": lambda lib: lib.optim.lr_scheduler.StepLR(
        lib.optim.SGD([lib.zeros(1, requires_grad=True)], lr=0.1), step_size=1, last_epoch=4),
    "lambda count": lambda lib: lib.optim.lr_scheduler.LambdaLR(
        lib.optim.SGD([lib.zeros(1, requires_grad=True)], lr=0.1), lr_lambda=[lambda e: 1, lambda e: 2]),
    "multiplicative not callable": lambda lib: lib.optim.lr_scheduler.MultiplicativeLR(
        lib.optim.SGD([lib.zeros(1, requires_grad=True)], lr=0.1), lr_lambda=0.5),
    "constant factor": lambda lib: lib.optim.lr_scheduler.ConstantLR(
        lib.optim.SGD([lib.zeros(1, requires_grad=True)], lr=0.1), factor=1.5),
    "linear start": lambda lib: lib.optim.lr_scheduler.LinearLR(
        lib.optim.SGD([lib.zeros(1, requires_grad=True)], lr=0.1), start_factor=0.0),
    "linear end": lambda lib: lib.optim.lr_scheduler.LinearLR(
        lib.optim.SGD([lib.zeros(1, requires_grad=True)], lr=0.1), end_factor=2.0),
    "base get_lr": lambda lib: lib.optim.lr_scheduler.LRScheduler(
        lib.optim.SGD([lib.zeros(1, requires_grad=True)], lr=0.1)),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_errors_raise(case):
    with pytest.raises((TypeError, KeyError, ValueError, NotImplementedError)):
        ERRORS[case](engine)


@pytest.mark.parametrize("case", list(ERRORS))
def test_errors_match_torch(torch, case):
    assert_same_error(lambda: ERRORS[case](engine), lambda: ERRORS[case](torch))


def test_a_scheduler_is_an_lr_scheduler():
    assert isinstance(make(engine, "StepLR", {"step_size": 1})[1], elrs.LRScheduler)
