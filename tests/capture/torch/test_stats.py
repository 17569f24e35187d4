"""Torch statistics on the tensor's own device (``capture.torch.stats``, ``capture.torch.param_stats``).

Each figure is checked against the engine's NumPy code on the same values (``stats_values``,
``StatsPlan``) and against a float64 reference, within tolerances (never float string
compares); and the design is checked: no value read on the host while the figures are
computed, one transfer per batch, no autograd graph, inputs left untouched."""

from __future__ import annotations

import math
from contextlib import contextmanager
from unittest.mock import patch

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import engine  # noqa: E402
from modscope.capture.arrays import stats_values  # noqa: E402  (was engine.summaries._stats_values)
from modscope.capture.param_stats import StatsPlan  # noqa: E402
from modscope.capture.torch.param_stats import CHUNK, TorchStatsPlan  # noqa: E402
from modscope.capture.torch.stats import resolve, tensor_stats  # noqa: E402
from modscope.events.records import STATS_KEYS  # noqa: E402

NAN, INF = math.nan, math.inf
FLOATS = STATS_KEYS[:5]  # mean .. absmax: None when not finite
RECORD_FIGURES = ("norm", "grad_norm", "update_ratio", "mean", "std")
NET = [(10, 1, 5, 5), (10,), (20, 10, 5, 5), (20,), (50, 320), (50,), (10, 50), (10,)]  # the classic MNIST Net


# --- helpers ------------------------------------------------------------------------------------

def stats_of(t: torch.Tensor) -> dict:
    """``tensor_stats`` then ``resolve``, as a dict."""
    return dict(zip(STATS_KEYS, resolve([tensor_stats(t)])[0], strict=True))


def reference(values: np.ndarray) -> dict:
    """The figures in float64 over the finite values (None where there are none)."""
    flat = values.reshape(-1).astype(np.float64)
    finite = flat[np.isfinite(flat)]
    out = {"zeros": float((flat == 0).sum()) / max(flat.size, 1), "nan": int(np.isnan(flat).sum()),
           "inf": int(np.isinf(flat).sum())} | dict.fromkeys(FLOATS)
    if finite.size:
        out |= {"mean": finite.mean(), "std": finite.std(), "min": finite.min(), "max": finite.max(),
                "absmax": np.abs(finite).max()}
    return out


def assert_close(got: dict, want: dict, keys, rel: float = 1e-5, scale: float | None = None) -> None:
    """Each figure within ``rel`` (and 1e-6 of ``scale``, the values' size, for figures near 0);
    None exactly where the other is None; counts equal."""
    for key in keys:
        g, w = got[key], want[key]
        if w is None or (isinstance(w, float) and not math.isfinite(w)):
            assert g is None, (key, g)
        elif key in ("nan", "inf"):
            assert g == w and type(g) is int, (key, g, w)
        else:
            assert g == pytest.approx(float(w), rel=rel, abs=1e-6 * (scale or 0.0) + 1e-300), (key, g, w)


def engine_dict(values: np.ndarray) -> dict:
    return dict(zip(STATS_KEYS, stats_values(values), strict=True))


@contextmanager
def count_calls(cls, *names):
    """Count the calls of ``cls.name`` for each name (the original still runs)."""
    counts = dict.fromkeys(names, 0)

    def wrap(name):
        original = getattr(cls, name)

        def counted(*args, **kwargs):
            counts[name] += 1
            return original(*args, **kwargs)
        return counted

    patches = [patch.object(cls, name, wrap(name)) for name in names]
    for p in patches:
        p.start()
    try:
        yield counts
    finally:
        for p in patches:
            p.stop()


@contextmanager
def no_host_reads():
    """Fail on anything that reads a tensor's value on the host (a device sync on CUDA)."""
    def refuse(*args, **kwargs):
        raise AssertionError("a tensor value was read on the host")

    names = ("item", "tolist", "numpy", "__float__", "__int__", "__bool__", "__index__")
    patches = [patch.object(torch.Tensor, name, refuse) for name in names]
    for p in patches:
        p.start()
    try:
        yield
    finally:
        for p in patches:
            p.stop()


