"""engine.fft and complex tensors against torch: transform values (every function, n/s, dim,
norm, float32/float64), gradients of real losses through the transforms vs torch and finite
differences, the complex-number ops (.real/.imag/abs/angle/conj/view_as_real/view_as_complex,
add/mul), and torch's errors."""

from __future__ import annotations

import numpy as np
import pytest

import engine
import engine.fft
from engine.fft import rfft as engine_rfft

torch = pytest.importorskip("torch")  # the oracle: these tests compare with it

NORMS = [None, "backward", "ortho", "forward"]
RNG = np.random.default_rng(0)


def _both(fn_name, x, **kwargs):
    e = getattr(engine.fft, fn_name)(engine.tensor(x), **kwargs)
    t = getattr(torch.fft, fn_name)(torch.tensor(x), **kwargs)
    return e, t


def _close(e, t, rtol=1e-10, atol=1e-10):
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    np.testing.assert_allclose(e.detach().numpy(), t.detach().resolve_conj().numpy(), rtol=rtol, atol=atol)


def test_submodule_imports_as_torchs():
    assert engine_rfft is engine.fft.rfft
    assert set(engine.fft.__all__) >= {"fft", "ifft", "rfft", "irfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn",
                                       "ifftn", "rfftn", "irfftn", "hfft", "ihfft", "fftfreq", "rfftfreq",
                                       "fftshift", "ifftshift"}


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("fn", ["fft", "ifft", "rfft", "ihfft"])
@pytest.mark.parametrize("n", [None, 5, 12])
def test_1d_transforms_of_real_input(fn, n, norm):
    x = RNG.normal(size=(3, 8))
    _close(*_both(fn, x, n=n, norm=norm))
    _close(*_both(fn, x.T.copy(), n=n, dim=0, norm=norm))


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("fn", ["fft", "ifft", "irfft", "hfft"])
@pytest.mark.parametrize("n", [None, 7, 10])
def test_1d_transforms_of_complex_input(fn, n, norm):
    x = RNG.normal(size=(2, 6)) + 1j * RNG.normal(size=(2, 6))
    _close(*_both(fn, x, n=n, norm=norm))


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize(("fn", "kwargs"), [
    ("fft2", {}), ("ifft2", {"s": (3, 6)}), ("fftn", {}), ("fftn", {"s": (4, 5)}), ("ifftn", {"dim": (0, 2)}),
    ("rfft2", {}), ("rfftn", {"s": (5, 6), "dim": (0, 1)}), ("rfftn", {}),
])
def test_nd_transforms(fn, kwargs, norm):
    x = RNG.normal(size=(4, 5, 6))
    if fn.startswith("i"):
        x = x + 1j * RNG.normal(size=x.shape)
    _close(*_both(fn, x, norm=norm, **kwargs))


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("kwargs", [{}, {"s": (4, 9)}, {"s": (3, 8), "dim": (0, 2)}])
def test_irfftn(kwargs, norm):
    x = RNG.normal(size=(4, 5, 5)) + 1j * RNG.normal(size=(4, 5, 5))
    _close(*_both("irfftn", x, norm=norm, **kwargs))
    _close(*_both("irfft2", x, norm=norm, s=kwargs.get("s", None) and kwargs["s"][-2:]))


def test_float32_gives_complex64_and_ints_the_default_float():
    e, t = _both("rfft", RNG.normal(size=16).astype(np.float32))
    assert e.dtype == engine.complex64
    _close(e, t, rtol=1e-5, atol=1e-5)
    e, t = _both("fft", np.arange(6))
    assert e.dtype == engine.complex64
    _close(e, t, rtol=1e-6, atol=1e-5)
    e, t = _both("irfft", (RNG.normal(size=5) + 1j * RNG.normal(size=5)).astype(np.complex64))
    assert e.dtype == engine.float32
    _close(e, t, rtol=1e-5, atol=1e-5)


def test_freqs_and_shifts():
    for n, d in [(5, 1.0), (8, 0.5), (1, 2.0)]:
        _close(engine.fft.fftfreq(n, d), torch.fft.fftfreq(n, d), rtol=1e-6)
        _close(engine.fft.rfftfreq(n, d), torch.fft.rfftfreq(n, d), rtol=1e-6)
    _close(engine.fft.fftfreq(4, dtype=engine.float64), torch.fft.fftfreq(4, dtype=torch.float64))
    x = RNG.normal(size=(5, 6))
    for dim in (None, 0, (1,), (0, 1)):
        _close(*_both("fftshift", x, dim=dim))
        _close(*_both("ifftshift", x, dim=dim))


# --- gradients ---------------------------------------------------------------------------------

def _grads(loss_fn, *arrays):
    out = []
    for lib in (engine, torch):
        leaves = [lib.tensor(a, requires_grad=True) for a in arrays]
        loss_fn(lib, *leaves).backward()
        out.append([leaf.grad.numpy() for leaf in leaves])
    return out


