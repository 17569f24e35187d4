"""engine.testing.assert_close and make_tensor against torch.testing: which inputs pass, and for
those that fail the exception type and the whole message (torch's names swapped for engine's)."""

from __future__ import annotations

import numpy as np
import pytest

import engine
import engine.testing

torch = pytest.importorskip("torch")

NAN, INF = float("nan"), float("inf")

# name -> call(lib); each runs assert_close under engine and under torch
CASES = {
    "close_float32": lambda lib: lib.testing.assert_close(lib.tensor([1.0, 2.0]), lib.tensor([1.0, 2.000001])),
    "far_float32": lambda lib: lib.testing.assert_close(lib.tensor([1.0, 2.0, 3.0]), lib.tensor([1.0, 2.5, 3.1])),
    "far_2d": lambda lib: lib.testing.assert_close(lib.tensor([[1.0, 2.0], [3.0, 4.0]]),
                                                   lib.tensor([[1.0, 2.0], [3.0, 4.5]])),
    "just_outside_float32": lambda lib: lib.testing.assert_close(lib.tensor([1.0, 2.0]), lib.tensor([1.0, 2.0001])),
    "float64_default": lambda lib: lib.testing.assert_close(lib.tensor([1.0, 2.0], dtype=lib.float64),
                                                            lib.tensor([1.0, 2.0 + 1e-6], dtype=lib.float64)),
    "float64_inside": lambda lib: lib.testing.assert_close(lib.tensor([1.0, 2.0], dtype=lib.float64),
                                                           lib.tensor([1.0, 2.0 + 1e-8], dtype=lib.float64)),
    "float16": lambda lib: lib.testing.assert_close(lib.tensor([1.0, 2.0], dtype=lib.float16),
                                                    lib.tensor([1.0, 2.002], dtype=lib.float16)),
    "float16_far": lambda lib: lib.testing.assert_close(lib.tensor([1.0, 2.0], dtype=lib.float16),
                                                        lib.tensor([1.0, 2.1], dtype=lib.float16)),
    "zero_expected": lambda lib: lib.testing.assert_close(lib.tensor([0.0, 2.0]), lib.tensor([1e-3, 2.0])),
    "scalar_tensor": lambda lib: lib.testing.assert_close(lib.tensor(1.0), lib.tensor(2.0)),
    "int_tensor": lambda lib: lib.testing.assert_close(lib.tensor([1, 2]), lib.tensor([1, 3])),
    "bool_tensor": lambda lib: lib.testing.assert_close(lib.tensor([True, False]), lib.tensor([True, True])),
    "dtype_mismatch": lambda lib: lib.testing.assert_close(lib.tensor([1.0, 2.0]),
                                                           lib.tensor([1.0, 2.0], dtype=lib.float64)),
    "dtype_unchecked": lambda lib: lib.testing.assert_close(lib.tensor([1.0, 2.0]), lib.tensor(
        [1.0, 2.00001], dtype=lib.float64), check_dtype=False),
    "int_vs_float_tensor": lambda lib: lib.testing.assert_close(lib.tensor([1, 2]), lib.tensor([1.0, 2.0])),
    "shape_mismatch": lambda lib: lib.testing.assert_close(lib.tensor([1.0, 2.0]), lib.tensor([1.0, 2.0, 3.0])),
    "nan_unequal": lambda lib: lib.testing.assert_close(lib.tensor([1.0, NAN]), lib.tensor([1.0, NAN])),
    "nan_equal": lambda lib: lib.testing.assert_close(lib.tensor([1.0, NAN]), lib.tensor([1.0, NAN]), equal_nan=True),
    "inf_same": lambda lib: lib.testing.assert_close(lib.tensor([1.0, INF]), lib.tensor([1.0, INF])),
    "inf_opposite": lambda lib: lib.testing.assert_close(lib.tensor([1.0, INF]), lib.tensor([1.0, -INF])),
    "custom_tolerance_pass": lambda lib: lib.testing.assert_close(lib.tensor([1.0, 2.0]), lib.tensor([1.0, 2.1]),
                                                                  rtol=0.1, atol=0),
    "custom_tolerance_fail": lambda lib: lib.testing.assert_close(lib.tensor([1.0, 2.0]), lib.tensor([1.0, 2.5]),
                                                                  rtol=0.1, atol=0.01),
    "exact_requested": lambda lib: lib.testing.assert_close(lib.tensor([1.0, 2.0]), lib.tensor([1.0, 2.5]),
                                                            rtol=0, atol=0),
    "rtol_without_atol": lambda lib: lib.testing.assert_close(lib.tensor([1.0]), lib.tensor([1.0]), rtol=0.1),
    "atol_without_rtol": lambda lib: lib.testing.assert_close(lib.tensor([1.0]), lib.tensor([1.0]), atol=0.1),
    "msg_string": lambda lib: lib.testing.assert_close(lib.tensor([1.0, 2.0]), lib.tensor([1.0, 2.5]), msg="custom"),
    "msg_callable": lambda lib: lib.testing.assert_close(lib.tensor([1.0, 2.0]), lib.tensor([1.0, 2.5]),
                                                         msg=lambda m: "X" + m),
    "floats_close": lambda lib: lib.testing.assert_close(1.0, 1.0 + 1e-8),
    "floats_far": lambda lib: lib.testing.assert_close(1.0, 1.1),
    "ints_far": lambda lib: lib.testing.assert_close(1, 2),
    "int_vs_float": lambda lib: lib.testing.assert_close(1, 1.0),
    "int_vs_float_unchecked": lambda lib: lib.testing.assert_close(1, 1.0, check_dtype=False),
    "complex_numbers": lambda lib: lib.testing.assert_close(1 + 1j, 1 + 2j),
    "nan_numbers": lambda lib: lib.testing.assert_close(NAN, NAN, equal_nan=True),
    "bools": lambda lib: lib.testing.assert_close(True, False),
    "tensor_vs_number": lambda lib: lib.testing.assert_close(lib.tensor(1.0), 1.0),
    "number_vs_tensor": lambda lib: lib.testing.assert_close(1.0, lib.tensor(1.0)),
    "tensor_vs_list": lambda lib: lib.testing.assert_close(lib.tensor([1.0, 2.0]), [1.0, 2.0]),
    "strings": lambda lib: lib.testing.assert_close("a", "a"),
    "list_of_tensors": lambda lib: lib.testing.assert_close([lib.tensor(1.0), lib.tensor(2.0)],
                                                            [lib.tensor(1.0), lib.tensor(3.0)]),
    "nested_mapping": lambda lib: lib.testing.assert_close({"a": lib.tensor(1.0), "b": [lib.tensor([2.0, 1.0])]},
                                                           {"a": lib.tensor(1.0), "b": [lib.tensor([3.0, 1.0])]}),
    "sequence_lengths": lambda lib: lib.testing.assert_close([1, 2], [1, 2, 3]),
    "mapping_keys": lambda lib: lib.testing.assert_close({"a": 1, "c": 2}, {"b": 1, "c": 2}),
    "tuple_vs_list": lambda lib: lib.testing.assert_close((1, 2.0), [1, 2.0]),
    "nones": lambda lib: lib.testing.assert_close(None, None),
    "tensor_vs_none": lambda lib: lib.testing.assert_close(lib.tensor([1.0]), None),
    "numpy_arrays": lambda lib: lib.testing.assert_close(np.array([1.0, 2.0]), np.array([1.0, 2.5])),
    "numpy_vs_tensor": lambda lib: lib.testing.assert_close(lib.tensor([1.0, 2.0], dtype=lib.float64),
                                                            np.array([1.0, 2.0])),
    "requires_grad_ignored": lambda lib: lib.testing.assert_close(lib.tensor([1.0], requires_grad=True),
                                                                  lib.tensor([1.0])),
    "stride_checked": lambda lib: lib.testing.assert_close(lib.ones(2, 3).t(), lib.ones(3, 2), check_stride=True),
    "stride_unchecked": lambda lib: lib.testing.assert_close(lib.ones(2, 3).t(), lib.ones(3, 2)),
    "nan_index_first": lambda lib: lib.testing.assert_close(lib.tensor([1.0, 5.0, NAN]), lib.tensor([2.0, 1.0, 0.0])),
    "large_int_diff": lambda lib: lib.testing.assert_close(lib.tensor([10, -7, 3], dtype=lib.int32),
                                                           lib.tensor([1, 7, 3], dtype=lib.int32)),
    "empty": lambda lib: lib.testing.assert_close(lib.zeros(0), lib.zeros(0)),
    "parameter_vs_tensor": lambda lib: lib.testing.assert_close(lib.nn.Parameter(lib.ones(2)), lib.ones(2)),
    "parameter_no_subclasses": lambda lib: lib.testing.assert_close(lib.nn.Parameter(lib.ones(2)), lib.ones(2),
                                                                    allow_subclasses=False),
}


