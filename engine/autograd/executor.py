"""Runs a graph backwards: the engine behind ``Tensor.backward`` and ``autograd.grad``.

Like torch's engine it first counts, for every node reachable from the roots, how many edges
point at it, then runs nodes whose gradients are complete from a ready queue ordered by creation
(newest first; ``AccumulateGrad`` sinks as soon as they are ready). Both passes are iterative, so
a 10,000-op chain never meets Python's recursion limit. The order matters beyond speed: module
backward hooks fire in this order, and torch users rely on it.
"""

from __future__ import annotations

import heapq
import sys
import warnings
from collections.abc import Sequence
from itertools import count
from typing import Any

import numpy as np

import engine.autograd.grad_mode as grad_mode

from .._ops.double_backward import tensor_backward_of
from .._tensor import Tensor
from ..utils._backward_hook import _unwrap_all, _wrap_all
from .anomaly_mode import _state as _anomaly
from .anomaly_mode import check_nan, warn_failed_node
from .graph import (
    ACCUMULATE_PRIORITY,
    FREED_GRAPH_ERROR,
    AccumulateGrad,
    Node,
    check_saved_versions,
    running_node,
)


class _GraphRoot(Node):
    """A virtual node whose edges are the roots, so several roots (some reachable from others)
    are one graph with one dependency count."""

    __slots__ = ()

    def __init__(self, edges: tuple, grads: list[np.ndarray]) -> None:
        super().__init__(lambda: tuple(grads), edges, ())
        self._seq = ACCUMULATE_PRIORITY


def run_backward(
    roots: Sequence[Any],
    grads: Sequence[np.ndarray],
    retain_graph: bool,
    inputs: Sequence[Any] | None = None,
    allow_unused: bool = False,
    create_graph: bool = False,
) -> list[np.ndarray | None] | None:
    """Backpropagate ``grads`` from ``roots`` (tensors). With ``inputs`` (``autograd.grad``),
    returns their gradients and leaves every ``.grad`` untouched; otherwise accumulates into the
    leaves' ``.grad``.

    With ``create_graph`` the gradients are Tensors (``grads`` too) computed by each node's
    tensor backward under grad mode, so they have a graph of their own (double backward); the
    returned gradients are then Tensors."""
    root = _GraphRoot(tuple(_edge_of(t, i) for i, t in enumerate(roots)), list(grads))
    captures = _capture_map(inputs) if inputs is not None else None
    deps, needed = _dependencies(root, captures)
    captured: list[np.ndarray | None] = [None] * (len(inputs) if inputs is not None else 0)

    prev_mode = grad_mode._state.enabled
    prev_node = running_node[0]
    task = _GraphTask(deps, needed)
    _tasks.append(task)
    # hooks and custom backwards must not record a graph, unless a graph is what is asked for
    grad_mode._state.enabled = create_graph
    try:
        if create_graph:
            _execute_graph(root, deps, needed, captures, captured, retain_graph)
        else:
            _execute(root, deps, needed, captures, captured, retain_graph)
        running_node[0] = None
        task.run_callbacks()
    finally:
        grad_mode._state.enabled = prev_mode
        running_node[0] = prev_node
        _tasks.pop()

    if inputs is None:
        return None
    for i, g in enumerate(captured):
        if g is None and not allow_unused:
            raise RuntimeError(
                f"The differentiated Tensor at index {i} appears to not have been used in the "
                "graph. Set allow_unused=True if this is the desired behavior."
            )
    return captured


class _GraphTask:
    """One running backward: which nodes it will run, and the callbacks queued for its end."""

    __slots__ = ("callbacks", "deps", "needed")

    def __init__(self, deps: dict[Node, int], needed: set[Node] | None) -> None:
        self.deps, self.needed = deps, needed
        self.callbacks: list = []

    def will_run(self, node: Node) -> bool:
        return node in self.deps if self.needed is None else node in self.needed

    def run_callbacks(self) -> None:
        """In the order queued; a callback may queue more, which run too (torch's rule)."""
        i = 0
        while i < len(self.callbacks):
            self.callbacks[i]()
            i += 1


