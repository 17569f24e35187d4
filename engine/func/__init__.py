"""``torch.func`` on the engine's reverse-mode autograd: ``functional_call``, ``grad`` and
``grad_and_value``; ``vmap`` (``_vmap.py``: one call per example, stacked).

``grad(f)(*args)`` differentiates a function returning a scalar Tensor with respect to the
positional arguments ``argnums`` (Tensors, or tuples/lists/dicts of Tensors), returned in the
same structure. It runs ``autograd.grad`` on a fresh leaf per input (an alias when the input
already carries a graph, so ``grad(grad(f))`` and gradients of gradients work), and keeps the
result's graph only when some input had one. ``jacrev``/``jacfwd`` and the other transforms
are not provided (``AttributeError``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import engine.autograd.grad_mode as grad_mode

from .._tensor import Tensor
from ..autograd import grad as _autograd_grad
from ..nn.modules.module import Module
from ..nn.utils.stateless import _functional_call
from ._vmap import vmap

__all__ = ["functional_call", "grad", "grad_and_value", "vmap"]


def functional_call(module: Module, parameter_and_buffer_dicts: dict[str, Tensor] | Sequence[dict[str, Tensor]],
                    args: Any = None, kwargs: dict[str, Any] | None = None, *, tie_weights: bool = True,
                    strict: bool = False) -> Any:
    """``module(*args, **kwargs)`` with the given tensors in place of its parameters and buffers
    (by dotted name) for this call only; the module's own are back afterwards, also when the
    call raises. Several dicts are merged (a key in two of them is an error).

    ``tie_weights``: a name tied to another in the module (the same tensor) follows a value
    given for either. ``strict``: the names must be exactly the module's.

    Raises:
        ValueError: not a dict or a sequence of dicts, repeated keys, different values for tied names.
        RuntimeError: ``strict`` and missing or unexpected keys.
    """
    if isinstance(parameter_and_buffer_dicts, dict):
        merged = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, Sequence):
        if not all(isinstance(d, dict) for d in parameter_and_buffer_dicts):
            raise ValueError("Expected all elements of parameter_and_buffer_dicts to be dictionaries")
        keys = [k for d in parameter_and_buffer_dicts for k in d]
        repeated = list(dict.fromkeys(k for k in keys if keys.count(k) > 1))
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of functional call is ambiguous")
        merged = {k: v for d in parameter_and_buffer_dicts for k, v in d.items()}
    else:
        raise ValueError(
            f"Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, "
            f"but got {type(parameter_and_buffer_dicts)}"
        )
    return _functional_call(module, merged, args, kwargs, tie_weights=tie_weights, strict=strict)


def grad(func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable:
    """A function returning the gradient of ``func`` (a scalar Tensor output) with respect to
    the arguments ``argnums``; with ``has_aux``, ``func`` returns ``(output, aux)`` and the new
    function ``(gradient, aux)``."""
    gv = grad_and_value(func, argnums, has_aux)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        grads, value = gv(*args, **kwargs)
        return (grads, value[1]) if has_aux else grads

    return wrapper


def grad_and_value(func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable:
    """Like ``grad``, returning ``(gradient, output)`` (``(gradient, (output, aux))`` with
    ``has_aux``). Errors are torch's: a non-scalar output, bad ``argnums``, a non-Tensor input."""
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        chosen = _check_argnums(argnums, len(args))
        inputs = [_as_leaves(args[i]) for i in chosen]
        flat = [t for tree in inputs for t in _leaves(tree)]
        keep_graph = any(t._requires_grad for t in _leaves([args[i] for i in chosen]))
        call_args = list(args)
        for i, tree in zip(chosen, inputs):
            call_args[i] = tree
        with grad_mode.enable_grad():
            out = func(*call_args, **kwargs)
        value, aux = _split_aux(out, has_aux)
        if not isinstance(value, Tensor) or value.dim() != 0:
            dims = value.dim() if isinstance(value, Tensor) else None
            raise RuntimeError(
                "grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got tensor with "
                f"{dims} dims. Maybe you wanted to use the vjp or jacrev APIs instead?"
            )
        if value.requires_grad:
            gs = _autograd_grad(value, flat, create_graph=keep_graph, allow_unused=True, materialize_grads=True)
        else:
            gs = tuple(t.new_zeros(t.shape) for t in flat)
        if not keep_graph:
            value, aux = value.detach(), _detached(aux)
        it = iter(gs)
        grads = [_rebuild(tree, it) for tree in inputs]
        result = grads[0] if isinstance(argnums, int) else tuple(grads)
        return result, ((value, aux) if has_aux else value)

    return wrapper


def _check_argnums(argnums: Any, n: int) -> list[int]:
    if isinstance(argnums, int):
        nums = (argnums,)
    elif isinstance(argnums, tuple) and all(isinstance(a, int) for a in argnums):
        if not argnums:
            raise RuntimeError("argnums must be non-empty")
        if len(set(argnums)) != len(argnums):
            raise RuntimeError(f"argnums elements must be unique, got {argnums}")
        nums = argnums
    else:
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    for a in nums:
        if not -n <= a < n:
            raise RuntimeError(f"Got argnum={a}, but only {n} positional inputs")
    return [a % n for a in nums]


def _split_aux(out: Any, has_aux: bool) -> tuple[Any, Any]:
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise RuntimeError("grad_and_value(f)(*args): output of function f should be a tuple: (output, aux) "
                           "if has_aux is True")
    return out


def _leaves(tree: Any) -> list[Tensor]:
    if isinstance(tree, Tensor):
        return [tree]
    if isinstance(tree, tuple | list):
        return [t for x in tree for t in _leaves(x)]
    if isinstance(tree, dict):
        return [t for x in tree.values() for t in _leaves(x)]
    raise ValueError(f"Thing passed to transform API must be Tensor, got {type(tree)}")


def _as_leaves(tree: Any) -> Any:
    """Each Tensor of ``tree`` as a tensor to differentiate against: a fresh leaf, or an alias
    in the graph when it has one (so an outer ``grad`` sees through)."""
    if isinstance(tree, Tensor):
        if tree._requires_grad:
            return tree.view_as(tree)
        if not tree.is_floating_point():  # functorch's wording, not requires_grad_'s
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        return tree.detach().requires_grad_(True)
    if isinstance(tree, tuple | list):
        return type(tree)(_as_leaves(x) for x in tree)
    if isinstance(tree, dict):
        return {k: _as_leaves(v) for k, v in tree.items()}
    raise ValueError(f"Thing passed to transform API must be Tensor, got {type(tree)}")


def _rebuild(tree: Any, grads: Any) -> Any:
    if isinstance(tree, Tensor):
        return next(grads)
    if isinstance(tree, tuple | list):
        return type(tree)(_rebuild(x, grads) for x in tree)
    return {k: _rebuild(v, grads) for k, v in tree.items()}


def _detached(aux: Any) -> Any:
    if isinstance(aux, Tensor):
        return aux.detach()
    if isinstance(aux, tuple | list):
        return type(aux)(_detached(x) for x in aux)
    if isinstance(aux, dict):
        return {k: _detached(v) for k, v in aux.items()}
    return aux
