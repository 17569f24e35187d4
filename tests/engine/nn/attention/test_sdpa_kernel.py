"""engine/nn/attention and the backend switches of engine/backends/cuda.py against torch's CPU
build: ``sdpa_kernel`` enables only the backends given (restoring the previous ones after, also
on error), ``SDPBackend`` has torch's members and values, and scaled_dot_product_attention then
runs (with torch's numbers) or raises torch's error and warnings, as torch's CPU kernel
selection decides: FLASH_ATTENTION alone refuses dropout, non-4-D, broadcast batches, unequal
head counts or head sizes and non-unit last strides; no MATH nor FLASH refuses everything."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import engine
from tests.engine._outcomes import assert_as_torch, outcome

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
Q = RNG.standard_normal((2, 2, 3, 4)).astype(np.float32)
K = RNG.standard_normal((2, 2, 5, 4)).astype(np.float32)
V = RNG.standard_normal((2, 2, 5, 4)).astype(np.float32)
MASK = RNG.standard_normal((3, 5)) > 0


def _attention(lib: Any) -> Any:
    return lib.nn.attention


def _sdpa(lib: Any, backends: Any, q: np.ndarray = Q, k: np.ndarray = K, v: np.ndarray = V, **kw: Any) -> Any:
    """The op under ``sdpa_kernel(backends)`` (names of SDPBackend members), with the warnings
    it gave (without torch's C++ source locations)."""
    att = _attention(lib)
    chosen = ([getattr(att.SDPBackend, b) for b in backends] if isinstance(backends, list)
              else getattr(att.SDPBackend, backends))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with att.sdpa_kernel(chosen):
                out = lib.nn.functional.scaled_dot_product_attention(lib.tensor(q), lib.tensor(k), lib.tensor(v), **kw)
        except RuntimeError as error:
            out = ("error", str(error))
    return out, [str(w.message).split(" (Triggered internally")[0] for w in caught]


CASES = {
    "math": lambda L: _sdpa(L, "MATH"),
    "flash": lambda L: _sdpa(L, "FLASH_ATTENTION"),
    "flash_causal": lambda L: _sdpa(L, "FLASH_ATTENTION", Q, Q, Q, is_causal=True),
    "flash_mask": lambda L: _sdpa(L, "FLASH_ATTENTION", attn_mask=L.tensor(MASK)),
    "flash_scale": lambda L: _sdpa(L, "FLASH_ATTENTION", scale=0.3),
    "math_and_flash": lambda L: _sdpa(L, ["MATH", "FLASH_ATTENTION"]),
    "efficient_only": lambda L: _sdpa(L, "EFFICIENT_ATTENTION"),
    "cudnn_only": lambda L: _sdpa(L, "CUDNN_ATTENTION"),
    "none": lambda L: _sdpa(L, []),
    "flash_dropout": lambda L: _sdpa(L, "FLASH_ATTENTION", dropout_p=0.5),
    "flash_3d": lambda L: _sdpa(L, "FLASH_ATTENTION", Q[0], K[0], V[0]),
    "flash_broadcast_batch": lambda L: _sdpa(L, "FLASH_ATTENTION", Q, K[:1], V[:1]),
    "flash_heads": lambda L: _sdpa(L, "FLASH_ATTENTION", Q, K[:, :1], V[:, :1]),
    "flash_value_dim": lambda L: _sdpa(L, "FLASH_ATTENTION", Q, K, RNG.standard_normal((2, 2, 5, 6)).astype("f4")),
    "flash_efficient_3d": lambda L: _sdpa(L, ["FLASH_ATTENTION", "EFFICIENT_ATTENTION"], Q[0], K[0], V[0]),
    "math_3d": lambda L: _sdpa(L, "MATH", Q[0], K[0], V[0]),
    "flash_transposed": lambda L: _sdpa_transposed(L),
    "encoder_layer_training": lambda L: _encoder_layer(L, train=True),
    "encoder_layer_eval": lambda L: _encoder_layer(L, train=False),
    "not_a_backend": lambda L: _attention(L).sdpa_kernel("math").__enter__(),
    "a_tuple": lambda L: _attention(L).sdpa_kernel((_attention(L).SDPBackend.MATH,)).__enter__(),
    "members": lambda L: [(name, int(b), repr(b), str(b)) for name, b in _attention(L).SDPBackend.__members__.items()],
}


def _sdpa_transposed(lib: Any) -> Any:
    """Inputs whose last dimension is not contiguous."""
    t = lambda a: lib.tensor(a).transpose(-1, -2)  # noqa: E731
    q = np.ascontiguousarray(Q.swapaxes(-1, -2))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with _attention(lib).sdpa_kernel(_attention(lib).SDPBackend.FLASH_ATTENTION):
                lib.nn.functional.scaled_dot_product_attention(t(q), t(q), t(q))
        except RuntimeError as error:
            return str(error), [str(w.message).split(" (Triggered internally")[0] for w in caught]
    return "ran"


def _encoder_layer(lib: Any, train: bool) -> Any:
    """TransformerEncoderLayer runs its attention through the op (dropout while training)."""
    lib.manual_seed(0)
    layer = lib.nn.TransformerEncoderLayer(4, 2, dim_feedforward=8, batch_first=True).train(train)
    with lib.no_grad():
        for p in layer.parameters():
            p.copy_(lib.tensor(RNG.standard_normal(tuple(p.shape)).astype(np.float32) * 0 + 0.1))
    try:
        with _attention(lib).sdpa_kernel(_attention(lib).SDPBackend.FLASH_ATTENTION):
            out = layer(lib.tensor(Q[0]))
    except RuntimeError as error:
        return str(error)
    return out if not train else "ran"


@pytest.mark.parametrize("name", CASES)
def test_sdpa_kernel_matches_torch(name):
    assert_as_torch(name, CASES[name], torch)


def test_the_refusals_are_refusals_in_torch():
    refused = [n for n, fn in CASES.items() if "No " in repr(outcome(torch, fn, torch))]
    assert len(refused) == 11


@pytest.mark.parametrize("lib", [engine, torch], ids=["engine", "torch"])
def test_the_previous_backends_come_back(lib):
    att, cuda = _attention(lib), lib.backends.cuda
    assert cuda.flash_sdp_enabled() and cuda.math_sdp_enabled() and cuda.mem_efficient_sdp_enabled()
    with pytest.raises(ValueError):
        with att.sdpa_kernel([att.SDPBackend.MATH]):
            assert not cuda.flash_sdp_enabled() and cuda.math_sdp_enabled() and not cuda.cudnn_sdp_enabled()
            raise ValueError
    assert cuda.flash_sdp_enabled() and cuda.math_sdp_enabled() and cuda.cudnn_sdp_enabled()
    assert att._cur_sdpa_kernel_backends() == [getattr(att.SDPBackend, n) for n in
                                               ("CUDNN_ATTENTION", "FLASH_ATTENTION", "EFFICIENT_ATTENTION", "MATH",
                                                "OVERRIDEABLE")]


@pytest.mark.parametrize("lib", [engine, torch], ids=["engine", "torch"])
def test_set_priority_orders_the_backends(lib):
    att = _attention(lib)
    chosen = [att.SDPBackend.MATH, att.SDPBackend.FLASH_ATTENTION]
    with att.sdpa_kernel(chosen, set_priority=True):
        assert att._cur_sdpa_kernel_backends(with_priority=True) == chosen
    assert [int(b) for b in att._cur_sdpa_kernel_backends(with_priority=True)] == [1, 2, 0, 3, 4]


@pytest.mark.parametrize("lib", [engine, torch], ids=["engine", "torch"])
def test_backend_switches(lib):
    cuda = lib.backends.cuda
    assert cuda.is_flash_attention_available() is False
    cuda.enable_math_sdp(False)
    cuda.enable_flash_sdp(False)
    try:
        assert not cuda.math_sdp_enabled() and not cuda.flash_sdp_enabled()
        with pytest.raises(RuntimeError, match="No viable backend"):
            lib.nn.functional.scaled_dot_product_attention(lib.tensor(Q), lib.tensor(K), lib.tensor(V))
    finally:
        cuda.enable_math_sdp(True)
        cuda.enable_flash_sdp(True)
    with pytest.warns(FutureWarning, match="sdp_kernel\\(\\)` is deprecated"):
        with cuda.sdp_kernel(enable_math=False, enable_flash=True):
            assert not cuda.math_sdp_enabled() and cuda.flash_sdp_enabled() and cuda.mem_efficient_sdp_enabled()
    assert cuda.math_sdp_enabled()
