"""``engine.autograd.functional``: ``jacobian``, ``hessian``, ``vjp``, ``jvp``, ``hvp``, ``vhp``
(torch.autograd.functional), by reverse mode; the second-order ones by double backward.

One backward pass per output element (as torch does with ``vectorize=False``); the gradient
flowing back is a one-hot ``grad_output``, so no indexing ops are recorded. ``vectorize=True``
is accepted and gives the same result the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import engine.autograd.grad_mode as grad_mode

from .. import _ops
from .._tensor import Tensor
from .differentiate import grad

__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]


def _as_tuple(inp: Any, arg_name: str, fn_name: str) -> tuple[bool, tuple]:
    """``(was_a_tuple, inp as a tuple of tensors)`` with torch's error for anything else."""

    is_tuple = isinstance(inp, tuple)
    items = inp if is_tuple else (inp,)
    for i, el in enumerate(items):
        if not isinstance(el, Tensor):
            where = f"value at index {i}" if is_tuple else f"given {arg_name}"
            raise TypeError(
                f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors but the "
                f"{where} has type {type(el)}."
            )
    return is_tuple, items


def jacobian(func: Callable[..., Any], inputs: Any, create_graph: bool = False, strict: bool = False,
             vectorize: bool = False, strategy: str = "reverse-mode") -> Any:
    """The Jacobian of ``func`` at ``inputs`` (a tensor or a tuple of tensors).

    Each entry has shape ``output.shape + input.shape`` and the input's dtype; the result is a
    tensor, a tuple over outputs or inputs, or a tuple (outputs) of tuples (inputs), following
    which of them were tuples, as in torch. An output that does not depend on an input gives
    zeros (``strict=True`` raises torch's error instead).

    With ``create_graph=True`` the entries keep a graph back to ``inputs`` (double backward).

    Raises:
        NotImplementedError: ``strategy="forward-mode"`` (the engine has no forward-mode AD).

    Example::

        >>> jacobian(lambda x: x.exp().sum(dim=1), engine.rand(2, 2)).shape
        engine.Size([2, 2, 2])
    """
    if strategy == "forward-mode":
        raise NotImplementedError("jacobian: strategy='forward-mode' needs forward-mode AD, which engine does not have")
    if strict and vectorize:
        raise RuntimeError(
            "torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` are not supported together. "
            "Please either set `strict=False` or `vectorize=False`."
        )
    with grad_mode.enable_grad():
        is_inputs_tuple, ins = _as_tuple(inputs, "inputs", "jacobian")
        if not create_graph:
            ins = tuple(i.detach().requires_grad_() for i in ins)  # fresh leaves on the same memory
        else:  # the Jacobian keeps its graph to the caller's inputs (torch's _grad_preprocess)
            ins = tuple(i if i.requires_grad else i.view_as(i).requires_grad_() for i in ins)
        is_outputs_tuple, outs = _as_tuple(func(*ins), "outputs of the user-provided function", "jacobian")
        if strict:
            for i, out in enumerate(outs):
                if not out.requires_grad:
                    raise RuntimeError(
                        f"Output {i} of the user-provided function does not require gradients. The outputs must be "
                        "computed in a differentiable manner from the input when running in strict mode."
                    )
        if create_graph:
            result = _jacobian_graph(outs, ins, grad)
            outs = ()
        else:
            result = []
        for i, out in enumerate(outs):
            jac = [np.zeros((out.numel(), inp.numel()), dtype=inp._data.dtype) for inp in ins]
            for k in range(out.numel()):
                onehot = np.zeros(out.numel(), dtype=out._data.dtype)
                onehot[k] = 1
                vj = (grad(out, ins, Tensor._wrap(onehot.reshape(out.shape)), retain_graph=True, allow_unused=True)
                      if out.requires_grad else (None,) * len(ins))
                for j, g in enumerate(vj):
                    if g is not None:
                        jac[j][k] = g._data.reshape(-1)
                    elif strict:
                        raise RuntimeError(
                            f"Output {i} of the user-provided function is independent of input {j}. This is not "
                            "allowed in strict mode."
                        )
            result.append(tuple(Tensor._wrap(a.reshape(out.shape + inp.shape)) for a, inp in zip(jac, ins)))
    if not is_inputs_tuple:
        result = [r[0] for r in result]
    return tuple(result) if is_outputs_tuple else result[0]


def _jacobian_graph(outs: tuple, ins: tuple, grad: Callable) -> list:
    """The Jacobian blocks ``[output][input]`` as Tensors with a graph: one ``create_graph``
    backward per output element, rows stacked with engine ops."""

    stack = _ops.shape.stack
    result = []
    for out in outs:
        rows: list[list] = [[] for _ in ins]
        flat = out.reshape(-1)
        for k in range(out.numel()):
            gs = (grad(flat[k], ins, retain_graph=True, create_graph=True, allow_unused=True)
                  if out.requires_grad else (None,) * len(ins))
            for j, g in enumerate(gs):
                rows[j].append(Tensor._wrap(np.zeros_like(ins[j]._data)) if g is None else g)
        result.append(tuple(
            stack(r, 0).reshape(out.shape + inp.shape) if r else Tensor._wrap(np.zeros(out.shape + inp.shape))
            for r, inp in zip(rows, ins)))
    return result


def _no_strict(strict: bool, fn_name: str) -> None:
    if strict:
        raise NotImplementedError(f"{fn_name}: strict=True is not supported by engine")


