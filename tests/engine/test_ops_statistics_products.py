"""The less common tensor ops (engine/_ops/statistics.py, products.py, scans.py, advanced_indexing.py,
constructors.py, ...) against torch: values, dtypes, gradients,
grad_fn names and errors; finite-difference gradchecks without torch."""

from __future__ import annotations

import numpy as np
import pytest

import engine
from tests.gradcheck import gradcheck

RNG = np.random.default_rng(0)
A = RNG.standard_normal((3, 4))
B = RNG.standard_normal((2, 3))
V = RNG.standard_normal((5,))
W = RNG.standard_normal((4,))
U = RNG.standard_normal((3,))
C = RNG.standard_normal((2, 3, 4))
D = RNG.standard_normal((2, 4, 5))
E = RNG.standard_normal((3, 5))
F = RNG.standard_normal((4, 2))
NANS = A.copy()
NANS[0, 1] = NANS[2, 3] = np.nan
OTHER_NANS = RNG.standard_normal((3, 4))
OTHER_NANS[1, 1] = OTHER_NANS[0, 3] = np.nan
IDX = np.array([2, 0])
TAKE = np.array([[0, 11], [-1, 5]])
MASK = A > 0
REPEATS = np.array([[1.0, 2, 2, 3], [4, 4, 1, 1], [0, 5, 5, 5]])


def _i(a):
    return ("int", np.asarray(a, np.int64))


def _b(a):
    return ("bool", np.asarray(a, bool))


