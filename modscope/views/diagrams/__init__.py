"""Diagrams drawn from events (plain data, no framework): a model's module tree, the autograd
graph and the dataflow between module calls, as a ``Diagram`` that writes itself as a graphviz
``Digraph``, Mermaid text or a JSON node-link dict, and ``render`` (the one way modscope runs
graphviz's ``dot``). The public entry points for live models are in ``modscope.graph``.
"""

from __future__ import annotations

from .autograd import build_autograd_graph_from_event
from .dataflow import build_dataflow
from .diagram import Cluster, Diagram, Edge, Node
from .dot import DotNotFoundError, render
from .fold import BUDGET, fit, model_event_in
from .tree import build_module_tree_from_event

__all__ = ["BUDGET", "Cluster", "Diagram", "DotNotFoundError", "Edge", "Node", "build_autograd_graph_from_event",
           "build_dataflow", "build_module_tree_from_event", "fit", "model_event_in", "render"]
