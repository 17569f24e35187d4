"""Pinned memory on a machine without an accelerator, as torch's CPU build answers: ``pin_memory()``
of a tensor or a PackedSequence raises, ``is_pinned()`` is False, and a ``DataLoader(pin_memory=True)``
warns that nothing will be pinned when an iterator starts (``pin_memory_device`` warns that it is
deprecated) and then loads as usual."""

from __future__ import annotations

import warnings

import pytest

import engine

torch = pytest.importorskip("torch")
LIBS = [engine, torch]
NO_ACCELERATOR = "Cannot access accelerator device when none is available."


@pytest.mark.parametrize("lib", LIBS, ids=["engine", "torch"])
def test_tensor_and_packed_sequence(lib):
    t = lib.ones(2)
    assert t.is_pinned() is False
    with pytest.raises(RuntimeError, match=NO_ACCELERATOR):
        t.pin_memory()
    for device in ("cpu", lib.device("cpu")):
        with pytest.warns(DeprecationWarning, match="The argument 'device' of Tensor.pin_memory\\(\\) is deprecated"):
            with pytest.raises(RuntimeError, match="CPU device type not an accelerator."):
                t.pin_memory(device)
    packed = lib.nn.utils.rnn.pack_sequence([lib.ones(3), lib.ones(2)])
    assert packed.is_pinned() is False
    with pytest.raises(RuntimeError, match=NO_ACCELERATOR):
        packed.pin_memory()


def _warnings_of(lib, **kwargs):
    loader = lib.utils.data.DataLoader(lib.utils.data.TensorDataset(lib.arange(4)), batch_size=2, **kwargs)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        batches = [b[0].tolist() for b in loader]
    assert batches == [[0, 1], [2, 3]]
    return [(w.category, str(w.message)) for w in caught]


@pytest.mark.parametrize("kwargs", [{}, {"pin_memory": True}, {"pin_memory": True, "pin_memory_device": "cpu"},
                                    {"pin_memory_device": "cpu"}])
def test_dataloader_warns_as_torch(kwargs):
    ours, theirs = _warnings_of(engine, **kwargs), _warnings_of(torch, **kwargs)
    assert ours == theirs
    assert (len(ours) > 0) == bool(kwargs.get("pin_memory"))