# name: (call(lib, *tensors), inputs, check grad_fn name)
CASES = {
    "kron": (lambda lib, a, b: lib.kron(a, b), [A, B], True),
    "kron_ranks": (lambda lib, a, v: lib.kron(a, v), [A, V], True),
    "diff": (lambda lib, a: lib.diff(a), [A], True),
    "diff_n2_dim0": (lambda lib, a, w: lib.diff(a, n=2, dim=0, prepend=w[None], append=a[:1]), [A, W], True),
    "diff_method": (lambda lib, v: v.diff(), [V], True),
    "cov": (lambda lib, a: lib.cov(a), [A], True),
    "cov_1d": (lambda lib, v: lib.cov(v, correction=0), [V], True),
    "cov_weights": (lambda lib, a, f: lib.cov(a, fweights=f, aweights=lib.abs(a[0]) + 1),
                    [A, _i([1, 2, 1, 3])], False),
    "corrcoef": (lambda lib, a: lib.corrcoef(a), [A], True),
    "quantile": (lambda lib, a: lib.quantile(a, 0.3), [A], False),
    "quantile_dim_q": (lambda lib, a, q: lib.quantile(a, q, dim=1, keepdim=True), [A, ("q", [0.1, 0.5, 0.9])], False),
    "quantile_keepdim_all": (lambda lib, a: lib.quantile(a, 0.65, keepdim=True), [A], False),
    "quantile_1d": (lambda lib, v: lib.quantile(v, 0.2, dim=0), [V], False),
    "quantile_lower": (lambda lib, a: a.quantile(0.4, dim=0, interpolation="lower"), [A], False),
    "quantile_higher": (lambda lib, a: lib.quantile(a, 0.4, dim=0, interpolation="higher"), [A], False),
    "quantile_midpoint": (lambda lib, a: lib.quantile(a, 0.4, dim=1, interpolation="midpoint"), [A], False),
    "quantile_nearest": (lambda lib, a: lib.quantile(a, 0.7, dim=1, interpolation="nearest"), [A], False),
    "quantile_nan": (lambda lib, a: lib.quantile(a, 0.5, dim=1), [NANS], False),
    "nanquantile": (lambda lib, a: lib.nanquantile(a, 0.5, dim=1), [NANS], False),
    "nanquantile_all": (lambda lib, a: a.nanquantile(0.25), [NANS], False),
    "kthvalue": (lambda lib, a: lib.kthvalue(a, 2), [A], True),
    "kthvalue_keepdim": (lambda lib, a: a.kthvalue(3, dim=0, keepdim=True), [A], True),
    "mode": (lambda lib, r: lib.mode(r), [REPEATS], True),
    "mode_dim0": (lambda lib, r: r.mode(0, keepdim=True), [REPEATS], True),
    "unfold": (lambda lib, a: a.unfold(1, 2, 1), [A], True),
    "unfold_step": (lambda lib, c: c.unfold(2, 2, 2), [C], True),
    "unfold_dim0": (lambda lib, a: a.unfold(0, 2, 1), [A], True),
    "index_fill": (lambda lib, a, i: a.index_fill(1, i, -1.5), [A, _i(IDX)], True),
    "index_fill_tensor": (lambda lib, a, i, v: lib.index_fill(a, 0, i, v.sum()), [A, _i(IDX), V], True),
    "index_copy": (lambda lib, a, i, b: a.index_copy(0, i, b[:, :2].repeat(1, 2)), [A, _i(IDX), B], True),
    "masked_scatter": (lambda lib, a, m, e: a.masked_scatter(m, e), [A, _b(MASK), E], True),
    "masked_scatter_bcast": (lambda lib, a, m, e: a.masked_scatter(m, e), [A, _b([True, False, True, True]), E],
                             True),
    "baddbmm": (lambda lib, e, c, d: lib.baddbmm(e, c, d, beta=0.5, alpha=2.0), [E, C, D], True),
    "addbmm": (lambda lib, e, c, d: lib.addbmm(e, c, d, alpha=-1.0), [E, C, D], True),
    "addmv": (lambda lib, u, a, w: lib.addmv(u, a, w, beta=2.0), [U, A, W], True),
    "addr": (lambda lib, a, u, w: a.addr(u, w, alpha=0.5), [A, U, W], True),
    "tensordot": (lambda lib, a, f: lib.tensordot(a, f, 1), [A, F], True),
    "tensordot_lists": (lambda lib, c, a: lib.tensordot(c, a, dims=([1, 2], [0, 1])), [C, A], True),
    "trace": (lambda lib, a: lib.trace(a), [A], True),
    "cummax": (lambda lib, a: lib.cummax(a, 1), [A], True),
    "cummin": (lambda lib, a: a.cummin(0), [A], True),
    "cummax_ties": (lambda lib, r: r.cummax(1), [REPEATS], True),
    "logcumsumexp": (lambda lib, a: lib.logcumsumexp(a, 1), [A], True),
    "renorm": (lambda lib, a: a.renorm(2, 0, 1.0), [A], True),
    "renorm_p1": (lambda lib, a: lib.renorm(a, 1, 1, 1.5), [A], True),
    "nanmean": (lambda lib, a: lib.nanmean(a), [NANS], True),
    "nanmean_dim": (lambda lib, a: a.nanmean(1, keepdim=True), [NANS], True),
    "rot90": (lambda lib, a: lib.rot90(a), [A], True),
    "rot90_k": (lambda lib, c: c.rot90(3, [1, 2]), [C], True),
    "rot90_neg": (lambda lib, a: lib.rot90(a, -2), [A], True),
    "fliplr": (lambda lib, a: lib.fliplr(a), [A], True),
    "flipud": (lambda lib, v: v.flipud(), [V], True),
    "cartesian_prod": (lambda lib, u, w: lib.cartesian_prod(u, w), [U, W], True),
    "combinations": (lambda lib, v: lib.combinations(v), [V], True),
    "combinations_r3_repl": (lambda lib, u: lib.combinations(u, 3, with_replacement=True), [U], True),
    "block_diag": (lambda lib, a, v, b: lib.block_diag(a, v, b[0, 0], b), [A, V, B], True),
    "vander": (lambda lib, v: lib.vander(v), [V], True),
    "vander_inc": (lambda lib, u: lib.vander(u, N=4, increasing=True), [U], False),
    "take": (lambda lib, a, i: a.take(i), [A, _i(TAKE)], True),
    "put": (lambda lib, a, i, u: a.put(i, u[:2]), [A, _i([3, -1]), U], True),
    "put_accumulate": (lambda lib, a, i, u: lib.put(a, i, u, accumulate=True), [A, _i([3, 3, 0]), U], True),
    "index_put": (lambda lib, a, i, w: a.index_put((i,), w), [A, _i(IDX), W], True),
    "inner": (lambda lib, a, c: lib.inner(a, c), [A, C], True),
    "inner_1d": (lambda lib, v: lib.inner(v, v * 2), [V], False),
    "dist": (lambda lib, a, w: lib.dist(a, w), [A, W], True),
    "dist_p1": (lambda lib, a, b: a.dist(b[0, :1], 1), [A, B], True),
    "dist_pinf": (lambda lib, a, e: lib.dist(a, e[:, :4], float("inf")), [A, E], True),
    "dist_p3": (lambda lib, a, e: lib.dist(a, e[:, 1:], 3), [A, E], True),
    "diag_embed": (lambda lib, a: lib.diag_embed(a), [A], True),
    "diag_embed_dims": (lambda lib, c: c.diag_embed(1, 0, 2), [C], True),
    "diagflat": (lambda lib, b: lib.diagflat(b, -1), [B], True),
    "fmax": (lambda lib, a, n: lib.fmax(a, n), [A, OTHER_NANS], True),
    "fmin": (lambda lib, n, w: n.fmin(w), [OTHER_NANS, W], True),
    "logaddexp2": (lambda lib, a, w: lib.logaddexp2(a, w), [A, W], True),
    "float_power": (lambda lib, a: lib.float_power(a, 2), [A], True),
    "float_power_tensor": (lambda lib, a, w: a.abs().float_power(w), [A, W], True),
    "trapezoid": (lambda lib, a: lib.trapezoid(a), [A], False),
    "trapezoid_dx": (lambda lib, a: lib.trapezoid(a, dx=0.5, dim=0), [A], False),
    "trapezoid_x": (lambda lib, a, w: lib.trapz(a, w.cumsum(0)), [A, W], False),
    "cumulative_trapezoid": (lambda lib, a: lib.cumulative_trapezoid(a), [A], True),
    "cumulative_trapezoid_x": (lambda lib, a, u: lib.cumulative_trapezoid(a, u.exp().cumsum(0), dim=0), [A, U],
                               False),
    "ravel": (lambda lib, c: c.ravel(), [C], True),
    "msort": (lambda lib, a: lib.msort(a), [A], True),
    "swapdims": (lambda lib, c: lib.swapdims(c, 0, 2), [C], True),
    "index_put_accumulate": (lambda lib, a, i, w: a.index_put((i, i), w[:2], accumulate=True),
                             [A, _i([1, 1]), W], True),
}


