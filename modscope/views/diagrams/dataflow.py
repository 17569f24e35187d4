"""The dataflow diagram: module calls as nodes with their input and output shapes, and an edge
wherever a tensor one call returned is passed to another (what torchview draws), built from
the ``forward_pre``/``forward`` events of a trace (see ``modscope.events``).

Tensors are followed by their ``tid``: an edge goes from the call that returned tensor ``t`` to
every later call that takes ``t``. Calls that contain other calls are drawn as clusters around
them, down to ``depth``; a call at ``depth`` (or one that calls nothing) is a node.

A tensor no drawn call returned was made by functional code (``F.relu(self.bn1(x))``, ``a + b``,
``torch.flatten``). When the trace has a ``graph`` event for the drawn step (the autograd graph
of the first step, its nodes labelled with the module call that made them), the edges follow
such tensors through the graph: from the input of a call back through the nodes no drawn call
made (functional ops; a module's own code counts as functional when the module is a cluster) to
the drawn calls whose outputs they derive from. Those edges are labelled with the ops passed
through (``relu``, ``+, relu``, ``max_pool2d``) when there are at most ``FEW_OPS`` of them; a
source reached only through more is left out when a nearer one exists (a residual stream would
otherwise link every block to every later one). Where the tensor ids already connect two calls,
that edge is kept as it is. A call that made no graph node and returned its input as is (an
empty ``nn.Sequential`` shortcut under torch) takes over that input's graph nodes from then on,
as its tensor id does. The graph only sees what requires grad, so a tensor computed from the
model's input alone still has no source there (it stays a ``tensor`` node).

Without a ``graph`` event (traced with ``graph=False``, or a later step) module events cannot
say where such a tensor came from: it is drawn as its own node, ``input`` when it entered the
model, else ``tensor`` inside the module whose own code computed it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .diagram import Cluster, Diagram, Node, check_depth, gc_paused, path_depth, shape_str

FEW_OPS = 3  # an edge through at most this many functional ops is labelled with them


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
    nodes. Tensors made by functional ops are followed through the trace's ``graph`` event
    when it has one for that step (see the module docstring); without one (``graph=False``)
    they are drawn as ``tensor`` nodes, as module events alone allow. Raises ``ValueError``
    when there is no module call to draw."""
    check_depth(depth)
    with gc_paused():  # a 10,000-call trace: the collector rescanning the events was most of the time
        return _build(list(getattr(trace, "events", trace)), depth, step)


def _build(events: list[dict], depth: int | None, step: int | None) -> Diagram:
    classes = _classes(events)
    step = _step(events, step)
    calls, order = _calls(events, step)
    if not calls:
        where = "" if step is None else f" in step {step}"
        raise ValueError(f"no module calls (forward_pre/forward events) to draw{where}")
    _mark(calls, depth)
    graph = next((e for e in events if e.get("kind") == "graph" and e.get("step") == step), None)
    return _Builder(calls, classes, None if graph is None else _Graph(graph, calls)).build(order)


def _step(events: list[dict], step: int | None) -> int | None:
    """``step``, or the step of the first module call."""
    if step is not None:
        return step
    return next((e.get("step") for e in events if e.get("kind") in ("forward_pre", "forward")), None)


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


