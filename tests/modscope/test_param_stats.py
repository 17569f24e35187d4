"""The ``params`` event's statistics: batched (small tensors) and one by one (large tensors)
give the figures of a plain float64 reference computed tensor by tensor."""

import warnings

import numpy as np
import pytest

import engine
from modscope.capture import param_stats as ps


def reference(t, old=None) -> dict:
    v = t._data.reshape(-1).astype(np.float64)
    g = t._grad._data.reshape(-1).astype(np.float64) if t._grad is not None else None
    norm = np.sqrt((v * v).sum())
    out = {"norm": norm, "mean": v.mean(), "std": v.std(), "nan": int(np.isnan(v).sum()),
           "inf": int(np.isinf(v).sum()), "grad_norm": None if g is None else np.sqrt((g * g).sum()),
           "update_ratio": None}
    if old is not None:
        out["update_ratio"] = np.sqrt(((v - old.reshape(-1)) ** 2).sum()) / norm
    return out


def make(shapes, seed=0, grads=True):
    rng = np.random.default_rng(seed)
    tensors = []
    for i, shape in enumerate(shapes):
        t = engine.from_numpy((rng.standard_normal(shape) * (i + 1) + i).astype(np.float32))
        if grads and i % 3 != 2:  # some tensors without a gradient
            t.grad = engine.from_numpy(rng.standard_normal(shape).astype(np.float32))
        tensors.append(t)
    return [(f"p{i}", t) for i, t in enumerate(tensors)]


def check(records, named, olds=None):
    for k, (rec, (path, t)) in enumerate(zip(records, named, strict=True)):
        want = reference(t, None if olds is None else olds[k])
        assert rec["path"] == path
        for key in ("norm", "mean", "std", "grad_norm", "update_ratio"):
            if want[key] is None or not np.isfinite(want[key]):
                assert rec[key] is None, (path, key)
            else:
                assert rec[key] == pytest.approx(want[key], rel=1e-5, abs=1e-9), (path, key)
        assert (rec["nan"], rec["inf"]) == (want["nan"], want["inf"])


@pytest.fixture(params=["batched", "one-by-one"])
def path_kind(request, monkeypatch):
    """Run a test through the batched pass (every small tensor batched, however few) and through
    the BLAS passes per tensor."""
    if request.param == "batched":
        monkeypatch.setattr(ps, "BATCH_MIN", 1)
    else:
        monkeypatch.setattr(ps, "SMALL", 0)
    return request.param


def test_matches_reference_with_update_ratio(path_kind):
    named = make([(10, 5), (10,), (3, 4, 5), (1,), (200,), (7, 7)])
    tensors = [t for _, t in named]
    plan = ps.StatsPlan(tensors)
    for step in range(3):  # the plan's buffers are reused step after step
        plan.snapshot()
        olds = [t._data.copy() for t in tensors]
        for t in tensors:  # an "optimizer step"
            t._data -= (0.01 * (step + 1)) * np.sign(t._data)
        check(plan.stats(paths(named)), named, olds)


def paths(named):
    return [p for p, _ in named]


def stats(named):
    return ps.StatsPlan([t for _, t in named]).stats(paths(named))


def test_few_small_tensors_get_blas_passes_many_are_batched():
    few = ps.StatsPlan([t for _, t in make([(3,)] * (ps.BATCH_MIN - 1))])
    many = ps.StatsPlan([t for _, t in make([(3,)] * ps.BATCH_MIN)])
    assert (few.small, len(few.large)) == ([], ps.BATCH_MIN - 1)
    assert (len(many.small), many.large) == (ps.BATCH_MIN, [])


def test_gradients_in_any_memory_layout(path_kind):
    """Weight gradients come transposed from the engine's matmuls (and could be any strided
    view): their norms are read in memory order, the figures are the same."""
    named = make([(12, 7), (4, 5, 3), (6, 8), (9,)])
    rng = np.random.default_rng(1)
    named[0][1].grad = engine.from_numpy(rng.standard_normal((7, 12)).astype(np.float32).T)  # transposed
    named[1][1].grad = engine.from_numpy(np.moveaxis(rng.standard_normal((3, 4, 5)).astype(np.float32), 0, -1))
    named[2][1].grad = engine.from_numpy(rng.standard_normal((6, 16)).astype(np.float32)[:, ::2])  # strided
    assert not any(t._grad._data.flags.c_contiguous for _, t in named[:3])
    plan = ps.StatsPlan([t for _, t in named])
    plan.snapshot()
    olds = [t._data.copy() for _, t in named]
    for _, t in named:
        t._data -= 0.01
    check(plan.stats(paths(named)), named, olds)


