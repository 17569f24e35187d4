"""Line charts as inline SVG, drawn here (no plotting library, no script, no network): what the
report and the notebook use for loss, learning rates and per-module gradient norms over steps.

``line_chart`` takes named series of ``(x, y)`` points. The y axis is logarithmic when asked
(``log=None``: when every value is positive and they span more than three decades, as gradient
norms do). Ticks are "nice" numbers (1, 2, 5 times a power of ten). ``styles`` gives a line its
colour and dash pattern: the ranks of a run drawn over each other keep one colour per quantity
and one dash pattern per rank (``rank_dash``).
"""

from __future__ import annotations

import math
from html import escape

# Colour-blind-safe (Okabe-Ito), then a few more.
COLORS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442",
          "#882255", "#44AA99", "#999933", "#AA4499")

# Rank 0 solid, then dashes and dots that stay apart when lines cross (SVG stroke-dasharray).
DASHES = ("", "6 3", "2 2", "8 3 2 3", "1 4", "10 4", "4 2 1 2 1 2")

Points = list[tuple[float, float]]


def rank_dash(rank: int) -> str:
    """The dash pattern of rank ``rank``'s lines ("" is solid)."""
    return DASHES[rank % len(DASHES)]


def nice_ticks(lo: float, hi: float, count: int = 5, integer: bool = False) -> list[float]:
    """About ``count`` round numbers covering ``[lo, hi]`` (``integer``: whole numbers only, as
    step numbers are)."""
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / max(count, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    if integer:
        step = max(1, round(step)) if step >= 1 else 1
    first = math.ceil(lo / step - 1e-9) * step
    ticks = []
    t = first
    while t <= hi + step * 1e-9:
        ticks.append(round(t, 12))
        t += step
    return ticks


def _fmt(v: float) -> str:
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 1e5 or a < 1e-3:
        return f"{v:.0e}".replace("e-0", "e-").replace("e+0", "e")
    if a >= 100 or float(v).is_integer():
        return f"{v:,.0f}"
    return f"{v:.3g}"


def line_chart(series: dict[str, Points], *, title: str, x_label: str = "step", log: bool | None = None,
               width: int = 640, height: int = 240, styles: dict[str, tuple[str, str]] | None = None) -> str:
    """An SVG line chart of ``series`` (name -> points, each in x order), with axes, ticks, a
    legend and a ``<title>`` per line (its name, shown on hover). ``styles``: name -> (colour,
    dash pattern) for the lines it names (the others take the next colour, solid). An empty chart
    says it has no data instead of drawing axes."""
    series = {name: pts for name, pts in series.items() if pts}
    if not series:
        return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="40" role="img">'
                f'<text x="8" y="24" font-size="12" fill="#57606a">{escape(title)}: no data</text></svg>')
    xs = [x for pts in series.values() for x, _ in pts]
    ys = [y for pts in series.values() for _, y in pts]
    positive = min(ys) > 0
    if log is None:
        log = positive and max(ys) / min(ys) > 1e3
    log = bool(log and positive)
    legend_h = 16 * ((len(series) + 2) // 3)
    left, right, top, bottom = 64, 12, 24, 34 + legend_h
    pw, ph = width - left - right, height - top - bottom
    x0, x1 = min(xs), max(xs)
    if x1 == x0:
        x0, x1 = x0 - 1, x1 + 1
    tf = math.log10 if log else (lambda v: v)
    y0, y1 = tf(min(ys)), tf(max(ys))
    if y1 == y0:
        y0, y1 = y0 - (abs(y0) * 0.1 or 1), y1 + (abs(y1) * 0.1 or 1)
    pad = (y1 - y0) * 0.05
    y0, y1 = y0 - pad, y1 + pad

    def px(x: float) -> float:
        return left + (x - x0) / (x1 - x0) * pw

    def py(y: float) -> float:
        return top + (1 - (tf(y) - y0) / (y1 - y0)) * ph

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" font-family="Helvetica,Arial,sans-serif" font-size="11">',
           f'<text x="{left}" y="15" font-size="13" font-weight="600">{escape(title)}</text>',
           f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="#fff" stroke="#d0d7de"/>']
    if log:
        yticks = [10.0 ** k for k in range(math.ceil(y0), math.floor(y1) + 1)]
    else:
        yticks = nice_ticks(y0, y1)
    for t in yticks:
        y = py(t)
        if top - 0.5 <= y <= top + ph + 0.5:
            out.append(f'<line x1="{left}" x2="{left + pw}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eaeef2"/>'
                       f'<text x="{left - 4}" y="{y + 4:.1f}" text-anchor="end" fill="#57606a">{_fmt(t)}</text>')
    for t in nice_ticks(x0, x1, 6, integer=all(float(x).is_integer() for x in xs)):
        x = px(t)
        if left - 0.5 <= x <= left + pw + 0.5:
            out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top + ph}" y2="{top + ph + 4}" stroke="#57606a"/>'
                       f'<text x="{x:.1f}" y="{top + ph + 16}" text-anchor="middle" fill="#57606a">{_fmt(t)}</text>')
    out.append(f'<text x="{left + pw / 2}" y="{top + ph + 29}" text-anchor="middle" fill="#57606a">'
               f"{escape(x_label)}{' (log y)' if log else ''}</text>")
    styles = styles or {}
    for i, (name, pts) in enumerate(series.items()):
        color, dash = styles.get(name, (COLORS[i % len(COLORS)], ""))
        dashing = f' stroke-dasharray="{dash}"' if dash else ""
        if len(pts) == 1:
            x, y = pts[0]
            out.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{color}"><title>{escape(name)}'
                       f"</title></circle>")
        else:
            d = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in pts)
            out.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.5"{dashing} points="{d}">'
                       f"<title>{escape(name)}</title></polyline>")
        lx = left + (i % 3) * (pw // 3)
        ly = top + ph + 44 + 16 * (i // 3)
        out.append(f'<line x1="{lx}" x2="{lx + 16}" y1="{ly - 6.5}" y2="{ly - 6.5}" stroke="{color}" '
                   f'stroke-width="2"{dashing}/><text x="{lx + 20}" y="{ly - 3}">{escape(name[:40])}</text>')
    out.append("</svg>")
    return "".join(out)
