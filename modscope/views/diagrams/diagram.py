"""``Diagram``: the one graph model behind every modscope diagram.

The builders (``tree.py``, ``autograd.py``, ``dataflow.py``) describe what to draw as nodes,
edges and nested clusters; the writers turn that one description into a graphviz ``Digraph``
(``dot.py``), Mermaid text (``mermaid.py``) or a JSON node-link dict (``nodelink.py``), so the
three forms of a diagram always show the same graph.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ..._gc import gc_paused  # noqa: F401  (re-exported: the diagram builders import it from here)


@dataclass(slots=True)
class Node:
    """One box. ``lines`` is the label, one entry per line (writers choose how to break lines);
    ``kind`` selects the style (see ``dot.STYLES``); ``cluster`` is the id of the cluster that
    holds it (``None``: top level); ``data`` is what ``to_node_link`` exports besides the label."""

    id: str
    lines: list[str]
    kind: str
    cluster: str | None = None
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Edge:
    """An arrow ``source -> target``; ``kind`` selects the style (``"saved"`` edges are dashed)."""

    source: str
    target: str
    label: str | None = None
    kind: str = "flow"


@dataclass(slots=True)
class Cluster:
    """A box around nodes: a module. Clusters nest through ``parent`` (``None``: top level)."""

    id: str
    label: str
    parent: str | None = None
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class Diagram:
    """Nodes, edges and clusters of one diagram, in drawing order.

    ``kind`` is ``"module_tree"``, ``"autograd"`` or ``"dataflow"``; ``name`` titles it;
    ``notes`` say what was folded (``fold.fit``).
    Every edge's endpoints and every node's cluster exist in the diagram (the builders
    guarantee it; ``check`` verifies it)."""

    kind: str
    name: str
    nodes: dict[str, Node] = field(default_factory=dict)
    edges: list[Edge] = field(default_factory=list)
    clusters: dict[str, Cluster] = field(default_factory=dict)
    # What was left out to keep the drawing readable and how to show it (``fold.fit``); the
    # writers print these at the top of the drawing. Empty: everything is drawn.
    notes: list[str] = field(default_factory=list)

    def add_node(self, node: Node) -> Node:
        self.nodes[node.id] = node
        return node

    def add_edge(self, source: str, target: str, label: str | None = None, kind: str = "flow") -> None:
        self.edges.append(Edge(source, target, label, kind))

    def add_cluster(self, cluster: Cluster) -> Cluster:
        self.clusters[cluster.id] = cluster
        return cluster

    def check(self) -> None:
        """Raise ``ValueError`` if an edge or a node refers to something not in the diagram."""
        for e in self.edges:
            for end in (e.source, e.target):
                if end not in self.nodes:
                    raise ValueError(f"edge {e.source} -> {e.target}: no node {end!r}")
        for n in self.nodes.values():
            if n.cluster is not None and n.cluster not in self.clusters:
                raise ValueError(f"node {n.id}: no cluster {n.cluster!r}")
        for c in self.clusters.values():
            if c.parent is not None and c.parent not in self.clusters:
                raise ValueError(f"cluster {c.id}: no parent cluster {c.parent!r}")

    def children_of(self) -> tuple[dict[str | None, list[Cluster]], dict[str | None, list[Node]]]:
        """Clusters and nodes grouped by the cluster that holds them (``None``: top level),
        each in insertion order: what the writers need to emit nested blocks."""
        sub: dict[str | None, list[Cluster]] = {}
        for c in self.clusters.values():
            sub.setdefault(c.parent, []).append(c)
        held: dict[str | None, list[Node]] = {}
        for n in self.nodes.values():
            held.setdefault(n.cluster, []).append(n)
        return sub, held

    def to_digraph(self) -> Any:
        """This diagram as a ``graphviz.Digraph`` (renders inline in notebooks)."""
        from .dot import to_digraph

        return to_digraph(self)

    def to_mermaid(self) -> str:
        """This diagram as Mermaid ``flowchart`` text."""
        from .mermaid import to_mermaid

        return to_mermaid(self)

    def to_node_link(self) -> dict[str, Any]:
        """This diagram as a JSON-serialisable node-link dict (networkx's layout)."""
        from .nodelink import to_node_link

        return to_node_link(self)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        """Jupyter: the diagram as SVG laid out by graphviz (``views.notebook``)."""
        from ..notebook import diagram_bundle

        return diagram_bundle(self)


def shape_str(shape: Any) -> str:
    """``(64, 1, 28, 28)``: shapes are written as tuples in every diagram (``()`` for scalars)."""
    return _shape_str(tuple(shape))


@lru_cache(maxsize=4096)  # large graphs repeat a handful of shapes thousands of times
def _shape_str(dims: tuple) -> str:
    return "(" + ", ".join(str(int(d)) for d in dims) + ("," if len(dims) == 1 else "") + ")"


def path_depth(path: str) -> int:
    """How deep a module path is: ``""`` (the root) 0, ``"layer1"`` 1, ``"layer1.0"`` 2."""
    return 0 if not path else path.count(".") + 1


def path_prefix(path: str, depth: int) -> str:
    """The ancestor of ``path`` at ``depth`` (``path`` itself when it is not deeper)."""
    if depth <= 0:
        return ""
    parts = path.split(".")
    return ".".join(parts[:depth]) if len(parts) > depth else path


def check_depth(depth: int | None) -> None:
    """``depth`` must be ``None`` or an ``int >= 0``; say so in a ``ValueError`` otherwise."""
    if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int) or depth < 0):
        raise ValueError(f"depth must be None or an integer >= 0, got {depth!r}")


def shorten(text: str, limit: int = 60) -> str:
    """One line of at most ``limit`` characters (long ``extra_repr`` strings are cut with '...')."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
