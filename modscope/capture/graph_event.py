"""The ``graph`` event: an autograd graph as plain data, built once for both backends.

Each backend finds the graph's roots and tells, per node, what only it can read (its output
shapes, the tensors it saved, whether it is a leaf's ``AccumulateGrad``); the walk, the ids, the
edges, the leaves and the outputs are this file's. Nodes carry the module labels
``attribution.label_call`` set.

A one-shot ``modscope.trace`` builds this event inside the traced forward, so it is written for
the interpreter's sake: one walk that keeps each node's ``next_functions`` (torch builds that
tuple anew on every read), a plain tuple per node from the backend, no helper calls per edge.
The ``model`` event's parameter and buffer tables (``model_tensors``) are here for the same
reason: one pass over the modules the tracer has already walked.
"""

from __future__ import annotations

from collections.abc import Callable
from math import prod
from typing import Any

from ..events.records import dtype_name
from .attribution import CALL_KEY, MODULE_KEY, walk_with_inputs

# What a backend's ``facts(node, names)`` returns for one node, in this order: ``leaf`` (an
# ``AccumulateGrad``), ``shapes`` of its outputs (``list[list[int]]``), the tensors it ``saved``
# (``[{"shape", "output", "param"}]``), their total bytes, its ``metadata`` dict. A plain tuple:
# a NamedTuple's constructor is a Python call per node.
NodeFacts = tuple[bool, list[list[int]], list[dict[str, Any]], int, dict[str, Any]]

EMPTY = {"nodes": [], "edges": [], "leaves": [], "outputs": []}


def graph_event(roots: list[Any], out_shapes: list[list[int]], param_paths: dict[str, Any],
                facts: Callable[[Any, dict[int, str]], NodeFacts],
                label: tuple[str, int, int] | None = None) -> dict[str, Any]:
    """The fields of a ``graph`` event for the graph behind ``roots`` (the nodes of the outputs,
    whose shapes are ``out_shapes``), parameters named by ``param_paths``; see a backend's
    ``graph_event_fields`` for the schema. ``label``: ``(path, call, start_seq)`` of the module
    call whose outputs are ``roots``: its nodes are labelled first, exactly as
    ``attribution.label_call(path, start_seq, roots' tensors, call)`` would, from this walk."""
    if not roots:
        return {key: [] for key in EMPTY}
    names = {id(p): path for path, p in param_paths.items()}
    nodes, next_functions = walk_with_inputs(roots)
    ids = {id(n): i for i, n in enumerate(nodes)}
    known = [facts(node, names) for node in nodes]
    seqs = [None if f[0] else node._sequence_nr() for node, f in zip(nodes, known, strict=True)]
    if label is not None:
        _label(roots, next_functions, ids, known, seqs, label)
    node_items, edges, leaves = [], [], []
    for i, node in enumerate(nodes):
        leaf, shapes, saved, nbytes, metadata = known[i]
        inputs = []  # (a loop: a list comprehension is a function call per node before Python 3.12)
        for nxt, _ in next_functions[i]:
            if nxt is None:
                inputs.append(None)
            else:
                j = ids[id(nxt)]
                inputs.append(j)
                edges.append([j, i])
        item = {"id": i, "op": node.name(), "module": metadata.get(MODULE_KEY),
                "shape": shapes[0] if shapes else [], "saved_bytes": nbytes, "inputs": inputs,
                "seq": seqs[i], "call": metadata.get(CALL_KEY), "saved": saved}
        if len(shapes) != 1:
            item["shapes"] = shapes
        node_items.append(item)
        if leaf:
            leaves.append({"id": i, "path": names.get(id(node.variable)), "shape": list(node.variable.shape)})
    outputs = [{"id": ids[id(root)], "shape": shape} for root, shape in zip(roots, out_shapes, strict=True)]
    return {"nodes": node_items, "edges": edges, "leaves": leaves, "outputs": outputs}


def _label(roots: list[Any], next_functions: list[tuple], ids: dict[int, int], known: list[NodeFacts],
           seqs: list[int | None], label: tuple[str, int, int]) -> None:
    """``label_call``'s walk and labels (from the roots, through the nodes numbered ``>=
    start_seq`` that are not leaves, each labelled unless it has a module already), run on what
    the graph's walk has read: no node is asked for anything again."""
    path, call, start = label
    stack, seen = [ids[id(root)] for root in roots], set()
    while stack:
        i = stack.pop()
        seq = seqs[i]
        if i in seen or seq is None or seq < start:  # a leaf (no number) or made before the call
            continue
        seen.add(i)
        metadata = known[i][4]
        if MODULE_KEY not in metadata:
            metadata[MODULE_KEY] = path
            metadata[CALL_KEY] = call
        for nxt, _ in next_functions[i]:
            if nxt is not None:
                stack.append(ids[id(nxt)])


# --- the model event's parameter and buffer tables -------------------------------------------------

def model_tensors(modules: list[tuple[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The ``params`` and ``buffers`` of a ``model`` event, from the model's modules as
    ``named_modules()`` gives them (``(path, module)``, each module once): what
    ``named_parameters()`` and ``named_buffers()`` would list (a module's own in registration
    order, module by module, a shared tensor under its first name), read in one pass over the
    modules' own dicts instead of two more walks of the tree. A buffer is ``persistent`` unless
    its module registered it with ``persistent=False``. ``numel`` is the product of the shape
    (what ``numel()`` returns, without a method call, which tools like torchlens wrap)."""
    params, buffers, seen_params, seen_buffers = [], [], set(), set()
    for path, mod in modules:
        head = path + "." if path else ""
        for name, t in mod._parameters.items():
            if t is not None and id(t) not in seen_params:
                seen_params.add(id(t))
                shape = list(t.shape)
                params.append({"path": head + name, "shape": shape, "dtype": dtype_name(t.dtype),
                               "numel": prod(shape), "requires_grad": t.requires_grad})
        if mod._buffers:
            transient = mod._non_persistent_buffers_set
            for name, t in mod._buffers.items():
                if t is not None and id(t) not in seen_buffers:
                    seen_buffers.add(id(t))
                    shape = list(t.shape)
                    buffers.append({"path": head + name, "shape": shape, "dtype": dtype_name(t.dtype),
                                    "numel": prod(shape), "persistent": name not in transient})
    return params, buffers
