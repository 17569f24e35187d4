"""The autograd graph: ``Node`` (a ``grad_fn``), ``AccumulateGrad`` (a leaf's sink) and the hooks
that fire on them.

Every differentiable op creates one ``Node`` whose ``next_functions`` are ``((node, index), ...)``
edges to the nodes of its inputs, exactly as torch exposes them, so a graph can be walked from
``loss.grad_fn``. Gradients inside the graph are plain NumPy arrays; user hooks see Tensors.
The executor that runs the graph backwards lives in ``engine.autograd.executor``.
"""

from __future__ import annotations

import itertools
import re
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from ..utils._removable_handle import RemovableHandle
from .anomaly_mode import _state as _anomaly
from .anomaly_mode import forward_stack

Edge = tuple["Node | None", int]

# Monotonic creation counter: the executor runs ready nodes newest-first, as torch's does.
_sequence = itertools.count()
_last_sequence_nr = [-1]  # mirrors the counter so it can be read without consuming a number


# The node the executor is running (``executor.current_node``): hooks ask for it, and under
# create_graph an op that saved its output differentiates through it as torch does, via the node
# itself, without keeping its input alive (see ``engine._ops._core.saved_output``).
running_node: list = [None]


def current_sequence_nr() -> int:
    """The sequence number the next node will get. Nodes created after a call have a number
    ``>=`` what it returned: tools use this to find the nodes a piece of code created."""
    return _last_sequence_nr[0] + 1
ACCUMULATE_PRIORITY = float("inf")  # AccumulateGrad nodes run as soon as they are ready

FREED_GRAPH_ERROR = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you "
    "call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward "
    "through the graph a second time or if you need to access saved tensors after calling "
    "backward."
)

INFERENCE_SAVED_ERROR = (
    "Inference tensors cannot be saved for backward. Please do not use Tensors created in inference mode in "
    "computation tracked by autograd. To work around this, you can make a clone to get a normal tensor and use "
    "it in autograd, or use `engine.no_grad()` instead of `engine.inference_mode()`."
)


NO_EDGE = (None, 0)  # one shared tuple: every op with a constant or no-grad operand has such an edge


def edge(t: Any) -> tuple:
    """The graph edge a gradient for ``t`` travels along: ``(node, output_nr)``."""
    if t is None or not t._requires_grad:
        return NO_EDGE
    fn = t.grad_fn
    if fn is not None:
        return (fn, t._output_nr)
    return (t._grad_accumulator(), 0)


class Node:
    """One backward function of the graph (``tensor.grad_fn``).

    ``_fn(*grad_outputs)`` maps one gradient per forward output to one gradient per edge in
    ``next_functions`` (``None`` where the edge needs none). ``_saved`` lists the tensors the op
    saved as ``(version_counter, version, tensor_or_None)``; ``None`` stands for the op's own
    output. Saving decides two torch behaviours: a second backward without ``retain_graph``
    fails only for nodes that saved something, and an in-place change of a saved tensor is
    caught before the node runs.

    ``_tbw`` (set only by ops that support double backward) is the same map on Tensors, built
    from engine ops so that it records a graph: ``create_graph=True`` runs it instead of
    ``_fn`` (see ``engine._ops.double_backward``). Left unset, the slot costs nothing.
    """

    __slots__ = (
        "_fn", "next_functions", "_seq", "_saved", "_out_meta", "_released",
        "_pre_hooks", "_post_hooks", "_tensor_pre_hooks", "_retains_grad_hooks", "_metadata",
        "_tbw", "__weakref__",
    )

    def __init__(
        self,
        fn: Callable[..., tuple] | None,
        next_functions: tuple[Edge, ...],
        out_meta: tuple[tuple[tuple[int, ...], np.dtype], ...],
        saved: tuple = (),
    ) -> None:
        self._fn = fn
        self.next_functions = next_functions
        self._seq = _last_sequence_nr[0] = next(_sequence)
        self._saved = saved
        self._out_meta = out_meta
        self._released = False
        self._pre_hooks: OrderedDict | None = None
        self._post_hooks: OrderedDict | None = None
        self._tensor_pre_hooks: dict[int, OrderedDict] | None = None
        self._retains_grad_hooks: dict[int, Callable] | None = None
        # Under anomaly detection, where forward made this node (torch's metadata key).
        self._metadata: dict | None = {"traceback_": forward_stack()} if _anomaly.enabled else None

    # A module's BackwardHook, on its identity nodes only (``engine.utils.hooks``): the executor
    # calls ``node._run_backward_hook(grad_inputs, grad_outputs) -> arrays | None`` on raw arrays,
    # before the post hooks. Registering it creates no RemovableHandle, so ``next_id`` counts only
    # hooks someone can remove.
    _backward_hook: Any = None

    def name(self) -> str:
        """The node's op name, e.g. ``'MulBackward0'``."""
        return type(self).__name__

    def _sequence_nr(self) -> int:
        """Creation order (torch's name); ``AccumulateGrad`` nodes rank above every other."""
        return self._seq

    @property
    def metadata(self) -> dict:
        """A free dict for users and tools (modscope records the creating module here)."""
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    def register_hook(self, fn: Callable) -> RemovableHandle:
        """``fn(grad_inputs, grad_outputs) -> tuple | None`` runs after this node computed the
        gradients for its inputs; a tuple it returns replaces ``grad_inputs``."""
        if self._post_hooks is None:
            self._post_hooks = OrderedDict()
        handle = RemovableHandle(self._post_hooks)
        self._post_hooks[handle.id] = fn
        return handle

    def register_prehook(self, fn: Callable) -> RemovableHandle:
        """``fn(grad_outputs) -> tuple | None`` runs before this node; a tuple it returns
        replaces ``grad_outputs``."""
        if self._pre_hooks is None:
            self._pre_hooks = OrderedDict()
        handle = RemovableHandle(self._pre_hooks)
        self._pre_hooks[handle.id] = fn
        return handle

    def _register_tensor_pre_hook(self, output_nr: int, fn: Callable) -> RemovableHandle:
        if self._tensor_pre_hooks is None:
            self._tensor_pre_hooks = {}
        hooks = self._tensor_pre_hooks.setdefault(output_nr, OrderedDict())
        handle = RemovableHandle(hooks)
        hooks[handle.id] = fn
        return handle

    def _release(self) -> None:
        """Free what the node saved; a node that saved nothing stays runnable, as in torch."""
        if self._saved:
            self._fn = None
            self._tbw = None
            self._released = True

    def __repr__(self) -> str:
        return f"<{type(self).__name__} object at {hex(id(self))}>"


