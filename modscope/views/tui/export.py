"""Export what the TUI shows as files: the autograd graph (at the graph view's depth) or the
module tree, as DOT, SVG and PNG under ``modscope-export/`` in the current directory.

Two steps, so the state lock is held only for copying: ``snapshot_export(state, focused)``
(under ``state.lock``: picks what to export and copies the events it needs) and
``write_export(job)`` (no lock: builds the diagram and runs graphviz, which can take seconds).
``export_current`` does both, for callers that do not mind holding the lock meanwhile.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..diagrams.autograd import build_autograd_graph_from_event
from ..diagrams.dot import INSTALL_HINT, DotNotFoundError, render
from ..diagrams.tree import build_module_tree_from_event
from .state import SessionState
from .widgets.graph_view import AutogradGraphView, without_hook_nodes
from .widgets.module_tree import ModuleTree

EXPORT_DIR = "modscope-export"
RENDERED = ("svg", "png")


class ExportError(RuntimeError):
    """An export that could not be (fully) done; the message says what was written and why."""


@dataclass(frozen=True)
class ExportJob:
    """What to export, copied out of the session state (plain data, safe without the lock)."""

    what: str  # "autograd" | "tree"
    model: str
    graph_event: dict[str, Any] | None
    model_event: dict[str, Any] | None
    depth: int | None


def export_current(state: SessionState, focused: Any, directory: str | Path | None = None) -> list[str]:
    """Export the diagram the user is looking at; returns the paths written. The caller
    holds ``state.lock`` (see the module docstring for the lock-free split)."""
    return write_export(snapshot_export(state, focused), directory)


def snapshot_export(state: SessionState, focused: Any) -> ExportJob:
    """Choose what to export and copy it (caller holds ``state.lock``; fast).

    The autograd graph when ``focused`` is the graph view, or when no view that shows a
    diagram is focused and a graph event exists; else the module tree. The graph is exported
    at the graph view's current depth, without the hook identity nodes when the view hides
    them (or when there is no view). Raises ``ExportError`` when there is nothing yet."""
    model_event = model_event_of(state)
    has_graph = state.graph is not None and bool(state.graph.get("nodes"))
    if has_graph and not isinstance(focused, ModuleTree):
        view = _graph_view(focused)
        depth = view.depth if view is not None else None
        graph = state.graph if view is not None and view.show_hook_nodes else without_hook_nodes(state.graph)[0]
        return ExportJob("autograd", _model_name(state), graph, model_event, depth)
    if model_event is not None:
        return ExportJob("tree", _model_name(state), None, model_event, None)
    raise ExportError("nothing to export yet: no model has arrived")


def write_export(job: ExportJob, directory: str | Path | None = None) -> list[str]:
    """Write ``job``'s diagram as ``<directory>/modscope-export/<model>-<what>-<time>.dot``,
    ``.svg`` and ``.png`` (``directory``: the current one) and return the paths written.

    The DOT file is always written; SVG and PNG need graphviz's ``dot``: without it
    ``ExportError`` names the DOT file and says how to install graphviz."""
    if job.what == "autograd":
        diagram = build_autograd_graph_from_event(job.graph_event, job.model_event, depth=job.depth)
    else:
        diagram = build_module_tree_from_event(job.model_event)
    folder = Path(directory if directory is not None else Path.cwd()) / EXPORT_DIR
    folder.mkdir(parents=True, exist_ok=True)
    stem = _free_stem(folder, f"{_safe(job.model)}-{job.what}-{time.strftime('%Y%m%d-%H%M%S')}")
    dot_path = folder / f"{stem}.dot"
    digraph = diagram.to_digraph()
    dot_path.write_text(digraph.source, encoding="utf-8")
    written = [str(dot_path)]
    for fmt in RENDERED:
        try:
            written.append(str(render(digraph, folder / f"{stem}.{fmt}")))
        except DotNotFoundError:
            raise ExportError(f"wrote {dot_path}, but could not render SVG/PNG: graphviz's `dot` was not found; "
                              f"{INSTALL_HINT}") from None
    return written


def describe_export(job: ExportJob, paths: list[str]) -> str:
    """What was exported and where, for the notification: the diagram, then the folder's full
    path and the file names (a toast cannot fit three full paths)."""
    what = "module tree" if job.what == "tree" else \
        f"autograd graph ({'every module expanded' if job.depth is None else f'depth {job.depth}'})"
    folder = str(Path(paths[0]).parent)
    names = ", ".join(Path(p).name for p in paths)
    return f"exported the {what} of {job.model} to {folder}/: {names}"


def model_event_of(state: SessionState) -> dict[str, Any] | None:
    """The fields of a ``model`` event rebuilt from the state (caller holds ``state.lock``);
    ``None`` before any model arrived. What the graph view (class names on clusters) and
    the module tree export need."""
    if not state.order:
        return None
    modules = [{"path": m.path, "cls": m.cls, "extra_repr": m.extra_repr, "training": m.training,
                "children": list(m.children), "aliases": list(m.aliases)}
               for m in (state.modules[p] for p in state.order)]
    params = [{"path": p.path, "shape": list(p.shape), "dtype": p.dtype, "numel": p.numel,
               "requires_grad": p.requires_grad} for p in state.params.values() if not p.is_buffer]
    buffers = [{"path": p.path, "shape": list(p.shape), "dtype": p.dtype, "numel": p.numel,
                "persistent": p.persistent} for p in state.params.values() if p.is_buffer]
    return {"model": _model_name(state), "modules": modules, "params": params, "buffers": buffers}


def _model_name(state: SessionState) -> str:
    return state.model_name or "model"


def _graph_view(focused: Any) -> AutogradGraphView | None:
    """The graph view: the focused widget, or the one on the focused widget's screen."""
    if isinstance(focused, AutogradGraphView):
        return focused
    if focused is None:
        return None
    try:
        return next(iter(focused.screen.query(AutogradGraphView)), None)
    except Exception:  # noqa: BLE001 - a widget not (or no longer) on a screen
        return None


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._") or "model"


def _free_stem(folder: Path, stem: str) -> str:
    """``stem``, or ``stem-2``, ``stem-3``... when an export of the same second exists."""
    candidate, n = stem, 1
    while (folder / f"{candidate}.dot").exists():
        n += 1
        candidate = f"{stem}-{n}"
    return candidate
