"""``engine.tensor(python_floats, dtype=float64)`` holds the doubles themselves, as torch's does
(they were rounded through the default float32 first: 0.3 became 0.30000001192092896)."""

from __future__ import annotations

import numpy as np
import pytest

import engine

VALUES = [0.3, [0.1, 0.2, 1 / 3], [[1e-300, 2.5], [3.0, -0.7]]]


@pytest.mark.parametrize("data", VALUES, ids=["scalar", "list", "nested"])
def test_float64_from_python_floats_keeps_every_digit(data):
    got = engine.tensor(data, dtype=engine.float64).numpy()
    np.testing.assert_array_equal(got, np.array(data, dtype=np.float64))


@pytest.mark.parametrize("data", VALUES, ids=["scalar", "list", "nested"])
def test_the_same_values_as_torch(data):
    torch = pytest.importorskip("torch")
    for e_dtype, t_dtype in ((engine.float64, torch.float64), (engine.float32, torch.float32),
                             (engine.float16, torch.float16), (None, None)):
        got = engine.tensor(data, dtype=e_dtype).numpy()
        want = torch.tensor(data, dtype=t_dtype).numpy()
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
