"""The module tree: ``named_modules`` with class, parameters, train/eval, timing, a grad-norm
sparkline and NaN/Inf or dead-output badges.

What it costs is what is on screen: children are created when a node is first expanded (with a
bare name for a label), a module's full label is built only when its line is drawn, and
``refresh_labels`` looks at the visible lines only. A node expanded with 10,000 children costs
their nodes and their widths (for the horizontal scroll range), not 10,000 labels."""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text
from textual import events
from textual.geometry import Region, Size
from textual.message import Message
from textual.strip import Strip
from textual.widgets import Tree
from textual.widgets._tree import _TreeLine
from textual.widgets.tree import TreeNode

from ..state import ModuleInfo
from ..step_values import StepValues

BARS = "▁▂▃▄▅▆▇█"
OUTSIDE = "  called outside the model"
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


def label_parts(m: ModuleInfo, root_name: str) -> list[tuple[str, str]]:
    """(text, style) pieces of a module's label: name, class, parameters, eval, fwd/bwd time,
    grad-norm sparkline, NaN/Inf and dead badges (those that apply)."""
    parts = [(m.name or root_name, "bold"), (f" {m.cls}", "cyan")]
    if m.total_params:
        parts.append((f" {format_count(m.total_params)}p", "green"))
    if not m.training:
        parts.append((" eval", "yellow"))
    if m.fwd_ns:
        parts.append((f" {m.fwd_ns / 1e6:.2f}ms", "dim"))
    if m.no_backward:  # no backward of its own (no input needs a gradient): no time to show
        parts.append(("/—", "dim"))
    elif m.bwd_ns:
        parts.append((f"/{m.bwd_ns / 1e6:.2f}ms", "dim"))
    if m.grad_norms:
        parts.append((f" {sparkline(m.grad_norms)}", "magenta"))
    if m.nonfinite:
        parts.append((" NaN/Inf", "bold white on red"))
    if m.dead:
        parts.append((" dead", "bold black on yellow"))
    return parts


def module_label(m: ModuleInfo, root_name: str) -> Text:
    return Text.assemble(*label_parts(m, root_name))


def label_width(m: ModuleInfo, root_name: str) -> int:
    """Cells ``module_label`` takes, without building it."""
    return sum(cell_len(text) for text, _ in label_parts(m, root_name))


