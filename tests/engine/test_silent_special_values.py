"""torch computes silently on 0, -1, inf and nan (``log(0)`` is ``-inf`` without a message); the
engine must too, where NumPy would warn. Every public function of the engine's namespaces and
every public Tensor method is called on those values, one and two arguments, forward and
backward, with warnings raised as errors (engine._errstate)."""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest

import engine

SPECIAL = [0.0, -1.0, float("inf"), float("nan")]
NAMESPACES = ["engine", "engine.nn.functional", "engine.special", "engine.linalg", "engine.fft",
              "engine.nn.init"]
# change global state (seeds, defaults, print options, files) when called with a tensor
STATEFUL = ("set_", "use_", "manual_seed", "seed", "save", "load", "compile", "register_")


def _functions(module_name: str) -> list[tuple[str, object]]:
    module = __import__(module_name, fromlist=["_"])
    return sorted((name, fn) for name, fn in vars(module).items()
                  if inspect.isfunction(fn) and not name.startswith("_") and not name.startswith(STATEFUL))


def _methods() -> list[str]:
    return sorted(name for name, fn in vars(engine.Tensor).items()
                  if inspect.isfunction(fn) and not name.startswith("_") and not name.startswith(STATEFUL))


def _inputs(requires_grad: bool) -> tuple[engine.Tensor, engine.Tensor]:
    """Every pair of special values: x runs through them slowly, y fast (16 elements each)."""
    x = engine.tensor(np.repeat(SPECIAL, 4).astype(np.float32), requires_grad=requires_grad)
    y = engine.tensor(np.tile(SPECIAL, 4).astype(np.float32), requires_grad=requires_grad)
    return x, y


def _call_silently(call) -> int:
    """Run ``call`` with NumPy's warnings (RuntimeWarning) as errors; one fails the test, any
    other error (the op does not take these arguments) is skipped. The warnings torch itself
    gives (UserWarning and the like, with torch's text) are the engine's to give too: ignored
    here. Returns how many calls ran."""
    ran = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        warnings.simplefilter("error", RuntimeWarning)
        for requires_grad in (False, True):
            x, y = _inputs(requires_grad)
            for args in ((x,), (x, y)):
                try:
                    out = call(*args)
                except RuntimeWarning:
                    raise
                except Exception:  # noqa: BLE001 - not an op of these arguments
                    continue
                ran += 1
                outs = out if isinstance(out, tuple | list) else (out,)
                for o in outs:
                    if isinstance(o, engine.Tensor) and o.requires_grad and o.is_floating_point():
                        try:
                            o.sum().backward(retain_graph=True)
                        except RuntimeWarning:
                            raise
                        except Exception:  # noqa: BLE001, S112 - not differentiable here
                            continue
    return ran


@pytest.mark.parametrize("module_name", NAMESPACES)
def test_namespace_functions_are_silent(module_name):
    ran = 0
    for name, fn in _functions(module_name):
        try:
            ran += _call_silently(fn)
        except RuntimeWarning as warning:
            pytest.fail(f"{module_name}.{name} warned: {warning!r}")
    assert ran > 0


def test_tensor_methods_are_silent():
    ran = 0
    for name in _methods():
        def call(x, *rest, name=name):
            target = x.detach().clone() if name.endswith("_") else x  # in-place on a fresh leaf copy
            return getattr(target, name)(*rest)
        try:
            ran += _call_silently(call)
        except RuntimeWarning as warning:
            pytest.fail(f"Tensor.{name} warned: {warning!r}")
    assert ran > 100


@pytest.mark.parametrize("op", ["__truediv__", "__rtruediv__", "__pow__", "__rpow__", "__mod__", "__floordiv__",
                                "__sub__", "__mul__"])
def test_operators_are_silent(op):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every warning: torch gives none here
        x, y = _inputs(True)
        out = getattr(x, op)(2.0 if op.startswith("__r") else y)  # Python calls x.__rpow__(2.0) for 2.0 ** x
        if out.requires_grad:
            out.sum().backward()
        for other in (0.0, -1.0, float("inf"), float("nan")):
            getattr(x, op)(other)


def test_optimizer_step_is_silent():
    """inf - inf inside an update gives nan silently, as torch's."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for make in (lambda p: engine.optim.Adam(p), lambda p: engine.optim.SGD(p, lr=0.1, momentum=0.9),
                     lambda p: engine.optim.RMSprop(p), lambda p: engine.optim.Adagrad(p)):
            w = engine.nn.Parameter(engine.tensor([1.0, 2.0, 3.0, 4.0]))
            opt = make([w])
            for _ in range(2):
                w.grad = engine.tensor(SPECIAL)
                opt.step()


def test_user_numpy_still_warns():
    """The engine turns NumPy's warnings off only inside its own calls."""
    engine.log(engine.zeros(1))
    with pytest.warns(RuntimeWarning, match="divide by zero"):
        np.log(np.zeros(1))


def test_values_match_torch():
    torch = pytest.importorskip("torch")
    x = np.array(SPECIAL, dtype=np.float32)
    for name in ("log", "sqrt", "rsqrt", "reciprocal", "log1p", "acos", "atanh", "exp", "lgamma", "digamma"):
        got = getattr(engine, name)(engine.tensor(x)).numpy()
        want = getattr(torch, name)(torch.tensor(x)).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=name)  # inf and nan where torch has them


@pytest.mark.parametrize("lib_name", ["engine", "torch"])
def test_torchs_own_warnings_still_point_at_the_caller(lib_name):
    """The silencing wrapper is one more frame; warnings with a stacklevel skip it."""
    lib = engine if lib_name == "engine" else pytest.importorskip("torch")
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax") as rec:
        lib.nn.functional.softmax(lib.ones(2, 3))
    assert rec[0].filename == __file__
    with pytest.warns(UserWarning, match="Implicit dimension choice for log_softmax") as rec:
        lib.nn.functional.log_softmax(lib.ones(2, 3))
    assert rec[0].filename == __file__


def test_quiet_block_is_silent_and_restores_the_callers_state():
    """``_errstate.quiet()``: the ops' own silent blocks (softmax of a masked row, sigmoid's exp)."""
    from engine._errstate import quiet, silent

    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with quiet():
            assert np.log(np.zeros(1))[0] == -np.inf
            with quiet():  # nested (inside an engine call): still silent after the inner block
                pass
            np.sqrt(-np.ones(1))
        with pytest.raises(RuntimeWarning, match="divide by zero"):
            np.log(np.zeros(1))  # the caller's own NumPy warns again

        @silent
        def entry():  # an engine entry that runs a quiet block
            with quiet():
                np.log(np.zeros(1))
            return np.log(np.zeros(1))  # still inside the entry: silent

        assert entry()[0] == -np.inf
        with pytest.raises(RuntimeWarning):
            np.log(np.zeros(1))


def test_methods_that_compute_nothing_are_not_wrapped():
    """Sizes, flags and detach are called all the time, by code and the engine: no wrapper frame;
    every method that computes has one."""
    from engine._errstate import _NO_COMPUTE

    for name in _NO_COMPUTE:
        assert not hasattr(vars(engine.Tensor)[name], "__wrapped__"), name
    assert hasattr(vars(engine.Tensor)["exp"], "__wrapped__")
    x = engine.tensor([0.0, 1.0])
    assert x.size(0) == 2 and x.dim() == 1 and x.detach().numel() == 2
