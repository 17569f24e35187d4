"""The ``graph`` event for torch: a torch autograd graph as plain data, in exactly the schema of
``modscope.capture.engine.graph.graph_event_fields`` (nodes labelled with the module that created
them by ``modscope.capture.attribution.label_call``).

What torch's ``grad_fn`` nodes give, and where each field comes from:

- ``op``: ``node.name()`` as torch reports it (``AddmmBackward0``; leaves are
  ``torch::autograd::AccumulateGrad``, where the engine says ``AccumulateGrad``);
- ``shape``/``shapes``: ``node._input_metadata``, one entry per gradient the node receives, i.e.
  per differentiable output of the forward op (a leaf's: its variable). Nodes without it (none
  in torch 2.13, but it is private) fall back to the leaf's shape, else ``[]``;
- ``saved``/``saved_bytes``: the node class's ``_saved_*`` properties (each unpacks one saved
  value: a tensor, a list of them, an int, a tuple, ``None``...; only tensors count) or, for a
  custom ``autograd.Function``, ``saved_tensors``. ``_saved_result*`` is the op's own output (as
  is any saved tensor whose ``grad_fn`` is the node). After backward freed them torch returns
  ``None`` (older versions raise): those nodes report nothing saved. Values packed by
  ``saved_tensors_hooks`` (a non-reentrant ``checkpoint``, ``save_on_cpu``) are left out
  unread: unpacking them would run the hook (the checkpoint would recompute its block);
- ``seq``: ``node._sequence_nr()``, ``None`` for leaves (torch numbers them 2**64 - 1);
- ``module``/``call``: ``node.metadata``, set by ``label_call``;
- leaves: ``AccumulateGrad`` nodes (the ones with ``variable``), named through ``param_paths``.

An output that is itself a leaf requiring grad has no ``grad_fn``; its node is
``torch.autograd.graph.get_gradient_edge(t).node`` (its ``AccumulateGrad``, made if needed).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch.autograd.function import BackwardCFunction
from torch.autograd.graph import get_gradient_edge

from ..graph_event import NodeFacts, graph_event


class _Kind:
    """What a node class offers: is it a leaf, and which attributes may hold a tensor it saved,
    each with whether it is the op's own result (``_saved_result*``) and the name of its raw
    ``SavedTensor`` form (``_raw_saved_*``, ``None`` if the class has none; see ``_packed``).

    ``saved_attrs`` holds the ``_saved_*`` properties that may hold a tensor: those with a
    ``_raw_saved_*`` twin (torch generates one exactly for a ``SavedVariable`` or a list of them;
    a number, a bool, a size or a list of ints has none: on GPT-2, 94 of 261 properties). Reading
    the others was most of the first graph event's reads (a convolution has nine, two of them
    tensors), each made a Python value only to be found no tensor. A property that holds
    something else all the same is dropped the first time it does (``forget``). An attribute
    that held ``None`` or an empty list is kept: an optional tensor (a norm's weight) is ``None``
    on one model and a tensor on the next."""

    __slots__ = ("leaf", "saved_attrs")

    def __init__(self, cls: type) -> None:
        self.leaf = hasattr(cls, "variable")
        if issubclass(cls, BackwardCFunction):  # a custom autograd.Function: its ctx is the node
            self.saved_attrs = (("saved_tensors", False, _raw_name(cls, "saved_tensors")),)
            return
        # generated nodes: one property per saved value, in declaration order; tensors have a raw twin
        raws = ((name, _raw_name(cls, name)) for name in vars(cls) if name.startswith("_saved_"))
        self.saved_attrs = tuple((name, name.startswith("_saved_result"), raw) for name, raw in raws if raw is not None)

    def forget(self, never_tensors: set[str]) -> None:
        """Stop reading the attributes ``never_tensors`` (seen holding a non-tensor value)."""
        self.saved_attrs = tuple(entry for entry in self.saved_attrs if entry[0] not in never_tensors)


def _raw_name(cls: type, name: str) -> str | None:
    raw = "_raw_" + name.lstrip("_")
    return raw if hasattr(cls, raw) else None


def _packed(raw: Any) -> bool:
    """Is this saved value (a ``SavedTensor``, or a list of them) packed by
    ``saved_tensors_hooks``? Unpacking it would run the hook: ``checkpoint(use_reentrant=False)``
    recomputes its whole block, ``save_on_cpu`` copies back. The graph event leaves such values
    out rather than run the user's hooks (they are not kept as tensors of the graph anyway)."""
    if isinstance(raw, list | tuple):
        return any(getattr(r, "unpack_hook", None) is not None for r in raw)
    return getattr(raw, "unpack_hook", None) is not None


_kinds: dict[type, _Kind] = {}
_Tensor = torch.Tensor


def _kind(node: Any) -> _Kind:
    cls = type(node)
    kind = _kinds.get(cls)
    if kind is None:
        kind = _kinds[cls] = _Kind(cls)
    return kind


def _saved_tensors(node: Any, kind: _Kind | None = None) -> list[tuple[torch.Tensor, bool]]:
    """``(tensor, is the op's output)`` for each tensor the node saved for backward, in the
    order the node declares them (``[]`` once backward has freed them); ``kind``: the node's."""
    kind = kind or _kind(node)
    found: list[tuple[torch.Tensor, bool]] = []
    never_tensors = None
    for name, result, raw in kind.saved_attrs:
        try:
            if raw is not None and _packed(getattr(node, raw)):
                continue
            value = getattr(node, name)
        except RuntimeError:  # freed by backward (torch before 2.x raised), or modified in place
            continue
        if isinstance(value, _Tensor):
            found.append((value, result or value.grad_fn is node))
        elif isinstance(value, list | tuple):
            for v in value:
                if isinstance(v, _Tensor):
                    found.append((v, v.grad_fn is node))
                elif v is not None:  # ints (sizes, strides): this attribute never holds tensors
                    never_tensors = (never_tensors or set()) | {name}
        elif value is not None:
            never_tensors = (never_tensors or set()) | {name}
    if never_tensors:
        kind.forget(never_tensors)
    return found


def _bytes(t: torch.Tensor) -> int:
    """``numel() * element_size()``: ``nbytes`` is that, read as an attribute (two method calls
    cost more, more still while a tool like torchlens wraps torch's methods); sparse tensors
    have no ``nbytes``."""
    try:
        return t.nbytes
    except RuntimeError:
        return t.numel() * t.element_size()


def saved_bytes(node: Any) -> int:
    """Bytes the node keeps for backward (the tensors it saved; its own output included)."""
    return sum(_bytes(t) for t, _output in _saved_tensors(node))


def _shapes(node: Any, leaf: bool) -> list[list[int]]:
    """The shapes of the node's forward outputs (the gradients it receives)."""
    try:
        return [list(meta.shape) for meta in node._input_metadata]
    except (AttributeError, RuntimeError):  # no metadata, or a nested tensor's (no single shape)
        return [list(node.variable.shape)] if leaf else []


def graph_event_fields(output: torch.Tensor | Sequence[torch.Tensor], param_paths: dict[str, torch.Tensor],
                       label: tuple[str, int, int] | None = None) -> dict[str, Any]:
    """The fields of a ``graph`` event for the graph behind ``output`` (a tensor, or a list or
    tuple of tensors: one graph reaching all of them); the schema is the engine's (see
    ``modscope.capture.engine.graph.graph_event_fields``).

    Edges point the way data flowed: ``[input_node_id, consumer_node_id]``; each node also lists
    its ``inputs`` by position (``None`` where that input needs no gradient). Also ``outputs``
    (``[{"id", "shape"}]``, the node behind each output requiring grad: a leaf output's is its
    ``AccumulateGrad``) and per node ``seq``, ``call``, ``saved`` (``[{"shape", "output",
    "param"}]``) and, for an op with other than one output, ``shapes``. ``label``: ``(path, call,
    start_seq)`` of the module call that returned ``output``: its nodes are labelled first, as
    ``attribution.label_call`` would, in the graph's own walk (``graph_event``)."""
    tensors = [output] if isinstance(output, torch.Tensor) else list(output)
    roots, out_shapes = [], []
    for t in tensors:
        node = t.grad_fn
        if node is None and t.requires_grad:
            node = get_gradient_edge(t).node
        if node is not None:
            roots.append(node)
            out_shapes.append(list(t.shape))
    return graph_event(roots, out_shapes, param_paths, _facts, label)


def _facts(node: Any, names: dict[int, str]) -> NodeFacts:
    # (called per node inside the traced forward: the helpers' lookups are inlined)
    kind = _kinds.get(type(node)) or _kind(node)
    saved, total = [], 0
    if kind.saved_attrs:
        for t, out in _saved_tensors(node, kind):
            try:
                total += t.nbytes  # (``_bytes``, inlined)
            except RuntimeError:
                total += t.numel() * t.element_size()
            saved.append({"shape": list(t.shape), "output": out, "param": None if out else names.get(id(t))})
    try:
        metas = node._input_metadata
        # (one output is the rule: no list comprehension, a function call per node before 3.12)
        shapes = [list(metas[0].shape)] if len(metas) == 1 else [list(meta.shape) for meta in metas]
    except (AttributeError, RuntimeError):
        shapes = _shapes(node, kind.leaf)
    return kind.leaf, shapes, saved, total, node.metadata
