"""0-dim results stay NumPy arrays (not scalars), so in-place ops and backward work on them
(label smoothing's ``masked_fill_`` on an unbatched cross_entropy loss)."""

from __future__ import annotations

import numpy as np

import engine


def test_zero_dim_op_results_are_arrays_so_in_place_ops_work():
    # NumPy ufuncs turn 0-d arrays into scalars; label smoothing's masked_fill_ on a 0-d loss
    # (an unbatched cross_entropy) used to fail with "can't be cast".
    x = engine.tensor(2.0, requires_grad=True)
    y = -x
    assert isinstance(y._data, np.ndarray)
    y.add_(1)
    y.masked_fill_(engine.tensor(False), 0.0)
    y.backward()
    assert y.item() == -1.0 and x.grad.item() == -1.0
    z = -engine.tensor(3.0)
    z.mul_(2)
    assert z.item() == -6.0
