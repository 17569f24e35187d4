"""engine.distributions against torch.distributions: Binomial, Poisson, StudentT, Geometric,
NegativeBinomial, Cauchy, HalfNormal, HalfCauchy, Gumbel, RelaxedBernoulli/RelaxedOneHotCategorical,
MixtureSameFamily, LowRankMultivariateNormal, Distribution.expand and enumerate_support.
log_prob/entropy/mean/variance/cdf/icdf values and parameter gradients, sample shapes and seeded
statistics, rsample gradients, reprs and torch's validation messages."""

from __future__ import annotations

import numpy as np
import pytest

import engine
import engine.distributions as D

torch = pytest.importorskip("torch")
TD = torch.distributions

RNG = np.random.default_rng(11)
POS = RNG.uniform(0.5, 3.0, (2, 3))
POS2 = RNG.uniform(0.5, 3.0, (2, 3))
REAL = RNG.standard_normal((2, 3))
PROB = RNG.uniform(0.1, 0.9, (2, 3))
LOGIT = RNG.standard_normal((2, 3))
DF = np.array([[0.8, 1.5, 2.5], [3.0, 5.0, 10.0]])
COUNTS = np.array([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]])
NONNEG = np.abs(RNG.standard_normal((2, 3))) + 0.05


pytestmark = pytest.mark.usefixtures("torch_validating")


def leaves(*arrays):
    e = [engine.tensor(a, requires_grad=True) for a in arrays]
    t = [torch.tensor(a, requires_grad=True) for a in arrays]
    return e, t


def close(e, t, atol=1e-6, rtol=1e-6):
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), atol=atol, rtol=rtol, equal_nan=True)


def grads_agree(e_out, t_out, e_in, t_in, atol=1e-6):
    """Gradients of a random-weighted sum of the finite outputs w.r.t. every parameter."""
    w = np.random.default_rng(5).standard_normal(tuple(t_out.shape))
    finite = np.isfinite(t_out.detach().numpy())
    w = np.where(finite, w, 0.0)
    (e_out.masked_fill(engine.tensor(~finite), 0) * engine.tensor(w)).sum().backward()
    (t_out.masked_fill(torch.tensor(~finite), 0) * torch.tensor(w)).sum().backward()
    for a, b in zip(e_in, t_in):
        if b.grad is None:
            assert a.grad is None or np.all(a.grad.numpy() == 0)
            continue
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), atol=atol, rtol=1e-5)
        a.grad, b.grad = None, None


CASES = {
    "Binomial": (lambda m, p: m.Binomial(engine.tensor(COUNTS + 5) if m is D else torch.tensor(COUNTS + 5),
                                         probs=p[0]), [PROB], COUNTS),
    "Binomial_logits": (lambda m, p: m.Binomial(10, logits=p[0]), [LOGIT], COUNTS),
    "Poisson": (lambda m, p: m.Poisson(p[0]), [POS], COUNTS),
    "StudentT": (lambda m, p: m.StudentT(p[0], p[1], p[2]), [DF, REAL, POS], REAL * 2),
    "Geometric": (lambda m, p: m.Geometric(p[0]), [PROB], COUNTS),
    "Geometric_logits": (lambda m, p: m.Geometric(logits=p[0]), [LOGIT], COUNTS),
    "NegativeBinomial": (lambda m, p: m.NegativeBinomial(p[0], probs=p[1]), [POS, PROB], COUNTS),
    "NegativeBinomial_logits": (lambda m, p: m.NegativeBinomial(p[0], logits=p[1]), [POS, LOGIT], COUNTS),
    "Cauchy": (lambda m, p: m.Cauchy(p[0], p[1]), [REAL, POS], REAL * 3),
    "HalfNormal": (lambda m, p: m.HalfNormal(p[0]), [POS], NONNEG),
    "HalfCauchy": (lambda m, p: m.HalfCauchy(p[0]), [POS], NONNEG),
    "Gumbel": (lambda m, p: m.Gumbel(p[0], p[1]), [REAL, POS], REAL * 2),
    "RelaxedBernoulli": (lambda m, p: m.RelaxedBernoulli(p[1][0, 0], probs=p[0]), [PROB, POS], PROB * 0.9 + 0.05),
    "LogitRelaxedBernoulli": (lambda m, p: m.relaxed_bernoulli.LogitRelaxedBernoulli(p[1][0, 0], logits=p[0]),
                              [LOGIT, POS], REAL),
}
METHODS = ("mean", "variance", "mode", "stddev")


