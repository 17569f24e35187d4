"""modscope diagrams: a model's module tree, the autograd graph behind a tensor and the dataflow
between module calls, as graphviz ``Digraph`` objects (notebooks render them inline), Mermaid
text or a JSON node-link dict. Engine and torch models alike.

Three diagrams, each in two calls::

    module_tree(model, depth=None)                       -> graphviz.Digraph
    autograd_graph(output, model=None, *, depth=None, show_saved=False)
    dataflow(trace, depth=None)

    build_module_tree(...), build_autograd_graph(...), build_dataflow(...) -> Diagram

and the same diagrams from events (plain data, no framework needed: what the TUI draws)::

    build_module_tree_from_event(model_event, depth=None)
    build_autograd_graph_from_event(graph_event, model_event=None, *, depth=None, show_saved=False)

A ``Diagram`` is the graph itself; ``.to_digraph()``, ``.to_mermaid()`` and ``.to_node_link()``
write it in each form, and ``render(diagram, "out.svg")`` renders it to SVG/PNG/PDF with
graphviz's ``dot`` (``DotNotFoundError``, with the DOT source written, when ``dot`` is missing).

For ``autograd_graph`` to group op nodes by module, run the forward under
``attribute_modules(model)``::

    with modscope.graph.attribute_modules(model):
        out = model(x)
    modscope.graph.autograd_graph(out.sum(), model, depth=2)

This module only wires the two halves together: live objects become event data in
``modscope.capture.diagrams``; ``modscope.views.diagrams`` draws the data.
"""

from __future__ import annotations

from typing import Any

import graphviz

from .capture.attribution import attribute_modules, label_call
from .capture.diagrams import build_autograd_graph, build_module_tree, model_event_fields
from .views.diagrams import (
    Cluster,
    Diagram,
    DotNotFoundError,
    Edge,
    Node,
    build_autograd_graph_from_event,
    build_dataflow,
    build_module_tree_from_event,
    render,
)

__all__ = [
    "Cluster", "Diagram", "DotNotFoundError", "Edge", "Node", "attribute_modules", "autograd_graph",
    "build_autograd_graph", "build_autograd_graph_from_event", "build_dataflow", "build_module_tree",
    "build_module_tree_from_event", "dataflow", "label_call", "model_event_fields", "module_tree", "render",
]


def module_tree(model: Any, depth: int | None = None) -> graphviz.Digraph:
    """The ``named_modules`` tree of ``model``: one node per module (path, class with
    ``extra_repr``, parameter count), shared modules drawn once with an edge from each parent.
    See ``build_module_tree``."""
    return build_module_tree(model, depth).to_digraph()


def autograd_graph(output: Any, model: Any = None, *, depth: int | None = None,
                   show_saved: bool = False) -> graphviz.Digraph:
    """The backward graph from ``output.grad_fn``, op nodes clustered by the module that made
    them, parameters named by path when ``model`` is given. See ``build_autograd_graph``."""
    return build_autograd_graph(output, model, depth=depth, show_saved=show_saved).to_digraph()


def dataflow(trace: Any, depth: int | None = None) -> graphviz.Digraph:
    """Module calls with their input/output shapes, edges following the tensors, from a trace
    (anything with ``.events``) or a list of events. See ``build_dataflow``."""
    return build_dataflow(trace, depth).to_digraph()