_tasks: list[_GraphTask] = []  # the backwards running now, innermost last (a hook may run one)


def queue_callback(fn: Any) -> None:
    """Run ``fn()`` once the backward now running has finished every node (torch's
    ``Variable._execution_engine.queue_callback``).

    Raises ``RuntimeError`` outside a backward, as torch does."""
    if not _tasks:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    _tasks[-1].callbacks.append(fn)


def current_node() -> Node | None:
    """The node the engine is running now (in its hooks too), else ``None`` (torch's
    ``torch._C._current_autograd_node``)."""
    return running_node[0]


def will_engine_execute_node(node: Any) -> bool:
    """Whether the backward now running will run ``node``: every node it reaches, or with
    ``inputs`` (``autograd.grad``, ``backward(inputs=...)``) only those on a path to them
    (torch's ``torch._C._will_engine_execute_node``)."""
    if not _tasks:
        raise RuntimeError("_will_engine_execute_node should only be called during the backward pass")
    if not isinstance(node, Node):
        raise TypeError(f"_will_engine_execute_node expects a grad_fn, got {type(node).__name__}")
    return _tasks[-1].will_run(node)


def _edge_of(t: Any, index: int) -> tuple[Node, int]:
    if t.grad_fn is not None:
        return (t.grad_fn, t._output_nr)
    if t.requires_grad:
        return (t._grad_accumulator(), 0)
    raise RuntimeError(f"element {index} of tensors does not require grad and does not have a grad_fn")


def _capture_map(inputs: Sequence[Any]) -> dict[Node, list[tuple[int, int]]]:
    """node -> [(output_nr, input index)] for the tensors whose gradients ``grad`` returns."""
    captures: dict[Node, list[tuple[int, int]]] = {}
    for i, t in enumerate(inputs):
        if not t.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
        node = t.grad_fn if t.grad_fn is not None else t._grad_accumulator(create=False)
        if node is not None:
            captures.setdefault(node, []).append((t._output_nr if t.grad_fn else 0, i))
    return captures


def _dependencies(root: Node, captures: dict | None) -> tuple[dict[Node, int], set[Node] | None]:
    """Count incoming edges per node. With captures, only nodes on a path to a captured node
    are counted (and returned as ``needed``): nothing else has to run."""
    deps: dict[Node, int] = {}
    seen = {root}
    stack = [root]
    while stack:
        node = stack.pop()
        for nxt, _ in node.next_functions:
            if nxt is not None:
                deps[nxt] = deps.get(nxt, 0) + 1
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
    if captures is None:
        return deps, None

    needed = set(captures)
    for node in reversed(_topological(root, deps)):  # children before parents: one pass
        if node not in needed and any(n in needed for n, _ in node.next_functions):
            needed.add(node)
    needed.add(root)
    restricted: dict[Node, int] = {}
    for node in needed:
        for nxt, _ in node.next_functions:
            if nxt in needed:
                restricted[nxt] = restricted.get(nxt, 0) + 1
    return restricted, needed


def _topological(root: Node, deps: dict[Node, int]) -> list[Node]:
    """Kahn's algorithm: parents before children."""
    remaining = dict(deps)
    order, stack = [], [root]
    while stack:
        node = stack.pop()
        order.append(node)
        for nxt, _ in node.next_functions:
            if nxt is not None:
                remaining[nxt] -= 1
                if remaining[nxt] == 0:
                    stack.append(nxt)
    return order


