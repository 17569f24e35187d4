"""``modscope report``: a trace as one self-contained HTML file that opens offline and can be
attached to an issue (``build_report``, ``write_report``).

The page holds: the module tree (collapsible, searchable), the summary table, plots of metrics
(loss), learning rates and per-module gradient norms over steps (every rank's lines in them for
a run of several ranks), the parameters (statistics per
step) and buffers, the hook firing order per step, the autograd graph as SVG with a cluster per
module (graphviz's ``dot``, folded past ``BUDGET`` nodes as every diagram is), and with
``compare`` the diff against a second trace.

Its size is bounded whatever the run's length: the trace is read once (``TraceDigest``), which
samples the steps whose parameters and firing order are kept and thins the curves; the page says
what it sampled. Its style sheet, script and data are inline; it references no file and fetches
nothing.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from html import escape
from operator import itemgetter
from pathlib import Path
from typing import Any

from ..._gc import gc_paused
from ...events.files import TraceFileError, TraceScan
from ..diagrams import BUDGET, build_autograd_graph_from_event, fit
from ..diagrams.dot import DotFailed, DotMissing
from ..diagrams.hook_nodes import without_hook_nodes  # (the TUI's rule: hook identity nodes hidden)
from ..notebook import digest_summary, meta_line, plots_html, rank_digests
from ..trace import RecordedTrace, load_trace
from .assets import PAGE_CSS, PAGE_JS
from .digest import PARAM_FIELDS, TraceDigest
from .fragments import CSS, diagram_svg, module_tree_html, rich_html, summary_html

SECTIONS = (("modules", "Modules"), ("summary", "Summary"), ("plots", "Over steps"),
            ("params", "Parameters and buffers"), ("timeline", "Hook firing order"),
            ("graph", "Autograd graph"), ("diff", "Diff"))


@dataclass
class Report:
    """A built report: the page in ``parts`` (``html`` joins them), ``notes`` (what it sampled
    or left out, also written in the page) and ``warnings`` (a section it could not draw, and
    why)."""

    parts: list[str]
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def html(self) -> str:
        return "".join(self.parts)

    @property
    def size(self) -> int:
        """The page's bytes (UTF-8)."""
        return sum(len(part.encode("utf-8")) for part in self.parts)


def build_report(trace: str | os.PathLike, compare: str | os.PathLike | None = None) -> Report:
    """The report of trace file ``trace`` (and its diff against ``compare``). Raises
    ``TraceFileError`` naming the file when either is missing or not a complete trace (both are
    checked before anything is drawn).

    The cyclic collector is paused meanwhile: reading a big trace allocates millions of objects,
    and each collection they set off traversed all of them again (a fifth of a 1M-event report's
    time); what the report builds is freed by reference counting."""
    with gc_paused():
        return _build_report(trace, compare)


def _build_report(trace: str | os.PathLike, compare: str | os.PathLike | None) -> Report:
    file = Path(trace)
    if not file.exists() and "#" in str(trace):  # a rank of a run ("F#R"): resolved as load_trace does
        file = load_trace(trace).path
    if compare is not None:
        load_trace(compare)  # (checked now: a bad second file fails before the long part)
    # One pass that validates the file as load_trace does (TraceFileError naming file and line)
    # and is the digest's: module lines the validating pattern matches are never parsed.
    scan = TraceScan(file)
    digest = TraceDigest(map(itemgetter(2), scan.module_lines()))  # (the events: no generator step a line)
    loaded = RecordedTrace([], file, bool(scan.truncated))  # (its path, cut-off flag and ranks)
    if digest.model is None:
        raise TraceFileError(f"{trace}: the trace has no model event (was a model traced?)")
    warnings: list[str] = []
    notes = [n for n in [digest.dropped_note(), *digest.notes()] if n]
    body = [_header(digest, loaded, notes, compare is not None), _ranks(loaded), _modules(digest), _summary(digest),
            _plots(digest, loaded), _params(digest), _timeline(digest), _graph(digest, warnings)]
    if compare is not None:
        body.append(_diff(trace, compare))
    title = f"modscope report: {digest.model_name}"
    parts = ["<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
             "<meta http-equiv=Content-Security-Policy content=\"default-src 'none'; style-src 'unsafe-inline'; "
             "script-src 'unsafe-inline'; img-src data:\">"
             f"<title>{escape(title)}</title><style>{CSS}{PAGE_CSS}</style></head><body><div class=ms>",
             *body, '</div><script type="application/json" id="ms-data">', *_data(digest),
             f"</script><script>{PAGE_JS}</script></body></html>"]
    return Report(parts, notes, warnings)


def _json(obj: Any) -> str:
    # "<" only occurs inside JSON strings, where \u003c means the same: no "</script>" can end the block
    return json.dumps(obj, separators=(",", ":"), allow_nan=False).replace("<", "\\u003c")