def test_float64_tensor_matches_reference(path_kind):
    named = make([(50,), (6, 7)])
    named[0][1].data = engine.from_numpy(named[0][1]._data.astype(np.float64))
    named[0][1].grad = engine.from_numpy(np.arange(50, dtype=np.float64))
    plan = ps.StatsPlan([t for _, t in named])
    plan.snapshot()
    olds = [t._data.copy() for _, t in named]
    for _, t in named:
        t._data *= 1.5
    check(plan.stats(paths(named)), named, olds)


def test_update_from_non_finite_values_is_silent(path_kind):
    """A parameter that was Inf/NaN before the step and finite after (a reset): the ratio is
    not finite (None), the values' figures are, and nothing warns."""
    named = make([(8,), (4, 4)])
    plan = ps.StatsPlan([t for _, t in named])
    named[0][1]._data[2] = np.inf
    named[1][1]._data[0, 1] = np.nan
    plan.snapshot()
    for _, t in named:
        t._data[...] = 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        records = plan.stats(paths(named))
    assert [r["update_ratio"] for r in records] == [None, None]
    assert [r["norm"] for r in records] == [pytest.approx(8 ** 0.5), pytest.approx(4.0)]
    assert all((r["nan"], r["inf"], r["std"]) == (0, 0, 0.0) for r in records)


def test_update_ratio_only_right_after_a_snapshot():
    named = make([(4, 4), (4,), (100,)])
    plan = ps.StatsPlan([t for _, t in named])
    assert all(r["update_ratio"] is None for r in plan.stats(paths(named)))
    plan.snapshot()
    assert all(r["update_ratio"] == 0.0 for r in plan.stats(paths(named)))
    assert all(r["update_ratio"] is None for r in plan.stats(paths(named)))  # used up


def test_plan_matches_only_the_same_tensors_and_sizes():
    named = make([(4, 4), (4,)])
    tensors = [t for _, t in named]
    plan = ps.StatsPlan(tensors)
    assert plan.matches(list(tensors))
    assert not plan.matches(tensors[:1])
    assert not plan.matches([t for _, t in make([(4, 4), (4,)], seed=1)])
    tensors[1].data = engine.zeros(5)  # same tensor, new size: the buffers no longer fit
    assert not plan.matches(tensors)


def test_gradient_left_from_before_a_resize():
    named = make([(3,), (4,)], grads=False)
    named[0][1].grad = engine.from_numpy(np.array([1.0, 2.0, 2.0], np.float32))
    named[0][1].data = engine.zeros(5)  # .data may change size; the old .grad stays (as in torch)
    records = stats(named)
    assert records[0]["grad_norm"] == pytest.approx(3.0) and records[1]["grad_norm"] is None
    assert records[0]["norm"] == 0.0


def test_nan_and_inf_are_counted_and_silent(path_kind):
    named = make([(6,), (3, 3), (5,)])
    named[0][1]._data[[1, 4]] = np.nan
    named[1][1]._data[0, 0] = np.inf
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        records = stats(named)
    assert (records[0]["nan"], records[0]["inf"]) == (2, 0)
    assert (records[1]["nan"], records[1]["inf"]) == (0, 1)
    assert records[0]["norm"] is None and records[0]["mean"] is None
    check(records[2:], named[2:])


def test_finite_values_whose_squares_overflow_are_silent(path_kind):
    """A loss scaled by 1e6 can give float32 gradients whose squares overflow: no RuntimeWarning
    reaches the training script, the norms read None (not finite) and the global norm falls back."""
    named = make([(6,), (3, 3), (5,)])
    named[0][1]._grad._data[:] = 3e20
    named[1][1]._data[:] = 2e20
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plan = ps.StatsPlan([t for _, t in named])
        records = plan.stats(paths(named))
        norm, nonfinite = ps.grad_norm([t for _, t in named])
    assert records[0]["grad_norm"] is None and records[1]["norm"] is None
    assert plan.grad_sq is None and norm is None and nonfinite is False
    check(records[2:], named[2:])


