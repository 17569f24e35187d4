"""The ``graph`` event: an autograd graph as plain data, built once for both backends.

Each backend finds the graph's roots and tells, per node, what only it can read (its output
shapes, the tensors it saved, whether it is a leaf's ``AccumulateGrad``); the walk, the ids, the
edges, the leaves and the outputs are this file's. Nodes carry the module labels
``attribution.label_call`` set.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from .attribution import CALL_KEY, MODULE_KEY, walk


class NodeFacts(NamedTuple):
    """What a backend reads of one node: ``shapes`` of its outputs, the tensors it ``saved``
    (``[{"shape", "output", "param"}]``) and their bytes, its ``metadata`` dict."""

    leaf: bool
    shapes: list[list[int]]
    saved: list[dict[str, Any]]
    saved_bytes: int
    metadata: dict[str, Any]


EMPTY = {"nodes": [], "edges": [], "leaves": [], "outputs": []}


def graph_event(roots: list[Any], out_shapes: list[list[int]], param_paths: dict[str, Any],
                facts: Callable[[Any, dict[int, str]], NodeFacts]) -> dict[str, Any]:
    """The fields of a ``graph`` event for the graph behind ``roots`` (the nodes of the outputs,
    whose shapes are ``out_shapes``), parameters named by ``param_paths``; see a backend's
    ``graph_event_fields`` for the schema."""
    if not roots:
        return {key: [] for key in EMPTY}
    names = {id(p): path for path, p in param_paths.items()}
    nodes = walk(roots)
    ids = {id(n): i for i, n in enumerate(nodes)}
    node_items, edges, leaves = [], [], []
    for i, node in enumerate(nodes):
        fact = facts(node, names)
        inputs = [None if nxt is None else ids[id(nxt)] for nxt, _ in node.next_functions]
        item = {"id": i, "op": node.name(), "module": fact.metadata.get(MODULE_KEY),
                "shape": fact.shapes[0] if fact.shapes else [], "saved_bytes": fact.saved_bytes, "inputs": inputs,
                "seq": None if fact.leaf else node._sequence_nr(), "call": fact.metadata.get(CALL_KEY),
                "saved": fact.saved}
        if len(fact.shapes) != 1:
            item["shapes"] = fact.shapes
        node_items.append(item)
        edges.extend([j, i] for j in inputs if j is not None)
        if fact.leaf:
            leaves.append({"id": i, "path": names.get(id(node.variable)), "shape": list(node.variable.shape)})
    outputs = [{"id": ids[id(root)], "shape": shape} for root, shape in zip(roots, out_shapes, strict=True)]
    return {"nodes": node_items, "edges": edges, "leaves": leaves, "outputs": outputs}