def _data(digest: TraceDigest) -> list[str]:
    """The page's data block (one JSON object) in pieces, a kept step's firing order or parameters
    each: the page is written a piece at a time, never as one string."""
    pinfo = {p["path"]: [_shape(p["shape"]), p["dtype"], p["numel"], "yes" if p["requires_grad"] else "no"]
             for p in digest.model["params"]}
    for b in digest.model["buffers"]:  # (a params event has the buffers' statistics too)
        pinfo[b["path"]] = [_shape(b["shape"]), b["dtype"], b["numel"], "buffer"]
    steps = digest.timelines.steps()
    cuts = {step: digest.timelines.payload(step).cut for step in steps if digest.timelines.payload(step).cut}
    out = ['{"paths":', _json(list(digest.paths)), ',"pinfo":', _json(pinfo), ',"timeline_cut":', _json(cuts),
           ',"timelines":{']
    for i, step in enumerate(steps):
        out += [f'{"," if i else ""}"{step}":', _json(digest.timelines.payload(step).to_json())]
    out.append('},"params":{')
    n = len(PARAM_FIELDS)
    for i, step in enumerate(digest.params.steps()):
        rows = _rounded_rows(digest.params.payload(step), n)
        out += [f'{"," if i else ""}"{step}":', _json(rows)]
    out.append("}}")
    return out


def write_report(trace: str | os.PathLike, output: str | os.PathLike,
                 compare: str | os.PathLike | None = None) -> Report:
    """``build_report`` written to ``output`` (UTF-8). ``OSError`` naming the file when it
    cannot be written."""
    report = build_report(trace, compare)
    try:
        with open(output, "w", encoding="utf-8") as f:
            for part in report.parts:
                f.write(part)
    except OSError as e:
        raise OSError(f"cannot write the report {output}: {e.strerror or e}") from None
    return report


def _round(v: float | None) -> float | None:
    return None if v is None else float(f"{v:.5g}")


def _rounded_rows(rows: list[tuple], n: int) -> list[list]:
    """``rows`` as lists, their values ``1..n`` rounded to 5 significant digits (``_round``), a
    column at a time (a kept step is 10,000 rows of a big model: no Python step a value)."""
    if not rows:
        return []
    columns = list(zip(*rows))
    for c in range(1, 1 + n):
        col = columns[c]
        columns[c] = (list(map(float, map(_FIVE_DIGITS, col))) if None not in col else list(map(_round, col)))
    return list(map(list, zip(*columns)))


_FIVE_DIGITS = "{:.5g}".format


def _shape(shape: list[int]) -> str:
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def _section(key: str, body: str, extra: str = "") -> str:
    title = dict(SECTIONS)[key]
    return f'<h2 id="{key}">{title}{extra}</h2>{body}'


def _header(digest: TraceDigest, loaded: Any, notes: list[str], with_diff: bool) -> str:
    present = {"modules", "summary", "plots", "params", "timeline", "graph"} | ({"diff"} if with_diff else set())
    nav = "".join(f'<a href="#{k}">{t}</a>' for k, t in SECTIONS if k in present)
    out = [f"<h1>modscope report: {escape(digest.model_name)}</h1>",
           f'<div class="ms-meta">{escape(meta_line(digest, loaded))}</div><nav>{nav}</nav>']
    out += [f'<div class="ms-note">{escape(n)}</div>' for n in notes]
    if digest.errors:
        items = "".join(f"<li>step {e['step']}: <b>{escape(e['etype'])}</b>: {escape(e['message'])}"
                        f"{' in ' + escape(e['module']) if e.get('module') else ''} ({escape(e['where'])})</li>"
                        for e in digest.errors)
        more = digest.error_count - len(digest.errors)
        tail = f"<li>… and {more:,} more</li>" if more > 0 else ""
        out.append(f'<div class="ms-err"><b>errors</b><ul>{items}{tail}</ul></div>')
    return "".join(out)


def _ranks(loaded: Any) -> str:
    """The other ranks of a run recorded by several (one file each), when there are any."""
    ranks = getattr(loaded, "ranks", None) or {}
    if len(ranks) < 2:
        return ""
    rows = []
    for rank, path in sorted(ranks.items()):
        try:
            trace = load_trace(path)
            what = f"{len(trace):,} events" + (", cut off (the recording did not end)" if trace.truncated else "")
        except TraceFileError as e:
            what = f'<span class="ms-err">{escape(str(e))}</span>'
        else:
            what = escape(what)
        this = " (this page)" if Path(path) == Path(loaded.path) else ""
        rows.append(f"<tr><td>{rank}{this}</td><td class=l>{escape(str(path))}</td><td class=l>{what}</td></tr>")
    return ('<div class="ms-meta"><b>ranks of this run</b> (one trace file each; <code>modscope report F#R</code> '
            'reports rank R, <code>modscope diff F#0 F#1</code> compares two)</div><table class="ms-table"><thead><tr>'
            "<th>rank</th><th class=l>file</th><th class=l>trace</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>")


