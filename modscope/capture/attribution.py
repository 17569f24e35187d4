"""Which module created each autograd node, for either framework (engine or torch).

Framework-free: nodes are read through the API both share (``grad_fn``, ``next_functions``,
``_sequence_nr()``, ``metadata``; an ``AccumulateGrad`` node is the one with a ``variable``), and
``attribute_modules`` asks the model's backend for the autograd sequence counter.

``attribute_modules(model)`` hooks every module of ``model`` for the duration of a ``with``
block; each module call labels the ``grad_fn`` nodes it created with
``node.metadata["module"] = <module path>``. Inner calls finish (and label) before their
parents, so a node keeps the innermost module that created it. ``label_call`` is the labelling
step alone, for tools (the tracer) that already hook module calls themselves. On torch the tracer
sets the same labels inside walks it makes anyway (the backward observer's, ``capture/backward.py``,
and the graph event's, ``graph_event``), and calls ``label_call`` where those start elsewhere.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .values import tensors_in

MODULE_KEY = "module"
CALL_KEY = "module_call"  # set by label_call: which call of the module made the node


def walk(roots: Any) -> list[Any]:
    """Every node reachable from ``roots`` (a grad_fn, or a list of them), each once, parents
    before children."""
    return walk_with_inputs(list(roots) if isinstance(roots, list | tuple) else [roots])[0]


def walk_with_inputs(roots: list[Any]) -> tuple[list[Any], list[tuple]]:
    """``walk``'s nodes, and beside each its ``next_functions``, read once (torch builds that
    tuple anew at each read)."""
    order, inputs, seen, stack = [], [], set(), []
    for root in reversed(roots):
        if id(root) not in seen:
            seen.add(id(root))
            stack.append(root)
    while stack:
        node = stack.pop()
        nexts = node.next_functions
        order.append(node)
        inputs.append(nexts)
        for nxt, _ in nexts:
            if nxt is not None and id(nxt) not in seen:
                seen.add(id(nxt))
                stack.append(nxt)
    return order, inputs


def label_call(path: str, start_seq: int, outputs: Any, call: int | None = None) -> int:
    """Label with ``path`` every unlabeled node created since ``start_seq`` (the value of
    ``current_sequence_nr()`` when the call began) that the call's ``outputs`` reach; with
    ``call`` (which call of that module this was, from 0) also ``metadata["module_call"]``,
    so diagrams can tell the calls of a reused module apart.

    Walks back from the outputs' ``grad_fn`` through ``next_functions`` visiting only nodes
    numbered ``>= start_seq``, so the work is bounded by the nodes the call created; labelled
    nodes are walked through (a parent's own nodes may lie behind a child's) but keep their
    label. ``outputs`` may be a tensor or any nesting of tuples, lists and dicts. Returns how
    many nodes were labelled."""
    stack = [t.grad_fn for t in tensors_in(outputs)
             if t.grad_fn is not None and _created_since(t.grad_fn, start_seq)]
    seen: set[int] = set()
    labelled = 0
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        meta = node.metadata
        if MODULE_KEY not in meta:
            meta[MODULE_KEY] = path
            if call is not None:
                meta[CALL_KEY] = call
            labelled += 1
        for nxt, _ in node.next_functions:
            if nxt is not None and id(nxt) not in seen and _created_since(nxt, start_seq):
                stack.append(nxt)
    return labelled


def _created_since(node: Any, start_seq: int) -> bool:
    # AccumulateGrad nodes rank above every sequence number but belong to leaves, not to calls.
    return node._sequence_nr() >= start_seq and not hasattr(node, "variable")


@contextmanager
def attribute_modules(model: Any) -> Iterator[None]:
    """Within the block, every call of a module of ``model`` labels the autograd nodes it
    created with the module's path (its first ``named_modules`` name; ``""`` for ``model``).

    Uses the modules' public forward pre-hooks and forward hooks (``always_call=True`` so a
    forward that raises leaves no state behind); all hooks are removed on exit, also when the
    block raises. A module called several times (or recursively) labels each call's nodes,
    numbering the calls from 0 in ``metadata["module_call"]``."""
    from .backends import backend_for

    current_sequence_nr = backend_for(model).current_sequence_nr
    handles = []
    try:
        for path, module in model.named_modules():
            calls = _Calls(current_sequence_nr)
            handles.append(module.register_forward_pre_hook(calls.pre_hook))
            handles.append(module.register_forward_hook(calls.post_hook(path), always_call=True))
        yield
    finally:
        for handle in handles:
            handle.remove()


class _Calls:
    """One module's calls in progress (reentrant calls nest) and how many have begun."""

    def __init__(self, current_sequence_nr: Any) -> None:
        self.current_sequence_nr = current_sequence_nr
        self.started = 0
        self.open: list[tuple[int, int]] = []  # (start sequence number, call index)

    def pre_hook(self, module: Any, args: tuple) -> None:
        self.open.append((self.current_sequence_nr(), self.started))
        self.started += 1

    def post_hook(self, path: str) -> Any:
        def hook(module: Any, args: tuple, output: Any) -> None:
            if self.open:  # empty only if hooks were attached during a call already under way
                start, call = self.open.pop()
                label_call(path, start, output, call)

        return hook