def _tensors(lib, inputs, dtype):
    out = []
    for x in inputs:
        if isinstance(x, tuple) and x[0] in ("int", "bool"):
            out.append(lib.tensor(x[1]))
        elif isinstance(x, tuple) and x[0] == "q":
            out.append(lib.tensor(x[1], dtype=dtype))
        else:
            out.append(lib.tensor(x, dtype=dtype, requires_grad=True))
    return out


def _first(out):
    return out[0] if isinstance(out, tuple) else out


# torch's own vander backward fails ("modified by an inplace operation"); values are compared,
# gradients are checked by finite differences only
NO_BACKWARD_PARITY = {"vander", "vander_inc"}


def _run(lib, name, dtype):
    call, inputs, _ = CASES[name]
    ts = _tensors(lib, inputs, dtype)
    out = call(lib, *ts)
    value = _first(out)
    if name in NO_BACKWARD_PARITY:
        return out, []
    w = np.linspace(-1, 1, value.numel()).reshape(tuple(value.shape))
    (value * lib.tensor(w, dtype=value.dtype)).nansum().backward()
    return out, [t.grad for t in ts if t.requires_grad]


@pytest.mark.parametrize("name", sorted(CASES))
def test_parity(name):
    torch = pytest.importorskip("torch")
    e_out, e_grads = _run(engine, name, engine.float32)
    t_out, t_grads = _run(torch, name, torch.float32)
    e_all = e_out if isinstance(e_out, tuple) else (e_out,)
    t_all = t_out if isinstance(t_out, tuple) else (t_out,)
    assert len(e_all) == len(t_all)
    for e, t in zip(e_all, t_all):
        assert tuple(e.shape) == tuple(t.shape)
        assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-5, atol=1e-6)
    for e, t in zip(e_grads, t_grads):
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-5, atol=1e-6)
    if CASES[name][2]:
        assert _first(e_out).grad_fn.name() == _first(t_out).grad_fn.name()


