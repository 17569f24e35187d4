"""The sampled update ratio (a tensor of more than ``SAMPLE`` values) is the same on every
statistics plan: the engine's ``StatsPlan``, torch CPU tensors through it (``CpuStatsPlan``),
and ``TorchStatsPlan`` (other devices, bfloat16): the same items, the same sample, the same
figures, each checked against a float64 reference. Here the values' own figures are exact
(``exact_stats=True``); ``test_sampled_stats.py`` tests them taken on the same sample (the
default)."""

from __future__ import annotations

import math
from typing import Any
from unittest.mock import patch

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import engine  # noqa: E402
from modscope.capture import param_stats as ps  # noqa: E402
from modscope.capture.torch.param_stats import CHUNK, CpuStatsPlan, TorchStatsPlan, stats_plan  # noqa: E402

BACKENDS = ["engine", "torch-cpu", "torch-device"]


class Subject:
    """Tensors of one backend made from NumPy arrays, a plan over them, and the optimizer's
    in-place step (``assign``). ``exact_stats``: the plans' (here True: the values' figures
    over every value)."""

    def __init__(self, backend: str, values: list[np.ndarray], grads: list[np.ndarray | None],
                 exact_stats: bool = True) -> None:
        self.backend = backend
        if backend == "engine":
            self.tensors = []
            for v, g in zip(values, grads, strict=True):
                t = engine.from_numpy(v.copy())
                if g is not None:
                    t.grad = engine.from_numpy(g.copy())
                self.tensors.append(t)
            self.plan = ps.StatsPlan(self.tensors, exact_stats)
        else:
            self.tensors = []
            for v, g in zip(values, grads, strict=True):
                t = torch.nn.Parameter(torch.from_numpy(v.copy()))
                if g is not None:
                    t.grad = torch.from_numpy(g.copy())
                self.tensors.append(t)
            self.plan = (stats_plan(self.tensors, exact_stats) if backend == "torch-cpu"
                         else TorchStatsPlan(self.tensors, exact_stats))
            assert isinstance(self.plan, CpuStatsPlan if backend == "torch-cpu" else TorchStatsPlan)

    def assign(self, k: int, after: np.ndarray) -> None:
        if self.backend == "engine":
            self.tensors[k]._data[...] = after
        else:
            with torch.no_grad():
                self.tensors[k].copy_(torch.from_numpy(after))

    def stats(self) -> list[dict]:
        return self.plan.stats([f"p{k}" for k in range(len(self.tensors))])


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    return request.param