# --- tensor_stats / resolve ---------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(1,), (7,), (3, 4), (2, 3, 5), (1000,), (64, 65)])
@pytest.mark.parametrize("offset", [0.0, 2.5, -300.0])
def test_float32_matches_the_engine_and_float64(shape, offset):
    rng = np.random.default_rng(sum(shape))
    values = (rng.standard_normal(shape) * 1.7 + offset).astype(np.float32)
    values.reshape(-1)[::5] = 0.0  # some exact zeros
    got = stats_of(torch.from_numpy(values))
    scale = float(np.abs(values).max())
    assert_close(got, engine_dict(values), STATS_KEYS, scale=scale)
    assert_close(got, reference(values), STATS_KEYS, scale=scale)
    assert got["zeros"] == pytest.approx(reference(values)["zeros"], rel=1e-12)


def test_nan_and_inf_are_counted_and_left_out():
    values = np.array([1.0, NAN, 2.0, INF, 0.0, -INF, NAN, -3.5], np.float32)
    got = stats_of(torch.from_numpy(values))
    assert (got["nan"], got["inf"]) == (2, 2)
    assert_close(got, reference(values), STATS_KEYS)
    assert_close(got, engine_dict(values), STATS_KEYS)
    assert got["min"] == -3.5 and got["max"] == 2.0 and got["absmax"] == 3.5
    assert got["zeros"] == pytest.approx(1 / 8)


@pytest.mark.parametrize("values", [[NAN, NAN], [INF, -INF, NAN], [INF]])
def test_no_finite_value_gives_none_and_counts(values):
    got = stats_of(torch.tensor(values))
    assert all(got[k] is None for k in FLOATS)
    assert got["nan"] == sum(math.isnan(v) for v in values)
    assert got["inf"] == sum(math.isinf(v) for v in values)
    assert got["zeros"] == 0.0


@pytest.mark.parametrize("t", [
    torch.arange(-6, 6, dtype=torch.int64).reshape(3, 4),
    torch.tensor([3, 0, 250], dtype=torch.uint8),
    torch.tensor([7, -2, 0, 0], dtype=torch.int32),
    torch.tensor([True, False, False, True, True]),
    torch.tensor(12, dtype=torch.int64),  # BatchNorm's num_batches_tracked
], ids=["int64", "uint8", "int32", "bool", "0-d int"])
def test_int_and_bool_are_exact(t):
    values = t.numpy()
    got = stats_of(t)
    assert_close(got, engine_dict(values), STATS_KEYS, rel=1e-12)
    assert_close(got, reference(values), STATS_KEYS, rel=1e-12)


def test_empty_and_0d():
    empty = {"mean": None, "std": None, "min": None, "max": None, "absmax": None, "zeros": 0.0, "nan": 0, "inf": 0}
    for dtype in (torch.float32, torch.float16, torch.int64, torch.bool):
        assert stats_of(torch.zeros((0, 3), dtype=dtype)) == empty
    assert stats_of(torch.tensor(-3.0)) == {"mean": -3.0, "std": 0.0, "min": -3.0, "max": -3.0, "absmax": 3.0,
                                            "zeros": 0.0, "nan": 0, "inf": 0}
    assert stats_of(torch.tensor(0.0))["zeros"] == 1.0


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_other_float_dtypes(dtype):
    t = (torch.randn(500, generator=torch.Generator().manual_seed(3)) * 4 + 1).to(dtype)
    t[7], t[9] = NAN, INF
    values = t.to(torch.float64).numpy()  # the same values, exactly
    got = stats_of(t)
    assert_close(got, reference(values), STATS_KEYS, rel=1e-6)
    if dtype != torch.bfloat16:  # NumPy has no bfloat16
        assert_close(got, engine_dict(t.numpy()), STATS_KEYS, rel=1e-5)


def test_float16_extremes_do_not_overflow():
    t = torch.tensor([65504.0, -65504.0, 60000.0, 1e-4], dtype=torch.float16)
    assert_close(stats_of(t), reference(t.to(torch.float64).numpy()), STATS_KEYS, rel=1e-6)


