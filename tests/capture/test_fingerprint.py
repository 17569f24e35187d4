"""Parameter fingerprints (``param_stats.fingerprint``): what ranks compare after every step."""

from __future__ import annotations

import numpy as np
import pytest

from modscope.capture.param_stats import StatsPlan, fingerprint


@pytest.mark.parametrize("shape", [(), (1,), (3,), (7, 5), (512, 784)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int64])
def test_equal_values_give_equal_fingerprints_and_one_changed_value_another(shape, dtype):
    rng = np.random.default_rng(27)
    a = (rng.standard_normal(shape) * 100).astype(dtype)
    assert fingerprint(a) == fingerprint(a.copy())
    b = a.copy().reshape(-1)
    b[-1] = np.nextafter(b[-1], np.inf) if b.dtype.kind == "f" else b[-1] + 1  # the smallest change there is
    assert fingerprint(b.reshape(shape)) != fingerprint(a)
    assert 0 <= fingerprint(a) < 2 ** 63  # JSON's (and orjson's) signed 64-bit integers


def test_a_strided_array_is_fingerprinted_by_its_values():
    a = np.arange(60, dtype=np.float32).reshape(6, 10)
    assert fingerprint(a.T) == fingerprint(np.ascontiguousarray(a.T))
    assert fingerprint(a[:, ::2]) == fingerprint(np.ascontiguousarray(a[:, ::2]))


class _T:
    def __init__(self, data: np.ndarray) -> None:
        self._data = data


def test_a_plan_fingerprints_its_tensors_current_values():
    w, b = _T(np.ones((4, 3), np.float32)), _T(np.zeros(3, np.float32))
    plan = StatsPlan([w, b])
    before = plan.fingerprints()
    w._data += 1  # an in-place update, as an optimizer's
    after = plan.fingerprints()
    assert after[1] == before[1] and after[0] != before[0]
    assert after[0] == fingerprint(np.full((4, 3), 2, np.float32))