def _outcome(lib, case):
    try:
        CASES[case](lib)
    except Exception as exc:  # noqa: BLE001 - the type is part of what is compared
        return type(exc).__name__, str(exc)
    return None


def _torch_names(text: str) -> str:
    return (text.replace("engine._tensor.Tensor", "torch.Tensor").replace("engine.nn.parameter.Parameter",
                                                                          "torch.nn.parameter.Parameter")
            .replace("engine.", "torch."))


@pytest.mark.parametrize("case", sorted(CASES))
def test_outcome_and_message_match_torch(case):
    mine, ref = _outcome(engine, case), _outcome(torch, case)
    if ref is None:
        assert mine is None
    else:
        assert mine is not None, f"torch raised {ref}, engine passed"
        assert (mine[0], _torch_names(mine[1])) == ref


def test_default_tolerances_are_torchs_per_dtype():
    """Just inside and just outside each dtype's (rtol, atol) around 1.0."""
    for edt, (rtol, atol) in ((engine.float32, (1.3e-6, 1e-5)), (engine.float64, (1e-7, 1e-7)),
                              (engine.float16, (1e-3, 1e-5))):
        tol = atol + rtol
        engine.testing.assert_close(engine.tensor([1.0], dtype=engine.float64).to(edt),
                                    engine.tensor([1.0 + 0.5 * tol], dtype=engine.float64).to(edt))
        with pytest.raises(AssertionError, match="not close"):
            engine.testing.assert_close(engine.tensor([1.0], dtype=edt), engine.tensor([1.0 + 4 * tol + 1e-3 * (
                edt == engine.float16)], dtype=edt))
    with pytest.raises(AssertionError, match="Tensor-likes are not equal!"):
        engine.testing.assert_close(engine.tensor([1, 2]), engine.tensor([1, 3]))


