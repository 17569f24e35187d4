"""Writing a ``Diagram`` as graphviz: the ``Digraph`` (DOT source) and rendered files.

Rendering runs graphviz's ``dot`` binary through the ``graphviz`` package. When ``dot`` is not
installed the DOT source is still written next to the requested file and ``DotNotFoundError``
says how to install it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import graphviz

from .diagram import Diagram, Node, gc_paused

# Node kind -> graphviz attributes. Colours follow torchviz where it has a convention (op nodes
# grey, parameters light blue, outputs green, saved tensors orange).
STYLES: dict[str, dict[str, str]] = {
    "module": {"fillcolor": "#e8eefc"},
    "op": {"fillcolor": "lightgrey"},
    "leaf": {"fillcolor": "lightblue"},
    "output": {"fillcolor": "darkolivegreen1"},
    "saved": {"fillcolor": "orange"},
    "collapsed": {"fillcolor": "#cfd8f0", "shape": "box3d", "margin": "0.15,0.08"},
    "call": {"fillcolor": "#e8eefc"},
    "input": {"fillcolor": "lightblue", "shape": "oval"},
    "tensor": {"fillcolor": "white", "shape": "oval", "style": "dashed,filled"},
}
EDGE_STYLES: dict[str, dict[str, str]] = {
    "flow": {},
    "child": {},
    "saved": {"style": "dashed", "dir": "none", "color": "darkorange"},
}
GRAPH_ATTRS = {"rankdir": "TB", "fontname": "Helvetica", "fontsize": "11", "ranksep": "0.3",
               "nodesep": "0.25"}
NODE_ATTRS = {"style": "filled", "shape": "box", "fontname": "Helvetica", "fontsize": "10",
              "height": "0.2", "margin": "0.08,0.04"}
EDGE_ATTRS = {"arrowsize": "0.6", "fontname": "Helvetica", "fontsize": "9"}
CLUSTER_ATTRS = {"style": "rounded,filled", "color": "#8a94a6", "fillcolor": "#f7f8fb",
                 "fontname": "Helvetica", "fontsize": "10", "labeljust": "l"}

FORMATS = ("svg", "png", "pdf")
INSTALL_HINT = ("install graphviz (Debian/Ubuntu: `apt-get install graphviz`, macOS: `brew install graphviz`) "
                "and make sure `dot` is on PATH")


DOT_TIMEOUT_S = 120.0  # a graph dot cannot lay out in this long is too big to read anyway


class DotMissing(RuntimeError):
    """Graphviz's ``dot`` is not installed; the message says how to install it. The one error
    for it, whoever runs ``dot`` (an export, the TUI's graph pane)."""

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or f"graphviz's `dot` was not found: {INSTALL_HINT} to draw the graph")


class DotNotFoundError(DotMissing):
    """``render`` found no ``dot``; ``source_path`` is where the DOT source was written instead."""

    def __init__(self, fmt: str, source_path: Path) -> None:
        super().__init__(f"cannot render {fmt}: graphviz's `dot` program was not found; the DOT source "
                         f"was written to {source_path}; to render, {INSTALL_HINT}")
        self.source_path = source_path


class DotFailed(RuntimeError):
    """``dot`` ran but failed (or took too long); the message says what it reported."""


def run_dot(source: str, fmt: str, dot: str = "dot", timeout: float = DOT_TIMEOUT_S) -> bytes:
    """``dot -T<fmt>`` on ``source`` (found on ``PATH``): its output. The one way modscope runs
    graphviz. Raises ``DotMissing`` when ``dot`` is not installed and ``DotFailed`` when it
    fails or runs longer than ``timeout`` seconds."""
    exe = shutil.which(dot)
    if exe is None:
        raise DotMissing()
    try:
        done = subprocess.run([exe, f"-T{fmt}"], input=source.encode(), capture_output=True, timeout=timeout,
                              check=False)
    except subprocess.TimeoutExpired:
        raise DotFailed(f"graphviz took longer than {timeout:.0f} s: collapse the graph (<)") from None
    if done.returncode != 0:
        message = done.stderr.decode(errors="replace").strip().splitlines()
        raise DotFailed(f"graphviz failed: {message[-1] if message else f'exit status {done.returncode}'}")
    return done.stdout