@pytest.mark.parametrize("make", [
    lambda base: base.t(),
    lambda base: base[:, ::3],
    lambda base: base.unsqueeze(0).expand(3, -1, -1),
    lambda base: torch.as_strided(base, (4, 4), (1, 6)),
], ids=["transposed", "strided", "expanded", "overlapping"])
def test_non_contiguous_equals_its_contiguous_copy(make):
    base = torch.randn(12, 9, generator=torch.Generator().manual_seed(5))
    view = make(base)
    assert not view.is_contiguous()
    got, want = stats_of(view), stats_of(view.contiguous())
    assert_close(got, want, STATS_KEYS, rel=1e-6)
    assert_close(got, reference(view.numpy()), STATS_KEYS, rel=1e-5)


@pytest.mark.parametrize("offset", [0.5, 1e5])
def test_a_million_float32_values_within_1e_5_of_float64(offset):
    values = (offset + np.random.default_rng(7).standard_normal(1_000_000) * 2).astype(np.float32)
    got = stats_of(torch.from_numpy(values))
    want = reference(values)
    assert got["mean"] == pytest.approx(want["mean"], rel=1e-5)
    assert got["std"] == pytest.approx(want["std"], rel=1e-5)
    assert (got["min"], got["max"]) == (want["min"], want["max"])  # exact


def test_a_mean_near_zero_is_right_to_the_values_scale():
    values = (np.random.default_rng(8).standard_normal(1_000_000) * 0.04 + 1e-4).astype(np.float32)
    got, want = stats_of(torch.from_numpy(values)), reference(values)
    assert abs(got["mean"] - want["mean"]) <= 1e-6 * np.abs(values.astype(np.float64)).mean()
    assert got["std"] == pytest.approx(want["std"], rel=1e-5)


@pytest.mark.parametrize("values", [[3e38, 3e38, -1.0], [1e20, 2e20, 3e20], [1e-30, 2e-30, 0.0]],
                         ids=["sum-overflows", "squares-overflow", "tiny"])
def test_extreme_float32_values_keep_finite_figures(values):
    arr = np.array(values, np.float32)
    got = stats_of(torch.from_numpy(arr))
    assert_close(got, reference(arr), STATS_KEYS, rel=1e-6)


def test_figures_stay_on_the_device_and_are_float64_of_8():
    t = torch.randn(10)
    out = tensor_stats(t)
    assert out.dtype == torch.float64 and out.shape == (len(STATS_KEYS),) and out.device == t.device


def test_no_value_is_read_on_the_host():
    """No ``.item()``/``.tolist()``/``float(t)``/``if t:`` while the figures are computed: on CUDA
    each would wait for the device."""
    tensors = [torch.randn(300), torch.tensor([1.0, NAN, INF]), torch.zeros(0), torch.tensor(3),
               torch.randn(4, 5).t(), torch.randn(6, dtype=torch.float16), torch.tensor([True, False])]
    with no_host_reads():
        out = [tensor_stats(t) for t in tensors]
    assert len(resolve(out)) == len(tensors)


def test_no_autograd_graph_and_the_input_unchanged():
    leaf = torch.randn(50, requires_grad=True)
    t = leaf * 2  # a non-leaf with a grad_fn, as an activation is
    t.retain_grad()
    before, version = t.detach().clone(), t._version
    with torch.enable_grad():
        out = tensor_stats(t)
    assert not out.requires_grad and out.grad_fn is None
    assert t._version == version and torch.equal(t.detach(), before)
    with_nan = torch.tensor([1.0, NAN, INF, -2.0])
    copy, version = with_nan.clone(), with_nan._version
    tensor_stats(with_nan)
    assert with_nan._version == version and torch.equal(with_nan.isnan(), copy.isnan())
    assert torch.equal(with_nan.nan_to_num(), copy.nan_to_num())


def test_resolve_is_one_stack_and_one_transfer():
    stats = [tensor_stats(torch.randn(n)) for n in (1, 10, 100, 1000)] + [tensor_stats(torch.tensor([NAN]))]
    with count_calls(torch.Tensor, "tolist", "item", "cpu", "to", "numpy") as calls, \
            count_calls(torch, "stack") as stacks:
        rows = resolve(stats)
    assert calls == {"tolist": 1, "item": 0, "cpu": 0, "to": 0, "numpy": 0}
    assert stacks == {"stack": 1}
    assert len(rows) == 5 and all(len(r) == len(STATS_KEYS) for r in rows)
    for row in rows[:4]:
        assert all(type(x) is float for x in row[:6]) and all(type(x) is int for x in row[6:])
    assert rows[4][:5] == (None,) * 5 and rows[4][6:] == (1, 0)
    assert resolve([]) == []


