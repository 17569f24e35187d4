"""The ``graph`` event: an autograd graph as plain data, built once for both backends.

Each backend finds the graph's roots and tells, per node, what only it can read (its output
shapes, the tensors it saved, whether it is a leaf's ``AccumulateGrad``); the walk, the ids, the
edges, the leaves and the outputs are this file's. Nodes carry the module labels
``attribution.label_call`` set.

A one-shot ``modscope.trace`` builds this event inside the traced forward, so it is written for
the interpreter's sake: one walk that keeps each node's ``next_functions`` (torch builds that
tuple anew on every read), a plain tuple per node from the backend, no helper calls per edge.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .attribution import CALL_KEY, MODULE_KEY

# What a backend's ``facts(node, names)`` returns for one node, in this order: ``leaf`` (an
# ``AccumulateGrad``), ``shapes`` of its outputs (``list[list[int]]``), the tensors it ``saved``
# (``[{"shape", "output", "param"}]``), their total bytes, its ``metadata`` dict. A plain tuple:
# a NamedTuple's constructor is a Python call per node.
NodeFacts = tuple[bool, list[list[int]], list[dict[str, Any]], int, dict[str, Any]]

EMPTY = {"nodes": [], "edges": [], "leaves": [], "outputs": []}


def walk_with_inputs(roots: list[Any]) -> tuple[list[Any], list[tuple]]:
    """Every node reachable from ``roots``, each once, parents before children (the order of
    ``attribution.walk``), and beside each its ``next_functions``, read once."""
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


def graph_event(roots: list[Any], out_shapes: list[list[int]], param_paths: dict[str, Any],
                facts: Callable[[Any, dict[int, str]], NodeFacts]) -> dict[str, Any]:
    """The fields of a ``graph`` event for the graph behind ``roots`` (the nodes of the outputs,
    whose shapes are ``out_shapes``), parameters named by ``param_paths``; see a backend's
    ``graph_event_fields`` for the schema."""
    if not roots:
        return {key: [] for key in EMPTY}
    names = {id(p): path for path, p in param_paths.items()}
    nodes, next_functions = walk_with_inputs(roots)
    ids = {id(n): i for i, n in enumerate(nodes)}
    node_items, edges, leaves = [], [], []
    for i, node in enumerate(nodes):
        leaf, shapes, saved, nbytes, metadata = facts(node, names)
        inputs = [None if nxt is None else ids[id(nxt)] for nxt, _ in next_functions[i]]
        item = {"id": i, "op": node.name(), "module": metadata.get(MODULE_KEY),
                "shape": shapes[0] if shapes else [], "saved_bytes": nbytes, "inputs": inputs,
                "seq": None if leaf else node._sequence_nr(), "call": metadata.get(CALL_KEY), "saved": saved}
        if len(shapes) != 1:
            item["shapes"] = shapes
        node_items.append(item)
        for j in inputs:
            if j is not None:
                edges.append([j, i])
        if leaf:
            leaves.append({"id": i, "path": names.get(id(node.variable)), "shape": list(node.variable.shape)})
    outputs = [{"id": ids[id(root)], "shape": shape} for root, shape in zip(roots, out_shapes, strict=True)]
    return {"nodes": node_items, "edges": edges, "leaves": leaves, "outputs": outputs}
