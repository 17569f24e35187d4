"""memory_format= of zeros_like/ones_like/empty_like/full_like (optimizers write
``torch.zeros_like(p, memory_format=torch.preserve_format)``): the layout (strides) torch gives,
values unchanged, torch's error for a channels-last format of the wrong rank."""

from __future__ import annotations

import numpy as np
import pytest

import engine

SOURCES = {
    "contiguous": lambda lib: lib.zeros(2, 3, 4, 5),
    "permuted": lambda lib: lib.zeros(2, 3, 4, 5).permute(0, 2, 3, 1),
    "transposed": lambda lib: lib.zeros(2, 3, 4, 5).transpose(0, 1),
    "strided": lambda lib: lib.zeros(2, 3, 4, 5)[:, :, ::2],
    "matrix_t": lambda lib: lib.zeros(3, 4).t(),
}
FORMATS = ["preserve_format", "contiguous_format", "channels_last"]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("source", sorted(SOURCES))
@pytest.mark.parametrize("factory", ["zeros_like", "ones_like", "empty_like", "full_like"])
def test_layout_as_torch(factory, source, fmt):
    torch = pytest.importorskip("torch")
    results = []
    for lib in (engine, torch):
        x = SOURCES[source](lib)
        args = (x, 3.0) if factory == "full_like" else (x,)
        try:
            out = getattr(lib, factory)(*args, memory_format=getattr(lib, fmt))
        except RuntimeError as e:
            results.append(("error", str(e)))
            continue
        values = None if factory == "empty_like" else out.numpy()
        results.append((tuple(out.shape), out.stride(), values))
    (e_res, t_res) = results
    assert e_res[:2] == t_res[:2]
    if e_res[0] != "error" and e_res[2] is not None:
        np.testing.assert_array_equal(e_res[2], t_res[2])


def test_channels_last_rank_errors():
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        engine.zeros_like(engine.zeros(2, 3), memory_format=engine.channels_last)
    with pytest.raises(RuntimeError, match="required rank 5 tensor to use channels_last_3d format"):
        engine.ones_like(engine.zeros(2, 3, 4, 5), memory_format=engine.channels_last_3d)


def test_channels_last_layout_without_torch():
    out = engine.zeros_like(engine.zeros(2, 3, 4, 5), memory_format=engine.channels_last)
    assert out.stride() == (60, 1, 15, 3) and tuple(out.shape) == (2, 3, 4, 5)
    out += 1  # the in-place ops write through the permuted layout
    assert out.sum().item() == 120.0
    assert repr(engine.preserve_format) == "engine.preserve_format"
