"""What every differentiable op shares: turning a NumPy result into a Tensor with a ``grad_fn``.

An op computes its forward on arrays, defines ``backward(grad) -> (grad_per_input, ...)`` as a
closure over what it needs, and calls ``result(...)``. That is the whole contract; see
``pointwise.mul`` for the shape of a typical op.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import engine.autograd.grad_mode as grad_mode

from .. import _dtype
from .._size import broadcast_error, wrap_dim  # noqa: F401 - ops reach them as _core.wrap_dim
from .._tensor import Tensor
from ..autograd.graph import INFERENCE_SAVED_ERROR, _node_classes, edge, node_class, running_node


def needs_graph(*inputs: Tensor | None) -> bool:
    if not grad_mode._state.enabled:
        return False
    for t in inputs:
        if t is not None and t._requires_grad:
            return True
    return False


def result(
    data: np.ndarray,
    name: str,
    inputs: Sequence[Tensor | None],
    backward: Callable[..., tuple],
    saved: Sequence[Tensor] = (),
    save_output: bool = False,
    tensor_backward: Callable[..., tuple] | None = None,
) -> Tensor:
    """Wrap ``data`` as the output of op ``name`` over ``inputs``.

    Records a node only when grad mode is on and some input requires grad. ``saved`` lists the
    input tensors whose values ``backward`` reads (checked for in-place changes before it
    runs); ``save_output`` says it reads the output itself. ``tensor_backward`` is ``backward``
    written with engine ops on Tensors (it records a graph): what ``create_graph=True`` runs.
    """
    out = Tensor._wrap(data)
    # ``needs_graph`` written out (no call, no argument tuple): this test runs once per op
    if not grad_mode._state.enabled:
        return out
    for t in inputs:
        if t is not None and t._requires_grad:
            break
    else:
        return out
    saved_entries = ()
    if saved:
        entries = []
        for t in saved:
            base = t._base  # ``t.is_inference()`` written out (a method call per saved tensor otherwise)
            if (t if base is None else base)._inference:
                raise RuntimeError(INFERENCE_SAVED_ERROR)
            counter = t._version_counter
            entries.append((counter, counter[0], t))
        saved_entries = tuple(entries)
    if save_output:
        saved_entries += ((out._version_counter, 0, None),)
    cls = _node_classes.get(name) or node_class(name)
    if len(inputs) == 1:  # (most ops have one or two inputs: no loop for them)
        edges = (edge(inputs[0]),)
    elif len(inputs) == 2:
        edges = (edge(inputs[0]), edge(inputs[1]))
    else:
        edges = tuple([edge(t) for t in inputs])
    node = cls(backward, edges, ((data.shape, data.dtype),), saved_entries)
    if tensor_backward is not None:
        node._tbw = tensor_backward
    out._requires_grad = True
    out.grad_fn = node
    return out


def multi_result(
    datas: Sequence[np.ndarray],
    name: str,
    inputs: Sequence[Tensor | None],
    backward: Callable[..., tuple],
    saved: Sequence[Tensor] = (),
    differentiable: Sequence[bool] | None = None,
    tensor_backward: Callable[..., tuple] | None = None,
) -> list[Tensor]:
    """Like ``result`` for ops with several outputs (split, max with indices, ...); one node,
    output ``i`` has ``_output_nr == i``. Non-differentiable outputs (indices) get no grad_fn."""
    outs = [Tensor._wrap(d) for d in datas]
    if not needs_graph(*inputs):
        return outs
    saved_entries = tuple((t._version_counter, t._version_counter[0], t) for t in saved)
    for t in saved:
        base = t._base
        if (t if base is None else base)._inference:  # ``t.is_inference()``
            raise RuntimeError(INFERENCE_SAVED_ERROR)
    meta = tuple((d.shape, d.dtype) for d in datas)
    node = node_class(name)(backward, tuple(edge(t) for t in inputs), meta, saved_entries)
    if tensor_backward is not None:
        node._tbw = tensor_backward
    for i, out in enumerate(outs):
        if differentiable is None or differentiable[i]:
            out._requires_grad = True
            out.grad_fn = node
            out._output_nr = i
    return outs


def linear(g: Tensor, name: str, fwd: Callable, adj: Callable, adj_name: str | None = None) -> Tensor:
    """``fwd(g)`` for a linear map ``fwd`` on arrays whose adjoint (transpose) is ``adj``,
    differentiable to any order (its backward is ``adj``, whose own backward is ``fwd``, ...).
    The node is ``name``; the adjoint's, ``adj_name`` (default: ``name`` too).

    The tensor backward of an op whose gradient does not depend on its inputs' values (views,
    sum, mean, indexing) is ``linear(g, ..., its array backward, its array forward)``.
    """
    back = adj_name or name
    return result(fwd(g._data), name, (g,), lambda gg: (adj(gg),),
                  tensor_backward=lambda gg: (linear(gg, back, adj, fwd, name),))


def sum_to(g: Tensor, shape: tuple) -> Tensor:
    """``unbroadcast`` on Tensors (torch's ``sum_to_size``): ``g`` itself when already ``shape``."""
    shape = tuple(shape)
    if g.shape == shape:
        return g
    big = g.shape
    return linear(g, "SumBackward1", lambda arr: unbroadcast(arr, shape), lambda arr: np.broadcast_to(arr, big),
                  "ExpandBackward0")


def linear_backward(name: str, bw: Callable, fwd: Callable) -> Callable:
    """The tensor backward of a one-input op whose array backward ``bw(g) -> (grad,)`` is linear
    in ``g`` and reads nothing else, and whose forward on arrays is ``fwd``."""
    # built for every view op, graph or not: the node name is made only if double backward runs
    return lambda g: (linear(g, name.replace("Backward", "BackwardBackward", 1), lambda arr: bw(arr)[0], fwd),)


def masked(g: Tensor, factor: np.ndarray, through: Tensor, name: str) -> Tensor:
    """``g * factor`` for a piecewise-constant derivative ``factor`` (relu's mask, abs's sign,
    leaky_relu's slopes) of the op's value ``through``: linear in ``g``, and a zero gradient
    for ``through``, which is an edge all the same (torch's ``self: zeros_like(grad)``), so
    what lies behind it gets zeros rather than no gradient."""
    shape, dtype = through._data.shape, through._data.dtype

    def backward(gg):
        return (gg * factor, np.zeros(shape, dtype))

    def tensor_backward(gg):
        return (masked(gg, factor, through, name), Tensor._wrap(np.zeros(shape, dtype)))

    return result(g._data * factor, name, (g, through), backward, tensor_backward=tensor_backward)


def saved_output(data: np.ndarray) -> Tensor:
    """Inside a tensor backward (``save_output`` ops): the op's output ``data`` as a Tensor
    whose ``grad_fn`` is the running node itself, as torch's saved output is. Its derivative
    then flows back through the op, and the op need not keep its input alive for it."""

    t = Tensor._wrap(data)
    t._requires_grad, t.grad_fn, t._output_nr = True, running_node[0], 0
    return t


def unbroadcast(g: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Sum ``g`` down to ``shape``: the backward of NumPy/torch broadcasting."""
    if g.shape == shape:
        return g
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        i + lead for i, n in enumerate(shape) if n == 1 and g.shape[i + lead] != 1
    )
    g = g.sum(axis=axes, keepdims=True) if axes else g
    return g.reshape(shape)


def to_tensor(x: Any, like: Tensor | None = None) -> Tensor:
    """Tensors pass through; anything else (a Python number, list or array) is wrapped."""
    if isinstance(x, Tensor):
        return x
    return Tensor._wrap(np.asarray(x))


def scalar_or_array(x: Any, like: np.ndarray) -> tuple[Any, Tensor | None]:
    """For binary ops: Python numbers stay Python numbers (weak typing, as in torch); tensors
    give their arrays. Returns (operand for NumPy, tensor or None)."""
    if isinstance(x, Tensor):
        return x._data, x
    if isinstance(x, int | float | bool):
        return x, None
    if isinstance(x, np.generic):
        return x.item(), None
    t = Tensor._wrap(np.asarray(x))
    return t._data, t


def default_float() -> np.dtype:
    return _dtype._default_float.np


def float_like(data: np.ndarray) -> np.ndarray:
    """Integer/bool inputs of float-valued ops (exp, mean, ...) become the default float.
    Complex inputs raise (casting would drop their imaginary parts; see ``no_complex``)."""
    if data.dtype.kind == "f":
        return data
    no_complex("this operation", data)
    return data.astype(default_float())


def no_complex(name: str, *arrays: Any) -> None:
    """Raise for complex operands of ops whose values or gradients are written for real numbers
    only (the engine's complex support covers engine.fft, real/imag/abs/angle/conj,
    add/sub/mul/div, pow by a number, sums, shapes and indexing)."""
    for x in arrays:
        if getattr(x, "dtype", None) is not None and x.dtype.kind == "c":
            raise NotImplementedError(f"{name} does not support complex tensors in the engine yet")