class ModuleTree(Tree[str]):
    """Tree of module paths. Posts ``ModuleTree.Selected`` when the highlighted module changes;
    ``select_path`` (from another view) expands the ancestors and moves the cursor."""

    DEFAULT_CSS = """
    ModuleTree { border: round $primary 60%; border-title-color: $text; overflow-x: hidden; }
    ModuleTree:focus { border: round $accent; }
    /* A model too big to open expanded keeps its vertical scrollbar: expanding a node of
       thousands of children would show it, and showing it lays the screen out a second time. */
    ModuleTree.-large { overflow-y: scroll; }
    """

    class Selected(Message):
        def __init__(self, path: str) -> None:
            self.path = path
            super().__init__()

    def __init__(self, **kwargs) -> None:
        super().__init__("(waiting for a model)", data="", **kwargs)
        self.border_title = "Modules"
        self.modules: dict[str, ModuleInfo] = {}
        # how many modules it was built with: ``modules`` is the state's own dict, which grows in
        # place when the program calls another root (a loss module), so its length says nothing
        self.built_with = 0
        self.root_name = ""
        self._node_by_path: dict[str, TreeNode[str]] = {}
        self._populated: set[str] = set()
        self._labels: dict[str, Text] = {}  # path -> its label as last drawn (visible lines only)
        self._widths: dict[str, int] = {}  # path -> its label's width (kept for every node created)
        self._outside: list[str] = []  # roots called outside the model (listed under it, marked)
        self.labels_built = 0  # module labels built so far (the tests count them)
        self.badges: dict[str, Text] = {}  # path -> a comparison's badge (``d``), appended to its label
        self.step_values: StepValues | None = None  # a step the timeline stays on: its timings are shown
        self.show_root = True
        self._render_style: Style | None = None  # the widget's style, during one render_lines

    def set_model(self, modules: dict[str, ModuleInfo], order: list[str], root_name: str) -> None:
        """(Re)build from the model structure; keeps what was expanded when paths still exist."""
        expanded = {p for p, n in self._node_by_path.items() if n.is_expanded}
        self.modules, self.root_name, self.built_with = modules, root_name, len(modules)
        self.set_class(len(modules) > AUTO_EXPAND_LIMIT, "-large")
        self.clear()
        self._node_by_path = {}
        self._populated = set()
        self._labels, self._widths = {}, {}
        root_path = "" if "" in modules else (order[0] if order else "")
        root_info = modules.get(root_path)
        if root_info is None:
            return
        # Modules the program called outside the model (a loss module: ``criterion(out, y)``)
        # are roots of their own; they are listed under the model, marked, after its children.
        inside = {f"{root_path}.{c}" if root_path else c for c in root_info.children}
        self._outside = [p for p in order if p and p != root_path and "." not in p and p not in inside]
        self.root.data = root_path
        self._node_by_path[root_path] = self.root
        self.root.set_label(self._build_label(root_path))  # the one label always built: the model at a glance
        self._populate(self.root)
        self.root.expand()
        if not expanded and len(modules) <= AUTO_EXPAND_LIMIT:  # a small model opens two levels deep
            expanded = {p for p in order if p and p.count(".") == 0 and modules[p].children}
        for path in sorted(expanded, key=len):
            node = self._node_by_path.get(path)
            if node is not None:
                self._populate(node)
                node.expand()

    def _name_label(self, info: ModuleInfo) -> Text:
        """The label a node is created with: its name. The full label is built when it is drawn."""
        return Text(info.name or self.root_name, style="bold")

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
        if path == self.root.data:
            out += [(other, other) for other in self._outside]
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
            is_alias = child != (f"{path}.{name}" if path else name) and child not in self._outside
            if is_alias:
                node.add_leaf(Text.assemble((name, "bold"), (f" → {child} (shared)", "magenta")), data=child)
                continue
            has_children = bool(info.children)
            new = node.add(self._name_label(info), data=child, allow_expand=has_children)
            self._node_by_path[child] = new
            self._widths[child] = label_width(self._info(child), self.root_name) + \
                (cell_len(OUTSIDE) if child in self._outside else 0)

    def _is_module_node(self, node: TreeNode[str]) -> bool:
        """A module's own node (not the leaf that names a shared module a second time)."""
        return node.data is not None and self._node_by_path.get(node.data) is node

    def _label_of(self, path: str) -> Text:
        """The module's label, built now when it has not been drawn yet."""
        label = self._labels.get(path)
        if label is None:
            label = self._build_label(path)
        return label

    def _info(self, path: str) -> ModuleInfo:
        """The module's facts as shown: with the timings of the step the timeline stays on."""
        info = self.modules[path]
        return info if self.step_values is None else self.step_values.module(info)

    def _build_label(self, path: str) -> Text:
        label = module_label(self._info(path), self.root_name)
        if path in self._outside:
            label.append(OUTSIDE, style="dim italic")
        badge = self.badges.get(path)
        if badge is not None:
            label.append_text(badge)
        self.labels_built += 1
        self._labels[path] = label
        was = self._widths.get(path)
        self._widths[path] = label.cell_len
        if was is not None and label.cell_len > was:
            self._widen_for(path)
        return label

    def _widen_for(self, path: str) -> None:
        """The scroll range (and so the modules column, ``app._fit_left``) as wide as ``path``'s
        line now that its label grew. Every label built goes through here: a label built as its
        line is drawn (after ``set_step_values`` or a scroll dropped the old one) grew unseen
        when only ``refresh_labels`` widened, and the column stayed a cell short of its widest
        label, or not, depending on which came first (a snapshot test's flake)."""
        node = self._node_by_path.get(path)
        if node is None or self._tree_lines_cached is None or node._line < 0:
            return  # not among the lines: ``_build`` measures it when the lines are built
        width = self._indent(node) + self._widths[path] + cell_len(self.ICON_NODE) * node._allow_expand
        if width > self.virtual_size.width:
            self.virtual_size = Size(width, self.virtual_size.height)

    def process_label(self, label: str | Text) -> Text:
        """A one-line ``Text`` is taken as it is (Tree's own splits every label into lines: a
        cost on each of 10,000 children added at once)."""
        if isinstance(label, Text) and "\n" not in label.plain:
            return label
        return super().process_label(label)

    def render_label(self, node: TreeNode[str], base_style: Style, style: Style) -> Text:
        """Tree draws a line's label through this (only lines on screen, and only when the line
        changed): a module's node gets its full label here, built from the module's facts."""
        if self._is_module_node(node) and node.data in self.modules:
            # Tree's render_label reads the node's label attribute; ``set_label`` would also
            # schedule a repaint of the line being drawn right now.
            node._label = self._label_of(node.data)
        text = super().render_label(node, base_style, style)
        # A label wider than the pane ends in "…" (the pane does not scroll sideways: what was
        # cut, the sparkline first, is one z away). Tree's line cache is keyed on the width.
        room = self.scrollable_content_region.width - self._indent(node)
        if 0 < room < text.cell_len:
            text.truncate(room, overflow="ellipsis")
        return text

    def _indent(self, node: TreeNode[str]) -> int:
        """The cells of tree guides before ``node``'s label (Tree's ``_get_guide_width``)."""
        depth, parent = 0, node.parent
        while parent is not None:
            depth, parent = depth + 1, parent.parent
        if not self.show_root:
            depth = max(0, depth - 1)
        return depth * self.guide_depth

    def get_label_width(self, node: TreeNode[str]) -> int:
        """Tree asks this of every line when the lines are rebuilt (expand, collapse): the width
        is kept per module, so no label is built for lines that are not drawn."""
        width = self._widths.get(node.data) if self._is_module_node(node) else None
        if width is None:
            return super().get_label_width(node)
        return width + (cell_len(self.ICON_NODE) if node.allow_expand else 0)

    def _build(self) -> None:
        """Tree's own line building (the lines in order, each node's ``_line``, the widest line,
        the cursor kept on its node), written as one loop per parent: Tree's recursion and
        per-line width calls were most of an expand's time on a node of 10,000 children."""
        lines: list[_TreeLine[str]] = []
        add = lines.append
        widest = 0
        widths, by_path = self._widths, self._node_by_path
        icon, guide = cell_len(self.ICON_NODE), self.guide_depth

        def add_children(path: list[TreeNode[str]], children: list[TreeNode[str]], lasts: bool) -> None:
            nonlocal widest
            indent = len(path) * guide  # Tree's guide width: a line's depth below the first level
            final = len(children) - 1
            for i, node in enumerate(children):
                node_path = [*path, node]
                node._line = len(lines)
                add(_TreeLine(node_path, lasts or i == final))
                width = widths.get(node.data) if by_path.get(node.data) is node else None
                if width is None:
                    width = super(ModuleTree, self).get_label_width(node)
                elif node._allow_expand:
                    width += icon
                widest = max(widest, width + indent)
                if node._expanded:
                    add_children(node_path, node._children, False)

        if self.show_root:
            add_children([], [self.root], True)
        else:
            add_children([], self.root._children, True)
        self._tree_lines_cached = lines
        self.virtual_size = Size(widest if lines else self.size.width, len(lines))
        if self.cursor_line != -1:
            if self.cursor_node is not None:
                self.cursor_line = self.cursor_node._line
            if self.cursor_line >= len(lines):
                self.cursor_line = -1

    def _on_resize(self, event: events.Resize) -> None:
        """Tree's own drops every cached line and rebuilds the lines on a resize. Its lines are
        cached by width already, and which lines there are does not depend on the size; but the
        Resize event arrives after the first paint at the new size, so ``z`` (a maximise is a
        resize) drew the whole tree twice. Here only the cache grows to the new height (no
        ``super()``: Textual calls each class's handler unless the default is prevented)."""
        event.prevent_default()
        self._line_cache.grow(event.size.height)

    def render_lines(self, crop: Region) -> list[Strip]:
        # Tree's render_line asks for the widget's style once per line (a walk of its ancestors'
        # styles); it is the same for every line of one render
        self._render_style = self.rich_style
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        style = self._render_style if self._render_style is not None else self.rich_style
        return self._render_line(y + scroll_y, scroll_x, scroll_x + self.size.width, style)

    def on_tree_node_expanded(self, event: Tree.NodeExpanded[str]) -> None:
        self._populate(event.node)

    def on_tree_node_highlighted(self, event: Tree.NodeHighlighted[str]) -> None:
        if event.node.data is not None:
            self.post_message(self.Selected(event.node.data))

    def refresh_labels(self) -> None:
        """Rebuild the labels of the lines on screen whose module changed (and repaint those
        lines only). Labels of lines that left the screen are dropped (and their cached lines
        marked stale): they are built anew when they are scrolled back to."""
        if self._tree_lines_cached is None:
            return  # the lines are rebuilt on the next paint, every visible label drawn anew
        top = self.scroll_offset.y
        visible = set()
        for line in self._tree_lines_cached[top:top + self.size.height]:
            node = line.node
            path = node.data
            if not self._is_module_node(node) or path not in self.modules:
                continue
            visible.add(path)
            old = self._labels.get(path)
            if old is None:
                continue  # not drawn yet: it will be built when it is
            if self._build_label(path) != old:  # (a label that grew widens the column: ``_widen_for``)
                node.refresh()  # a new cache key for its line, and a repaint of it
        for path in [p for p in self._labels if p not in visible]:
            del self._labels[path]
            node = self._node_by_path.get(path)
            if node is not None:
                node.refresh()

    def set_badges(self, badges: dict[str, Text]) -> None:
        """Show a comparison's badges (``{}``: none): the lines on screen are repainted now, the
        others get theirs when they are drawn."""
        if badges == self.badges:
            return
        old, self.badges = self.badges, badges
        for path in set(badges) | set(old):
            self._labels.pop(path, None)  # built anew, with its badge, when its line is drawn
            if path in self._widths:  # the column's width follows the badges (O(1): no label is built)
                was, now = old.get(path), badges.get(path)
                self._widths[path] += (now.cell_len if now else 0) - (was.cell_len if was else 0)
        self._invalidate()  # the lines' widths and cached strips

    def set_step_values(self, values: StepValues | None) -> None:
        """Show the timings of one step (``None``: the latest, as they arrive); the border
        title names the step."""
        if values == self.step_values:
            return
        self.step_values = values
        self.border_title = "Modules" + (f" · step {values.step}" if values is not None else "")
        self._labels.clear()  # built anew when their lines are drawn
        for path in list(self._widths):
            if path in self.modules:
                self._widths[path] = label_width(self._info(path), self.root_name) + \
                    (cell_len(OUTSIDE) if path in self._outside else 0) + \
                    (self.badges[path].cell_len if path in self.badges else 0)
        self._invalidate()

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
            if depth < len(parts) and not node.is_expanded:  # expand() rebuilds every line, even when open
                node.expand()
        node = self._node_by_path.get(path)
        if node is not None:
            self.move_cursor(node)
