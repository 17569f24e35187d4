"""Optimizer trajectories against torch: same initial parameters, same gradient function,
30 steps, float32 (and float64), every option of SGD, Adam, AdamW and RMSprop.

Gradients are computed by one NumPy function from each side's current parameters, so the only
difference left is the update itself. SGD is bit-exact where torch's kernels fuse multiply-adds
(x86 with AVX2/AVX512); Adam and RMSprop differ by torch's vectorised sqrt (an ulp here and
there): the relative error stays below 1e-6 after 30 steps."""

from __future__ import annotations

import numpy as np
import pytest

import engine
import engine.optim as eoptim
from tests.engine._parity import rel_err

RNG = np.random.default_rng(0)
A = (RNG.standard_normal((40, 6)) / 4).astype(np.float32)
B = RNG.standard_normal(40).astype(np.float32)
P0 = [RNG.standard_normal(6).astype(np.float32), RNG.standard_normal((3, 4)).astype(np.float32)]

CONFIGS = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.1, "momentum": 0.9}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01}),
    ("SGD", {"lr": 0.05, "momentum": 0.5, "dampening": 0.3, "maximize": True}),
    ("SGD", {"lr": 0.05, "weight_decay": 0.2}),
    ("Adam", {"lr": 0.05}),
    ("Adam", {"lr": 0.05, "amsgrad": True, "weight_decay": 0.1}),
    ("Adam", {"lr": 0.05, "maximize": True, "betas": (0.8, 0.99), "eps": 1e-6}),
    ("Adam", {"lr": 0.05, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("AdamW", {"lr": 0.05}),
    ("AdamW", {"lr": 0.05, "amsgrad": True, "weight_decay": 0.3}),
    ("RMSprop", {"lr": 0.01}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.9, "centered": True, "weight_decay": 0.1}),
    ("RMSprop", {"lr": 0.01, "centered": True, "alpha": 0.9}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.5, "maximize": True, "eps": 1e-4}),
]


def grads(params: list[np.ndarray]) -> list[np.ndarray]:
    """d/dp of 0.5*|A w - b|^2 + sum(0.35 m^2 - 0.3 m): a least-squares part and a separable one."""
    w, m = params
    dtype = w.dtype
    return [(A.astype(dtype).T @ (A.astype(dtype) @ w - B.astype(dtype))).astype(dtype),
            (m * dtype.type(0.7) - dtype.type(0.3)).astype(dtype)]


def run_pair(torch, name: str, kwargs: dict, steps: int = 30, dtype=np.float32):
    tparams = [torch.tensor(p.astype(dtype), requires_grad=True) for p in P0]
    eparams = [engine.tensor(p.astype(dtype), requires_grad=True) for p in P0]
    topt, eopt = getattr(torch.optim, name)(tparams, **kwargs), getattr(eoptim, name)(eparams, **kwargs)
    worst = 0.0
    for _ in range(steps):
        for t, g in zip(tparams, grads([t.detach().numpy() for t in tparams])):
            t.grad = torch.from_numpy(g)
        for e, g in zip(eparams, grads([e.detach().numpy() for e in eparams])):
            e.grad = engine.from_numpy(g)
        topt.step()
        eopt.step()
        worst = max(worst, *(rel_err(e.detach().numpy(), t.detach().numpy()) for e, t in zip(eparams, tparams)))
    return topt, eopt, tparams, eparams, worst


@pytest.mark.parametrize(("name", "kwargs"), CONFIGS, ids=[f"{n}-{k}" for n, k in CONFIGS])
def test_trajectory_matches_torch(torch, name, kwargs):
    topt, eopt, tparams, eparams, worst = run_pair(torch, name, kwargs)
    assert worst < 1e-6
    # the state (moments, buffers, step counts) matches too, key for key
    for tp, ep in zip(tparams, eparams):
        tstate, estate = topt.state[tp], eopt.state[ep]
        assert list(estate) == list(tstate)
        for key in tstate:
            assert estate[key].dtype.name == str(tstate[key].dtype).split(".")[-1]
            np.testing.assert_allclose(estate[key].numpy(), tstate[key].numpy(), rtol=2e-5, atol=1e-7)


@pytest.mark.parametrize(("name", "kwargs"), CONFIGS[::3], ids=[f"{n}-{k}" for n, k in CONFIGS[::3]])
def test_trajectory_matches_torch_float64(torch, name, kwargs):
    *_, worst = run_pair(torch, name, kwargs, dtype=np.float64)
    assert worst < 1e-13


@pytest.mark.parametrize(("name", "kwargs"), CONFIGS[:5], ids=[f"{n}-{k}" for n, k in CONFIGS[:5]])
def test_sgd_is_bit_exact_where_torch_fuses_multiply_adds(torch, name, kwargs):
    if torch.backends.cpu.get_cpu_capability() not in ("AVX2", "AVX512"):
        pytest.skip("torch's kernels here may not use fused multiply-adds")
    *_, tparams, eparams, _ = run_pair(torch, name, kwargs)
    for t, e in zip(tparams, eparams):
        assert np.array_equal(e.detach().numpy(), t.detach().numpy())


def test_the_updates_are_not_trivially_equal(torch):
    """Guards the parity tests: the parameters actually move, and differently per optimizer."""
    *_, tsgd, esgd, _ = run_pair(torch, "SGD", {"lr": 0.1})
    *_, tadam, eadam, _ = run_pair(torch, "Adam", {"lr": 0.05})
    assert rel_err(esgd[0].detach().numpy(), P0[0]) > 0.05
    assert rel_err(esgd[0].detach().numpy(), eadam[0].detach().numpy()) > 0.01


