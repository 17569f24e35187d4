"""Adadelta, Adagrad, Adamax, NAdam, RAdam, Rprop and ASGD against torch: 30-step trajectories (float32 and
float64), the state key for key (``step``/``mu_product`` types included), ``param_groups``
defaults, torch's argument errors, and the ``state_dict`` round trip."""

from __future__ import annotations

import numpy as np
import pytest

import engine
import engine.optim as eoptim
from tests.engine._parity import assert_same_error, rel_err

from .test_optim_parity import P0, grads, run_pair

CONFIGS = [
    ("Adadelta", {}),
    ("Adadelta", {"lr": 0.5, "rho": 0.8, "eps": 1e-4, "weight_decay": 0.1}),
    ("Adadelta", {"lr": 2.0, "maximize": True, "foreach": False}),
    ("Adagrad", {}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.05, "weight_decay": 0.1, "initial_accumulator_value": 0.3}),
    ("Adagrad", {"lr": 0.05, "eps": 1e-4, "maximize": True}),
    ("Adamax", {}),
    ("Adamax", {"lr": 0.05, "betas": (0.8, 0.95), "weight_decay": 0.2}),
    ("Adamax", {"lr": 0.02, "eps": 1e-3, "maximize": True}),
    ("NAdam", {}),
    ("NAdam", {"lr": 0.05, "momentum_decay": 0.01, "weight_decay": 0.1}),
    ("NAdam", {"lr": 0.05, "weight_decay": 0.1, "decoupled_weight_decay": True, "maximize": True}),
    ("NAdam", {"lr": 0.02, "betas": (0.7, 0.9), "eps": 1e-5}),
    ("RAdam", {}),
    ("RAdam", {"lr": 0.05, "weight_decay": 0.1}),
    ("RAdam", {"lr": 0.05, "weight_decay": 0.1, "decoupled_weight_decay": True, "maximize": True}),
    # beta2 = 0.9: rho_t passes 5 at step 6, so both branches of the update run within 30 steps
    ("RAdam", {"lr": 0.05, "betas": (0.8, 0.9), "eps": 1e-5}),
    ("Rprop", {}),
    ("Rprop", {"lr": 0.05, "etas": (0.3, 1.5), "step_sizes": (1e-3, 0.2), "maximize": True}),
    ("ASGD", {}),
    # t0 = 5: the average switches from copying p to the running mean within the 30 steps
    ("ASGD", {"lr": 0.05, "lambd": 0.01, "alpha": 0.5, "t0": 5, "weight_decay": 0.1}),
    ("ASGD", {"lr": 0.02, "t0": 0, "maximize": True}),
]
IDS = [f"{n}-{k}" for n, k in CONFIGS]
NAMES = ["Adadelta", "Adagrad", "Adamax", "NAdam", "RAdam", "Rprop", "ASGD"]


@pytest.mark.parametrize(("name", "kwargs"), CONFIGS, ids=IDS)
def test_trajectory_and_state_match_torch(torch, name, kwargs):
    topt, eopt, tparams, eparams, worst = run_pair(torch, name, kwargs)
    assert worst < 2e-6
    for tp, ep in zip(tparams, eparams):
        tstate, estate = topt.state[tp], eopt.state[ep]
        assert list(estate) == list(tstate)
        for key in tstate:
            assert isinstance(estate[key], engine.Tensor)
            assert estate[key].dtype.name == str(tstate[key].dtype).split(".")[-1]
            assert estate[key].shape == tuple(tstate[key].shape)
            np.testing.assert_allclose(estate[key].numpy(), tstate[key].numpy(), rtol=2e-5, atol=1e-7)


@pytest.mark.parametrize(("name", "kwargs"), CONFIGS[::2], ids=IDS[::2])
def test_trajectory_matches_torch_float64(torch, name, kwargs):
    *_, worst = run_pair(torch, name, kwargs, dtype=np.float64)
    assert worst < 1e-13


@pytest.mark.parametrize("name", NAMES)
def test_the_parameters_move(torch, name):
    """Guards the parity tests: 30 steps change the parameters noticeably."""
    *_, eparams, _ = run_pair(torch, name, {"lr": 0.05} if name != "Adadelta" else {})
    assert rel_err(eparams[0].detach().numpy(), P0[0]) > 1e-3