def _execute(root, deps, needed, captures, captured, retain_graph) -> None:

    tick = count()
    ready = [(-root._seq, next(tick), root)]
    buffers: dict[Node, list] = {root: []}
    while ready:
        node = running_node[0] = heapq.heappop(ready)[2]
        grads = buffers.pop(node)
        try:  # free when nothing raises; anomaly detection names the node that did
            # A module's BackwardHook identity node with only its module's hooks on it (every hooked
            # module call makes two) skips the checks below: it saved nothing, and its hooks run as
            # array hooks.
            if not (node._passes_through and captures is None
                    and not (node._tensor_pre_hooks or node._retains_grad_hooks or node._pre_hooks)):
                if isinstance(node, AccumulateGrad):
                    _accumulate(node, grads[0], captures, captured, Tensor)
                    continue
                if node is not root:
                    if node._tensor_pre_hooks or node._retains_grad_hooks or node._pre_hooks:
                        grads = _call_pre_hooks(node, grads, Tensor)
                    if captures is not None and node in captures:
                        for nr, i in captures[node]:
                            captured[i] = grads[nr]
                        if not any(n in needed for n, _ in node.next_functions):
                            continue
                    if node._fn is None:
                        raise RuntimeError(FREED_GRAPH_ERROR)
                    for counter, version, _ in node._saved:  # the versions read here; a call only to raise
                        if counter[0] != version:
                            check_saved_versions(node)
                    # (most nodes have one output, and it has a gradient: skip the list)
                    if type(node)._materialize_in_engine and (len(grads) != 1 or grads[0] is None):
                        grads = [_zeros(meta) if g is None else g for g, meta in zip(grads, node._out_meta)]
            if node._passes_through:  # no call: the gradients go through, zeros for the missing ones,
                outs = grads          # while the node's hooks see the raw None, as in torch
                if len(grads) != 1 or grads[0] is None:
                    outs = [_zeros(meta) if g is None else g for g, meta in zip(grads, node._out_meta)]
            else:
                outs = node._fn(*grads)
            if node._backward_hook is not None:  # a module's backward hooks: on arrays, wrapped only for its hooks
                res = node._run_backward_hook(outs, grads)
                if res is not None:
                    outs = res
            if node._post_hooks:
                outs = _call_post_hooks(node, outs, grads)
            if not retain_graph:
                node._release()
            if _anomaly.enabled and _anomaly.check_nan and node is not root:
                check_nan(node, outs)
        except Exception:
            if _anomaly.enabled and node is not root:
                warn_failed_node(node)
            raise
        for (nxt, nr), g in zip(node.next_functions, outs):
            if nxt is None or (needed is not None and nxt not in needed):
                continue
            buf = buffers.get(nxt)
            if buf is None:
                buf = buffers[nxt] = [None] * len(nxt._out_meta)
            if g is not None:
                buf[nr] = g if buf[nr] is None else buf[nr] + g
            remaining = deps[nxt] - 1
            deps[nxt] = remaining
            if remaining == 0:
                heapq.heappush(ready, (-nxt._seq, next(tick), nxt))
        outs = g = None  # the buffers own the gradients now (AccumulateGrad counts references)


def _execute_graph(root, deps, needed, captures, captured, retain_graph) -> None:
    """``_execute`` for ``create_graph=True``: the same order, Tensors in the buffers, and each
    node's ``_tbw`` (tensor backward) in place of its array backward."""

    tick = count()
    ready = [(-root._seq, next(tick), root)]
    buffers: dict[Node, list] = {root: []}
    while ready:
        node = running_node[0] = heapq.heappop(ready)[2]
        grads = buffers.pop(node)
        try:
            if isinstance(node, AccumulateGrad):
                _accumulate_tensor(node, grads[0], captures, captured)
                continue
            if node is root:
                outs = node._fn()
            else:
                if node._tensor_pre_hooks or node._retains_grad_hooks or node._pre_hooks:
                    grads = _call_tensor_pre_hooks(node, grads, Tensor)
                if captures is not None and node in captures:
                    for nr, i in captures[node]:
                        captured[i] = grads[nr]
                    if not any(n in needed for n, _ in node.next_functions):
                        continue
                if node._released:
                    raise RuntimeError(FREED_GRAPH_ERROR)
                if node._saved:
                    check_saved_versions(node)
                if node._passes_through or type(node)._materialize_in_engine:
                    grads = [_zero_tensor(meta, Tensor) if g is None else g
                             for g, meta in zip(grads, node._out_meta)]
                if node._passes_through:
                    outs = grads
                else:
                    outs = _tensor_backward(node)(*grads)
                if node._backward_hook is not None:  # module hooks on arrays: what they return replaces the value
                    arrays = [None if g is None else g._data for g in outs]
                    res = node._run_backward_hook(arrays, [None if g is None else g._data for g in grads])
                    if res is not None:
                        outs = [o if o is None or (a is not None and a is o._data) else Tensor._wrap(a)
                                for o, a in zip(outs, res)] if len(res) == len(outs) else res
                if node._post_hooks:
                    outs = _call_tensor_post_hooks(node, outs, grads)
            if not retain_graph:
                node._release()
        except Exception:
            if _anomaly.enabled and node is not root:
                warn_failed_node(node)
            raise
        for (nxt, nr), g in zip(node.next_functions, outs):
            if nxt is None or (needed is not None and nxt not in needed):
                continue
            buf = buffers.get(nxt)
            if buf is None:
                buf = buffers[nxt] = [None] * len(nxt._out_meta)
            if g is not None:
                buf[nr] = g if buf[nr] is None else buf[nr] + g
            remaining = deps[nxt] - 1
            deps[nxt] = remaining
            if remaining == 0:
                heapq.heappush(ready, (-nxt._seq, next(tick), nxt))


