"""Writing a ``Diagram`` as graphviz: the ``Digraph`` (DOT source) and rendered files.

Rendering runs graphviz's ``dot`` binary through the ``graphviz`` package. When ``dot`` is not
installed the DOT source is still written next to the requested file and ``DotNotFoundError``
says how to install it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import graphviz

from .diagram import Diagram, Node

# Node kind -> graphviz attributes. Colours follow torchviz where it has a convention (op nodes
# grey, parameters light blue, outputs green, saved tensors orange).
STYLES: dict[str, dict[str, str]] = {
    "module": {"fillcolor": "#e8eefc"},
    "op": {"fillcolor": "lightgrey"},
    "leaf": {"fillcolor": "lightblue"},
    "output": {"fillcolor": "darkolivegreen1"},
    "saved": {"fillcolor": "orange"},
    "collapsed": {"fillcolor": "#cfd8f0", "shape": "box3d"},
    "call": {"fillcolor": "#e8eefc"},
    "input": {"fillcolor": "lightblue", "shape": "oval"},
    "tensor": {"fillcolor": "white", "shape": "oval", "style": "dashed,filled"},
}
EDGE_STYLES: dict[str, dict[str, str]] = {
    "flow": {},
    "child": {},
    "saved": {"style": "dashed", "dir": "none", "color": "darkorange"},
}
GRAPH_ATTRS = {"rankdir": "TB", "fontname": "Helvetica", "fontsize": "11", "ranksep": "0.3",
               "nodesep": "0.25"}
NODE_ATTRS = {"style": "filled", "shape": "box", "fontname": "Helvetica", "fontsize": "10",
              "height": "0.2", "margin": "0.08,0.04"}
EDGE_ATTRS = {"arrowsize": "0.6"}
CLUSTER_ATTRS = {"style": "rounded,filled", "color": "#8a94a6", "fillcolor": "#f7f8fb",
                 "fontname": "Helvetica", "fontsize": "10", "labeljust": "l"}

FORMATS = ("svg", "png", "pdf")
INSTALL_HINT = ("install graphviz (Debian/Ubuntu: `apt-get install graphviz`, macOS: `brew install graphviz`) "
                "and make sure `dot` is on PATH")


class DotNotFoundError(RuntimeError):
    """Graphviz's ``dot`` binary is missing; ``source_path`` is where the DOT source was written."""

    def __init__(self, fmt: str, source_path: Path) -> None:
        super().__init__(f"cannot render {fmt}: graphviz's `dot` program was not found; the DOT source "
                         f"was written to {source_path}; to render, {INSTALL_HINT}")
        self.source_path = source_path


def to_digraph(diagram: Diagram) -> graphviz.Digraph:
    """The diagram as a ``graphviz.Digraph``: clusters become nested ``cluster_*`` subgraphs,
    every edge is declared at the top level."""
    dot = graphviz.Digraph(name=diagram.name, graph_attr=GRAPH_ATTRS, node_attr=NODE_ATTRS,
                           edge_attr=EDGE_ATTRS)
    sub, held = diagram.children_of()
    names = {cid: f"cluster_{i}" for i, cid in enumerate(diagram.clusters)}
    for node in held.get(None, ()):
        _emit_node(dot, node)
    for cluster in sub.get(None, ()):
        dot.subgraph(_cluster_graph(cluster.id, diagram, sub, held, names))
    for e in diagram.edges:
        attrs = EDGE_STYLES.get(e.kind, {})
        if e.label:
            dot.edge(e.source, e.target, label=graphviz.nohtml(e.label), **attrs)
        else:
            dot.edge(e.source, e.target, **attrs)
    return dot


def _cluster_graph(root: str, diagram: Diagram, sub: dict, held: dict, names: dict) -> graphviz.Digraph:
    """The subgraph of cluster ``root`` with its nested clusters, built bottom-up without
    recursion: ``Digraph.subgraph`` copies a child's body, so each child is finished before its
    parent takes it."""
    order: list[str] = []
    stack = [root]
    while stack:
        cid = stack.pop()
        order.append(cid)
        stack.extend(c.id for c in sub.get(cid, ()))
    built: dict[str, graphviz.Digraph] = {}
    for cid in reversed(order):  # children come after their parents in `order`
        cluster = diagram.clusters[cid]
        g = graphviz.Digraph(name=names[cid], graph_attr={**CLUSTER_ATTRS, "label": _dot_label([cluster.label])})
        for node in held.get(cid, ()):
            _emit_node(g, node)
        for child in sub.get(cid, ()):
            g.subgraph(built.pop(child.id))
        built[cid] = g
    return built[root]


def _emit_node(dot: graphviz.Digraph, node: Node) -> None:
    dot.node(node.id, _dot_label(node.lines), **STYLES.get(node.kind, {}))


def _dot_label(lines: list[str]) -> Any:
    """Lines joined by DOT's ``\\n``; backslashes in the text are escaped so they print as
    themselves, and ``nohtml`` keeps a label like ``<lambda>`` from being read as HTML."""
    return graphviz.nohtml("\\n".join(line.replace("\\", "\\\\") for line in lines))


def render(diagram: Diagram | graphviz.Digraph, path: str | os.PathLike, fmt: str | None = None) -> Path:
    """Render to ``path`` as ``fmt`` (``svg``, ``png`` or ``pdf``; default: ``path``'s suffix)
    with graphviz's ``dot`` and return the path written.

    Raises ``DotNotFoundError`` after writing the DOT source to ``path`` with suffix ``.dot``
    when ``dot`` is not installed, ``ValueError`` for an unknown format, ``OSError`` when the
    file cannot be written."""
    path = Path(path)
    fmt = (fmt or path.suffix.lstrip(".")).lower()
    if fmt not in FORMATS:
        raise ValueError(f"cannot render format {fmt!r}: choose one of {', '.join(FORMATS)}")
    dot = diagram.to_digraph() if isinstance(diagram, Diagram) else diagram
    try:
        data = dot.pipe(format=fmt)
    except graphviz.ExecutableNotFound:
        source_path = path.with_suffix(".dot")
        source_path.write_text(dot.source, encoding="utf-8")
        raise DotNotFoundError(fmt, source_path) from None
    path.write_bytes(data)
    return path