def build(name, params):
    make, _, _ = CASES[name]
    return make(D, params[0]), make(TD, params[1])


@pytest.mark.parametrize("name", sorted(CASES))
def test_log_prob_moments_entropy_and_gradients(name):
    _, arrays, value = CASES[name]
    e_in, t_in = leaves(*arrays)
    ed, td = build(name, (e_in, t_in))
    assert ed.batch_shape == tuple(td.batch_shape) and ed.event_shape == tuple(td.event_shape)
    assert repr(ed) == repr(td).replace("torch.Size", "engine.Size")
    ev, tv = engine.tensor(value), torch.tensor(value)
    e_lp, t_lp = ed.log_prob(ev), td.log_prob(tv)
    close(e_lp, t_lp)
    grads_agree(e_lp, t_lp, e_in, t_in)
    for attr in METHODS:
        ed, td = build(name, (e_in, t_in))  # fresh: lazily computed probs/logits hold a graph
        try:
            t_val = getattr(td, attr)
        except NotImplementedError:
            continue
        e_val = getattr(ed, attr)
        close(e_val, t_val)
        if t_val.requires_grad:
            grads_agree(e_val, t_val, e_in, t_in)
    for method, arg in (("entropy", None), ("cdf", tv), ("icdf", torch.tensor(PROB))):
        ed, td = build(name, (e_in, t_in))
        try:
            t_val = getattr(td, method)() if arg is None else getattr(td, method)(arg)
        except NotImplementedError:
            with pytest.raises(NotImplementedError):
                getattr(ed, method)() if arg is None else getattr(ed, method)(engine.tensor(arg.numpy()))
            continue
        e_val = getattr(ed, method)() if arg is None else getattr(ed, method)(engine.tensor(arg.numpy()))
        close(e_val, t_val, atol=1e-5)
        grads_agree(e_val, t_val, e_in, t_in, atol=1e-5)


@pytest.mark.parametrize("name", sorted(CASES))
def test_sample_shapes_support_and_seeded_statistics(name):
    _, arrays, _ = CASES[name]
    e_in, t_in = leaves(*arrays)
    ed, td = build(name, (e_in, t_in))
    engine.manual_seed(0)
    s = ed.sample((4,))
    assert tuple(s.shape) == tuple(td.sample((4,)).shape) == (4, 2, 3)
    assert s.dtype == engine.float64 and not s.requires_grad
    assert bool(ed.support.check(s).all())
    engine.manual_seed(0)
    again = ed.sample((4,))
    np.testing.assert_array_equal(s.numpy(), again.numpy())
    if td.has_rsample:
        r = ed.rsample((3,))
        assert r.requires_grad and tuple(r.shape) == (3, 2, 3)
        r.sum().backward()
        assert any(t.grad is not None for t in e_in)
    try:
        mean, var = td.mean.detach().numpy(), td.variance.detach().numpy()
    except NotImplementedError:
        return
    if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(var))):
        return
    engine.manual_seed(1)
    big = ed.sample((40000,)).numpy()
    np.testing.assert_allclose(big.mean(0), mean, atol=6 * np.sqrt(var / 40000).max() + 1e-3)


def test_studentt_rsample_differentiates_df_and_matches_moments():
    df = engine.tensor([4.0, 6.0], requires_grad=True)
    engine.manual_seed(3)
    x = D.StudentT(df, 1.0, 2.0).rsample((50000,))
    x.mean().backward()
    assert df.grad is not None
    var = D.StudentT(engine.tensor([4.0, 6.0]), 1.0, 2.0).variance.numpy()
    np.testing.assert_allclose(x.detach().numpy().var(0), var, rtol=0.1)


# --- relaxed one-hot categorical, mixture, low-rank normal ------------------------------------------

