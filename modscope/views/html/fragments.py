"""HTML fragments shared by the notebook views and the report: the module tree as nested
``<details>`` (collapsible without a script), the summary (``views.summary``'s rows and memory
block), a rich renderable as HTML, a diagram as inline SVG. Plain strings, every text escaped; no
file is referenced and nothing is fetched, so a fragment works offline and inside any page.
"""

from __future__ import annotations

import io
from html import escape
from typing import Any

from ..report import _figures, _fmt_bytes, _fmt_ms
from ..summary import COLUMNS, LEFT, SummaryReport, memory_total

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
.ms table.ms-table td.ms-pre{white-space:pre}
.ms table.ms-table tr.ms-dim td{color:#6e7781}
.ms table.ms-memory{margin-top:8px}
.ms table.ms-memory td.ms-how{color:#57606a;white-space:normal}
.ms table.ms-memory tr.ms-total td{font-weight:600;border-top:2px solid #8c959f}
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


def summary_html(report: SummaryReport) -> str:
    """``views.summary``'s summary as HTML: the same rows (one per module call, a repeat marked),
    columns (``report.columns``, else every one: a page scrolls), footer, caption and legend
    (``report.grid``, ``report.legend_lines``), then the memory block."""
    columns = report.columns or tuple(COLUMNS)
    grid = report.grid

    def cell(key: str, text: str, tag: str = "td") -> str:
        return f"<{tag}{' class=l' if key in LEFT else ''}>{escape(text)}</{tag}>"

    head = "".join(cell(k, COLUMNS[k], "th") for k in columns)
    body = []
    for row, cells in zip(grid.rows, grid.cells):
        # the module cell's indentation is the text table's ("  " per level), kept by pre
        first = f'<td class="l ms-pre">{escape(cells["module"])}</td>'
        rest = "".join(cell(k, cells[k]) for k in columns[1:])
        body.append(f'<tr{"" if row.called else " class=ms-dim"}>{first}{rest}</tr>')
    foot = "".join(cell(k, grid.footer[k]) for k in columns)
    caption = "".join(f"<div>{escape(line)}</div>" for line in [grid.title, *filter(None, [report.note])])
    legend = "".join(f'<p class="ms-note">{escape(line)}</p>' for line in report.legend_lines(columns))
    lines = report.memory
    known, how = memory_total(lines)
    memory = "".join(f"<tr><td class=l>{escape(what)}</td><td>{_fmt_bytes(n) if n is not None else 'unknown'}</td>"
                     f'<td class="l ms-how">{escape(text)}</td></tr>' for what, n, text in lines)
    memory += (f"<tr class=ms-total><td class=l>total</td><td>{_fmt_bytes(known)}</td>"
               f"<td class=l>{escape(how)}</td></tr>")
    return (f'<table class="ms-table ms-summary"><caption style="text-align:left">{caption}</caption>'
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody><tfoot><tr>{foot}</tr></tfoot></table>"
            f'{legend}<table class="ms-table ms-memory"><caption style="text-align:left"><b>Memory (estimated)</b>'
            f"</caption><tbody>{memory}</tbody></table>")


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
