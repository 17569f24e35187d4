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


# --- empty_strided, frombuffer, polar: torch's results and errors ------------------------------------

@pytest.mark.parametrize("size, stride", [((2, 3), (1, 2)), ((2, 3), (3, 1)), ((2, 3), (0, 1)), ((0, 3), (3, 1)),
                                          ((4,), (2,))])
def test_empty_strided_has_torchs_strides(size, stride):
    t, e = torch.empty_strided(size, stride), engine.empty_strided(size, stride, dtype=engine.float64)
    assert e.stride() == t.stride() and tuple(e.shape) == tuple(t.shape)
    assert e.is_contiguous() == t.is_contiguous() and e.dtype == engine.float64


def test_empty_strided_errors_match_torch():
    cases = [(((2, 3), (1,)), r"dimensionality of sizes \(2\) must match dimensionality of strides \(1\)"),
             (((2, -3), (1, 2)), r"Trying to create tensor with negative dimension -3: \[2, -3\]"),
             (((2, 3), (-1, 2)), r"Storage size calculation overflowed with sizes=\[2, 3\] and strides=\[-1, 2\]")]
    for lib in LIBS:
        for args, message in cases:
            with pytest.raises(RuntimeError, match=message):
                lib.empty_strided(*args)


def test_frombuffer_shares_memory_as_torchs():
    for lib in LIBS:
        buf = bytearray(np.arange(4, dtype=np.float32).tobytes())
        t = lib.frombuffer(buf, dtype=lib.float32, count=2, offset=4)
        assert t.tolist() == [1.0, 2.0]
        t[0] = 9.0
        assert np.frombuffer(buf, np.float32).tolist() == [0.0, 9.0, 2.0, 3.0]
        assert lib.frombuffer(buf, dtype=lib.float32, count=-2).tolist() == [0.0, 9.0, 2.0, 3.0]


def test_frombuffer_errors_match_torch():
    buf = bytearray(16)
    cases = [({"count": 0}, ValueError, r"both buffer length \(16\) and count \(0\) must not be 0"),
             ({"offset": 16}, ValueError, r"offset \(16 bytes\) must be non-negative and no greater than buffer "
                                          r"length \(16 bytes\) minus 1"),
             ({"count": 5}, ValueError, r"requested buffer length \(5 \* 4 bytes\) after offset \(0 bytes\) must "
                                        r"not be greater than actual buffer length \(16 bytes\)"),
             ({"offset": 1}, ValueError, r"buffer length \(15 bytes\) after offset \(1 bytes\) must be a multiple "
                                         r"of element size \(4\)")]
    for lib in LIBS:
        for kwargs, error, message in cases:
            with pytest.raises(error, match=message):
                lib.frombuffer(buf, dtype=lib.float32, **kwargs)
        with pytest.raises(ValueError, match="object does not implement Python buffer protocol"):
            lib.frombuffer([1, 2], dtype=lib.float32)
        with pytest.warns(UserWarning, match="The given buffer is not writable"):
            assert lib.frombuffer(b"\x00\x00\x80\x3f", dtype=lib.float32).tolist() == [1.0]


def test_polar_values_and_gradients_match_torch():
    rng = np.random.default_rng(0)
    r, theta = rng.uniform(0.0, 2.0, 5), rng.uniform(-3.0, 3.0, 5)
    r[0] = 0.0  # the gradient of abs where the result is 0: sgn(0) = 0
    g = rng.standard_normal(5) + 1j * rng.standard_normal(5)
    out = {}
    for lib in LIBS:
        a = lib.tensor(r, dtype=lib.float64, requires_grad=True)
        t = lib.tensor(theta, dtype=lib.float64, requires_grad=True)
        z = lib.polar(a, t)
        assert type(z.grad_fn).__name__ == "PolarBackward0" and z.dtype == lib.complex128
        (z * lib.tensor(g)).real.sum().backward()
        out[lib] = (z.detach().numpy(), a.grad.numpy(), t.grad.numpy())
    for ours, theirs in zip(out[engine], out[torch]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)


def test_polar_out_and_errors_match_torch():
    for lib in LIBS:
        o = lib.empty(3, dtype=lib.complex64)
        assert lib.polar(lib.ones(2), lib.zeros(2), out=o) is o and o.tolist() == [1 + 0j, 1 + 0j]
        with pytest.raises(RuntimeError, match="polar\\(\\): functions with out=... arguments don't support"):
            lib.polar(lib.ones(2, requires_grad=True), lib.zeros(2), out=lib.empty(2, dtype=lib.complex64))
        with pytest.raises(RuntimeError, match="Expected object of scalar type ComplexFloat but got scalar type "
                                               "Float for argument 'out'"):
            lib.polar(lib.ones(2), lib.zeros(2), out=lib.empty(2))
        with pytest.raises(RuntimeError, match="Expected object of scalar type Float but got scalar type Double "
                                               "for second argument"):
            lib.polar(lib.ones(1), lib.ones(1, dtype=lib.float64))
        with pytest.raises(RuntimeError, match="Expected both inputs to be Half, Float or Double tensors but got "
                                               "Long and Long"):
            lib.polar(lib.ones(1, dtype=lib.int64), lib.ones(1, dtype=lib.int64))
