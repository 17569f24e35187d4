"""optim.Adafactor and optim.Muon against torch 2.13: parameter trajectories over 15 steps, state
dicts (keys, values, a torch state dict loaded mid-run), argument errors in torch's words."""

from __future__ import annotations

import numpy as np
import pytest

import engine

torch = pytest.importorskip("torch")


def params(shapes, seed=0):
    rng = np.random.default_rng(seed)
    ws = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    return ([torch.nn.Parameter(torch.tensor(w)) for w in ws], [engine.nn.Parameter(engine.tensor(w)) for w in ws])


def feed(tp, ep, rng):
    for t, e in zip(tp, ep):
        g = rng.standard_normal(tuple(t.shape)).astype(np.float32)
        t.grad, e.grad = torch.tensor(g), engine.tensor(g)


def to_numpy(obj):
    """A state dict with every tensor as a NumPy array (torch or engine)."""
    if isinstance(obj, dict):
        return {k: to_numpy(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(to_numpy(v) for v in obj)
    if isinstance(obj, torch.Tensor | engine.Tensor):
        return obj.detach().numpy()
    return obj


def assert_same_state(e_sd, t_sd, atol):
    e_sd, t_sd = to_numpy(e_sd), to_numpy(t_sd)
    assert e_sd["param_groups"] == t_sd["param_groups"]
    assert e_sd["state"].keys() == t_sd["state"].keys()
    for i, t_state in t_sd["state"].items():
        assert e_sd["state"][i].keys() == t_state.keys()
        for k, v in t_state.items():
            assert np.asarray(e_sd["state"][i][k]).dtype == np.asarray(v).dtype, k
            np.testing.assert_allclose(e_sd["state"][i][k], v, atol=atol, rtol=1e-5)


def trajectory(name, kw, shapes, steps=15, atol=2e-7):
    tp, ep = params(shapes)
    to, eo = getattr(torch.optim, name)(tp, **kw), getattr(engine.optim, name)(ep, **kw)
    rng = np.random.default_rng(1)
    for _ in range(steps):
        feed(tp, ep, rng)
        to.step()
        eo.step()
        for t, e in zip(tp, ep):
            np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), atol=atol, rtol=1e-6)
    return to, eo, tp, ep


@pytest.mark.parametrize("kw", [
    {}, dict(lr=0.1, weight_decay=0.1), dict(maximize=True, d=2.0), dict(eps=(1e-20, 1e-2), beta2_decay=-0.5),
    dict(lr=engine.tensor(0.05)),
])
def test_adafactor_trajectory_and_state_dict(kw):
    tkw = {k: (torch.tensor(v.item()) if isinstance(v, engine.Tensor) else v) for k, v in kw.items()}
    tp, ep = params([(4, 5), (3,), (2, 3, 4)])
    to, eo = torch.optim.Adafactor(tp, **tkw), engine.optim.Adafactor(ep, **kw)
    rng = np.random.default_rng(1)
    for _ in range(15):
        feed(tp, ep, rng)
        to.step()
        eo.step()
        for t, e in zip(tp, ep):
            np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), atol=2e-7, rtol=1e-6)
    if not kw:
        assert_same_state(eo.state_dict(), to.state_dict(), atol=1e-7)
        assert set(eo.state_dict()["state"][0]) == {"step", "row_var", "col_var"}
        assert set(eo.state_dict()["state"][1]) == {"step", "variance"}
        assert eo.state_dict()["state"][2]["row_var"].shape == (2, 3, 1)


def test_adafactor_resumes_from_torch_state_dict():
    tp, ep = params([(4, 5), (3,)])
    to, eo = torch.optim.Adafactor(tp, lr=0.05), engine.optim.Adafactor(ep, lr=0.05)
    rng = np.random.default_rng(2)
    for _ in range(5):
        feed(tp, ep, rng)
        to.step()
    with engine.no_grad():
        for t, e in zip(tp, ep):
            e.copy_(engine.tensor(t.detach().numpy()))
    sd = to.state_dict()
    eo.load_state_dict({"state": {i: {k: engine.tensor(v.numpy()) for k, v in s.items()} for i, s in sd["state"].items()},
                        "param_groups": sd["param_groups"]})
    for _ in range(5):
        feed(tp, ep, rng)
        to.step()
        eo.step()
    for t, e in zip(tp, ep):
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), atol=2e-7, rtol=1e-6)
    assert float(eo.state[ep[0]]["step"]) == 10.0


