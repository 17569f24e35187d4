"""Writing a ``Diagram`` as Mermaid ``flowchart`` text (for Markdown: GitHub, docs sites).

Nodes keep the diagram's ids (``n0``...), clusters become nested ``subgraph`` blocks named
``c0``..., node kinds become ``classDef`` styles with the graphviz colours.
"""

from __future__ import annotations

from .diagram import Diagram, Node

# Node kind -> Mermaid style (the graphviz palette of dot.STYLES).
CLASS_DEFS: dict[str, str] = {
    "module": "fill:#e8eefc,stroke:#555",
    "op": "fill:#d3d3d3,stroke:#555",
    "leaf": "fill:#add8e6,stroke:#555",
    "output": "fill:#caff70,stroke:#555",
    "saved": "fill:#ffa500,stroke:#555",
    "collapsed": "fill:#cfd8f0,stroke:#333,stroke-width:2px",
    "call": "fill:#e8eefc,stroke:#555",
    "input": "fill:#add8e6,stroke:#555",
    "tensor": "fill:#ffffff,stroke:#555,stroke-dasharray:4 3",
}
NOTE_STYLE = "fill:#fff8dc,stroke:#b8860b,stroke-dasharray:3 3"
# Mermaid node shapes: ("open", "close") around the quoted label.
SHAPES = {"input": ("([", "])"), "tensor": ("([", "])")}


def to_mermaid(diagram: Diagram) -> str:
    """``flowchart TB`` text: nested ``subgraph`` blocks for clusters, then every edge, then
    the class definitions and assignments. A diagram with ``notes`` starts with a ``fold_note`` box
    holding them. Labels are quoted with ``"`` escaped as ``#quot;``
    and lines joined by ``<br/>``."""
    out = ["flowchart TB"]
    if diagram.notes:  # a visible box at the top saying what was folded and how to expand it
        out.append(f'    fold_note["{_text(diagram.notes)}"]')
    sub, held = diagram.children_of()
    names = {cid: f"c{i}" for i, cid in enumerate(diagram.clusters)}
    out.extend(_node_line(n, 1) for n in held.get(None, ()))
    # Nested blocks without recursion: ("open", cluster) and ("close", cluster) markers.
    stack: list[tuple[str, str, int]] = [("open", c.id, 1) for c in reversed(sub.get(None, ()))]
    while stack:
        action, cid, level = stack.pop()
        pad = "    " * level
        if action == "close":
            out.append(f"{pad}end")
            continue
        out.append(f'{pad}subgraph {names[cid]}["{_text([diagram.clusters[cid].label])}"]')
        out.extend(_node_line(n, level + 1) for n in held.get(cid, ()))
        stack.append(("close", cid, level))
        stack.extend(("open", c.id, level + 1) for c in reversed(sub.get(cid, ())))
    for e in diagram.edges:
        arrow = "-.-" if e.kind == "saved" else "-->"
        label = f'|"{_text([e.label])}"|' if e.label else ""
        out.append(f"    {e.source} {arrow}{label} {e.target}")
    if diagram.notes:
        out.append(f"    classDef note {NOTE_STYLE}")
        out.append("    class fold_note note")
    kinds: dict[str, list[str]] = {}
    for n in diagram.nodes.values():
        kinds.setdefault(n.kind, []).append(n.id)
    for kind, ids in kinds.items():
        if kind in CLASS_DEFS:
            out.append(f"    classDef {kind} {CLASS_DEFS[kind]}")
            out.append(f"    class {','.join(ids)} {kind}")
    return "\n".join(out) + "\n"


def _node_line(node: Node, level: int) -> str:
    open_, close = SHAPES.get(node.kind, ("[", "]"))
    return f'{"    " * level}{node.id}{open_}"{_text(node.lines)}"{close}'


def _text(lines: list[str]) -> str:
    """Mermaid-safe label text: entity codes for the characters its parser treats specially."""
    escaped = [line.replace("&", "#amp;").replace('"', "#quot;").replace("<", "#lt;").replace(">", "#gt;")
               for line in lines]
    return "<br/>".join(escaped)
