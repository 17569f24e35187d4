"""Fixtures and helpers for the layer/loss suite: ``torch`` (the oracle, or a skip), converting
arrays both ways, and copying parameters from an engine module into a torch one."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import engine


@pytest.fixture(scope="session")
def torch():
    torch = pytest.importorskip("torch")
    torch.set_num_threads(1)
    return torch


def pair(torch, array: np.ndarray, requires_grad: bool = False):
    """The same values as an engine tensor and a torch tensor (dtype kept)."""
    array = np.asarray(array)
    return (engine.tensor(array, requires_grad=requires_grad),
            torch.tensor(array, requires_grad=requires_grad))


def copy_params(engine_module, torch_module, torch) -> None:
    """Give ``torch_module`` the engine module's parameters and buffers (by name, via NumPy)."""
    with torch.no_grad():
        for name, p in engine_module.named_parameters():
            torch_module.get_parameter(name).copy_(torch.from_numpy(p.detach().numpy().copy()))
        for name, b in engine_module.named_buffers():
            torch_module.get_buffer(name).copy_(torch.from_numpy(b.numpy().copy()))


def close(engine_t, torch_t, atol: float = 1e-5, rtol: float = 1e-4) -> None:
    """Assert equal shapes and values (None only with None)."""
    if engine_t is None or torch_t is None:
        assert engine_t is None and torch_t is None, (engine_t, torch_t)
        return
    e = engine_t.detach().numpy()
    t = torch_t.detach().numpy()
    assert e.shape == t.shape, (e.shape, t.shape)
    assert e.dtype == t.dtype, (e.dtype, t.dtype)
    np.testing.assert_allclose(e, t, atol=atol, rtol=rtol)


def graph_names(t, depth: int = 6) -> list:
    """``grad_fn`` names down the graph (nested lists, AccumulateGrad/None left out), to compare
    graph shapes between engine and torch."""
    def walk(fn, d):
        if fn is None or d == 0:
            return []
        children = [walk(n, d - 1) for n, _ in fn.next_functions
                    if n is not None and type(n).__name__ != "AccumulateGrad"]
        return [type(fn).__name__, children]
    return walk(t.grad_fn, depth)


def edge_names(t) -> list:
    """Names of the nodes ``t.grad_fn`` feeds into, ``None`` for inputs that need no gradient."""
    return [None if n is None else type(n).__name__ for n, _ in t.grad_fn.next_functions]


def rnd(*shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def run_both(torch, fn, arrays, grads=None, seed=5):
    """``fn(lib, *tensors)`` on both libraries: outputs, graphs and gradients compared."""
    grads = grads or [True] * len(arrays)
    res = []
    for lib in (engine, torch):
        ins = [lib.tensor(a, requires_grad=g) for a, g in zip(arrays, grads)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = fn(lib, *ins)
        out.backward(lib.tensor(rnd(*out.shape, seed=seed)))
        res.append((out, ins))
    (eo, ei), (to, ti) = res
    close(eo, to, atol=1e-5)
    assert graph_names(eo, 6) == graph_names(to, 6)
    for e, t, g in zip(ei, ti, grads):
        if g:
            close(e.grad, t.grad, atol=1e-5)
    return eo, to


def error_of(lib, fn):
    """``(exception type name, message)`` that ``fn(lib)`` raises (it must raise)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fn(lib)
        except Exception as err:  # noqa: BLE001 - the test compares type and message
            return type(err).__name__, str(err)
    raise AssertionError("no error")


def f64(*shape, seed=0):
    """A float64 leaf of normal draws, for finite-difference checks."""
    return engine.tensor(rnd(*shape, seed=seed, dtype=np.float64), requires_grad=True)
