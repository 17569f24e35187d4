"""engine.distributions beyond Categorical/Normal -- Bernoulli, Uniform, Independent, Laplace,
Exponential, Gamma, Beta, Dirichlet, MultivariateNormal, OneHotCategorical -- against
torch.distributions: log_prob/entropy/moments/cdf/icdf/KL values and gradients w.r.t. the
parameters, shapes of sample/rsample, seeded sample statistics, reprs, torch's ValueError texts,
register_kl dispatch, and a VAE-style and a PPO-style loss computed under both."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import engine
import engine.distributions as D
from tests.gradcheck import gradcheck

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(3)
A = RNG.uniform(0.5, 3.0, (2, 3))
B = RNG.uniform(0.5, 3.0, (2, 3))
LOC = RNG.standard_normal((2, 3))
P = RNG.uniform(0.1, 0.9, (2, 3))
LOGIT = RNG.standard_normal((2, 3))
UNIT = RNG.uniform(0.05, 0.95, (2, 3))
POS = RNG.uniform(0.1, 4.0, (2, 3))
REAL = RNG.standard_normal((2, 3)) * 2
SIMPLEX = RNG.dirichlet([1.0, 2.0, 3.0], size=2)
M = RNG.standard_normal((2, 3, 3))
COV = M @ np.swapaxes(M, -1, -2) + 0.5 * np.eye(3)
VEC = RNG.standard_normal((2, 3))


pytestmark = pytest.mark.usefixtures("torch_validating")


def _d(lib):
    return importlib.import_module(f"{lib.__name__}.distributions")


def _t(lib, arr, dtype, grad=False):
    return lib.tensor(arr, dtype=dtype, requires_grad=grad)


# name -> (param arrays, build(d, *params), value array or None)
FAMILIES = {
    "bernoulli_probs": ([P], lambda d, p: d.Bernoulli(probs=p), (RNG.uniform(size=(2, 3)) < 0.5) * 1.0),
    "bernoulli_logits": ([LOGIT], lambda d, x: d.Bernoulli(logits=x), (RNG.uniform(size=(2, 3)) < 0.5) * 1.0),
    "uniform": ([LOC, LOC + POS], lambda d, lo, hi: d.Uniform(lo, hi), LOC + 0.5 * POS),
    "laplace": ([LOC, POS], lambda d, m, s: d.Laplace(m, s), REAL),
    "exponential": ([POS], lambda d, r: d.Exponential(r), POS[::-1].copy()),
    "gamma": ([A, B], lambda d, a, b: d.Gamma(a, b), POS),
    "beta": ([A, B], lambda d, a, b: d.Beta(a, b), UNIT),
    "dirichlet": ([A], lambda d, a: d.Dirichlet(a), SIMPLEX),
    "independent_normal": ([LOC, POS], lambda d, m, s: d.Independent(d.Normal(m, s), 1), REAL),
    "mvn_cov": ([LOC, COV], lambda d, m, c: d.MultivariateNormal(m, covariance_matrix=c), VEC),
    "mvn_prec": ([LOC, COV], lambda d, m, c: d.MultivariateNormal(m, precision_matrix=c), VEC),
    "mvn_tril": ([LOC, np.linalg.cholesky(COV)], lambda d, m, l: d.MultivariateNormal(m, scale_tril=l), VEC),
    "onehot": ([SIMPLEX], lambda d, p: d.OneHotCategorical(probs=p), np.eye(3)[[2, 0]]),
    "onehot_logits": ([LOGIT], lambda d, x: d.OneHotCategorical(logits=x), np.eye(3)[[1, 1]]),
}
STATS = ("log_prob", "entropy", "mean", "variance", "stddev", "mode", "cdf", "icdf")
HAS = {  # which of STATS torch defines for each family (the rest raise NotImplementedError there)
    "bernoulli_probs": {"log_prob", "entropy", "mean", "variance", "stddev", "mode"},
    "uniform": set(STATS), "laplace": set(STATS), "exponential": set(STATS),
    "gamma": {"log_prob", "entropy", "mean", "variance", "stddev", "mode", "cdf"},
    "beta": {"log_prob", "entropy", "mean", "variance", "stddev", "mode"},
    "dirichlet": {"log_prob", "entropy", "mean", "variance", "stddev", "mode"},
    "independent_normal": {"log_prob", "entropy", "mean", "variance", "stddev", "mode"},
    "mvn_cov": {"log_prob", "entropy", "mean", "variance", "stddev", "mode"},
    "onehot": {"log_prob", "entropy", "mean", "variance", "stddev", "mode"},
}
HAS["bernoulli_logits"] = HAS["bernoulli_probs"]
HAS["mvn_prec"] = HAS["mvn_tril"] = HAS["mvn_cov"]
HAS["onehot_logits"] = HAS["onehot"]


def _stat(lib, name, stat, dtype):
    arrays, build, value = FAMILIES[name]
    # torch's gammainc has no derivative in its first argument: Gamma.cdf differentiates in rate only
    frozen = {0} if (name, stat) == ("gamma", "cdf") else set()
    params = [_t(lib, a, dtype, grad=i not in frozen) for i, a in enumerate(arrays)]
    dist = build(_d(lib), *params)
    params = [p for i, p in enumerate(params) if i not in frozen]
    if stat in ("log_prob", "cdf"):
        out = getattr(dist, stat)(_t(lib, value, dtype))
    elif stat == "icdf":
        out = dist.icdf(_t(lib, UNIT, dtype))
    elif stat == "entropy":
        out = dist.entropy()
    else:
        out = getattr(dist, stat)
    grads = []
    if out.requires_grad:
        w = _t(lib, np.linspace(-1, 1, out.numel()).reshape(tuple(out.shape)), dtype)
        grads = lib.autograd.grad((out * w).sum(), params, allow_unused=True)
    return out, grads


CASES = [(n, s) for n in sorted(FAMILIES) for s in STATS if s in HAS[n]]


@pytest.mark.parametrize("name,stat", CASES)
def test_values_and_parameter_gradients_match_torch(name, stat):
    e_out, e_grads = _stat(engine, name, stat, engine.float64)
    t_out, t_grads = _stat(torch, name, stat, torch.float64)
    assert tuple(e_out.shape) == tuple(t_out.shape)
    np.testing.assert_allclose(e_out.detach().numpy(), t_out.detach().numpy(), rtol=1e-9, atol=1e-12,
                               equal_nan=True)
    assert len(e_grads) == len(t_grads)
    for e, t in zip(e_grads, t_grads):
        if t is None:
            assert e is None or not np.any(e.numpy())
        else:
            np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("name", ["gamma", "beta", "dirichlet", "laplace", "mvn_tril", "bernoulli_logits"])
def test_log_prob_gradcheck(name):
    arrays, build, value = FAMILIES[name]
    params = [_t(engine, a, engine.float64, grad=True) for a in arrays]
    if name == "mvn_tril":  # perturbing an upper entry would leave LowerCholesky: differentiate through tril
        gradcheck(lambda m, l: build(D, m, l.tril()).log_prob(_t(engine, value, engine.float64)), *params)
        return
    gradcheck(lambda *ps: build(D, *ps).log_prob(_t(engine, value, engine.float64)), *params)


KL_PAIRS = {
    "bernoulli": (lambda d, a, b: d.Bernoulli(probs=a / 4), lambda d, a, b: d.Bernoulli(logits=b - 1.5)),
    "beta": (lambda d, a, b: d.Beta(a, b), lambda d, a, b: d.Beta(b, a + 1)),
    "dirichlet": (lambda d, a, b: d.Dirichlet(a), lambda d, a, b: d.Dirichlet(b)),
    "exponential": (lambda d, a, b: d.Exponential(a), lambda d, a, b: d.Exponential(b)),
    "gamma": (lambda d, a, b: d.Gamma(a, b), lambda d, a, b: d.Gamma(b, a)),
    "laplace": (lambda d, a, b: d.Laplace(a, b), lambda d, a, b: d.Laplace(b, a)),
    "uniform": (lambda d, a, b: d.Uniform(a - 1, a), lambda d, a, b: d.Uniform(a - 2, a + b)),
    "uniform_inf": (lambda d, a, b: d.Uniform(a - 1, a + b), lambda d, a, b: d.Uniform(a - 2, a)),
    "independent": (lambda d, a, b: d.Independent(d.Normal(a, b), 1), lambda d, a, b: d.Independent(d.Normal(b, a), 1)),
    "onehot": (lambda d, a, b: d.OneHotCategorical(logits=a), lambda d, a, b: d.OneHotCategorical(probs=b)),
    "mvn": (lambda d, a, b: d.MultivariateNormal(a, covariance_matrix=_cov(d, b)),
            lambda d, a, b: d.MultivariateNormal(b, scale_tril=_tril(d, a))),
    "exponential_gamma": (lambda d, a, b: d.Exponential(a), lambda d, a, b: d.Gamma(b, a)),
    "gamma_exponential": (lambda d, a, b: d.Gamma(a, b), lambda d, a, b: d.Exponential(b)),
    "exponential_normal": (lambda d, a, b: d.Exponential(a), lambda d, a, b: d.Normal(b, a)),
    "laplace_normal": (lambda d, a, b: d.Laplace(a, b), lambda d, a, b: d.Normal(b, a)),
    "normal_laplace": (lambda d, a, b: d.Normal(a, b), lambda d, a, b: d.Laplace(b, a)),
    "uniform_normal": (lambda d, a, b: d.Uniform(a - 1, a), lambda d, a, b: d.Normal(b, a)),
    "beta_exponential": (lambda d, a, b: d.Beta(a, b), lambda d, a, b: d.Exponential(b)),
    "beta_gamma": (lambda d, a, b: d.Beta(a, b), lambda d, a, b: d.Gamma(b, a)),
    "beta_normal": (lambda d, a, b: d.Beta(a, b), lambda d, a, b: d.Normal(b, a)),
    "beta_uniform": (lambda d, a, b: d.Beta(a, b), lambda d, a, b: d.Uniform(b * 0 - 0.5 * (a > 1), b + 1)),
    "uniform_beta": (lambda d, a, b: d.Uniform(a / 10 - 0.1 * (b > 2), a / 10 + 0.1), lambda d, a, b: d.Beta(b, a)),
    "uniform_exponential": (lambda d, a, b: d.Uniform(a - 1, a + 1), lambda d, a, b: d.Exponential(b)),
    "uniform_gamma": (lambda d, a, b: d.Uniform(a - 1, a + 1), lambda d, a, b: d.Gamma(b, a)),
    "normal_gamma_inf": (lambda d, a, b: d.Normal(a, b), lambda d, a, b: d.Gamma(b, a)),
    "gamma_uniform_inf": (lambda d, a, b: d.Gamma(a, b), lambda d, a, b: d.Uniform(b, b + 1)),
}


def _cov(d, b):
    lib = engine if d is D else torch
    m = b.unsqueeze(-1) * b.unsqueeze(-2)
    return m + lib.eye(b.shape[-1], dtype=b.dtype)


def _tril(d, a):
    lib = engine if d is D else torch
    return lib.diag_embed(a) + lib.tril(a.unsqueeze(-1) * 0.1 * a.unsqueeze(-2), -1)


@pytest.mark.parametrize("pair", sorted(KL_PAIRS))
def test_kl_divergence_values_and_gradients_match_torch(pair):
    outs = []
    for lib in (engine, torch):
        a, b = _t(lib, A, lib.float64, True), _t(lib, B, lib.float64, True)
        make_p, make_q = KL_PAIRS[pair]
        kl = _d(lib).kl_divergence(make_p(_d(lib), a, b), make_q(_d(lib), a, b))
        finite = lib.isfinite(kl)
        grads = lib.autograd.grad(kl[finite].sum(), (a, b), allow_unused=True) if bool(finite.any()) else (None, None)
        outs.append((kl.detach().numpy(), [g.numpy() if g is not None else None for g in grads]))
    (ek, eg), (tk, tg) = outs
    np.testing.assert_allclose(ek, tk, rtol=1e-9, atol=1e-12)
    for e, t in zip(eg, tg):
        if t is None:
            assert e is None or not np.any(e)
        else:
            np.testing.assert_allclose(e, t, rtol=1e-8, atol=1e-10)


def test_kl_errors_and_register_kl_dispatch():
    with pytest.raises(NotImplementedError, match="cannot +be computed using Bregman divergences"):
        D.kl_divergence(D.Bernoulli(probs=engine.tensor(0.3)), D.Normal(0.0, 1.0))
    with pytest.raises(NotImplementedError, match="No KL\\(p \\|\\| q\\) is implemented for p type Laplace and q "
                                                  "type OneHotCategorical"):
        D.kl_divergence(D.Laplace(0.0, 1.0), D.OneHotCategorical(probs=engine.tensor([0.5, 0.5])))
    with pytest.raises(NotImplementedError):
        D.kl_divergence(D.Independent(D.Normal(engine.zeros(2, 3), 1.0), 1),
                        D.Independent(D.Normal(engine.zeros(2, 3), 1.0), 2))
    with pytest.raises(ValueError, match="different event shapes"):
        D.kl_divergence(D.MultivariateNormal(engine.zeros(2), engine.eye(2)),
                        D.MultivariateNormal(engine.zeros(3), engine.eye(3)))
    with pytest.raises(TypeError, match="Expected type_p to be a Distribution subclass"):
        D.register_kl(int, D.Normal)
    with pytest.raises(TypeError, match="Expected type_q to be a Distribution subclass"):
        D.register_kl(D.Normal, "Normal")

    class MyNormal(D.Normal):
        pass

    # a subclass uses its parent's formula until it registers its own, which then wins
    p, q = MyNormal(0.0, 1.0), D.Normal(1.0, 2.0)
    base = D.kl_divergence(p, q).item()
    assert base == pytest.approx(D.kl_divergence(D.Normal(0.0, 1.0), q).item())

    @D.register_kl(MyNormal, D.Normal)
    def _mine(p, q):
        return engine.tensor(42.0)

    assert D.kl_divergence(p, q).item() == 42.0

    class Both(D.Normal):
        pass

    @D.register_kl(Both, D.Distribution)
    def _left(p, q):
        return engine.tensor(1.0)

    @D.register_kl(D.Distribution, Both)
    def _right(p, q):
        return engine.tensor(2.0)

    with pytest.warns(RuntimeWarning, match="Ambiguous kl_divergence"):
        D.kl_divergence(Both(0.0, 1.0), Both(0.0, 1.0))


SHAPES = {
    "bernoulli": lambda d, lib: d.Bernoulli(probs=lib.full((4, 2), 0.3)),
    "uniform": lambda d, lib: d.Uniform(lib.zeros(4, 2), 1.0),
    "laplace": lambda d, lib: d.Laplace(lib.zeros(4, 2), 1.0),
    "exponential": lambda d, lib: d.Exponential(lib.ones(4, 2)),
    "gamma": lambda d, lib: d.Gamma(lib.ones(4, 2), 2.0),
    "beta": lambda d, lib: d.Beta(lib.ones(4, 2), 2.0),
    "dirichlet": lambda d, lib: d.Dirichlet(lib.ones(4, 2)),
    "independent": lambda d, lib: d.Independent(d.Normal(lib.zeros(4, 2, 5), 1.0), 2),
    "mvn": lambda d, lib: d.MultivariateNormal(lib.zeros(4, 2), lib.eye(2)),
    "mvn_batch_cov": lambda d, lib: d.MultivariateNormal(lib.zeros(2), lib.eye(2).expand(4, 2, 2)),
    "onehot": lambda d, lib: d.OneHotCategorical(logits=lib.zeros(4, 2)),
}


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_sample_shapes_dtypes_and_has_rsample(name):
    got = []
    for lib in (engine, torch):
        dist = SHAPES[name](_d(lib), lib)
        row = [tuple(dist.batch_shape), tuple(dist.event_shape), tuple(dist.sample().shape),
               tuple(dist.sample((3,)).shape), tuple(dist.sample((2, 5)).shape),
               str(dist.sample().dtype).split(".")[-1], str(dist.support)]
        if dist.has_rsample:
            row.append(tuple(dist.rsample((3,)).shape))
        got.append(row)
    assert got[0] == got[1]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dirichlet_and_beta_rsample_gradients_are_torchs_on_the_same_draws(dtype):
    """torch's _Dirichlet backward, grad(x) * (g - sum(x * g)), with _dirichlet_grad evaluated at the
    engine's draws; Beta is the first component of a two-component Dirichlet."""
    engine.manual_seed(2)
    conc_np = np.array([[0.1, 0.7, 2.0, 9.0], [7.0, 8.0, 0.5, 30.0]])
    conc = engine.tensor(conc_np, dtype=getattr(engine, dtype), requires_grad=True)
    x = D.Dirichlet(conc).rsample((16,))
    assert type(x.grad_fn).__name__ == "_DirichletBackward"
    w = np.random.default_rng(1).standard_normal(tuple(x.shape))
    (x * engine.tensor(w, dtype=x.dtype)).sum().backward()
    tdt = getattr(torch, dtype)
    tx, tc = torch.tensor(x.detach().numpy(), dtype=tdt), torch.tensor(conc_np, dtype=tdt).expand(16, 2, 4)
    g = torch.tensor(w, dtype=tdt)
    dx = torch._dirichlet_grad(tx, tc, tc.sum(-1, True).expand_as(tc))
    want = (dx * (g - (tx * g).sum(-1, True))).sum(0).numpy()
    rtol = 2e-4 if dtype == "float32" else 1e-9
    np.testing.assert_allclose(conc.grad.numpy(), want, rtol=rtol, atol=1e-5 if dtype == "float32" else 1e-12)
    a = engine.tensor([0.5, 3.0], requires_grad=True)
    b = engine.tensor([2.0, 9.0], requires_grad=True)
    y = D.Beta(a, b).rsample((8,))
    assert type(y.grad_fn).__name__ == "SelectBackward0"
    y.sum().backward()
    assert a.grad is not None and b.grad is not None and np.all(a.grad.numpy() > 0) and np.all(b.grad.numpy() < 0)


