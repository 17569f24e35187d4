"""The values' norm, mean, std and NaN/Inf counts of a tensor of more than ``SAMPLE`` values are
taken on the sample its update ratio is measured on (the default), the same on every plan (the
engine's ``StatsPlan``, ``CpuStatsPlan``, ``TorchStatsPlan``), with ``stats_sampled`` in the
item; ``exact_stats=True`` measures every value. Gradient norms are exact either way."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import engine  # noqa: E402
import modscope  # noqa: E402
from modscope.capture import param_stats as ps  # noqa: E402
from modscope.capture.torch.param_stats import CpuStatsPlan, TorchStatsPlan, stats_plan  # noqa: E402
from tests.capture.torch.test_sampled_update import (  # noqa: E402
    BACKENDS,
    Subject,
    big_step,
    exact_ratio,
    mixed_model_items,
)


class Arrays:
    """A tensor as the NumPy plan reads it: ``_data`` and ``_grad`` (with its own ``_data``)."""

    def __init__(self, data: np.ndarray, grad: Arrays | None = None) -> None:
        self._data, self._grad = data, grad


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    return request.param


def sample_figures(values: np.ndarray) -> dict[str, float]:
    """The sampled item's figures from a float64 reference: the sample's mean and std, its norm
    scaled to the whole tensor."""
    flat = values.reshape(-1)
    s = flat[ps.sample_indices(flat.size)].astype(np.float64)
    return {"norm": math.sqrt((s * s).sum() * flat.size / s.size), "mean": s.mean(), "std": s.std()}


def truth(values: np.ndarray) -> dict[str, float]:
    a = values.reshape(-1).astype(np.float64)
    return {"norm": math.sqrt((a * a).sum()), "mean": a.mean(), "std": a.std()}


def test_exact_at_sample_values_and_sampled_one_above(backend):
    for n, sampled in ((ps.SAMPLE, False), (ps.SAMPLE + 1, True)):
        w, g, after = big_step(n, "sgd", seed=n)
        s = Subject(backend, [w], [g], exact_stats=False)
        s.plan.snapshot()
        s.assign(0, after)
        rec = s.stats()[0]
        assert ("stats_sampled" in rec) == sampled, n
        want = sample_figures(after) if sampled else truth(after)
        if sampled:
            assert list(rec)[-2:] == ["update_sampled", "stats_sampled"]
            assert rec["stats_sampled"] == rec["update_sampled"] == n // 32 * 16
            idx = ps.sample_indices(n)
            assert rec["update_ratio"] == pytest.approx(exact_ratio(w[idx], after[idx]), rel=1e-5)
        for key, value in want.items():
            assert rec[key] == pytest.approx(value, rel=1e-5, abs=1e-8), (n, key)
        assert rec["grad_norm"] == pytest.approx(np.linalg.norm(g.astype(np.float64)), rel=1e-6)  # exact


@pytest.mark.parametrize("exact_stats", [False, True])
def test_the_estimate_is_close_and_exact_stats_is_exact(backend, exact_stats):
    """1M values (0.02-wide around 0.003, after a step whose gradient grows 30x along the
    tensor): the sample's estimates within 1% (norm, std) and 4 standard errors (mean) of the
    float64 truth; with ``exact_stats`` the truth itself, and no mark."""
    n = 1_000_000
    w, g, after = big_step(n, "sgd", seed=7)
    s = Subject(backend, [w], [g], exact_stats=exact_stats)
    s.plan.snapshot()
    s.assign(0, after)
    rec = s.stats()[0]
    want = truth(after)
    assert rec["update_sampled"] == ps.sample_indices(n).size
    assert rec["grad_norm"] == pytest.approx(np.linalg.norm(g.astype(np.float64)), rel=1e-6)
    if exact_stats:
        assert "stats_sampled" not in rec
        for key, value in want.items():
            assert rec[key] == pytest.approx(value, rel=1e-5), key
        return
    m = rec["stats_sampled"]
    assert m == ps.sample_indices(n).size
    assert rec["norm"] == pytest.approx(want["norm"], rel=1e-2)
    assert rec["std"] == pytest.approx(want["std"], rel=1e-2)
    assert abs(rec["mean"] - want["mean"]) <= 4 * want["std"] / math.sqrt(m)
    for key, value in sample_figures(after).items():  # and exactly the sample's figures
        assert rec[key] == pytest.approx(value, rel=1e-5, abs=1e-9), key


def test_a_nan_in_the_sample_is_counted_one_outside_is_not_seen(backend):
    n = 200_000  # runs of 16 every 64 values: 8 is sampled, 20 is not
    w, g, after = big_step(n, "sgd")
    s = Subject(backend, [w], [g], exact_stats=False)
    s.plan.snapshot()
    after[8] = np.nan
    s.assign(0, after)
    rec = s.stats()[0]
    assert (rec["nan"], rec["inf"], rec["norm"], rec["std"], rec["update_ratio"]) == (1, 0, None, None, None)
    assert rec["stats_sampled"] == 50_000
    after[8], after[20], after[21] = 0.0, np.nan, np.inf  # outside the sample: not in the values' counts
    s.assign(0, after)
    rec = s.stats()[0]
    assert (rec["nan"], rec["inf"]) == (0, 0) and rec["norm"] is not None and rec["stats_sampled"] == 50_000
    exact = Subject(backend, [after], [g], exact_stats=True).stats()[0]  # exact_stats sees them
    assert (exact["nan"], exact["inf"], exact["norm"]) == (1, 1, None)
    g[20] = np.nan  # a gradient's NaN is seen wherever it is: the gradient pass is exact
    rec = Subject(backend, [w], [g], exact_stats=False).stats()[0]
    assert rec["grad_norm"] is None and rec["norm"] is not None


def test_every_backend_gives_the_same_sampled_items_for_a_mixed_model(backend):
    values, want = mixed_model_items(backend, seed=11, steps=2, exact_stats=False)
    assert [("stats_sampled" in r) for r in want] == [True, False, False, True, True, False]
    for k in (0, 3, 4):  # the sample's figures (the std from float32 dots: good to ~1e-5 of the scale)
        figures = sample_figures(values[k])
        for key, value in figures.items():
            spread = 1e-5 * (abs(figures["mean"]) + 1.0) if key == "std" else 1e-9
            assert want[k][key] == pytest.approx(value, rel=1e-5, abs=spread), (k, key)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_other_float_dtypes_are_sampled_alike(dtype):
    """float16 through the NumPy plan, bfloat16 through the torch one, float64 through both:
    the sample's figures in float64 (a float16 sample's squares would overflow float16)."""
    n = 150_000
    rng = np.random.default_rng(4)
    values = torch.from_numpy(rng.standard_normal(n).astype(np.float32) * 200 + 3).to(dtype)
    p = torch.nn.Parameter(values.clone())
    want = sample_figures(values.double().numpy())
    plans = [stats_plan([p]), TorchStatsPlan([p])]
    assert isinstance(plans[0], TorchStatsPlan) == (dtype == torch.bfloat16)
    for plan in plans:
        rec = plan.stats(["w"])[0]
        assert rec["stats_sampled"] == ps.sample_indices(n).size, type(plan)
        for key, value in want.items():
            assert rec[key] == pytest.approx(value, rel=1e-6), (type(plan), key)


def test_a_tensor_not_in_one_block_is_measured_exactly(backend):
    rng = np.random.default_rng(2)
    w = rng.standard_normal((400, 300)).astype(np.float32)
    if backend == "engine":
        t = engine.from_numpy(w.copy().T)
        assert not t._data.flags.c_contiguous
        plan = ps.StatsPlan([t])
    else:
        t = torch.from_numpy(w.copy()).t()
        assert not t.is_contiguous()
        plan = stats_plan([t]) if backend == "torch-cpu" else TorchStatsPlan([t])
    rec = plan.stats(["w"])[0]
    assert "stats_sampled" not in rec and "update_sampled" not in rec
    for key, value in truth(w).items():
        assert rec[key] == pytest.approx(value, rel=1e-5, abs=1e-8), key


def test_a_tensor_without_a_gradient_of_its_dtype_is_sampled_on_the_careful_path():
    """A float32 weight with a float64 gradient goes the NumPy plan's careful way: the same
    sampled figures, the gradient's norm exact."""
    rng = np.random.default_rng(9)
    w = rng.standard_normal(100_000).astype(np.float32)
    g = rng.standard_normal(100_000)
    t = Arrays(w.copy(), Arrays(g))  # (an engine tensor refuses a gradient of another dtype)
    rec = ps.StatsPlan([t]).stats(["w"])[0]
    assert rec["stats_sampled"] == ps.sample_indices(100_000).size
    for key, value in sample_figures(w).items():
        assert rec[key] == pytest.approx(value, rel=1e-6), key
    assert rec["grad_norm"] == pytest.approx(np.linalg.norm(g), rel=1e-9)


