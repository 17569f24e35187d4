"""modscope diagrams: a model's module tree, the autograd graph behind a tensor and the dataflow
between module calls, as graphviz ``Digraph`` objects (notebooks render them inline), Mermaid
text or a JSON node-link dict. Engine and torch models alike.

Three diagrams, each in two calls::

    module_tree(model, depth=None, *, fold=True, budget=400)   -> graphviz.Digraph
    autograd_graph(output, model=None, *, depth=None, show_saved=False, fold=True, budget=400)
    dataflow(trace, depth=None, *, fold=True, budget=400)

    build_module_tree(...), build_autograd_graph(...), build_dataflow(...) -> Diagram

and the same diagrams from events (plain data, no framework needed: what the TUI draws)::

    build_module_tree_from_event(model_event, depth=None)
    build_autograd_graph_from_event(graph_event, model_event=None, *, depth=None, show_saved=False)

A ``Diagram`` is the graph itself; ``.to_digraph()``, ``.to_mermaid()`` and ``.to_node_link()``
write it in each form, and ``render(diagram, "out.svg")`` renders it to SVG/PNG/PDF with
graphviz's ``dot`` (``DotNotFoundError``, with the DOT source written, when ``dot`` is missing).

``autograd_graph`` groups op nodes by the module that made them. Run the forward under
``attribute_modules(model)`` (or ``modscope.trace``) for exact clusters::

    with modscope.graph.attribute_modules(model):
        out = model(x)
    modscope.graph.autograd_graph(out.sum(), model, depth=2)

After a plain forward, given the model, the clusters are inferred from the parameters each op
uses and the order the forward created them (``views.diagrams.inferred_modules``; the drawing's
note says so, and what it cannot place); without the model nothing tells the modules, and the
drawing and a ``UserWarning`` say so and what to call instead.

Big models stay readable: a diagram over ``budget`` nodes has its repeated identical blocks
folded into one node each (``(0-47): 48 × Block``), wide fan-outs grouped into ``+N more`` and,
if still too big, is collapsed to the deepest module depth that fits; a note at the top of the
drawing says what was folded. A diagram within the budget is drawn unchanged; ``fold=False``
draws everything (see ``modscope.views.diagrams.fold``).

This module only wires the two halves together: live objects become event data in
``modscope.capture.diagrams``; ``modscope.views.diagrams`` draws the data.
"""

from __future__ import annotations

import warnings
from typing import Any

import graphviz

from ._gc import gc_paused
from .capture.attribution import attribute_modules, label_call
from .capture.diagrams import autograd_event_fields, model_event_fields
from .views.diagrams import (
    BUDGET,
    Cluster,
    Diagram,
    DotNotFoundError,
    Edge,
    Node,
    build_autograd_graph_from_event,
    build_dataflow,
    build_module_tree_from_event,
    fit,
    model_event_in,
    render,
)
from .views.diagrams.autograd import NO_CLUSTERS
from .views.diagrams.diagram import check_depth
from .views.diagrams.fold import check_budget

__all__ = [
    "Cluster", "Diagram", "DotNotFoundError", "Edge", "Node", "attribute_modules", "autograd_graph",
    "build_autograd_graph", "build_autograd_graph_from_event", "build_dataflow", "build_module_tree",
    "build_module_tree_from_event", "dataflow", "fit", "label_call", "model_event_fields", "module_tree", "render",
]


def build_module_tree(model: Any, depth: int | None = None) -> Diagram:
    """The ``Diagram`` of ``model``'s module tree.

    Each node shows the module's path (its first name, as ``named_modules`` gives it), its
    class with ``extra_repr`` and the number of parameters in its subtree (shared parameters
    counted once). ``depth=k`` keeps the modules at most ``k`` registrations below the root
    (a module reachable along several paths counts at its shallowest); a node whose
    submodules were cut says how many."""
    check_depth(depth)
    return build_module_tree_from_event(model_event_fields(model), depth)


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
    requires grad.

    A graph made outside ``attribute_modules`` (and the tracer) carries no module labels: with
    ``model`` they are inferred from the parameters each op uses and the creation order
    (``views.diagrams.inferred_modules``: never a wrong module, but ops before a module's first
    or after its last parameter use sit in the enclosing module, and modules without
    parameters get no cluster), and the diagram's ``notes`` say so. Where nothing can be
    inferred (no model but a ``depth``; no parameter of the model in the graph) the notes and
    a ``UserWarning`` say why and what to call instead.

    The graph becomes event data in ``capture.diagrams.autograd_event_fields`` and is drawn by
    ``build_autograd_graph_from_event``."""
    diagram = _autograd(output, model, depth, show_saved)
    _warn_unclustered(diagram)
    return diagram


def _autograd(output: Any, model: Any, depth: int | None, show_saved: bool) -> Diagram:
    check_depth(depth)
    event, model_event = autograd_event_fields(output, model)
    with gc_paused():
        return build_autograd_graph_from_event(event, model_event, depth=depth, show_saved=show_saved)


def _warn_unclustered(diagram: Diagram) -> None:
    """A ``UserWarning`` (at the caller's line) when the graph is drawn without module clusters:
    its note says why and what to call instead."""
    if diagram.notes and diagram.notes[0].startswith(NO_CLUSTERS):
        warnings.warn("autograd_graph: " + "; ".join(diagram.notes), UserWarning, stacklevel=3)


def module_tree(model: Any, depth: int | None = None, *, fold: bool = True, budget: int = BUDGET) -> graphviz.Digraph:
    """The ``named_modules`` tree of ``model``: one node per module (path, class with
    ``extra_repr``, parameter count), shared modules drawn once with an edge from each parent.
    Over ``budget`` nodes (unless ``fold=False``) repeated blocks fold, wide fan-outs group and
    the tree is cut to a depth that fits, said in a note at the top (see ``fit``). See
    ``build_module_tree``."""
    check_budget(budget)
    event = model_event_fields(model)  # once: the tree and the blocks' signatures both read it
    return fit(build_module_tree_from_event(event, depth), event, fold=fold, budget=budget, depth=depth).to_digraph()


def autograd_graph(output: Any, model: Any = None, *, depth: int | None = None, show_saved: bool = False,
                   fold: bool = True, budget: int = BUDGET) -> graphviz.Digraph:
    """The backward graph from ``output.grad_fn``, op nodes clustered by the module that made
    them, parameters named by path when ``model`` is given. Over ``budget`` nodes (unless
    ``fold=False``) it is folded as ``module_tree`` says; repeated blocks are recognised only
    when ``model`` is given. See ``build_autograd_graph``."""
    check_budget(budget)
    diagram = _autograd(output, model, depth, show_saved)
    _warn_unclustered(diagram)
    event = model_event_fields(model) if model is not None and fold and len(diagram.nodes) > budget else None
    return fit(diagram, event, fold=fold, budget=budget, depth=depth).to_digraph()


def dataflow(trace: Any, depth: int | None = None, *, fold: bool = True, budget: int = BUDGET) -> graphviz.Digraph:
    """Module calls with their input/output shapes, edges following the tensors, from a trace
    (anything with ``.events``) or a list of events. Over ``budget`` nodes (unless
    ``fold=False``) it is folded as ``module_tree`` says, blocks recognised by the trace's
    ``model`` event. See ``build_dataflow``."""
    check_budget(budget)
    events = list(getattr(trace, "events", trace))
    return fit(build_dataflow(events, depth), model_event_in(events), fold=fold, budget=budget,
               depth=depth).to_digraph()