def test_dirichlet_grad_matches_torch_over_its_regimes():
    from engine._ops.gamma import dirichlet_grad_array
    rng = np.random.default_rng(0)
    alpha = np.exp(rng.uniform(np.log(0.05), np.log(100), 4000))
    beta = np.exp(rng.uniform(np.log(0.05), np.log(100), 4000))
    x = np.clip(rng.beta(alpha, beta), 1e-300, 1 - 1e-16)
    mine = dirichlet_grad_array(x, alpha, alpha + beta)
    ref = torch._dirichlet_grad(torch.tensor(x), torch.tensor(alpha), torch.tensor(alpha + beta)).numpy()
    np.testing.assert_allclose(mine, ref, rtol=1e-9, atol=1e-300)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gamma_rsample_gradient_is_torchs_implicit_gradient_on_the_same_draws(dtype):
    """Over all three regimes of torch's formula (x < 0.8, alpha > 8, the rational fit between):
    d/d(alpha, rate) of sum(w * x) against torch._standard_gamma_grad evaluated at the engine's draws."""
    engine.manual_seed(5)
    alpha_np = np.array([0.05, 0.4, 1.0, 2.5, 6.0, 9.0, 30.0, 150.0])
    rate_np = np.array([0.5, 1.0, 2.0, 1.5, 3.0, 0.7, 1.0, 2.0])
    alpha = engine.tensor(alpha_np, dtype=getattr(engine, dtype), requires_grad=True)
    rate = engine.tensor(rate_np, dtype=getattr(engine, dtype), requires_grad=True)
    dist = D.Gamma(alpha, rate)
    assert dist.has_rsample
    x = dist.rsample((64,))
    assert type(x.grad_fn).__name__ == "DivBackward0"
    w = np.random.default_rng(0).standard_normal(tuple(x.shape))
    (x * engine.tensor(w, dtype=x.dtype)).sum().backward()
    tdt = getattr(torch, dtype)
    xs = torch.tensor(x.detach().numpy(), dtype=tdt)
    ta = torch.tensor(alpha_np, dtype=tdt).expand_as(xs)
    tr = torch.tensor(rate_np, dtype=tdt)
    dx_dalpha = torch._standard_gamma_grad(ta, xs * tr) / tr  # x = standard / rate
    want_alpha = (torch.tensor(w, dtype=tdt) * dx_dalpha).sum(0).numpy()
    want_rate = (torch.tensor(w, dtype=tdt) * (-xs / tr)).sum(0).numpy()
    rtol = 1e-4 if dtype == "float32" else 1e-10
    np.testing.assert_allclose(alpha.grad.numpy(), want_alpha, rtol=rtol, atol=1e-6 if dtype == "float32" else 1e-12)
    np.testing.assert_allclose(rate.grad.numpy(), want_rate, rtol=rtol, atol=1e-6 if dtype == "float32" else 1e-12)