@pytest.mark.parametrize("framework", ["engine", "torch"])
def test_a_trace_samples_by_default_and_exact_stats_measures_every_value(framework):
    nn = engine.nn if framework == "engine" else torch.nn
    lib = engine if framework == "engine" else torch
    items = {}
    for exact_stats in (False, True):
        lib.manual_seed(0)
        model = nn.Sequential(nn.Linear(512, 256), nn.Linear(256, 4))
        opt = lib.optim.SGD(model.parameters(), lr=0.01)
        with modscope.trace(model, exact_stats=exact_stats) as tr:
            for _ in range(2):
                opt.zero_grad()
                model(lib.randn(8, 512)).pow(2).mean().backward()
                opt.step()
        params = [e for e in tr.events if e["kind"] == "params"][-1]
        items[exact_stats] = {i["path"]: i for i in params["items"]}
        weight = np.asarray(model[0].weight.detach().numpy(), np.float64)
        if framework == "torch":
            assert isinstance(tr._plans[id(opt)][0], CpuStatsPlan)
    sampled, exact = items[False]["0.weight"], items[True]["0.weight"]
    assert sampled["stats_sampled"] == 131_072 // 32 * 16 and "stats_sampled" not in exact
    assert exact["norm"] == pytest.approx(np.linalg.norm(weight), rel=1e-6)
    assert sampled["norm"] == pytest.approx(np.linalg.norm(weight), rel=3e-2)
    assert sampled["grad_norm"] == pytest.approx(exact["grad_norm"], rel=1e-6)  # gradients: exact both ways
    assert all("stats_sampled" not in i for path, i in items[False].items() if path != "0.weight")