# mode and cummax over repeated values: a finite-difference step breaks the ties
GRADCHECK_SKIP = {"fmax", "fmin", "mode", "mode_dim0", "cummax_ties", "quantile_nan", "nanquantile", "nanquantile_all", "nanmean", "nanmean_dim"}


@pytest.mark.parametrize("name", sorted(set(CASES) - GRADCHECK_SKIP))
def test_gradcheck(name):
    call, inputs, _ = CASES[name]
    ts = _tensors(engine, inputs, engine.float64)
    gradcheck(lambda *xs: call(engine, *xs), *ts)


def test_nan_gradcheck():
    """NaN-aware ops: the gradient of the non-NaN entries (NaN entries held fixed)."""
    other = engine.tensor(OTHER_NANS)
    y = engine.tensor(A, dtype=engine.float64, requires_grad=True)
    gradcheck(lambda t: engine.fmax(t, other), y)
    gradcheck(lambda t: engine.fmin(other, t), y)
    nans = engine.tensor(NANS)

    def fill(x):
        return engine.where(engine.isnan(nans), nans, x)

    x = engine.tensor(np.nan_to_num(NANS), dtype=engine.float64, requires_grad=True)
    gradcheck(lambda t: engine.nanmean(fill(t), 1), x)
    gradcheck(lambda t: engine.nanquantile(fill(t), 0.3, dim=1), x)


@pytest.mark.parametrize("method,args", [
    ("index_fill_", lambda lib: (1, lib.tensor([0, 2]), 2.0)),
    ("index_copy_", lambda lib: (0, lib.tensor([1]), lib.ones(1, 4))),
    ("masked_scatter_", lambda lib: (lib.tensor([[True, False, False, True]] * 3), lib.arange(12.0))),
    ("put_", lambda lib: (lib.tensor([1, 1]), lib.tensor([5.0, 6.0]), True)),
    ("index_put_", lambda lib: ((lib.tensor([0, 0]), lib.tensor([1, 1])), lib.tensor([5.0, 6.0]), True)),
    ("renorm_", lambda lib: (2, 1, 0.5)),
    ("addr_", lambda lib: (lib.ones(3), lib.arange(4.0))),
    ("addmv_", lambda lib: (lib.ones(4, 4), lib.arange(4.0))),
    ("addmm_", lambda lib: (lib.ones(3, 2), lib.ones(2, 4) * 0.5)),
])
def test_inplace_variants(method, args):
    torch = pytest.importorskip("torch")
    base = A if method != "addmv_" else A[0]
    results = []
    for lib in (engine, torch):
        leaf = lib.tensor(base, dtype=lib.float32, requires_grad=True)
        x = leaf * 1.0
        out = getattr(x, method)(*args(lib))
        assert out is x
        (x * lib.tensor(np.linspace(-1, 1, x.numel()).reshape(tuple(x.shape)), dtype=lib.float32)).sum().backward()
        results.append((x.detach().numpy(), leaf.grad.numpy(), x.grad_fn.name()))
    (ev, eg, en), (tv, tg, tn) = results
    np.testing.assert_allclose(ev, tv, rtol=1e-6)
    np.testing.assert_allclose(eg, tg, rtol=1e-6)
    assert en == tn


def test_inplace_batched_products():
    torch = pytest.importorskip("torch")
    for lib in (engine, torch):
        x = lib.tensor(C[:, :, :2].copy()).float()
        x.baddbmm_(lib.tensor(C).float(), lib.tensor(D[:, :, :2].copy()).float(), beta=0.5)
        y = lib.tensor(A[:, :2].copy()).float()
        y.addbmm_(lib.tensor(C).float(), lib.tensor(D[:, :, :2].copy()).float(), alpha=2)
        if lib is engine:
            ex, ey = x.numpy(), y.numpy()
        else:
            np.testing.assert_allclose(ex, x.numpy(), rtol=1e-5)
            np.testing.assert_allclose(ey, y.numpy(), rtol=1e-5)


def test_unfold_is_a_view():
    x = engine.arange(8.0)
    w = x.unfold(0, 3, 2)
    assert w._base is x
    x[2] = 100.0
    assert w[0, 2].item() == 100.0 and w[1, 0].item() == 100.0
    leaf = engine.arange(6.0, requires_grad=True)
    y = leaf * 1
    y.unfold(0, 2, 2).mul_(2)
    y.sum().backward()
    np.testing.assert_allclose(leaf.grad.numpy(), np.full(6, 2.0))