def test_standard_gamma_grad_matches_torch_over_a_grid():
    from engine._ops.gamma import standard_gamma_grad_array
    alpha = np.repeat(np.concatenate([np.logspace(-2, 0, 20), np.linspace(1.1, 8, 20), np.logspace(0.91, 2.5, 20)]), 9)
    q = np.tile(np.linspace(0.05, 0.95, 9), 60)
    x = alpha * np.exp((q - 0.5) * 3 / np.sqrt(alpha + 1))  # below, around and above alpha
    mine = standard_gamma_grad_array(x, alpha)
    ref = torch._standard_gamma_grad(torch.tensor(alpha), torch.tensor(x)).numpy()
    np.testing.assert_allclose(mine, ref, rtol=1e-11)


def _moments(draws: np.ndarray, mean: np.ndarray, var: np.ndarray) -> None:
    """The sample mean within 4 standard errors of the true mean, the variance within 10%."""
    n = draws.shape[0]
    np.testing.assert_array_less(np.abs(draws.mean(0) - mean), 4 * np.sqrt(var / n) + 1e-12)
    np.testing.assert_allclose(draws.var(0), var, rtol=0.1)


@pytest.mark.parametrize("name", ["bernoulli", "uniform", "laplace", "exponential", "gamma", "beta", "dirichlet",
                                  "mvn", "onehot"])
