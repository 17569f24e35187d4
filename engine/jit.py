"""``torch.jit`` as torch runs it with TorchScript disabled (``PYTORCH_JIT=0``, torch's documented
switch "to disable all script and tracing annotations"): the engine has no TorchScript compiler,
so ``script`` and ``trace`` hand back the function or module they were given, which then runs
eagerly, as torch's do under that switch; ``fork`` runs its function at once and returns a
completed ``Future`` whose ``wait`` gives the result (torch's eager ``fork``). The decorators
(``ignore``, ``unused``, ``export``, ``interface``, ``script_method``) return what they decorate;
``is_scripting``/``is_tracing`` are False; ``annotate`` returns its value. Each entry point torch
2.5+ deprecates gives its DeprecationWarning.

What needs a compiled TorchScript program (``save``, ``load``, ``freeze``,
``optimize_for_inference``) raises ``NotImplementedError`` naming the call: save a ``state_dict``
with ``engine.save`` instead.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any, Final  # noqa: F401 - torch.jit.Final, as torch re-exports typing's

from .futures import Future, _Future
from .nn.modules.module import Module

__all__ = ["Attribute", "Final", "Future", "ScriptModule", "annotate", "export", "fork", "freeze", "ignore",
           "interface", "is_scripting", "is_tracing", "load", "optimize_for_inference", "save", "script",
           "script_method", "trace", "trace_module", "unused", "wait"]


def _deprecated(call: str, instead: str = "Please use `torch.compile` instead.") -> None:
    """torch 2.5+'s DeprecationWarning for each TorchScript entry point, located in this module as torch's is
    in its own (so Python's default filters hide it outside tests, as they hide torch's)."""
    warnings.warn(f"`torch.jit.{call}` is deprecated. {instead}", DeprecationWarning, stacklevel=2)


_SWITCH = "Please switch to `torch.compile` or `torch.export`."


def script(obj: Any, optimize: None = None, _frames_up: int = 0, _rcb: Callable[[str], Any] | None = None,
           example_inputs: list[tuple] | dict[Callable, list[tuple]] | None = None) -> Any:
    """``obj`` itself (a function, a Module or a class), as ``torch.jit.script`` returns with
    ``PYTORCH_JIT=0``: it runs eagerly."""
    _deprecated("script", _SWITCH)
    return obj


def trace(func: Any, example_inputs: Any = None, optimize: Any = None, check_trace: bool = True,
          check_inputs: Any = None, check_tolerance: float = 1e-05, strict: bool = True, _force_outplace: bool = False,
          _module_class: Any = None, _compilation_unit: Any = None, example_kwarg_inputs: Any = None,
          _store_inputs: bool = True) -> Any:
    """``func`` itself, as ``torch.jit.trace`` returns with ``PYTORCH_JIT=0`` (nothing is run)."""
    _deprecated("trace", _SWITCH)
    return func


def trace_module(mod: Any, inputs: Any, optimize: Any = None, check_trace: bool = True, check_inputs: Any = None,
                 check_tolerance: float = 1e-05, strict: bool = True, _force_outplace: bool = False,
                 _module_class: Any = None, _compilation_unit: Any = None, example_inputs_is_kwarg: bool = False,
                 _store_inputs: bool = True) -> Any:
    """``mod`` itself, as with ``PYTORCH_JIT=0``."""
    _deprecated("trace_method", _SWITCH)  # torch's trace_module names it so
    return mod


def ignore(drop: Any = False, **kwargs: Any) -> Any:
    """``@ignore`` or ``@ignore(drop=...)``: the function is left to Python, as it always is here."""
    if callable(drop):  # used bare: @torch.jit.ignore
        return drop
    return lambda fn: fn


def unused(fn: Callable) -> Callable:
    return fn


def export(fn: Callable) -> Callable:
    return fn


def interface(obj: Any) -> Any:
    _deprecated("interface")
    if not isinstance(obj, type):
        raise RuntimeError("interface must be applied to a class")
    return obj


def script_method(fn: Callable) -> Callable:
    _deprecated("script_method", _SWITCH)
    return fn


def fork(func: Callable, *args: Any, **kwargs: Any) -> _Future:
    """Run ``func(*args, **kwargs)`` now and return a completed Future holding its result, as
    torch's ``fork`` does outside TorchScript (an error in ``func`` is raised here, at the fork)."""
    _deprecated("fork")
    if not callable(func):
        raise TypeError(f"Object of type '{type(func).__name__}' is not an instance of 'function'")
    future = _Future()
    future.set_result(func(*args, **kwargs))
    return future


def wait(future: _Future) -> Any:
    """The result of a forked task (``future.wait()``)."""
    _deprecated("wait")
    if not isinstance(future, _Future):
        raise TypeError("wait(): incompatible function arguments. The following argument types are supported:\n"
                        f"    1. (arg0: torch._C.Future) -> object\n\nInvoked with: {future!r}")
    return future.wait()


def is_scripting() -> bool:
    """False: engine code always runs in Python (torch: False outside a compiled function)."""
    return False


def is_tracing() -> bool:
    return False


def annotate(the_type: Any, the_value: Any) -> Any:
    """``the_value``: the type is for the TorchScript compiler only."""
    return the_value


class Attribute:
    """``torch.jit.Attribute(value, type)``: outside TorchScript, the value (as torch returns)."""

    def __new__(cls, value: Any, type: Any = None) -> Any:  # noqa: A002 - torch's names
        return value


class ScriptModule(Module):
    """What ``torch.jit.ScriptModule`` is with TorchScript disabled: an ``nn.Module``."""

    def __init__(self, arg: Any = None) -> None:
        super().__init__()


def _no_torchscript(call: str) -> NotImplementedError:
    return NotImplementedError(f"torch.jit.{call} needs a compiled TorchScript program, which engine does not "
                               "build (engine.jit.script returns the module itself); save its state_dict with "
                               "engine.save instead")


def save(m: Any, f: Any, _extra_files: Any = None) -> None:
    raise _no_torchscript("save")


def load(f: Any, map_location: Any = None, _extra_files: Any = None, _restore_shapes: bool = False) -> Any:
    raise _no_torchscript("load")


def freeze(mod: Any, preserved_attrs: list[str] | None = None, optimize_numerics: bool = True) -> Any:
    _deprecated("freeze")
    raise _no_torchscript("freeze")


def optimize_for_inference(mod: Any, other_methods: list[str] | None = None) -> Any:
    _deprecated("optimize_for_inference")
    raise _no_torchscript("optimize_for_inference")
