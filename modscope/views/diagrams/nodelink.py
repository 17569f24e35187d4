"""Writing a ``Diagram`` as a JSON node-link dict.

The layout is networkx's ``node_link_data`` (``directed``, ``multigraph``, ``graph``,
``nodes``, ``links``), so ``networkx.node_link_graph(d, edges="links")`` loads it; clusters are
listed under ``graph["clusters"]`` with their parents, and each node names its ``cluster``.
"""

from __future__ import annotations

from typing import Any

from .diagram import Diagram


def to_node_link(diagram: Diagram) -> dict[str, Any]:
    """``{"directed": True, "multigraph": False, "graph": {kind, name, clusters, notes}, "nodes":
    [{id, kind, label, cluster, **data}], "links": [{source, target, kind, label?}]}``; every
    value is a JSON type (``json.dumps`` accepts it as is)."""
    nodes = [{"id": n.id, "kind": n.kind, "label": "\n".join(n.lines), "cluster": n.cluster, **n.data}
             for n in diagram.nodes.values()]
    links = []
    for e in diagram.edges:
        link: dict[str, Any] = {"source": e.source, "target": e.target, "kind": e.kind}
        if e.label:
            link["label"] = e.label
        links.append(link)
    clusters = [{"id": c.id, "label": c.label, "parent": c.parent, **c.data} for c in diagram.clusters.values()]
    return {
        "directed": True,
        "multigraph": False,
        "graph": {"kind": diagram.kind, "name": diagram.name, "clusters": clusters,
                  "notes": list(diagram.notes)},
        "nodes": nodes,
        "links": links,
    }
