"""engine.distributions (Categorical, Normal, kl_divergence) against torch.distributions: values
and gradients of log_prob/entropy/rsample/kl, shapes, sampling frequencies, reprs and errors."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import engine
import engine.distributions as D
from tests.gradcheck import gradcheck

RNG = np.random.default_rng(0)
LOGITS = RNG.standard_normal((3, 4))
PROBS = RNG.uniform(0.1, 1.0, (3, 4))
LOC, SCALE = RNG.standard_normal((2, 3)), RNG.uniform(0.5, 2.0, (2, 3))
VALUE = RNG.standard_normal((2, 3))


def _dist(lib):
    return importlib.import_module(f"{lib.__name__}.distributions")


CASES = {
    "cat_logits_log_prob": lambda lib, d, a: d.Categorical(logits=a).log_prob(lib.tensor([0, 3, 1])),
    "cat_probs_log_prob": lambda lib, d, a: d.Categorical(probs=a).log_prob(lib.tensor([[2], [1]])),
    "cat_entropy": lambda lib, d, a: d.Categorical(logits=a).entropy(),
    "cat_probs_entropy": lambda lib, d, a: d.Categorical(probs=a).entropy(),
    "cat_kl": lambda lib, d, a: d.kl_divergence(d.Categorical(logits=a), d.Categorical(logits=a.flip(-1))),
}
NORMAL_CASES = {
    "normal_log_prob": lambda lib, d, m, s: d.Normal(m, s).log_prob(lib.tensor(VALUE, dtype=m.dtype)),
    "normal_scalar_scale": lambda lib, d, m, s: d.Normal(m, 1.5).log_prob(lib.tensor(0.3, dtype=m.dtype)),
    "normal_entropy": lambda lib, d, m, s: d.Normal(m, s).entropy(),
    "normal_kl": lambda lib, d, m, s: d.kl_divergence(d.Normal(m, s), d.Normal(0.0, 1.0)),
    "normal_variance": lambda lib, d, m, s: d.Normal(m, s).variance + d.Normal(m, s).stddev,
}


def _run(lib, name, dtype):
    d = _dist(lib)
    if name in CASES:
        a = lib.tensor(PROBS if "probs" in name else LOGITS, dtype=dtype, requires_grad=True)
        out = CASES[name](lib, d, a)
        inputs = [a]
    else:
        m = lib.tensor(LOC, dtype=dtype, requires_grad=True)
        s = lib.tensor(SCALE, dtype=dtype, requires_grad=True)
        out = NORMAL_CASES[name](lib, d, m, s)
        inputs = [m, s]
    out.backward(lib.tensor(np.linspace(-1, 1, out.numel()).reshape(tuple(out.shape)), dtype=dtype))
    return out, [t.grad for t in inputs]


@pytest.mark.parametrize("name", sorted(CASES) + sorted(NORMAL_CASES))
def test_parity(name):
    torch = pytest.importorskip("torch")
    e_out, e_grads = _run(engine, name, engine.float32)
    t_out, t_grads = _run(torch, name, torch.float32)
    np.testing.assert_allclose(e_out.detach().numpy(), t_out.detach().numpy(), rtol=1e-5, atol=1e-6)
    for e, t in zip(e_grads, t_grads):
        if t is None:
            assert e is None
        else:
            np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(CASES) + sorted(NORMAL_CASES))
def test_gradcheck(name):
    if name in CASES:
        a = engine.tensor(PROBS if "probs" in name else LOGITS, dtype=engine.float64, requires_grad=True)
        gradcheck(lambda t: CASES[name](engine, D, t), a)
    else:
        m = engine.tensor(LOC, dtype=engine.float64, requires_grad=True)
        s = engine.tensor(SCALE, dtype=engine.float64, requires_grad=True)
        gradcheck(lambda x, y: NORMAL_CASES[name](engine, D, x, y), m, s)


def test_shapes_and_reprs_as_torch():
    torch = pytest.importorskip("torch")
    reprs = []
    for lib in (engine, torch):
        d = _dist(lib)
        c = d.Categorical(probs=lib.tensor(PROBS, dtype=lib.float32))
        n = d.Normal(lib.tensor(LOC, dtype=lib.float32), 2.0)
        shapes = [tuple(c.batch_shape), tuple(c.event_shape), tuple(c.sample().shape), tuple(c.sample((5, 2)).shape),
                  tuple(c.param_shape), tuple(n.batch_shape), tuple(n.sample((4,)).shape), tuple(n.rsample().shape),
                  str(c.sample().dtype).split(".")[-1], str(n.loc.dtype).split(".")[-1]]
        reprs.append((shapes, repr(c).replace(lib.__name__, "X"), repr(n).replace(lib.__name__, "X")))
        logits_only = d.Categorical(logits=lib.tensor(LOGITS, dtype=lib.float32))
        reprs[-1] += (repr(logits_only).replace(lib.__name__, "X"),)
        _ = logits_only.probs
        reprs[-1] += (repr(logits_only).replace(lib.__name__, "X"),)
    assert reprs[0] == reprs[1]


def test_sampling_frequencies_and_rsample_gradient():
    engine.manual_seed(0)
    c = D.Categorical(probs=engine.tensor([0.1, 0.6, 0.3]))
    draws = c.sample((20000,)).numpy()
    np.testing.assert_allclose(np.bincount(draws, minlength=3) / 20000, [0.1, 0.6, 0.3], atol=0.015)
    loc = engine.tensor([1.0, -2.0], requires_grad=True)
    scale = engine.tensor([0.5, 3.0], requires_grad=True)
    z = D.Normal(loc, scale).rsample((50000,))
    np.testing.assert_allclose(z.detach().numpy().mean(0), [1.0, -2.0], atol=0.05)
    np.testing.assert_allclose(z.detach().numpy().std(0), [0.5, 3.0], rtol=0.03)
    z.mean(0).sum().backward()
    np.testing.assert_allclose(loc.grad.numpy(), [1.0, 1.0], rtol=1e-3)  # (float32 sums) d mean(loc + eps*scale) / d loc
    assert not D.Normal(loc, scale).sample().requires_grad


@pytest.fixture
def torch_validating():
    """torch with its default argument validation on: ``torch.compile`` turns it off for the whole
    process (``Distribution.set_default_validate_args(False)``), and an earlier test compiles."""
    torch = pytest.importorskip("torch")
    before = torch.distributions.Distribution._validate_args
    torch.distributions.Distribution.set_default_validate_args(True)
    yield torch
    torch.distributions.Distribution.set_default_validate_args(before)


@pytest.mark.parametrize("case", ["negative_scale", "negative_probs", "neither", "both", "number_value"])
def test_errors_as_torch(case, torch_validating):
    torch = torch_validating
    calls = {
        "negative_scale": lambda lib, d: d.Normal(lib.tensor([0.0, 1.0]), lib.tensor([1.0, -1.0])),
        "negative_probs": lambda lib, d: d.Categorical(probs=lib.tensor([-1.0, 2.0])),
        "neither": lambda lib, d: d.Categorical(),
        "both": lambda lib, d: d.Categorical(probs=lib.tensor([0.5, 0.5]), logits=lib.tensor([0.0, 0.0])),
        "number_value": lambda lib, d: d.Normal(0.0, 1.0).log_prob(0.3),
    }
    with pytest.raises(ValueError) as t_err:
        calls[case](torch, _dist(torch))
    with pytest.raises(ValueError) as e_err:
        calls[case](engine, D)
    assert str(e_err.value).replace("engine.", "torch.") == str(t_err.value)


def test_errors_without_torch():
    with pytest.raises(ValueError, match=r"Expected parameter scale \(Tensor of shape \(2,\)\) of distribution "
                                         r"Normal\(loc: engine.Size\(\[2\]\), scale: engine.Size\(\[2\]\)\) to "
                                         r"satisfy the constraint GreaterThan\(lower_bound=0.0\)"):
        D.Normal(engine.tensor([0.0, 1.0]), engine.tensor([1.0, -1.0]))
    with pytest.raises(ValueError, match="Either `probs` or `logits` must be specified, but not both."):
        D.Categorical()
    with pytest.raises(NotImplementedError):
        D.kl_divergence(D.Normal(0.0, 1.0), D.Categorical(logits=engine.zeros(2)))