_node_classes: dict[str, type[Node]] = {}


def node_class(name: str) -> type[Node]:
    """The ``Node`` subclass named ``name`` (``MulBackward0``...), created once and cached, so
    that ``type(t.grad_fn).__name__`` reads like torch's."""
    cls = _node_classes.get(name)
    if cls is None:
        cls = type(name, (Node,), {"__slots__": ()})
        _node_classes[name] = cls
    return cls


class AccumulateGrad(Node):
    """The sink of a leaf tensor that requires grad: adds incoming gradients into
    ``variable.grad``. Runs the leaf's own tensor hooks first, then its post-accumulate hooks."""

    __slots__ = ("variable",)

    def __init__(self, variable: Any) -> None:
        meta = ((variable.shape, variable._data.dtype),)
        super().__init__(None, (), meta)
        self.variable = variable
        self._seq = ACCUMULATE_PRIORITY

    def __repr__(self) -> str:
        return f"<AccumulateGrad object at {hex(id(self))}>"


class GradientEdge(NamedTuple):
    """Where a tensor's gradient goes: input ``output_nr`` of ``node`` (torch's name)."""

    node: Node
    output_nr: int


def get_gradient_edge(tensor: Any) -> GradientEdge:
    """The edge ``tensor``'s gradient flows into: its ``grad_fn`` and ``output_nr``, or for a leaf
    that requires grad its ``AccumulateGrad`` (created if needed), as torch's function of the
    same name.

    Example::

        >>> w = engine.ones(3, requires_grad=True)
        >>> get_gradient_edge(w).node.name()
        'AccumulateGrad'
    """
    if not tensor.requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does not require gradients")
    if tensor.grad_fn is not None:
        return GradientEdge(tensor.grad_fn, tensor._output_nr)
    return GradientEdge(tensor._grad_accumulator(), 0)


def check_saved_versions(node: Node) -> None:
    """Raise torch's error if a tensor this node saved was modified in place since."""
    for counter, version, tensor in node._saved:
        if counter[0] != version:
            if tensor is None:  # the op's own output: named after the op that saved it
                shape, dtype = node._out_meta[0]
                origin = f", which is output 0 of {_op_name(node)},"
            else:  # an input: named after whatever produces it now; leaves get no clause
                shape, dtype = tensor.shape, tensor._data.dtype
                fn = tensor.grad_fn
                origin = f", which is output {tensor._output_nr} of {_op_name(fn)}," if fn is not None else ""
            kind = _legacy_type_name(dtype)
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: [engine.{kind} [{', '.join(map(str, shape))}]]{origin} is at "
                f"version {counter[0]}; expected version {version} instead. Hint: "
                + (_HINT_ANOMALY_ON if _anomaly.enabled else _HINT_ANOMALY_OFF)
            )


_HINT_ANOMALY_OFF = ("enable anomaly detection to find the operation that failed to compute its gradient, with "
                     "engine.autograd.set_detect_anomaly(True, check_nan=False).")
_HINT_ANOMALY_ON = ("the backtrace further above shows the operation that failed to compute its gradient. The "
                    "variable in question was changed in there or anywhere later. Good luck!")


def _op_name(node: Node) -> str:
    """``MulBackward0`` -> ``Mul``, as torch words it in this message."""
    return re.sub(r"Backward\d*$", "", node.name())


def _legacy_type_name(dtype: np.dtype) -> str:
    return {
        "float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
        "int64": "LongTensor", "int32": "IntTensor", "bool": "BoolTensor",
    }.get(np.dtype(dtype).name, "Tensor")