def _modules(digest: TraceDigest) -> str:
    n = len(digest.model["modules"])
    search = ('<input type="search" id="ms-tree-search" placeholder="find a module (path, class, arguments)" '
              'aria-label="find a module"> <span id="ms-tree-count" class="ms-meta"></span>')
    return _section("modules", search + f'<div class="ms-scroll" id="ms-tree">{module_tree_html(digest.figures)}'
                    "</div>", f" ({n:,})")


def _summary(digest: TraceDigest) -> str:
    return _section("summary", "<details><summary>the table (as <code>modscope summary</code> prints it)</summary>"
                    f'<div class="ms-scroll">{summary_html(digest_summary(digest))}</div></details>')


def _plots(digest: TraceDigest, loaded: Any) -> str:
    """The plots; a run of several ranks has every rank's lines in each (``rank_digests``)."""
    plots = plots_html(digest, ranks=rank_digests(loaded, digest))
    if not plots:
        plots = '<div class="ms-meta">no metrics, optimizer steps or gradient norms in this trace</div>'
    return _section("plots", plots)


def _step_select(select_id: str, steps: list[int], seen: int) -> str:
    if not steps:
        return ""
    options = "".join(f'<option value="{s}"{" selected" if s == steps[-1] else ""}>step {s}</option>'
                      for s in steps)
    of = f" ({len(steps)} of {seen:,} steps kept)" if len(steps) < seen else ""
    return f'<label>step <select id="{select_id}">{options}</select></label><span class="ms-meta">{of}</span>'


def _params(digest: TraceDigest) -> str:
    model = digest.model
    steps = digest.params.steps()
    head = "".join(f'<th{" class=l" if c in ("parameter", "shape", "dtype") else ""}>{c}</th>'
                   for c in ("parameter", "shape", "dtype", "numel", "trainable", *PARAM_FIELDS, "NaN / Inf"))
    if steps:
        params = (_step_select("ms-params-step", steps, digest.params.seen)
                  + f'<div class="ms-scroll"><table class="ms-table"><thead><tr>{head}</tr></thead>'
                  '<tbody id="ms-params-body"></tbody></table></div>')
    else:
        params = ('<div class="ms-meta">no parameter statistics in this trace (they are taken after each '
                  "optimizer step)</div>")
    buffers = model["buffers"]
    if buffers:
        rows = "".join(f"<tr><td class=l>{escape(b['path'])}</td><td class=l>{_shape(b['shape'])}</td>"
                       f"<td class=l>{escape(b['dtype'])}</td><td>{b['numel']:,}</td>"
                       f"<td>{'yes' if b['persistent'] else 'no'}</td></tr>" for b in buffers)
        buf = ('<h3>buffers</h3><div class="ms-meta">as the model declares them (a trace records no buffer '
               'values)</div><div class="ms-scroll"><table class="ms-table"><thead><tr><th class=l>buffer</th>'
               "<th class=l>shape</th><th class=l>dtype</th><th>numel</th><th>persistent</th></tr></thead>"
               f"<tbody>{rows}</tbody></table></div>")
    else:
        buf = '<div class="ms-meta">no buffers</div>'
    return _section("params", params + buf)


def _timeline(digest: TraceDigest) -> str:
    steps = digest.timelines.steps()
    if not steps:
        return _section("timeline", '<div class="ms-meta">no events</div>')
    return _section("timeline", _step_select("ms-timeline-step", steps, digest.timelines.seen)
                    + '<div class="ms-scroll"><pre class="ms-timeline" id="ms-timeline"></pre></div>')


def _graph(digest: TraceDigest, warnings: list[str]) -> str:
    if digest.graph is None:
        return _section("graph", '<div class="ms-meta">no autograd graph in this trace</div>')
    graph, hidden = without_hook_nodes(digest.graph)
    try:
        diagram = fit(build_autograd_graph_from_event(graph, digest.model), digest.model, budget=BUDGET)
        svg = diagram_svg(diagram)
    except (DotMissing, DotFailed, ValueError) as e:
        warnings.append(f"autograd graph not drawn: {e}")
        return _section("graph", f'<div class="ms-err">not drawn: {escape(str(e))}</div>')
    notes = list(diagram.notes)
    if hidden:
        notes.append(f"{hidden:,} BackwardHook identity nodes (the module backward hooks' own) hidden, as in the TUI")
    note = "".join(f'<div class="ms-note">{escape(n)}</div>' for n in notes)
    return _section("graph", f'{note}<div class="ms-scroll ms-svg">{svg}</div>',
                    f" (step {digest.graph['step']}, {len(diagram.nodes):,} nodes)")


def _diff(trace: str | os.PathLike, compare: str | os.PathLike) -> str:
    from ..diff import diff

    result = diff(trace, compare)
    verdict = "differ" if result.diverged else "the same within the threshold"
    return _section("diff", f'<div class="ms-meta">{escape(str(trace))} against {escape(str(compare))}: '
                    f'{verdict}</div><div class="ms-scroll">{rich_html(result, width=160)}</div>')
