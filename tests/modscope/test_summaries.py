"""Tensor summaries: the statistics match a float64 reference on the finite values, whatever
the dtype, and non-finite values are counted, never averaged in; what each capture backend
keeps of a tensor (the tests taking ``lib`` run on the engine and on torch)."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import engine
from modscope.capture.arrays import array_stats
from modscope.capture.backends import load
from modscope.events.records import expand


def reference(arr: np.ndarray) -> dict:
    flat = arr.reshape(-1).astype(np.float64)
    finite = flat[np.isfinite(flat)]
    out = {"nan": int(np.isnan(flat).sum()), "inf": int(np.isinf(flat).sum()),
           "zeros": float((finite == 0).sum()) / max(arr.size, 1)}
    if finite.size:
        out |= {"mean": finite.mean(), "std": finite.std(), "min": finite.min(), "max": finite.max(),
                "absmax": np.abs(finite).max()}
    return out


def check(arr: np.ndarray) -> None:
    got, want = array_stats(arr), reference(arr)
    assert got["nan"] == want["nan"] and got["inf"] == want["inf"]
    assert got["zeros"] == pytest.approx(want["zeros"])
    if "mean" not in want:
        assert got["mean"] is None and got["std"] is None and got["min"] is None
        return
    scale = max(want["absmax"], 1e-30)
    for key in ("mean", "min", "max", "absmax"):
        assert got[key] == pytest.approx(want[key], rel=1e-5, abs=1e-6 * scale), key
    assert got["std"] == pytest.approx(want["std"], rel=1e-4, abs=1e-6 * scale)


@settings(max_examples=150, deadline=None)
@given(hnp.arrays(np.float32, hnp.array_shapes(max_dims=3, max_side=40),
                  elements=st.floats(-1e6, 1e6, width=32)))
def test_finite_float32_matches_float64_reference(arr):
    check(arr)


@settings(max_examples=100, deadline=None)
@given(hnp.arrays(np.float32, st.integers(1, 200),
                  elements=st.one_of(st.floats(-100, 100, width=32), st.just(0.0),
                                     st.sampled_from([np.nan, np.inf, -np.inf]))))
def test_nan_and_inf_are_counted_and_left_out(arr):
    check(arr)


@pytest.mark.parametrize("arr", [
    np.arange(12, dtype=np.int64).reshape(3, 4),
    np.array([True, False, False]),
    np.array([1.5, 0.0, -2.25], dtype=np.float16),
    np.array([1.0, 2.0, 4.0], dtype=np.float64),
    np.asfortranarray(np.arange(20, dtype=np.float32).reshape(4, 5)),  # not C-contiguous
    np.arange(20, dtype=np.float32)[::3],
], ids=["int64", "bool", "float16", "float64", "fortran", "strided"])
def test_other_dtypes_and_layouts(arr):
    check(arr)


def test_large_offset_keeps_the_spread():
    # mean/std = 1e5: a one-pass E[x^2] - mean^2 in float32 would lose the spread entirely.
    arr = (1e5 + np.random.default_rng(0).standard_normal(100_000)).astype(np.float32)
    check(arr)


def test_values_whose_sum_overflows_float32_are_exact_and_silent():
    arr = np.array([3e38, 3e38, -1.0], dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the traced program must see no RuntimeWarning
        got = array_stats(arr)
    assert got["nan"] == got["inf"] == 0
    assert got["mean"] == pytest.approx((6e38 - 1) / 3, rel=1e-6)
    assert got["max"] == pytest.approx(3e38, rel=1e-6)


def test_values_whose_squares_overflow_float32_keep_a_finite_spread():
    check(np.array([1e20, 2e20, 3e20], dtype=np.float32))


@pytest.mark.parametrize("offset", [0.0, 3.0, 1e3])
def test_spread_with_the_mean_near_or_far_from_zero(offset):
    check((offset + np.random.default_rng(1).standard_normal(50_000)).astype(np.float32))


def test_empty_and_all_nan():
    assert array_stats(np.zeros((0, 3), np.float32)) == {
        "mean": None, "std": None, "min": None, "max": None, "absmax": None, "zeros": 0.0, "nan": 0, "inf": 0}
    got = array_stats(np.full(4, np.nan, np.float32))
    assert got["nan"] == 4 and got["mean"] is None and got["zeros"] == 0.0


def _summaries(lib, value, stats=False, tid=True):
    """The summaries ``lib``'s backend gives ``value`` (a tensor, or nested tuples/lists/dicts)."""
    return expand(load(lib.__name__).capture_all(value, tid=tid, stats=stats))


def _named(lib, t):
    """What a tensor id names: the engine's NumPy array (a module's backward hooks hand the next
    module a new Tensor on the same array), torch's tensor object."""
    return t._data if lib.__name__ == "engine" else t


def test_summary_shape_dtype_and_tid(lib):
    t = lib.ones(2, 3)
    (s,) = _summaries(lib, t)
    assert s["shape"] == [2, 3] and s["dtype"] == "float32" and isinstance(s["tid"], int)
    assert _summaries(lib, (t,))[0]["tid"] == s["tid"]  # same data, same id
    assert _summaries(lib, lib.zeros(2, 3))[0]["tid"] != s["tid"]
    assert "tid" not in _summaries(lib, t, tid=False)[0]
    assert _summaries(lib, 3.0) == [None]
    assert _summaries(lib, lib.ones(2, dtype=lib.int64))[0]["dtype"] == "int64"


def _tid_of_summary(lib, t):
    return _summaries(lib, t)[0]["tid"]


def _tid_of_capture(lib, t):  # the one-tensor case of capture_all, a module's usual input
    return load(lib.__name__).capture_all((t,))[0][2]


