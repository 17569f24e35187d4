"""torch.backends / torch.accelerator / matmul-precision and determinism switches as CPU-only
training scripts use them: the same answers as torch's CPU build, switches read back as set."""

from __future__ import annotations

import importlib
import warnings

import pytest

import engine


def test_queries_as_torch_cpu_build():
    torch = pytest.importorskip("torch")
    for path, call in [("backends.cudnn", "is_available"), ("backends.cudnn", "version"),
                       ("backends.mps", "is_available"), ("backends.mps", "is_built"),
                       ("backends.cuda", "is_built"), ("accelerator", "is_available"),
                       ("accelerator", "current_accelerator"), ("accelerator", "device_count")]:
        e_mod = importlib.import_module(f"engine.{path}")
        t_mod = importlib.import_module(f"torch.{path}")
        assert getattr(e_mod, call)() == getattr(t_mod, call)(), (path, call)
    for name in ("enabled", "benchmark", "deterministic", "allow_tf32"):
        assert getattr(engine.backends.cudnn, name) == getattr(torch.backends.cudnn, name), name
    assert engine.backends.cuda.matmul.allow_tf32 == torch.backends.cuda.matmul.allow_tf32
    assert engine.get_float32_matmul_precision() == torch.get_float32_matmul_precision()
    assert engine.are_deterministic_algorithms_enabled() == torch.are_deterministic_algorithms_enabled()


def test_the_import_forms_scripts_use():
    import engine.backends.cudnn as cudnn
    from engine.backends import mps
    assert cudnn is engine.backends.cudnn and mps is engine.backends.mps
    device = "cuda" if engine.cuda.is_available() else "mps" if mps.is_available() else "cpu"
    assert device == "cpu"
    assert not engine.accelerator.is_available() and engine.accelerator.current_accelerator() is None


def test_switches_read_back_as_set():
    old = engine.backends.cudnn.benchmark, engine.backends.cuda.matmul.allow_tf32
    try:
        engine.backends.cudnn.benchmark = True
        engine.backends.cuda.matmul.allow_tf32 = True
        assert engine.backends.cudnn.benchmark and engine.backends.cuda.matmul.allow_tf32
    finally:
        engine.backends.cudnn.benchmark, engine.backends.cuda.matmul.allow_tf32 = old
    try:
        engine.set_float32_matmul_precision("medium")
        assert engine.get_float32_matmul_precision() == "medium"
        engine.use_deterministic_algorithms(True, warn_only=True)
        assert engine.are_deterministic_algorithms_enabled()
        assert engine.is_deterministic_algorithms_warn_only_enabled()
    finally:
        engine.set_float32_matmul_precision("highest")
        engine.use_deterministic_algorithms(False)
    assert not engine.is_deterministic_algorithms_warn_only_enabled()


def test_unknown_precision_warns_as_torch_and_changes_nothing():
    with pytest.warns(UserWarning, match="bogus is not one of 'highest', 'high', or 'medium'; the current"
                                         "setFloat32MatmulPrecision call has no effect."):
        engine.set_float32_matmul_precision("bogus")
    assert engine.get_float32_matmul_precision() == "highest"
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.set_float32_matmul_precision("bogus")
    assert any(str(w.message).startswith("bogus is not one of 'highest', 'high', or 'medium'; the current"
                                         "setFloat32MatmulPrecision call has no effect.") for w in caught)


def test_num_threads_as_torch():
    torch = pytest.importorskip("torch")
    assert engine.get_num_threads() == torch.get_num_threads()
    assert engine.get_num_interop_threads() == torch.get_num_interop_threads()
    before = engine.get_num_threads()
    try:
        engine.set_num_threads(1)
        engine.set_num_interop_threads(3)
        assert engine.get_num_threads() == 1 and engine.get_num_interop_threads() == 3
    finally:
        engine._NUM_THREADS.update(intra=None, interop=None)
    assert engine.get_num_threads() == before
    for bad in (0, -1, 1.5, "a", True):
        if bad is True:
            continue  # torch takes True as 1; the engine refuses a bool (not worth copying)
        with pytest.raises(RuntimeError) as t_err:
            torch.set_num_threads(bad)
        with pytest.raises(RuntimeError) as e_err:
            engine.set_num_threads(bad)
        assert str(e_err.value) == str(t_err.value)
    torch.set_num_threads(before)