def test_non_differentiable_results_match_torch():
    torch = pytest.importorskip("torch")
    cases = [
        lambda lib: lib.isin(lib.tensor([1, 2, 3, 4]), lib.tensor([2, 4])),
        lambda lib: lib.isin(lib.tensor([1.0, 2.0]), 2.0, invert=True),
        lambda lib: lib.histc(lib.tensor(A).float(), bins=5),
        lambda lib: lib.histc(lib.tensor(A).float(), bins=4, min=-1, max=1),
        lambda lib: lib.histc(lib.tensor([1.0, 1.0]), bins=4),
        lambda lib: lib.triu_indices(3, 4),
        lambda lib: lib.tril_indices(4, 3, -1),
        lambda lib: lib.triu_indices(3, 3, 1, dtype=lib.int32),
        lambda lib: lib.trace(lib.arange(9).reshape(3, 3)),
        lambda lib: lib.diff(lib.tensor([True, False, False, True])),
        lambda lib: lib.vander(lib.tensor([1, 2, 3])),
        lambda lib: lib.combinations(lib.tensor([1, 2, 3]), r=0),
        lambda lib: lib.mode(lib.tensor([1, 2, 2, 1, 3, 3])).indices,
        lambda lib: lib.cummax(lib.tensor([1.0, 3, 3, 2, 3]), 0).indices,
        lambda lib: lib.cummin(lib.tensor([2.0, float("nan"), 1, float("nan")]), 0).indices,
        lambda lib: lib.kthvalue(lib.tensor([3, 1, 2]), 2).values,
        lambda lib: lib.count_nonzero(lib.tensor(A) > 0, dim=1),
        lambda lib: lib.block_diag(lib.tensor([1, 2]), lib.tensor([[3.0]])),
        lambda lib: lib.kron(lib.arange(4).reshape(2, 2), lib.tensor([1, 10])),
        lambda lib: lib.isposinf(lib.tensor([1.0, float("inf"), -float("inf"), float("nan")])),
        lambda lib: lib.isneginf(lib.tensor([1.0, float("inf"), -float("inf"), float("nan")])),
        lambda lib: lib.argwhere(lib.tensor(A) > 0),
        lambda lib: lib.float_power(lib.tensor([1, 2, 3]), 2),
        lambda lib: lib.fmax(lib.tensor([1, 5]), lib.tensor([3, 2])),
        lambda lib: lib.dist(lib.tensor(A), lib.tensor(W), 0),
    ]
    for case in cases:
        e, t = case(engine), case(torch)
        assert tuple(e.shape) == tuple(t.shape), case
        assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], case
        np.testing.assert_array_equal(e.numpy(), t.numpy())


def test_unused_tuple_outputs_have_namedtuple_fields():
    x = engine.tensor(A, requires_grad=True)
    assert x.kthvalue(2).indices.dtype == engine.int64
    assert engine.mode(x).values.grad_fn.name() == "ModeBackward0"
    assert engine.cummin(x, 0).indices.grad_fn is None


