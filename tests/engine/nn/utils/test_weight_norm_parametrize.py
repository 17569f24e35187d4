"""nn.utils against torch: weight_norm (hook-based), parameters_to_vector, clip_grad_value_,
spectral_norm, parametrizations.weight_norm, parametrize's errors and a user parametrization."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import engine
from tests.engine.nn.conftest import close, error_of, rnd


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm(torch, dim):
    with pytest.warns(FutureWarning, match="`torch.nn.utils.weight_norm` is deprecated"):
        em = engine.nn.utils.weight_norm(engine.nn.Conv1d(3, 4, 2), dim=dim)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tm = torch.nn.utils.weight_norm(torch.nn.Conv1d(3, 4, 2), dim=dim)
    assert [(k, tuple(v.shape)) for k, v in em.state_dict().items()] == \
        [(k, tuple(v.shape)) for k, v in tm.state_dict().items()]
    em.load_state_dict({k: engine.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    x = rnd(2, 3, 5)
    eo, to = em(engine.tensor(x)), tm(torch.tensor(x))
    close(eo, to, atol=1e-6)
    eo.sum().backward(), to.sum().backward()
    close(em.weight_g.grad, tm.weight_g.grad, atol=1e-5)
    close(em.weight_v.grad, tm.weight_v.grad, atol=1e-5)
    with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks on the same parameter weight"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            engine.nn.utils.weight_norm(em, dim=dim)
    engine.nn.utils.remove_weight_norm(em)
    torch.nn.utils.remove_weight_norm(tm)
    assert list(em.state_dict()) == list(tm.state_dict())
    close(em.weight, tm.weight, atol=1e-6)
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found in"):
        engine.nn.utils.remove_weight_norm(em)


def test_parameters_to_vector_and_clip_grad_value(torch):
    e, t = engine.nn.Linear(3, 2), torch.nn.Linear(3, 2)
    e.load_state_dict({k: engine.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    ev = engine.nn.utils.parameters_to_vector(e.parameters())
    tv = torch.nn.utils.parameters_to_vector(t.parameters())
    close(ev, tv)
    engine.nn.utils.vector_to_parameters(ev * 2, e.parameters())
    torch.nn.utils.vector_to_parameters(tv * 2, t.parameters())
    close(e.weight, t.weight)
    x = rnd(4, 3) * 10
    e(engine.tensor(x)).pow(2).sum().backward()
    t(torch.tensor(x)).pow(2).sum().backward()
    engine.nn.utils.clip_grad_value_(e.parameters(), 0.5)
    torch.nn.utils.clip_grad_value_(t.parameters(), 0.5)
    close(e.weight.grad, t.weight.grad)
    close(e.bias.grad, t.bias.grad)


@pytest.mark.parametrize("kind", ["Linear", "Conv2d", "ConvTranspose2d"])
def test_spectral_norm(torch, kind):
    args = (3, 4) if kind == "Linear" else (3, 4, 2)
    tm = torch.nn.utils.spectral_norm(getattr(torch.nn, kind)(*args))
    em = engine.nn.utils.spectral_norm(getattr(engine.nn, kind)(*args))
    assert [(k, tuple(v.shape)) for k, v in em.state_dict().items()] == \
        [(k, tuple(v.shape)) for k, v in tm.state_dict().items()]
    em.load_state_dict({k: engine.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    x = rnd(2, 3) if kind == "Linear" else rnd(2, 3, 5, 5)
    for mode in ("train", "eval", "train"):
        getattr(tm, mode)(), getattr(em, mode)()
        eo, to = em(engine.tensor(x)), tm(torch.tensor(x))
        close(eo, to, atol=1e-5)
        close(em.weight_u, tm.weight_u, atol=1e-5)  # power iteration only in training mode
    eo.sum().backward(), to.sum().backward()
    close(em.weight_orig.grad, tm.weight_orig.grad, atol=1e-4)
    with pytest.raises(RuntimeError, match="Cannot register two spectral_norm hooks on the same parameter weight"):
        engine.nn.utils.spectral_norm(em)
    engine.nn.utils.remove_spectral_norm(em)
    torch.nn.utils.remove_spectral_norm(tm)
    assert list(em.state_dict()) == list(tm.state_dict())
    close(em.weight, tm.weight, atol=1e-5)
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found in"):
        engine.nn.utils.remove_spectral_norm(em)


@pytest.mark.parametrize("dim", [0, 1, None])
def test_parametrizations_weight_norm(torch, dim):
    from torch.nn.utils import parametrize as tpz

    em = engine.nn.utils.parametrizations.weight_norm(engine.nn.Conv1d(3, 4, 2), dim=dim)
    tm = torch.nn.utils.parametrizations.weight_norm(torch.nn.Conv1d(3, 4, 2), dim=dim)
    assert repr(em) == repr(tm) and type(em).__name__ == "ParametrizedConv1d"
    assert [(k, tuple(v.shape)) for k, v in em.state_dict().items()] == \
        [(k, tuple(v.shape)) for k, v in tm.state_dict().items()]
    em.load_state_dict({k: engine.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    assert engine.nn.utils.parametrize.is_parametrized(em, "weight")
    x = rnd(2, 3, 5)
    eo, to = em(engine.tensor(x)), tm(torch.tensor(x))
    close(eo, to, atol=1e-6)
    eo.sum().backward(), to.sum().backward()
    for k in ("original0", "original1"):
        close(getattr(em.parametrizations.weight, k).grad, getattr(tm.parametrizations.weight, k).grad, atol=1e-5)
    with engine.no_grad():
        em.weight = engine.ones(4, 3, 2)  # the setter goes through right_inverse
    np.testing.assert_allclose(em.weight.detach().numpy(), np.ones((4, 3, 2)), atol=1e-6)
    engine.nn.utils.parametrize.remove_parametrizations(em, "weight")
    with torch.no_grad():
        tm.weight = torch.ones(4, 3, 2)
    tpz.remove_parametrizations(tm, "weight")
    assert type(em).__name__ == "Conv1d" and repr(em) == repr(tm)
    assert list(em.state_dict()) == list(tm.state_dict())
    close(em.weight, tm.weight, atol=1e-6)


@pytest.mark.parametrize("case", [
    lambda L: L.nn.utils.parametrize.register_parametrization(L.nn.Linear(2, 2), "scale", L.nn.Identity()),
    lambda L: L.nn.utils.parametrize.remove_parametrizations(
        L.nn.utils.parametrizations.weight_norm(L.nn.Linear(2, 2)), "weight", leave_parametrized=False),
])
def test_parametrize_errors(torch, case):
    e, t = error_of(engine, case), error_of(torch, case)
    assert e[0] == t[0] and e[1].split("'")[-2:] == t[1].split("'")[-2:]


def test_user_parametrization(torch):
    class Symmetric(engine.nn.Module):
        def forward(self, x):
            return x.triu() + x.triu(1).transpose(0, 1)

    m = engine.nn.utils.parametrize.register_parametrization(engine.nn.Linear(3, 3), "weight", Symmetric())
    w = m.weight.detach().numpy()
    np.testing.assert_array_equal(w, w.T)
    assert list(m.state_dict()) == ["bias", "parametrizations.weight.original"]
    m(engine.randn(2, 3)).sum().backward()
    g = m.parametrizations.weight.original.grad.numpy()
    assert np.all(np.tril(g, -1) == 0)  # the strictly-lower part is never used
