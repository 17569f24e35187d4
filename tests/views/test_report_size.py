"""The report's size bound (issue 28): a 10,000-module model's page stays under 20 MB however long
the run, by sampling steps, and says so. The trace is what the recorder writes for the 10,001-module
model of issue 21 (2,500 x [Linear(8,8), ReLU, LayerNorm, Identity]): one real traced step with
statistics, then that step's events again for the next steps (fresh ``seq`` and ``step``, as the
recorder numbers them), enough steps that the firing order and the parameter statistics both
outgrow their budgets (``digest.TIMELINE_LINES``, ``PARAM_CELLS``)."""

from __future__ import annotations

import re
from html import escape

import pytest

import engine
import modscope
from modscope.views.html import digest as digest_module
from modscope.views.html.page import write_report

BOUND = 20_000_000  # bytes: the bound for a 10,000-module model
STEPS = 12  # the firing order outgrows TIMELINE_LINES after 10 steps, the statistics PARAM_CELLS after 8
ENVELOPE = re.compile(rb'^(\{"v":1,"kind":"([a-z_]+)","seq":)(\d+)(,"t":\d+,"step":)(\d+)')


def _wide_model() -> engine.nn.Module:
    layers = []
    for _ in range(2500):
        layers += [engine.nn.Linear(8, 8), engine.nn.ReLU(), engine.nn.LayerNorm(8), engine.nn.Identity()]
    return engine.nn.Sequential(*layers)


@pytest.fixture(scope="module")
def wide_trace(tmp_path_factory):
    """The recorder's own lines of one traced step, then the same lines for steps 1 .. STEPS-1
    (``seq`` and ``step`` renumbered in place; the graph is the first step's only, as recorded)."""
    folder = tmp_path_factory.mktemp("wide")
    engine.manual_seed(0)
    model = _wide_model()
    opt = engine.optim.SGD(model.parameters(), lr=1e-3)
    with modscope.trace(model, stats=True) as tr:
        loss = model(engine.randn(2, 8)).pow(2).mean()
        loss.backward()
        tr.log(loss=loss.item())
        opt.step()
    one = folder / "one-step.jsonl"
    tr.save(one)
    lines = one.read_bytes().splitlines()
    kinds = [ENVELOPE.match(line)[2] for line in lines]
    assert kinds[:2] == [b"session", b"model"] and kinds[-1] == b"end" and len(set(kinds)) >= 8
    headers, body, end = lines[:2], lines[2:-1], lines[-1]
    per_step = len(lines)

    def renumbered(line: bytes, k: int) -> bytes:
        m = ENVELOPE.match(line)
        return m[1] + str(int(m[3]) + k * per_step).encode() + m[4] + str(k).encode() + line[m.end():]

    path = folder / "wide.jsonl"
    with open(path, "wb") as f:
        f.write(b"".join(line + b"\n" for line in headers))
        for k in range(STEPS):
            f.write(b"".join(renumbered(line, k) + b"\n" for line in body if k == 0 or b'"kind":"graph"' not in line))
        f.write(renumbered(end, STEPS - 1) + b"\n")
    return path, sum(1 for _ in model.modules()), per_step * STEPS


@pytest.mark.timeout(600)  # ~20 s of CPU: a loaded machine stretches it
def test_a_10000_module_models_page_stays_under_20_mb_and_says_what_it_sampled(wide_trace, tmp_path):
    path, modules, events = wide_trace
    assert modules == 10_001
    assert events > digest_module.TIMELINE_LINES  # more firing order than one page keeps
    out = tmp_path / "wide.html"
    report = write_report(path, out)  # (it checks every line, as load_trace does: TraceFileError if not)
    size = out.stat().st_size
    assert size == report.size and size <= BOUND, size
    html = out.read_text(encoding="utf-8")
    kept_order = [n for n in report.notes if n.startswith("hook firing order:")]
    kept_params = [n for n in report.notes if n.startswith("parameters:")]
    assert kept_order and f"of {STEPS} steps kept (every 2nd, and the last)" in kept_order[0], report.notes
    assert kept_params and f"of {STEPS} steps with statistics kept" in kept_params[0], report.notes
    for note in kept_order + kept_params:  # the page says so, not only the command's output
        assert escape(note) in html
    last = f'<option value="{STEPS - 1}" selected>step {STEPS - 1}</option>'
    assert html.count(last) == 2  # both step lists end at the last step, always kept
    assert "Sequential" in html and html.count("<svg") >= 3