class _Graph:
    """The ``graph`` event read for the dataflow: which drawn call (node) made each autograd node,
    and, walking back from a call's nodes through the functional ones, which drawn calls its
    inputs derive from and through which ops."""

    def __init__(self, event: dict, calls: list[_Call]) -> None:
        self.calls = calls
        self.nodes: dict[int, dict] = {n["id"]: n for n in event.get("nodes", ()) if isinstance(n, dict)}
        self.outputs: list[dict] = [o for o in event.get("outputs") or () if isinstance(o, dict)]
        index: dict[tuple[str, int | None], int] = {}
        for i, c in enumerate(calls):
            index.setdefault((c.path, c.call), i)
            index.setdefault((c.path, None), i)  # a graph node without ``call``: the module's first
        # graph node id -> the call that made it (innermost, as labelled), and the drawn node
        # (a visible call) it belongs to; ``None``: functional for the dataflow
        self.made_by: dict[int, int] = {}
        self.owner: dict[int, int] = {}
        self.owned: dict[int, list[int]] = {}  # visible call -> its graph nodes
        for nid, n in self.nodes.items():
            if n.get("module") is None:
                continue
            i = index.get((n["module"], n.get("call")))
            if i is None:
                continue
            self.made_by[nid] = i
            v = self._visible(i)
            if v is not None:
                self.owner[nid] = v
                self.owned.setdefault(v, []).append(nid)
        self.memo: dict[int, dict[int, tuple[int, tuple[str, ...]]]] = {}

    def _visible(self, i: int) -> int | None:
        """The drawn node a call's autograd nodes belong to: the call, or the call drawn as a
        node around it; ``None`` for a cluster (its own code is functional here)."""
        c = self.calls[i]
        while c.hidden and c.parent is not None:
            i = c.parent
            c = self.calls[i]
        return i if c.visible else None

    def call_sources(self, i: int) -> tuple[dict[int, tuple[int, tuple[str, ...]]], list[int]]:
        """The drawn calls the inputs of visible call ``i`` derive from: call -> (how many
        functional ops lie between, the first ``FEW_OPS`` of them in forward order); and the
        graph nodes of those inputs."""
        starts = []
        for nid in self.owned.get(i, ()):
            for j in self.nodes[nid].get("inputs") or ():
                if j is not None and self.owner.get(j) != i and j not in starts:
                    starts.append(j)
        found = self._merge(starts)
        return found, [j for j in starts if self.memo.get(j)]

    def pass_through(self, i: int, nodes: list[int]) -> None:
        """Visible call ``i`` made no graph node and returned its input, whose graph nodes are
        ``nodes``: later uses of them come through ``i`` (as its tensor id says)."""
        if i in self.owned or not nodes:
            return
        for nid in nodes:
            self.owner[nid] = i
        self.memo.clear()

    def output_sources(self, top: int, s: dict, used: set[int]) -> dict[int, tuple[int, tuple[str, ...]]] | None:
        """The sources of output ``s`` of top-level call ``top``, if the graph was recorded from
        that call's output (matched by shape among the graph's outputs not ``used`` yet)."""
        for k, o in enumerate(self.outputs):
            if k in used or list(o.get("shape", ())) != list(s["shape"]) or not self._made_within(o["id"], top):
                continue
            used.add(k)
            return self._merge([o["id"]])
        return None

    def _made_within(self, nid: int, top: int) -> bool:
        i = self.made_by.get(nid)
        while i is not None and i != top:
            i = self.calls[i].parent
        return i == top

    def _merge(self, starts: list[int]) -> dict[int, tuple[int, tuple[str, ...]]]:
        out: dict[int, tuple[int, tuple[str, ...]]] = {}
        for j in starts:
            _keep_nearest(out, self._sources(j))
        return _pruned(out)

    def _sources(self, start: int) -> dict[int, tuple[int, tuple[str, ...]]]:
        """The drawn calls graph node ``start`` derives from through functional nodes only
        (memoised; iterative, so long chains of ops do not hit the recursion limit)."""
        memo = self.memo
        stack = [(start, False)]
        while stack:
            nid, ready = stack.pop()
            if nid in memo:
                continue
            own = self.owner.get(nid)
            node = self.nodes.get(nid)
            if own is not None or node is None:
                memo[nid] = {own: (0, ())} if own is not None else {}
                continue
            inputs = [j for j in node.get("inputs") or () if j is not None]
            if not ready:
                stack.append((nid, True))
                stack.extend((j, False) for j in inputs if j not in memo)
                continue
            op = _op_label(node.get("op", ""))
            found: dict[int, tuple[int, tuple[str, ...]]] = {}
            for j in inputs:
                for src, (count, ops) in memo.get(j, {}).items():
                    if op is not None:
                        count, ops = count + 1, (ops + (op,))[:FEW_OPS]
                    _keep_nearest(found, {src: (count, ops)})
            memo[nid] = _pruned(found)
        return memo[start]


def _keep_nearest(into: dict, more: dict) -> None:
    for src, (count, ops) in more.items():
        if src not in into or count < into[src][0]:
            into[src] = (count, ops)


def _pruned(found: dict[int, tuple[int, tuple[str, ...]]]) -> dict[int, tuple[int, tuple[str, ...]]]:
    """The sources within ``FEW_OPS`` ops; if there are none, the nearest ones."""
    if not found:
        return found
    near = {k: v for k, v in found.items() if v[0] <= FEW_OPS}
    if near:
        return near
    least = min(v[0] for v in found.values())
    return {k: v for k, v in found.items() if v[0] == least}


_TRANSPARENT = {"BackwardHookFunction", "AccumulateGrad"}  # not ops of the model's code
_SYMBOLS = {"Add": "+", "Sub": "-", "Mul": "*", "Div": "/"}
_POOL = re.compile(r"^(\w*?)Pool(\d)D(?:WithIndices)?$")


def _op_label(op: str) -> str | None:
    """``ReluBackward0`` -> ``relu``, ``AddBackward0`` -> ``+``, ``MaxPool2DWithIndicesBackward0``
    -> ``max_pool2d``; ``None`` for nodes that are no op of the model's code (backward hooks)."""
    name = re.sub(r"Backward\d*$", "", op.rsplit("::", 1)[-1])
    if not name or name in _TRANSPARENT:
        return None
    if name in _SYMBOLS:
        return _SYMBOLS[name]
    pool = _POOL.match(name)
    if pool:
        return f"{_snake(pool.group(1))}_pool{pool.group(2)}d".lstrip("_")
    return _snake(name)


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def _ops_text(count: int, ops: tuple[str, ...]) -> str | None:
    if count == 0:
        return None
    if count <= FEW_OPS:
        return ", ".join(ops)
    return f"{', '.join(ops)}, ... ({count} ops)"


