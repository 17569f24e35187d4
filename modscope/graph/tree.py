"""The module tree diagram: one node per module of ``named_modules``, an edge per parent-child
registration (labelled with the attribute name), so a module shared by two parents is drawn once
with an edge from each."""

from __future__ import annotations

from collections import deque
from typing import Any

from .diagram import Diagram, Node, check_depth, shorten


def build_module_tree(model: Any, depth: int | None = None) -> Diagram:
    """The ``Diagram`` of ``model``'s module tree.

    Each node shows the module's path (its first name, as ``named_modules`` gives it), its
    class with ``extra_repr`` and the number of parameters in its subtree (shared parameters
    counted once). ``depth=k`` keeps the modules at most ``k`` registrations below the root
    (a module reachable along several paths counts at its shallowest); a node whose
    submodules were cut says how many."""
    check_depth(depth)
    _require_module(model)
    paths = {id(m): path for path, m in model.named_modules()}
    modules = {id(m): m for _, m in model.named_modules()}
    aliases: dict[int, list[str]] = {}
    for path, m in model.named_modules(remove_duplicate=False):
        if path != paths[id(m)]:
            aliases.setdefault(id(m), []).append(path)
    levels = _shallowest_depths(model)
    shown = {key for key, level in levels.items() if depth is None or level <= depth}

    diagram = Diagram("module_tree", type(model).__name__)
    ids = {key: f"n{i}" for i, key in enumerate(k for k in paths if k in shown)}
    for key in ids:
        module = modules[key]
        hidden = 0 if depth is None or levels[key] < depth else _count_descendants(module)
        diagram.add_node(_module_node(ids[key], paths[key], module, levels[key], hidden, aliases.get(key, [])))
    for parent, child, name in _registrations(model):
        if parent in ids and child in ids:
            diagram.add_edge(ids[parent], ids[child], label=name, kind="child")
    return diagram


def _registrations(model: Any) -> list[tuple[int, int, str]]:
    """``(id(parent), id(child), attribute name)`` for every registration of a submodule, a
    module registered twice (under two parents, or two names) included, each once."""
    at_path: dict[str, Any] = {}
    seen: set[tuple[int, int, str]] = set()
    out = []
    for path, m in model.named_modules(remove_duplicate=False):
        at_path[path] = m
        if not path:
            continue
        parent_path, _, name = path.rpartition(".")
        key = (id(at_path[parent_path]), id(m), name)
        if key not in seen:
            seen.add(key)
            out.append(key)
    return out


def _require_module(model: Any) -> None:
    if not (hasattr(model, "named_modules") and hasattr(model, "named_children")):
        raise TypeError(f"expected an nn.Module, got {type(model).__name__}")


def _shallowest_depths(model: Any) -> dict[int, int]:
    """Breadth-first over registrations: each module's smallest depth below the root."""
    levels = {id(model): 0}
    queue = deque([model])
    while queue:
        m = queue.popleft()
        for _, child in m.named_children():
            if id(child) not in levels:
                levels[id(child)] = levels[id(m)] + 1
                queue.append(child)
    return levels


def _count_descendants(module: Any) -> int:
    return sum(1 for _ in module.modules()) - 1


def _module_node(node_id: str, path: str, module: Any, level: int, hidden: int, aliases: list[str]) -> Node:
    cls = type(module).__name__
    extra = module.extra_repr()
    params = sum(p.numel() for p in module.parameters())
    own = sum(p.numel() for p in module.parameters(recurse=False))
    title = f"{cls}({shorten(extra)})" if extra else cls
    lines = [title] if not path else [path, title]
    lines.append(f"{params:,} params")
    if aliases:
        lines.append("also " + ", ".join(aliases))
    if hidden:
        lines.append(f"+{hidden} submodule{'s' if hidden > 1 else ''}")
    data = {"path": path, "cls": cls, "extra_repr": extra, "params": params, "own_params": own,
            "depth": level, "aliases": aliases, "hidden_submodules": hidden}
    return Node(node_id, lines, "module", None, data)
