"""engine.amp (GradScaler, autocast) against torch's CPU build: a scaled training run with an
overflowing step and scale growth gives torch's parameters and scales; CUDA scalers/autocast
warn and disable themselves; enabled CPU autocast is refused; torch's errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import engine

# the overflowing step sends inf through matmul's backward: NumPy warns about the NaN it makes
# there (torch is silent); the values are torch's either way
pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered in matmul:RuntimeWarning")


def _scaled_run(lib):
    scaler = lib.amp.GradScaler("cpu", init_scale=1024.0, growth_interval=2)
    w = lib.nn.Parameter(lib.tensor([[0.5, -1.0], [2.0, 0.25]]))
    opt = lib.optim.Adam([w], lr=0.05)
    x = lib.tensor([[1.0, 2.0], [3.0, -1.0]])
    history = []
    for step in range(7):
        opt.zero_grad()
        loss = (x @ w).pow(2).mean()
        if step == 3:
            loss = loss * float("inf")  # an overflowing step: skipped, scale backed off
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        lib.nn.utils.clip_grad_norm_([w], 1.0)
        scaler.step(opt)
        scaler.update()
        history.append(scaler.get_scale())
    return history, w.detach().numpy().copy(), scaler.state_dict()


def test_scaled_training_as_torch():
    torch = pytest.importorskip("torch")
    e_hist, e_w, e_state = _scaled_run(engine)
    t_hist, t_w, t_state = _scaled_run(torch)
    assert e_hist == t_hist
    np.testing.assert_allclose(e_w, t_w, rtol=1e-6)
    assert e_state == {k: (v.item() if hasattr(v, "item") else v) for k, v in t_state.items()}


def test_scale_history_without_torch():
    history, _, state = _scaled_run(engine)
    # clean steps 0-2 grow at 2 (interval 2), the inf step 3 halves, then 4-6 grow once more
    assert history == [1024.0, 2048.0, 2048.0, 1024.0, 1024.0, 2048.0, 2048.0]
    assert state["_growth_tracker"] == 1


def test_state_dict_round_trip():
    scaler = engine.amp.GradScaler("cpu", init_scale=8.0)
    other = engine.amp.GradScaler("cpu")
    other.load_state_dict(scaler.state_dict())
    assert other.get_scale() == 8.0 and other.state_dict() == scaler.state_dict()


@pytest.mark.parametrize("make", ["cuda_default", "cuda_amp", "disabled_cpu"])
def test_disabled_scalers_pass_through_as_torch(make):
    torch = pytest.importorskip("torch")
    seen = []
    for lib in (engine, torch):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if make == "cuda_default":
                scaler = lib.amp.GradScaler()
            elif make == "cuda_amp":
                scaler = lib.cuda.amp.GradScaler(enabled=True)
            else:
                scaler = lib.amp.GradScaler("cpu", enabled=False)
        w = lib.nn.Parameter(lib.tensor([1.0, 2.0]))
        opt = lib.optim.SGD([w], lr=0.1)
        scaled = scaler.scale((w * w).sum())
        scaled.backward()
        scaler.unscale_(opt)
        scaler.step(opt)
        scaler.update()
        seen.append((scaler.is_enabled(), scaler.get_scale(), scaled.item(), w.detach().numpy().tolist(),
                     scaler.state_dict(), sorted((w.category.__name__, str(w.message)) for w in caught)))
    assert seen[0] == seen[1]


def test_autocast_as_torch_cpu_build():
    torch = pytest.importorskip("torch")
    for lib in (engine, torch):
        with pytest.warns(UserWarning, match="CUDA is not available or torch_xla is imported. Disabling autocast."):
            with lib.autocast("cuda", dtype=lib.float16):
                y = lib.ones(2) * 2
        assert y.dtype == lib.float32
        with lib.autocast("cpu", enabled=False):
            assert (lib.ones(2) @ lib.ones(2)).dtype == lib.float32
    with pytest.raises(NotImplementedError, match="engine has no autocast for 'cpu'"):
        engine.autocast("cpu", dtype=engine.float16)


@pytest.mark.parametrize("case", ["unscale_twice", "empty_state", "scale_number", "closure"])
def test_errors_as_torch(case):
    torch = pytest.importorskip("torch")

    def attempt(lib):
        scaler = lib.amp.GradScaler("cpu")
        w = lib.nn.Parameter(lib.ones(2))
        opt = lib.optim.SGD([w], lr=0.1)
        scaler.scale(w.sum()).backward()
        if case == "unscale_twice":
            scaler.unscale_(opt)
            scaler.unscale_(opt)
        elif case == "empty_state":
            scaler.load_state_dict({})
        elif case == "scale_number":
            scaler.scale(3.0)
        else:
            scaler.step(opt, closure=lambda: 1.0)

    with pytest.raises((RuntimeError, ValueError)) as t_err:
        attempt(torch)
    with pytest.raises((RuntimeError, ValueError)) as e_err:
        attempt(engine)
    assert type(e_err.value) is type(t_err.value) and str(e_err.value) == str(t_err.value)
