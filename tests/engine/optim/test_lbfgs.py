"""optim.LBFGS against torch.optim.LBFGS: same parameters after the same steps, same closure
evaluation counts, same state (keys, kinds, values), state_dict round trip, torch's errors."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import engine

torch = pytest.importorskip("torch")  # the oracle: these tests compare with it

LINE_SEARCHES = [None, "strong_wolfe"]


def _rosenbrock(lib, x):
    return (100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum()


def _run(lib, start: list[np.ndarray], loss_fn, steps: int, **opt_kwargs):
    """``steps`` LBFGS steps from ``start``; returns (params, opt, closure calls, step results)."""
    params = [lib.tensor(a.copy(), requires_grad=True) for a in start]
    opt = lib.optim.LBFGS(params, **opt_kwargs)
    calls = [0]

    def closure():
        calls[0] += 1
        opt.zero_grad()
        loss = loss_fn(lib, *params)
        loss.backward()
        return loss

    results = [float(opt.step(closure)) for _ in range(steps)]
    return params, opt, calls[0], results


def _compare(start, loss_fn, steps, rtol, atol, **kwargs):
    ep, eopt, ecalls, eres = _run(engine, start, loss_fn, steps, **kwargs)
    tp, topt, tcalls, tres = _run(torch, start, loss_fn, steps, **kwargs)
    assert ecalls == tcalls
    np.testing.assert_allclose(eres, tres, rtol=rtol, atol=atol)
    for e, t in zip(ep, tp):
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=rtol, atol=atol)
    es, ts = eopt.state[ep[0]], topt.state[tp[0]]
    assert es["func_evals"] == ts["func_evals"] and es["n_iter"] == ts["n_iter"]
    return eopt, topt


@pytest.mark.parametrize("line_search_fn", LINE_SEARCHES)
@pytest.mark.parametrize("dim", [2, 5, 10])
def test_rosenbrock_matches_torch_float64(line_search_fn, dim):
    start = [np.random.default_rng(dim).uniform(-1.5, 1.5, dim)]
    _compare(start, _rosenbrock, 15, rtol=1e-4, atol=1e-6, line_search_fn=line_search_fn, max_iter=5,
             history_size=4)


def _linreg_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 6))
    y = x @ rng.normal(size=(6, 2)) + 0.1 * rng.normal(size=(40, 2))
    return x, y


@pytest.mark.parametrize("line_search_fn", LINE_SEARCHES)
def test_linear_regression_matches_torch(line_search_fn):
    x, y = _linreg_data()

    def loss_fn(lib, w, b):
        return ((lib.tensor(x) @ w + b - lib.tensor(y)) ** 2).mean()

    rng = np.random.default_rng(1)
    start = [rng.normal(size=(6, 2)), np.zeros(2)]
    _compare(start, loss_fn, 12, rtol=1e-6, atol=1e-8, line_search_fn=line_search_fn)


@pytest.mark.parametrize("line_search_fn", LINE_SEARCHES)
def test_float32_and_lr_match_torch(line_search_fn):
    """float32 parameters: the scalars stay float32 as torch's 0-d tensors do. (3 steps: once the
    loss is at float32's rounding floor, torch's own ``abs(loss - prev_loss) < tolerance_change``
    test flips on one-ulp differences of the loss, so iteration counts may then differ by one.)"""
    x, y = (a.astype(np.float32) for a in _linreg_data())

    def loss_fn(lib, w):
        return ((lib.tensor(x) @ w - lib.tensor(y)) ** 2).mean()

    start = [np.random.default_rng(3).normal(size=(6, 2)).astype(np.float32)]
    eopt, _ = _compare(start, loss_fn, 3, rtol=1e-4, atol=1e-5, line_search_fn=line_search_fn, lr=0.5,
                       max_iter=5)
    state = eopt.state[eopt.param_groups[0]["params"][0]]
    assert state["d"].dtype == engine.float32 and state["ro"][0].dtype == engine.float32


@pytest.mark.parametrize("line_search_fn", LINE_SEARCHES)
def test_mlp_matches_torch(line_search_fn):
    x, y = _linreg_data()

    def loss_fn(lib, w1, b1, w2):
        h = lib.tanh(lib.tensor(x) @ w1 + b1)
        return ((h @ w2 - lib.tensor(y)) ** 2).mean()

    rng = np.random.default_rng(2)
    start = [rng.normal(size=(6, 8)) * 0.5, np.zeros(8), rng.normal(size=(8, 2)) * 0.5]
    _compare(start, loss_fn, 10, rtol=1e-5, atol=1e-7, line_search_fn=line_search_fn, max_iter=8,
             history_size=5)


def _state_kinds(state):
    def kind(v):
        if isinstance(v, list):
            return [kind(x) for x in v]
        if isinstance(v, engine.Tensor | torch.Tensor):
            return ("tensor", tuple(v.shape))
        return type(v).__name__
    return {k: kind(v) for k, v in state.items()}


@pytest.mark.parametrize("line_search_fn", LINE_SEARCHES)
def test_state_has_torchs_keys_kinds_and_values(line_search_fn):
    start = [np.array([-1.2, 1.0, 0.3])]
    eopt, topt = _compare(start, _rosenbrock, 3, rtol=1e-7, atol=1e-9, line_search_fn=line_search_fn,
                          max_iter=6, history_size=3)
    es = eopt.state_dict()["state"][0]
    ts = topt.state_dict()["state"][0]
    assert _state_kinds(es) == _state_kinds(ts)
    for key in ("d", "prev_flat_grad", "H_diag", "t"):
        np.testing.assert_allclose(np.asarray(es[key].numpy() if hasattr(es[key], "numpy") else es[key]),
                                   np.asarray(ts[key].numpy() if hasattr(ts[key], "numpy") else ts[key]),
                                   rtol=1e-6)
    for e, t in zip(es["old_dirs"], ts["old_dirs"]):
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6, atol=1e-12)


@pytest.mark.parametrize("line_search_fn", LINE_SEARCHES)
def test_state_dict_round_trip_continues_identically(line_search_fn):
    """An optimizer loaded from a state_dict after 3 steps continues exactly as the original."""
    start = [np.array([-1.2, 1.0, 0.3, 0.8])]
    params, opt, _, _ = _run(engine, start, _rosenbrock, 3, line_search_fn=line_search_fn, max_iter=4)
    saved = copy.deepcopy(opt.state_dict())
    twin = engine.tensor(params[0].detach().numpy().copy(), requires_grad=True)
    twin_opt = engine.optim.LBFGS([twin], line_search_fn=line_search_fn, max_iter=4)
    twin_opt.load_state_dict(saved)
    assert twin_opt.state[twin]["n_iter"] == opt.state[params[0]]["n_iter"]

    def closure_for(p, o):
        def closure():
            o.zero_grad()
            loss = _rosenbrock(engine, p)
            loss.backward()
            return loss
        return closure

    for _ in range(3):
        a = float(opt.step(closure_for(params[0], opt)))
        b = float(twin_opt.step(closure_for(twin, twin_opt)))
        assert a == b
    np.testing.assert_array_equal(params[0].detach().numpy(), twin.detach().numpy())


def test_step_returns_the_first_loss_and_stops_at_an_optimum():
    x = engine.tensor([1.0, 1.0], dtype=engine.float64, requires_grad=True)
    opt = engine.optim.LBFGS([x])
    calls = []

    def closure():
        opt.zero_grad()
        loss = _rosenbrock(engine, x)
        loss.backward()
        calls.append(float(loss))
        return loss

    out = opt.step(closure)
    assert isinstance(out, engine.Tensor) and float(out) == 0.0
    assert calls == [0.0]  # the gradient is zero: no iteration, no further evaluation
    assert opt.state[x]["func_evals"] == 1 and opt.state[x]["n_iter"] == 0


def test_closure_runs_with_grad_enabled_inside_no_grad():
    x = engine.tensor([-1.0, 2.0], dtype=engine.float64, requires_grad=True)
    opt = engine.optim.LBFGS([x], max_iter=3)
    seen = []

    def closure():
        seen.append(engine.is_grad_enabled())
        opt.zero_grad()
        loss = _rosenbrock(engine, x)
        loss.backward()
        return loss

    with engine.no_grad():
        opt.step(closure)
        assert not engine.is_grad_enabled()
    assert len(seen) > 1 and all(seen)


def test_errors_as_torch():
    a = engine.zeros(2, requires_grad=True)
    b = engine.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match=r"LBFGS doesn't support per-parameter options \(parameter groups\)"):
        engine.optim.LBFGS([{"params": [a]}, {"params": [b]}])
    with pytest.raises(ValueError, match="Invalid learning rate: -1"):
        engine.optim.LBFGS([a], lr=-1)
    with pytest.raises(ValueError, match="Tensor lr must be 1-element"):
        engine.optim.LBFGS([a], lr=engine.tensor([0.1, 0.2]))
    opt = engine.optim.LBFGS([a], line_search_fn="backtracking")

    def closure():
        opt.zero_grad()
        loss = ((a - 1) ** 2).sum()
        loss.backward()
        return loss

    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        opt.step(closure)
    with pytest.raises(TypeError):
        opt.step()  # torch's step needs the closure


def test_defaults_as_torch():
    a = engine.zeros(2, requires_grad=True)
    group = engine.optim.LBFGS([a], max_iter=8).param_groups[0]
    tgroup = torch.optim.LBFGS([torch.zeros(2, requires_grad=True)], max_iter=8).param_groups[0]
    assert {k: v for k, v in group.items() if k != "params"} == {k: v for k, v in tgroup.items() if k != "params"}
