"""parametrizations.orthogonal (matrix_exp/cayley/householder, with and without trivialization), the
new-style parametrizations.spectral_norm, parametrize.cached, type_before_parametrizations and
transfer_parametrizations_and_params against torch: weights, gradients, buffers, state-dict keys
and torch's errors."""

from __future__ import annotations

import numpy as np
import pytest

import engine
from engine.nn.utils import parametrizations as EP
from engine.nn.utils import parametrize as EZ

torch = pytest.importorskip("torch")
TP = torch.nn.utils.parametrizations
TZ = torch.nn.utils.parametrize


def linears(shape, seed=0, dtype=np.float32):
    """A torch and an engine Linear (no bias) with the same (out, in) = ``shape`` weight."""
    w = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    t = torch.nn.Linear(shape[1], shape[0], bias=False)
    e = engine.nn.Linear(shape[1], shape[0], bias=False)
    t.weight = torch.nn.Parameter(torch.tensor(w))
    e.weight = engine.nn.Parameter(engine.tensor(w))
    return t, e


def load_from_torch(e, t):
    e.load_state_dict({k: engine.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})


def weight_and_grad_agree(t, e, original_name="original", atol=2e-6):
    tw, ew = t.weight, e.weight
    np.testing.assert_allclose(ew.detach().numpy(), tw.detach().numpy(), atol=atol)
    g = np.random.default_rng(2).standard_normal(tuple(tw.shape)).astype(np.float32)
    (tw * torch.tensor(g)).sum().backward()
    (ew * engine.tensor(g)).sum().backward()
    t_orig = getattr(t.parametrizations.weight, original_name)
    e_orig = getattr(e.parametrizations.weight, original_name)
    np.testing.assert_allclose(e_orig.grad.numpy(), t_orig.grad.numpy(), atol=10 * atol)


# --- orthogonal ------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(4, 4), (6, 3), (3, 6)])
@pytest.mark.parametrize("orth_map", ["matrix_exp", "cayley", "householder"])
@pytest.mark.parametrize("triv", [True, False])
def test_orthogonal_matches_torch(shape, orth_map, triv):
    t, e = linears(shape)
    TP.orthogonal(t, orthogonal_map=orth_map, use_trivialization=triv)
    EP.orthogonal(e, orthogonal_map=orth_map, use_trivialization=triv)
    assert list(e.state_dict()) == list(t.state_dict())
    assert type(e).__name__ == type(t).__name__ == "ParametrizedLinear"
    if shape[0] != shape[1] and triv:  # torch completes a thin basis with randn: copy its state
        load_from_torch(e, t)
    # move off the initial point so the map itself (not just the base) is exercised
    d = np.random.default_rng(1).standard_normal(shape).astype(np.float32) * 0.3
    np.fill_diagonal(d, 0.0)  # householder reads the diagonal's integer part as the reflectors' signs
    with torch.no_grad():
        t.parametrizations.weight.original.add_(torch.tensor(d))
    with engine.no_grad():
        e.parametrizations.weight.original.add_(engine.tensor(d))
    weight_and_grad_agree(t, e)
    q = e.weight.detach().numpy()
    gram = q.T @ q if shape[0] >= shape[1] else q @ q.T
    np.testing.assert_allclose(gram, np.eye(min(shape)), atol=1e-5)


def test_orthogonal_default_map_batch_and_assignment():
    w = np.random.default_rng(4).standard_normal((2, 5, 5)).astype(np.float32)
    tm, em = torch.nn.Module(), engine.nn.Module()
    tm.weight = torch.nn.Parameter(torch.tensor(w))
    em.weight = engine.nn.Parameter(engine.tensor(w))
    TP.orthogonal(tm)
    EP.orthogonal(em)
    assert em.parametrizations.weight[0].orthogonal_map == "matrix_exp"
    np.testing.assert_allclose(em.weight.detach().numpy(), tm.weight.detach().numpy(), atol=2e-6)
    # assigning an orthogonal matrix keeps it (it becomes the new base)
    q = np.linalg.qr(np.random.default_rng(5).standard_normal((2, 5, 5)))[0].astype(np.float32)
    with torch.no_grad():
        tm.weight = torch.tensor(q)
    with engine.no_grad():
        em.weight = engine.tensor(q)
    np.testing.assert_allclose(em.weight.detach().numpy(), tm.weight.detach().numpy(), atol=2e-6)
    np.testing.assert_allclose(em.weight.detach().numpy(), q, atol=2e-6)
    t, e = linears((6, 3))
    assert EP.orthogonal(e).parametrizations.weight[0].orthogonal_map == "householder"


