"""The module tree diagram: one node per module of ``named_modules``, an edge per parent-child
registration (labelled with the attribute name), so a module shared by two parents is drawn once
with an edge from each.

One code path: a model is first written as the fields of a ``model`` event (plain data, see
``modscope.events``; ``model_event_fields``) and the diagram is drawn from that data
(``build_module_tree_from_event``), so the tree of a live model, of a recorded trace and the
one the TUI shows are the same drawing. Nothing here imports the engine: a model is read
through ``nn.Module``'s public methods.
"""

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
    params = [{"path": path, "shape": list(p.shape), "dtype": p.dtype.name, "numel": p.numel(),
               "requires_grad": bool(p.requires_grad), "aliases": param_paths[id(p)][1:]}
              for path, p in model.named_parameters(prefix=prefix)]
    owners = dict(model.named_modules(prefix=prefix))
    buffers = [{"path": path, "shape": list(b.shape), "dtype": b.dtype.name, "numel": b.numel(),
                "persistent": _persistent(owners, path)}
               for path, b in model.named_buffers(prefix=prefix)]
    return {"model": prefix or type(model).__name__, "modules": modules, "params": params, "buffers": buffers}


def _persistent(owners: dict[str, Any], path: str) -> bool:
    owner, _, name = path.rpartition(".")
    return name not in getattr(owners.get(owner), "_non_persistent_buffers_set", ())


def build_module_tree_from_event(event: dict[str, Any], depth: int | None = None) -> Diagram:
    """The ``Diagram`` of a ``model`` event (or its fields), drawn as ``build_module_tree``
    describes. Works on plain data alone (no engine). A parameter tied into two modules counts
    in both only when the event lists its ``aliases`` (``model_event_fields`` does). Raises
    ``ValueError`` for an event without modules."""
    check_depth(depth)
    modules = event["modules"]
    if not modules:
        raise ValueError("the model event lists no modules")
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


def _require_module(model: Any) -> None:
    if not (hasattr(model, "named_modules") and hasattr(model, "named_children")):
        raise TypeError(f"expected an nn.Module, got {type(model).__name__}")


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