LOSSES = {
    "rfft abs": lambda lib, x: lib.fft.rfft(x).abs().sum(),
    "rfft real imag": lambda lib, x: (lib.fft.rfft(x, n=11).real * 2 + lib.fft.rfft(x).imag ** 2).sum(),
    "rfft ortho angle": lambda lib, x: lib.fft.rfft(x, norm="ortho").angle().sin().sum(),
    "fft of real": lambda lib, x: (lib.fft.fft(x, norm="forward").abs() ** 2).sum(),
    "irfft of rfft": lambda lib, x: (lib.fft.irfft(lib.fft.rfft(x)) ** 3).sum(),
    "irfft n odd": lambda lib, x: (lib.fft.irfft(lib.fft.rfft(x), n=7) * lib.arange(7)).sum(),
    "ifft chain": lambda lib, x: lib.fft.ifft(lib.fft.fft(x) * lib.fft.fft(x)).real.pow(2).sum(),
    "rfft2 irfft2": lambda lib, x: (lib.fft.irfft2(lib.fft.rfft2(x.reshape(2, 5)) ** 2, s=(2, 5)) ** 2).sum(),
    "fftn ortho": lambda lib, x: lib.view_as_real(lib.fft.fftn(x.reshape(2, 5), norm="ortho")).pow(3).sum(),
    "hfft ihfft": lambda lib, x: (lib.fft.hfft(lib.fft.ihfft(x) * 1.5) * lib.arange(10)).sum(),
    "fftshift": lambda lib, x: (lib.fft.fftshift(x) * lib.arange(10)).sum(),
    "conj": lambda lib, x: (lib.fft.rfft(x).conj() * lib.fft.rfft(x * 2)).imag.sum(),
}