def _same_error(fe, ft):
    with pytest.raises(Exception) as te:
        ft()
    with pytest.raises(type(te.value)) as ee:
        fe()
    assert str(ee.value) == str(te.value).replace("torch.Size", "engine.Size")


def test_orthogonal_errors_match_torch():
    t, e = linears((4, 4))
    _same_error(lambda: EP.orthogonal(e, orthogonal_map="qr"), lambda: TP.orthogonal(t, orthogonal_map="qr"))
    _same_error(lambda: EP.orthogonal(e, "bias"), lambda: TP.orthogonal(t, "bias"))
    tb, eb = torch.nn.Linear(3, 4), engine.nn.Linear(3, 4)
    _same_error(lambda: EP.orthogonal(eb, "bias"), lambda: TP.orthogonal(tb, "bias"))
    TP.orthogonal(t, orthogonal_map="cayley", use_trivialization=False)
    EP.orthogonal(e, orthogonal_map="cayley", use_trivialization=False)
    eye = np.eye(4, dtype=np.float32)

    def assign_t():
        t.weight = torch.tensor(eye)

    def assign_e():
        e.weight = engine.tensor(eye)

    _same_error(assign_e, assign_t)
    _same_error(lambda: e.parametrizations.weight[0].right_inverse(engine.zeros(3, 3)),
                lambda: t.parametrizations.weight[0].right_inverse(torch.zeros(3, 3)))


def test_orthogonal_trains_and_stays_orthogonal():
    _, e = linears((5, 3), seed=9)
    EP.orthogonal(e, orthogonal_map="cayley")
    opt = engine.optim.SGD(e.parameters(), lr=0.1)
    x = engine.randn(8, 3)
    target = engine.randn(8, 5)
    first = None
    for _ in range(20):
        opt.zero_grad()
        loss = ((e(x) - target) ** 2).mean()
        first = loss.item() if first is None else first
        loss.backward()
        opt.step()
    assert loss.item() < first
    q = e.weight.detach().numpy()
    np.testing.assert_allclose(q.T @ q, np.eye(3), atol=1e-5)


# --- spectral norm ----------------------------------------------------------------------------------

@pytest.mark.parametrize("make,kwargs", [
    (lambda m: m.Linear(5, 7), {}),
    (lambda m: m.Linear(5, 7), dict(n_power_iterations=3, eps=1e-6)),
    (lambda m: m.Conv2d(3, 4, 3), {}),
    (lambda m: m.ConvTranspose2d(3, 4, 3), {}),
    (lambda m: m.Conv1d(3, 4, 2), dict(dim=1)),
])
def test_spectral_norm_matches_torch(make, kwargs):
    torch.manual_seed(0)
    t = TP.spectral_norm(make(torch.nn), **kwargs)
    e = EP.spectral_norm(make(engine.nn), **kwargs)
    assert list(e.state_dict()) == list(t.state_dict())
    assert {"parametrizations.weight.0._u", "parametrizations.weight.0._v"} <= set(t.state_dict())
    load_from_torch(e, t)
    for _ in range(3):  # training mode: each access runs power iterations on u and v
        weight_and_grad_agree(t, e, atol=1e-5)
        for k in ("_u", "_v"):
            np.testing.assert_allclose(getattr(e.parametrizations.weight[0], k).numpy(),
                                       getattr(t.parametrizations.weight[0], k).numpy(), atol=1e-5)
        t.zero_grad()
        e.zero_grad()
    e.eval()
    t.eval()
    u_before = e.parametrizations.weight[0]._u.numpy().copy()
    np.testing.assert_allclose(e.weight.detach().numpy(), t.weight.detach().numpy(), atol=1e-5)
    np.testing.assert_array_equal(e.parametrizations.weight[0]._u.numpy(), u_before)


