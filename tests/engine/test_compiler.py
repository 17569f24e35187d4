"""``engine.compile`` / ``engine.compiler`` against torch's ``compile`` (backend="eager", which runs
the captured graph eagerly, as the engine runs the Python code): the OptimizedModule wrapper and
its ``_orig_mod.`` state_dict keys, attribute and training-mode delegation, compiled functions,
``disable=``, ``Module.compile()``, deepcopy, torch's argument errors and its global-hook warning."""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest

import engine

torch = pytest.importorskip("torch")
LIBS = [engine, torch]
IDS = ["engine", "torch"]


def _sin1(x):
    return x.sin() + 1


@pytest.mark.parametrize("lib", LIBS, ids=IDS)
def test_compiled_module_wraps_the_original(lib):
    lib.manual_seed(0)
    m = lib.nn.Sequential(lib.nn.Linear(2, 3), lib.nn.ReLU())
    c = lib.compile(m, backend="eager")
    assert type(c).__name__ == "OptimizedModule" and isinstance(c, lib.nn.Module) and c._orig_mod is m
    assert list(c.state_dict()) == ["_orig_mod.0.weight", "_orig_mod.0.bias"]
    assert [n for n, _ in c.named_parameters()] == ["_orig_mod.0.weight", "_orig_mod.0.bias"]
    assert len(c) == 2 and c.training
    c.eval()
    assert not c.training and not m.training
    c.train()
    assert m.training
    c.foo = 3  # attributes are the original's
    assert m.foo == 3 and "foo" not in c.__dict__
    del c.foo
    assert not hasattr(m, "foo")
    x = lib.ones(1, 2, requires_grad=True)
    y = c(x)
    y.sum().backward()
    assert type(y.grad_fn).__name__ == "ReluBackward0" and tuple(x.grad.shape) == (1, 2)
    stripped = {k.removeprefix("_orig_mod."): v for k, v in c.state_dict().items()}  # nanoGPT's resume
    m.load_state_dict(stripped)
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "_orig_mod.0.weight"'):
        c.load_state_dict(m.state_dict())
    clone = copy.deepcopy(c)
    assert type(clone).__name__ == "OptimizedModule" and clone._orig_mod is not m
    assert list(clone.state_dict()) == list(c.state_dict())
    with pytest.raises(TypeError, match="'OptimizedModule' object is not subscriptable"):
        c[0]
    with pytest.raises(TypeError, match="Linear does not support len\\(\\)"):
        len(lib.compile(lib.nn.Linear(1, 1), backend="eager"))


def test_compiled_module_gives_torchs_values():
    torch.manual_seed(0)
    t_model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.GELU(), torch.nn.Linear(8, 2))
    e_model = engine.nn.Sequential(engine.nn.Linear(4, 8), engine.nn.GELU(), engine.nn.Linear(8, 2))
    e_model.load_state_dict({k: engine.tensor(v.numpy()) for k, v in t_model.state_dict().items()})
    t_c, e_c = torch.compile(t_model, backend="eager"), engine.compile(e_model)
    data = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    t_out, e_out = t_c(torch.from_numpy(data)), e_c(engine.from_numpy(data))
    np.testing.assert_allclose(e_out.detach().numpy(), t_out.detach().numpy(), rtol=1e-6, atol=1e-6)
    t_out.square().sum().backward()
    e_out.square().sum().backward()
    for (name, tp), (_, ep) in zip(t_c.named_parameters(), e_c.named_parameters()):
        np.testing.assert_allclose(ep.grad.numpy(), tp.grad.numpy(), rtol=1e-5, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("lib", LIBS, ids=IDS)
def test_compiled_function_and_decorator(lib):
    cf = lib.compile(_sin1, backend="eager")
    assert cf is not _sin1 and cf.__name__ == "_sin1" and cf.__wrapped__ is _sin1
    assert cf._torchdynamo_orig_callable is _sin1
    assert cf(lib.zeros(2)).tolist() == [1.0, 1.0]
    decorated = lib.compile(backend="eager", fullgraph=True, dynamic=False)(_sin1)
    assert decorated(lib.zeros(1)).tolist() == [1.0]
    m = lib.nn.Linear(2, 2)
    assert lib.compile(_sin1, disable=True) is _sin1 and lib.compile(m, disable=True) is m


@pytest.mark.parametrize("lib", LIBS, ids=IDS)
def test_module_compile_in_place(lib):
    m = lib.nn.Linear(2, 2)
    assert m.compile(backend="eager") is None
    assert m._compiled_call_impl is not None and type(m).__name__ == "Linear"
    assert list(m.state_dict()) == ["weight", "bias"]
    calls = []
    m.register_forward_hook(lambda mod, i, o: calls.append(1))
    assert tuple(m(lib.ones(2)).shape) == (2,) and calls == [1]


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"mode": "max-autotune", "options": {"a": 1}}, RuntimeError,
     "Either mode or options can be specified, but both can't be specified at the same time."),
    ({"mode": "bogus"}, RuntimeError, "Unrecognized mode=bogus, should be one of: default, lite, reduce-overhead, "
                                      "max-autotune-no-cudagraphs, max-autotune"),
    ({"backend": "nonexistent"}, RuntimeError, "Invalid backend: 'nonexistent', see "
                                               "`torch._dynamo.list_backends\\(\\)` for available backends."),
])
def test_argument_errors(kwargs, error, match):
    for lib in LIBS:
        with pytest.raises(error, match=match):
            lib.compile(lib.nn.Linear(1, 1), **kwargs)
    assert type(pytest.raises(RuntimeError, engine.compile, _sin1, backend="x").value).__name__ == "InvalidBackend"


def test_model_errors():
    for lib in LIBS:
        with pytest.raises(AssertionError, match="A callable function is expected, but <class 'int'> is provided."):
            lib.compile(5, backend="eager")
        with pytest.raises(RuntimeError, match="Model can't be None"):
            lib.compile(backend="eager")(None)


@pytest.mark.parametrize("lib", LIBS, ids=IDS)
def test_global_hooks_warn_as_torch(lib):
    c = lib.compile(lib.nn.Linear(2, 2), backend="eager")
    fired = []
    handle = lib.nn.modules.module.register_module_forward_hook(lambda mod, i, o: fired.append(type(mod).__name__))
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            c(lib.ones(1, 2))
    finally:
        handle.remove()
    assert any(str(w.message).startswith("Using `torch.compile(module)` when there are global hooks") for w in caught)
    assert fired == ["Linear", "OptimizedModule"]  # the extra firing torch's warning speaks of


def test_compiler_namespace():
    for lib in LIBS:
        assert lib.compiler.is_compiling() is False and lib.compiler.is_dynamo_compiling() is False
        assert lib.compiler.is_exporting() is False
        assert lib.compiler.reset() is None
        undecorated = lib.compiler.disable(_sin1)
        assert undecorated(lib.zeros(1)).tolist() == [1.0]
        assert lib.compiler.disable(recursive=False)(_sin1)(lib.zeros(1)).tolist() == [1.0]