def test_relaxed_one_hot_categorical():
    logits = RNG.standard_normal((2, 4))
    (e_l, e_t), (t_l, t_t) = leaves(logits, np.array(0.7))
    ed = D.RelaxedOneHotCategorical(e_t, logits=e_l)
    td = TD.RelaxedOneHotCategorical(t_t, logits=t_l)
    assert ed.event_shape == (4,) and ed.batch_shape == (2,)
    value = np.random.default_rng(2).dirichlet(np.ones(4), size=2)
    e_lp, t_lp = ed.log_prob(engine.tensor(value)), td.log_prob(torch.tensor(value))
    close(e_lp, t_lp, atol=1e-6)
    grads_agree(e_lp, t_lp, [e_l, e_t], [t_l, t_t])
    ed = D.RelaxedOneHotCategorical(e_t, logits=e_l)  # fresh: the first backward freed its graph
    engine.manual_seed(0)
    s = ed.rsample((5,))
    assert tuple(s.shape) == (5, 2, 4)
    np.testing.assert_allclose(s.detach().numpy().sum(-1), 1.0, atol=1e-9)
    (s * engine.arange(4.0, dtype=engine.float64)).sum().backward()
    assert e_l.grad is not None and e_t.grad is not None
    # low temperature: draws approach one-hot vectors with the categorical's frequencies
    probs = np.array([0.2, 0.5, 0.3])
    engine.manual_seed(4)
    cold = D.RelaxedOneHotCategorical(engine.tensor(0.05), probs=engine.tensor(probs)).sample((20000,)).numpy()
    assert np.mean(cold.max(-1) > 0.95) > 0.9
    np.testing.assert_allclose(np.bincount(cold.argmax(-1), minlength=3) / 20000, probs, atol=0.02)
    ep = D.relaxed_categorical.ExpRelaxedCategorical(engine.tensor(0.5), probs=engine.tensor(probs))
    tp = TD.relaxed_categorical.ExpRelaxedCategorical(torch.tensor(0.5), probs=torch.tensor(probs))
    v = np.log(np.array([0.1, 0.6, 0.3]))
    close(ep.log_prob(engine.tensor(v)), tp.log_prob(torch.tensor(v)))


def _mixture(m, w, mu, sigma):
    return m.MixtureSameFamily(m.Categorical(logits=w), m.Normal(mu, sigma))


def test_mixture_same_family_univariate():
    w, mu, sigma = RNG.standard_normal((2, 3)), RNG.standard_normal((2, 3)), RNG.uniform(0.5, 2, (2, 3))
    e_in, t_in = leaves(w, mu, sigma)
    ed, td = _mixture(D, *e_in), _mixture(TD, *t_in)
    assert ed.batch_shape == (2,) and ed.event_shape == ()
    assert repr(ed) == repr(td).replace("torch.Size", "engine.Size")
    x = RNG.standard_normal((5, 2))
    for attr in ("mean", "variance"):
        ed, td = _mixture(D, *e_in), _mixture(TD, *t_in)  # fresh: each backward frees the graph
        e_v, t_v = getattr(ed, attr), getattr(td, attr)
        close(e_v, t_v)
        grads_agree(e_v, t_v, e_in, t_in)
    for method in ("log_prob", "cdf"):
        ed, td = _mixture(D, *e_in), _mixture(TD, *t_in)
        e_v, t_v = getattr(ed, method)(engine.tensor(x)), getattr(td, method)(torch.tensor(x))
        close(e_v, t_v)
        grads_agree(e_v, t_v, e_in, t_in)
    engine.manual_seed(0)
    s = ed.sample((30000,))
    assert tuple(s.shape) == (30000, 2) and not s.requires_grad
    np.testing.assert_allclose(s.numpy().mean(0), td.mean.detach().numpy(), atol=0.05)
    np.testing.assert_allclose(s.numpy().var(0), td.variance.detach().numpy(), rtol=0.06)


def test_mixture_same_family_of_multivariate_components_and_expand():
    w = RNG.standard_normal(3)
    mu, sd = RNG.standard_normal((3, 2)), RNG.uniform(0.5, 1.5, (3, 2))

    def make(m, lib):
        comp = m.Independent(m.Normal(lib.tensor(mu), lib.tensor(sd)), 1)
        return m.MixtureSameFamily(m.Categorical(logits=lib.tensor(w)), comp)

    ed, td = make(D, engine), make(TD, torch)
    assert ed.batch_shape == () and ed.event_shape == (2,)
    x = RNG.standard_normal((4, 2))
    close(ed.log_prob(engine.tensor(x)), td.log_prob(torch.tensor(x)))
    close(ed.mean, td.mean)
    close(ed.variance, td.variance)
    engine.manual_seed(1)
    assert tuple(ed.sample((6,)).shape) == (6, 2)
    e_big, t_big = ed.expand((5,)), td.expand((5,))
    assert e_big.batch_shape == (5,) and e_big.component_distribution.batch_shape == (5, 3)
    close(e_big.log_prob(engine.tensor(x[:1])), t_big.log_prob(torch.tensor(x[:1])))


