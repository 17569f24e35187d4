"""``range`` (deprecated, inclusive end, default float dtype, its warning), ``arange``'s bound checks
and 0-d tensor bounds, and ``empty_permuted`` (strides from a physical layout): values, dtypes,
strides and errors against torch's."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import engine

torch = pytest.importorskip("torch")
LIBS = [engine, torch]

RANGE_CALLS = [
    ((1, 4), {}), ((0, 1, 0.1), {}), ((0, 1, 0.3), {}), ((4, 1, -1), {}), ((1, 2, 0.5), {"dtype": "float64"}),
    ((1, 4), {"dtype": "int32"}), ((0, 10, 2.5), {"dtype": "int64"}), ((-1.5, 2.5, 1.5), {"dtype": "int64"}),
    ((0.5, 3, 1), {"dtype": "int64"}), ((0, 1e8, 3e7), {}), ((2, 2), {}), ((-3, 3, 2), {"dtype": "float16"}),
]


def _kw(lib, kwargs):
    return {k: getattr(lib, v) if k == "dtype" else v for k, v in kwargs.items()}


@pytest.mark.parametrize(("args", "kwargs"), RANGE_CALLS)
def test_range_values_and_dtype(args, kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        ours = engine.range(*args, **_kw(engine, kwargs))
        theirs = torch.range(*args, **_kw(torch, kwargs))
    assert str(ours.dtype).split(".")[1] == str(theirs.dtype).split(".")[1]
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_range_warns_as_torch_at_the_callers_line():
    for lib in LIBS:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lib.range(1, 2)
        assert [w.category for w in caught] == [UserWarning]
        assert str(caught[0].message).startswith("torch.range is deprecated and will be removed in a future release")
        assert str(caught[0].message).endswith("use torch.arange, which produces values in [start, end).")
        assert caught[0].filename == __file__


def test_range_keywords_out_and_tensor_bounds():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for lib in LIBS:
            out = lib.empty(4)
            assert lib.range(1, 4, out=out) is out and out.tolist() == [1.0, 2.0, 3.0, 4.0]
            r = lib.range(lib.tensor(1), lib.tensor(3.5))
            assert r.tolist() == [1.0, 2.0, 3.0] and r.dtype == lib.float32
            assert lib.range(end=3, start=0).tolist() == [0.0, 1.0, 2.0, 3.0]
            assert lib.range(1, 3, requires_grad=True).requires_grad


@pytest.mark.parametrize(("args", "kwargs", "error", "match"), [
    ((1, 4, 0), {}, RuntimeError, "step must be nonzero"),
    ((4, 1), {}, RuntimeError, "upper bound and lower bound inconsistent with step sign"),
    ((1, float("inf")), {}, RuntimeError, "unsupported range: 1 -> inf"),
    ((1, float("nan")), {}, RuntimeError, "unsupported range: 1 -> nan"),
    ((5,), {}, TypeError, 'range\\(\\) missing 1 required positional arguments: "end"'),
    ((1, 4), {"dtype": "bool"}, NotImplementedError, "\"range_cpu\" not implemented for 'Bool'"),
])
def test_range_errors(args, kwargs, error, match):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for lib in LIBS:
            with pytest.raises(error, match=match):
                lib.range(*args, **_kw(lib, kwargs))


def test_range_integer_step_truncated_to_zero_is_an_error():
    """torch casts the step to the integer dtype and then divides by it: SIGFPE kills the process
    (checked in a child process would take seconds; the engine raises its nonzero-step error)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        with pytest.raises(RuntimeError, match="step must be nonzero"):
            engine.range(1, 3, 0.7, dtype=engine.int64)


@pytest.mark.parametrize(("args", "match"), [
    ((1, float("inf")), "unsupported range: 1 -> inf"), ((float("nan"),), "unsupported range: 0 -> nan"),
    ((4, 1), "upper bound and lower bound inconsistent with step sign"), ((0, 3, 0), "step must be nonzero"),
])
def test_arange_errors(args, match):
    for lib in LIBS:
        with pytest.raises(RuntimeError, match=match):
            lib.arange(*args)


def test_arange_tensor_bounds_and_infinite_step():
    for lib in LIBS:
        t = lib.arange(lib.tensor(3))
        assert t.tolist() == [0, 1, 2] and t.dtype == lib.int64
        assert lib.arange(lib.tensor(1.5), 4).tolist() == [1.5, 2.5, 3.5]
        assert lib.arange(0, 1, float("inf")).tolist() == []
        np.testing.assert_array_equal(lib.arange(0, 1, 0.1).numpy(), torch.arange(0, 1, 0.1).numpy())


@pytest.mark.parametrize(("size", "layout"), [
    ((2, 3, 5, 7), (0, 2, 3, 1)), ((2, 3, 5, 7), (0, 1, 2, 3)), ((2, 3), (1, 0)), ((2, 0, 3), (2, 0, 1)),
    ((), ()), ((4, 1, 3), (1, 2, 0)), ([2, 3], [1, 0]),
])
def test_empty_permuted_strides(size, layout):
    ours, theirs = engine.empty_permuted(size, layout), torch.empty_permuted(size, layout)
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert ours.stride() == theirs.stride()
    assert ours.dtype == engine.float32 and ours.is_contiguous() == theirs.is_contiguous()
    if ours.numel():
        assert ours.dim_order() == theirs.dim_order()


def test_empty_permuted_keywords():
    for lib in LIBS:
        t = lib.empty_permuted((2, 3, 4, 5), (0, 2, 3, 1), dtype=lib.int64, requires_grad=False)
        assert t.dtype == lib.int64 and t.is_contiguous(memory_format=lib.channels_last)
        assert lib.empty_permuted((2, 3), (1, 0), requires_grad=True).requires_grad
        with pytest.raises(RuntimeError, match="pin_memory=True requires a CUDA or other accelerator backend"):
            lib.empty_permuted((2, 3), (1, 0), pin_memory=True)
        with pytest.raises(TypeError, match="unexpected keyword argument 'memory_format'"):
            lib.empty_permuted((2, 3), (1, 0), memory_format=lib.contiguous_format)


@pytest.mark.parametrize(("args", "error", "match"), [
    (((2, 3), (0, 0)), RuntimeError, "Duplicate dim not allowed"),
    (((2, 3), (-1, 0)), RuntimeError, r"Dimension out of range \(expected to be between 0 and 1, but got -1 at "
                                      r"index 0\)\.  NB: negative dims not currently supported"),
    (((2, 3), (0, 2)), RuntimeError, r"but got 2 at index 1\)"),
    (((2, 3), (1,)), RuntimeError, r"len\(size\) = 2 is not equal to len\(physical_layout\) = 1"),
    (((2, 3), 7), TypeError, r"empty_permuted\(\): argument 'physical_layout' \(position 2\) must be tuple of "
                             "ints, not int"),
    ((2, (0,)), TypeError, r"empty_permuted\(\): argument 'size' \(position 1\) must be tuple of ints, not int"),
    (((2, -1), (0, 1)), RuntimeError, r"Trying to create tensor with negative dimension -1: \[2, -1\]"),
])
def test_empty_permuted_errors(args, error, match):
    for lib in LIBS:
        with pytest.raises(error, match=match):
            lib.empty_permuted(*args)