def test_empty_tensor_and_integer_buffer():
    named = [("empty", engine.zeros(0)), ("steps", engine.tensor(7)), ("w", engine.ones(3))]
    records = stats(named)
    assert records[0]["norm"] == 0.0 and records[0]["grad_norm"] is None
    assert records[1]["norm"] == 7.0 and records[1]["mean"] == 7.0 and records[1]["std"] == 0.0
    assert records[2]["norm"] == pytest.approx(3 ** 0.5)


@pytest.mark.parametrize("n", [1, 37, 16_000, ps.SUM_BY_DOT, ps.SUM_BY_DOT + 1, 200_000])
def test_a_mean_near_zero_is_right_to_the_values_scale(n):
    """Sums up to ``SUM_BY_DOT`` values are BLAS dots with ones, longer ones ``np.add.reduce``:
    either way a mean of values that cancel is off by no more than float32 rounding of the
    values' own size."""
    rng = np.random.default_rng(n)
    values = (rng.standard_normal(n) * 0.04 + 1e-4).astype(np.float32)
    t = engine.from_numpy(values.copy())
    t.grad = engine.from_numpy(np.ones(n, np.float32))
    plan = ps.StatsPlan([t], exact_stats=True)
    assert (plan.large_ones[0] is None) == (n > ps.SUM_BY_DOT)
    mean = plan.stats(["w"])[0]["mean"]
    exact = values.astype(np.float64).mean()
    assert abs(mean - exact) <= 1e-6 * np.abs(values.astype(np.float64)).mean()


def test_the_ones_are_shared_and_read_only():
    a = ps._ones_for(np.zeros(10, np.float32))
    b = ps._ones_for(np.zeros(20, np.float32))
    assert a.base is b.base and not a.flags.writeable and a.sum() == 10
    assert ps._ones_for(np.zeros(ps.SUM_BY_DOT + 1, np.float32)) is None and ps._ones_for(None) is None
    assert ps._ones_for(np.zeros(3, np.float64)).dtype == np.float64


def test_the_sum_of_squared_gradients_comes_with_the_figures(path_kind):
    """``grad_sq``: what the step event's global gradient norm is on a full step, from the same
    passes; tensors without a gradient left out (``make`` gives every third none)."""
    named = make([(10, 5), (10,), (3, 4, 5), (1,), (200,), (7, 7)])
    plan = ps.StatsPlan([t for _, t in named])
    assert plan.grad_sq is None  # before any stats
    plan.stats(paths(named))
    want = sum(float((t._grad._data.astype(np.float64) ** 2).sum()) for _, t in named if t._grad is not None)
    assert plan.grad_sq == pytest.approx(want, rel=1e-6)
    assert plan.grad_sq == pytest.approx(ps.grad_norm([t for _, t in named])[0] ** 2, rel=1e-6)


def test_no_sum_of_squared_gradients_when_one_is_not_finite_or_none_is_there(path_kind):
    named = make([(10, 5), (10,), (3, 4, 5), (1,)])
    named[1][1]._grad._data[0] = np.inf
    plan = ps.StatsPlan([t for _, t in named])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plan.stats(paths(named))
    assert plan.grad_sq is None
    bare = make([(4,), (5,)], grads=False)
    plan = ps.StatsPlan([t for _, t in bare])
    plan.stats(paths(bare))
    assert plan.grad_sq is None


# --- large tensors: the update measured on a strided sample, the other figures exact -------------

def big_step(n, rule, seed=0):
    """A float32 tensor of ``n`` values with a gradient, its values before an optimizer step and
    the tensor after one step of ``rule`` (SGD with momentum or Adam's first step, as torch
    computes them: the update per value differs in size)."""
    rng = np.random.default_rng(seed)
    w = (rng.standard_normal(n) * 0.02 + 0.003).astype(np.float32)
    g = (rng.standard_normal(n) * np.linspace(0.1, 3.0, n)).astype(np.float32)  # uneven along the tensor
    if rule == "sgd":
        step = 0.01 * g
    else:  # Adam's first step: lr * m_hat / (sqrt(v_hat) + eps) = lr * g / (|g| + eps)
        step = 1e-3 * g / (np.abs(g) + 1e-8)
    t = engine.from_numpy(w.copy())
    t.grad = engine.from_numpy(g)
    return t, w, (w - step).astype(np.float32)