@pytest.mark.parametrize("name", NAMES)
def test_param_groups_and_state_dict_layout_match_torch(torch, name):
    def make(lib):
        ps = [lib.tensor(p.copy(), requires_grad=True) for p in P0]
        opt = getattr(lib.optim, name)([{"params": ps[:1]}, {"params": ps[1:], "lr": 0.5}])
        for p in ps[:1]:
            p.grad = lib.ones_like(p)
        opt.step()
        return opt.state_dict()

    esd, tsd = make(engine), make(torch)
    assert esd["param_groups"] == tsd["param_groups"]
    assert list(esd["state"]) == list(tsd["state"])
    for k in tsd["state"]:
        assert list(esd["state"][k]) == list(tsd["state"][k])
        for key, tval in tsd["state"][k].items():
            np.testing.assert_allclose(esd["state"][k][key].numpy(), tval.numpy(), rtol=1e-6)


def test_adagrad_state_exists_from_construction(torch):
    for lib in (engine, torch):
        p = lib.zeros(3, requires_grad=True)
        opt = lib.optim.Adagrad([p], initial_accumulator_value=0.5)
        assert opt.state[p]["sum"].tolist() == [0.5, 0.5, 0.5] and opt.state[p]["step"].item() == 0.0


@pytest.mark.parametrize("name", NAMES)
def test_step_dtype_follows_the_default_dtype(torch, name):
    for lib in (engine, torch):
        prev = lib.get_default_dtype()
        lib.set_default_dtype(lib.float64)
        try:
            p = lib.zeros(2, requires_grad=True)
            p.grad = lib.ones(2)
            opt = getattr(lib.optim, name)([p])
            opt.step()
            assert opt.state[p]["step"].dtype == lib.float64
        finally:
            lib.set_default_dtype(prev)


ERROR_CASES = [
    ("Adadelta", {"lr": -1.0}), ("Adadelta", {"rho": 1.5}), ("Adadelta", {"eps": -1e-3}),
    ("Adadelta", {"weight_decay": -0.1}),
    ("Adagrad", {"lr": -0.1}), ("Adagrad", {"lr_decay": -0.1}), ("Adagrad", {"weight_decay": -1}),
    ("Adagrad", {"initial_accumulator_value": -1.0}), ("Adagrad", {"eps": -1.0}),
    ("Adagrad", {"fused": True, "foreach": True}),
    ("Adamax", {"lr": -1.0}), ("Adamax", {"eps": -1.0}), ("Adamax", {"betas": (1.0, 0.9)}),
    ("Adamax", {"betas": (0.9, -0.1)}), ("Adamax", {"weight_decay": -1.0}),
    ("NAdam", {"lr": -1.0}), ("NAdam", {"betas": (0.9, 1.0)}), ("NAdam", {"momentum_decay": -1.0}),
    ("NAdam", {"eps": -1.0}), ("NAdam", {"weight_decay": -1.0}),
    ("RAdam", {"lr": -1.0}), ("RAdam", {"betas": (-0.5, 0.9)}), ("RAdam", {"eps": -1.0}),
    ("RAdam", {"weight_decay": -1.0}),
    ("Rprop", {"lr": -1.0}), ("Rprop", {"etas": (1.0, 1.2)}), ("Rprop", {"etas": (0.5, 0.9)}),
    ("ASGD", {"lr": -1.0}), ("ASGD", {"weight_decay": -1.0}),
]


@pytest.mark.parametrize(("name", "kwargs"), ERROR_CASES, ids=[f"{n}-{k}" for n, k in ERROR_CASES])
def test_argument_errors_match_torch(torch, name, kwargs):
    assert_same_error(lambda: getattr(eoptim, name)([engine.zeros(2, requires_grad=True)], **kwargs),
                      lambda: getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)], **kwargs))


@pytest.mark.parametrize("name", NAMES)
def test_tensor_lr_must_have_one_element(torch, name):
    assert_same_error(lambda: getattr(eoptim, name)([engine.zeros(2, requires_grad=True)], lr=engine.ones(2)),
                      lambda: getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)], lr=torch.ones(2)))


@pytest.mark.parametrize("name", ["Adadelta", "Adamax", "NAdam", "RAdam", "Rprop", "ASGD"])
def test_capturable_and_differentiable_are_refused(name):
    p = [engine.zeros(2, requires_grad=True)]
    with pytest.raises(NotImplementedError, match="capturable=True"):
        getattr(eoptim, name)(p, capturable=True)
    with pytest.raises(NotImplementedError, match="differentiable=True"):
        getattr(eoptim, name)(p, differentiable=True)