def test_spectral_norm_normalises_largest_singular_value_and_1d():
    engine.manual_seed(0)
    e = EP.spectral_norm(engine.nn.Linear(6, 6), n_power_iterations=30)
    s = np.linalg.svd(e.weight.detach().numpy(), compute_uv=False)
    assert abs(s[0] - 1.0) < 1e-3
    tm, em = torch.nn.Module(), engine.nn.Module()
    v = np.array([3.0, 4.0], np.float32)
    tm.weight = torch.nn.Parameter(torch.tensor(v))
    em.weight = engine.nn.Parameter(engine.tensor(v))
    TP.spectral_norm(tm)
    EP.spectral_norm(em)
    np.testing.assert_allclose(em.weight.detach().numpy(), tm.weight.detach().numpy())
    assert list(em.state_dict()) == list(tm.state_dict())


def test_spectral_norm_errors_match_torch():
    _same_error(lambda: EP.spectral_norm(engine.nn.Linear(2, 3), dim=2),
                lambda: TP.spectral_norm(torch.nn.Linear(2, 3), dim=2))
    _same_error(lambda: EP.spectral_norm(engine.nn.Linear(2, 3), n_power_iterations=0),
                lambda: TP.spectral_norm(torch.nn.Linear(2, 3), n_power_iterations=0))
    _same_error(lambda: EP.spectral_norm(engine.nn.ReLU()), lambda: TP.spectral_norm(torch.nn.ReLU()))


# --- cached, type_before_parametrizations, transfer ---------------------------------------------------

class Counting(engine.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return x * 2


def test_cached_computes_each_parametrization_once():
    m = engine.nn.Linear(3, 3)
    p = Counting()
    EZ.register_parametrization(m, "weight", p)
    a, b = m.weight, m.weight
    assert p.calls == 2 and a is not b
    with EZ.cached():
        a = m.weight
        with EZ.cached():  # nested: the same cache
            b = m.weight
        c = m.weight
        assert a is b is c
    assert p.calls == 3
    d = m.weight  # cache emptied on leaving
    assert d is not a and p.calls == 4
    with EZ.cached():  # a gradient through the cached weight reaches the original
        (m.weight.sum() + m.weight.sum()).backward()
    np.testing.assert_allclose(m.parametrizations.weight.original.grad.numpy(), np.full((3, 3), 4.0))


def test_type_before_parametrizations():
    m = engine.nn.Linear(3, 3)
    assert EZ.type_before_parametrizations(m) is engine.nn.Linear
    EP.orthogonal(m)
    assert type(m) is not engine.nn.Linear
    assert EZ.type_before_parametrizations(m) is engine.nn.Linear
    assert TZ.type_before_parametrizations(TP.orthogonal(torch.nn.Linear(3, 3))) is torch.nn.Linear


def test_transfer_parametrizations_and_params_shares_originals():
    src = EP.orthogonal(engine.nn.Linear(4, 4))
    dst = engine.nn.Linear(4, 4)
    out = EZ.transfer_parametrizations_and_params(src, dst)
    assert out is dst and EZ.is_parametrized(dst, "weight")
    assert dst.parametrizations.weight.original is src.parametrizations.weight.original
    np.testing.assert_allclose(dst.weight.detach().numpy(), src.weight.detach().numpy(), atol=1e-6)
    # a tensor the target lacks is created; several originals (weight_norm) are all shared
    wn = EP.weight_norm(engine.nn.Linear(3, 2))
    bare = engine.nn.Module()
    EZ.transfer_parametrizations_and_params(wn, bare, "weight")
    assert bare.parametrizations.weight.original0 is wn.parametrizations.weight.original0
    assert bare.parametrizations.weight.original1 is wn.parametrizations.weight.original1
    np.testing.assert_allclose(bare.weight.detach().numpy(), wn.weight.detach().numpy(), atol=1e-6)
    plain = engine.nn.Linear(2, 2)
    assert EZ.transfer_parametrizations_and_params(plain, dst) is dst
