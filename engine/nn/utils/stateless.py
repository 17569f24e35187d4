"""``torch.nn.utils.stateless``: call a module with other tensors in place of its parameters and
buffers (the engine behind ``engine.func.functional_call``).

The given tensors are put into the module's ``_parameters``/``_buffers`` (or set as attributes)
by dotted name for the duration of one call, and the originals are put back afterwards, also
when the call raises. Gradients flow to the given tensors, so ``functional_call`` with
``autograd.grad(..., create_graph=True)`` gives MAML-style inner steps. ``functional_call`` here
is torch's deprecated alias (``FutureWarning``); use ``engine.func.functional_call``.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from typing import Any

from ..._tensor import Tensor
from ..modules.module import Module

__all__ = ["functional_call"]

_MISSING: Any = object()


def _untie_named_tensors_map(module: Module, parameters_and_buffers: dict[str, Tensor]) -> dict[str, Tensor]:
    """``parameters_and_buffers`` with every name tied to a given one (the same tensor under
    two names in the module) mapped to the given value too.

    Raises ``ValueError`` when tied names are given different tensors (torch's message)."""
    names_of: dict[int, set[str]] = {}
    for name, t in [*module.named_parameters(remove_duplicate=False), *module.named_buffers(remove_duplicate=False)]:
        names_of.setdefault(id(t), set()).add(name)
    tied = {name: names for names in names_of.values() if len(names) > 1 for name in names}
    given_tied = [name for name in parameters_and_buffers if name in tied]
    for name in given_tied:
        values = {id(parameters_and_buffers[n]) for n in tied[name] if n in parameters_and_buffers}
        if len(tied[name].intersection(given_tied)) > 1 and len(values) != 1:
            raise ValueError(
                f"functional_call got multiple values for keys {sorted(tied[name])}, "
                f"which are tied. Consider using tie_weights=False"
            )
    untied = dict(parameters_and_buffers)
    for name in given_tied:
        for other in tied[name]:
            untied[other] = parameters_and_buffers[name]
    return untied


def _submodule(module: Module, path: str) -> Module:
    """The module at dotted ``path`` (``""``: ``module``), with torch's accessor errors."""
    done = []
    for attr in path.split(".") if path else ():
        done.append(attr)
        try:
            child = getattr(module, attr)
        except AttributeError as ex:
            raise AttributeError(f"{module._get_name()} has no attribute `{attr}`") from ex
        if not isinstance(child, Module):
            raise TypeError(f"submodule `{'.'.join(done)}`: {child} is not an instance of engine.nn.Module")
        module = child
    return module


def _swap_tensor(module: Module, name: str, tensor: Any) -> Any:
    """Put ``tensor`` (``_MISSING``: remove) under ``name`` in ``module``; return what was
    there (``_MISSING`` if nothing). Parameters and buffers keep their slot; other names are
    plain attributes."""
    if tensor is not _MISSING and tensor is not None and not isinstance(tensor, Tensor):
        raise TypeError(f"{tensor} is not an instance of engine.Tensor")
    for slots in (module._parameters, module._buffers):
        if name in slots:
            orig = slots[name]
            if tensor is _MISSING:
                del slots[name]
            else:
                slots[name] = tensor
            return orig
    orig = getattr(module, name) if hasattr(module, name) else _MISSING
    if orig is not _MISSING and orig is not None and not isinstance(orig, Tensor):
        raise TypeError(f"attribute `{name}`: {orig} is not an instance of engine.Tensor")
    if tensor is not _MISSING:
        setattr(module, name, tensor)
    elif hasattr(module, name):
        delattr(module, name)
    return orig


def _swap_tensors_dict(module: Module, named: dict[str, Any]) -> dict[str, Any]:
    """Swap every dotted name in; on an error, swap back what was swapped and re-raise."""
    origs: dict[str, Any] = {}
    try:
        for path, tensor in named.items():
            prefix, _, name = path.rpartition(".")
            origs[path] = _swap_tensor(_submodule(module, prefix), name, tensor)
    except Exception:
        for path, orig in origs.items():
            prefix, _, name = path.rpartition(".")
            _swap_tensor(_submodule(module, prefix), name, orig)
        raise
    return origs


def _check_keys(module: Module, given: dict[str, Any]) -> None:
    """``strict``: the given names must be exactly the module's parameters and buffers."""
    valid = {n for n, _ in module.named_parameters(remove_duplicate=False)}
    valid |= {n for n, _ in module.named_buffers(remove_duplicate=False)}
    missing, unexpected = sorted(valid - set(given)), sorted(set(given) - valid)
    msgs = []
    if unexpected:
        msgs.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
    if missing:
        msgs.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
    if msgs:
        raise RuntimeError("Error(s) in reparametrizing for {}:\n\t{}".format(module._get_name(), "\n\t".join(msgs)))


@contextlib.contextmanager
def _reparametrize_module(module: Module, parameters_and_buffers: dict[str, Tensor], tie_weights: bool = False,
                          strict: bool = False) -> Iterator[None]:
    """Inside the block ``module`` uses ``parameters_and_buffers``; afterwards its own tensors
    are back, and the dict holds whatever the module left under its names (a module that
    reassigns ``self.foo`` updates the dict, as in torch)."""
    untied = _untie_named_tensors_map(module, parameters_and_buffers) if tie_weights else parameters_and_buffers
    if strict:
        _check_keys(module, untied)
    origs: dict[str, Any] = {}
    try:
        origs = _swap_tensors_dict(module, untied)
        yield
    finally:
        now = _swap_tensors_dict(module, origs)
        parameters_and_buffers.update({k: now[k] for k in parameters_and_buffers if k in now})


def _functional_call(module: Module, parameters_and_buffers: dict[str, Tensor], args: Any = None,
                     kwargs: dict[str, Any] | None = None, *, tie_weights: bool = True, strict: bool = False) -> Any:
    args = () if args is None else args if isinstance(args, tuple) else (args,)
    with _reparametrize_module(module, parameters_and_buffers, tie_weights=tie_weights, strict=strict):
        return module(*args, **(kwargs or {}))


def functional_call(module: Module, parameters_and_buffers: dict[str, Tensor], args: Any = None,
                    kwargs: dict[str, Any] | None = None, *, tie_weights: bool = True, strict: bool = False) -> Any:
    """Deprecated (``FutureWarning``, as in torch): ``engine.func.functional_call`` is the same
    call. Runs ``module(*args, **kwargs)`` with ``parameters_and_buffers`` in place of its own."""
    warnings.warn(
        "`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 "
        "and will be removed in a future version of PyTorch. "
        "Please use `torch.func.functional_call` instead which is a drop-in replacement.",
        FutureWarning,
        stacklevel=2,
    )
    return _functional_call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict)
