"""layer_norm's means (engine/nn/_functional/normalization._mean_kept) are NumPy's ``mean``
value for value, without its Python wrapper."""

from __future__ import annotations

import numpy as np
import pytest

from engine.nn._functional.normalization import _mean_kept


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize(("shape", "axes"), [((8, 10, 32), (2,)), ((64, 129), (1,)), ((3, 5, 7, 9), (2, 3)),
                                             ((0, 4), (1,)), ((2, 3), (0, 1))])
def test_mean_kept_is_numpys_mean_bit_for_bit(dtype, shape, axes):
    x = (np.random.default_rng(0).standard_normal(shape) * 3 + 1).astype(dtype)
    n = int(np.prod([shape[a] for a in axes]))
    got = _mean_kept(x, axes, n)
    want = x.mean(axis=axes, keepdims=True)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
