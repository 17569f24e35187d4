"""``modscope export``: load a model, run it once if the diagram needs it, write the diagram.

Every failure the user can cause (bad target, input shape the model rejects, output that cannot
be written, ``dot`` missing) is an ``ExportError`` or ``TargetError`` with a one-line message.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..capture.attribution import attribute_modules
from ..capture.backends import UntraceableError, backend_for
from ..capture.diagrams import model_event_fields
from ..capture.target import Target, load_target, parse_shape
from ..capture.values import tensors_in
from ..graph import build_autograd_graph
from ..views.diagrams import Diagram, DotNotFoundError, build_dataflow, render
from ..views.diagrams.fold import BUDGET, check_budget, fit, model_event_in
from ..views.diagrams.tree import build_module_tree_from_event

WHATS = ("tree", "autograd", "dataflow")
FORMATS = ("dot", "svg", "png", "pdf", "mermaid", "json")
SUFFIXES = {".dot": "dot", ".gv": "dot", ".svg": "svg", ".png": "png", ".pdf": "pdf", ".mmd": "mermaid",
            ".mermaid": "mermaid", ".json": "json"}


class ExportError(Exception):
    """An export that cannot be done; the message is one line."""


def export(target: str, what: str, output: str | os.PathLike, *, fmt: str | None = None,
           input_shape: str | None = None, depth: int | None = None, tokens: int | None = None,
           fold: bool = True, budget: int = BUDGET,
           progress: Callable[[str], None] = lambda message: None) -> Path:
    """Write diagram ``what`` of the model ``target`` names to ``output`` as ``fmt`` (default:
    from ``output``'s suffix) and return the path written. ``input_shape`` (``"1,1,28,28"``)
    overrides the example's default input; ``tokens`` makes it integer token ids in
    ``[0, tokens)``; ``progress`` is told each stage as it starts. A diagram over ``budget``
    nodes is folded (repeated blocks, wide fan-outs, then depth; a note at its top says what)
    unless ``fold`` is false (``--no-fold``).
    Raises ``ExportError`` or ``TargetError``."""
    if what not in WHATS:
        raise ExportError(f"unknown diagram {what!r}: choose one of {', '.join(WHATS)}")
    try:
        check_budget(budget)
    except ValueError as exc:
        raise ExportError(f"--budget: {exc}") from None
    path = Path(output)
    fmt = resolve_format(path, fmt)
    check_writable(path)
    shape = parse_shape(input_shape) if input_shape is not None else None
    progress(f"loading {target}")
    loaded = with_tokens(load_target(target), tokens)
    progress(f"building the {what} diagram")
    diagram = build(loaded, what, shape, depth, fold=fold, budget=budget)
    progress(f"writing {fmt} to {path}" if fmt in ("dot", "mermaid", "json") else f"rendering {fmt} with dot")
    return write(diagram, path, fmt)


def resolve_format(path: Path, fmt: str | None) -> str:
    """``fmt`` if given, else the format ``path``'s suffix implies; ``ExportError`` otherwise."""
    if fmt is None:
        fmt = SUFFIXES.get(path.suffix.lower())
        if fmt is None:
            raise ExportError(f"cannot tell the format from {path.name!r}: give --format ({', '.join(FORMATS)})")
    if fmt not in FORMATS:
        raise ExportError(f"unknown format {fmt!r}: choose one of {', '.join(FORMATS)}")
    return fmt


def check_writable(path: Path) -> None:
    """Fail early, before any work, when ``path`` cannot be created."""
    parent = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise ExportError(f"cannot write {path}: it is a directory")
    if not parent.is_dir():
        raise ExportError(f"cannot write {path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise ExportError(f"cannot write {path}: permission denied")


def with_tokens(target: Target, tokens: int | None) -> Target:
    """``target`` whose example input is integer token ids in ``[0, tokens)`` (``None``: as is)."""
    if tokens is None:
        return target
    if tokens < 1:
        raise ExportError(f"--tokens must be a positive integer, got {tokens}")
    return dataclasses.replace(target, dtype="int64", high=tokens)


def check_traceable(model: Any) -> None:
    """``ExportError`` for a model whose hooks never fire (TorchScript, ``torch.compile``)."""
    try:
        backend_for(model).check_traceable(model)
    except UntraceableError as exc:
        raise ExportError(str(exc)) from exc


def build(target: Target, what: str, shape: tuple[int, ...] | None, depth: int | None, *, fold: bool = True,
          budget: int = BUDGET) -> Diagram:
    """The diagram ``what`` of ``target``'s model, folded to ``budget`` nodes unless ``fold`` is
    false (``views.diagrams.fold.fit``); runs one forward for ``autograd`` and ``dataflow``."""
    model = target.model
    if what == "tree":
        event = model_event_fields(model)
        return fit(build_module_tree_from_event(event, depth), event, fold=fold, budget=budget, depth=depth)
    check_traceable(model)
    x = target.example_input(shape)
    if what == "autograd":
        with attribute_modules(model):
            out = _forward(model, x)
        root = _scalar_root(out)
        diagram = build_autograd_graph(root, model, depth=depth)
        event = model_event_fields(model) if fold and len(diagram.nodes) > budget else None
        return fit(diagram, event, fold=fold, budget=budget, depth=depth)
    from ..tracing import trace

    # Dataflow needs forward events only: the forward runs without grad, so no backward
    # machinery is set up at all.
    with trace(model, graph=False) as tr, target.no_grad():
        _forward(model, x)
    return fit(build_dataflow(tr.events, depth), model_event_in(tr.events), fold=fold, budget=budget, depth=depth)


def _forward(model: Any, x: Any) -> Any:
    try:
        return model(x)
    except Exception as exc:  # noqa: BLE001 - any rejection by the model is the user's input
        raise ExportError(f"the model rejected an input of shape {tuple(x.shape)}: {_one_line(exc)}") from exc


def _scalar_root(out: Any) -> Any:
    """The tensor to draw from: the output itself when it is one scalar, else the sum of every
    output that requires grad."""
    tensors = [t for t in tensors_in(out) if t.requires_grad]
    if not tensors:
        raise ExportError("the model's output does not require grad: there is no autograd graph to draw")
    if len(tensors) == 1 and tensors[0].numel() == 1:
        return tensors[0]
    total = tensors[0].sum()
    for t in tensors[1:]:
        total = total + t.sum()
    return total


def write(diagram: Diagram, path: Path, fmt: str) -> Path:
    """Write ``diagram`` to ``path`` as ``fmt``; ``OSError`` and a missing ``dot`` become
    ``ExportError``."""
    try:
        if fmt == "dot":
            path.write_text(diagram.to_digraph().source, encoding="utf-8")
        elif fmt == "mermaid":
            path.write_text(diagram.to_mermaid(), encoding="utf-8")
        elif fmt == "json":
            path.write_text(json.dumps(diagram.to_node_link(), indent=1) + "\n", encoding="utf-8")
        else:
            render(diagram, path, fmt)
    except DotNotFoundError as exc:
        raise ExportError(str(exc)) from exc
    except OSError as exc:
        raise ExportError(f"cannot write {path}: {exc.strerror or exc}") from exc
    return path


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__