ERRORS = [
    (lambda lib, a: lib.diff(lib.tensor(1.0)), RuntimeError, "diff expects input to be at least one-dimensional"),
    (lambda lib, a: lib.diff(a, n=-1), RuntimeError, "order must be non-negative but got -1"),
    (lambda lib, a: lib.cov(lib.zeros(2, 2, 2)), RuntimeError,
     "cov(): expected input to have two or fewer dimensions but got an input with 3 dimensions"),
    (lambda lib, a: lib.quantile(a, 1.5), RuntimeError, "quantile() q must be in the range [0, 1] but got 1.5"),
    (lambda lib, a: lib.quantile(a, lib.tensor([0.5, 1.5])), RuntimeError,
     "quantile() q values must be in the range [0, 1]"),
    (lambda lib, a: lib.quantile(a, lib.tensor([0.5], dtype=lib.float64)), RuntimeError,
     "quantile() q tensor must be same dtype as the input tensor"),
    (lambda lib, a: lib.quantile(lib.arange(3), 0.5), RuntimeError,
     "quantile() input tensor must be either float or double dtype"),
    (lambda lib, a: lib.quantile(a, 0.5, interpolation="foo"), RuntimeError,
     "quantile() interpolation must be one of linear, lower, higher, midpoint or nearest, but got foo"),
    (lambda lib, a: lib.quantile(a, lib.ones(2, 2) * 0.5), RuntimeError, "quantile() q must be a scalar or 1D tensor"),
    (lambda lib, a: lib.kthvalue(a, 5), RuntimeError, "kthvalue(): selected number k out of range for dimension 1"),
    (lambda lib, a: lib.kthvalue(a, 0, 0), RuntimeError, "kthvalue(): selected number k out of range for dimension 0"),
    (lambda lib, a: a.unfold(1, 5, 1), RuntimeError, "maximum size for tensor at dimension 1 is 4 but size is 5"),
    (lambda lib, a: a.unfold(1, 2, 0), RuntimeError, "step is 0 but must be > 0"),
    (lambda lib, a: a.unfold(1, -1, 1), RuntimeError, "size is -1 but must be >= 0"),
    (lambda lib, a: a.index_fill(1, lib.tensor([0.5]), 1.0), IndexError, "index_fill_(): Expected dtype int64 for index."),
    (lambda lib, a: a.index_fill(1, lib.tensor([7]), 1.0), IndexError,
     "index 7 is out of bounds for dimension 1 with size 4"),
    (lambda lib, a: a.index_copy(0, lib.tensor([0, 1]), lib.zeros(3, 4)), IndexError,
     "index_copy_(): Number of indices (2) should be equal to source.size(dim) (3)"),
    (lambda lib, a: a.index_copy(0, lib.tensor([0, 1]), lib.zeros(2, 5)), RuntimeError,
     "index_copy_(): Source/destination tensor must have same slice shapes. Destination slice shape: 4 at "
     "dimension 0 and source slice shape: 5 at dimension 0."),
    (lambda lib, a: a.masked_scatter(a > 0, lib.zeros(1)), RuntimeError,
     "Number of elements of source < number of ones in mask"),
    (lambda lib, a: a.masked_scatter(lib.ones(3, 4), lib.zeros(12)), RuntimeError,
     "masked_scatter_ only supports boolean masks, but got mask with dtype Float"),
    (lambda lib, a: lib.baddbmm(lib.zeros(3, 5), lib.zeros(2, 3, 4), lib.zeros(2, 5, 5)), RuntimeError,
     "Expected size for first two dimensions of batch2 tensor to be: [2, 4] but got: [2, 5]."),
    (lambda lib, a: lib.addbmm(lib.zeros(3, 5), lib.zeros(2, 3, 4), lib.zeros(2, 5, 5)), RuntimeError,
     "Incompatible matrix sizes for bmm (3x4 and 5x5)"),
    (lambda lib, a: lib.addbmm(lib.zeros(3, 5), lib.zeros(2, 3, 4), lib.zeros(3, 4, 5)), RuntimeError,
     "batch1 and batch2 must have same number of batches, got 2 and 3"),
    (lambda lib, a: lib.addbmm(lib.zeros(4, 5), lib.zeros(2, 3, 4), lib.zeros(2, 4, 5)), RuntimeError,
     "The expanded size of the tensor (3) must match the existing size (4) at non-singleton dimension 0.  "
     "Target sizes: [3, 5].  Tensor sizes: [4, 5]"),
    (lambda lib, a: lib.baddbmm(lib.zeros(3, 4, 5), lib.zeros(3, 4), lib.zeros(3, 4, 5)), RuntimeError,
     "batch1 must be a 3D tensor"),
    (lambda lib, a: lib.baddbmm(lib.zeros(3, 5), lib.zeros(3, 4), lib.zeros(2, 4, 5)), RuntimeError,
     "The expanded size of the tensor (4) must match the existing size (3) at non-singleton dimension 1.  "
     "Target sizes: [3, 4, 5].  Tensor sizes: [3, 5]"),
    (lambda lib, a: a.index_fill(0, lib.tensor([0]), lib.ones(2)), RuntimeError,
     "index_fill_ only supports a 0-dimensional value tensor, but got tensor with 1 dimension(s)."),
    (lambda lib, a: a.index_copy(0, lib.tensor([0]), lib.zeros(1, 4, dtype=lib.float64)), RuntimeError,
     "index_copy_(): self and source expected to have the same dtype, but got (self) Float and (source) Double"),
    (lambda lib, a: a.masked_scatter(a > 0, lib.zeros(12, dtype=lib.float64)), RuntimeError,
     "masked_scatter: expected self and source to have same dtypes but gotFloat and Double"),
    (lambda lib, a: a.put(lib.tensor([0]), lib.zeros(1, dtype=lib.float64)), RuntimeError,
     "put_(): self and source expected to have the same dtype, but got self.dtype = Float and source.dtype = Double"),
    (lambda lib, a: a.index_put((lib.tensor([0]),), lib.zeros(4, dtype=lib.float64)), RuntimeError,
     "Index put requires the source and destination dtypes match, got Float for the destination and Double for the "
     "source."),
    (lambda lib, a: lib.baddbmm(lib.zeros(4, 5), lib.zeros(2, 3, 4), lib.zeros(2, 4, 5)), RuntimeError,
     "The expanded size of the tensor (3) must match the existing size (4) at non-singleton dimension 1.  "
     "Target sizes: [2, 3, 5].  Tensor sizes: [4, 5]"),
    (lambda lib, a: lib.addmv(lib.zeros(3), a, lib.zeros(5)), RuntimeError,
     "size mismatch, got input (3), mat (3x4), vec (5)"),
    (lambda lib, a: lib.addr(a, lib.zeros(3, 1), lib.zeros(4)), RuntimeError,
     "addr: Expected 1-D argument vec1, but got 2-D"),
    (lambda lib, a: lib.trace(lib.zeros(2, 2, 2)), RuntimeError, "trace: expected a matrix, but got tensor with dim 3"),
    (lambda lib, a: lib.tensordot(a, lib.zeros(5, 2), 1), RuntimeError,
     "contracted dimensions need to match, but first has size 4 in dim -1 and second has size 5 in dim 0"),
    (lambda lib, a: lib.histc(lib.arange(4), 4), NotImplementedError, "\"histogram_cpu\" not implemented for 'Long'"),
    (lambda lib, a: lib.histc(a, 4, min=2, max=1), RuntimeError, "torch.histc: max must be larger than min"),
    (lambda lib, a: lib.histc(a, -1), RuntimeError, "torch.histogram(): bins must be > 0, but got -1 for dimension 0"),
    (lambda lib, a: lib.logcumsumexp(lib.arange(3), 0), NotImplementedError,
     "\"logcumsumexp_out_cpu\" not implemented for 'Long'"),
    (lambda lib, a: a.renorm(-1, 0, 1.0), RuntimeError, "renorm: non-positive-norm not supported"),
    (lambda lib, a: a.renorm(2, 0, -1.0), RuntimeError, "renorm: expected maxnorm to be >= 0 but got -1"),
    (lambda lib, a: lib.nanmean(lib.arange(3)), RuntimeError,
     "nanmean(): expected input to have floating point or complex dtype but got Long"),
    (lambda lib, a: lib.rot90(a, 1, [0]), RuntimeError, "expected total rotation dims == 2, but got dims = 1"),
    (lambda lib, a: lib.rot90(lib.zeros(3), 1, [0, 1]), RuntimeError, "expected total dims >= 2, but got total dims = 1"),
    (lambda lib, a: lib.rot90(a, 1, [0, 0]), RuntimeError,
     "expected rotation dims to be different, but got dim0 = 0 and dim1 = 0"),
    (lambda lib, a: lib.fliplr(lib.zeros(3)), RuntimeError, "Input must be >= 2-d."),
    (lambda lib, a: lib.flipud(lib.tensor(1.0)), RuntimeError, "Input must be >= 1-d."),
    (lambda lib, a: lib.combinations(a), RuntimeError, "Expect a 1D vector, but got shape [3, 4]"),
    (lambda lib, a: lib.combinations(lib.zeros(3), r=-1), RuntimeError, "Expect a non-negative number, but got -1"),
    (lambda lib, a: lib.cartesian_prod(a), RuntimeError, "Expect a 1D vector, but got shape [3, 4]"),
    (lambda lib, a: lib.vander(a), RuntimeError, "x must be a one-dimensional tensor."),
    (lambda lib, a: lib.vander(lib.zeros(3), N=-1), RuntimeError, "N must be non-negative."),
    (lambda lib, a: a.take(lib.tensor([12])), IndexError, "out of range: tried to access index 12 on a tensor of 12 "
     "elements."),
    (lambda lib, a: a.take(lib.tensor([1.0])), RuntimeError, "take(): Expected a long tensor for index, but got Float"),
    (lambda lib, a: a.clone().put_(lib.tensor([13]), lib.tensor([1.0])), IndexError,
     "out of range: tried to access index 13 on a tensor of 12 elements."),
    (lambda lib, a: a.clone().put_(lib.tensor([1, 2]), lib.tensor([1.0])), IndexError,
     "put_(): Expected source and index to have the same number of elements, but got source.numel() = 1, "
     "index.numel() = 2"),
    (lambda lib, a: lib.block_diag(lib.zeros(2, 2, 2)), RuntimeError,
     "torch.block_diag: Input tensors must have 2 or fewer dimensions. Input 0 has 3 dimensions"),
    (lambda lib, a: lib.inner(a, lib.zeros(3)), RuntimeError,
     "inner() the last dimension must match on both input tensors but got shapes [3, 4] and [3]"),
    (lambda lib, a: lib.diag_embed(a, 0, 1, 1), RuntimeError, "diagonal dimensions cannot be identical 1, 1"),
    (lambda lib, a: lib.cummax(a, 2), IndexError, "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
]


@pytest.mark.parametrize("k", range(len(ERRORS)))
def test_errors_match_torch(k):
    call, exc, message = ERRORS[k]
    with pytest.raises(exc) as info:
        call(engine, engine.tensor(A).float())
    assert str(info.value) == message
    torch = pytest.importorskip("torch")
    with pytest.raises(exc) as t_info:
        call(torch, torch.tensor(A).float())
    assert str(t_info.value).split("\n")[0] == message


def test_logcumsumexp_gradient_over_a_wide_range(recwarn):
    """Values 2000 apart: the backward sums in log space (no overflow, no NaN, no warning)."""
    data, w = [-1000.0, 0.0, 1000.0, 3.0], [1.0, -2.0, 3.0, 0.5]
    x = engine.tensor(data, dtype=engine.float64, requires_grad=True)
    (engine.logcumsumexp(x, 0) * engine.tensor(w, dtype=engine.float64)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0, -2.0, 3.5, 0.0], atol=1e-12)
    assert not [r for r in recwarn if issubclass(r.category, RuntimeWarning)]
    torch = pytest.importorskip("torch")
    t = torch.tensor(data, dtype=torch.float64, requires_grad=True)
    (torch.logcumsumexp(t, 0) * torch.tensor(w, dtype=torch.float64)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), atol=1e-12)