def test_sample_statistics(name):
    engine.manual_seed(7)
    dist = {
        "bernoulli": lambda: D.Bernoulli(probs=engine.tensor([0.2, 0.7])),
        "uniform": lambda: D.Uniform(engine.tensor([-1.0, 2.0]), engine.tensor([1.0, 5.0])),
        "laplace": lambda: D.Laplace(engine.tensor([0.5, -2.0]), engine.tensor([1.0, 3.0])),
        "exponential": lambda: D.Exponential(engine.tensor([0.5, 4.0])),
        "gamma": lambda: D.Gamma(engine.tensor([0.3, 5.0]), engine.tensor([1.0, 2.0])),
        "beta": lambda: D.Beta(engine.tensor([0.5, 4.0]), engine.tensor([2.0, 1.5])),
        "dirichlet": lambda: D.Dirichlet(engine.tensor([0.5, 2.0, 4.0])),
        "mvn": lambda: D.MultivariateNormal(engine.tensor([1.0, -1.0]), engine.tensor([[2.0, 0.6], [0.6, 1.0]])),
        "onehot": lambda: D.OneHotCategorical(probs=engine.tensor([0.2, 0.5, 0.3])),
    }[name]()
    draws = dist.sample((40000,)).numpy().astype(np.float64)
    _moments(draws, dist.mean.numpy(), dist.variance.numpy())
    if name == "mvn":
        np.testing.assert_allclose(np.cov(draws.T)[0, 1], 0.6, atol=0.05)


