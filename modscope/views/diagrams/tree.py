"""The module tree diagram: one node per module of ``named_modules``, an edge per parent-child
registration (labelled with the attribute name), so a module shared by two parents is drawn once
with an edge from each.

One code path: a live model is first written as the fields of a ``model`` event (plain data;
``capture.diagrams.model_event_fields``) and the diagram is drawn from that data here
(``build_module_tree_from_event``), so the tree of a live model, of a recorded trace and the
one the TUI shows are the same drawing.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from .diagram import Diagram, Node, check_depth, gc_paused, shorten


def build_module_tree_from_event(event: dict[str, Any], depth: int | None = None) -> Diagram:
    """The ``Diagram`` of a ``model`` event (or its fields), drawn as ``build_module_tree``
    describes. Works on plain data alone (no engine). A parameter tied into two modules counts
    in both only when the event lists its ``aliases`` (``model_event_fields`` does). Raises
    ``ValueError`` for an event without modules."""
    check_depth(depth)
    modules = event["modules"]
    if not modules:
        raise ValueError("the model event lists no modules")
    with gc_paused():  # 10,000 modules: allocation bursts made the collector rescan the heap
        return _draw(event, modules, depth)


def _draw(event: dict[str, Any], modules: list[dict[str, Any]], depth: int | None) -> Diagram:
    tree = _Tree(modules)
    levels = tree.shallowest_depths()
    own, numel = _own_params(event["params"], tree)
    diagram = Diagram("module_tree", event["model"])
    shown = [m for m in modules if m["path"] in levels and (depth is None or levels[m["path"]] <= depth)]
    ids = {m["path"]: f"n{i}" for i, m in enumerate(shown)}
    for m in shown:
        path = m["path"]
        below = tree.descendants(path)
        hidden = 0 if depth is None or levels[path] < depth else len(below)
        total = sum(numel[k] for k in set().union(own.get(path, ()), *(own.get(d, ()) for d in below)))
        own_count = sum(numel[k] for k in own.get(path, ()))
        diagram.add_node(_module_node(ids[path], m, levels[path], hidden, total, own_count))
    for parent, child, name in tree.registrations():
        if parent in ids and child in ids:
            diagram.add_edge(ids[parent], ids[child], label=name, kind="child")
    return diagram


class _Tree:
    """The registrations of a ``model`` event's modules, by their first paths."""

    def __init__(self, modules: list[dict[str, Any]]) -> None:
        self.root = modules[0]["path"]
        self.first = {alias: m["path"] for m in modules for alias in m["aliases"]}
        self.known = {m["path"] for m in modules}
        # path -> [(attribute name, child's first path)], every registration in order
        self.children = {m["path"]: [(name, self.resolve(_join(m["path"], name))) for name in m["children"]]
                         for m in modules}

    def resolve(self, path: str) -> str:
        """The first path of the module at ``path`` (a shared module's other paths are aliases)."""
        return self.first.get(path, path)

    def shallowest_depths(self) -> dict[str, int]:
        """Breadth-first over registrations: each module's smallest depth below the root."""
        levels = {self.root: 0}
        queue = deque([self.root])
        while queue:
            path = queue.popleft()
            for _, child in self.children.get(path, ()):
                if child in self.known and child not in levels:
                    levels[child] = levels[path] + 1
                    queue.append(child)
        return levels

    def descendants(self, path: str) -> set[str]:
        """Every module below ``path`` (each once, however many paths reach it)."""
        seen: set[str] = set()
        stack = [path]
        while stack:
            for _, child in self.children.get(stack.pop(), ()):
                if child in self.known and child not in seen and child != path:
                    seen.add(child)
                    stack.append(child)
        return seen

    def registrations(self) -> list[tuple[str, str, str]]:
        """``(parent, child, attribute name)`` for every registration of a submodule, each once."""
        return [(parent, child, name) for parent, kids in self.children.items() for name, child in kids
                if child in self.known]


def _own_params(params: list[dict[str, Any]], tree: _Tree) -> tuple[dict[str, set[int]], list[int]]:
    """Module path -> indices of the parameters it holds itself (a tied parameter in each of
    its modules), and each parameter's element count."""
    own: dict[str, set[int]] = {}
    for k, p in enumerate(params):
        for path in (p["path"], *p.get("aliases", ())):
            own.setdefault(tree.resolve(path.rpartition(".")[0]), set()).add(k)
    return own, [p["numel"] for p in params]


def _join(parent: str, name: str) -> str:
    return f"{parent}.{name}" if parent else name


def _module_node(node_id: str, m: dict[str, Any], level: int, hidden: int, params: int, own: int) -> Node:
    path, cls, extra, aliases = m["path"], m["cls"], m["extra_repr"], list(m["aliases"])
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