def _prepare(func: Callable, inputs: Any, v: Any, fn_name: str, create_graph: bool, strict: bool = False):
    """``(inputs_were_tuple, inputs as leaves or graph tensors, outputs, v as a tuple)``."""

    _no_strict(strict, fn_name)
    is_tuple, ins = _as_tuple(inputs, "inputs", fn_name)
    ins = tuple(i.view_as(i) if create_graph and i.requires_grad else i.detach().requires_grad_() for i in ins)
    with grad_mode.enable_grad():
        out = func(*ins)
    if v is not None:
        _, vs = _as_tuple(v, "v", fn_name)
    else:
        vs = None
    return is_tuple, ins, out, vs, Tensor


def _zeros_for_none(grads: tuple, ins: tuple, Tensor: Any) -> tuple:
    return tuple(Tensor._wrap(np.zeros_like(i._data)) if g is None else g for g, i in zip(grads, ins))


def _finish(is_tuple: bool, items: tuple, create_graph: bool) -> Any:
    items = tuple(i if create_graph else i.detach() for i in items)
    return items if is_tuple else items[0]


def vjp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """``(func(inputs), v^T J)``: the vector-Jacobian product at ``inputs`` (``v`` may be
    omitted for a one-element output).

    Raises:
        NotImplementedError: ``strict=True`` (here and in jvp, vhp, hvp, hessian).
    """
    is_tuple, ins, out, vs, Tensor = _prepare(func, inputs, v, "vjp", create_graph, strict)
    with grad_mode.enable_grad():
        gs = grad(out, ins, None if vs is None else list(vs), create_graph=create_graph, allow_unused=True)
    return out if create_graph else out.detach(), _finish(is_tuple, _zeros_for_none(gs, ins, Tensor), create_graph)


def jvp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """``(func(inputs), J v)``: the Jacobian-vector product, by the double-vjp trick torch uses
    (the vjp with a dummy ``u`` is linear in ``u``; its vjp with ``v`` is ``J v``)."""
    is_tuple, ins, out, vs, Tensor = _prepare(func, inputs, v, "jvp", create_graph, strict)
    if vs is None:
        vs = tuple(Tensor._wrap(np.ones_like(i._data)) for i in ins)
    with grad_mode.enable_grad():
        u = Tensor._wrap(np.zeros_like(out._data)).requires_grad_()
        gs = grad(out, ins, u, create_graph=True, allow_unused=True)
        pairs = [(g, w) for g, w in zip(gs, vs) if g is not None and g.requires_grad]
        if pairs:
            (jv,) = grad([g for g, _ in pairs], u, [w for _, w in pairs], create_graph=create_graph,
                         allow_unused=True)
        else:
            jv = None
    jv = Tensor._wrap(np.zeros_like(out._data)) if jv is None else jv
    return out if create_graph else out.detach(), jv if create_graph else jv.detach()


def vhp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """``(func(inputs), v^T H)`` for a scalar ``func``: the gradient of ``<grad func, v>``."""
    is_tuple, ins, out, vs, Tensor = _prepare(func, inputs, v, "vhp", create_graph, strict)
    if out.numel() != 1:
        raise RuntimeError("The function given to vhp should return a Tensor with a single element")
    if vs is None:
        if sum(i.numel() for i in ins) != 1:
            raise RuntimeError("The vector v can only be None if the input to the user-provided function "
                               "is a single Tensor with a single element.")
        vs = tuple(Tensor._wrap(np.ones_like(i._data)) for i in ins)
    with grad_mode.enable_grad():
        gs = grad(out, ins, create_graph=True, allow_unused=True)
        pairs = [(g, w, i) for g, w, i in zip(gs, vs, range(len(ins))) if g is not None and g.requires_grad]
        hv: tuple = (None,) * len(ins)
        if pairs:
            hv = grad([g for g, _, _ in pairs], ins, [w for _, w, _ in pairs], create_graph=create_graph,
                      allow_unused=True)
    return out if create_graph else out.detach(), _finish(is_tuple, _zeros_for_none(hv, ins, Tensor), create_graph)


def hvp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """``(func(inputs), H v)`` for a scalar ``func``; the Hessian of a twice continuously
    differentiable function is symmetric, so this is ``vhp``'s product."""
    _no_strict(strict, "hvp")
    return vhp(func, inputs, v, create_graph)


def hessian(func: Callable[..., Any], inputs: Any, create_graph: bool = False, strict: bool = False,
            vectorize: bool = False, outer_jacobian_strategy: str = "reverse-mode") -> Any:
    """The Hessian of a scalar ``func`` at ``inputs``: the Jacobian of its gradient, laid out
    as torch's (``H[i][j]`` of shape ``inputs[i].shape + inputs[j].shape`` for a tuple).

    Example::

        >>> hessian(lambda x: (x ** 3).sum(), engine.tensor([1.0, 2.0]))
        tensor([[ 6.,  0.],
                [ 0., 12.]])
    """
    _no_strict(strict, "hessian")
    if outer_jacobian_strategy == "forward-mode":
        raise NotImplementedError("hessian: outer_jacobian_strategy='forward-mode' needs forward-mode AD, which "
                                  "engine does not have")
    is_tuple, ins = _as_tuple(inputs, "inputs", "hessian")

    def gradient(*xs):
        out = func(*xs)
        _, outs = _as_tuple(out, "outputs of the user-provided function", "hessian")
        if len(outs) != 1:
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if outs[0].numel() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should contain a single "
                               "element")
        gs = grad(outs[0].reshape(()), xs, create_graph=True, materialize_grads=True)
        return gs if is_tuple else gs[0]

    return jacobian(gradient, inputs, create_graph=create_graph, vectorize=vectorize)