@pytest.mark.parametrize("name", list(LOSSES))
def test_gradients_match_torch(name):
    x = RNG.normal(size=10)
    (eg,), (tg,) = _grads(LOSSES[name], x)
    np.testing.assert_allclose(eg, tg, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("name", ["rfft abs", "irfft of rfft", "rfft2 irfft2", "hfft ihfft", "irfft n odd"])
def test_gradients_match_finite_differences(name):
    x = RNG.normal(size=10)
    (eg,), _ = _grads(LOSSES[name], x)
    eps, num = 1e-6, np.zeros_like(x)
    for i in range(x.size):
        hi, lo = x.copy(), x.copy()
        hi[i] += eps
        lo[i] -= eps
        num[i] = (float(LOSSES[name](engine, engine.tensor(hi))) - float(LOSSES[name](engine, engine.tensor(lo)))) / (
            2 * eps)
    np.testing.assert_allclose(eg, num, rtol=1e-5, atol=1e-6)


def test_filter_in_frequency_domain_gradients():
    """``irfft(rfft(x) * w)``: the gradients for the signal and for a real filter ``w``."""
    x, w = RNG.normal(size=(3, 16)), RNG.normal(size=9)
    (ex, ew), (tx, tw) = _grads(lambda lib, x, w: (lib.fft.irfft(lib.fft.rfft(x) * w) ** 2).sum(), x, w)
    np.testing.assert_allclose(ex, tx, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(ew, tw, rtol=1e-9, atol=1e-10)
    assert ew.dtype == np.float64


def test_complex_leaf_gradients():
    z = RNG.normal(size=6) + 1j * RNG.normal(size=6)
    w = RNG.normal(size=6) + 1j * RNG.normal(size=6)

    def loss(lib, z, w):
        return ((z * w + z).abs() + lib.fft.ifft(z).angle() + (z - w).real * lib.fft.fft(w).imag).sum()

    (ez, ew), (tz, tw) = _grads(loss, z, w)
    np.testing.assert_allclose(ez, tz, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(ew, tw, rtol=1e-9, atol=1e-10)


def test_view_as_real_complex_and_complex_round_trip():
    a = RNG.normal(size=(3, 2))
    (eg,), (tg,) = _grads(lambda lib, a: (lib.view_as_real(lib.view_as_complex(a) * (1 + 2j)) ** 2).sum(), a)
    np.testing.assert_allclose(eg, tg, rtol=1e-10)
    re, im = RNG.normal(size=4), RNG.normal(size=4)
    (er, ei), (tr, ti) = _grads(lambda lib, r, i: lib.complex(r, i).angle().sum(), re, im)
    np.testing.assert_allclose(er, tr, rtol=1e-10)
    np.testing.assert_allclose(ei, ti, rtol=1e-10)


def test_complex_dtype_and_attributes():
    z = engine.fft.fft(engine.tensor([1.0, 2.0, 0.0]))
    assert z.is_complex() and engine.is_complex(z) and not z.is_floating_point()
    assert z.dtype == engine.complex64 == engine.cfloat and engine.complex128.is_complex
    assert z.real.dtype == engine.float32 and z.abs().dtype == engine.float32
    x = engine.tensor([1.0, -2.0])
    assert x.real is x and x.conj() is x
    _close(x.angle(), torch.tensor([1.0, -2.0]).angle())
    assert (z + 1.0).dtype == engine.complex64 and (z * engine.tensor([1.0], dtype=engine.float64)).dtype == (
        engine.complex128)
    assert engine.zeros(2, dtype=engine.complex128).requires_grad_().requires_grad


@pytest.mark.parametrize(("call", "exc"), [
    (lambda lib: lib.fft.fft(lib.ones(4), norm="foo"), RuntimeError),
    (lambda lib: lib.fft.fft(lib.ones(4), n=0), RuntimeError),
    (lambda lib: lib.fft.fftn(lib.ones(4, 4), s=(2, 2), dim=(0,)), RuntimeError),
    (lambda lib: lib.fft.fftn(lib.ones(4, 4), dim=(0, 0)), RuntimeError),
    (lambda lib: lib.fft.rfft(lib.fft.fft(lib.ones(4))), RuntimeError),
    (lambda lib: lib.fft.ihfft(lib.fft.fft(lib.ones(4))), RuntimeError),
    (lambda lib: lib.fft.fft(lib.ones(4), dim=2), IndexError),
    (lambda lib: lib.fft.irfft(lib.fft.fft(lib.ones(1))), RuntimeError),
    (lambda lib: lib.fft.fft(lib.ones(4, dtype=lib.float16)), RuntimeError),
    (lambda lib: lib.ones(3).imag, RuntimeError),
    (lambda lib: lib.view_as_complex(lib.ones(3, 3)), RuntimeError),
])
def test_errors_as_torch(call, exc):
    with pytest.raises(exc) as t_err:
        call(torch)
    with pytest.raises(exc) as e_err:
        call(engine)
    assert str(e_err.value) == str(t_err.value)


@pytest.mark.parametrize("obj", [
    lambda: {"z": engine.fft.rfft(engine.ones(4))},  # torch's checkpoint format
    lambda: {"z": engine.fft.rfft(engine.ones(4)), "a": np.zeros(1)},  # engine's format (NumPy inside)
    lambda: {"dtype": engine.complex64},
])
def test_complex_tensors_are_refused_by_save_with_a_clear_error(tmp_path, obj):
    with pytest.raises(TypeError, match=r"do not support complex dtypes yet \(complex64"):
        engine.save(obj(), tmp_path / "z.pt")


def test_complex_division_and_power_gradients():
    z = RNG.normal(size=5) + 1j * RNG.normal(size=5)
    w = RNG.normal(size=5) + 1j * RNG.normal(size=5)
    x = RNG.normal(size=5) + 3
    (ez, ew, ex), (tz, tw, tx) = _grads(lambda lib, z, w, x: ((z / w) ** 3 / x + z / x).abs().sum(), z, w, x)
    for e, t in ((ez, tz), (ew, tw), (ex, tx)):
        np.testing.assert_allclose(e, t, rtol=1e-9, atol=1e-10)
    assert ex.dtype == np.float64


@pytest.mark.parametrize(("name", "call", "message"), [
    ("exp", lambda z: z.exp(), "this operation does not support complex tensors in the engine yet"),
    ("sqrt", lambda z: z.sqrt(), "this operation does not support complex tensors"),
    ("matmul", lambda z: z @ z, "matmul does not support complex tensors"),
    ("mm", lambda z: engine.mm(z, z), "mm does not support complex tensors"),
    ("bmm", lambda z: engine.bmm(z[None], z[None]), "bmm does not support complex tensors"),
    ("einsum", lambda z: engine.einsum("ij,jk->ik", z, z), "einsum does not support complex tensors"),
    ("pow", lambda z: z ** z, "pow with a tensor exponent does not support complex tensors"),
    ("prod", lambda z: z.prod(), "prod does not support complex tensors"),
    ("cumprod", lambda z: z.cumprod(0), "cumprod does not support complex tensors"),
    ("addcmul", lambda z: engine.addcmul(z, z, z), "addcmul does not support complex tensors"),
    ("clamp", lambda z: z.clamp(min=0), "clamp is not supported for complex types"),
    ("relu", lambda z: z.relu(), "clamp is not supported for complex types"),
    ("sign", lambda z: z.sign(), "sign is not supported for complex tensors"),
])
def test_ops_without_complex_support_refuse_it(name, call, message):
    """Ops whose values or gradients are written for real numbers raise rather than drop the
    imaginary part or miss a conjugate."""
    z = engine.fft.fft(engine.randn(3, 3))
    with pytest.raises(NotImplementedError, match=message):
        call(z)
