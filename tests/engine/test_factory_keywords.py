"""The keywords torch's factories take, with torch's results and errors: ``size=`` (zeros,
ones, empty, rand, randn, randint), ``out=`` (written into and resized, dtype checked),
``layout=``, ``pin_memory=``, ``memory_format=`` of ``empty``, randint's keyword forms."""

from __future__ import annotations

import numpy as np
import pytest

import engine

torch = pytest.importorskip("torch")
LIBS = [engine, torch]


@pytest.mark.parametrize("name", ["zeros", "ones", "empty", "rand", "randn"])
def test_size_keyword(name):
    for lib in LIBS:
        fn = getattr(lib, name)
        assert tuple(fn(size=(2, 3)).shape) == (2, 3)
        assert tuple(fn(size=[4]).shape) == (4,)
        assert fn(size=(2,), dtype=lib.float64).dtype == lib.float64
        multiple = "received an invalid combination of arguments" if name in ("rand", "randn") else \
            "got multiple values for argument 'size'"
        with pytest.raises(TypeError, match=f"{name}\\(\\) {multiple}"):
            fn(2, size=(2,))
        with pytest.raises(TypeError, match=f"{name}\\(\\): argument 'size' must be tuple of ints, not int"):
            fn(size=2)


@pytest.mark.parametrize("call", [
    lambda lib: lib.randint(5, (3,)), lambda lib: lib.randint(2, 5, (3,)), lambda lib: lib.randint(5, size=(3,)),
    lambda lib: lib.randint(2, 5, size=(3,)), lambda lib: lib.randint(high=5, size=(3,)),
    lambda lib: lib.randint(low=2, high=5, size=(3,)), lambda lib: lib.randint(2, high=5, size=(3,)),
])
def test_randint_forms(call):
    for lib in LIBS:
        out = call(lib)
        assert tuple(out.shape) == (3,) and out.dtype == lib.int64
        assert 0 <= int(out.min()) and int(out.max()) < 5


def test_randint_without_size_raises():
    for lib in LIBS:
        with pytest.raises(TypeError):
            lib.randint(5)


@pytest.mark.parametrize("call", [
    lambda lib, o: lib.zeros(2, out=o), lambda lib, o: lib.ones(size=(2,), out=o), lambda lib, o: lib.full((2,), 7, out=o),
    lambda lib, o: lib.arange(2, out=o), lambda lib, o: lib.linspace(0, 1, 2, out=o), lambda lib, o: lib.eye(2, out=o),
    lambda lib, o: lib.logspace(0, 1, 2, out=o),
])
@pytest.mark.parametrize("out_dtype", ["float32", "int64"])
@pytest.mark.parametrize("out_len", [2, 3, 0])
def test_out_is_written_and_resized_as_torchs(call, out_dtype, out_len):
    results = []
    for lib in LIBS:
        out = lib.empty(out_len, dtype=getattr(lib, out_dtype))
        got = call(lib, out)
        assert got is out and str(got.dtype).split(".")[-1] == out_dtype
        results.append((tuple(got.shape), np.asarray(got.tolist())))
    assert results[0][0] == results[1][0]
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-6)


def test_out_bumps_the_version():
    out = engine.zeros(2)
    before = out._version
    engine.ones(2, out=out)
    assert out._version == before + 1 and out.tolist() == [1.0, 1.0]


def test_out_errors_match_torch():
    for lib in LIBS:
        with pytest.raises(RuntimeError, match=r"dtype Float does not match dtype of out parameter \(Long\)"):
            lib.zeros(2, dtype=lib.float32, out=lib.empty(2, dtype=lib.int64))
        with pytest.raises(TypeError, match=r"zeros\(\): argument 'out' must be Tensor, not int"):
            lib.zeros(2, out=5)
        with pytest.raises(RuntimeError, match="functions with out=... arguments don't support automatic differentiation"):
            lib.zeros(2, out=lib.empty(2, requires_grad=True))


def test_layout_and_pin_memory():
    for lib in LIBS:
        assert lib.zeros(2, layout=lib.strided).layout == lib.strided
        assert tuple(lib.zeros(2, layout=lib.strided, pin_memory=False).shape) == (2,)
        with pytest.raises(TypeError, match=r"zeros\(\): argument 'layout' must be (torch|engine)\.layout, not str"):
            lib.zeros(2, layout="strided")
        with pytest.raises(RuntimeError, match="pin_memory=True requires a CUDA or other accelerator backend"):
            lib.ones(2, pin_memory=True)
        with pytest.raises(RuntimeError, match="pin_memory=True requires"):
            lib.tensor([1.0], pin_memory=True)
    assert repr(engine.strided) == "engine.strided"
    assert engine.zeros(2).layout is engine.strided and torch.zeros(2).layout is torch.strided


def test_empty_memory_format():
    for lib in LIBS:
        assert lib.empty(2, 3, 4, 5, memory_format=lib.channels_last).stride() == (60, 1, 15, 3)
        assert lib.empty(2, 3, memory_format=lib.contiguous_format).stride() == (3, 1)
        with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
            lib.empty(2, 3, memory_format=lib.channels_last)
        with pytest.raises(RuntimeError, match="unsupported memory format Preserve"):
            lib.empty(2, 2, memory_format=lib.preserve_format)


def test_arange_keyword_end_and_like_generators():
    for lib in LIBS:
        assert lib.arange(end=3).tolist() == [0, 1, 2]
        assert lib.arange(start=1, end=3).tolist() == [1, 2]
        g1, g2 = lib.Generator().manual_seed(1), lib.Generator().manual_seed(1)
        x = lib.zeros(4)
        assert lib.rand_like(x, generator=g1).tolist() == lib.rand(4, generator=g2).tolist()
        assert lib.bernoulli(lib.ones(3), p=0.0).tolist() == [0.0, 0.0, 0.0]
