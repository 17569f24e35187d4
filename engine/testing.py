"""``engine.testing`` (``torch.testing``): ``assert_close`` with torch's tolerances, pairing rules
and error messages, and ``make_tensor``.

``assert_close`` walks sequences and mappings in step, then compares each pair of leaves:
``None`` with ``None``, bools by equality, Python numbers, and tensors (or NumPy arrays, which
torch also accepts) elementwise with ``|actual - expected| <= atol + rtol * |expected|``. The
first failure raises; its message is torch's, word for word, down to the "Greatest absolute
difference ... at index ..." lines and the "The failure occurred for item [...]" suffix.
"""

from __future__ import annotations

import collections.abc
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from . import _creation, _dtype, _random
from ._tensor import Size, Tensor

__all__ = ["assert_close", "make_tensor"]

# torch.testing's default (rtol, atol) per floating/complex dtype; other dtypes compare exactly
_PRECISIONS = {np.dtype(np.float16): (1e-3, 1e-5), np.dtype(np.float32): (1.3e-6, 1e-5),
               np.dtype(np.float64): (1e-7, 1e-7), np.dtype(np.complex64): (1.3e-6, 1e-5),
               np.dtype(np.complex128): (1e-7, 1e-7)}
_NUMBER_DTYPE = {int: np.dtype(np.int64), float: np.dtype(np.float64), complex: np.dtype(np.complex128)}


class _Failure(Exception):
    """A comparison failure: the exception type to raise, torch's message, and where it happened."""

    def __init__(self, kind: type[Exception], msg: str, path: tuple = ()) -> None:
        super().__init__(msg)
        self.kind, self.msg, self.path = kind, msg, path

    def to_error(self, msg: str | Callable[[str], str] | None) -> Exception:
        if isinstance(msg, str):
            return self.kind(msg)
        generated = self.msg
        if self.path:
            generated += f"\n\nThe failure occurred for item {''.join(str([item]) for item in self.path)}"
        return self.kind(msg(generated) if msg else generated)


def _tolerances(dtypes: list[np.dtype], rtol: float | None, atol: float | None) -> tuple[float, float]:
    if (rtol is None) != (atol is None):
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, "
                         f"but got no {'rtol' if rtol is None else 'atol'}.")
    if rtol is not None:
        return rtol, atol
    pairs = [_PRECISIONS.get(np.dtype(d), (0.0, 0.0)) for d in dtypes]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


def _mismatch_msg(default_identifier: str, extra: str, abs_diff: Any, abs_idx: Any, atol: float, rel_diff: Any,
                  rel_idx: Any, rtol: float) -> str:
    """torch's ``_make_mismatch_msg``: the header, ``extra``, and the two difference lines."""
    equality = rtol == 0 and atol == 0

    def line(kind: str, diff: Any, idx: Any, tol: float) -> str:
        msg = f"{kind.title()} difference: {diff}" if idx is None else \
            f"Greatest {kind} difference: {diff} at index {idx}"
        return msg + ("" if equality else f" (up to {tol} allowed)") + "\n"

    msg = f"{default_identifier} are not {'equal' if equality else 'close'}!\n\n"
    if extra:
        msg += f"{extra.strip()}\n"
    msg += line("absolute", abs_diff, abs_idx, atol) + line("relative", rel_diff, rel_idx, rtol)
    return msg.strip()


def _scalar_msg(actual: Any, expected: Any, rtol: float, atol: float) -> str:
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    return _mismatch_msg("Scalars", f"Expected {expected} but got {actual}.", abs_diff, None, atol, rel_diff, None,
                         rtol)


def _isclose(a: np.ndarray, e: np.ndarray, rtol: float, atol: float, equal_nan: bool) -> np.ndarray:
    """torch.isclose: equal values (infinities included) or finite and within tolerance."""
    with np.errstate(invalid="ignore", over="ignore"):
        if a.dtype.kind in "biu" and e.dtype.kind in "biu" and rtol == 0 and atol == 0:
            return a == e
        close = a == e
        if equal_nan:
            close |= np.isnan(a) & np.isnan(e)
        if rtol == 0 and atol == 0:
            return close
        diff = np.abs(a.astype(np.result_type(a, e)) - e)
        within = np.isfinite(diff) & (diff <= atol + rtol * np.abs(e))
        return close | within


def _tensor_msg(a: np.ndarray, e: np.ndarray, matches: np.ndarray, rtol: float, atol: float) -> str:
    """torch's ``make_tensor_mismatch_msg``: differences over the mismatched elements only, integer
    tensors differenced in int64, relative differences of integers in the default float dtype."""
    total = matches.size
    mismatches = total - int(matches.sum())
    extra = f"Mismatched elements: {mismatches} / {total} ({mismatches / total:.1%})"
    af, ef, mf = a.reshape(-1), e.reshape(-1), matches.reshape(-1)
    integral = a.dtype.kind in "biu"
    if integral:
        af, ef = af.astype(np.int64), ef.astype(np.int64)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        abs_diff = np.abs(af - ef)
        abs_diff[mf] = 0
        rel = abs_diff / np.abs(ef)
        if integral:
            rel = rel.astype(_dtype._default_float.np)
        rel[mf] = 0
    ai, ri = _argmax_nan(abs_diff), _argmax_nan(rel)

    def where(i: int) -> tuple:
        return tuple(int(v) for v in np.unravel_index(i, a.shape)) if a.shape else ()

    return _mismatch_msg("Tensor-likes", extra, abs_diff[ai].item(), where(ai), atol, rel[ri].item(), where(ri), rtol)


