"""engine/_dtype.py: ``bfloat16`` is named, as torch names it, but the engine has no bfloat16
tensors (NumPy has no such type): the dtype object is torch's (name, size, limits), and every
place that would make a tensor of it raises a TypeError naming it, instead of computing in
float32 and giving numbers torch does not."""

from __future__ import annotations

import copy
import pickle

import pytest

import engine

torch = pytest.importorskip("torch")

MESSAGE = "engine has no bfloat16 tensors: NumPy has no bfloat16 type"


def test_bfloat16_is_a_dtype_like_torchs():
    bf, tbf = engine.bfloat16, torch.bfloat16
    assert isinstance(bf, engine.dtype) and repr(bf) == "engine.bfloat16"
    assert (bf.itemsize, bf.is_floating_point, bf.is_complex) == (tbf.itemsize, tbf.is_floating_point, tbf.is_complex)
    assert copy.deepcopy(bf) is bf and pickle.loads(pickle.dumps(bf)) is bf
    assert engine.zeros(2).dtype != bf


def test_bfloat16_finfo_is_torchs():
    got, want = engine.finfo(engine.bfloat16), torch.finfo(torch.bfloat16)
    for name in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
        assert getattr(got, name) == getattr(want, name), name
    assert repr(got) == repr(want)


def test_nanogpt_dtype_table_runs():
    """nanoGPT's train.py picks its dtype from a table naming bfloat16; on CPU it uses float32."""
    dtype = "bfloat16" if engine.cuda.is_available() and engine.cuda.is_bf16_supported() else "float16"
    table = {"float32": engine.float32, "bfloat16": engine.bfloat16, "float16": engine.float16}
    assert table[dtype] is engine.float16
    assert engine.cuda.is_bf16_supported() == torch.cuda.is_bf16_supported()


@pytest.mark.parametrize("make", [
    lambda: engine.ones(3).to(engine.bfloat16),
    lambda: engine.ones(3).to(dtype=engine.bfloat16),
    lambda: engine.ones(3).bfloat16(),
    lambda: engine.ones(3).type(engine.bfloat16),
    lambda: engine.zeros(2, dtype=engine.bfloat16),
    lambda: engine.empty(2, dtype=engine.bfloat16),
    lambda: engine.randn(2, dtype=engine.bfloat16),
    lambda: engine.arange(3, dtype=engine.bfloat16),
    lambda: engine.full((2,), 1.0, dtype=engine.bfloat16),
    lambda: engine.tensor([1.0], dtype=engine.bfloat16),
    lambda: engine.ones_like(engine.ones(2), dtype=engine.bfloat16),
    lambda: engine.ones(2).new_zeros(2, dtype=engine.bfloat16),
    lambda: engine.ones(2).sum(dtype=engine.bfloat16),
    lambda: engine.nn.Linear(2, 2, dtype=engine.bfloat16),
    lambda: engine.nn.Linear(2, 2).to(engine.bfloat16),
    lambda: engine.set_default_dtype(engine.bfloat16),
], ids=lambda f: "")
def test_making_a_bfloat16_tensor_names_what_is_missing(make):
    with pytest.raises(TypeError, match=MESSAGE):
        make()
    assert engine.get_default_dtype() is engine.float32


def test_torch_makes_them():
    """What the engine refuses, torch does (so the refusal is a gap, not torch's own error)."""
    assert torch.ones(3).bfloat16().dtype is torch.bfloat16
    assert torch.nn.Linear(2, 2).to(torch.bfloat16).weight.dtype is torch.bfloat16


def test_module_bfloat16_refuses_floating_tensors_and_keeps_them():
    m = engine.nn.Linear(2, 2)
    with pytest.raises(TypeError, match=MESSAGE):
        m.bfloat16()
    assert m.weight.dtype is engine.float32 and m.bias.dtype is engine.float32


def test_module_bfloat16_without_floating_tensors_is_returned_as_torch_does():
    relu = engine.nn.ReLU()
    assert relu.bfloat16() is relu and torch.nn.ReLU().bfloat16() is not None
