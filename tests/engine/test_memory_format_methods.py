"""memory_format= of Tensor.is_contiguous/contiguous/clone/to (torchvision's and timm's
``--channels-last`` training code): the strides torch gives, whether the tensor itself comes back,
gradients through the copies, and torch's errors (wrong rank, preserve_format for contiguous, not
a memory format)."""

from __future__ import annotations

import numpy as np
import pytest

import engine
from tests.engine._outcomes import outcome, same

A = np.arange(120, dtype=np.float32).reshape(2, 3, 4, 5)
SOURCES = {
    "nchw": lambda L: L.tensor(A),
    "nhwc": lambda L: L.tensor(A).permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2),
    "strided": lambda L: L.tensor(A)[:, :, ::2],
    "permuted_strided": lambda L: L.tensor(A)[:, :, ::2].permute(0, 2, 3, 1),
    "size1_channels": lambda L: L.tensor(A)[:, :1],
    "size1_spatial": lambda L: L.tensor(A)[:, :, :1, :1],
    "rank3": lambda L: L.tensor(A[0]),
    "rank5": lambda L: L.tensor(A).unsqueeze(2).expand(2, 3, 2, 4, 5).contiguous(),
}
FORMATS = ["contiguous_format", "channels_last", "channels_last_3d", "preserve_format"]
OPS = {
    "is_contiguous": lambda x, f: x.is_contiguous(memory_format=f),
    "contiguous": lambda x, f: (x.contiguous(memory_format=f).stride(), x.contiguous(memory_format=f) is x),
    "clone": lambda x, f: (x.clone(memory_format=f).stride(), x.clone(memory_format=f)),
    "to": lambda x, f: (x.to(memory_format=f).stride(), x.to(memory_format=f) is x),
    "to_dtype": lambda x, f: (x.to(x.double().dtype, memory_format=f).stride(),
                              x.to(x.double().dtype, memory_format=f)),
}
RELAID = {
    "contiguous": lambda L, x: x.contiguous(memory_format=L.channels_last),
    "clone": lambda L, x: x.clone(memory_format=L.channels_last),
    "to": lambda L, x: x.to(memory_format=L.channels_last),
    "to_dtype": lambda L, x: x.to(L.float64, memory_format=L.channels_last),
}


@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("source", sorted(SOURCES))
def test_layout_as_torch(op, fmt, source):
    torch = pytest.importorskip("torch")

    def run(L):
        return OPS[op](SOURCES[source](L), getattr(L, fmt))

    e, t = outcome(engine, run, torch), outcome(torch, run, torch)
    assert same(e, t), (e, t)


@pytest.mark.parametrize("fmt", FORMATS)
def test_empty_tensor_contiguity_as_torch(fmt):
    """(The strides of an empty tensor are left out: NumPy gives every axis stride 0.)"""
    torch = pytest.importorskip("torch")
    flags = [L.zeros(0, 3, 1, 2).is_contiguous(memory_format=getattr(L, fmt)) for L in (engine, torch)]
    assert flags[0] == flags[1], flags


@pytest.mark.parametrize("op", ["is_contiguous", "contiguous", "clone", "to"])
def test_not_a_memory_format_is_a_type_error(op):
    torch = pytest.importorskip("torch")

    def run(L):
        return OPS[op](L.zeros(1, 2, 3, 4), "channels_last")

    e, t = outcome(engine, run, torch), outcome(torch, run, torch)
    assert e[:2] == ("err", "TypeError") and "argument 'memory_format' must be" in e[2], e
    assert t[:2] == e[:2], (e, t)


def test_errors_without_torch():
    x = engine.zeros(2, 3, 4)
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        x.contiguous(memory_format=engine.channels_last)
    with pytest.raises(RuntimeError, match="required rank 5 tensor to use channels_last_3d format"):
        engine.zeros(1, 2, 3, 4).clone(memory_format=engine.channels_last_3d)
    with pytest.raises(RuntimeError, match="preserve memory format is unsupported by the contiguous"):
        engine.zeros(2, 3, 4, 5).permute(0, 2, 3, 1).contiguous(memory_format=engine.preserve_format)
    with pytest.raises(TypeError, match="clone\\(\\): argument 'memory_format' must be engine.memory_format, not int"):
        x.clone(memory_format=1)


@pytest.mark.parametrize("op", sorted(RELAID))
def test_gradients_flow_through_the_relaid_copies(op):
    torch = pytest.importorskip("torch")
    grads, names = [], []
    for L in (engine, torch):
        x = L.tensor(A / 100, requires_grad=True)
        y = RELAID[op](L, x)
        (y * y).sum().backward()
        grads.append(x.grad.numpy())
        names.append(type(y.grad_fn).__name__)
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-6)
    assert names[0] == names[1], names