def test_cov_of_integers_matches_torch():
    torch = pytest.importorskip("torch")
    data = [[1, 2, 3, 7], [2, 5, 1, 0]]
    e, t = engine.cov(engine.tensor(data)), torch.cov(torch.tensor(data))
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6)


@pytest.mark.parametrize("op", [
    lambda lib, x: lib.trace(x),
    lambda lib, x: lib.rot90(x, 1),
    lambda lib, x: x.take(lib.tensor([0, 4, 4, 11])),
    lambda lib, x: x.unfold(1, 2, 1),
])
def test_double_backward_of_linear_ops(op):
    """create_graph=True through the linear ops: the gradient of (grad . v) w.r.t. the upstream
    weights matches torch (the ops' backward is itself differentiable)."""
    torch = pytest.importorskip("torch")
    results = []
    for lib in (engine, torch):
        x = lib.tensor(A, requires_grad=True)
        out = op(lib, x * x)
        w = lib.tensor(np.linspace(0.5, 1.5, out.numel()).reshape(tuple(out.shape)), requires_grad=True)
        (g,) = lib.autograd.grad((out * w).sum(), x, create_graph=True)
        (g * lib.tensor(np.cos(np.arange(12.0)).reshape(3, 4))).sum().backward()
        results.append((g.detach().numpy(), x.grad.numpy(), w.grad.numpy()))
    for e, t in zip(*results):
        np.testing.assert_allclose(e, t, rtol=1e-12)
