"""The ``graph`` event: an autograd graph as plain data (nodes labelled with the module that
created them by ``modscope.graph.attribution.label_call``, which the tracer calls per module call).
"""

from __future__ import annotations

from typing import Any

import engine
from engine.autograd.graph import AccumulateGrad

from .graph.attribution import label_call  # noqa: F401 - the tracer's import point

MODULE_KEY = "module"


def walk(root: Any) -> list[Any]:
    """Every node reachable from ``root`` (a grad_fn), each once, parents before children."""
    order, seen, stack = [], {id(root)}, [root]
    while stack:
        node = stack.pop()
        order.append(node)
        for nxt, _ in node.next_functions:
            if nxt is not None and id(nxt) not in seen:
                seen.add(id(nxt))
                stack.append(nxt)
    return order


def saved_bytes(node: Any) -> int:
    """Bytes the node keeps for backward (the tensors it saved; its own output included)."""
    total = 0
    for _counter, _version, tensor in getattr(node, "_saved", ()):
        if tensor is None:
            shape, dtype = node._out_meta[0]
            total += int(engine.Size(shape).numel()) * dtype.itemsize
        else:
            total += tensor._data.nbytes
    return total


def graph_event_fields(output: engine.Tensor, param_paths: dict[str, engine.Tensor]) -> dict[str, Any]:
    """The fields of a ``graph`` event for the graph behind ``output``.

    Edges point the way data flowed: ``[input_node_id, consumer_node_id]``; each node also lists
    its ``inputs`` by position (``None`` where that input needs no gradient), which is what
    counting multiply-adds needs."""
    if output.grad_fn is None:
        return {"nodes": [], "edges": [], "leaves": []}
    names = {id(p): path for path, p in param_paths.items()}
    nodes = walk(output.grad_fn)
    ids = {id(n): i for i, n in enumerate(nodes)}
    node_items, edges, leaves = [], [], []
    for i, node in enumerate(nodes):
        meta = node._metadata or {}
        shape = list(node._out_meta[0][0]) if node._out_meta else []
        inputs = [None if nxt is None else ids[id(nxt)] for nxt, _ in node.next_functions]
        node_items.append({"id": i, "op": node.name(), "module": meta.get(MODULE_KEY), "shape": shape,
                           "saved_bytes": saved_bytes(node), "inputs": inputs})
        edges.extend([j, i] for j in inputs if j is not None)
        if isinstance(node, AccumulateGrad):
            leaves.append({"id": i, "path": names.get(id(node.variable)), "shape": list(node.variable.shape)})
    return {"nodes": node_items, "edges": edges, "leaves": leaves}