def test_rsample_gradients_flow_to_the_parameters():
    engine.manual_seed(0)
    rate = engine.tensor([2.0], requires_grad=True)
    x = D.Exponential(rate).rsample((20000,))
    x.mean().backward()  # d E[x] / d rate = -1 / rate^2
    assert rate.grad.item() == pytest.approx(-0.25, rel=0.05)
    loc = engine.tensor([0.5, 1.0], requires_grad=True)
    tril = engine.tensor([[1.0, 0.0], [0.5, 2.0]], requires_grad=True)
    z = D.MultivariateNormal(loc, scale_tril=tril).rsample((4,))
    z.sum().backward()
    np.testing.assert_allclose(loc.grad.numpy(), [4.0, 4.0])
    assert tril.grad is not None
    low, high = engine.tensor(0.0, requires_grad=True), engine.tensor(2.0, requires_grad=True)
    D.Uniform(low, high).rsample((10,)).sum().backward()
    assert low.grad.item() + high.grad.item() == pytest.approx(10.0)
    scale = engine.tensor(2.0, requires_grad=True)
    D.Laplace(0.0, scale).rsample((10,)).abs().sum().backward()
    assert scale.grad.item() > 0
    assert not D.Laplace(0.0, scale).sample().requires_grad


REPRS = [
    lambda d, lib: d.Bernoulli(probs=lib.tensor([0.3])),
    lambda d, lib: d.Bernoulli(logits=lib.tensor([0.3, 0.1])),
    lambda d, lib: d.Uniform(0.0, 1.0),
    lambda d, lib: d.Gamma(2.0, lib.tensor([3.0, 1.0])),
    lambda d, lib: d.Dirichlet(lib.ones(3)),
    lambda d, lib: d.MultivariateNormal(lib.zeros(2), lib.eye(2)),
    lambda d, lib: d.Independent(d.Normal(lib.zeros(3), 1.0), 1),
    lambda d, lib: d.OneHotCategorical(lib.ones(3)),
    lambda d, lib: d.Laplace(0.0, 1.0),
    lambda d, lib: d.Exponential(1.0),
    lambda d, lib: d.Beta(1.0, 2.0),
]


