"""The ``graph`` event: an autograd graph as plain data (nodes labelled with the module that
created them by ``modscope.graph.attribution.label_call``, which the tracer calls per module call).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import engine
from engine.autograd.graph import AccumulateGrad

from ..graph_event import NodeFacts, graph_event


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


def graph_event_fields(output: engine.Tensor | Sequence[engine.Tensor],
                       param_paths: dict[str, engine.Tensor]) -> dict[str, Any]:
    """The fields of a ``graph`` event for the graph behind ``output`` (a tensor, or a list or
    tuple of tensors: one graph reaching all of them).

    Edges point the way data flowed: ``[input_node_id, consumer_node_id]``; each node also lists
    its ``inputs`` by position (``None`` where that input needs no gradient), which is what
    counting multiply-adds needs. Beyond the protocol's fields, which diagrams use:

    - ``outputs``: ``[{"id", "shape"}]``, the node behind each output (an output that is itself
      a leaf requiring grad is its ``AccumulateGrad`` node; outputs needing no grad are left out);
    - per node ``seq`` (creation order: the forward's order; ``None`` for leaves), ``call`` (which call of
      ``module`` created it, ``None`` if unknown), ``saved`` (``[{"shape", "output", "param"}]``:
      each tensor saved for backward, ``output`` when it is the op's own output, ``param`` its
      parameter path if it is one) and, for an op with other than one output, ``shapes``."""
    tensors = [output] if isinstance(output, engine.Tensor) else list(output)
    roots, out_shapes = [], []
    for t in tensors:
        node = t.grad_fn if t.grad_fn is not None else (t._grad_accumulator() if t.requires_grad else None)
        if node is not None:
            roots.append(node)
            out_shapes.append(list(t.shape))
    return graph_event(roots, out_shapes, param_paths, _facts)


def _facts(node: Any, names: dict[int, str]) -> NodeFacts:
    out_meta = node._out_meta
    saved, total = [], 0
    # ``None`` in ``_saved`` stands for the op's own output (see engine.autograd.graph.Node).
    for _counter, _version, tensor in getattr(node, "_saved", ()):
        if tensor is None:
            shape, dtype = out_meta[0]
            total += int(engine.Size(shape).numel()) * dtype.itemsize
            saved.append({"shape": list(shape), "output": True, "param": None})
        else:
            total += tensor._data.nbytes
            saved.append({"shape": list(tensor.shape), "output": False, "param": names.get(id(tensor))})
    return (isinstance(node, AccumulateGrad), [list(s) for s, _ in out_meta], saved, total,
            node._metadata or {})