def big_step(n: int, rule: str, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Values, gradient and values after one step of ``rule`` (SGD, or Adam's first step: the
    update per value differs in size), the gradient growing 30x along the tensor."""
    rng = np.random.default_rng(seed)
    w = (rng.standard_normal(n) * 0.02 + 0.003).astype(np.float32)
    g = (rng.standard_normal(n) * np.linspace(0.1, 3.0, n)).astype(np.float32)
    step = 0.01 * g if rule == "sgd" else 1e-3 * g / (np.abs(g) + 1e-8)
    return w, g, (w - step).astype(np.float32)


def test_the_sample_is_runs_of_a_cache_line_evenly_spread():
    assert ps.sample_indices(ps.SAMPLE) is None
    idx = ps.sample_indices(2_359_296)  # a GPT-2 MLP weight: every 36th run of 16 (exactly 36 x 65,536 values)
    assert idx.size <= ps.SAMPLE and idx[:18].tolist() == [*range(16), 576, 577]
    assert (np.diff(idx.reshape(-1, ps.RUN)[:, 0]) == 576).all() and idx[-1] < 2_359_296
    assert idx[-1] > 2_359_296 - 576  # spread to the end


def exact_ratio(before: np.ndarray, after: np.ndarray) -> float:
    a, b = after.reshape(-1).astype(np.float64), before.reshape(-1).astype(np.float64)
    return math.sqrt(((a - b) ** 2).sum() / (a * a).sum())


def assert_items_alike(got: list[dict], want: list[dict]) -> None:
    """Two plans' items: the same keys in the same order, floats within float32's reach."""
    for g_, w_ in zip(got, want, strict=True):
        assert list(g_) == list(w_)
        for key, value in w_.items():
            if isinstance(value, float):
                # the NumPy plan's std comes from E[x^2] - mean^2 with float32 dots: good to
                # ~1e-5 of the scale for a mean far from zero (the torch plan's is float64)
                spread = 1e-5 * (abs(w_["mean"]) + 1.0) if key == "std" else 1e-9
                assert g_[key] == pytest.approx(value, rel=1e-5, abs=spread), (g_["path"], key)
            else:
                assert g_[key] == value, (g_["path"], key)


@pytest.mark.parametrize("rule", ["sgd", "adam"])
def test_a_large_tensors_update_is_measured_on_the_same_sample(backend, rule):
    n = 1_000_000
    w, g, after = big_step(n, rule)
    s = Subject(backend, [w], [g])
    s.plan.snapshot()
    s.assign(0, after)
    rec = s.stats()[0]
    idx = ps.sample_indices(n)
    assert list(rec) == ["path", "norm", "grad_norm", "update_ratio", "mean", "std", "nan", "inf", "update_sampled"]
    assert rec["update_sampled"] == idx.size == 3_906 * 16  # runs of 16, one every 256 values
    assert rec["update_ratio"] == pytest.approx(exact_ratio(w, after), rel=2e-2)  # the estimate
    assert rec["update_ratio"] == pytest.approx(exact_ratio(w[idx], after[idx]), rel=1e-5)  # the sample's
    a = after.astype(np.float64)
    for key, want in (("norm", np.sqrt((a * a).sum())), ("mean", a.mean()), ("std", a.std()),
                      ("grad_norm", np.sqrt((g.astype(np.float64) ** 2).sum()))):
        assert rec[key] == pytest.approx(want, rel=1e-5), key


def test_the_exact_update_at_the_threshold_and_the_sample_just_above(backend):
    for n, sampled in ((ps.SAMPLE, False), (ps.SAMPLE + 1, True)):
        w, g, after = big_step(n, "sgd", seed=n)
        s = Subject(backend, [w], [g])
        s.plan.snapshot()
        s.assign(0, after)
        rec = s.stats()[0]
        assert ("update_sampled" in rec) == sampled, n
        if sampled:  # every other run of 16 values, from the first
            idx = ps.sample_indices(n)
            assert rec["update_sampled"] == idx.size == n // 32 * 16
            assert rec["update_ratio"] == pytest.approx(exact_ratio(w[idx], after[idx]), rel=1e-5)
        else:
            assert rec["update_ratio"] == pytest.approx(exact_ratio(w, after), rel=1e-5)


def test_a_sampled_tensor_says_so_without_an_update_and_with_a_nan_outside_the_sample(backend):
    w, g, after = big_step(200_000, "sgd")
    idx = ps.sample_indices(200_000)  # runs of 16 every 64 values
    assert 7 in idx and 20 not in idx and idx.size == 50_000
    s = Subject(backend, [w], [g])
    rec = s.stats()[0]  # no snapshot: no ratio, but the item says how it would be taken
    assert rec["update_ratio"] is None and rec["update_sampled"] == 50_000
    s.plan.snapshot()
    after[20] = np.nan  # not sampled: counted, and no ratio, as for an exact one
    s.assign(0, after)
    rec = s.stats()[0]
    assert (rec["nan"], rec["norm"], rec["std"], rec["update_ratio"], rec["update_sampled"]) == (1, None, None,
                                                                                                 None, 50_000)
    after[20] = 0.0  # finite again: the next step has the sample's ratio
    s.assign(0, after)
    s.plan.snapshot()
    s.assign(0, after * np.float32(0.99))
    rec = s.stats()[0]
    assert rec["nan"] == 0
    assert rec["update_ratio"] == pytest.approx(exact_ratio(after[idx], after[idx] * np.float32(0.99)), rel=1e-5)


def test_a_nan_in_the_sample_gives_no_ratio(backend):
    w, g, after = big_step(200_000, "sgd")
    s = Subject(backend, [w], [g])
    s.plan.snapshot()
    after[8] = np.nan  # sampled (the first run: values 0-15)
    s.assign(0, after)
    rec = s.stats()[0]
    assert (rec["nan"], rec["update_ratio"], rec["update_sampled"]) == (1, None, 50_000)


def mixed_model_items(backend: str, seed: int, steps: int, **subject: Any) -> tuple[list[np.ndarray], list[dict]]:
    """Large and small tensors, one without a gradient, over ``steps`` steps (the buffers
    reused): at each step every item of ``backend``'s plan within float rounding of the
    engine's (``assert_items_alike``). The values and the engine's items of the last step."""
    rng = np.random.default_rng(seed)
    sizes = [300_000, 7, 4_096, ps.SAMPLE + 5, 90_000, 12]
    values = [(rng.standard_normal(n) * 0.1 + k).astype(np.float32) for k, n in enumerate(sizes)]
    grads = [None if k == 4 else rng.standard_normal(n).astype(np.float32) for k, n in enumerate(sizes)]
    subjects = {b: Subject(b, values, grads, **subject) for b in BACKENDS}
    for step in range(steps):
        for s in subjects.values():
            s.plan.snapshot()
        for k, v in enumerate(values):
            v -= np.float32(1e-3 * (step + 1)) * (grads[k] if grads[k] is not None else v)
            for s in subjects.values():
                s.assign(k, v)
        want = subjects["engine"].stats()
        got = want if backend == "engine" else subjects[backend].stats()  # a second stats has no update
        assert_items_alike(got, want)
    return values, want


def test_every_backend_gives_the_same_items_for_a_mixed_model(backend):
    """Each item within float rounding of the engine's, the same keys, the same samples."""
    _, want = mixed_model_items(backend, seed=5, steps=3)
    assert [("update_sampled" in r) for r in want] == [True, False, False, True, True, False]


def test_a_large_tensor_not_in_one_block_is_measured_exactly(backend):
    """A transposed weight has no flat view: every value is measured (no ``update_sampled``)."""
    rng = np.random.default_rng(2)
    w = rng.standard_normal((400, 300)).astype(np.float32)
    after = (w * np.float32(0.97)).astype(np.float32)
    if backend == "engine":
        t = engine.from_numpy(w.copy().T)  # a transposed view of its own copy
        assert not t._data.flags.c_contiguous
        plan = ps.StatsPlan([t])
        plan.snapshot()
        t._data[...] = after.T
    else:
        base = torch.from_numpy(w.copy())
        t = base.t()
        assert not t.is_contiguous()
        plan = stats_plan([t]) if backend == "torch-cpu" else TorchStatsPlan([t])
        plan.snapshot()
        base.copy_(torch.from_numpy(after))
    rec = plan.stats(["w"])[0]
    assert "update_sampled" not in rec
    assert rec["update_ratio"] == pytest.approx(exact_ratio(w, after), rel=1e-5)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_other_float_dtypes_are_sampled_alike(dtype):
    """float16 goes through the NumPy plan, bfloat16 through the torch one, float64 through
    both: the same sample, its ratio in float64 (a float16 sample's squares would overflow)."""
    n = 150_000
    rng = np.random.default_rng(3)
    before = torch.from_numpy(rng.standard_normal(n).astype(np.float32) * 200).to(dtype)  # 200^2 * n > float16 max
    after = (before.double() * 0.9 + 0.5).to(dtype)
    p = torch.nn.Parameter(before.clone())
    plans = [stats_plan([p]), TorchStatsPlan([p])]
    for plan in plans:
        plan.snapshot()
    with torch.no_grad():
        p.copy_(after)
    idx = torch.from_numpy(ps.sample_indices(n))
    want = exact_ratio(before[idx].double().numpy(), after[idx].double().numpy())
    for plan in plans:
        rec = plan.stats(["w"])[0]
        assert rec["update_sampled"] == idx.numel(), type(plan)
        assert rec["update_ratio"] == pytest.approx(want, rel=1e-6), type(plan)
    assert isinstance(plans[0], TorchStatsPlan) == (dtype == torch.bfloat16)


@pytest.mark.parametrize("opt", ["sgd", "adam"])
def test_the_device_plan_samples_after_a_real_optimizer_step(opt):
    torch.manual_seed(0)
    w = torch.nn.Parameter(torch.randn(1000, 1000) * 0.02)
    small = torch.nn.Parameter(torch.randn(1000))
    plan = TorchStatsPlan([w, small], exact_stats=True)
    optimizer = (torch.optim.SGD([w, small], lr=0.01, momentum=0.9) if opt == "sgd"
                 else torch.optim.Adam([w, small], lr=1e-3))
    for _ in range(3):
        optimizer.zero_grad()
        (((w.sum(1) * torch.linspace(0, 3, 1000)) ** 2).mean() + (w ** 2).sum() + (small ** 3).sum()).backward()
        before = [w.detach().clone().double(), small.detach().clone().double()]
        plan.snapshot()
        optimizer.step()
        rec_w, rec_small = plan.stats(["w", "small"])
    after = w.detach().double()
    assert rec_w["update_sampled"] == ps.sample_indices(1_000_000).size
    assert rec_w["update_ratio"] == pytest.approx(float((after - before[0]).norm() / after.norm()), rel=2e-2)
    after_small = small.detach().double()
    assert "update_sampled" not in rec_small  # 1,000 values: measured exactly
    assert rec_small["update_ratio"] == pytest.approx(float((after_small - before[1]).norm() / after_small.norm()),
                                                      rel=1e-9)
    assert rec_w["norm"] == pytest.approx(float(after.norm()), rel=1e-9)
    assert rec_w["grad_norm"] == pytest.approx(float(w.grad.double().norm()), rel=1e-9)


def test_the_device_plans_snapshot_holds_the_sample_not_the_tensor():
    big = torch.nn.Parameter(torch.randn(2_000_000))
    plan = TorchStatsPlan([big, torch.nn.Parameter(torch.randn(10))])
    plan.snapshot()
    (group,) = plan._groups
    held = group._old.numel()
    assert held == CHUNK * (-(-ps.sample_indices(2_000_000).size // CHUNK) + 1)
    assert held < 2_000_000 / 20


def test_the_device_plan_with_a_sample_is_still_one_transfer():
    params = [torch.nn.Parameter(torch.randn(100_000)), torch.nn.Parameter(torch.randn(30))]
    for p in params:
        p.grad = torch.randn_like(p)
    plan = TorchStatsPlan(params)
    calls = {"tolist": 0, "item": 0}
    originals = {name: getattr(torch.Tensor, name) for name in calls}

    def counting(name):
        def call(self, *args, **kwargs):
            calls[name] += 1
            return originals[name](self, *args, **kwargs)
        return call

    with patch.object(torch.Tensor, "tolist", counting("tolist")), patch.object(torch.Tensor, "item", counting("item")):
        plan.snapshot()
        plan.stats(["a", "b"])
    assert calls == {"tolist": 1, "item": 0}