@pytest.mark.parametrize("i", range(len(REPRS)))
def test_reprs_as_torch(i):
    e, t = REPRS[i](D, engine), REPRS[i](torch.distributions, torch)
    assert repr(e).replace("engine.", "torch.") == repr(t)
    assert repr(e.support) == repr(t.support)


ERRORS = {
    "bernoulli_probs": lambda d, lib: d.Bernoulli(probs=lib.tensor([0.5, 1.5])),
    "bernoulli_both": lambda d, lib: d.Bernoulli(probs=lib.tensor([0.5]), logits=lib.tensor([0.0])),
    "bernoulli_none": lambda d, lib: d.Bernoulli(),
    "bernoulli_value": lambda d, lib: d.Bernoulli(probs=lib.tensor([0.5])).log_prob(lib.tensor([0.5])),
    "uniform_order": lambda d, lib: d.Uniform(lib.tensor([1.0]), lib.tensor([0.0])),
    "uniform_value": lambda d, lib: d.Uniform(0.0, 1.0).log_prob(lib.tensor([2.0])),
    "exponential_rate": lambda d, lib: d.Exponential(lib.tensor([-1.0])),
    "exponential_value": lambda d, lib: d.Exponential(lib.tensor([1.0])).log_prob(lib.tensor([-1.0])),
    "gamma_rate": lambda d, lib: d.Gamma(lib.tensor([1.0]), lib.tensor([-1.0])),
    "gamma_value": lambda d, lib: d.Gamma(lib.tensor([1.0]), lib.tensor([1.0])).log_prob(lib.tensor([-1.0])),
    "beta_param": lambda d, lib: d.Beta(lib.tensor([1.0]), lib.tensor([-1.0])),
    "beta_value": lambda d, lib: d.Beta(lib.tensor([1.0]), lib.tensor([1.0])).log_prob(lib.tensor([1.5])),
    "dirichlet_param": lambda d, lib: d.Dirichlet(lib.tensor([1.0, -1.0])),
    "dirichlet_scalar": lambda d, lib: d.Dirichlet(lib.tensor(1.0)),
    "dirichlet_value": lambda d, lib: d.Dirichlet(lib.ones(3)).log_prob(lib.tensor([0.5, 0.6, 0.1])),
    "laplace_scale": lambda d, lib: d.Laplace(0.0, lib.tensor([-1.0])),
    "laplace_number_value": lambda d, lib: d.Laplace(0.0, 1.0).log_prob(0.5),
    "mvn_none": lambda d, lib: d.MultivariateNormal(lib.zeros(2)),
    "mvn_two": lambda d, lib: d.MultivariateNormal(lib.zeros(2), lib.eye(2), scale_tril=lib.eye(2)),
    "mvn_not_pd": lambda d, lib: d.MultivariateNormal(lib.zeros(2), lib.tensor([[1.0, 2.0], [2.0, 1.0]])),
    "mvn_bad_tril": lambda d, lib: d.MultivariateNormal(lib.zeros(2), scale_tril=lib.tensor([[1.0, 1.0], [0.0, 1.0]])),
    "mvn_loc_0d": lambda d, lib: d.MultivariateNormal(lib.zeros(()), lib.eye(2)),
    "mvn_cov_1d": lambda d, lib: d.MultivariateNormal(lib.zeros(2), lib.ones(2)),
    "mvn_prec_1d": lambda d, lib: d.MultivariateNormal(lib.zeros(2), precision_matrix=lib.ones(2)),
    "mvn_tril_1d": lambda d, lib: d.MultivariateNormal(lib.zeros(2), scale_tril=lib.ones(2)),
    "mvn_value_shape": lambda d, lib: d.MultivariateNormal(lib.zeros(2), lib.eye(2)).log_prob(lib.zeros(3)),
    "mvn_value_batch": lambda d, lib: d.MultivariateNormal(lib.zeros(4, 2), lib.eye(2)).log_prob(lib.zeros(3, 2)),
    "independent_ndims": lambda d, lib: d.Independent(d.Normal(lib.zeros(3), 1.0), 2),
    "onehot_value": lambda d, lib: d.OneHotCategorical(lib.tensor([0.2, 0.8])).log_prob(lib.tensor([0.5, 0.5])),
    "normal_value_nan": lambda d, lib: d.Normal(0.0, 1.0).log_prob(lib.tensor([float("nan")])),
    "categorical_value": lambda d, lib: d.Categorical(logits=lib.zeros(3)).log_prob(lib.tensor([3])),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_value_errors_as_torch(case):
    with pytest.raises(ValueError) as t_err:
        ERRORS[case](torch.distributions, torch)
    with pytest.raises(ValueError) as e_err:
        ERRORS[case](D, engine)
    assert str(e_err.value).replace("engine.", "torch.") == str(t_err.value)


def test_validation_can_be_turned_off():
    d = D.Exponential(engine.tensor([-1.0]), validate_args=False)
    with np.errstate(invalid="ignore"):
        assert np.isnan(d.log_prob(engine.tensor([-1.0])).item())  # log(-1): no ValueError, as torch
    D.Distribution.set_default_validate_args(False)
    try:
        D.Bernoulli(probs=engine.tensor([1.5]))
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        D.Bernoulli(probs=engine.tensor([1.5]))
    with pytest.raises(ValueError):
        D.Distribution.set_default_validate_args("yes")


def _vae_loss(lib, x, mu, logvar, logits):
    d = _d(lib)
    q = d.Independent(d.Normal(mu, (0.5 * logvar).exp()), 1)
    prior = d.Independent(d.Normal(lib.zeros_like(mu), lib.ones_like(mu)), 1)
    recon = d.Independent(d.Bernoulli(logits=logits), 1).log_prob(x)
    return (d.kl_divergence(q, prior) - recon).mean()


def _ppo_loss(lib, logits, old_logp, actions, adv, mean, log_std, cont_actions):
    d = _d(lib)
    pi = d.Categorical(logits=logits)
    ratio = (pi.log_prob(actions) - old_logp).exp()
    clipped = lib.clamp(ratio, 0.8, 1.2)
    policy_loss = -lib.min(ratio * adv, clipped * adv).mean()
    gauss = d.Independent(d.Normal(mean, log_std.exp()), 1)
    cont = -(gauss.log_prob(cont_actions) * adv).mean()
    return policy_loss + cont - 0.01 * (pi.entropy().mean() + gauss.entropy().mean())


def test_vae_and_ppo_snippets_give_torchs_loss_and_gradients():
    rng = np.random.default_rng(11)
    vae = [(rng.uniform(size=(4, 6)) < 0.4) * 1.0, rng.standard_normal((4, 3)), rng.standard_normal((4, 3)) * 0.3,
           rng.standard_normal((4, 6))]
    ppo = [rng.standard_normal((5, 4)), rng.standard_normal(5) - 1.4, rng.integers(0, 4, 5),
           rng.standard_normal(5), rng.standard_normal((5, 2)), rng.standard_normal((5, 2)) * 0.2,
           rng.standard_normal((5, 2))]
    for fn, arrays, grad_idx in ((_vae_loss, vae, (1, 2, 3)), (_ppo_loss, ppo, (0, 4, 5))):
        results = []
        for lib in (engine, torch):
            ts = [lib.tensor(a, dtype=lib.int64 if a.dtype.kind == "i" else lib.float32,
                             requires_grad=i in grad_idx) for i, a in enumerate(arrays)]
            loss = fn(lib, *ts)
            loss.backward()
            results.append((loss.item(), [ts[i].grad.numpy() for i in grad_idx]))
        (el, eg), (tl, tg) = results
        assert el == pytest.approx(tl, rel=1e-5)
        for e, t in zip(eg, tg):
            np.testing.assert_allclose(e, t, rtol=1e-4, atol=1e-6)


def _transformed(d, lib, kind, m, s):
    t = importlib.import_module(f"{lib.__name__}.distributions.transforms")
    if kind == "tanh":
        return d.TransformedDistribution(d.Normal(m, s), [t.TanhTransform()])
    if kind == "sigmoid":
        return d.TransformedDistribution(d.Normal(m, s), t.SigmoidTransform())
    if kind == "affine_exp":
        return d.TransformedDistribution(d.Normal(m, s), [t.AffineTransform(0.5, -2.0), t.ExpTransform().inv.inv])
    if kind == "affine_tensor":
        return d.TransformedDistribution(d.Normal(m, s), [t.AffineTransform(m.detach() * 0 + 1.0, s.detach() + 1)])
    return d.LogNormal(m, s)


TRANSFORMED = {  # kind -> values to score, stats torch defines
    "tanh": (np.tanh(REAL * 0.4), ("log_prob",)),
    "sigmoid": (UNIT, ("log_prob", "cdf", "icdf")),
    "affine_exp": (POS, ("log_prob", "cdf", "icdf")),
    "affine_tensor": (REAL, ("log_prob", "cdf", "icdf")),
    "lognormal": (POS, ("log_prob", "cdf", "icdf", "entropy", "mean", "mode", "variance")),
}


@pytest.mark.parametrize("kind,stat", [(k, s) for k in sorted(TRANSFORMED) for s in TRANSFORMED[k][1]])
def test_transformed_distributions_match_torch(kind, stat):
    outs = []
    for lib in (engine, torch):
        m, s = _t(lib, LOC, lib.float64, True), _t(lib, POS, lib.float64, True)
        dist = _transformed(_d(lib), lib, kind, m, s)
        if stat in ("log_prob", "cdf"):
            out = getattr(dist, stat)(_t(lib, TRANSFORMED[kind][0], lib.float64))
        elif stat == "icdf":
            out = dist.icdf(_t(lib, UNIT, lib.float64))
        elif stat == "entropy":
            out = dist.entropy()
        else:
            out = getattr(dist, stat)
        grads = lib.autograd.grad((out * _t(lib, np.linspace(-1, 1, 6).reshape(2, 3), lib.float64)).sum(), (m, s))
        outs.append((out.detach().numpy(), [g.numpy() for g in grads], str(dist.support), repr(dist),
                     tuple(dist.sample((4,)).shape), dist.has_rsample))
    (eo, eg, *erest), (to, tg, *trest) = outs
    np.testing.assert_allclose(eo, to, rtol=1e-9, atol=1e-12)
    for e, t in zip(eg, tg):
        np.testing.assert_allclose(e, t, rtol=1e-8, atol=1e-10)
    assert erest == trest


def test_tanh_cache_returns_the_exact_preimage_and_sac_log_prob_matches_torch():
    from engine.distributions.transforms import TanhTransform
    u = engine.tensor([0.3, 8.0, -20.0], dtype=engine.float64)
    t = TanhTransform(cache_size=1)
    y = t(u)
    assert t.inv(y) is u  # atanh(tanh(-20)) is -inf in float64: tanh(-20) rounds to -1
    uncached = TanhTransform()
    assert not np.isfinite(uncached.inv(uncached(u)).numpy()[2])
    results = []
    for lib in (engine, torch):
        d = _d(lib)
        tr = importlib.import_module(f"{lib.__name__}.distributions.transforms")
        mu = lib.tensor([0.1, 0.5], dtype=lib.float64, requires_grad=True)
        log_std = lib.tensor([-0.3, 0.2], dtype=lib.float64, requires_grad=True)
        pi = d.TransformedDistribution(d.Normal(mu, log_std.exp()), [tr.TanhTransform(cache_size=1)])
        pre = mu + log_std.exp() * lib.tensor([0.7, -1.3], dtype=lib.float64)  # a fixed "rsample"
        action = pi.transforms[0](pre)
        logp = pi.log_prob(action).sum()
        loss = 0.2 * logp - action.sum()
        loss.backward()
        results.append((loss.item(), mu.grad.numpy(), log_std.grad.numpy()))
    assert results[0][0] == pytest.approx(results[1][0], rel=1e-12)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-10)
    np.testing.assert_allclose(results[0][2], results[1][2], rtol=1e-10)