class _Builder:
    def __init__(self, calls: list[_Call], classes: dict[str, str], graph: _Graph | None = None) -> None:
        self.calls = calls
        self.classes = classes
        self.graph = graph
        # with a graph: tensors a cluster's own code returned, drawn only if the graph cannot
        # tell where they came from (tid -> (summary, cluster)), and what it told (tid -> edges)
        self.pending: dict[int, tuple[dict, str]] = {}
        self.derived: dict[int, list[tuple[str, str | None]]] = {}
        self.graph_outputs_used: set[int] = set()
        self.tid_nodes: dict[int, list[int]] = {}  # tid -> its graph nodes, where one call told
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
            if self.graph is None:
                for s in c.inputs:
                    if s is not None and s.get("tid") is not None:
                        self._edge(self._source(s, c), node_id)
            else:
                self._connect(i, c, node_id)
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
                    if self.graph is not None and s["tid"] in self.tid_nodes:  # returned an input as is
                        self.graph.pass_through(i, self.tid_nodes[s["tid"]])
        elif i in self.clusters:
            # Outputs no inner call returned were computed by this module's own code.
            passed = {s.get("tid") for s in c.inputs if s is not None}
            for s in c.outputs:
                if s is not None and s.get("tid") is not None and s["tid"] not in self.producer \
                        and s["tid"] not in passed:
                    if self.graph is None:
                        self._tensor_node(s, self.clusters[i])
                    else:
                        self.pending[s["tid"]] = (s, self.clusters[i])
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
            found = None
            if self.graph is not None and s["tid"] not in self.producer:
                found = self.graph.output_sources(i, s, self.graph_outputs_used)
            if found:
                for src, label_ in self._drawn(found):
                    self._edge(src, node_id, label_)
            else:
                self._edge(self._source(s, c), node_id)

    def _connect(self, i: int, c: _Call, node_id: str) -> None:
        """The edges into visible call ``i`` when there is a graph: by tensor id where a drawn
        call returned the tensor, else through the graph (asked once per call, remembered per
        tensor when the call had one such input), else from a ``tensor`` node as without it."""
        unresolved = []
        for s in c.inputs:
            if s is None or s.get("tid") is None:
                continue
            if s["tid"] in self.producer:
                self._edge(self.producer[s["tid"]], node_id)
            elif s["tid"] in self.derived:
                for src, label in self.derived[s["tid"]]:
                    self._edge(src, node_id, label)
            else:
                unresolved.append(s)
        if not unresolved:
            return
        sources, starts = self.graph.call_sources(i)
        found = self._drawn(sources)
        if len(unresolved) == 1 and found:
            self.derived[unresolved[0]["tid"]] = found
            self.tid_nodes[unresolved[0]["tid"]] = starts
        for src, label in found:
            self._edge(src, node_id, label)
        if not found:
            for s in unresolved:
                self._edge(self._source(s, c), node_id)

    def _drawn(self, found: dict[int, tuple[int, tuple[str, ...]]]) -> list[tuple[str, str | None]]:
        """Graph sources (call index -> ops) as (node id, edge label), nearest first; calls not
        drawn yet (the graph and the events disagree) are left out."""
        ordered = sorted(found.items(), key=lambda kv: (kv[1][0], kv[0]))
        return [(self.call_ids[k], _ops_text(*v)) for k, v in ordered if k in self.call_ids]

    def _source(self, s: dict, consumer: _Call) -> str:
        """The node that produced tensor ``s``; a tensor no drawn call produced is computed by
        the code of the module around ``consumer``."""
        source = self.producer.get(s["tid"])
        if source is not None:
            return source
        if s["tid"] in self.pending:  # computed by a cluster's own code: drawn in that cluster
            return self._tensor_node(*self.pending.pop(s["tid"]))
        return self._tensor_node(s, self._enclosing(consumer))

    def _tensor_node(self, s: dict, cluster: str | None) -> str:
        node_id = f"t{s['tid']}"
        data = {**_plain([s])[0], "note": "computed outside every drawn module call"}
        self.diagram.add_node(Node(node_id, ["tensor", shape_str(s["shape"])], "tensor", cluster, data))
        self.producer[s["tid"]] = node_id
        return node_id

    def _edge(self, source: str, target: str, label: str | None = None) -> None:
        if source != target and (source, target) not in self.edges:
            self.edges.add((source, target))
            self.diagram.add_edge(source, target, label)


def _shapes(summaries: list) -> str:
    shown = [shape_str(s["shape"]) for s in summaries if s is not None]
    return ", ".join(shown) if shown else "-"


def _plain(summaries: list) -> list:
    """Summaries reduced to what the node-link form keeps (shape, dtype, tid)."""
    return [None if s is None else {"shape": list(s["shape"]), "dtype": s.get("dtype"), "tid": s.get("tid")}
            for s in summaries]
