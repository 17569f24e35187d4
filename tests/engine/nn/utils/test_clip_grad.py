"""engine.nn.utils: clip_grad_norm_ / clip_grad_value_ with torch's numbers, and the
parameters <-> vector conversions."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import engine
from engine.nn.utils import (
    clip_grad_norm,
    clip_grad_norm_,
    clip_grad_value_,
    get_total_norm,
    parameters_to_vector,
    vector_to_parameters,
)
from tests.engine._parity import assert_same_error

RNG = np.random.default_rng(0)
GRADS = [RNG.standard_normal((4, 5)).astype(np.float32) * 3, RNG.standard_normal(7).astype(np.float32),
         np.zeros(3, np.float32), RNG.standard_normal((2, 2, 2)).astype(np.float32) * 0.1]


def params_with_grads(lib, grads=GRADS, dtype=None):
    ps = []
    for g in grads:
        p = lib.zeros(*g.shape, requires_grad=True) if dtype is None else \
            lib.zeros(*g.shape, dtype=dtype, requires_grad=True)
        p.grad = lib.from_numpy(g.copy() if dtype is None else g.astype(np.float64))
        ps.append(p)
    ps.append(lib.zeros(2, requires_grad=True))  # no grad: ignored
    return ps


@pytest.mark.parametrize("norm_type", [2.0, 1, math.inf, 3.0, 0.5, 0, -math.inf])
@pytest.mark.parametrize("max_norm", [0.5, 1e6])
def test_clip_grad_norm_matches_torch(torch, norm_type, max_norm):
    eps_, tps = params_with_grads(engine), params_with_grads(torch)
    etotal = clip_grad_norm_(eps_, max_norm, norm_type=norm_type)
    ttotal = torch.nn.utils.clip_grad_norm_(tps, max_norm, norm_type=norm_type)
    assert etotal.dtype == engine.float32 and etotal.shape == ()
    np.testing.assert_allclose(etotal.item(), ttotal.item(), rtol=2e-7)
    for e, t in zip(eps_[:-1], tps[:-1]):
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=3e-7, atol=1e-12)
    assert eps_[-1].grad is None


def test_clipping_scales_to_max_norm_and_leaves_small_gradients():
    ps = params_with_grads(engine)
    before = get_total_norm([p.grad for p in ps if p.grad is not None]).item()
    total = clip_grad_norm_(ps, max_norm=1.0)
    after = get_total_norm([p.grad for p in ps if p.grad is not None]).item()
    assert total.item() == pytest.approx(before) and before > 10 and after == pytest.approx(1.0, rel=1e-5)
    small = params_with_grads(engine)
    clip_grad_norm_(small, max_norm=1e6)
    assert all(np.array_equal(p.grad.numpy(), g) for p, g in zip(small, GRADS))


def test_float64_single_tensor_and_generator_inputs(torch):
    e64, t64 = params_with_grads(engine, dtype=engine.float64), params_with_grads(torch, dtype=torch.float64)
    etotal, ttotal = clip_grad_norm_(iter(e64), 1.0), torch.nn.utils.clip_grad_norm_(iter(t64), 1.0)
    assert etotal.dtype == engine.float64
    np.testing.assert_allclose(etotal.item(), ttotal.item(), rtol=1e-15)
    single = params_with_grads(engine)[0]
    assert clip_grad_norm_(single, 1.0).item() == pytest.approx(np.linalg.norm(GRADS[0]), rel=1e-6)


def test_no_gradients_and_empty_inputs(torch):
    assert clip_grad_norm_([engine.zeros(2, requires_grad=True)], 1.0).tolist() == 0.0
    assert clip_grad_norm_([], 1.0).dtype == engine.float32
    with pytest.warns(UserWarning, match="empty generator"):
        clip_grad_norm_((p for p in []), 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clip_grad_norm_([], 1.0)  # an empty list does not warn (only an empty generator)


def test_non_finite_norms(torch):
    def case(lib):
        p = lib.zeros(3, requires_grad=True)
        p.grad = lib.tensor([1.0, float("inf"), 2.0])
        return clip_grad_norm_(p, 1.0, error_if_nonfinite=True) if lib is engine else \
            lib.nn.utils.clip_grad_norm_(p, 1.0, error_if_nonfinite=True)

    with pytest.raises(RuntimeError, match="non-finite"):
        case(engine)
    assert_same_error(lambda: case(engine), lambda: case(torch))
    p = engine.zeros(2, requires_grad=True)
    p.grad = engine.tensor([float("nan"), 1.0])
    assert math.isnan(clip_grad_norm_(p, 1.0).item()) and np.isnan(p.grad.numpy()).all()


def test_clip_grad_norm_alias_warns_and_clips():
    ps = params_with_grads(engine)
    with pytest.warns(FutureWarning, match="deprecated"):
        total = clip_grad_norm(ps, 1.0)
    assert total.item() > 1.0


def test_clip_grad_value_matches_torch(torch):
    eps_, tps = params_with_grads(engine), params_with_grads(torch)
    eps_[1].grad[0] = float("nan")
    tps[1].grad[0] = float("nan")
    clip_grad_value_(eps_, 0.7)
    torch.nn.utils.clip_grad_value_(tps, 0.7)
    for e, t in zip(eps_[:-1], tps[:-1]):
        np.testing.assert_array_equal(e.grad.numpy(), t.grad.numpy())
    assert np.nanmax(np.abs(eps_[0].grad.numpy())) == pytest.approx(0.7)
    single = params_with_grads(engine)[0]
    v = single.grad._version
    clip_grad_value_(single, 0.1)
    assert np.abs(single.grad.numpy()).max() <= np.float32(0.1) and single.grad._version == v + 1


def test_parameters_to_vector_and_back(torch):
    ps = [engine.arange(6, dtype=engine.float32).reshape(2, 3).requires_grad_(), engine.ones(2, requires_grad=True)]
    vec = parameters_to_vector(ps)
    assert vec.tolist() == [0, 1, 2, 3, 4, 5, 1, 1] and vec.grad_fn is not None
    (vec * engine.arange(8, dtype=engine.float32)).sum().backward()
    assert ps[0].grad.tolist() == [[0, 1, 2], [3, 4, 5]] and ps[1].grad.tolist() == [6, 7]
    new = engine.arange(10, 18, dtype=engine.float32)
    vector_to_parameters(new, ps)
    assert ps[0].tolist() == [[10, 11, 12], [13, 14, 15]] and ps[1].tolist() == [16, 17]
    assert np.shares_memory(ps[1].detach().numpy(), new.numpy())
    with pytest.raises(TypeError, match="expected torch.Tensor"):
        vector_to_parameters([1.0], ps)
    assert_same_error(lambda: vector_to_parameters([1.0], ps),
                      lambda: torch.nn.utils.vector_to_parameters([1.0], [torch.zeros(1)]))