def _tensor_backward(node: Node):
    """The node's backward on Tensors: its ``_tbw``, or a registered rule for ops whose code
    cannot carry one (``engine._ops.double_backward.RULES``)."""
    tbw = getattr(node, "_tbw", None)
    if tbw is not None:
        return tbw

    return tensor_backward_of(node)


def _zero_tensor(meta: tuple, Tensor):
    shape, dtype = meta
    return Tensor._wrap(np.zeros(shape, dtype))


def _accumulate_tensor(node: AccumulateGrad, g, captures, captured) -> None:
    """AccumulateGrad under ``create_graph``: the gradient keeps its graph; ``.grad`` is
    replaced by ``grad + g`` (out of place, as torch does when a graph is being built)."""
    if g is None:
        return
    var = node.variable
    if var._backward_hooks:
        for hook in tuple(var._backward_hooks.values()):
            out = hook(g)
            if out is not None:
                g = out
    if captures is not None:
        for _, i in captures.get(node, ()):
            captured[i] = g
        return
    if g.dtype != var.dtype:
        g = g.to(var.dtype)
    if g.requires_grad:
        warnings.warn(_CREATE_GRAPH_CYCLE_WARNING, UserWarning, stacklevel=5)
    var._grad = g if var._grad is None else var._grad + g
    if var._post_accumulate_grad_hooks:
        for hook in tuple(var._post_accumulate_grad_hooks.values()):
            hook(var)


_CREATE_GRAPH_CYCLE_WARNING = (
    "Using backward() with create_graph=True will create a reference cycle between the parameter and its "
    "gradient which can cause a memory leak. We recommend using autograd.grad when creating the graph to avoid "
    "this. If you have to use this function, make sure to reset the .grad fields of your parameters to None "
    "after use to break the cycle and avoid the leak."
)


def _call_tensor_pre_hooks(node: Node, grads: list, Tensor) -> list:
    if node._tensor_pre_hooks:
        for nr, hooks in node._tensor_pre_hooks.items():
            for hook in tuple(hooks.values()):
                if grads[nr] is not None:
                    out = hook(grads[nr])
                    if out is not None:
                        grads[nr] = _hook_tensor(out, Tensor)
    if node._retains_grad_hooks:  # retain_grad keeps the value (torch's retained grad has no graph either)
        for nr, hook in node._retains_grad_hooks.items():
            if grads[nr] is not None:
                hook(grads[nr]._data)
    if node._pre_hooks:
        for hook in tuple(node._pre_hooks.values()):
            out = hook(tuple(grads))
            if out is not None:
                grads = list(out)
    return grads


