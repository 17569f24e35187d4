"""How modscope's objects show themselves in Jupyter: the HTML behind ``_repr_html_`` and
``_repr_mimebundle_`` (the classes call these; nothing here needs IPython).

- a trace (live ``Trace`` or loaded): its model, steps and events, a collapsible module tree with
  parameter counts, the summary table, and plots of metrics, learning rates and per-module
  gradient norms when it has them (``trace_html``); a run of several ranks (one file each) has
  every rank's lines in the same plots, a dash pattern per rank (``rank_digests``);
- ``summary()``: the summary's rows (one per module call), columns and memory block as an HTML
  table (``fragments.summary_html``, the rows ``views.summary`` prints);
- ``tree()``, ``timeline()`` and a diff: the rich report as coloured HTML (``printable_html``);
- a ``Diagram``: SVG laid out by graphviz (``diagram_bundle``).

Everything is plain HTML and inline SVG, without scripts: ``<details>`` collapses without
JavaScript, so the output works in JupyterLab, the classic notebook, VS Code and a saved
notebook's static HTML alike.
"""

from __future__ import annotations

from collections.abc import Callable
from html import escape
from pathlib import Path
from typing import Any

from ..events.files import TraceFileError, TraceScan
from .html.digest import Series, TraceDigest
from .html.fragments import diagram_svg, module_tree_html, rich_html, style_tag, summary_html
from .html.plots import COLORS, line_chart, rank_dash
from .summary import SummaryReport

GRAD_NORM_LINES = 8  # modules drawn in the gradient-norm plot (the largest norms)


def trace_html(trace: Any) -> str:
    """A trace (anything with ``iter_events()``) as HTML, read in one pass over its events."""
    digest = TraceDigest(trace.iter_events(), timelines=False, params=False)
    parts = [style_tag(), '<div class="ms">', f"<h3>modscope trace: {escape(digest.model_name)}</h3>",
             f'<div class="ms-meta">{escape(meta_line(digest, trace))}</div>']
    for note in filter(None, [digest.dropped_note(), *digest.notes()]):
        parts.append(f'<div class="ms-note">{escape(note)}</div>')
    ranks = getattr(trace, "ranks", None) or {}
    if len(ranks) > 1:  # a run of several ranks: one file each (load_trace("F#R") opens rank R's)
        files = ", ".join(f"{r}: {p}" for r, p in sorted(ranks.items()))
        parts.append(f'<div class="ms-meta">ranks of this run ({len(ranks)}; rank_trace(R) loads one): '
                     f"{escape(files)}</div>")
    others = rank_digests(trace, digest)
    if digest.model is not None:
        parts.append("<details open><summary><b>Modules</b></summary>"
                     f"{module_tree_html(digest.figures)}</details>")
        parts.append("<details><summary><b>Summary</b></summary>"
                     f"{summary_html(digest_summary(digest))}</details>")
    plots = plots_html(digest, ranks=others)
    if plots:
        parts.append(f"<details open><summary><b>Over steps</b></summary>{plots}</details>")
    parts.append("</div>")
    return "".join(parts)


def meta_line(digest: TraceDigest, trace: Any = None) -> str:
    """``engine · 3 steps (0-2) · 1,234 events · cut off`` and the like."""
    bits = []
    if digest.framework:
        bits.append(digest.framework)
    steps = sorted(set(digest.steps))
    if steps:
        bits.append(f"{len(steps):,} step{'s' if len(steps) != 1 else ''} ({steps[0]}-{steps[-1]})"
                    if len(steps) > 1 else f"1 step ({steps[0]})")
    bits.append(f"{digest.count:,} events")
    if digest.rank is not None:
        bits.append(f"rank {digest.rank}")
    if digest.error_count:
        bits.append(f"{digest.error_count:,} error{'s' if digest.error_count != 1 else ''}")
    path = getattr(trace, "path", None)
    if path is not None:
        bits.append(str(path))
    if getattr(trace, "truncated", False):
        bits.append("cut off (the recording did not end)")
    return " · ".join(bits)


