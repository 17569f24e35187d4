"""What training scripts' boilerplate calls, answered as torch's CPU build answers it:
torch.cuda's seeding/cache calls (no-ops) and device questions (AssertionError), f-string
formatting of 0-d tensors, ``x in tensor``."""

from __future__ import annotations

import pytest

import engine

NO_OPS = ["manual_seed", "manual_seed_all", "seed", "seed_all", "empty_cache", "is_initialized",
          "is_bf16_supported", "memory_allocated", "max_memory_allocated", "device_count", "is_available"]
RAISING = ["synchronize", "current_device", "get_device_name"]


def _call(lib, name):
    fn = getattr(lib.cuda, name)
    return fn(0) if name.startswith("manual_seed") else fn()


@pytest.mark.parametrize("name", NO_OPS)
def test_cuda_queries_as_torch_cpu_build(name):
    torch = pytest.importorskip("torch")
    assert _call(engine, name) == _call(torch, name)


@pytest.mark.parametrize("name", RAISING)
def test_cuda_device_questions_raise_as_torch(name):
    torch = pytest.importorskip("torch")
    with pytest.raises(AssertionError) as t_err:
        _call(torch, name)
    with pytest.raises(AssertionError) as e_err:
        _call(engine, name)
    assert str(e_err.value) == str(t_err.value)


def test_cuda_without_torch():
    assert engine.cuda.manual_seed_all(0) is None and engine.cuda.memory_allocated() == 0
    with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
        engine.cuda.synchronize()


@pytest.mark.parametrize("spec", [".4f", "", ".2e", ">10.3f"])
def test_format_of_0d_tensor_as_torch(spec):
    torch = pytest.importorskip("torch")
    for value in (1.2345, -3):
        assert format(engine.tensor(value), spec) == format(torch.tensor(value), spec)


def test_format_errors_and_plain_format_of_nd():
    assert f"{engine.tensor(2.5):.1f}" == "2.5"
    assert f"{engine.zeros(2)}" == repr(engine.zeros(2))
    with pytest.raises(TypeError, match="unsupported format string passed to Tensor.__format__"):
        f"{engine.zeros(2):.2f}"


def test_contains_as_torch():
    torch = pytest.importorskip("torch")
    for lib in (engine, torch):
        t = lib.tensor([[0.0, 1.5], [2.0, 3.0]])
        assert (1.5 in t, 4 in t, lib.tensor(2.0) in t, True in lib.tensor([True])) == (True, False, True, True)
    with pytest.raises(RuntimeError) as t_err:
        "a" in torch.zeros(2)  # noqa: B015 - the check is the exception
    with pytest.raises(RuntimeError) as e_err:
        "a" in engine.zeros(2)  # noqa: B015
    assert str(e_err.value) == str(t_err.value)


@pytest.mark.parametrize("factory", [
    lambda device: engine.zeros(2, device=device), lambda device: engine.ones_like(engine.zeros(2), device=device),
    lambda device: engine.tensor([1.0], device=device), lambda device: engine.arange(3, device=device),
    lambda device: engine.randn(2, device=device), lambda device: engine.full((2,), 1.0, device=device),
    lambda device: engine.eye(2, device=device), lambda device: engine.randint(0, 3, (2,), device=device),
])
def test_factories_refuse_other_devices_as_to_does(factory):
    """device='cuda' in a factory raises like .to('cuda') (it used to be ignored silently)."""
    for device in ("cuda", "cuda:0", engine.device("cpu"), "cpu", None):
        if str(device).startswith("cuda"):
            with pytest.raises(RuntimeError, match=f"engine runs on NumPy and has only the 'cpu' device, "
                                                   f"not '{device}'"):
                factory(device)
        else:
            assert factory(device).device.type == "cpu"
