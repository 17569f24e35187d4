"""The summary in HTML (``views/html/fragments.summary_html``): ``Trace.summary()`` and a trace in
a notebook, and the ``modscope report`` page, show what the text summary (``views/summary.py``)
prints: a row per module call (a reused module's repeat marked), the input-shape column, the
chosen columns, the legend and the memory block, from the same cells."""

from __future__ import annotations

import re
from html import unescape

import pytest

import modscope
from modscope.views.html.fragments import summary_html
from modscope.views.html.page import build_report
from modscope.views.summary import COLUMNS, SummaryReport

from .test_summary_report import tied


def _trained(lib, steps: int = 2):
    model = tied(lib)
    opt = lib.optim.Adam(model.parameters(), lr=1e-3)
    with modscope.trace(model) as tr:
        for _ in range(steps):
            model(lib.randn(2, 16)).sum().backward()
            opt.step()
            opt.zero_grad()
    return tr


def _table(html: str, cls: str = "ms-summary") -> tuple[list[str], list[list[str]], list[str]]:
    """Headers, body rows and footer of the first ``<table class="ms-table {cls}">`` in ``html``."""
    table = html.split(f'<table class="ms-table {cls}">', 1)[1].split("</table>", 1)[0]

    def cells(part: str) -> list[str]:
        return [unescape(c) for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", part)]

    head = cells(table.split("<thead>")[1].split("</thead>")[0]) if "<thead>" in table else []
    body = [cells(r) for r in table.split("<tbody>")[1].split("</tbody>")[0].split("</tr>")[:-1]]
    foot = cells(table.split("<tfoot>")[1].split("</tfoot>")[0]) if "<tfoot>" in table else []
    return head, body, foot


def _text_cells(report: SummaryReport, columns: tuple[str, ...]) -> list[list[str]]:
    return [[c[k] for k in columns] for c in report.grid.cells]


def test_the_notebook_summary_has_the_text_summarys_rows_and_memory(lib):
    tr = _trained(lib)
    bundle = tr.summary()._repr_mimebundle_()
    html = bundle["text/html"]
    head, body, foot = _table(html)
    assert head == list(COLUMNS.values())  # a page scrolls: every column, input shape included
    names = [row[0].strip() for row in body]
    assert names == ["(root)", "enc", "mid", "mid (call 2)", "dec", "unused"]  # one row per call
    report = SummaryReport(tr._report_events())
    assert body == _text_cells(report, tuple(COLUMNS))  # the same cells as the text table
    assert body[3][4] == body[3][5] == "(repeat)" and body[1][2] == "[2, 16]" and body[5][2] == "not called"
    assert foot[4] == f"{sum(p.numel() for p in tied(lib).parameters()):,}"
    assert "counted at its first call" in html
    _, memory, _ = _table(html, "ms-memory")
    assert [m[0] for m in memory] == ["parameters", "buffers", "gradients", "optimizer state",
                                      "saved for backward", "total"]
    assert "measured after its step" in memory[3][2] and memory[5][2] == "the items above"
    assert "mid (call 2)" in bundle["text/plain"] and "Memory (estimated)" in bundle["text/plain"]
    assert "<script" not in html


def test_the_notebook_summary_shows_the_chosen_columns():
    import engine

    tr = _trained(engine)
    html = tr.summary(columns=("input", "params"))._repr_mimebundle_()["text/html"]
    head, body, foot = _table(html)
    assert head == ["Module", "Input shape", "Params"] and all(len(r) == 3 for r in body) and len(foot) == 3
    assert "Bwd ms" not in html and "no backward of its own" not in html  # its legend goes with its column


def test_a_trace_and_the_report_page_show_the_same_summary(lib, tmp_path):
    tr = _trained(lib, steps=3)
    expected = _text_cells(SummaryReport(tr._report_events()), tuple(COLUMNS))
    path = tmp_path / "t.jsonl.gz"
    tr.save(path)
    loaded = modscope.load_trace(path)
    for html in (tr._repr_html_(), loaded._repr_html_(), build_report(path).html):
        head, body, _ = _table(html)
        assert head == list(COLUMNS.values())
        # times differ between the live trace's events and nothing else: compare all but Fwd/Bwd ms
        keep = [i for i, k in enumerate(COLUMNS) if k not in ("fwd", "bwd")]
        assert [[r[i] for i in keep] for r in body] == [[r[i] for i in keep] for r in expected]
        _, memory, _ = _table(html, "ms-memory")
        assert "measured after its step" in memory[3][2]  # the last optimizer step's state, kept by the digest


def test_the_summary_html_escapes_what_it_shows():
    import engine

    class Odd(engine.nn.Module):  # a class name with markup in it
        def __init__(self) -> None:
            super().__init__()
            self.fc = engine.nn.Linear(2, 2)

        def forward(self, x):
            return self.fc(x)

    Odd.__name__ = "Odd<b>"
    model = Odd()
    with modscope.trace(model) as tr:
        model(engine.randn(1, 2)).sum().backward()
    html = summary_html(SummaryReport(tr.events))
    assert "Odd&lt;b&gt;" in html and "Odd<b>" not in html


@pytest.mark.parametrize("bad", ["flops", "shape"])
def test_an_unknown_column_is_named_before_any_html(bad):
    import engine

    tr = _trained(engine, steps=1)
    with pytest.raises(ValueError, match=repr(bad)):
        tr.summary(columns=(bad,))._repr_mimebundle_()
