"""The autograd graph diagram: the backward graph behind a tensor, as torchviz draws it (op
nodes grey, parameters light blue named by their path, outputs green, saved tensors orange),
plus what torchviz cannot: op nodes grouped into nested clusters by the module that created
them (``node.metadata["module"]``, see ``attribution.py``) and ``depth`` collapsing.

One code path: a graph is first written as the fields of a ``graph`` event (plain data, see
``modscope.graph_capture.graph_event_fields``), and the diagram is drawn from that data, so a
graph recorded by the tracer (or read back from a trace file, or received by the TUI) draws
exactly as one taken from a live tensor. Only ``build_autograd_graph`` touches the engine, and
it imports it when called: the data path imports without it.

Edges point the way data flowed forward: from an op's inputs to the op. An ``AccumulateGrad``
node and its leaf tensor are drawn as one node.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .diagram import Cluster, Diagram, Node, check_depth, gc_paused, path_depth, path_prefix, shape_str
from .inferred_modules import NOTES as INFERRED_NOTES
from .inferred_modules import has_labels, infer_modules

NO_CLUSTERS = "no module clusters: "  # starts the note of a graph drawn without any (graph.py warns it)


@dataclass(slots=True)
class _Item:
    """One node of the graph event: an op, or a leaf (an ``AccumulateGrad`` node)."""

    node: dict  # the event's node
    leaf: dict | None  # the event's leaf entry (``path``, ``shape``) for a leaf
    module: str | None
    call: int | None  # which call of ``module`` made it, if known
    inputs: list[int]  # indices of the items this one's inputs are


def build_autograd_graph_from_event(event: dict[str, Any], model_event: dict[str, Any] | None = None, *,
                                    depth: int | None = None, show_saved: bool = False) -> Diagram:
    """The ``Diagram`` of a ``graph`` event (or its fields), drawn as ``build_autograd_graph``
    describes; ``model_event`` (a ``model`` event, optional; only its ``model`` and its
    modules' ``path`` and ``cls`` are read) names the diagram and gives the clusters their
    classes. Leaves are named by the event's parameter paths.

    Works on plain data alone (no engine). Events recorded before nodes carried ``seq``,
    ``call``, ``saved`` and the graph ``outputs`` still draw: forward order is then guessed from
    the node ids, reused modules share one cluster, no saved tensors are shown and the first
    node is the output. Raises ``ValueError`` for a graph that refers to nodes it does not have
    and for an empty graph."""
    check_depth(depth)
    with gc_paused():
        items, index = _items(event)
        outputs = _outputs(event, index)
        names = _model_names(model_event)
        notes = [] if has_labels(event["nodes"]) else _infer(event, items, index, model_event, depth)
        _place_leaves(items, names["classes"])
        diagram = _Drawer(items, names, depth, show_saved).draw(outputs)
        diagram.notes = notes
        return diagram


def _infer(event: dict[str, Any], items: list[_Item], index: dict[int, int], model_event: dict[str, Any] | None,
           depth: int | None) -> list[str]:
    """Module labels for a graph recorded without them (``inferred_modules``), set on the items;
    the notes the drawing carries: what was inferred, or why no module is drawn and what to call
    instead (the first such note starts with ``NO_CLUSTERS``): with a model, or without one but
    with a ``depth`` to collapse to (without either, an op graph was asked for: no note)."""
    unused = f" (depth={depth} has nothing to collapse)" if depth is not None else ""
    if model_event is None:
        if depth is None:  # an op graph was asked for, and is drawn: nothing claims modules
            return []
        return [f"{NO_CLUSTERS}the forward ran outside modscope.graph.attribute_modules and no model was "
                f"given to name the parameters{unused}",
                "to cluster: pass the model (autograd_graph(out, model): modules inferred from the parameters) "
                "or run the forward under `with modscope.graph.attribute_modules(model):`"]
    tied = {p["path"] for p in model_event.get("params") or () if p.get("aliases")}
    found = infer_modules(event, tied)
    if not found:
        why = "no op uses a parameter of the model under one name" if event["nodes"][0].get("seq") is not None \
            else "the graph was recorded without creation order (seq)"
        return [f"{NO_CLUSTERS}the forward ran outside modscope.graph.attribute_modules and {why}{unused}",
                "to cluster: run the forward under `with modscope.graph.attribute_modules(model):`"]
    for node_id, module in found.items():
        items[index[node_id]].module = module
    return list(INFERRED_NOTES)


def _items(event: dict[str, Any]) -> tuple[list[_Item], dict[int, int]]:
    """The event's nodes as items, and node id -> item index."""
    nodes = event["nodes"]
    if not nodes:
        raise ValueError("the graph is empty: no output required grad when it was recorded")
    index = {node["id"]: i for i, node in enumerate(nodes)}
    leaves = {leaf["id"]: leaf for leaf in event["leaves"]}
    items = []
    for node in nodes:
        try:
            inputs = [index[j] for j in node["inputs"] if j is not None]
        except KeyError as exc:
            raise ValueError(f"graph: node {node['id']} has input {exc.args[0]}, which is not a node") from None
        items.append(_Item(node, leaves.get(node["id"]), node["module"], node.get("call"), inputs))
    return items, index


def _outputs(event: dict[str, Any], index: dict[int, int]) -> list[tuple[int, list]]:
    """``(item index, shape)`` per output; events without ``outputs`` had one, the first node."""
    outputs = event.get("outputs")
    if outputs is None:
        first = event["nodes"][0]
        return [(0, first["shape"])]
    try:
        return [(index[o["id"]], o["shape"]) for o in outputs]
    except KeyError as exc:
        raise ValueError(f"graph: output node {exc.args[0]} is not a node") from None


def _model_names(model_event: dict[str, Any] | None) -> dict[str, Any]:
    """``{"name": diagram name, "classes": {module path: class name}}``."""
    if model_event is None:
        return {"name": "autograd", "classes": {}}
    return {"name": model_event["model"], "classes": {m["path"]: m["cls"] for m in model_event["modules"]}}


def _place_leaves(items: list[_Item], classes: dict[str, str]) -> None:
    """Give each leaf a module: the module owning the parameter when that module created ops
    in this graph (a graph recorded without module attribution gets no parameter-only
    clusters), else the module of its consumers when they all agree."""
    consumers: dict[int, set] = {}
    for item in items:
        for i in item.inputs:
            if items[i].leaf is not None:
                consumers.setdefault(i, set()).add(item.module)
    op_modules = {item.module for item in items if item.leaf is None}
    for i, item in enumerate(items):
        if item.leaf is None:
            continue
        path = item.leaf["path"]
        owner = path.rpartition(".")[0] if path is not None else None
        if owner is not None and owner in op_modules:
            item.module = owner
        elif len(consumers.get(i, ())) == 1:
            item.module = next(iter(consumers[i]))


def _seq(node: dict, default: int) -> int:
    seq = node.get("seq")
    return default if seq is None else seq


class _Drawer:
    """Turns the items into diagram nodes, clusters and edges."""

    def __init__(self, items: list[_Item], names: dict, depth: int | None, show_saved: bool) -> None:
        self.items = items
        self.classes: dict[str, str] = names["classes"]
        self.depth = depth
        self.show_saved = show_saved
        self.diagram = Diagram("autograd", names["name"])
        self.rep: list[str] = []  # item index -> id of the node that shows it
        self.collapsed: dict[str, Node] = {}  # module path -> its collapsed node
        self.split = self._reused_leaf_modules()

    def draw(self, outputs: list[tuple[int, list]]) -> Diagram:
        self.rep = [""] * len(self.items)
        for i in self._forward_order():
            self.rep[i] = self._node_for(i, self.items[i])
        self._edges()
        for k, (root, shape) in enumerate(outputs):
            label = "output" if len(outputs) == 1 else f"output {k}"
            node_id = f"out{k}"
            self.diagram.add_node(Node(node_id, [label, shape_str(shape)], "output", None, {"shape": list(shape)}))
            self.diagram.add_edge(self.rep[root], node_id)
        return self.diagram

    def _forward_order(self) -> list[int]:
        """Item indices in the order the forward created them (each leaf just before its first
        consumer): nodes and clusters are emitted in that order, so dot lays the graph out
        left to right as the forward ran. Without ``seq``, later ids ran earlier (the event
        lists nodes walking back from the output)."""
        n = len(self.items)
        key = [float("inf") if item.leaf is not None else float(_seq(item.node, n - i))
               for i, item in enumerate(self.items)]
        for i, item in enumerate(self.items):
            if item.leaf is None:
                for u in item.inputs:
                    if self.items[u].leaf is not None:
                        key[u] = min(key[u], key[i] - 0.5)
        return sorted(range(n), key=key.__getitem__)

    def _reused_leaf_modules(self) -> set[str]:
        """Modules called more than once that hold no other module's nodes: each call gets its
        own cluster (a reused activation would otherwise pull both calls' nodes into one box
        and draw the data flow back up through it)."""
        calls: dict[str, set] = {}
        parents: set[str] = set()
        for item in self.items:
            if item.leaf is not None or item.module is None:
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
            cluster = self._cluster(item.module.rpartition(".")[0]) if item.leaf is not None else \
                self._call_cluster(item.module, item.call)
        else:
            cluster = self._cluster(item.module)
        if item.leaf is not None:
            path, shape = item.leaf["path"], item.leaf["shape"]
            lines = [path, shape_str(shape)] if path else [shape_str(shape)]
            data = {"path": path, "shape": list(shape), "module": item.module}
            self.diagram.add_node(Node(node_id, lines, "leaf", cluster, data))
            return node_id
        node = item.node
        shapes = node.get("shapes", [node["shape"]])
        data = {"op": node["op"], "module": item.module, "shape": [list(s) for s in shapes], "seq": node.get("seq")}
        self.diagram.add_node(Node(node_id, [node["op"], ", ".join(map(shape_str, shapes))], "op", cluster, data))
        if self.show_saved:
            self._saved_nodes(node_id, node, cluster)
        return node_id

    def _collapsed_node(self, group: str, item: _Item) -> str:
        node = self.collapsed.get(group)
        if node is None:
            cls = self.classes.get(group)
            data = {"module": group, "cls": cls, "ops": 0, "leaves": 0, "params": 0}
            node = Node(f"m{len(self.collapsed)}", [group or "(model)"] + ([cls] if cls else []), "collapsed",
                        self._cluster(group.rpartition(".")[0]), data)
            self.collapsed[group] = self.diagram.add_node(node)
        node.data["leaves" if item.leaf is not None else "ops"] += 1
        if item.leaf is not None and item.leaf["path"] is not None:
            node.data["params"] += 1
        return node.id

    def _saved_nodes(self, node_id: str, node: dict, cluster: str | None) -> None:
        for j, saved in enumerate(node.get("saved", ())):
            name = "saved output" if saved["output"] else (saved["param"] or "saved")
            saved_id = f"{node_id}s{j}"
            self.diagram.add_node(Node(saved_id, [name, shape_str(saved["shape"])], "saved", cluster,
                                       {"shape": list(saved["shape"]), "op_node": node_id}))
            self.diagram.add_edge(saved_id, node_id, kind="saved")

    def _cluster(self, module: str | None) -> str | None:
        """The cluster for ``module`` (created with its ancestors on first use); ``None`` for
        nodes outside every module and for the root module, which frames the whole graph."""
        if not module:
            return None
        if module not in self.diagram.clusters:
            parent = self._cluster(module.rpartition(".")[0])  # depth of module nesting: small
            cls = self.classes.get(module)
            label = f"{module} ({cls})" if cls else module
            self.diagram.add_cluster(Cluster(module, label, parent, {"module": module, "cls": cls}))
        return module

    def _call_cluster(self, module: str, call: int) -> str:
        cid = f"{module}#{call}"
        if cid not in self.diagram.clusters:
            parent = self._cluster(module.rpartition(".")[0])
            cls = self.classes.get(module)
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