def test_transformed_errors_kl_and_reprs_as_torch():
    cases = {
        "not_a_transform": lambda d, tr, lib: d.TransformedDistribution(d.Normal(0.0, 1.0), 3),
        "list_of_non_transforms": lambda d, tr, lib: d.TransformedDistribution(d.Normal(0.0, 1.0), [3]),
        "cache_size": lambda d, tr, lib: tr.TanhTransform(cache_size=2),
        "lognormal_value": lambda d, tr, lib: d.LogNormal(0.0, 1.0).log_prob(lib.tensor([-1.0])),
        "lognormal_scale": lambda d, tr, lib: d.LogNormal(0.0, lib.tensor([-1.0])),
    }
    for name, call in cases.items():
        got = []
        for lib in (engine, torch):
            tr = importlib.import_module(f"{lib.__name__}.distributions.transforms")
            with pytest.raises(ValueError) as err:
                call(_d(lib), tr, lib)
            got.append(str(err.value).replace("engine.", "torch."))
        assert got[0] == got[1], name
    kls, reprs = [], []
    for lib in (engine, torch):
        d = _d(lib)
        tr = importlib.import_module(f"{lib.__name__}.distributions.transforms")
        a, b = _t(lib, LOC, lib.float64), _t(lib, POS, lib.float64)
        kls.append(d.kl_divergence(d.LogNormal(a, b), d.LogNormal(b, b + 1)).numpy())
        with pytest.raises(NotImplementedError):
            d.kl_divergence(d.TransformedDistribution(d.Normal(a, b), tr.ExpTransform()),
                            d.TransformedDistribution(d.Normal(a, b), tr.SigmoidTransform()))
        reprs.append([repr(tr.ComposeTransform([tr.ExpTransform(), tr.AffineTransform(1.0, 2.0)])),
                      repr(tr.ExpTransform().inv), tr.AffineTransform(0.0, -2.0).sign, tr.ExpTransform().sign,
                      tr.AffineTransform(1.0, 2.0) == tr.AffineTransform(1.0, 2.0),
                      tr.AffineTransform(1.0, 2.0) == tr.AffineTransform(1.0, 3.0),
                      tr.ExpTransform().inv == tr.ExpTransform().inv, str(tr.ExpTransform().inv.codomain)])
    np.testing.assert_allclose(kls[0], kls[1], rtol=1e-12)
    assert reprs[0] == reprs[1]