def rank_digests(trace: Any, digest: TraceDigest) -> dict[int, TraceDigest]:
    """``{rank: digest}`` of every rank of the run ``trace`` belongs to (its ``ranks``: one file
    each, beside its ``path``), ``digest`` being its own; the others read for their series only
    (module lines matched, not parsed). A rank whose file cannot be read is left out (the ranks
    line names the files). ``{}`` for a single process's trace."""
    ranks = getattr(trace, "ranks", None) or {}
    path = getattr(trace, "path", None)
    if len(ranks) < 2 or path is None:
        return {}
    out = {}
    for rank, file in sorted(ranks.items()):
        if Path(file) == Path(path):
            out[rank] = digest
            continue
        try:
            out[rank] = TraceDigest((e for _, _, e in TraceScan(file).module_lines()), timelines=False, params=False)
        except (TraceFileError, OSError):
            continue
    return out


def plots_html(digest: TraceDigest, grad_lines: int = GRAD_NORM_LINES,
               ranks: dict[int, TraceDigest] | None = None) -> str:
    """Charts of the digest's series: metrics, learning rates, per-module gradient norms (the
    ``grad_lines`` modules with the largest), each only when it has data. With ``ranks`` (a run's
    ``rank_digests``: the ranks whose files could be read) every rank's line of a quantity is drawn in its colour, one
    dash pattern per rank, the legend naming both (``loss · rank 1``); the gradient-norm chart
    then keeps ``grad_lines // ranks`` modules (at least one), the largest on this digest's rank."""
    runs: dict[int | None, TraceDigest] = dict(ranks) if ranks else {None: digest}
    out = []
    metrics = _overlay(runs, lambda d: d.metrics, None, title="metrics")
    lrs = _overlay(runs, lambda d: d.lrs, None, title="learning rate")
    out += [c for c in (metrics, lrs) if c]
    if any(d.grad_norms for d in runs.values()):
        own = digest.grad_norms or next(d.grad_norms for d in runs.values() if d.grad_norms)
        ranked = [k for k, _ in sorted(own.items(), key=lambda kv: -max(kv[1].ys, default=0.0))]
        lines = max(1, grad_lines // len(runs))
        title = "gradient norm per module"
        if len(ranked) > lines:
            where = "" if not ranks else " on this rank" if digest.rank is None else f" on rank {digest.rank}"
            title += f" (the {lines} largest of {len(ranked):,}{where})"
        out.append(_overlay(runs, lambda d: d.grad_norms, ranked[:lines], title=title))
    return "".join(f'<div class="ms-svg">{svg}</div>' for svg in out)


def _overlay(runs: dict[int | None, TraceDigest], field: Callable[[TraceDigest], dict[str, Series]],
             names: list[str] | None, *, title: str) -> str:
    """One chart of the series ``field`` picks from each run (``names``, or every name any run
    has, in order of appearance): one colour per name, one dash pattern per rank; "" when none
    has any."""
    if names is None:
        names = list(dict.fromkeys(name for d in runs.values() for name in field(d)))
    if not names:
        return ""
    series, styles = {}, {}
    for i, name in enumerate(names):
        for rank, d in runs.items():
            s = field(d).get(name)
            if s is None:
                continue
            label = name if rank is None else f"{name} · rank {rank}"
            series[label] = s.points()
            styles[label] = (COLORS[i % len(COLORS)], rank_dash(rank or 0))
    return line_chart(series, title=title, styles=styles)


def digest_summary(digest: TraceDigest) -> SummaryReport:
    """The summary (``views.summary``) of what a digest kept, from the figures it computed."""
    figures = digest.figures  # (computes digest.mult_adds with them)
    return SummaryReport(digest.report_events, figures=figures, mult_adds=digest.mult_adds)


def printable_html(renderable: Any) -> str:
    """A rich renderable (tree, timeline, diff) as coloured HTML; the summary as an HTML table
    (``fragments.summary_html``)."""
    if isinstance(renderable, SummaryReport):
        return f'{style_tag()}<div class="ms">{summary_html(renderable)}</div>'
    return f'{style_tag()}<div class="ms">{rich_html(renderable)}</div>'


def diagram_bundle(diagram: Any) -> dict[str, str]:
    """A diagram's MIME bundle: SVG from graphviz's ``dot``, and a line of text; when ``dot`` is
    missing or fails, HTML saying so (a notebook shows why there is no drawing)."""
    from .diagrams.dot import DotFailed, DotMissing

    text = f"<{diagram.kind} diagram {diagram.name!r}: {len(diagram.nodes)} nodes, {len(diagram.edges)} edges>"
    try:
        return {"image/svg+xml": diagram_svg(diagram), "text/plain": text}
    except (DotMissing, DotFailed) as e:
        return {"text/html": f'<div style="color:#9a6700">{escape(str(e))}</div>', "text/plain": text}
