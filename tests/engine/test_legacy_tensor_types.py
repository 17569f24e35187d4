"""torch.FloatTensor / LongTensor / ... (the legacy tensor types old tutorials build with), against
torch: construction from data and from sizes, isinstance by dtype, .type(T), and torch's errors."""

from __future__ import annotations

import numpy as np
import pytest

import engine

NAMES = ["FloatTensor", "DoubleTensor", "HalfTensor", "LongTensor", "IntTensor", "ShortTensor",
         "CharTensor", "ByteTensor", "BoolTensor"]


@pytest.mark.parametrize("name", NAMES)
def test_dtype_and_isinstance(name):
    torch = pytest.importorskip("torch")
    et, tt = getattr(engine, name), getattr(torch, name)
    assert str(et.dtype).split(".")[-1] == str(tt.dtype).split(".")[-1]
    assert et.__name__ == tt.__name__ == name
    e_val, t_val = et([1, 0, 1]), tt([1, 0, 1])
    assert str(e_val.dtype).split(".")[-1] == str(t_val.dtype).split(".")[-1]
    np.testing.assert_array_equal(e_val.numpy(), t_val.numpy())
    for other in NAMES:
        assert isinstance(e_val, getattr(engine, other)) == isinstance(t_val, getattr(torch, other))
    assert not isinstance(np.zeros(2), et)


@pytest.mark.parametrize("args", [(), (2, 3), (0,), ("size",)])
def test_sizes_give_uninitialised_tensors(args):
    torch = pytest.importorskip("torch")
    if args == ("size",):
        e, t = engine.LongTensor(engine.Size([2, 3])), torch.LongTensor(torch.Size([2, 3]))
    else:
        e, t = engine.FloatTensor(*args), torch.FloatTensor(*args)
    assert tuple(e.shape) == tuple(t.shape)
    assert e.dtype == (engine.int64 if args == ("size",) else engine.float32)


@pytest.mark.parametrize("data", [[1.7, -1.7], (1, 2), np.array([[1, 2]], dtype=np.int32), []])
def test_from_data(data):
    torch = pytest.importorskip("torch")
    e, t = engine.LongTensor(data), torch.LongTensor(data)
    assert tuple(e.shape) == tuple(t.shape)
    np.testing.assert_array_equal(e.numpy(), t.numpy())


def test_from_tensor_of_same_dtype_shares_memory():
    t = engine.zeros(3)
    alias = engine.FloatTensor(t)
    alias[0] = 5.0
    assert t[0].item() == 5.0 and alias is not t


def test_type_converts_with_a_legacy_type():
    torch = pytest.importorskip("torch")
    e = engine.tensor([1.5, 2.5]).type(engine.LongTensor)
    t = torch.tensor([1.5, 2.5]).type(torch.LongTensor)
    assert e.dtype == engine.int64 and e.type() == "engine.LongTensor"
    np.testing.assert_array_equal(e.numpy(), t.numpy())


@pytest.mark.parametrize("call", ["float_of_long", "number", "string", "bad_size"])
def test_errors_as_torch(call):
    torch = pytest.importorskip("torch")

    def attempt(lib):
        if call == "float_of_long":
            return lambda: lib.FloatTensor(lib.zeros(2, dtype=lib.long))
        if call == "number":
            return lambda: lib.LongTensor(2.5)
        if call == "string":
            return lambda: lib.LongTensor("a")
        return lambda: lib.LongTensor(2, "a")

    with pytest.raises(TypeError) as t_err:
        attempt(torch)()
    with pytest.raises(TypeError) as e_err:
        attempt(engine)()
    assert str(e_err.value) == str(t_err.value)


def test_errors_without_torch():
    with pytest.raises(TypeError, match=r"new\(\): data must be a sequence \(got float\)"):
        engine.FloatTensor(2.5)
    with pytest.raises(TypeError, match=r"expected TensorOptions\(dtype=long int, .*\(got TensorOptions\(dtype=float"):
        engine.LongTensor(engine.zeros(2))
