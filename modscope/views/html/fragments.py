"""HTML fragments shared by the notebook views and the report: the module tree as nested
``<details>`` (collapsible without a script), the summary table, a rich renderable as HTML, a
diagram as inline SVG. Plain strings, every text escaped; no file is referenced and nothing is
fetched, so a fragment works offline and inside any page.
"""

from __future__ import annotations

import io
from html import escape
from typing import Any

from ..report import _figures, _fmt_bytes, _fmt_count, _fmt_ms, _fmt_params
from ..summary import NO_BACKWARD

OPEN_CHILDREN = 50  # the root's children start expanded when there are at most this many
LABEL_REPR = 80  # characters of extra_repr shown in a tree label

# Scoped by the ``ms`` class so that a notebook's own styles and ours do not mix.
CSS = """
.ms{font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;font-size:13px;color:#1f2328}
.ms h3{font-size:15px;margin:8px 0 4px}
.ms .ms-meta{color:#57606a;margin:2px 0 6px}
.ms ul.ms-tree,.ms ul.ms-tree ul{list-style:none;margin:0;padding-left:16px}
.ms ul.ms-tree{padding-left:0}
.ms ul.ms-tree li{margin:1px 0;white-space:nowrap}
.ms ul.ms-tree li.ms-leaf{padding-left:14px}
.ms summary{cursor:pointer}
.ms .ms-name{font-weight:600}
.ms .ms-cls{color:#0969da}
.ms .ms-xr{color:#6e7781}
.ms .ms-np{color:#1a7f37;margin-left:8px}
.ms .ms-t{color:#9a6700;margin-left:8px}
.ms .ms-alias{color:#8250df;margin-left:8px}
.ms table.ms-table{border-collapse:collapse;font-size:12px}
.ms table.ms-table th,.ms table.ms-table td{padding:2px 8px;border-bottom:1px solid #d0d7de;text-align:right}
.ms table.ms-table th{background:#f6f8fa;position:sticky;top:0}
.ms table.ms-table td.l,.ms table.ms-table th.l{text-align:left}
.ms table.ms-table tfoot td{font-weight:600;border-top:2px solid #8c959f}
.ms pre.ms-rich{font-family:Menlo,"DejaVu Sans Mono",Consolas,monospace;font-size:12px;line-height:1.3;
 margin:0;white-space:pre;overflow-x:auto}
.ms .ms-note{color:#9a6700}
.ms .ms-svg{overflow:auto;max-width:100%}
"""


def style_tag() -> str:
    return f"<style>{CSS}</style>"


def figures(report_events: list[dict[str, Any]]) -> tuple[dict, dict[str, dict[str, Any]], dict[str, int]]:
    """The model event, per-module figures and totals the tree and the table show
    (``views.report``'s, computed once for both)."""
    return _figures(report_events)


def module_tree_html(figs: tuple, *, open_children: int = OPEN_CHILDREN) -> str:
    """``named_modules`` as nested ``<ul>``/``<details>`` (from ``figures``): each module's name, class,
    ``extra_repr``, parameters (its subtree's), forward time; shared modules under their first
    path, noted under the others. Every ``<li>`` carries ``data-path`` (the report's search reads
    it). Built without recursion (a model may be thousands of modules deep)."""
    model, figs, _ = figs
    modules = model["modules"]
    by_path = {m["path"]: m for m in modules}
    alias_of = {a: m["path"] for m in modules for a in m["aliases"]}
    root = by_path.get("") or modules[0]
    many = len(root["children"]) > open_children
    out: list[str] = ['<ul class="ms-tree">']
    # ("open", module, depth) and ("close", tag) markers
    stack: list[tuple[str, Any, int]] = [("open", root, 0)]
    while stack:
        action, item, depth = stack.pop()
        if action == "close":
            out.append(item)
            continue
        if action == "alias":
            out.append(f'<li class="ms-leaf" data-path="{escape(item[0])}"><span class="ms-name">'
                       f'{escape(item[0].rsplit(".", 1)[-1])}</span><span class="ms-alias">→ '
                       f'{escape(item[1] or "(root)")} (shared)</span></li>')
            continue
        m = item
        label = _label(m, figs[m["path"]], model["model"])
        children: list[tuple[str, Any, int]] = []
        for child in m["children"]:
            path = f"{m['path']}.{child}" if m["path"] else child
            if path in by_path:
                children.append(("open", by_path[path], depth + 1))
            elif path in alias_of:
                children.append(("alias", (path, alias_of[path]), depth + 1))
        data = f' data-path="{escape(m["path"])}"'
        if not children:
            out.append(f'<li class="ms-leaf"{data}>{label}</li>')
            continue
        is_open = depth == 0 or (depth == 1 and not many)
        out.append(f'<li{data}><details{" open" if is_open else ""}><summary>{label}</summary><ul>')
        stack.append(("close", "</ul></details></li>", depth))
        stack.extend(reversed(children))
    out.append("</ul>")
    return "".join(out)


