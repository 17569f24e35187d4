"""``torch.compile`` and ``torch.compiler`` as torch runs them under
``torch.compiler.set_stance("force_eager")``, its documented stance that "ignores all torch.compile
directives": the engine has no graph compiler, so a compiled model runs its Python code eagerly,
with the same values, gradients and hooks.

What stays as torch does it, because code depends on it: ``compile(module)`` returns an
``OptimizedModule`` wrapping the original (``_orig_mod``), whose ``state_dict`` keys carry the
``_orig_mod.`` prefix (nanoGPT strips it when it resumes), whose attributes read and write the
original's, and whose ``training`` flag is the original's; ``compile(function)`` returns a wrapper
(``__wrapped__`` and ``_torchdynamo_orig_callable`` name the function); ``disable=True`` returns the
model itself; torch's argument checks and their errors (mode and options together, unknown modes
and backends, a non-callable model); ``Module.compile()`` compiles in place.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any

from .nn.modules import module as _module
from .nn.modules.module import Module

__all__ = ["InvalidBackend", "OptimizedModule", "compile", "disable", "is_compiling", "is_dynamo_compiling",
           "is_exporting", "reset"]

_MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")
# torch._dynamo.list_backends(exclude_tags=()) in torch 2.13: the names torch.compile accepts
_BACKENDS = frozenset({
    "aot_eager", "aot_eager_decomp_partition", "aot_eager_decomp_partition_crossref",
    "aot_eager_decomp_partition_with_mode", "aot_eager_default_partitioner", "aot_ts", "cudagraphs",
    "dynamo_accuracy_minifier_backend", "dynamo_minifier_backend", "eager", "eager_debug", "eager_noexcept",
    "inductor", "invoke_subgraph", "openxla", "openxla_eval", "pre_dispatch_eager", "ts", "tvm",
})


class InvalidBackend(RuntimeError):
    """``torch._dynamo.exc.InvalidBackend``: ``backend=`` names no registered backend."""

    def __init__(self, name: str) -> None:
        super().__init__(f"Invalid backend: {name!r}, see `torch._dynamo.list_backends()` for available backends.")


def is_compiling() -> bool:
    """False: engine code never runs inside a compiled region."""
    return False


def is_dynamo_compiling() -> bool:
    return False


def is_exporting() -> bool:
    return False


def reset() -> None:
    """Clear compiled code: the engine keeps none (a compiled model runs its Python code), so there
    is nothing to clear, and nothing changes."""


def disable(fn: Callable | None = None, recursive: bool = True, *, reason: str | None = None) -> Any:
    """``fn`` runs without compilation, as every engine function does: ``fn`` itself (or, used as
    ``@disable(recursive=False)``, a decorator returning it)."""
    if fn is None:
        return lambda f: disable(f, recursive, reason=reason)
    return fn


def _has_any_global_hook() -> bool:
    return bool(_module._global_forward_pre_hooks or _module._global_forward_hooks
                or _module._global_backward_pre_hooks or _module._global_backward_hooks)


class OptimizedModule(Module):
    """What ``compile(module)`` returns: a module holding the original as ``_orig_mod`` and running
    it (its own hooks fire, then the original's); other attributes are the original's."""

    _opt_mod_attributes = frozenset({"_orig_mod", "_torchdynamo_orig_callable", "forward", "__dict__",
                                     "_super_module_initialized"})

    def __init__(self, mod: Module) -> None:
        object.__setattr__(self, "_super_module_initialized", False)
        object.__setattr__(self, "_orig_mod", mod)
        super().__init__()
        self._super_module_initialized = True
        self._orig_mod = mod  # registered as the child "_orig_mod": the state_dict prefix
        self._torchdynamo_orig_callable = mod.__call__

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self._orig_mod(*args, **kwargs)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if _has_any_global_hook():
            warnings.warn(
                "Using `torch.compile(module)` when there are global hooks on modules (e.g., from "
                "`register_module_forward_hook`); this will cause the hooks to fire an extra time for the "
                "`OptimizedModule` created by `torch.compile(module)`. If this causes undesired behavior, "
                "please try using `module.compile()`, or use the per-module hooks instead", stacklevel=2)
        return super().__call__(*args, **kwargs)

    @property
    def training(self) -> bool:  # type: ignore[override]
        return self._orig_mod.training

    @training.setter
    def training(self, value: bool) -> None:
        if self._super_module_initialized:
            self._orig_mod.training = value

    def __len__(self) -> int:
        try:
            return len(self._orig_mod)  # type: ignore[arg-type]
        except TypeError:
            raise TypeError(f"{type(self._orig_mod).__name__} does not support len()") from None

    def __getattr__(self, name: str) -> Any:
        if name == "_orig_mod":
            return self._modules["_orig_mod"]
        return getattr(self._orig_mod, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if hasattr(type(self), name) or name in OptimizedModule._opt_mod_attributes:
            super().__setattr__(name, value)
        else:
            setattr(self._orig_mod, name, value)

    def __delattr__(self, name: str) -> None:
        if hasattr(type(self), name) or name in OptimizedModule._opt_mod_attributes:
            super().__delattr__(name)
        else:
            delattr(self._orig_mod, name)

    def __dir__(self) -> list[str]:
        own = self._orig_mod.__dir__()
        return own + [a for a in super().__dir__() if a not in own]

    def __reduce__(self) -> tuple:
        return (self.__class__, (self._orig_mod,))


def compile(model: Callable | None = None, *, fullgraph: bool = False, dynamic: bool | None = None,  # noqa: A001
            backend: str | Callable | None = None, mode: str | None = None,
            options: dict[str, Any] | None = None, name: str | None = None, disable: bool = False,
            recompile_limit: int | None = None, isolate_recompiles: bool = False,
            shapes_spec: Any = None) -> Any:
    """``model`` (a Module or a function) made to run eagerly, as torch's ``compile`` under the
    ``force_eager`` stance; torch's checks of the arguments. Used bare as a decorator
    (``@compile(mode=...)``), it returns the decorator."""
    if model is None:
        def decorate(model: Callable | None) -> Any:
            if model is None:
                raise RuntimeError("Model can't be None")
            return compile(model, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                           options=options, name=name, disable=disable, recompile_limit=recompile_limit,
                           isolate_recompiles=isolate_recompiles, shapes_spec=shapes_spec)
        return decorate
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")
    if mode is not None and mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(_MODES)}")
    if isinstance(backend, str) and backend not in _BACKENDS:
        raise InvalidBackend(backend)
    if disable:
        return model
    if not callable(model):
        raise AssertionError(f"A callable function is expected, but {type(model)} is provided.")
    if isinstance(model, Module):
        return OptimizedModule(model)

    @functools.wraps(model)
    def compiled(*args: Any, **kwargs: Any) -> Any:
        return model(*args, **kwargs)

    compiled._torchdynamo_orig_callable = model  # type: ignore[attr-defined]
    return compiled