def test_mixture_errors_match_torch():
    def both(fn):
        with pytest.raises(ValueError) as te:
            fn(TD, torch)
        with pytest.raises(ValueError) as ee:
            fn(D, engine)
        assert str(ee.value) == str(te.value).replace("torch.Size", "engine.Size")

    both(lambda m, lib: m.MixtureSameFamily(m.Normal(lib.zeros(3), lib.ones(3)), m.Normal(lib.zeros(3), lib.ones(3))))
    both(lambda m, lib: m.MixtureSameFamily(m.Categorical(lib.ones(4)), m.Normal(lib.zeros(3), lib.ones(3))))
    both(lambda m, lib: m.MixtureSameFamily(m.Categorical(lib.ones(2, 3)), m.Normal(lib.zeros(4, 3), lib.ones(4, 3))))
    both(lambda m, lib: m.MixtureSameFamily(m.Categorical(lib.ones(3)), "normal"))


def test_low_rank_multivariate_normal():
    loc, w, d = RNG.standard_normal((2, 4)), RNG.standard_normal((4, 2)), RNG.uniform(0.5, 2.0, (2, 4))
    e_in, t_in = leaves(loc, w, d)
    ed = D.LowRankMultivariateNormal(*e_in)
    td = TD.LowRankMultivariateNormal(*t_in)
    assert ed.batch_shape == (2,) and ed.event_shape == (4,)
    x = RNG.standard_normal((3, 2, 4))
    e_lp, t_lp = ed.log_prob(engine.tensor(x)), td.log_prob(torch.tensor(x))
    close(e_lp, t_lp)
    grads_agree(e_lp, t_lp, e_in, t_in)
    ed, td = D.LowRankMultivariateNormal(*e_in), TD.LowRankMultivariateNormal(*t_in)
    e_h, t_h = ed.entropy(), td.entropy()
    close(e_h, t_h)
    grads_agree(e_h, t_h, e_in, t_in)
    for attr in ("variance", "covariance_matrix", "precision_matrix", "scale_tril"):
        close(getattr(ed, attr), getattr(td, attr), atol=1e-9)
    # the same distribution as a full MultivariateNormal
    full = D.MultivariateNormal(engine.tensor(loc), covariance_matrix=ed.covariance_matrix.detach())
    close(full.log_prob(engine.tensor(x)), t_lp)
    ed = D.LowRankMultivariateNormal(*e_in)
    engine.manual_seed(0)
    s = ed.rsample((40000,))
    assert tuple(s.shape) == (40000, 2, 4)
    cov = np.cov(s.detach().numpy()[:, 0].T)
    np.testing.assert_allclose(cov, td.covariance_matrix.detach().numpy()[0], atol=0.08)
    s[:10].sum().backward()
    assert all(t.grad is not None for t in e_in)


def test_low_rank_errors_match_torch():
    def both(*args):
        with pytest.raises(ValueError) as te:
            TD.LowRankMultivariateNormal(*[torch.tensor(a) for a in args])
        with pytest.raises(ValueError) as ee:
            D.LowRankMultivariateNormal(*[engine.tensor(a) for a in args])
        assert str(ee.value) == str(te.value).replace("torch.Size", "engine.Size")

    both(np.float64(1.0), np.ones((3, 1)), np.ones(3))
    both(np.zeros(3), np.ones(3), np.ones(3))
    both(np.zeros(3), np.ones((4, 1)), np.ones(3))
    both(np.zeros(3), np.ones((3, 1)), np.ones(4))
    both(np.zeros((2, 3)), np.ones((4, 3, 1)), np.ones(3))