def _label(m: dict[str, Any], f: dict[str, Any], model_name: str) -> str:
    name = m["path"].rsplit(".", 1)[-1] or model_name
    xr = m["extra_repr"]
    if len(xr) > LABEL_REPR:
        xr = xr[:LABEL_REPR - 1] + "…"
    parts = [f'<span class="ms-name">{escape(name)}</span> <span class="ms-cls">{escape(m["cls"])}</span>']
    if xr:
        parts.append(f'<span class="ms-xr">({escape(xr)})</span>')
    if f["total_params"]:
        parts.append(f'<span class="ms-np">{f["total_params"]:,} params</span>')
    if f["fwd_ns"]:
        parts.append(f'<span class="ms-t">fwd {_fmt_ms(f["fwd_ns"])} ms</span>')
    if m["aliases"]:
        parts.append(f'<span class="ms-alias">shared with {escape(", ".join(m["aliases"]))}</span>')
    return "".join(parts)


SUMMARY_COLUMNS = ("Module", "Type", "Output shape", "Params", "Trainable", "Mult-adds", "Fwd ms", "Bwd ms",
                   "Saved for bwd")


def summary_table_html(figs: tuple) -> str:
    """``views.report.summary_table`` as an HTML table (the same figures and footer), from
    ``figures``."""
    model, figs, totals = figs
    root = figs.get("", {})
    head = "".join(f'<th{" class=l" if c in ("Module", "Type") else ""}>{c}</th>' for c in SUMMARY_COLUMNS)
    rows = []
    for m in model["modules"]:
        f = figs[m["path"]]
        depth = m["path"].count(".") + (1 if m["path"] else 0)
        name = m["path"].rsplit(".", 1)[-1] or "(root)"
        cells = (str(f["output"]) if f["output"] is not None else "--", _fmt_params(f), _fmt_count(f["trainable"]),
                 _fmt_count(f["macs"]), _fmt_ms(f["fwd_ns"]),
                 NO_BACKWARD if f["no_backward"] else _fmt_ms(f["bwd_ns"]),
                 _fmt_bytes(f["saved"]) if f["saved"] else "--")
        rows.append(f'<tr><td class=l style="padding-left:{8 + 12 * depth}px">{escape(name)}</td>'
                    f'<td class=l>{escape(m["cls"])}</td>' + "".join(f"<td>{escape(c)}</td>" for c in cells) + "</tr>")
    foot = ("<tr><td class=l>Total</td><td></td><td></td>"
            f"<td>{totals['params']:,}</td><td>{totals['trainable']:,}</td><td>{_fmt_count(totals['mult_adds'])}</td>"
            f"<td>{_fmt_ms(root.get('fwd_ns', 0))}</td><td>{_fmt_ms(root.get('bwd_ns', 0))}</td>"
            f"<td>{_fmt_bytes(root.get('saved', 0))}</td></tr>")
    legend = (f'<p class="ms-note">{NO_BACKWARD} in Bwd ms: no backward of its own: none of its inputs needs a '
              "gradient, so torch runs its backward hook as soon as its output's gradient arrives</p>"
              if any(f["no_backward"] for f in figs.values()) else "")
    return (f'<table class="ms-table"><caption style="text-align:left">{escape(model["model"])} summary</caption>'
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody><tfoot>{foot}</tfoot></table>{legend}")


def rich_html(renderable: Any, width: int = 120) -> str:
    """A rich renderable (a table, a tree, the diff report) as an HTML ``<pre>`` with its colours
    inline: what the terminal shows, in a page."""
    from rich.console import Console

    console = Console(record=True, width=width, file=io.StringIO(), force_terminal=True, color_system="truecolor")
    console.print(renderable)
    return console.export_html(inline_styles=True, code_format='<pre class="ms-rich">{code}</pre>')


def diagram_svg(diagram: Any) -> str:
    """A ``Diagram`` (or ``graphviz.Digraph``) laid out by graphviz's ``dot`` as inline SVG (the
    XML prolog and DOCTYPE dropped so it can sit inside HTML). Raises ``DotMissing`` when
    ``dot`` is not installed, ``DotFailed`` when it fails."""
    from ..diagrams.dot import run_dot

    dot = diagram.to_digraph() if hasattr(diagram, "to_digraph") else diagram
    svg = run_dot(dot.source, "svg").decode("utf-8")
    start = svg.find("<svg")
    return svg[start:] if start >= 0 else svg