def test_adafactor_trains_a_model():
    engine.manual_seed(0)
    model = engine.nn.Sequential(engine.nn.Linear(4, 16), engine.nn.ReLU(), engine.nn.Linear(16, 1))
    opt = engine.optim.Adafactor(model.parameters(), lr=0.05)
    x = engine.randn(64, 4)
    y = x.sum(dim=1, keepdim=True)
    losses = []
    for _ in range(60):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.2 * losses[0]


@pytest.mark.parametrize("kw", [
    {}, dict(lr=0.02, nesterov=False), dict(adjust_lr_fn="match_rms_adamw", weight_decay=0.0),
    dict(adjust_lr_fn="original", momentum=0.0, ns_steps=3), dict(ns_coefficients=(2.0, -1.5, 0.5), eps=1e-3),
])
def test_muon_trajectory_and_state_dict(kw):
    to, eo, _, _ = trajectory("Muon", kw, [(4, 5), (6, 3), (7, 7)])
    assert_same_state(eo.state_dict(), to.state_dict(), atol=1e-7)
    assert set(eo.state_dict()["state"][0]) == {"momentum_buffer"}


def test_muon_update_is_nearly_orthogonal():
    from engine.optim.muon import _zeropower_via_newtonschulz

    g = np.random.default_rng(0).standard_normal((8, 5)).astype(np.float32)
    o = _zeropower_via_newtonschulz(g, (3.4445, -4.7750, 2.0315), 5, 1e-7)
    s = np.linalg.svd(o, compute_uv=False)
    assert o.shape == (8, 5) and np.all((s > 0.5) & (s < 1.5))  # the quintic's US'V^T, S' ~ U(0.5, 1.5)
    with pytest.raises(ValueError, match="Number of steps must be less than 100 for computational efficiency"):
        _zeropower_via_newtonschulz(g, (1.0, 0.0, 0.0), 100, 1e-7)


def _same_error(fe, ft):
    with pytest.raises(Exception) as te:
        ft()
    with pytest.raises(type(te.value)) as ee:
        fe()
    assert str(ee.value) == str(te.value).replace("torch.Size", "engine.Size")


@pytest.mark.parametrize("name,kw", [
    ("Adafactor", dict(lr=-1.0)), ("Adafactor", dict(beta2_decay=0.5)), ("Adafactor", dict(eps=(-1.0, 1e-3))),
    ("Adafactor", dict(eps=(None, -1.0))), ("Adafactor", dict(d=0.5)), ("Adafactor", dict(weight_decay=-0.1)),
    ("Muon", dict(lr=-1.0)), ("Muon", dict(momentum=-0.5)), ("Muon", dict(weight_decay=-1.0)),
    ("Muon", dict(adjust_lr_fn="other")),
])
def test_argument_errors_match_torch(name, kw):
    tp, ep = params([(3, 3)])
    _same_error(lambda: getattr(engine.optim, name)(ep, **kw), lambda: getattr(torch.optim, name)(tp, **kw))


def test_muon_rejects_non_matrices_and_tensor_lr_must_be_scalar():
    tp, ep = params([(3, 3), (3,)])
    _same_error(lambda: engine.optim.Muon(ep), lambda: torch.optim.Muon(tp))
    tp, ep = params([(3, 3)])
    _same_error(lambda: engine.optim.Adafactor(ep, lr=engine.ones(2)),
                lambda: torch.optim.Adafactor(tp, lr=torch.ones(2)))
    _same_error(lambda: engine.optim.Muon(ep, lr=engine.ones(2)), lambda: torch.optim.Muon(tp, lr=torch.ones(2)))
