"""Diagram test helpers: the fixture models (``models``: the engine's, ``define(lib)``: either
framework's), and ``laid_out``, which has graphviz's real ``dot`` lay a diagram out and reads back
what dot understood (nodes, cluster nesting, edges)."""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures"
MODELS_FILE = FIXTURES / "diagram_models.py"
TORCH_MODELS_FILE = FIXTURES / "torch_diagram_models.py"
sys.path.insert(0, str(FIXTURES))

import diagram_models as models  # noqa: E402, F401 - re-exported for the tests
from diagram_models import define  # noqa: E402, F401


@dataclass
class Layout:
    """What ``dot -Tjson`` made of a diagram."""

    labels: dict[str, str]  # node name -> label (lines joined with "\n")
    clusters: dict[str, dict]  # cluster label -> {"nodes": direct node names, "clusters": child labels}
    edges: list[tuple[str, str]]
    top_level: set[str]  # nodes in no cluster

    def cluster_of(self, node: str) -> str | None:
        for label, c in self.clusters.items():
            if node in c["nodes"]:
                return label
        return None

    def nodes_labelled(self, first_line: str) -> list[str]:
        return [n for n, label in self.labels.items() if label.split("\n")[0] == first_line]


def laid_out(diagram) -> Layout:
    """Run the real ``dot`` on the diagram's DOT source and read back its structure."""
    assert shutil.which("dot"), "graphviz's dot must be on PATH (make setup installs it)"
    data = json.loads(diagram.to_digraph().pipe(format="json"))
    objects = data.get("objects", [])
    by_gvid = {o["_gvid"]: o for o in objects}
    n_sub = data.get("_subgraph_cnt", 0)
    labels = {o["name"]: o["label"].replace("\\n", "\n") for o in objects if o["_gvid"] >= n_sub}
    clusters: dict[str, dict] = {}
    placed: set[str] = set()
    for o in objects:
        if o["_gvid"] < n_sub and o["name"].startswith("cluster"):
            inner = {by_gvid[g]["name"] for s in o.get("subgraphs", []) for g in by_gvid[s].get("nodes", [])}
            names = {by_gvid[g]["name"] for g in o.get("nodes", [])}
            clusters[o["label"]] = {"nodes": names - inner,
                                    "clusters": {by_gvid[s]["label"] for s in o.get("subgraphs", [])}}
            placed |= names
    edges = [(by_gvid[e["tail"]]["name"], by_gvid[e["head"]]["name"]) for e in data.get("edges", [])]
    return Layout(labels, clusters, edges, set(labels) - placed)