@pytest.mark.parametrize(("name", "kwargs"), CONFIGS[1::2], ids=IDS[1::2])
def test_load_state_dict_round_trip_continues_identically(name, kwargs):
    """Step 10 times, copy everything into a fresh optimizer via state_dict/load_state_dict,
    step both 10 more times: same numbers bit for bit, state included."""
    def run(opt, params, steps):
        for _ in range(steps):
            for p, g in zip(params, grads([p.detach().numpy() for p in params])):
                p.grad = engine.from_numpy(g)
            opt.step()

    params = [engine.tensor(p.copy(), requires_grad=True) for p in P0]
    opt = getattr(eoptim, name)(params, **kwargs)
    run(opt, params, 10)
    sd = opt.state_dict()
    copies = [engine.tensor(p.detach().numpy().copy(), requires_grad=True) for p in params]
    opt2 = getattr(eoptim, name)(copies, lr=123.0)
    opt2.load_state_dict({"state": {k: {n: t.clone() for n, t in v.items()} for k, v in sd["state"].items()},
                          "param_groups": sd["param_groups"]})
    assert opt2.param_groups[0]["lr"] == opt.param_groups[0]["lr"]
    run(opt, params, 10)
    run(opt2, copies, 10)
    for a, b in zip(params, copies):
        assert np.array_equal(a.detach().numpy(), b.detach().numpy())
    for k, v in opt.state_dict()["state"].items():
        for n, t in v.items():
            assert np.array_equal(t.numpy(), opt2.state_dict()["state"][k][n].numpy())


@pytest.mark.parametrize("name", NAMES)
def test_engine_state_dict_loads_into_torch_and_continues(torch, name):
    """The layouts are interchangeable: an engine state_dict (as arrays) loads into torch and
    both continue to the same numbers."""
    params = [engine.tensor(p.copy(), requires_grad=True) for p in P0]
    eopt = getattr(eoptim, name)(params, lr=0.05)
    for _ in range(5):
        for p, g in zip(params, grads([p.detach().numpy() for p in params])):
            p.grad = engine.from_numpy(g)
        eopt.step()
    sd = eopt.state_dict()
    tparams = [torch.tensor(p.detach().numpy().copy(), requires_grad=True) for p in params]
    topt = getattr(torch.optim, name)(tparams, lr=1.0)
    topt.load_state_dict({"state": {k: {n: torch.from_numpy(t.numpy().copy()) for n, t in v.items()}
                                    for k, v in sd["state"].items()},
                          "param_groups": sd["param_groups"]})
    for _ in range(5):
        for side in (params, tparams):
            for p, g in zip(side, grads([p.detach().numpy() for p in side])):
                p.grad = type(p)(g) if side is params else torch.from_numpy(g)
        eopt.step()
        topt.step()
    for e, t in zip(params, tparams):
        assert rel_err(e.detach().numpy(), t.detach().numpy()) < 1e-6


def test_old_state_dicts_with_number_steps_are_converted():
    p = engine.zeros(2, requires_grad=True)
    opt = eoptim.NAdam([p])
    p.grad = engine.ones(2)
    opt.step()
    sd = opt.state_dict()
    sd["state"][0]["step"] = 1
    sd["state"][0]["mu_product"] = float(sd["state"][0]["mu_product"].item())
    opt2 = eoptim.NAdam([engine.zeros(2, requires_grad=True)])
    opt2.load_state_dict(sd)
    state = next(iter(opt2.state.values()))
    assert isinstance(state["step"], engine.Tensor) and state["step"].item() == 1.0
    assert isinstance(state["mu_product"], engine.Tensor) and state["mu_product"].dtype == engine.float32


def test_old_asgd_state_dicts_with_number_eta_and_mu_are_converted():
    p = engine.zeros(2, requires_grad=True)
    opt = eoptim.ASGD([p])
    p.grad = engine.ones(2)
    opt.step()
    sd = opt.state_dict()
    sd["state"][0].update(step=1, eta=0.005, mu=1.0)
    opt2 = eoptim.ASGD([engine.zeros(2, requires_grad=True)])
    opt2.load_state_dict(sd)
    state = next(iter(opt2.state.values()))
    for key, value in (("step", 1.0), ("eta", np.float32(0.005)), ("mu", 1.0)):
        assert isinstance(state[key], engine.Tensor) and state[key].dtype == engine.float32
        assert state[key].item() == value