# --- TorchStatsPlan -------------------------------------------------------------------------------

def make_pair(shapes, seed=0, grads=True, dtype=torch.float32):
    """Torch parameters and engine tensors holding the same values and gradients (a third of
    the tensors without a gradient)."""
    gen = torch.Generator().manual_seed(seed)
    params, twins = [], []
    for i, shape in enumerate(shapes):
        p = torch.nn.Parameter((torch.randn(shape, generator=gen) * (i + 1) + i).to(dtype))
        e = engine.tensor(p.detach().to(torch.float32).numpy().copy(), requires_grad=True)
        if grads and i % 3 != 2:
            p.grad = torch.randn(shape, generator=gen).to(dtype)
            e.grad = engine.tensor(p.grad.to(torch.float32).numpy().copy())
        params.append(p)
        twins.append(e)
    return params, twins


def paths(n):
    return [f"p{i}" for i in range(n)]


def ref_record(p: torch.Tensor, before: torch.Tensor | None = None) -> dict:
    """A ``params`` item in float64, by hand."""
    v = p.detach().to(torch.float64).reshape(-1)
    norm = float(v.norm()) if v.numel() else 0.0
    out = {"norm": norm, "mean": float(v.mean()) if v.numel() else 0.0,
           "std": float(v.std(correction=0)) if v.numel() else 0.0,
           "grad_norm": None if p.grad is None else float(p.grad.to(torch.float64).norm()), "update_ratio": None,
           "nan": int(v.isnan().sum()), "inf": int(v.isinf().sum())}
    if before is not None:
        out["update_ratio"] = float((v - before.to(torch.float64).reshape(-1)).norm()) / norm
    return out


def check_records(records, params, befores=None, rel=1e-9):
    for k, (rec, p) in enumerate(zip(records, params, strict=True)):
        assert rec["path"] == f"p{k}"
        assert list(rec) == ["path", "norm", "grad_norm", "update_ratio", "mean", "std", "nan", "inf"]
        scale = float(p.detach().double().abs().max()) if p.numel() else 1.0
        assert_close(rec, ref_record(p, None if befores is None else befores[k]), RECORD_FIGURES + ("nan", "inf"),
                     rel=rel, scale=scale * 1e-3)


def test_matches_the_engine_plan_on_the_mnist_net_with_an_update():
    params, twins = make_pair(NET)
    torch_plan, engine_plan = TorchStatsPlan(params), StatsPlan(twins)
    for step in range(3):  # buffers reused step after step
        torch_plan.snapshot()
        engine_plan.snapshot()
        with torch.no_grad():
            for p, e in zip(params, twins, strict=True):
                p.add_(0.01 * (step + 1))
                e._data += np.float32(0.01 * (step + 1))
        got, want = torch_plan.stats(paths(len(NET))), engine_plan.stats(paths(len(NET)))
        for g, w in zip(got, want, strict=True):
            assert g["path"] == w["path"]
            assert_close(g, w, RECORD_FIGURES + ("nan", "inf"), rel=1e-5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_matches_a_float64_reference(dtype):
    shapes = [(10, 5), (10,), (3, 4, 5), (1,), (200,), (7, 7), (CHUNK,), (CHUNK + 1,), (2 * CHUNK - 1,)]
    params, _ = make_pair(shapes, dtype=dtype)
    plan = TorchStatsPlan(params)
    plan.snapshot()
    befores = [p.detach().clone() for p in params]
    with torch.no_grad():
        for p in params:
            p.mul_(0.9).add_(0.01)
    check_records(plan.stats(paths(len(shapes))), params, befores)


def test_update_ratio_after_an_sgd_step_is_the_change_over_the_weight():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(20, 30), torch.nn.ReLU(), torch.nn.Linear(30, 3))
    params = list(model.parameters())
    optimizer = torch.optim.SGD(params, lr=0.1, momentum=0.9)
    plan = TorchStatsPlan(params)
    for _ in range(3):
        optimizer.zero_grad()
        model(torch.randn(8, 20)).square().mean().backward()
        plan.snapshot()
        before = [p.detach().clone() for p in params]
        optimizer.step()
        records = plan.stats(paths(len(params)))
        for rec, p, b in zip(records, params, before, strict=True):
            after = p.detach().double()
            by_hand = float((after - b.double()).norm() / after.norm())
            assert rec["update_ratio"] == pytest.approx(by_hand, rel=1e-9)
            assert rec["grad_norm"] == pytest.approx(float(p.grad.double().norm()), rel=1e-9)
    assert plan.matches(params)