@pytest.mark.parametrize("tid_of", [_tid_of_summary, _tid_of_capture], ids=["summarize", "capture_all"])
def test_tid_of_a_freed_array_is_never_reused(lib, tid_of):
    """An array that died and a new one at the same address (CPython reuses it at once) get
    different ids, though the map no longer holds the first array."""
    seen = {}
    for _ in range(50):
        t = lib.ones(8)
        address, tid = id(_named(lib, t)), tid_of(lib, t)
        if address in seen:
            assert tid != seen[address]
            return
        seen[address] = tid
        del t
    pytest.skip("no address was reused in 50 allocations")


@pytest.mark.parametrize("stats", [False, True])
def test_summaries_do_not_keep_arrays_alive(lib, stats):
    """Activations and gradients summarised in a step are freed when the program drops them,
    before the step ends (holding them would slow the next allocations down)."""
    import gc
    import weakref

    load(lib.__name__).forget_arrays()
    x = lib.ones(3, 4, requires_grad=True)
    y = x * 2.0
    g = lib.ones(2)
    _summaries(lib, y, stats=stats)
    _summaries(lib, g, stats=stats, tid=False)  # as a gradient
    refs = [weakref.ref(_named(lib, y)), weakref.ref(_named(lib, g))]
    del y, g
    gc.collect()
    assert [r() for r in refs] == [None, None]


def test_forward_stats_are_shared_but_never_stale(lib):
    def mean_and_max(t):
        (s,) = _summaries(lib, t, stats=True)
        return s["mean"], s["max"]

    t = lib.ones(4)
    assert mean_and_max(t) == mean_and_max(t) == (1.0, 1.0)
    t.mul_(3.0)  # in place: the version counter moves, the statistics are taken again
    assert mean_and_max(t) == (3.0, 3.0)
    view = t[:2]
    view.add_(1.0)  # through a view: same counter
    assert mean_and_max(t) == (3.5, 4.0)
    load(lib.__name__).forget_arrays()
    assert mean_and_max(t) == (3.5, 4.0)


VALUES = [lambda t: t, lambda t: (t, 3, None), lambda t: [t, (t, {"a": t, "b": 2})], lambda t: {"x": t},
          lambda t: 5, lambda t: (), lambda t: ((t,), []), lambda t: (t,), lambda t: [t],
          lambda t: t.sum(), lambda t: (t.sum(),)]
VALUE_IDS = ["tensor", "tuple", "nested", "dict", "scalar", "empty", "empty-inner", "one-in-tuple", "one-in-list",
             "0-d", "0-d-in-tuple"]


@pytest.mark.parametrize("value", VALUES, ids=VALUE_IDS)
@pytest.mark.parametrize("stats", [False, True])
def test_deferred_summaries_equal_immediate_ones(value, stats):
    # engine only: summarize/summarize_all are the engine backend's immediate forms (torch has none)
    from modscope.capture.engine.summaries import capture_all, summarize, summarize_all

    t = engine.ones(2, 3)
    v = value(t)
    assert expand(capture_all(v, stats=stats)) == summarize_all(v, stats=stats)
    assert expand(capture_all(v, tid=False, stats=stats)) == summarize_all(v, stats=stats, tid=False)
    assert summarize(t, stats=stats) == summarize_all(t, stats=stats)[0] and summarize(3.0) is None


@pytest.mark.parametrize("value", VALUES, ids=VALUE_IDS)
@pytest.mark.parametrize("stats", [False, True])
def test_captured_values_split_back_from_a_trace_record(lib, value, stats):
    from modscope.events.records import flat_fields, split_fields

    v = value(lib.ones(2, 3))
    captured = load(lib.__name__).capture_all(v, stats=stats)
    assert len(captured) == len(list(_leaves(v)))
    # as a trace keeps them: one flat tuple, non-tensor values included, split back the same
    fields = flat_fields(captured, stats)
    assert all(not isinstance(f, tuple) or all(type(x) is int for x in f) for f in fields)  # shapes only
    assert split_fields(fields, len(captured)) == captured


def _leaves(value):
    if isinstance(value, tuple | list):
        for v in value:
            yield from _leaves(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _leaves(v)
    else:
        yield value


def test_captured_shapes_are_shared_and_ids_follow_the_array():
    """The one-tensor case (a module's usual input, output or gradient): equal shapes become one
    tuple (a trace keeps thousands), the same array keeps its id, another array gets a new one
    (one at the address of an array that died: ``test_tid_of_a_freed_array_is_never_reused``)."""
    # engine only: torch's backend keeps each shape as torch gives it and names tensor objects
    from modscope.capture.engine.summaries import capture_all

    a, b = engine.ones(2, 3), engine.zeros(2, 3)
    (ca,), (cb,) = capture_all((a,)), capture_all(b)
    assert ca[0] is cb[0] and ca[0] == (2, 3)
    assert capture_all(a)[0][2] == ca[2] != cb[2]
    assert capture_all((engine.Tensor._wrap(a._data),))[0][2] == ca[2]  # a new Tensor on the same data


@pytest.mark.parametrize("n", [8191, 8192, 100_003, 2_000_000])
def test_blocked_sum_is_as_accurate_as_numpys(n):
    from modscope.capture.arrays import _sum

    a = (np.random.default_rng(n).standard_normal(n) * 5 + 2).astype(np.float32)
    exact = a.astype(np.float64).sum()
    assert abs(_sum(a) - exact) <= 4 * abs(float(np.add.reduce(a)) - exact) + 1e-6 * np.abs(a).sum() * 1e-3
    a[n // 2] = np.nan
    assert np.isnan(_sum(a))
    a[n // 2] = -np.inf
    assert _sum(a) == -np.inf