def to_digraph(diagram: Diagram) -> graphviz.Digraph:
    """The diagram as a ``graphviz.Digraph``: clusters become nested ``cluster_*`` subgraphs,
    every edge is declared at the top level.

    Nodes, clusters and edges are written straight into ``body`` (graphviz's documented list
    of verbatim lines): ``Digraph.node``/``edge`` re-quote every attribute on every call and
    ``subgraph`` re-reads each nested body once per level, which dominated the time for
    10,000-node graphs."""
    with gc_paused():
        return _write(diagram)


def _write(diagram: Diagram) -> graphviz.Digraph:
    dot = graphviz.Digraph(name=diagram.name, graph_attr=GRAPH_ATTRS, node_attr=NODE_ATTRS,
                           edge_attr=EDGE_ATTRS)
    body = dot.body
    sub, held = diagram.children_of()
    names = {cid: f"cluster_{i}" for i, cid in enumerate(diagram.clusters)}
    body.extend(_node_line(node, "\t") for node in held.get(None, ()))
    # Nested blocks without recursion: ("open", cluster) and ("close", cluster) markers.
    stack: list[tuple[str, str, int]] = [("open", c.id, 1) for c in reversed(sub.get(None, ()))]
    while stack:
        action, cid, level = stack.pop()
        indent = "\t" * level
        if action == "close":
            body.append(f"{indent}}}\n")
            continue
        label = _quoted([diagram.clusters[cid].label])
        body.append(f"{indent}subgraph {names[cid]} {{\n{indent}\tgraph [label={label}{_CLUSTER_ATTRS}]\n")
        body.extend(_node_line(node, indent + "\t") for node in held.get(cid, ()))
        stack.append(("close", cid, level))
        stack.extend(("open", c.id, level + 1) for c in reversed(sub.get(cid, ())))
    for e in diagram.edges:
        attrs = ((f" label={_quoted([e.label])}" if e.label else "") + _EDGE_ATTRS.get(e.kind, "")).lstrip()
        body.append(f"\t{e.source} -> {e.target} [{attrs}]\n" if attrs else f"\t{e.source} -> {e.target}\n")
    if diagram.notes:  # last: graph attributes set before a cluster would be inherited by it
        body.append(_note_line(diagram.notes))
    return dot


def _note_line(notes: list[str]) -> str:
    """The graph's own label, at its top left: one left-justified line per note (DOT's ``\\l``)."""
    text = "".join(line.replace("\\", "\\\\").replace('"', '\\"') + "\\l" for line in notes)
    return f'\tlabel="{text}" labelloc=t labeljust=l fontsize=10\n'


def _node_line(node: Node, indent: str) -> str:
    return f"{indent}{node.id} [label={_quoted(node.lines)}{_STYLE_ATTRS.get(node.kind, '')}]\n"


def _quoted(lines: list[str]) -> str:
    """A DOT string literal: lines joined by DOT's ``\\n``, backslashes and quotes in the text
    escaped so they print as themselves (always quoted, so ``<lambda>`` is not read as HTML)."""
    text = "\\n".join(line.replace("\\", "\\\\").replace('"', '\\"') for line in lines)
    return f'"{text}"'


def _attrs(attrs: dict[str, str]) -> str:
    return "".join(f' {k}="{v}"' for k, v in attrs.items())


_STYLE_ATTRS = {kind: _attrs(attrs) for kind, attrs in STYLES.items()}
_EDGE_ATTRS = {kind: _attrs(attrs) for kind, attrs in EDGE_STYLES.items() if attrs}
_CLUSTER_ATTRS = _attrs(CLUSTER_ATTRS)


def render(diagram: Diagram | graphviz.Digraph, path: str | os.PathLike, fmt: str | None = None) -> Path:
    """Render to ``path`` as ``fmt`` (``svg``, ``png`` or ``pdf``; default: ``path``'s suffix)
    with graphviz's ``dot`` and return the path written.

    Raises ``DotNotFoundError`` after writing the DOT source to ``path`` with suffix ``.dot``
    when ``dot`` is not installed, ``ValueError`` for an unknown format, ``OSError`` when the
    file cannot be written."""
    path = Path(path)
    fmt = (fmt or path.suffix.lstrip(".")).lower()
    if fmt not in FORMATS:
        raise ValueError(f"cannot render format {fmt!r}: choose one of {', '.join(FORMATS)}")
    dot = diagram.to_digraph() if isinstance(diagram, Diagram) else diagram
    try:
        data = run_dot(dot.source, fmt)
    except DotMissing:
        source_path = path.with_suffix(".dot")
        source_path.write_text(dot.source, encoding="utf-8")
        raise DotNotFoundError(fmt, source_path) from None
    path.write_bytes(data)
    return path