# --- expand and enumerate_support ------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(CASES) + ["Normal", "Categorical", "Beta", "MultivariateNormal"])
def test_expand_matches_torch(name):
    extra = {
        "Normal": (lambda m, p: m.Normal(p[0][0], p[1][0]), [REAL, POS], REAL),
        "Categorical": (lambda m, p: m.Categorical(logits=p[0][0]), [LOGIT], np.array([[0.0], [2.0]])),
        "Beta": (lambda m, p: m.Beta(p[0][0], p[1][0]), [POS, POS2], PROB),
        "MultivariateNormal": (lambda m, p: m.MultivariateNormal(p[0][0], scale_tril=p[1]),
                               [REAL, np.diag([1.0, 2.0, 0.5])], REAL[0]),
    }
    make, arrays, value = extra.get(name) or CASES[name]
    e_in, t_in = leaves(*arrays)
    ed, td = make(D, e_in), make(TD, t_in)
    shape = (4,) + tuple(td.batch_shape) if name not in ("Normal", "Beta") else (2, 3)
    e_big, t_big = ed.expand(shape), td.expand(shape)
    assert type(e_big) is type(ed) and e_big.batch_shape == tuple(t_big.batch_shape)
    assert e_big.event_shape == tuple(t_big.event_shape)
    lp_value = value if name not in ("Categorical",) else np.array([0.0, 2.0, 1.0, 0.0])
    e_lp, t_lp = e_big.log_prob(engine.tensor(lp_value)), t_big.log_prob(torch.tensor(lp_value))
    close(e_lp, t_lp)
    grads_agree(e_lp, t_lp, e_in, t_in)
    engine.manual_seed(0)
    assert tuple(e_big.sample((2,)).shape) == (2,) + tuple(t_big.batch_shape) + tuple(t_big.event_shape)
    if tuple(td.batch_shape):  # a batch shape that does not expand: torch's RuntimeError
        with pytest.raises(RuntimeError):
            td.expand((5, 7))
        with pytest.raises(RuntimeError):
            ed.expand((5, 7))


def test_enumerate_support_matches_torch():
    cases = [
        (lambda m, lib: m.Bernoulli(lib.tensor(PROB))),
        (lambda m, lib: m.Categorical(lib.tensor(PROB))),
        (lambda m, lib: m.OneHotCategorical(lib.tensor(PROB))),
        (lambda m, lib: m.Binomial(4, lib.tensor(PROB))),
    ]
    for make in cases:
        ed, td = make(D, engine), make(TD, torch)
        assert ed.has_enumerate_support and td.has_enumerate_support
        for expand in (True, False):
            e_s, t_s = ed.enumerate_support(expand), td.enumerate_support(expand)
            assert tuple(e_s.shape) == tuple(t_s.shape) and str(e_s.dtype)[7:] == str(t_s.dtype)[6:]
            np.testing.assert_array_equal(e_s.numpy(), t_s.numpy())
        # the log-probabilities over the support sum to one
        total = ed.log_prob(ed.enumerate_support()).exp().sum(0).numpy()
        np.testing.assert_allclose(total, 1.0, atol=1e-6)
    for m, lib in ((D, engine), (TD, torch)):
        with pytest.raises(NotImplementedError, match="Inhomogeneous total count not supported by `enumerate_support`."):
            m.Binomial(lib.tensor([2.0, 3.0]), lib.tensor([0.5, 0.5])).enumerate_support()
        with pytest.raises(NotImplementedError, match="Inhomogeneous total count not supported by `entropy`."):
            m.Binomial(lib.tensor([2.0, 3.0]), lib.tensor([0.5, 0.5])).entropy()
    with pytest.raises(NotImplementedError):
        D.Normal(0.0, 1.0).enumerate_support()


# --- validation messages ------------------------------------------------------------------------------