@pytest.mark.parametrize("rule", ["sgd", "adam"])
def test_a_large_tensors_update_is_measured_on_a_sample_and_agrees(rule):
    t, before, after = big_step(1_000_000, rule)
    plan = ps.StatsPlan([t], exact_stats=True)
    plan.snapshot()
    t._data[...] = after  # the optimizer's in-place step
    rec = plan.stats(["w"])[0]
    idx = ps.sample_indices(1_000_000)
    assert rec["update_sampled"] == idx.size <= ps.SAMPLE
    exact = reference(t, before)
    # the estimate: within 2% of the exact ratio (its spread is ~0.3% for these updates)
    assert rec["update_ratio"] == pytest.approx(exact["update_ratio"], rel=2e-2)
    # and exactly the sample's ratio
    a, b = after[idx].astype(np.float64), before[idx].astype(np.float64)
    assert rec["update_ratio"] == pytest.approx(np.sqrt(((a - b) ** 2).sum() / (a * a).sum()), rel=1e-5)
    # the other figures over every value, close to float64
    for key in ("norm", "grad_norm", "mean", "std"):
        assert rec[key] == pytest.approx(exact[key], rel=1e-6), key


def test_the_exact_update_below_the_threshold_and_the_sample_just_above():
    for n, sampled in ((ps.SAMPLE, False), (ps.SAMPLE + 1, True)):
        t, before, after = big_step(n, "sgd", seed=n)
        plan = ps.StatsPlan([t])
        plan.snapshot()
        t._data[...] = after
        rec = plan.stats(["w"])[0]
        assert ("update_sampled" in rec) == sampled, n
        if not sampled:
            assert rec["update_ratio"] == pytest.approx(reference(t, before)["update_ratio"], rel=1e-5)
        else:  # every other run of 16 values
            assert rec["update_sampled"] == n // 32 * 16


def test_a_sampled_tensor_says_so_without_an_update_and_with_nan():
    t, before, after = big_step(200_000, "sgd")
    plan = ps.StatsPlan([t], exact_stats=True)
    rec = plan.stats(["w"])[0]  # no snapshot: no update, but the item still says how it would be taken
    assert rec["update_ratio"] is None and rec["update_sampled"] == 50_000
    plan.snapshot()
    after[20] = np.nan  # not in the sample (runs of 16 every 64 values): counted; no ratio, as for an exact one
    t._data[...] = after
    rec = plan.stats(["w"])[0]
    assert (rec["nan"], rec["norm"], rec["std"], rec["update_ratio"]) == (1, None, None, None)
    assert rec["update_sampled"] == 50_000
    before = after.copy()
    before[20] = 0.0  # finite again: the next step has the sample's ratio
    t._data[...] = before
    plan.snapshot()
    t._data[...] = before * 0.99
    idx = ps.sample_indices(200_000)
    a, b = t._data[idx].astype(np.float64), before[idx].astype(np.float64)
    rec = plan.stats(["w"])[0]
    assert rec["update_ratio"] == pytest.approx(np.sqrt(((a - b) ** 2).sum() / (a * a).sum()), rel=1e-5)


def test_long_sums_are_float64_close():
    """Norm, mean and std of a long tensor whose mean is far from zero (a cancelling variance):
    one float32 dot over 2.4M values is off by ~1e-5; the chunked passes are not."""
    rng = np.random.default_rng(3)
    t = engine.from_numpy((rng.standard_normal(2_359_296) * 0.05 + 1.0).astype(np.float32))
    t.grad = engine.from_numpy(rng.standard_normal(2_359_296).astype(np.float32))
    rec = ps.StatsPlan([t], exact_stats=True).stats(["w"])[0]
    want = reference(t)
    for key in ("norm", "grad_norm", "mean"):
        assert rec[key] == pytest.approx(want[key], rel=1e-7), key
    assert rec["std"] == pytest.approx(want["std"], rel=1e-4)