def _argmax_nan(x: np.ndarray) -> int:
    """torch.max's index: a NaN counts as the maximum (the first one)."""
    nan = np.isnan(x) if x.dtype.kind in "fc" else np.zeros(x.shape, bool)
    return int(np.argmax(nan)) if nan.any() else int(np.argmax(x))


def _as_array(x: Any) -> tuple[np.ndarray, Tensor | None]:
    if isinstance(x, Tensor):
        return x.detach().numpy(), x
    return np.asarray(x), None


def _dtype_name(t: Tensor | None, arr: np.ndarray) -> str:
    return str(t.dtype) if t is not None else str(_creation.tensor(np.zeros(0, arr.dtype)).dtype)


def _compare_tensors(actual: Any, expected: Any, path: tuple, opts: dict) -> None:
    a, ta = _as_array(actual)
    e, te = _as_array(expected)
    if a.shape != e.shape:
        raise _Failure(AssertionError, f"The values for attribute 'shape' do not match: {Size(a.shape)} != "
                                       f"{Size(e.shape)}.", path)
    if opts["check_dtype"] and a.dtype != e.dtype:
        raise _Failure(AssertionError, f"The values for attribute 'dtype' do not match: {_dtype_name(ta, a)} != "
                                       f"{_dtype_name(te, e)}.", path)
    if opts["check_stride"] and ta is not None and te is not None and ta.stride() != te.stride():
        raise _Failure(AssertionError, f"The values for attribute 'stride()' do not match: {ta.stride()} != "
                                       f"{te.stride()}.", path)
    rtol, atol = _tolerances([a.dtype, e.dtype], opts["rtol"], opts["atol"])
    if a.dtype != e.dtype:
        common = np.promote_types(a.dtype, e.dtype)
        a, e = a.astype(common), e.astype(common)
    matches = _isclose(a, e, rtol, atol, opts["equal_nan"])
    if matches.all():
        return
    if a.shape == ():
        raise _Failure(AssertionError, _scalar_msg(a.item(), e.item(), rtol, atol), path)
    raise _Failure(AssertionError, _tensor_msg(a, e, matches, rtol, atol), path)


def _compare_numbers(actual: Any, expected: Any, path: tuple, opts: dict) -> None:
    ta, te = type(actual), type(expected)
    if opts["check_dtype"] and ta is not te:
        raise _Failure(AssertionError, f"The (d)types do not match: {ta} != {te}.", path)
    rtol, atol = _tolerances([_NUMBER_DTYPE[ta], _NUMBER_DTYPE[te]], opts["rtol"], opts["atol"])
    if actual == expected:
        return
    if opts["equal_nan"] and _isnan(actual) and _isnan(expected):
        return
    diff = abs(actual - expected)
    if math.isfinite(diff) and diff <= atol + rtol * abs(expected):
        return
    raise _Failure(AssertionError, _scalar_msg(actual, expected, rtol, atol), path)


def _isnan(x: Any) -> bool:
    return isinstance(x, float) and math.isnan(x) or isinstance(x, complex) and math.isnan(abs(x))


def _is_number(x: Any) -> bool:
    return isinstance(x, int | float | complex) and not isinstance(x, bool)


def _is_tensor_like(x: Any) -> bool:
    return isinstance(x, Tensor | np.ndarray)


def _compare(actual: Any, expected: Any, path: tuple, opts: dict) -> None:
    seq = collections.abc.Sequence
    if isinstance(actual, seq) and not isinstance(actual, str) and isinstance(expected, seq) \
            and not isinstance(expected, str):
        if len(actual) != len(expected):
            raise _Failure(AssertionError, f"The length of the sequences mismatch: {len(actual)} != "
                                           f"{len(expected)}", path)
        for i, (a, e) in enumerate(zip(actual, expected)):
            _compare(a, e, path + (i,), opts)
        return
    if isinstance(actual, collections.abc.Mapping) and isinstance(expected, collections.abc.Mapping):
        _compare_mappings(actual, expected, path, opts)
        return
    if actual is None or expected is None:
        if not (actual is None and expected is None):
            raise _Failure(AssertionError, f"None mismatch: {actual} is not {expected}", path)
        return
    if isinstance(actual, bool | np.bool_) and isinstance(expected, bool | np.bool_):
        if bool(actual) != bool(expected):
            raise _Failure(AssertionError, f"Booleans mismatch: {actual} is not {expected}", path)
        return
    if _is_number(actual) and _is_number(expected):
        _compare_numbers(actual, expected, path, opts)
        return
    # tensors pair with tensors and arrays with arrays (torch: the types must be directly related)
    related = isinstance(actual, type(expected)) or isinstance(expected, type(actual))
    if _is_tensor_like(actual) and related and (opts["allow_subclasses"] or type(actual) is type(expected)):
        _compare_tensors(actual, expected, path, opts)
        return
    raise _Failure(TypeError, f"No comparison pair was able to handle inputs of type {type(actual)} and "
                              f"{type(expected)}.", path)