def test_update_ratio_only_right_after_a_snapshot():
    params, _ = make_pair([(4, 4), (4,), (100,)])
    plan = TorchStatsPlan(params)
    assert all(r["update_ratio"] is None for r in plan.stats(paths(3)))
    plan.snapshot()
    assert all(r["update_ratio"] == 0.0 for r in plan.stats(paths(3)))
    assert all(r["update_ratio"] is None for r in plan.stats(paths(3)))  # used up


def test_missing_gradient_is_none_and_the_others_are_kept():
    params, _ = make_pair([(5,), (6,), (7,), (8,)], grads=False)
    params[1].grad = torch.full((6,), 2.0)
    records = TorchStatsPlan(params).stats(paths(4))
    assert [r["grad_norm"] for r in records] == [None, pytest.approx(math.sqrt(24.0)), None, None]
    params[0].grad = torch.ones(5)  # the next step has more gradients: the same plan sees them
    plan = TorchStatsPlan(params)
    plan.stats(paths(4))
    params[3].grad = torch.ones(8)
    assert [r["grad_norm"] is None for r in plan.stats(paths(4))] == [False, False, True, False]


def test_nan_and_inf_are_counted_and_stay_in_their_tensor():
    params, twins = make_pair([(6,), (3, 3), (5,), (70,), (9,)])
    with torch.no_grad():
        params[0][[1, 4]] = NAN
        params[1][0, 0] = INF
        params[3][[0, 65]] = -INF
        params[4].grad[0] = NAN
    for p, e in zip(params, twins, strict=True):
        e._data = p.detach().numpy().copy()
        if p.grad is not None:
            e._grad = engine.tensor(p.grad.numpy().copy())
    records = TorchStatsPlan(params).stats(paths(5))
    assert [(r["nan"], r["inf"]) for r in records] == [(2, 0), (0, 1), (0, 0), (0, 2), (0, 0)]
    assert records[0]["norm"] is None and records[0]["mean"] is None and records[0]["std"] is None
    assert records[1]["norm"] is None and records[3]["std"] is None
    assert records[4]["norm"] is not None and records[4]["grad_norm"] is None  # a NaN gradient: counted nowhere
    assert records[2]["norm"] is not None and records[2]["grad_norm"] is None  # no gradient
    for g, w in zip(records, StatsPlan(twins).stats(paths(5)), strict=True):
        assert_close(g, w, RECORD_FIGURES + ("nan", "inf"), rel=1e-5)


def test_update_from_non_finite_values_is_none():
    params, _ = make_pair([(8,), (4, 4)])
    plan = TorchStatsPlan(params)
    with torch.no_grad():
        params[0][2] = INF
        params[1][0, 1] = NAN
    plan.snapshot()
    with torch.no_grad():
        for p in params:
            p.fill_(1.0)
    records = plan.stats(paths(2))
    assert [r["update_ratio"] for r in records] == [None, None]
    assert [r["norm"] for r in records] == [pytest.approx(8 ** 0.5), pytest.approx(4.0)]
    assert all((r["nan"], r["inf"], r["std"]) == (0, 0, 0.0) for r in records)


def test_batchnorm_buffers_int_bool_and_empty_tensors():
    bn = torch.nn.BatchNorm1d(4)
    bn.train()
    for _ in range(3):
        bn(torch.randn(16, 4) * 3 + 1)
    buffers = [bn.running_mean, bn.running_var, bn.num_batches_tracked, torch.zeros(0),
               torch.tensor([True, False, True]), torch.tensor([2, -5, 0], dtype=torch.int32)]
    records = TorchStatsPlan(buffers).stats(paths(len(buffers)))
    assert records[2] | {"path": "p2"} == {"path": "p2", "norm": 3.0, "grad_norm": None, "update_ratio": None,
                                             "mean": 3.0, "std": 0.0, "nan": 0, "inf": 0}
    assert records[3] == {"path": "p3", "norm": 0.0, "grad_norm": None, "update_ratio": None, "mean": 0.0,
                          "std": 0.0, "nan": 0, "inf": 0}
    check_records(records, buffers)
    twins = [engine.tensor(b.numpy().copy()) for b in buffers]
    for g, w in zip(records, StatsPlan(twins).stats(paths(len(buffers))), strict=True):
        assert_close(g, w, RECORD_FIGURES + ("nan", "inf"), rel=1e-5)


