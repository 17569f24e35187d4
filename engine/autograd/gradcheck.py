"""``gradcheck``: finite differences against the engine's backward, with torch's API and errors.

For every differentiable output ``o`` and every input ``x`` that requires grad, the numerical
Jacobian (central differences, ``(f(x + eps) - f(x - eps)) / (2 eps)`` per element of ``x``) and
the analytical one (one backward pass per element of ``o``, each run twice to check that
backward is deterministic) are compared with ``allclose(analytical, numerical, rtol, atol)``.
Then, as torch does, a backward with zero output gradients must give zero input gradients.
Both Jacobians are laid out ``(x.numel(), o.numel())``, as torch prints them.

``fast_mode=True`` is accepted and runs the same full check (torch's fast mode is a random
projection of it: it fails less specifically, never on a case the full check passes).

``gradgradcheck`` runs ``gradcheck`` on the function ``(inputs, grad_outputs) -> gradients``
computed with ``create_graph=True``: second derivatives against finite differences of the
first.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

import engine.autograd.grad_mode as grad_mode

from .._random import normal_array
from .._tensor import Tensor
from .differentiate import grad

__all__ = ["GradcheckError", "gradcheck", "gradgradcheck"]


class GradcheckError(RuntimeError):
    """Raised by ``gradcheck`` when a check fails (torch.autograd.gradcheck.GradcheckError)."""


def _as_tuple(x: Any) -> tuple:
    return x if isinstance(x, tuple) else tuple(x) if isinstance(x, list) else (x,)


def _check_inputs(inputs: tuple) -> list:

    diff = []
    for idx, inp in enumerate(inputs):
        if isinstance(inp, Tensor) and inp.requires_grad:
            if inp._data.dtype != np.float64:
                warnings.warn(
                    f"Input #{idx} requires gradient and is not a double precision floating point or complex. "
                    "This check will likely fail if all the inputs are not of double precision floating point "
                    "or complex. ",
                    stacklevel=3,
                )
            if any(st == 0 and sz > 1 for st, sz in zip(inp._data.strides, inp._data.shape)):
                raise RuntimeError(
                    f"The {idx}th input has a dimension with stride 0. gradcheck only supports inputs that are "
                    "non-overlapping to be able to compute the numerical gradients correctly. You should call "
                    ".contiguous on the input before passing it to gradcheck."
                )
            diff.append(inp)
    if not diff:
        raise ValueError(
            "gradcheck expects at least one input tensor to require gradient, but none of them have "
            "requires_grad=True."
        )
    return diff


def _evaluate(func: Callable, inputs: tuple) -> list[np.ndarray]:
    """All tensor outputs of ``func`` as float64 arrays (copies), without recording a graph."""


    with grad_mode.no_grad():
        outs = _as_tuple(func(*inputs))
    return [o._data.astype(np.float64) for o in outs if isinstance(o, Tensor)]


def _numerical_jacobians(func: Callable, inputs: tuple, diff: list, eps: float) -> list[list[np.ndarray]]:
    """``[input][output] -> (input.numel(), output.numel())`` by central differences. Each
    element is perturbed in place in the input's own memory (no version bump: autograd never
    sees it) and restored."""
    result = []
    for x in diff:
        flat = x._data.reshape(-1)  # contiguous inputs: a view of x's memory
        if not np.shares_memory(flat, x._data):
            raise RuntimeError("gradcheck needs contiguous inputs: call .contiguous() on them first")
        columns: list[list[np.ndarray]] = []
        for i in range(flat.size):
            orig = flat[i]
            flat[i] = orig - eps
            minus = _evaluate(func, inputs)
            flat[i] = orig + eps
            plus = _evaluate(func, inputs)
            flat[i] = orig
            columns.append([((p - m) / (2 * eps)).reshape(-1) for p, m in zip(plus, minus)])
        n_out = len(_evaluate(func, inputs))
        result.append([np.stack([c[j] for c in columns]) if columns else np.zeros((0, 0)) for j in range(n_out)])
    return result


def _analytical_jacobian(output: Any, diff: list) -> list[np.ndarray]:
    """``[input] -> (input.numel(), output.numel())``: one backward per output element."""
    jac = [np.zeros((x.numel(), output.numel())) for x in diff]
    for k in range(output.numel()):
        onehot = np.zeros(output.numel(), dtype=output._data.dtype)
        onehot[k] = 1
        first = grad(output, diff, Tensor._wrap(onehot.reshape(output.shape)), retain_graph=True, allow_unused=True)
        again = grad(output, diff, Tensor._wrap(onehot.reshape(output.shape)), retain_graph=True, allow_unused=True)
        for j, (g1, g2) in enumerate(zip(first, again)):
            if g1 is None:
                continue
            if not np.array_equal(g1._data, g2._data):
                raise GradcheckError(
                    "Backward is not reentrant, i.e., running backward with same input and grad_output multiple "
                    "times gives different values, although analytical gradient matches numerical gradient."
                    "The tolerance for nondeterminism was 0.0."
                )
            if g1.shape != diff[j].shape:
                raise GradcheckError("Analytical gradient has incorrect size")
            jac[j][:, k] = g1._data.reshape(-1)
    return jac


def _check_zero_grad_outputs(outputs: list, diff: list) -> None:
    """Zero output gradients must give zero (or no) input gradients."""
    zeros = [Tensor._wrap(np.zeros_like(o._data)) for o in outputs]
    for gi, x in zip(grad(outputs, diff, zeros, retain_graph=True, allow_unused=True), diff):
        if gi is None:
            continue
        if np.any(gi._data != 0):
            raise GradcheckError("backward not multiplied by grad_output")
        if gi.dtype != x.dtype:
            raise GradcheckError("grad is incorrect type")
        if gi.shape != x.shape:
            raise GradcheckError("grad is incorrect size")


def _mismatch(analytical: np.ndarray, numerical: np.ndarray, out_idx: int, in_idx: int) -> str:

    return (f"Jacobian mismatch for output {out_idx:d} with respect to input {in_idx:d},\n"
            f"numerical:{Tensor._wrap(numerical)!r}\nanalytical:{Tensor._wrap(analytical)!r}\n")


def _gradcheck(func: Callable, inputs: Any, eps: float, atol: float, rtol: float) -> bool:

    tupled = _as_tuple(inputs)
    diff = _check_inputs(tupled)
    func_out = [o for o in _as_tuple(func(*tupled)) if isinstance(o, Tensor)]
    numerical = _numerical_jacobians(func, tupled, diff, eps)  # [input][output]
    outputs = [o for o in func_out if o.requires_grad]
    if not outputs:  # nothing to differentiate: the function must then be constant
        if any(np.any(jac != 0) for per_input in numerical for jac in per_input):
            raise GradcheckError("Numerical gradient for function expected to be zero")
        return True
    diff_out_idx = [i for i, o in enumerate(func_out) if o.requires_grad]
    for i, (o, out_idx) in enumerate(zip(outputs, diff_out_idx)):
        analytical = _analytical_jacobian(o, diff)
        for j, a in enumerate(analytical):
            n = numerical[j][out_idx]
            if not np.allclose(a, n, rtol=rtol, atol=atol):
                raise GradcheckError(_mismatch(a, n, i, j))
    _check_zero_grad_outputs(outputs, diff)
    return True


def gradcheck(func: Callable[..., Any], inputs: Any, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True, nondet_tol: float = 0.0, check_undefined_grad: bool = True,
              check_grad_dtypes: bool = False, check_batched_grad: bool = False,
              check_batched_forward_grad: bool = False, check_forward_ad: bool = False,
              check_backward_ad: bool = True, fast_mode: bool = False, masked: bool | None = None) -> bool:
    """Check the gradients of ``func`` at ``inputs`` (a tensor or a tuple; the inputs that
    require grad should be float64) against finite differences.

    Returns True; on a mismatch raises ``GradcheckError`` naming the output and input and
    printing both Jacobians (or returns False with ``raise_exception=False``).

    Raises:
        ValueError: no input requires grad.
        NotImplementedError: a check that needs forward-mode AD or vmap, which the engine lacks.

    Example::

        >>> x = engine.randn(3, dtype=engine.float64, requires_grad=True)
        >>> engine.autograd.gradcheck(lambda t: (t * t).sin(), (x,))
        True
    """
    if check_forward_ad or check_batched_grad or check_batched_forward_grad:
        raise NotImplementedError(
            "gradcheck: check_forward_ad, check_batched_grad and check_batched_forward_grad need forward-mode "
            "AD or vmap, which engine does not have"
        )
    if not check_backward_ad:
        raise NotImplementedError("gradcheck: check_backward_ad=False leaves nothing engine can check")
    if not raise_exception:
        try:
            return _gradcheck(func, inputs, eps, atol, rtol)
        except GradcheckError:
            return False
    return _gradcheck(func, inputs, eps, atol, rtol)


def gradgradcheck(func: Callable[..., Any], inputs: Any, grad_outputs: Any = None, *, eps: float = 1e-6,
                  atol: float = 1e-5, rtol: float = 1e-3, gen_non_contig_grad_outputs: bool = False,
                  raise_exception: bool = True, nondet_tol: float = 0.0, check_undefined_grad: bool = True,
                  check_grad_dtypes: bool = False, check_batched_grad: bool = False,
                  check_fwd_over_rev: bool = False, check_rev_over_rev: bool = True, fast_mode: bool = False,
                  masked: bool = False) -> bool:
    """Check the second derivatives of ``func`` at ``inputs`` against finite differences of its
    first derivatives (torch.autograd.gradgradcheck).

    ``grad_outputs`` (one per differentiable output; random normal, float64, when omitted) are
    inputs of the checked function too, so the check covers the gradient's dependence on them.
    Returns True; on a mismatch raises ``GradcheckError`` (or returns False with
    ``raise_exception=False``).

    Raises:
        NotImplementedError: ``check_fwd_over_rev`` or ``check_batched_grad`` (forward-mode AD
            and vmap, which the engine lacks), or an op of ``func`` without double backward.

    Example::

        >>> x = engine.randn(3, dtype=engine.float64, requires_grad=True)
        >>> engine.autograd.gradgradcheck(lambda t: (t * t).sin(), (x,))
        True
    """
    if check_fwd_over_rev or check_batched_grad:
        raise NotImplementedError(
            "gradgradcheck: check_fwd_over_rev and check_batched_grad need forward-mode AD or vmap, which engine "
            "does not have"
        )
    tupled = _as_tuple(inputs)
    if grad_outputs is None:
        with grad_mode.enable_grad():
            outs = [o for o in _as_tuple(func(*tupled)) if isinstance(o, Tensor) and o.requires_grad]
        grad_outputs = tuple(
            Tensor._wrap(normal_array(o.shape, 0.0, 1.0, np.dtype(np.float64), None).astype(o._data.dtype))
            .requires_grad_() for o in outs)
    tupled_grads = _as_tuple(grad_outputs)
    n_in = len(tupled)

    def new_func(*args):
        ins, gouts = args[:n_in], args[n_in:]
        with grad_mode.enable_grad():
            outputs = [o for o in _as_tuple(func(*ins)) if isinstance(o, Tensor) and o.requires_grad]
            used = [i for i in ins if isinstance(i, Tensor) and i.requires_grad]
            grads = grad(outputs, used, list(gouts), create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(new_func, tupled + tupled_grads, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, nondet_tol=nondet_tol,
                     check_undefined_grad=check_undefined_grad, check_grad_dtypes=check_grad_dtypes,
                     fast_mode=fast_mode)
