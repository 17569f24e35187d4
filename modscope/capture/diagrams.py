"""Diagrams of live objects, capture's half: a model's module tree and the autograd graph behind
a tensor, turned into the plain data of a ``model`` or ``graph`` event through the model's
backend (engine or torch). ``modscope.graph`` hands that data to ``views.diagrams``, which draws
it: one drawing code path for live models, recorded traces and the TUI (capture never imports
views).
"""

from __future__ import annotations

from typing import Any

from .._gc import gc_paused
from ..events.records import dtype_name
from .backends import backend_for
from .values import tensors_in


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


def autograd_event_fields(output: Any, model: Any = None) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The fields of a ``graph`` event for the backward graph from ``output`` (a tensor, or
    tuples/lists/dicts of tensors) back to the leaves, and what a drawing reads of the ``model``
    event (its name and each module's class; ``None`` without ``model``). Parameters are named
    by ``model.named_parameters()`` when given. Raises ``ValueError`` if no output requires grad
    (see ``modscope.graph.build_autograd_graph``, which draws them)."""
    outputs = list(tensors_in(output))
    if not outputs:
        raise ValueError(f"expected a tensor (or tensors) to draw the graph of, got {type(output).__name__}")
    for i, t in enumerate(outputs):
        if t.grad_fn is None and not t.requires_grad:
            raise ValueError(f"output {i} does not require grad: it has no backward graph to draw")
    with gc_paused():
        params = dict(model.named_parameters()) if model is not None else {}
        event = backend_for(outputs[0]).graph_event_fields(outputs, params)
        model_event = None if model is None else {
            "model": type(model).__name__,
            "modules": [{"path": path, "cls": type(m).__name__} for path, m in model.named_modules()],
            "params": _tied_params(model)}
    return event, model_event


def _tied_params(model: Any) -> list[dict[str, Any]]:
    """``[{"path", "aliases"}]`` for each parameter registered under more than one path (tied
    weights): the op using it tells no module (module inference, ``views.diagrams``)."""
    paths: dict[int, list[str]] = {}
    for path, p in model.named_parameters(remove_duplicate=False):
        paths.setdefault(id(p), []).append(path)
    return [{"path": found[0], "aliases": found[1:]} for found in paths.values() if len(found) > 1]


def _require_module(model: Any) -> None:
    if not (hasattr(model, "named_modules") and hasattr(model, "named_children")):
        raise TypeError(f"expected an nn.Module, got {type(model).__name__}")