def test_non_contiguous_tensors_and_gradients():
    base = torch.randn(12, 7, generator=torch.Generator().manual_seed(2))
    params = [torch.nn.Parameter(torch.randn(5, 3)), base.t(), torch.nn.Parameter(torch.randn(9))]
    params[0].grad = torch.randn(3, 5).t()  # a transposed gradient, as matmul's
    params[2].grad = torch.randn(18)[::2]
    assert not params[1].is_contiguous() and not params[0].grad.is_contiguous()
    plan = TorchStatsPlan(params)
    plan.snapshot()
    befores = [p.detach().clone() for p in params]
    with torch.no_grad():
        base.mul_(1.5)  # an in-place change the plan must see through its views
        params[0].add_(0.25)
    check_records(plan.stats(paths(3)), params, befores)


def test_a_mean_far_from_zero_keeps_the_std():
    """A norm layer's weight: mean 1, spread 1e-3 (the std from the sum of squares in float64)."""
    w = torch.nn.Parameter(1.0 + 1e-3 * torch.randn(512, generator=torch.Generator().manual_seed(4)))
    record = TorchStatsPlan([w]).stats(["p0"])[0]
    assert record["std"] == pytest.approx(float(w.detach().double().std(correction=0)), rel=1e-6)


@pytest.mark.parametrize("n", [1, 37, 16_000, 200_000])
def test_a_mean_near_zero_is_right_to_the_values_scale_in_the_plan(n):
    values = (np.random.default_rng(n).standard_normal(n) * 0.04 + 1e-4).astype(np.float32)
    p = torch.nn.Parameter(torch.from_numpy(values.copy()))
    mean = TorchStatsPlan([p], exact_stats=True).stats(["w"])[0]["mean"]  # (200,000: else sampled)
    exact = values.astype(np.float64).mean()
    assert abs(mean - exact) <= 1e-9 * np.abs(values.astype(np.float64)).mean()


def test_matches_only_the_same_tensors_with_the_same_storage_and_shape():
    params, _ = make_pair([(4, 4), (4,)])
    plan = TorchStatsPlan(params)
    assert plan.matches(list(params))
    assert not plan.matches(params[:1])
    assert not plan.matches(make_pair([(4, 4), (4,)], seed=1)[0])
    params[1].data = torch.zeros(4)  # same shape, new storage
    assert not plan.matches(params)
    plan = TorchStatsPlan(params)
    params[1].data = torch.zeros(5)  # new size
    assert not plan.matches(params)


def test_a_gradient_left_from_before_a_resize():
    params, _ = make_pair([(3,), (4,)], grads=False)
    params[0].grad = torch.tensor([1.0, 2.0, 2.0])
    params[0].data = torch.zeros(5)  # .data may change size; the old .grad stays
    records = TorchStatsPlan(params).stats(paths(2))
    assert records[0]["grad_norm"] == pytest.approx(3.0) and records[1]["grad_norm"] is None
    assert records[0]["norm"] == 0.0


def test_stats_is_one_transfer_and_reads_nothing_else_on_the_host():
    params, _ = make_pair(NET)
    plan = TorchStatsPlan(params)
    with count_calls(torch.Tensor, "tolist", "item", "cpu", "numpy", "__float__", "__bool__") as calls:
        plan.snapshot()
        plan.stats(paths(len(NET)))
    assert calls == {"tolist": 1, "item": 0, "cpu": 0, "numpy": 0, "__float__": 0, "__bool__": 0}


def test_stats_and_snapshot_leave_the_tensors_alone():
    params, _ = make_pair(NET)
    versions = [(p._version, p.grad._version if p.grad is not None else None) for p in params]
    values = [p.detach().clone() for p in params]
    plan = TorchStatsPlan(params)
    with torch.enable_grad():
        plan.snapshot()
        plan.stats(paths(len(NET)))
    assert [(p._version, p.grad._version if p.grad is not None else None) for p in params] == versions
    assert all(torch.equal(p.detach(), v) for p, v in zip(params, values, strict=True))
    assert all(p.grad_fn is None for p in params)


