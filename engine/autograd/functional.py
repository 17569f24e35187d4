"""``engine.autograd.functional.jacobian``: the Jacobian of a function, by reverse mode
(torch.autograd.functional.jacobian, without ``create_graph``).

One backward pass per output element (as torch does with ``vectorize=False``); the gradient
flowing back is a one-hot ``grad_output``, so no indexing ops are recorded. ``vectorize=True``
is accepted and gives the same result the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from . import grad_mode

__all__ = ["jacobian"]


def _as_tuple(inp: Any, arg_name: str, fn_name: str) -> tuple[bool, tuple]:
    """``(was_a_tuple, inp as a tuple of tensors)`` with torch's error for anything else."""
    from .._tensor import Tensor

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

    Raises:
        NotImplementedError: ``create_graph=True`` or ``strategy="forward-mode"`` (the engine
            has neither higher-order gradients nor forward-mode AD).

    Example::

        >>> jacobian(lambda x: x.exp().sum(dim=1), engine.rand(2, 2)).shape
        engine.Size([2, 2, 2])
    """
    from .._tensor import Tensor
    from . import _no_create_graph, grad

    _no_create_graph(create_graph)
    if strategy == "forward-mode":
        raise NotImplementedError("jacobian: strategy='forward-mode' needs forward-mode AD, which engine does not have")
    if strict and vectorize:
        raise RuntimeError(
            "torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` are not supported together. "
            "Please either set `strict=False` or `vectorize=False`."
        )
    with grad_mode.enable_grad():
        is_inputs_tuple, ins = _as_tuple(inputs, "inputs", "jacobian")
        ins = tuple(i.detach().requires_grad_() for i in ins)  # fresh leaves on the same memory
        is_outputs_tuple, outs = _as_tuple(func(*ins), "outputs of the user-provided function", "jacobian")
        if strict:
            for i, out in enumerate(outs):
                if not out.requires_grad:
                    raise RuntimeError(
                        f"Output {i} of the user-provided function does not require gradients. The outputs must be "
                        "computed in a differentiable manner from the input when running in strict mode."
                    )
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
