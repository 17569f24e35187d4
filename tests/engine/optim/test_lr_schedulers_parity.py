"""ReduceLROnPlateau, OneCycleLR, CosineAnnealingWarmRestarts, CyclicLR, PolynomialLR,
ChainedScheduler and SequentialLR against torch: every group's learning rate (and cycled
momentum) at each of 20 real optimizer steps, ``get_last_lr()``, state_dict equality and a
mid-run round trip into a fresh scheduler, warnings, and every validation error (type and
message). The hand-computed sequences at the end run without torch."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import engine
from tests.engine._parity import error_of

pytestmark = pytest.mark.filterwarnings("ignore:Detected call of `lr_scheduler.step\\(\\)`:UserWarning")

STEPS = 20
LRS = (0.1, 0.03)
# metrics for ReduceLROnPlateau: improvements, plateaus, a slight (sub-threshold) improvement
METRICS = [1.0, 0.9, 0.9, 0.9, 0.95, 0.85, 0.85, 0.8499, 0.85, 0.86, 0.7, 0.7, 0.7, 0.7, 0.7,
           0.69999, 0.7, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6]


def make_opt(lib: Any, kind: str = "sgd") -> Any:
    """Two param groups with different learning rates, each parameter with a gradient."""
    params = [lib.ones(2, requires_grad=True) for _ in LRS]
    sum((p * p).sum() for p in params).backward()
    groups = [{"params": [p], "lr": lr} for p, lr in zip(params, LRS)]
    if kind == "sgd":
        return lib.optim.SGD(groups, lr=0.1, momentum=0.9)
    return lib.optim.Adam(groups, lr=0.1)


def _steps_plateau(sched: Any, i: int) -> None:
    sched.step(METRICS[i])


def _steps_plateau_max(sched: Any, i: int) -> None:
    sched.step(-METRICS[i])


# name -> (builder(lr_scheduler module, optimizer), optimizer kind, how to step)
CASES: dict[str, tuple[Callable[[Any, Any], Any], str, Callable[[Any, int], None] | None]] = {
    "plateau-min": (lambda L, o: L.ReduceLROnPlateau(o, factor=0.5, patience=1), "sgd", _steps_plateau),
    "plateau-max-abs-cooldown": (
        lambda L, o: L.ReduceLROnPlateau(o, mode="max", factor=0.3, patience=0, threshold=0.02,
                                         threshold_mode="abs", cooldown=2, min_lr=[0.005, 0.001]),
        "sgd", _steps_plateau_max),
    "plateau-eps": (lambda L, o: L.ReduceLROnPlateau(o, factor=0.5, patience=0, min_lr=0.02, eps=0.004),
                    "adam", _steps_plateau),
    "onecycle-cos-sgd": (lambda L, o: L.OneCycleLR(o, max_lr=1.0, total_steps=STEPS), "sgd", None),
    "onecycle-cos-adam": (lambda L, o: L.OneCycleLR(o, max_lr=[0.5, 0.2], total_steps=STEPS + 3, pct_start=0.25,
                                                    div_factor=10.0, final_div_factor=100.0), "adam", None),
    "onecycle-linear-three-phase": (
        lambda L, o: L.OneCycleLR(o, max_lr=[0.5, 0.2], epochs=4, steps_per_epoch=5, anneal_strategy="linear",
                                  three_phase=True, base_momentum=[0.8, 0.7], max_momentum=0.9), "sgd", None),
    "onecycle-three-phase-adam": (lambda L, o: L.OneCycleLR(o, max_lr=0.4, total_steps=21, three_phase=True,
                                                            pct_start=0.4), "adam", None),
    "onecycle-no-momentum": (lambda L, o: L.OneCycleLR(o, max_lr=0.3, total_steps=STEPS, cycle_momentum=False),
                             "sgd", None),
    "warm-restarts": (lambda L, o: L.CosineAnnealingWarmRestarts(o, T_0=3), "sgd", None),
    "warm-restarts-mult": (lambda L, o: L.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=2, eta_min=0.001), "sgd",
                           None),
    "cyclic-triangular": (lambda L, o: L.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=3), "sgd", None),
    "cyclic-triangular2": (lambda L, o: L.CyclicLR(o, base_lr=[0.01, 0.002], max_lr=[0.1, 0.05], step_size_up=2,
                                                   step_size_down=4, mode="triangular2"), "sgd", None),
    "cyclic-exp-range-adam": (lambda L, o: L.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=3, mode="exp_range",
                                                      gamma=0.9, base_momentum=0.85, max_momentum=0.95), "adam", None),
    "cyclic-scale-fn-iterations": (
        lambda L, o: L.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=2, scale_fn=lambda x: 0.8**x,
                                scale_mode="iterations", cycle_momentum=False), "sgd", None),
    "cyclic-scale-fn-cycle": (lambda L, o: L.CyclicLR(o, base_lr=0.02, max_lr=0.2, step_size_up=3, mode="bogus",
                                                      scale_fn=lambda x: 1 / x), "adam", None),
    "polynomial": (lambda L, o: L.PolynomialLR(o, total_iters=8), "sgd", None),
    "polynomial-power": (lambda L, o: L.PolynomialLR(o, total_iters=12, power=2.5), "adam", None),
    "chained": (lambda L, o: L.ChainedScheduler([L.ConstantLR(o, factor=0.1, total_iters=3),
                                                 L.ExponentialLR(o, gamma=0.9)]), "sgd", None),
    "chained-explicit-optimizer": (
        lambda L, o: L.ChainedScheduler([L.PolynomialLR(o, total_iters=10, power=0.5),
                                         L.MultiStepLR(o, milestones=[4, 9], gamma=0.5)], optimizer=o), "sgd", None),
    "sequential": (lambda L, o: L.SequentialLR(o, [L.ConstantLR(o, factor=0.5, total_iters=3),
                                                   L.ExponentialLR(o, gamma=0.9)], milestones=[4]), "sgd", None),
    "sequential-three": (
        lambda L, o: L.SequentialLR(o, [L.LinearLR(o, start_factor=0.2, total_iters=3),
                                        L.CosineAnnealingLR(o, T_max=5, eta_min=0.001),
                                        L.StepLR(o, step_size=3, gamma=0.5)], milestones=[3, 9]), "sgd", None),
    "sequential-nested-chained": (
        lambda L, o: L.SequentialLR(o, [L.ChainedScheduler([L.ExponentialLR(o, gamma=0.8),
                                                            L.MultiStepLR(o, milestones=[3], gamma=0.1)]),
                                        L.LinearLR(o, start_factor=0.5, total_iters=4)],
                                    milestones=[6]), "sgd", None),
}


def _momenta(opt: Any) -> list[float]:
    return [g["betas"][0] if "betas" in g else g["momentum"] for g in opt.param_groups]


def build(lib: Any, case: str) -> tuple[Any, Any]:
    builder, kind, _ = CASES[case]
    opt = make_opt(lib, kind)
    return opt, builder(lib.optim.lr_scheduler, opt)


def advance(case: str, opt: Any, sched: Any, start: int, n: int) -> list[tuple[Any, ...]]:
    """``n`` rounds of optimizer.step() then scheduler.step(); the lrs, get_last_lr() and momenta."""
    stepper = CASES[case][2]
    out = []
    for i in range(start, start + n):
        opt.step()
        if stepper is None:
            sched.step()
        else:
            stepper(sched, i)
        out.append(([g["lr"] for g in opt.param_groups], sched.get_last_lr(), _momenta(opt)))
    return out


def run(lib: Any, case: str) -> tuple[list[tuple[Any, ...]], np.ndarray]:
    opt, sched = build(lib, case)
    seq = [([g["lr"] for g in opt.param_groups], sched.get_last_lr(), _momenta(opt))]
    seq += advance(case, opt, sched, 0, STEPS)
    params = np.concatenate([g["params"][0].detach().numpy() for g in opt.param_groups])
    return seq, params


@pytest.mark.parametrize("case", list(CASES))
def test_learning_rates_and_momenta_equal_torchs(torch, case):
    got, got_params = run(engine, case)
    want, want_params = run(torch, case)
    assert got == want  # exact floats, every group, every step
    for lrs, last, _ in got:
        assert lrs == last
    np.testing.assert_allclose(got_params, want_params, rtol=1e-5)


@pytest.mark.parametrize("case", list(CASES))
def test_state_dict_equals_torchs_and_resumes_identically(torch, tmp_path, case):
    def halfway(lib):
        opt, sched = build(lib, case)
        advance(case, opt, sched, 0, 8)
        return opt, sched

    eopt, esched = halfway(engine)
    topt, tsched = halfway(torch)
    esd = esched.state_dict()
    assert esd == tsched.state_dict()
    engine.save({"opt": eopt.state_dict(), "sched": esd}, tmp_path / "ckpt.pt")
    ckpt = engine.load(tmp_path / "ckpt.pt")
    opt2, fresh = build(engine, case)
    opt2.load_state_dict(ckpt["opt"])
    fresh.load_state_dict(ckpt["sched"])
    assert fresh.get_last_lr() == tsched.get_last_lr()
    assert advance(case, opt2, fresh, 8, STEPS - 8) == advance(case, topt, tsched, 8, STEPS - 8)


def test_warm_restarts_fractional_epochs_equal_torchs(torch):
    def seq(lib):
        opt, sched = build(lib, "warm-restarts-mult")
        out = []
        for epoch in (0.5, 1.25, 1.999, 2.0, 3.7, 6.0, 6.5, 14.2, 30.0, 0.0, 4):
            opt.step()
            sched.step(epoch)
            out.append((sched.get_last_lr(), sched.last_epoch, sched.T_cur, sched.T_i))
        return out

    assert seq(engine) == seq(torch)


def test_closed_form_steps_equal_torchs(torch):
    def seq(lib):
        opt, sched = build(lib, "polynomial-power")
        out = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for epoch in (3, 0, 17, 10, 5):
                opt.step()
                sched.step(epoch)
                out.append(sched.get_last_lr())
        return out

    assert seq(engine) == seq(torch)


def test_onecycle_past_total_steps_raises_like_torch(torch):
    def case(lib):
        opt, sched = build(lib, "onecycle-cos-sgd")
        advance("onecycle-cos-sgd", opt, sched, 0, STEPS)
        opt.step()
        sched.step()

    assert error_of(lambda: case(engine)) == error_of(lambda: case(torch)) == (
        "ValueError", f"Tried to step {STEPS + 1} times. The specified number of total steps is {STEPS}")


def test_plateau_with_tensor_metric_and_epoch_argument(torch):
    def seq(lib):
        opt = make_opt(lib)
        sched = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0)
        out = []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for i, m in enumerate([1.0, 2.0, 2.0, 0.5]):
                sched.step(lib.tensor(m), epoch=10 + i)
                out.append((sched.get_last_lr(), sched.last_epoch, sched.best))
        return out, [str(w.message)[:40] for w in caught]

    assert seq(engine) == seq(torch)


def test_plateau_param_group_added_after_init(torch):
    def case(lib, min_lr):
        opt = make_opt(lib)
        sched = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0, min_lr=min_lr)
        opt.add_param_group({"params": [lib.zeros(1, requires_grad=True)], "lr": 0.5})
        sched.step(1.0)
        sched.step(2.0)
        return sched.min_lrs, sched.get_last_lr()

    assert case(engine, 0.001) == case(torch, 0.001)
    assert error_of(lambda: case(engine, [0.0, 0.0])) == error_of(lambda: case(torch, [0.0, 0.0]))


def test_cyclic_callable_scale_fn_state_round_trip(torch):
    class Scale:
        def __init__(self, k):
            self.k = k

        def __call__(self, x):
            return self.k**x

    def case(lib, k):
        opt = make_opt(lib)
        return opt, lib.optim.lr_scheduler.CyclicLR(opt, 0.01, 0.1, step_size_up=2, scale_fn=Scale(k))

    _, esched = case(engine, 0.5)
    _, tsched = case(torch, 0.5)
    esd, tsd = esched.state_dict(), tsched.state_dict()
    assert esd == tsd and esd["_scale_fn_custom"] == {"k": 0.5}
    _, other = case(engine, 0.9)
    _, tother = case(torch, 0.9)
    other.load_state_dict(esd)
    tother.load_state_dict(tsd)
    assert other._scale_fn_custom.k == 0.5 and ("_scale_fn_custom" in esd) == ("_scale_fn_custom" in tsd)


def _warnings_of(lib: Any, case: str, epoch_step: bool) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        opt, sched = build(lib, case)
        stepper = CASES[case][2]
        for i in range(3):
            if stepper is not None:
                stepper(sched, i)
            else:
                sched.step()  # before any optimizer.step()
        if not case.startswith(("plateau", "chained", "sequential")):
            sched.get_lr()  # outside step()
        if epoch_step:
            sched.step(1.0, 5) if stepper is not None else sched.step(5)
    return [str(w.message).split(".")[0] for w in caught]


@pytest.mark.parametrize("case", ["plateau-min", "onecycle-cos-sgd", "warm-restarts", "cyclic-triangular",
                                  "polynomial", "chained", "sequential", "sequential-three"])
def test_warnings_match_torch(torch, case):
    epoch_step = not case.startswith(("chained", "sequential", "onecycle"))
    assert _warnings_of(engine, case, epoch_step) == _warnings_of(torch, case, epoch_step)


def _plain_optimizer(lib: Any) -> Any:
    class Plain(lib.optim.Optimizer):
        def __init__(self, params, lr=0.1):
            super().__init__(params, {"lr": lr})

        def step(self, closure=None):
            return None

    return Plain([lib.zeros(1, requires_grad=True)])


def _sgd(lib: Any) -> Any:
    return make_opt(lib)


def _seq(lib: Any, mk: Callable[[Any, Any], list[Any]], milestones: list[int], opt: Any = None) -> Any:
    o = _sgd(lib)
    L = lib.optim.lr_scheduler
    return L.SequentialLR(o if opt is None else opt(lib), mk(L, o), milestones)


def _chain(lib: Any, mk: Callable[[Any, Any], list[Any]], opt: Any = None) -> Any:
    o = _sgd(lib)
    L = lib.optim.lr_scheduler
    return L.ChainedScheduler(mk(L, o), optimizer=None if opt is None else opt(lib))


ERRORS: dict[str, Callable[[Any], Any]] = {
    "plateau factor": lambda lib: lib.optim.lr_scheduler.ReduceLROnPlateau(_sgd(lib), factor=1.0),
    "plateau factor before type": lambda lib: lib.optim.lr_scheduler.ReduceLROnPlateau(object(), factor=2.0),
    "plateau not an optimizer": lambda lib: lib.optim.lr_scheduler.ReduceLROnPlateau(object()),
    "plateau min_lr length": lambda lib: lib.optim.lr_scheduler.ReduceLROnPlateau(_sgd(lib), min_lr=[0.1]),
    "plateau mode": lambda lib: lib.optim.lr_scheduler.ReduceLROnPlateau(_sgd(lib), mode="median"),
    "plateau threshold mode": lambda lib: lib.optim.lr_scheduler.ReduceLROnPlateau(_sgd(lib), threshold_mode="x"),
    "plateau mode before threshold mode": lambda lib: lib.optim.lr_scheduler.ReduceLROnPlateau(
        _sgd(lib), mode="x", threshold_mode="y"),
    "onecycle not an optimizer": lambda lib: lib.optim.lr_scheduler.OneCycleLR(object(), 1.0, total_steps=5),
    "onecycle no steps": lambda lib: lib.optim.lr_scheduler.OneCycleLR(_sgd(lib), 1.0),
    "onecycle only epochs": lambda lib: lib.optim.lr_scheduler.OneCycleLR(_sgd(lib), 1.0, epochs=3),
    "onecycle zero total": lambda lib: lib.optim.lr_scheduler.OneCycleLR(_sgd(lib), 1.0, total_steps=0),
    "onecycle float total": lambda lib: lib.optim.lr_scheduler.OneCycleLR(_sgd(lib), 1.0, total_steps=2.5),
    "onecycle epochs": lambda lib: lib.optim.lr_scheduler.OneCycleLR(_sgd(lib), 1.0, epochs=0, steps_per_epoch=3),
    "onecycle float epochs": lambda lib: lib.optim.lr_scheduler.OneCycleLR(_sgd(lib), 1.0, epochs=2.0,
                                                                           steps_per_epoch=3),
    "onecycle steps_per_epoch": lambda lib: lib.optim.lr_scheduler.OneCycleLR(_sgd(lib), 1.0, epochs=2,
                                                                              steps_per_epoch=-1),
    "onecycle pct_start": lambda lib: lib.optim.lr_scheduler.OneCycleLR(_sgd(lib), 1.0, total_steps=9,
                                                                        pct_start=1.5),
    "onecycle int pct_start": lambda lib: lib.optim.lr_scheduler.OneCycleLR(_sgd(lib), 1.0, total_steps=9,
                                                                            pct_start=1),
    "onecycle anneal": lambda lib: lib.optim.lr_scheduler.OneCycleLR(_sgd(lib), 1.0, total_steps=9,
                                                                     anneal_strategy="exp"),
    "onecycle max_lr length": lambda lib: lib.optim.lr_scheduler.OneCycleLR(_sgd(lib), [1.0], total_steps=9),
    "onecycle momentum length": lambda lib: lib.optim.lr_scheduler.OneCycleLR(_sgd(lib), 1.0, total_steps=9,
                                                                              base_momentum=[0.8, 0.8, 0.8]),
    "onecycle no momentum": lambda lib: lib.optim.lr_scheduler.OneCycleLR(_plain_optimizer(lib), 1.0,
                                                                          total_steps=9),
    "onecycle momentum order": lambda lib: lib.optim.lr_scheduler.OneCycleLR(
        _sgd(lib), 1.0, total_steps=9, base_momentum=[0.8], max_momentum=[0.9]),
    "cyclic momentum order": lambda lib: lib.optim.lr_scheduler.CyclicLR(
        _sgd(lib), 0.01, 0.1, base_momentum=[0.8], max_momentum=[0.9]),
    "onecycle validation order": lambda lib: lib.optim.lr_scheduler.OneCycleLR(
        _sgd(lib), [1.0], total_steps=5, pct_start=1.5, anneal_strategy="x"),
    "warm T_0": lambda lib: lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(_sgd(lib), T_0=0),
    "warm float T_0": lambda lib: lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(_sgd(lib), T_0=2.0),
    "warm T_mult": lambda lib: lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(_sgd(lib), T_0=2, T_mult=0),
    "warm float T_mult": lambda lib: lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(_sgd(lib), 2, T_mult=1.5),
    "warm eta_min": lambda lib: lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(_sgd(lib), 2, eta_min="0"),
    "warm negative epoch": lambda lib: lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(_sgd(lib), 2).step(-1),
    "warm not an optimizer": lambda lib: lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(object(), 2),
    "cyclic not an optimizer": lambda lib: lib.optim.lr_scheduler.CyclicLR(object(), 0.01, 0.1),
    "cyclic no momentum": lambda lib: lib.optim.lr_scheduler.CyclicLR(_plain_optimizer(lib), 0.01, 0.1),
    "cyclic mode": lambda lib: lib.optim.lr_scheduler.CyclicLR(_sgd(lib), 0.01, 0.1, mode="sawtooth"),
    "cyclic base_lr length": lambda lib: lib.optim.lr_scheduler.CyclicLR(_sgd(lib), [0.01], 0.1),
    "cyclic max_lr length": lambda lib: lib.optim.lr_scheduler.CyclicLR(_sgd(lib), 0.01, (0.1, 0.2, 0.3)),
    "cyclic max_momentum length": lambda lib: lib.optim.lr_scheduler.CyclicLR(_sgd(lib), 0.01, 0.1,
                                                                              max_momentum=[0.9]),
    "polynomial not an optimizer": lambda lib: lib.optim.lr_scheduler.PolynomialLR(object()),
    "chained empty": lambda lib: lib.optim.lr_scheduler.ChainedScheduler([]),
    "chained not a scheduler": lambda lib: _chain(lib, lambda L, o: [L.ConstantLR(o), 5]),
    "chained plateau": lambda lib: _chain(lib, lambda L, o: [L.ConstantLR(o), L.ReduceLROnPlateau(o)]),
    "chained other optimizer": lambda lib: _chain(lib, lambda L, o: [L.ConstantLR(o),
                                                                     L.ExponentialLR(_sgd(lib), 0.9)]),
    "chained explicit other optimizer": lambda lib: _chain(lib, lambda L, o: [L.ConstantLR(o)], opt=_sgd),
    "sequential empty": lambda lib: lib.optim.lr_scheduler.SequentialLR(_sgd(lib), [], []),
    "sequential milestones": lambda lib: _seq(lib, lambda L, o: [L.ConstantLR(o), L.ExponentialLR(o, 0.9)], [3, 5]),
    "sequential one scheduler": lambda lib: _seq(lib, lambda L, o: [L.ConstantLR(o)], [3]),
    "sequential not a scheduler": lambda lib: _seq(lib, lambda L, o: [L.ConstantLR(o), "x"], [3]),
    "sequential plateau": lambda lib: _seq(lib, lambda L, o: [L.ConstantLR(o), L.ReduceLROnPlateau(o)], [3]),
    "sequential other optimizer": lambda lib: _seq(lib, lambda L, o: [L.ConstantLR(o), L.ExponentialLR(o, 0.9)],
                                                   [3], opt=_sgd),
    "sequential chained after a milestone": lambda lib: [_seq(lib, lambda L, o: [
        L.ConstantLR(o), L.ChainedScheduler([L.ExponentialLR(o, 0.9)])], [1]).step() for _ in range(2)],
    "sequential checks before milestones": lambda lib: _seq(lib, lambda L, o: [L.ConstantLR(o), 1], [3, 4]),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_errors_raise(case):
    assert error_of(lambda: ERRORS[case](engine)) is not None


@pytest.mark.parametrize("case", list(ERRORS))
def test_errors_match_torch(torch, case):
    want = error_of(lambda: ERRORS[case](torch))
    assert want is not None, "the torch case does not raise: the test is wrong"
    assert error_of(lambda: ERRORS[case](engine)) == want


# --- without torch: sequences computed by hand from the documented formulas -------------------


def _one_group(lr: float = 0.1, **kw: Any) -> Any:
    return engine.optim.SGD([engine.zeros(1, requires_grad=True)], lr=lr, momentum=0.9, **kw)


def test_onecycle_hand_computed():
    opt = _one_group()
    sched = engine.optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=10)
    lrs, moms = [opt.param_groups[0]["lr"]], [opt.param_groups[0]["momentum"]]
    for _ in range(9):
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr()[0])
        moms.append(opt.param_groups[0]["momentum"])
    initial, low = 1.0 / 25, 1.0 / 25 / 1e4

    def cos(start, end, pct):
        return end + (start - end) * (1 + math.cos(math.pi * pct)) / 2

    want = [cos(initial, 1.0, k / 2) for k in range(3)] + [cos(1.0, low, (k - 2) / 7) for k in range(3, 10)]
    assert lrs == pytest.approx(want, rel=1e-12)
    assert lrs[0] == pytest.approx(0.04) and lrs[2] == 1.0 and lrs[-1] == pytest.approx(4e-6)
    assert moms[0] == pytest.approx(0.95) and moms[2] == pytest.approx(0.85) and moms[-1] == pytest.approx(0.95)
    opt.step()
    sched.step()  # step 10 == total_steps is still allowed
    with pytest.raises(ValueError, match="Tried to step 11 times"):
        sched.step()


def test_onecycle_sets_adam_beta1():
    opt = engine.optim.Adam([engine.zeros(1, requires_grad=True)], lr=0.1, betas=(0.5, 0.99))
    sched = engine.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.2, total_steps=4, pct_start=0.5, anneal_strategy="linear")
    seen = [opt.param_groups[0]["betas"]]
    for _ in range(3):
        opt.step()
        sched.step()
        seen.append(opt.param_groups[0]["betas"])
    assert [b[0] for b in seen] == pytest.approx([0.95, 0.85, 0.9, 0.95])
    assert all(b[1] == 0.99 for b in seen)


def test_plateau_hand_computed():
    opt = _one_group()
    sched = engine.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=1)
    lrs = []
    for m in [1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.5]:
        sched.step(m)
        lrs.append(sched.get_last_lr()[0])
    assert lrs == [0.1, 0.1, 0.05, 0.05, 0.05, 0.025, 0.025]
    assert sched.best == 0.5 and sched.num_bad_epochs == 1 and sched.last_epoch == 7


def test_plateau_cooldown_min_lr_and_state_round_trip():
    opt = _one_group()
    sched = engine.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="max", factor=0.1, patience=0, cooldown=1,
                                                        min_lr=0.002)
    lrs = []
    for _ in range(6):
        sched.step(0.0)  # never improves after the first
        lrs.append(sched.get_last_lr()[0])
    assert lrs == pytest.approx([0.1, 0.01, 0.01, 0.002, 0.002, 0.002])
    fresh = engine.optim.lr_scheduler.ReduceLROnPlateau(_one_group())
    fresh.load_state_dict(sched.state_dict())
    assert (fresh.mode, fresh.mode_worse, fresh.best, fresh.min_lrs) == ("max", -math.inf, 0.0, [0.002])


def test_cyclic_and_warm_restarts_and_polynomial_hand_computed():
    L = engine.optim.lr_scheduler
    opt = _one_group()
    cyc = L.CyclicLR(opt, base_lr=0.01, max_lr=0.1, step_size_up=2, mode="triangular2")
    seen = [cyc.get_last_lr()[0]]
    for _ in range(8):
        opt.step()
        cyc.step()
        seen.append(cyc.get_last_lr()[0])
    assert seen == pytest.approx([0.01, 0.055, 0.1, 0.055, 0.01, 0.0325, 0.055, 0.0325, 0.01])

    opt = _one_group()
    warm = L.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=2)
    seen = [warm.get_last_lr()[0]]
    for _ in range(7):
        opt.step()
        warm.step()
        seen.append(warm.get_last_lr()[0])
    assert seen == pytest.approx([0.1, 0.05, 0.1, 0.1 * (1 + math.cos(math.pi / 4)) / 2, 0.05,
                                  0.1 * (1 + math.cos(3 * math.pi / 4)) / 2, 0.1, 0.1 * (1 + math.cos(math.pi / 8)) / 2])

    opt = _one_group()
    poly = L.PolynomialLR(opt, total_iters=4)
    seen = [poly.get_last_lr()[0]]
    for _ in range(6):
        opt.step()
        poly.step()
        seen.append(poly.get_last_lr()[0])
    assert seen == pytest.approx([0.1, 0.075, 0.05, 0.025, 0.0, 0.0, 0.0], abs=1e-15)


def test_sequential_and_chained_hand_computed():
    L = engine.optim.lr_scheduler
    opt = _one_group(lr=1.0)
    seq = L.SequentialLR(opt, [L.ConstantLR(opt, factor=0.5, total_iters=10), L.ExponentialLR(opt, gamma=0.5)],
                         milestones=[2])
    seen = [seq.get_last_lr()[0]]
    for _ in range(4):
        opt.step()
        seq.step()
        seen.append(seq.get_last_lr()[0])
    assert seen == [0.5, 0.5, 1.0, 0.5, 0.25]

    opt = _one_group(lr=1.0)
    chain = L.ChainedScheduler([L.ConstantLR(opt, factor=0.5, total_iters=2), L.ExponentialLR(opt, gamma=0.5)])
    seen = [chain.get_last_lr()[0]]
    for _ in range(3):
        opt.step()
        chain.step()
        seen.append(chain.get_last_lr()[0])
    assert seen == [0.5, 0.25, 0.25, 0.125]
    assert [s["last_epoch"] for s in chain.state_dict()["_schedulers"]] == [3, 3]
    assert isinstance(chain, L.LRScheduler) and isinstance(L.ReduceLROnPlateau(opt), L.LRScheduler)
