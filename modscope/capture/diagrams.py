"""Diagrams of live objects: a model's module tree and the autograd graph behind a tensor.

Each is turned into the plain data of a ``model`` or ``graph`` event here, through the model's
backend (engine or torch), and drawn from that data by ``views.diagrams``: one drawing code path
for live models, recorded traces and the TUI.
"""

from __future__ import annotations

from typing import Any

from ..events.records import dtype_name
from ..views.diagrams.autograd import build_autograd_graph_from_event
from ..views.diagrams.diagram import Diagram, check_depth, gc_paused
from ..views.diagrams.tree import build_module_tree_from_event
from .backends import backend_for
from .values import tensors_in


def build_module_tree(model: Any, depth: int | None = None) -> Diagram:
    """The ``Diagram`` of ``model``'s module tree.

    Each node shows the module's path (its first name, as ``named_modules`` gives it), its
    class with ``extra_repr`` and the number of parameters in its subtree (shared parameters
    counted once). ``depth=k`` keeps the modules at most ``k`` registrations below the root
    (a module reachable along several paths counts at its shallowest); a node whose
    submodules were cut says how many."""
    check_depth(depth)
    _require_module(model)
    return build_module_tree_from_event(model_event_fields(model), depth)


def model_event_fields(model: Any, prefix: str = "") -> dict[str, Any]:
    """The fields of a ``model`` event for ``model`` (paths start with ``prefix``).

    ``modules`` lists every module once, in ``named_modules`` order, with the names of all its
    children (a shared child's second name too) and its other paths (``aliases``); ``params``
    and ``buffers`` list each tensor once under its first path. Beyond the protocol's fields a
    parameter lists its other paths in ``aliases`` (a parameter tied into two modules), so
    each module's parameter count includes it."""
    _require_module(model)
    paths: dict[int, list[str]] = {}
    for path, m in model.named_modules(remove_duplicate=False, prefix=prefix):
        paths.setdefault(id(m), []).append(path)
    modules = [{"path": path, "cls": type(m).__name__, "extra_repr": m.extra_repr(), "training": bool(m.training),
                "children": [name for name, child in m._modules.items() if child is not None],
                "aliases": paths[id(m)][1:]}
               for path, m in model.named_modules(prefix=prefix)]
    param_paths: dict[int, list[str]] = {}
    for path, p in model.named_parameters(prefix=prefix, remove_duplicate=False):
        param_paths.setdefault(id(p), []).append(path)
    params = [{"path": path, "shape": list(p.shape), "dtype": dtype_name(p.dtype), "numel": p.numel(),
               "requires_grad": bool(p.requires_grad), "aliases": param_paths[id(p)][1:]}
              for path, p in model.named_parameters(prefix=prefix)]
    owners = dict(model.named_modules(prefix=prefix))
    buffers = [{"path": path, "shape": list(b.shape), "dtype": dtype_name(b.dtype), "numel": b.numel(),
                "persistent": _persistent(owners, path)}
               for path, b in model.named_buffers(prefix=prefix)]
    return {"model": prefix or type(model).__name__, "modules": modules, "params": params, "buffers": buffers}


def _persistent(owners: dict[str, Any], path: str) -> bool:
    owner, _, name = path.rpartition(".")
    return name not in getattr(owners.get(owner), "_non_persistent_buffers_set", ())


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

    The graph goes through ``graph_event_fields`` and is drawn by
    ``build_autograd_graph_from_event``."""
    check_depth(depth)
    outputs = list(tensors_in(output))
    if not outputs:
        raise ValueError(f"expected a tensor (or tensors) to draw the graph of, got {type(output).__name__}")
    for i, t in enumerate(outputs):
        if t.grad_fn is None and not t.requires_grad:
            raise ValueError(f"output {i} does not require grad: it has no backward graph to draw")
    with gc_paused():
        params = dict(model.named_parameters()) if model is not None else {}
        event = backend_for(outputs[0]).graph_event_fields(outputs, params)
        # Of the model event the drawing reads the name and each module's class only.
        model_event = None if model is None else {
            "model": type(model).__name__,
            "modules": [{"path": path, "cls": type(m).__name__} for path, m in model.named_modules()]}
        return build_autograd_graph_from_event(event, model_event, depth=depth, show_saved=show_saved)


def _require_module(model: Any) -> None:
    if not (hasattr(model, "named_modules") and hasattr(model, "named_children")):
        raise TypeError(f"expected an nn.Module, got {type(model).__name__}")
