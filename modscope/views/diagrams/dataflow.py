"""The dataflow diagram: module calls as nodes with their input and output shapes, and an edge
wherever a tensor one call returned is passed to another (what torchview draws), built from
the ``forward_pre``/``forward`` events of a trace (see ``modscope.events``).

Tensors are followed by their ``tid``: an edge goes from the call that returned tensor ``t`` to
every later call that takes ``t``. Calls that contain other calls are drawn as clusters around
them, down to ``depth``; a call at ``depth`` (or one that calls nothing) is a node. A tensor
no drawn call returned is drawn as its own node: ``input`` when it entered the model, else
``tensor`` inside the module whose own code computed it (module events cannot say from what).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .diagram import Cluster, Diagram, Node, check_depth, path_depth, shape_str


@dataclass(slots=True)
class _Call:
    path: str
    call: int
    inputs: list
    parent: int | None
    outputs: list = field(default_factory=list)
    children: list[int] = field(default_factory=list)
    visible: bool = False  # drawn as a node (else a cluster, or hidden inside a node)
    hidden: bool = False  # inside a call drawn as a node


def build_dataflow(trace: Any, depth: int | None = None, *, step: int | None = None) -> Diagram:
    """The ``Diagram`` of the module calls in ``trace`` (anything with ``.events``, or a list
    of event dicts) during one training step: ``step`` if given, else the step of the first
    module call. ``depth=k`` draws modules at depth ``k`` (``"layer1.0"`` is depth 2) as single
    nodes. Raises ``ValueError`` when there is no module call to draw."""
    check_depth(depth)
    events = list(getattr(trace, "events", trace))
    classes = _classes(events)
    calls, order = _calls(events, step)
    if not calls:
        where = "" if step is None else f" in step {step}"
        raise ValueError(f"no module calls (forward_pre/forward events) to draw{where}")
    _mark(calls, depth)
    return _Builder(calls, classes).build(order)


def _classes(events: list[dict]) -> dict[str, str]:
    """Module path -> class name, from the last ``model`` event (labels only: optional)."""
    classes: dict[str, str] = {}
    for e in events:
        if e.get("kind") == "model":
            classes = {m["path"]: m["cls"] for m in e.get("modules", ())}
    return classes


def _calls(events: list[dict], step: int | None) -> tuple[list[_Call], list[tuple[str, int]]]:
    """The calls of the chosen step with their nesting, and the event order as ``("pre" |
    "post", call index)``. A call whose forward never reported (it raised) is closed when an
    enclosing call ends."""
    calls: list[_Call] = []
    order: list[tuple[str, int]] = []
    stack: list[int] = []
    for e in events:
        kind = e.get("kind")
        if kind not in ("forward_pre", "forward"):
            continue
        if step is None:
            step = e.get("step")
        if e.get("step") != step:
            continue
        if kind == "forward_pre":
            parent = stack[-1] if stack else None
            calls.append(_Call(e["path"], e["call"], list(e.get("inputs") or ()), parent))
            if parent is not None:
                calls[parent].children.append(len(calls) - 1)
            stack.append(len(calls) - 1)
            order.append(("pre", len(calls) - 1))
            continue
        match = next((k for k in range(len(stack) - 1, -1, -1)
                      if calls[stack[k]].path == e["path"] and calls[stack[k]].call == e["call"]), None)
        if match is None:
            continue  # a forward whose forward_pre is outside the step or was dropped
        while len(stack) > match:
            idx = stack.pop()
            order.append(("post", idx))
        calls[idx].outputs = list(e.get("outputs") or ())
    while stack:
        order.append(("post", stack.pop()))
    return calls, order


def _mark(calls: list[_Call], depth: int | None) -> None:
    """Decide what each call is: a node (it calls nothing, or it is at ``depth``), a cluster,
    or hidden inside a node. Parents come before their children in ``calls``."""
    for c in calls:
        parent = calls[c.parent] if c.parent is not None else None
        if parent is not None and (parent.visible or parent.hidden):
            c.hidden = True
        elif not c.children or (depth is not None and path_depth(c.path) >= depth):
            c.visible = True


class _Builder:
    def __init__(self, calls: list[_Call], classes: dict[str, str]) -> None:
        self.calls = calls
        self.classes = classes
        self.diagram = Diagram("dataflow", classes.get("", "dataflow"))
        self.producer: dict[int, str] = {}  # tid -> id of the node that produced it
        self.edges: set[tuple[str, str]] = set()
        self.call_ids: dict[int, str] = {}
        self.clusters: dict[int, str] = {}  # call index -> its cluster id
        counts: dict[str, int] = {}
        for c in calls:
            counts[c.path] = counts.get(c.path, 0) + 1
        self.reused = {p for p, n in counts.items() if n > 1}
        self.ordinal: dict[int, int] = {}  # call index -> 1, 2, ... among its module's calls
        seen: dict[str, int] = {}
        for i, c in enumerate(calls):
            seen[c.path] = seen.get(c.path, 0) + 1
            self.ordinal[i] = seen[c.path]

    def build(self, order: list[tuple[str, int]]) -> Diagram:
        for what, i in order:
            c = self.calls[i]
            if c.hidden:
                continue
            if what == "pre":
                self._enter(i, c)
            else:
                self._leave(i, c)
        return self.diagram

    def _title(self, i: int, c: _Call, cluster: bool = False) -> str:
        """``fc1: Linear`` for a node, ``layer1 (Sequential)`` for a cluster; a reused module
        adds which of its calls this is."""
        cls = self.classes.get(c.path)
        name = c.path or "(model)"
        title = name if cls is None else f"{name} ({cls})" if cluster else f"{name}: {cls}"
        return f"{title} [call {self.ordinal[i]}]" if c.path in self.reused else title

    def _enclosing(self, c: _Call) -> str | None:
        """The cluster a call's node (or a tensor it consumes) sits in: its parent's."""
        return self.clusters.get(c.parent) if c.parent is not None else None

    def _enter(self, i: int, c: _Call) -> None:
        if c.parent is None:  # a top-level call: its tensor arguments are the graph's inputs
            self._inputs(c)
        if c.visible:
            node_id = f"n{i}"
            self.call_ids[i] = node_id
            kind = "collapsed" if c.children else "call"
            lines = [self._title(i, c), "in: " + _shapes(c.inputs)]
            data = {"path": c.path, "call": c.call, "cls": self.classes.get(c.path),
                    "inputs": _plain(c.inputs), "outputs": []}
            self.diagram.add_node(Node(node_id, lines, kind, self._enclosing(c), data))
            for s in c.inputs:
                if s is not None and s.get("tid") is not None:
                    self._edge(self._source(s, c), node_id)
        elif c.path:  # a call with drawn calls inside: a cluster (the root module frames the graph)
            cid = f"{c.path}#{i}"
            cls = self.classes.get(c.path)
            self.diagram.add_cluster(Cluster(cid, self._title(i, c, cluster=True), self._enclosing(c),
                                             {"path": c.path, "call": c.call, "cls": cls}))
            self.clusters[i] = cid

    def _leave(self, i: int, c: _Call) -> None:
        if c.visible:
            node = self.diagram.nodes[self.call_ids[i]]
            node.lines.append("out: " + _shapes(c.outputs))
            node.data["outputs"] = _plain(c.outputs)
            for s in c.outputs:
                if s is not None and s.get("tid") is not None:
                    self.producer[s["tid"]] = node.id
        elif i in self.clusters:
            # Outputs no inner call returned were computed by this module's own code.
            passed = {s.get("tid") for s in c.inputs if s is not None}
            for s in c.outputs:
                if s is not None and s.get("tid") is not None and s["tid"] not in self.producer \
                        and s["tid"] not in passed:
                    self._tensor_node(s, self.clusters[i])
        if c.parent is None:
            self._outputs(i, c)

    def _inputs(self, c: _Call) -> None:
        fresh = [s for s in c.inputs if s is not None and s.get("tid") is not None and s["tid"] not in self.producer]
        for k, s in enumerate(fresh):
            node_id = f"in{s['tid']}"
            label = "input" if len(fresh) == 1 else f"input {k}"
            self.diagram.add_node(Node(node_id, [label, shape_str(s["shape"])], "input", None, _plain([s])[0]))
            self.producer[s["tid"]] = node_id

    def _outputs(self, i: int, c: _Call) -> None:
        outs = [s for s in c.outputs if s is not None and s.get("tid") is not None]
        for k, s in enumerate(outs):
            node_id = f"out{i}_{k}"
            label = "output" if len(outs) == 1 else f"output {k}"
            self.diagram.add_node(Node(node_id, [label, shape_str(s["shape"])], "output", None, _plain([s])[0]))
            self._edge(self._source(s, c), node_id)

    def _source(self, s: dict, consumer: _Call) -> str:
        """The node that produced tensor ``s``; a tensor no drawn call produced is computed by
        the code of the module around ``consumer``."""
        source = self.producer.get(s["tid"])
        return source if source is not None else self._tensor_node(s, self._enclosing(consumer))

    def _tensor_node(self, s: dict, cluster: str | None) -> str:
        node_id = f"t{s['tid']}"
        data = {**_plain([s])[0], "note": "computed outside every drawn module call"}
        self.diagram.add_node(Node(node_id, ["tensor", shape_str(s["shape"])], "tensor", cluster, data))
        self.producer[s["tid"]] = node_id
        return node_id

    def _edge(self, source: str, target: str) -> None:
        if source != target and (source, target) not in self.edges:
            self.edges.add((source, target))
            self.diagram.add_edge(source, target)


def _shapes(summaries: list) -> str:
    shown = [shape_str(s["shape"]) for s in summaries if s is not None]
    return ", ".join(shown) if shown else "-"


def _plain(summaries: list) -> list:
    """Summaries reduced to what the node-link form keeps (shape, dtype, tid)."""
    return [None if s is None else {"shape": list(s["shape"]), "dtype": s.get("dtype"), "tid": s.get("tid")}
            for s in summaries]
