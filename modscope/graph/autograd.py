"""The autograd graph diagram: the backward graph behind a tensor, as torchviz draws it (op
nodes grey, parameters light blue named by their path, outputs green, saved tensors orange),
plus what torchviz cannot: op nodes grouped into nested clusters by the module that created
them (``node.metadata["module"]``, see ``attribution.py``) and ``depth`` collapsing.

Edges point the way data flowed forward: from an op's inputs to the op. An ``AccumulateGrad``
node and its leaf tensor are drawn as one node.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.autograd.graph import AccumulateGrad

from .attribution import tensors_in
from .diagram import Cluster, Diagram, Node, check_depth, gc_paused, path_depth, path_prefix, shape_str


@dataclass(slots=True)
class _Item:
    """One node of the walked graph: an op (``grad_fn``) or a leaf (``AccumulateGrad`` or an
    output that is itself a leaf)."""

    obj: Any
    leaf: bool
    module: str | None
    call: int | None  # which call of ``module`` made it (``metadata["module_call"]``), if known
    inputs: list[int]  # indices of the items this one's next_functions point to


def build_autograd_graph(output: Any, model: Any = None, *, depth: int | None = None,
                         show_saved: bool = False) -> Diagram:
    """The ``Diagram`` of the backward graph from ``output`` (a tensor, or tuples/lists/dicts
    of tensors) back to the leaves.

    Op nodes sit in nested clusters by the module that created them (``node.metadata
    ["module"]``); with ``model`` the clusters and leaves are named by ``named_modules`` /
    ``named_parameters`` and a parameter sits in its module's cluster (without ``model``, a
    leaf sits in its consumers' cluster when they all share one). A module called more than
    once that contains no other module's nodes (a reused activation) gets one cluster per
    call, its parameters just outside them. ``depth=k`` draws each
    module at depth ``k`` (``"layer1.0"`` is depth 2) as one node holding everything it
    created, its parameters included; shallower modules stay clusters. ``show_saved`` adds the
    tensors each op saved for backward with their shapes. Raises ``ValueError`` if no output
    requires grad."""
    check_depth(depth)
    outputs = list(tensors_in(output))
    if not outputs:
        raise ValueError(f"expected a tensor (or tensors) to draw the graph of, got {type(output).__name__}")
    with gc_paused():
        items, roots = _walk(outputs)
        names = _names(model)
        _place_leaves(items, names)
        return _Drawer(items, names, depth, show_saved, model).draw(outputs, roots)


def _walk(outputs: list) -> tuple[list[_Item], list[int]]:
    """Every node reachable from the outputs, iteratively; returns the items and, for each
    output, the index of its node."""
    items: list[_Item] = []
    index: dict[int, int] = {}
    roots: list[int] = []
    pending: list[int] = []

    def visit(obj: Any, leaf: bool) -> int:
        key = id(obj)
        if key not in index:
            index[key] = len(items)
            meta = {} if leaf else obj.metadata
            items.append(_Item(obj, leaf, meta.get("module"), meta.get("module_call"), []))
            if not leaf:
                pending.append(index[key])
        return index[key]

    for i, t in enumerate(outputs):
        if t.grad_fn is not None:
            roots.append(visit(t.grad_fn, False))
        elif t.requires_grad:
            roots.append(visit(t, True))
        else:
            raise ValueError(f"output {i} does not require grad: it has no backward graph to draw")
    while pending:
        item = items[pending.pop()]
        for nxt, _ in item.obj.next_functions:
            if nxt is not None:
                item.inputs.append(visit(nxt, isinstance(nxt, AccumulateGrad)))
    return items, roots


def _names(model: Any) -> dict[str, dict]:
    """``{"params": {id(param): path}, "classes": {module path: class name}}`` from ``model``."""
    if model is None:
        return {"params": {}, "classes": {}}
    return {"params": {id(p): path for path, p in model.named_parameters()},
            "classes": {path: type(m).__name__ for path, m in model.named_modules()}}


def _leaf_tensor(item: _Item) -> Any:
    return item.obj.variable if isinstance(item.obj, AccumulateGrad) else item.obj


def _place_leaves(items: list[_Item], names: dict[str, dict]) -> None:
    """Give each leaf a module: the module owning the parameter when that module created ops
    in this graph (a graph walked without ``attribute_modules`` gets no parameter-only
    clusters), else the module of its consumers when they all agree."""
    consumers: dict[int, set] = {}
    for item in items:
        for i in item.inputs:
            if items[i].leaf:
                consumers.setdefault(i, set()).add(item.module)
    op_modules = {item.module for item in items if not item.leaf}
    for i, item in enumerate(items):
        if not item.leaf:
            continue
        path = names["params"].get(id(_leaf_tensor(item)))
        owner = path.rpartition(".")[0] if path is not None else None
        if owner is not None and owner in op_modules:
            item.module = owner
        elif len(consumers.get(i, ())) == 1:
            item.module = next(iter(consumers[i]))


class _Drawer:
    """Turns the walked items into diagram nodes, clusters and edges."""

    def __init__(self, items: list[_Item], names: dict, depth: int | None, show_saved: bool, model: Any) -> None:
        self.items = items
        self.names = names
        self.depth = depth
        self.show_saved = show_saved
        self.diagram = Diagram("autograd", type(model).__name__ if model is not None else "autograd")
        self.rep: list[str] = []  # item index -> id of the node that shows it
        self.collapsed: dict[str, Node] = {}  # module path -> its collapsed node
        self.split = self._reused_leaf_modules()

    def draw(self, outputs: list, roots: list[int]) -> Diagram:
        self.rep = [""] * len(self.items)
        for i in self._forward_order():
            self.rep[i] = self._node_for(i, self.items[i])
        self._edges()
        for k, (t, root) in enumerate(zip(outputs, roots)):
            label = "output" if len(outputs) == 1 else f"output {k}"
            node_id = f"out{k}"
            self.diagram.add_node(Node(node_id, [label, shape_str(t.shape)], "output", None,
                                       {"shape": list(t.shape)}))
            self.diagram.add_edge(self.rep[root], node_id)
        return self.diagram

    def _forward_order(self) -> list[int]:
        """Item indices in the order the forward created them (each leaf just before its first
        consumer): nodes and clusters are emitted in that order, so dot lays the graph out
        left to right as the forward ran."""
        key = [float(item.obj._sequence_nr()) if not item.leaf else float("inf") for item in self.items]
        for item in self.items:
            if not item.leaf:
                seq = item.obj._sequence_nr()
                for u in item.inputs:
                    if self.items[u].leaf:
                        key[u] = min(key[u], seq - 0.5)
        return sorted(range(len(self.items)), key=key.__getitem__)

    def _reused_leaf_modules(self) -> set[str]:
        """Modules called more than once that hold no other module's nodes: each call gets its
        own cluster (a reused activation would otherwise pull both calls' nodes into one box
        and draw the data flow back up through it)."""
        calls: dict[str, set] = {}
        parents: set[str] = set()
        for item in self.items:
            if item.leaf or item.module is None:
                continue
            calls.setdefault(item.module, set()).add(item.call)
            parts = item.module.split(".")
            parents.update(".".join(parts[:k]) for k in range(1, len(parts)))
        return {m for m, c in calls.items() if len(c) > 1 and None not in c and m not in parents}

    def _group(self, module: str | None) -> str | None:
        """The module whose collapsed node absorbs nodes of ``module`` (``None``: not collapsed)."""
        if module is None or self.depth is None or path_depth(module) < self.depth:
            return None
        return path_prefix(module, self.depth)

    def _node_for(self, i: int, item: _Item) -> str:
        group = self._group(item.module)
        if group is not None:
            return self._collapsed_node(group, item)
        node_id = f"n{i}"
        if item.module in self.split:
            # A reused module's op goes to its call's cluster; its parameters, shared by every
            # call, sit just outside them.
            cluster = self._cluster(item.module.rpartition(".")[0]) if item.leaf else \
                self._call_cluster(item.module, item.call)
        else:
            cluster = self._cluster(item.module)
        if item.leaf:
            tensor = _leaf_tensor(item)
            path = self.names["params"].get(id(tensor))
            lines = [path, shape_str(tensor.shape)] if path else [shape_str(tensor.shape)]
            data = {"path": path, "shape": list(tensor.shape), "module": item.module}
            self.diagram.add_node(Node(node_id, lines, "leaf", cluster, data))
            return node_id
        node = item.obj
        shapes = [shape_str(shape) for shape, _ in node._out_meta]
        data = {"op": node.name(), "module": item.module, "shape": [list(s) for s, _ in node._out_meta],
                "seq": node._sequence_nr()}
        self.diagram.add_node(Node(node_id, [node.name(), ", ".join(shapes)], "op", cluster, data))
        if self.show_saved:
            self._saved_nodes(node_id, node, cluster)
        return node_id

    def _collapsed_node(self, group: str, item: _Item) -> str:
        node = self.collapsed.get(group)
        if node is None:
            cls = self.names["classes"].get(group)
            data = {"module": group, "cls": cls, "ops": 0, "leaves": 0, "params": 0}
            node = Node(f"m{len(self.collapsed)}", [group or "(model)"] + ([cls] if cls else []), "collapsed",
                        self._cluster(group.rpartition(".")[0]), data)
            self.collapsed[group] = self.diagram.add_node(node)
        node.data["leaves" if item.leaf else "ops"] += 1
        if item.leaf and id(_leaf_tensor(item)) in self.names["params"]:
            node.data["params"] += 1
        return node.id

    def _saved_nodes(self, node_id: str, node: Any, cluster: str | None) -> None:
        for j, (_, _, tensor) in enumerate(node._saved):
            # None stands for the op's own output (see engine.autograd.graph.Node).
            shape = node._out_meta[0][0] if tensor is None else tensor.shape
            name = "saved output" if tensor is None else self.names["params"].get(id(tensor), "saved")
            saved_id = f"{node_id}s{j}"
            self.diagram.add_node(Node(saved_id, [name, shape_str(shape)], "saved", cluster,
                                       {"shape": list(shape), "op_node": node_id}))
            self.diagram.add_edge(saved_id, node_id, kind="saved")

    def _cluster(self, module: str | None) -> str | None:
        """The cluster for ``module`` (created with its ancestors on first use); ``None`` for
        nodes outside every module and for the root module, which frames the whole graph."""
        if not module:
            return None
        if module not in self.diagram.clusters:
            parent = self._cluster(module.rpartition(".")[0])  # depth of module nesting: small
            cls = self.names["classes"].get(module)
            label = f"{module} ({cls})" if cls else module
            self.diagram.add_cluster(Cluster(module, label, parent, {"module": module, "cls": cls}))
        return module

    def _call_cluster(self, module: str, call: int) -> str:
        cid = f"{module}#{call}"
        if cid not in self.diagram.clusters:
            parent = self._cluster(module.rpartition(".")[0])
            cls = self.names["classes"].get(module)
            label = (f"{module} ({cls})" if cls else module) + f" [call {call + 1}]"
            self.diagram.add_cluster(Cluster(cid, label, parent, {"module": module, "cls": cls, "call": call}))
        return cid

    def _edges(self) -> None:
        seen: set[tuple[str, str]] = set()  # collapsed nodes have ids "m<k>"
        for v, item in enumerate(self.items):
            target = self.rep[v]
            for u in item.inputs:
                source = self.rep[u]
                if source == target:
                    continue
                if source.startswith("m") or target.startswith("m"):
                    # Edges into or out of a collapsed module: one arrow per pair of nodes.
                    if (source, target) in seen:
                        continue
                    seen.add((source, target))
                self.diagram.add_edge(source, target)
        # Counts are known only now: finish the collapsed nodes' labels.
        for node in self.collapsed.values():
            ops, leaves = node.data["ops"], node.data["leaves"]
            word = "params" if leaves == node.data["params"] else "leaves"
            node.lines.append(f"{ops} op{'s' if ops != 1 else ''}" + (f", {leaves} {word}" if leaves else ""))