def test_make_tensor_ranges_dtypes_and_errors():
    engine.manual_seed(0)
    x = engine.testing.make_tensor(200, dtype=engine.float32, device="cpu")
    assert x.dtype == engine.float32 and tuple(x.shape) == (200,)
    assert -9 <= x.min().item() and x.max().item() < 9
    i = engine.testing.make_tensor((3, 4), dtype=engine.int64, device="cpu", low=0, high=3, exclude_zero=True)
    assert tuple(i.shape) == (3, 4) and set(np.unique(i.numpy())) <= {1, 2}
    u = engine.testing.make_tensor(500, dtype=engine.uint8, device="cpu")
    assert u.min().item() >= 0 and u.max().item() < 10
    b = engine.testing.make_tensor(2, 3, dtype=engine.bool, device="cpu")
    assert b.dtype == engine.bool
    assert engine.testing.make_tensor(2, dtype=engine.float64, device="cpu", requires_grad=True).requires_grad
    with pytest.warns(FutureWarning, match="low==high"):
        assert engine.testing.make_tensor(3, dtype=engine.float32, device="cpu", low=1, high=1).tolist() == [1.0] * 3
    for kwargs in ({"low": 2, "high": 1}, {"low": NAN}):
        with pytest.raises(ValueError) as e_err:
            engine.testing.make_tensor(3, dtype=engine.float32, device="cpu", **kwargs)
        with pytest.raises(ValueError) as t_err:
            torch.testing.make_tensor(3, dtype=torch.float32, device="cpu", **kwargs)
        assert str(e_err.value) == str(t_err.value)
    with pytest.raises(ValueError) as e_err:
        engine.testing.make_tensor(2, dtype=engine.int64, device="cpu", requires_grad=True)
    with pytest.raises(ValueError) as t_err:
        torch.testing.make_tensor(2, dtype=torch.int64, device="cpu", requires_grad=True)
    assert _torch_names(str(e_err.value)) == str(t_err.value)
    with pytest.raises(RuntimeError, match="cuda"):
        engine.testing.make_tensor(2, dtype=engine.float32, device="cuda")