def test_param_groups_with_own_options_and_params_without_grad(torch):
    def make(lib):
        ps = [lib.tensor(p.copy(), requires_grad=True) for p in P0] + [lib.ones(2, requires_grad=True)]
        opt = lib.optim.SGD([{"params": ps[:1], "lr": 0.3, "momentum": 0.5}, {"params": ps[1:]}], lr=0.05)
        for step in range(5):
            ps[0].grad = lib.from_numpy(grads([ps[0].detach().numpy(), P0[1]])[0])
            ps[1].grad = None if step % 2 else lib.from_numpy(P0[1] * np.float32(step))
            opt.step()
        return opt, ps

    (topt, tps), (eopt, eps) = make(torch), make(engine)
    for t, e in zip(tps, eps):
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-6, atol=1e-7)
    assert eps[2].detach().numpy().tolist() == [1.0, 1.0]  # never had a gradient: untouched
    assert len(eopt.state) == len(topt.state) == 1  # momentum state only for group 0's param


def test_end_to_end_regression_with_autograd(torch):
    """A linear model trained through each side's own autograd (grads differ by BLAS rounding)."""
    x = RNG.standard_normal((32, 5)).astype(np.float32)
    y = (x @ RNG.standard_normal(5).astype(np.float32) + 0.5).astype(np.float32)

    def train(lib, opt_name, **kw):
        w, b = lib.zeros(5, requires_grad=True), lib.zeros(1, requires_grad=True)
        opt = getattr(lib.optim, opt_name)([w, b], **kw)
        xt, yt = lib.from_numpy(x), lib.from_numpy(y)
        for _ in range(20):
            opt.zero_grad()
            loss = ((xt @ w + b - yt) ** 2).mean()
            loss.backward()
            opt.step()
        return w.detach().numpy(), loss.item()

    for name, kw in (("SGD", {"lr": 0.05, "momentum": 0.9}), ("Adam", {"lr": 0.1})):
        (we, le), (wt, lt) = train(engine, name, **kw), train(torch, name, **kw)
        assert rel_err(we, wt) < 1e-5 and abs(le - lt) <= 1e-5 * abs(lt)


def test_closure_is_evaluated_with_grad_enabled_and_its_loss_returned():
    w = engine.tensor([1.0, -2.0], requires_grad=True)
    seen = []

    def closure():
        seen.append(engine.is_grad_enabled())
        w.grad = None
        loss = (w * w).sum()
        loss.backward()
        return loss

    for cls in (eoptim.SGD, eoptim.Adam, eoptim.AdamW, eoptim.RMSprop):
        with engine.no_grad():
            loss = cls([w], lr=0.1).step(closure)
        assert isinstance(loss, engine.Tensor) and seen[-1] is True


def test_step_runs_without_recording_and_bumps_versions():
    w = engine.tensor([1.0, 2.0], requires_grad=True)
    w.grad = engine.tensor([0.5, 0.5])
    before = w._version
    eoptim.Adam([w], lr=0.1).step()
    assert w.grad_fn is None and w.is_leaf and w._version == before + 1
    assert engine.is_grad_enabled()  # restored after the step


def test_state_dict_round_trip_through_save_load_continues_the_trajectory(torch, tmp_path):
    """Save after 10 steps, load into a fresh optimizer over copies of the params, continue:
    both runs end at the same numbers (bit for bit) as one uninterrupted run."""
    for name, kwargs in (("SGD", {"lr": 0.1, "momentum": 0.9}), ("Adam", {"lr": 0.05, "amsgrad": True}),
                         ("AdamW", {"lr": 0.05}), ("RMSprop", {"lr": 0.01, "momentum": 0.5, "centered": True})):
        params = [engine.tensor(p.copy(), requires_grad=True) for p in P0]
        opt = getattr(eoptim, name)(params, **kwargs)

        def run(opt, params, steps):
            for _ in range(steps):
                for p, g in zip(params, grads([p.detach().numpy() for p in params])):
                    p.grad = engine.from_numpy(g)
                opt.step()

        run(opt, params, 10)
        engine.save({"opt": opt.state_dict(), "params": [p.detach() for p in params]}, tmp_path / "ckpt.pt")
        run(opt, params, 10)

        ckpt = engine.load(tmp_path / "ckpt.pt")
        resumed = [engine.tensor(p.numpy(), requires_grad=True) for p in ckpt["params"]]
        opt2 = getattr(eoptim, name)(resumed, lr=123.0)
        opt2.load_state_dict(ckpt["opt"])
        assert opt2.param_groups[0]["lr"] == kwargs["lr"]
        run(opt2, resumed, 10)
        for a, b in zip(params, resumed):
            assert np.array_equal(a.detach().numpy(), b.detach().numpy())


@pytest.mark.parametrize(("name", "kwargs"), CONFIGS, ids=[f"{n}-{k}" for n, k in CONFIGS])
def test_scalar_and_empty_parameters(torch, name, kwargs):
    def run(lib):
        ps = [lib.tensor(1.5, requires_grad=True), lib.zeros(0, requires_grad=True),
              lib.tensor([[0.5, -2.0]], dtype=lib.float64, requires_grad=True)]
        opt = getattr(lib.optim, name)(ps, **kwargs)
        for step in range(3):
            for p in ps:
                p.grad = p.detach() * 0.5 + step
            opt.step()
        return [p.detach().numpy().copy() for p in ps]

    for e, t in zip(run(engine), run(torch)):
        assert e.shape == t.shape and e.dtype == t.dtype
        np.testing.assert_allclose(e, t, rtol=1e-6)
