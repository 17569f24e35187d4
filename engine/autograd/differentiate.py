"""The two calls that differentiate: ``backward`` (accumulate into the leaves' ``.grad``) and
``grad`` (return the gradients, touching no ``.grad``). Both check the roots, build their
gradients (ones for a scalar, else ``grad_outputs``) and hand them to ``executor.run_backward``.

``engine.autograd`` re-exports both; ``functional.py`` and ``gradcheck.py`` import ``grad`` from
here, so the package's ``__init__`` (which imports them) is not in a cycle with them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._tensor import Size, Tensor
from .executor import run_backward

__all__ = ["backward", "grad"]


def _as_list(x: Any) -> list:
    if x is None:
        return []
    return list(x) if isinstance(x, list | tuple) else [x]


def _root_grads(outputs: list, grad_outputs: Any) -> list[np.ndarray]:
    given = _as_list(grad_outputs) if grad_outputs is not None else [None] * len(outputs)
    if len(given) != len(outputs):
        raise RuntimeError(
            "grad can be implicitly created only for scalar outputs"
            if not given else
            f"got {len(given)} gradients for {len(outputs)} outputs"
        )
    grads = []
    for i, (out, g) in enumerate(zip(outputs, given)):
        if g is None:
            if out.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if not out.is_floating_point():
                raise RuntimeError(
                    f"grad can be implicitly created only for real scalar outputs but got "
                    f"{out.dtype}"
                )
            grads.append(np.ones(out._data.shape, out._data.dtype))
            continue
        arr = g._data if isinstance(g, Tensor) else np.asarray(g, dtype=out._data.dtype)
        if arr.shape != out._data.shape:
            raise RuntimeError(
                f"Mismatch in shape: grad_output[{i}] has a shape of {Size(arr.shape)!r} and "
                f"output[{i}] has a shape of {Size(out._data.shape)!r}."
            )
        grads.append(arr)
    return grads


def _tensor_grads(outputs: list, grad_outputs: Any, grads: list[np.ndarray]) -> list:
    """The root gradients for ``create_graph``: the given Tensors themselves (a graph may flow
    through them, as in torch), the implicit ones as constant Tensors."""
    given = _as_list(grad_outputs) if grad_outputs is not None else [None] * len(outputs)
    return [g if isinstance(g, Tensor) and g.shape == out.shape else Tensor._wrap(arr)
            for g, out, arr in zip(given, outputs, grads)]


def backward(
    tensors: Any,
    grad_tensors: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs: Sequence[Any] | None = None,
) -> None:
    """Accumulate the gradients of ``tensors`` into the leaves' ``.grad`` (or only into
    ``inputs``' ``.grad`` when given). With ``create_graph=True`` the gradients keep a graph
    (double backward; ``retain_graph`` then defaults to True)."""
    outputs = _as_list(tensors)
    for i, t in enumerate(outputs):
        if not t._requires_grad:
            raise RuntimeError(
                f"element {i} of tensors does not require grad and does not have a grad_fn"
            )
    grads = _root_grads(outputs, grad_tensors)
    if retain_graph is None:
        retain_graph = create_graph
    if create_graph:
        grads = _tensor_grads(outputs, grad_tensors, grads)
    if inputs is None:
        run_backward(outputs, grads, bool(retain_graph), create_graph=create_graph)
        return
    inputs = _as_list(inputs)
    captured = run_backward(outputs, grads, bool(retain_graph), inputs=inputs, allow_unused=True,
                            create_graph=create_graph)
    if create_graph:
        for t, g in zip(inputs, captured):
            if g is not None:
                t._grad = g if t._grad is None else t._grad + g
        return
    for t, g in zip(inputs, captured):
        if g is not None:
            t._grad = Tensor._wrap(g.astype(t._data.dtype, copy=True)) if t._grad is None \
                else Tensor._wrap(t._grad._data + g)


def grad(
    outputs: Any,
    inputs: Any,
    grad_outputs: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    only_inputs: bool = True,
    allow_unused: bool | None = None,
    is_grads_batched: bool = False,
    materialize_grads: bool = False,
) -> tuple:
    """The gradients of ``outputs`` with respect to ``inputs``, without touching any ``.grad``.

    Example::

        >>> (gx,) = engine.autograd.grad((x * x).sum(), [x])
    """
    outs = _as_list(outputs)
    ins = _as_list(inputs)
    for i, t in enumerate(outs):
        if not t._requires_grad:
            raise RuntimeError(
                f"element {i} of tensors does not require grad and does not have a grad_fn"
            )
    grads = _root_grads(outs, grad_outputs)
    if retain_graph is None:
        retain_graph = create_graph
    if create_graph:
        grads = _tensor_grads(outs, grad_outputs, grads)
    allow = bool(allow_unused) or materialize_grads
    captured = run_backward(outs, grads, bool(retain_graph), inputs=ins, allow_unused=allow,
                            create_graph=create_graph)
    if create_graph:
        return tuple(Tensor._wrap(np.zeros_like(t._data)) if g is None and materialize_grads else
                     g if g is None or g.dtype == t.dtype else g.to(t.dtype) for t, g in zip(ins, captured))
    result = []
    for t, g in zip(ins, captured):
        if g is None:
            result.append(Tensor._wrap(np.zeros_like(t._data)) if materialize_grads else None)
        else:
            result.append(Tensor._wrap(g if g.dtype == t._data.dtype else g.astype(t._data.dtype)))
    return tuple(result)