def test_no_tensors():
    assert TorchStatsPlan([]).stats([]) == []
    assert TorchStatsPlan([]).matches([])


def test_cpu_tensors_get_the_numpy_plan_through_views_with_the_same_figures():
    from modscope.capture.torch.param_stats import CpuStatsPlan, stats_plan

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.BatchNorm1d(5), torch.nn.Linear(5, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.5)
    tensors = [*model.parameters(), *model.buffers()]
    paths = [f"t{i}" for i in range(len(tensors))]
    cpu, device = stats_plan(tensors), TorchStatsPlan(tensors)
    assert isinstance(cpu, CpuStatsPlan)
    for _ in range(3):
        opt.zero_grad()  # a new gradient tensor each step: the views must follow it
        model(torch.randn(8, 6)).sum().backward()
        cpu.snapshot()
        device.snapshot()
        opt.step()
        for a, b in zip(cpu.stats(paths), device.stats(paths), strict=True):
            assert a.keys() == b.keys()
            for key in a:
                if isinstance(a[key], float):
                    # the NumPy plan's std comes from E[x^2] - mean^2 with float32 dots: for a
                    # BatchNorm weight (mean 1, spread 0.01) that is good to ~1e-5 of the scale
                    spread = 1e-5 * (abs(a["mean"] or 0.0) + 1.0) if key == "std" else 1e-7
                    assert a[key] == pytest.approx(b[key], rel=1e-5, abs=spread), key
                else:
                    assert a[key] == b[key], key
    assert cpu.matches(tensors)
    first = tensors[0]
    first.data = torch.zeros(5, 6)  # new memory: the views are stale, a new plan is needed
    assert not cpu.matches(tensors)
    assert not isinstance(stats_plan([torch.zeros(3, dtype=torch.bfloat16)]), CpuStatsPlan)


@pytest.mark.parametrize("opt", ["sgd", "adam"])
def test_a_large_cpu_parameter_has_its_update_sampled_after_a_real_optimizer_step(opt):
    """torch CPU tensors go through the engine's NumPy plan (``CpuStatsPlan``): a parameter of
    more than ``SAMPLE`` values has its update ratio estimated on a strided sample, close to the
    exact ratio after a real torch optimizer step; the other figures stay exact."""
    from modscope.capture import param_stats as ps
    from modscope.capture.torch.param_stats import CpuStatsPlan, stats_plan

    torch.manual_seed(0)
    w = torch.nn.Parameter(torch.randn(1000, 1000) * 0.02)
    small = torch.nn.Parameter(torch.randn(1000))
    plan = stats_plan([w, small], exact_stats=True)  # the values' figures exact (``test_sampled_stats``: not)
    assert isinstance(plan, CpuStatsPlan)
    optimizer = (torch.optim.SGD([w, small], lr=0.01, momentum=0.9) if opt == "sgd"
                 else torch.optim.Adam([w, small], lr=1e-3))
    for _ in range(3):
        optimizer.zero_grad()
        (((w.sum(1) * torch.linspace(0, 3, 1000)) ** 2).mean() + (w ** 2).sum()).backward()  # uneven rows
        (small ** 3).sum().backward()
        before = w.detach().clone().double()
        plan.snapshot()
        optimizer.step()
        rec_w, rec_small = plan.stats(["w", "small"])
    after = w.detach().double()
    exact = float((after - before).norm() / after.norm())
    assert rec_w["update_sampled"] == ps.sample_indices(1_000_000).size
    assert rec_w["update_ratio"] == pytest.approx(exact, rel=2e-2)
    assert "update_sampled" not in rec_small  # 1,000 values: measured exactly
    assert rec_w["norm"] == pytest.approx(float(after.norm()), rel=1e-6)
    assert rec_w["std"] == pytest.approx(float(after.std(unbiased=False)), rel=1e-5)
    assert rec_w["mean"] == pytest.approx(float(after.mean()), rel=1e-4, abs=1e-9)
    assert rec_w["grad_norm"] == pytest.approx(float(w.grad.double().norm()), rel=1e-5)
