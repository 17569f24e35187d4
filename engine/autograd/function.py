"""Custom differentiable operations: ``engine.autograd.Function``.

Modern style (torch's)::

    class Exp(Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad):
            (y,) = ctx.saved_tensors
            return grad * y

    y = Exp.apply(x)            # y.grad_fn is an ``ExpBackward`` node, which is also ``ctx``

Legacy instance style (the classic tutorials'; torch removed it, the engine keeps it with a
DeprecationWarning): ``LinearF()(input, weight, bias)`` with instance ``forward``/``backward``,
``self.save_for_backward`` and ``self.saved_tensors``.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

import engine.autograd.grad_mode as grad_mode

from .._ops._core import edge, needs_graph, sum_to, to_tensor, unbroadcast
from .._tensor import Tensor
from .graph import FREED_GRAPH_ERROR, INFERENCE_SAVED_ERROR, Node, check_saved_versions


class _ContextMixin:
    """What ``ctx`` offers inside forward/backward (also the legacy Function instance)."""

    def save_for_backward(self, *tensors: Any) -> None:
        """Keep tensors (or None) for backward; read them back with ``saved_tensors``. In-place
        changes to them before backward are detected."""
        self._to_save = tensors

    @property
    def saved_tensors(self) -> tuple:
        if getattr(self, "_freed", False):
            raise RuntimeError(FREED_GRAPH_ERROR)
        return tuple(getattr(self, "_to_save", ()))

    def mark_non_differentiable(self, *tensors: Any) -> None:
        """Outputs listed here get no ``grad_fn`` and never require grad."""
        self._non_differentiable = set(map(id, tensors))

    def mark_dirty(self, *tensors: Any) -> None:
        """Inputs that forward modified in place; each must also be returned. Their version
        counters are bumped once more, and a leaf that requires grad is refused (as in torch)."""
        self._dirty = set(map(id, tensors))
        self._dirty_tensors = tensors

    def set_materialize_grads(self, value: bool) -> None:
        """With False, backward receives None (not zeros) for outputs that got no gradient."""
        self._materialize = bool(value)


class FunctionCtx(_ContextMixin):
    """The context type, for annotations: ``def forward(ctx: FunctionCtx, ...)``."""


class BackwardCFunction(_ContextMixin, Node):
    """Base of the per-Function node classes (``ExpBackward``); instances are the ``ctx``."""

    _materialize_in_engine = False
    _function: type[Function] | None = None

    def _release(self) -> None:
        if self._saved or getattr(self, "_to_save", ()):
            self._fn = None
            self._released = True
            self._freed = True
            self._to_save = ()


class FunctionMeta(type):
    """Gives every Function subclass its node class, named ``<Name>Backward`` as in torch."""

    def __init__(cls, name: str, bases: tuple, attrs: dict) -> None:
        cls._backward_cls = type(f"{name}Backward", (BackwardCFunction,), {"_function": cls})
        super().__init__(name, bases, attrs)


class Function(_ContextMixin, metaclass=FunctionMeta):
    """Base class for custom autograd operations; subclass it and call ``apply``."""

    @staticmethod
    def forward(ctx: Any, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            "You must implement the forward function for custom autograd.Function."
        )

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Any) -> Any:
        raise NotImplementedError(
            "You must implement either the backward or vjp method for your custom "
            "autograd.Function to use it with backward mode AD."
        )

    vjp = backward

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> Any:
        """Override it to use the ``forward(*args)`` style (no ``ctx`` in forward): it receives
        the inputs (keyword arguments and defaults bound as positions) and forward's output,
        and saves what backward needs on ``ctx``."""
        raise NotImplementedError("setup_context is not implemented.")

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        """Run ``forward`` (and ``setup_context`` when the class defines it) without recording,
        then record one node for the whole op."""
        if _is_instance_method(cls, "forward"):
            raise RuntimeError(
                f"{cls.__name__}.apply: forward is an instance method (the legacy style); call "
                f"an instance instead: {cls.__name__}()(...)"
            )
        ctx = object.__new__(cls._backward_cls)
        Node.__init__(ctx, None, (), ())
        if cls.setup_context is not Function.setup_context:
            args = _bind_default_args(cls.forward, args, kwargs)

            def forward() -> Any:
                output = cls.forward(*args)
                cls.setup_context(ctx, args, output)
                return output

            return _run(cls.__name__, ctx, ctx, forward, lambda *g: cls.backward(ctx, *g), args)
        return _run(cls.__name__, ctx, ctx, lambda: cls.forward(ctx, *args, **kwargs),
                    lambda *g: cls.backward(ctx, *g), args)

    def __call__(self, *args: Any) -> Any:
        """The legacy style: ``MyFunction()(inputs...)`` with instance forward/backward."""
        cls = type(self)
        if not _is_instance_method(cls, "forward"):
            raise RuntimeError(
                f"Legacy autograd function with static forward method is not supported: use "
                f"{cls.__name__}.apply(...)"
            )
        warnings.warn(
            f"{cls.__name__} uses the legacy autograd.Function style (instance forward/backward, "
            "called as an object). torch removed it; use static methods and "
            f"{cls.__name__}.apply(...).",
            DeprecationWarning,
            stacklevel=2,
        )
        node = object.__new__(cls._backward_cls)
        Node.__init__(node, None, (), ())
        return _run(cls.__name__, node, self, lambda: self.forward(*args),
                    lambda *g: self.backward(*g), args)


def _bind_default_args(func: Callable, args: tuple, kwargs: dict) -> tuple:
    """``args``/``kwargs`` as the positional arguments of ``func``, defaults filled in (what
    torch passes to ``setup_context`` as ``inputs``)."""
    bound = inspect.signature(func).bind(*args, **kwargs)
    bound.apply_defaults()
    return bound.args


def _is_instance_method(cls: type, name: str) -> bool:
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return not isinstance(klass.__dict__[name], staticmethod | classmethod)
    return False


def once_differentiable(fn: Callable) -> Callable:
    """Mark a Function's ``backward`` as not differentiable itself: under ``create_graph=True``
    it runs without recording a graph, so its gradients are constants."""
    fn._once_differentiable = True
    return fn


def _run(name: str, node: BackwardCFunction, state: Any, forward: Callable,
         backward: Callable, args: tuple) -> Any:

    tensor_args = [a for a in args if isinstance(a, Tensor)]
    state.needs_input_grad = tuple(isinstance(a, Tensor) and a._requires_grad for a in args)
    state._materialize = True
    with grad_mode.no_grad():
        outputs = forward()
    is_tuple = isinstance(outputs, tuple)
    outs = outputs if is_tuple else (outputs,)
    recording = needs_graph(*tensor_args)
    _check_dirty(state, outs, recording)
    if not recording:
        return outputs

    arg_ids = {id(t) for t in tensor_args}
    non_diff = getattr(state, "_non_differentiable", set())
    dirty = getattr(state, "_dirty", set())
    results, meta = [], []
    aliased_ids: set[int] = set()
    for o in outs:
        if isinstance(o, Tensor) and id(o) in arg_ids and id(o) not in dirty:
            aliased = Tensor._wrap(o._data)  # returning an input: a new tensor on its memory
            aliased._version_counter = o._version_counter
            aliased_ids.add(id(aliased))
            if id(o) in non_diff:
                non_diff = non_diff | {id(aliased)}
            o = aliased
        results.append(o)
        if isinstance(o, Tensor):
            meta.append((o._data.shape, o._data.dtype))

    saved = tuple((t._version_counter, t._version_counter[0], t) for t in getattr(state, "_to_save", ())
                  if isinstance(t, Tensor))
    if any(t.is_inference() for _, _, t in saved):
        raise RuntimeError(INFERENCE_SAVED_ERROR)
    in_meta = [(t._data.shape, t._data.dtype) for t in tensor_args]
    positions = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
    Node.__init__(node, _backward_fn(name, node, state, backward, args, positions, in_meta),
                  tuple(edge(t) for t in tensor_args), tuple(meta), saved)
    node._tbw = _backward_fn(name, node, state, backward, args, positions, in_meta, tensors=True)

    nr = 0
    for o in results:
        if isinstance(o, Tensor):
            if id(o) not in non_diff:
                if id(o) in dirty:
                    o._set_history(node, nr)
                else:
                    o._requires_grad, o.grad_fn, o._output_nr = True, node, nr
                    if id(o) in aliased_ids:  # in-place updates of it are refused (see _check_inplace)
                        o._custom_function_output = f"Output {nr} of {name}"
            nr += 1
    return tuple(results) if is_tuple else results[0]


def _check_dirty(state: Any, outs: tuple, recording: bool) -> None:
    """torch's rules for ``ctx.mark_dirty``: dirty tensors are outputs, get one more version
    bump, and are not leaves that require grad (when a graph is recorded)."""
    dirty = getattr(state, "_dirty_tensors", ())
    if not dirty:
        return
    out_ids = {id(o) for o in outs}
    if any(id(t) not in out_ids for t in dirty):
        raise RuntimeError(
            "Some elements marked as dirty during the forward method were not returned as output. The inputs "
            "that are modified inplace must all be outputs of the Function."
        )
    for t in dirty:
        if recording and t.grad_fn is None and t._requires_grad:
            raise RuntimeError("a leaf Variable that requires grad has been used in an in-place operation.")
        t._version_counter[0] += 1


def _backward_fn(name, node, state, backward, args, positions, in_meta, tensors: bool = False):
    """The node's backward on arrays, or with ``tensors`` on Tensors (``create_graph=True``:
    the user's backward then records a graph unless it is ``once_differentiable``)."""

    validated = _validated_tensor if tensors else _validated

    def run(*grads):
        if tensors:
            wrapped = [Tensor._wrap(np.zeros(*m)) if g is None and state._materialize else g
                       for g, m in zip(grads, node._out_meta)]
        else:
            if state._materialize:
                grads = [np.zeros(*m) if g is None else g for g, m in zip(grads, node._out_meta)]
            wrapped = [None if g is None else Tensor._wrap(g if g.flags.writeable else g.copy())
                       for g in grads]
        if node._saved:
            check_saved_versions(node)
        user_backward = getattr(getattr(type(node), "_function", None), "backward", None)
        if tensors and getattr(user_backward, "_once_differentiable", False):
            with grad_mode.no_grad():
                res = backward(*wrapped)
        else:
            res = backward(*wrapped)
        res = res if isinstance(res, tuple) else (res,)
        if len(res) < len(args) or any(r is not None for r in res[len(args):]):
            if len(res) != len(args):
                raise RuntimeError(
                    f"function {name}Backward returned an incorrect number of gradients "
                    f"(expected {len(args)}, got {len(res)})"
                )
        out = []
        for i, r in enumerate(res[: len(args)]):
            if i not in positions:
                if r is not None:
                    raise RuntimeError(
                        f"function {name}Backward returned a gradient different than None at "
                        f"position {i + 1}, but the corresponding forward input was not a Variable"
                    )
                continue
            out.append(None if r is None else validated(name, i, r, in_meta[positions.index(i)]))
        return tuple(out)

    return run


def _validated_tensor(name: str, index: int, grad: Any, meta: tuple) -> Any:
    """``_validated`` for a Tensor gradient that keeps its graph (summed to the input's shape
    with engine ops)."""

    g = to_tensor(grad)
    _validated(name, index, g, meta)  # the same checks and errors
    shape, dtype = meta
    g = sum_to(g, shape)
    return g if g._data.dtype == dtype else g.to(dtype)


def _validated(name: str, index: int, grad: Any, meta: tuple) -> np.ndarray:

    g = grad._data if hasattr(grad, "_data") else np.asarray(grad)
    shape, dtype = meta
    if g.shape != shape:
        try:
            np.broadcast_shapes(g.shape, shape)
            ok = np.broadcast_shapes(g.shape, shape) == g.shape
        except ValueError:
            ok = False
        if not ok:
            raise RuntimeError(
                f"Function {name}Backward returned an invalid gradient at index {index} - got "
                f"{list(g.shape)} but expected shape compatible with {list(shape)}"
            )
        g = unbroadcast(g, shape)
    return g if g.dtype == dtype else g.astype(dtype)