@pytest.mark.parametrize("make,value", [
    (lambda m, lib: m.Binomial(lib.tensor([2.5]), lib.tensor([0.3])), None),
    (lambda m, lib: m.Binomial(lib.tensor([5.0]), lib.tensor([1.3])), None),
    (lambda m, lib: m.Binomial(lib.tensor([5.0]), lib.tensor([0.3])), [6.0]),
    (lambda m, lib: m.Binomial(lib.tensor([5.0]), lib.tensor([0.3])), [1.5]),
    (lambda m, lib: m.Binomial(5, probs=lib.tensor([0.3]), logits=lib.tensor([0.3])), None),
    (lambda m, lib: m.Poisson(lib.tensor([-1.0])), None),
    (lambda m, lib: m.Poisson(lib.tensor([1.0])), [-1.0]),
    (lambda m, lib: m.Poisson(lib.tensor([1.0])), [0.5]),
    (lambda m, lib: m.Geometric(lib.tensor([0.0, 0.5])), None),
    (lambda m, lib: m.Geometric(lib.tensor([0.5])), [-2.0]),
    (lambda m, lib: m.NegativeBinomial(lib.tensor([2.0]), lib.tensor([1.0])), None),
    (lambda m, lib: m.NegativeBinomial(lib.tensor([-2.0]), lib.tensor([0.5])), None),
    (lambda m, lib: m.StudentT(lib.tensor([0.0])), None),
    (lambda m, lib: m.StudentT(lib.tensor([1.0]), 0.0, lib.tensor([-1.0])), None),
    (lambda m, lib: m.Cauchy(lib.tensor([0.0]), lib.tensor([0.0])), None),
    (lambda m, lib: m.HalfNormal(lib.tensor([-1.0])), None),
    (lambda m, lib: m.HalfNormal(lib.tensor([1.0])), [-0.5]),
    (lambda m, lib: m.HalfCauchy(lib.tensor([1.0])), [-0.5]),
    (lambda m, lib: m.Gumbel(lib.tensor([0.0]), lib.tensor([-1.0])), None),
    (lambda m, lib: m.RelaxedBernoulli(lib.tensor(0.5), lib.tensor([0.3])), [1.5]),
    (lambda m, lib: m.RelaxedBernoulli(lib.tensor(0.5), lib.tensor([1.3])), None),
    (lambda m, lib: m.RelaxedOneHotCategorical(lib.tensor(0.5), lib.tensor([0.3, 0.7])), [0.5, 0.6]),
])
def test_validation_messages_match_torch(make, value):
    def run(m, lib):
        d = make(m, lib)
        if value is not None:
            d.log_prob(lib.tensor(value))

    with pytest.raises(ValueError) as te:
        run(TD, torch)
    with pytest.raises(ValueError) as ee:
        run(D, engine)
    assert str(ee.value) == str(te.value).replace("torch.Size", "engine.Size")


_LOC, _SC = RNG.standard_normal(3), RNG.uniform(0.5, 2, 3)
EXPAND_MORE = {
    "LogNormal": (lambda m, lib: m.LogNormal(lib.tensor(_LOC), lib.tensor(_SC)), np.abs(_LOC) + 0.1),
    "Independent": (lambda m, lib: m.Independent(m.Normal(lib.tensor(_LOC), lib.tensor(_SC)), 1), _LOC * 2),
    "Dirichlet": (lambda m, lib: m.Dirichlet(lib.tensor(_SC)), np.array([0.2, 0.3, 0.5])),
    "Uniform": (lambda m, lib: m.Uniform(lib.tensor(_LOC), lib.tensor(_LOC + _SC)), _LOC + 0.3 * _SC),
    "OneHotCategorical": (lambda m, lib: m.OneHotCategorical(lib.tensor(_SC)), np.array([0.0, 1.0, 0.0])),
    "Bernoulli": (lambda m, lib: m.Bernoulli(lib.tensor(_SC / 3)), np.array([0.0, 1.0, 1.0])),
    "RelaxedOneHotCategorical": (lambda m, lib: m.RelaxedOneHotCategorical(lib.tensor(0.5), lib.tensor(_SC)),
                                 np.array([0.2, 0.3, 0.5])),
    "Gamma": (lambda m, lib: m.Gamma(lib.tensor(_SC), lib.tensor(_SC)), _SC),
    "Laplace": (lambda m, lib: m.Laplace(lib.tensor(_LOC), lib.tensor(_SC)), _SC),
}


@pytest.mark.parametrize("name", sorted(EXPAND_MORE))
def test_expand_of_the_earlier_families_matches_torch(name):
    """expand is generic (every batch-shaped tensor and inner distribution is expanded): the
    families from before this round, wrappers included, expand as torch's do."""
    make, value = EXPAND_MORE[name]
    ed, td = make(D, engine), make(TD, torch)
    shape = (4,) + tuple(td.batch_shape)
    e_big, t_big = ed.expand(shape), td.expand(shape)
    assert type(e_big) is type(ed) and ed.batch_shape == tuple(td.batch_shape)
    assert e_big.batch_shape == tuple(t_big.batch_shape) and e_big.event_shape == tuple(t_big.event_shape)
    close(e_big.log_prob(engine.tensor(value)), t_big.log_prob(torch.tensor(value)))
    engine.manual_seed(0)
    assert tuple(e_big.sample((2,)).shape) == tuple(t_big.sample((2,)).shape)
