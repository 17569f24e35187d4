"""The module tree: ``named_modules`` with class, parameters, train/eval, timing, a grad-norm
sparkline and NaN/Inf or dead-output badges. Children are created when a node is first
expanded, so a 10,000-module model costs only what is on screen."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.message import Message
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from ..state import ModuleInfo

BARS = "▁▂▃▄▅▆▇█"
AUTO_EXPAND_LIMIT = 300  # models with more modules open with only the root expanded


def sparkline(values: Sequence[float | None], width: int = 12) -> str:
    """Unicode bars for the last ``width`` values, scaled to their own range."""
    vals = [v for v in list(values)[-width:] if v is not None]
    if not vals:
        return ""
    lo, hi = min(vals), max(vals)
    span = hi - lo
    return "".join(BARS[0 if span == 0 else min(int((v - lo) / span * (len(BARS) - 1)), len(BARS) - 1)]
                   for v in vals)


def format_count(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1e6:.1f}M"
    if n >= 1_000:
        return f"{n / 1e3:.1f}k"
    return str(n)


def module_label(m: ModuleInfo, root_name: str) -> Text:
    text = Text()
    text.append(m.name or root_name, style="bold")
    text.append(f" {m.cls}", style="cyan")
    if m.total_params:
        text.append(f" {format_count(m.total_params)}p", style="green")
    if not m.training:
        text.append(" eval", style="yellow")
    if m.fwd_ns:
        text.append(f" {m.fwd_ns / 1e6:.2f}ms", style="dim")
    if m.bwd_ns:
        text.append(f"/{m.bwd_ns / 1e6:.2f}ms", style="dim")
    if m.grad_norms:
        text.append(f" {sparkline(m.grad_norms)}", style="magenta")
    if m.nonfinite:
        text.append(" NaN/Inf", style="bold white on red")
    if m.dead:
        text.append(" dead", style="bold black on yellow")
    return text


class ModuleTree(Tree[str]):
    """Tree of module paths. Posts ``ModuleTree.Selected`` when the highlighted module changes;
    ``select_path`` (from another view) expands the ancestors and moves the cursor."""

    DEFAULT_CSS = """
    ModuleTree { border: round $primary 60%; border-title-color: $text; }
    ModuleTree:focus { border: round $accent; }
    """

    class Selected(Message):
        def __init__(self, path: str) -> None:
            self.path = path
            super().__init__()

    def __init__(self, **kwargs) -> None:
        super().__init__("(waiting for a model)", data="", **kwargs)
        self.border_title = "Modules"
        self.modules: dict[str, ModuleInfo] = {}
        self.root_name = ""
        self._node_by_path: dict[str, TreeNode[str]] = {}
        self._populated: set[str] = set()
        self.show_root = True

    def set_model(self, modules: dict[str, ModuleInfo], order: list[str], root_name: str) -> None:
        """(Re)build from the model structure; keeps what was expanded when paths still exist."""
        expanded = {p for p, n in self._node_by_path.items() if n.is_expanded}
        self.modules, self.root_name = modules, root_name
        self.clear()
        self._node_by_path = {}
        self._populated = set()
        root_path = "" if "" in modules else (order[0] if order else "")
        root_info = modules.get(root_path)
        if root_info is None:
            return
        self.root.data = root_path
        self.root.set_label(module_label(root_info, root_name))
        self._node_by_path[root_path] = self.root
        self._populate(self.root)
        self.root.expand()
        if not expanded and len(modules) <= AUTO_EXPAND_LIMIT:  # a small model opens two levels deep
            expanded = {p for p in order if p and p.count(".") == 0 and modules[p].children}
        for path in sorted(expanded, key=len):
            node = self._node_by_path.get(path)
            if node is not None:
                self._populate(node)
                node.expand()

    def _children(self, path: str) -> list[tuple[str, str]]:
        """(child name, child path) in order; a shared module's second name points at its
        first path."""
        info = self.modules.get(path)
        if info is None:
            return []
        out = []
        for name in info.children:
            child = f"{path}.{name}" if path else name
            if child not in self.modules:
                child = next((m.path for m in self.modules.values() if child in m.aliases), child)
            out.append((name, child))
        return out

    def _populate(self, node: TreeNode[str]) -> None:
        path = node.data or ""
        if path in self._populated:
            return
        self._populated.add(path)
        for name, child in self._children(path):
            info = self.modules.get(child)
            if info is None:
                continue
            is_alias = child != (f"{path}.{name}" if path else name)
            if is_alias:
                node.add_leaf(Text.assemble((name, "bold"), (f" → {child} (shared)", "magenta")), data=child)
                continue
            has_children = bool(info.children)
            new = node.add(module_label(info, self.root_name), data=child, allow_expand=has_children)
            self._node_by_path[child] = new

    def on_tree_node_expanded(self, event: Tree.NodeExpanded[str]) -> None:
        self._populate(event.node)

    def on_tree_node_highlighted(self, event: Tree.NodeHighlighted[str]) -> None:
        if event.node.data is not None:
            self.post_message(self.Selected(event.node.data))

    def refresh_labels(self) -> None:
        """Update the labels of the nodes that exist (the expanded part of the tree)."""
        for path, node in self._node_by_path.items():
            info = self.modules.get(path)
            if info is not None:
                node.set_label(module_label(info, self.root_name))

    def select_path(self, path: str) -> None:
        """Expand down to ``path`` and put the cursor on it."""
        if path not in self.modules:
            return
        parts = path.split(".") if path else []
        for depth in range(len(parts) + 1):
            prefix = ".".join(parts[:depth])
            node = self._node_by_path.get(prefix)
            if node is None:
                return
            self._populate(node)
            if depth < len(parts):
                node.expand()
        node = self._node_by_path.get(path)
        if node is not None:
            self.move_cursor(node)