def _call_tensor_post_hooks(node: Node, outs, grads: list):
    for hook in tuple(node._post_hooks.values()):
        res = hook(tuple(outs), tuple(grads))
        if res is not None:
            outs = res
    return outs


Node._materialize_in_engine = True  # custom Functions opt out and honour ctx.set_materialize_grads
Node._passes_through = False  # True only for BackwardHook's identity nodes


def _zeros(meta: tuple) -> np.ndarray:
    shape, dtype = meta
    return np.zeros(shape, dtype)


def _accumulate(node: AccumulateGrad, g, captures, captured, Tensor) -> None:
    if g is None:
        return
    var = node.variable
    if var._backward_hooks:
        g = _run_tensor_hooks(var._backward_hooks.values(), g, node._out_meta[0], Tensor)
    if captures is not None:
        for _, i in captures.get(node, ()):
            captured[i] = g
        return
    if var._grad is None:
        # Take the array itself when nothing else can see it (torch "steals" it too): a fresh
        # base array whose only references are the executor's buffer, this frame and
        # getrefcount's argument. Anything else (shared by two leaves, a view, held by a hook,
        # another dtype) is copied.
        if (g.base is None and g.dtype == var._data.dtype and g.flags.writeable
                and sys.getrefcount(g) <= _EXCLUSIVE_REFS):
            var._grad = Tensor._wrap(g)
        else:
            var._grad = Tensor._wrap(g.astype(var._data.dtype, copy=True))
    else:
        grad = var._grad
        np.add(grad._data, g, out=grad._data, casting="unsafe")
        grad._version_counter[0] += 1
    if var._post_accumulate_grad_hooks:
        for hook in tuple(var._post_accumulate_grad_hooks.values()):
            hook(var)


_EXCLUSIVE_REFS = 3  # the ready buffer's list, the ``g`` argument, getrefcount's own argument


def _hook_tensor(out: Any, Tensor) -> Any:
    """What a tensor hook returned, which must be a tensor (torch's words otherwise)."""
    if not isinstance(out, Tensor):
        raise TypeError(f"expected Variable, but hook returned '{type(out).__name__}'")
    return out


def _run_tensor_hooks(hooks, g: np.ndarray, meta: tuple, Tensor) -> np.ndarray:
    for hook in tuple(hooks):
        # Hooks may update the gradient in place (torch allows it); a broadcast view is read-only.
        g = g if g.flags.writeable else g.copy()
        out = hook(Tensor._wrap(g))
        if out is not None:
            new = _hook_tensor(out, Tensor)._data
            if new.shape != tuple(meta[0]):
                raise RuntimeError(
                    f"hook '{getattr(hook, '__qualname__', hook)}' has changed the size of value: "
                    f"expected {list(meta[0])} but got {list(new.shape)}"
                )
            g = new
    return g


def _call_pre_hooks(node: Node, grads: list, Tensor) -> list:
    if node._tensor_pre_hooks:
        for nr, hooks in node._tensor_pre_hooks.items():
            if grads[nr] is not None and hooks:
                grads[nr] = _run_tensor_hooks(hooks.values(), grads[nr], node._out_meta[nr], Tensor)
    if node._retains_grad_hooks:
        for nr, hook in node._retains_grad_hooks.items():
            if grads[nr] is not None:
                hook(grads[nr])
    if node._pre_hooks:
        for hook in tuple(node._pre_hooks.values()):
            out = hook(_wrap_all(grads))
            if out is not None:
                grads = [None if o is None else o._data for o in out]
    return grads


def _call_post_hooks(node: Node, outs: tuple, grads: list) -> tuple:
    grad_outputs = _wrap_all(grads)
    for hook in tuple(node._post_hooks.values()):
        grad_inputs = _wrap_all(outs)
        res = hook(grad_inputs, grad_outputs)
        if res is not None:
            if len(res) != len(outs):
                raise RuntimeError(
                    f"hook '{getattr(hook, '__qualname__', hook)}' on {node.name()} returned "
                    f"{len(res)} gradients, expected {len(outs)}"
                )
            outs = _unwrap_all(res)
    return outs
