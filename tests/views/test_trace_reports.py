"""The read side every trace shares (``modscope/views/trace.py``), on a loaded trace too."""

from __future__ import annotations

import engine
import modscope


def _traced():
    model = engine.nn.Sequential(engine.nn.Linear(3, 4), engine.nn.ReLU(), engine.nn.Linear(4, 2))
    with modscope.trace(model) as tr:
        model(engine.randn(5, 3)).sum().backward()
    return tr


def test_totals_are_the_summary_footer_as_numbers():
    assert _traced().totals() == {"params": 16 + 10, "trainable": 26, "mult_adds": 5 * (3 * 4 + 4 * 2)}


def test_a_loaded_trace_reports_as_the_live_one(tmp_path):
    tr = _traced()
    tr.save(tmp_path / "t.jsonl.gz")
    loaded = modscope.load_trace(tmp_path / "t.jsonl.gz")
    assert loaded.totals() == tr.totals()
    assert str(loaded.summary()) == str(tr.summary())
    assert loaded.firing_order() == tr.firing_order()
