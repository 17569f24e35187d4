"""engine.finfo / engine.iinfo against torch's: every attribute, the repr, and torch's errors."""

from __future__ import annotations

import pytest

import engine

FLOATS = ["float16", "float32", "float64"]
INTS = ["uint8", "int8", "int16", "int32", "int64"]


@pytest.mark.parametrize("name", FLOATS)
def test_finfo_as_torch(name):
    torch = pytest.importorskip("torch")
    e, t = engine.finfo(getattr(engine, name)), torch.finfo(getattr(torch, name))
    for attr in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
        assert getattr(e, attr) == getattr(t, attr), attr
        assert type(getattr(e, attr)) is type(getattr(t, attr)), attr
    assert repr(e) == repr(t)


@pytest.mark.parametrize("name", INTS)
def test_iinfo_as_torch(name):
    torch = pytest.importorskip("torch")
    e, t = engine.iinfo(getattr(engine, name)), torch.iinfo(getattr(torch, name))
    for attr in ("bits", "max", "min", "dtype"):
        assert getattr(e, attr) == getattr(t, attr), attr
    assert repr(e) == repr(t)


def test_default_dtype_and_use_in_masking():
    assert engine.finfo() == engine.finfo(engine.float32)
    x = engine.zeros(2, 3)
    filled = x.masked_fill(engine.tensor([[True, False, True]]), engine.finfo(x.dtype).min)
    assert filled.min().item() == engine.finfo(engine.float32).min
    assert engine.iinfo(engine.int64).max == 2**63 - 1


@pytest.mark.parametrize("case", ["finfo_int", "iinfo_float", "iinfo_bool", "finfo_str", "iinfo_str"])
def test_errors_as_torch(case):
    torch = pytest.importorskip("torch")
    calls = {"finfo_int": lambda lib: lib.finfo(lib.int64), "iinfo_float": lambda lib: lib.iinfo(lib.float32),
             "iinfo_bool": lambda lib: lib.iinfo(lib.bool), "finfo_str": lambda lib: lib.finfo("a"),
             "iinfo_str": lambda lib: lib.iinfo(3)}
    with pytest.raises(TypeError) as t_err:
        calls[case](torch)
    with pytest.raises(TypeError) as e_err:
        calls[case](engine)
    assert str(e_err.value) == str(t_err.value)


def test_errors_without_torch():
    with pytest.raises(TypeError, match=r"torch.finfo\(\) requires a floating point input type"):
        engine.finfo(engine.int32)
    with pytest.raises(TypeError, match="torch.bool is not supported by torch.iinfo"):
        engine.iinfo(engine.bool)