def _compare_mappings(actual: Any, expected: Any, path: tuple, opts: dict) -> None:
    ak, ek = set(actual.keys()), set(expected.keys())
    if ak != ek:
        raise _Failure(AssertionError, "The keys of the mappings do not match:\n"
                                       f"Missing keys in the actual mapping: {sorted(ek - ak)}\n"
                                       f"Additional keys in the actual mapping: {sorted(ak - ek)}", path)
    keys: Any = actual.keys()
    try:
        keys = sorted(keys)
    except TypeError:
        pass
    for k in keys:
        _compare(actual[k], expected[k], path + (k,), opts)


def assert_close(actual: Any, expected: Any, *, allow_subclasses: bool = True, rtol: float | None = None,
                 atol: float | None = None, equal_nan: bool = False, check_device: bool = True,
                 check_dtype: bool = True, check_layout: bool = True, check_stride: bool = False,
                 msg: str | Callable[[str], str] | None = None) -> None:
    """Raise unless ``actual`` and ``expected`` are close, as ``torch.testing.assert_close``.

    Guarantees torch's default tolerances by dtype (float32: rtol 1.3e-6, atol 1e-5; float64 and
    Python floats: 1e-7 each; float16: 1e-3/1e-5; integers and bools: exact), the larger of the
    two when dtypes differ and ``check_dtype=False``; ``rtol`` and ``atol`` are given together or
    not at all (ValueError). Failures raise AssertionError (TypeError for inputs that cannot be
    paired, or of different Tensor subclasses with ``allow_subclasses=False``) with torch's message;
    ``msg`` replaces it (a string) or rewrites it (a callable).
    The engine has one device and one layout, so ``check_device``/``check_layout`` always hold.
    """
    opts = {"rtol": rtol, "atol": atol, "equal_nan": equal_nan, "check_dtype": check_dtype,
            "check_stride": check_stride, "allow_subclasses": allow_subclasses}
    if (rtol is None) != (atol is None):
        _tolerances([], rtol, atol)  # raises torch's ValueError before comparing anything
    try:
        _compare(actual, expected, (), opts)
    except _Failure as failure:
        raise failure.to_error(msg) from None


def make_tensor(*shape: Any, dtype: Any, device: Any, low: float | None = None, high: float | None = None,
                requires_grad: bool = False, noncontiguous: bool = False, exclude_zero: bool = False,
                memory_format: Any = None) -> Tensor:
    """A tensor of ``shape`` from the engine's generator in torch's default ranges: floats uniform
    in [low, high) (default [-9, 9), clamped to the dtype's range), integers in [low, high)
    (default [-9, 10); [0, 10) for uint8), bools fair coin flips. ``exclude_zero`` replaces zeros
    by the dtype's tiny value (floats) or 1 (integers). torch's ValueErrors for NaN or reversed
    bounds and for ``requires_grad`` on integral dtypes; ``low == high`` for floats fills with
    ``low`` and warns (FutureWarning), as torch."""
    import warnings

    _creation._check_device(device)
    if len(shape) == 1 and isinstance(shape[0], tuple | list):
        shape = tuple(shape[0])
    np_dt = _dtype.to_numpy_dtype(dtype)
    if requires_grad and np_dt.kind not in "fc":
        raise ValueError(f"`requires_grad=True` is not supported for boolean and integral dtypes, but got "
                         f"dtype={dtype}")
    rng = _random._rng(None)
    if np_dt == np.bool_:
        return _creation.tensor(rng.integers(0, 2, size=shape).astype(bool))
    floating = np_dt.kind == "f"
    lo = (0 if np_dt == np.uint8 else -9) if low is None else low
    hi = (9 if floating else 10) if high is None else high
    if math.isnan(lo) or math.isnan(hi):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={lo} and high={hi}")
    if lo > hi or (lo == hi and not floating):
        raise ValueError(f"`low` must be less than `high`, but got {lo} >= {hi}")
    if floating:
        info = np.finfo(np_dt)
        lo, hi = max(lo, float(info.min)), min(hi, float(info.max))
        if lo == hi:
            warnings.warn("Passing `low==high` to `torch.testing.make_tensor` for floating or complex types is "
                          "deprecated since 2.1 and will be removed in 2.3. Use `torch.full(...)` instead.",
                          FutureWarning, stacklevel=2)
            data = np.full(shape, lo, np_dt)
        else:
            data = rng.uniform(lo, hi, size=shape).astype(np_dt)
        if exclude_zero:
            data[data == 0] = info.tiny
    else:
        data = rng.integers(math.ceil(lo), math.ceil(hi), size=shape).astype(np_dt)
        if exclude_zero:
            data[data == 0] = 1
    return _creation.tensor(data, requires_grad=requires_grad)
