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


def test_a_containers_row_shows_its_subtree_and_its_backward_span(lib):
    model = lib.nn.Sequential(lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.ReLU()), lib.nn.Linear(4, 2))
    opt = lib.optim.SGD(model.parameters(), lr=0.1)
    with modscope.trace(model) as tr:
        model(lib.randn(5, 3)).sum().backward()  # the input needs no grad: the root's hook fires first
        opt.step()
    from modscope.views.report import module_figures

    figs = module_figures(tr.events)
    children = [p for p in figs if p.count(".") == 0 and p]
    assert figs[""]["bwd_ns"] >= max(figs[p]["bwd_ns"] for p in children) > 0
    text = str(tr.summary())
    root_row = next(line for line in text.splitlines() if "(root)" in line)
    assert "(26)" in root_row  # 16 + 10 parameters below it, none of its own


def _summary_cli(*args: str):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "modscope", "summary", "resnet", "--input", "2,1,28,28", *args],
                          capture_output=True, text=True, timeout=120)


def test_a_piped_summary_fits_80_columns_and_names_what_it_left_out():
    done = _summary_cli()
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert max(map(len, lines)) <= 80 and "…" not in done.stdout
    assert "Input shape" in done.stdout and "conv1" in done.stdout and "Memory (estimated)" in done.stdout
    assert "left out to fit 80 columns:" in done.stdout
    wide = _summary_cli("--width", "200")  # asked for: every column
    assert wide.returncode == 0, wide.stderr
    assert max(map(len, wide.stdout.splitlines())) > 100 and "Saved for bwd" in wide.stdout
    assert "left out" not in wide.stdout
    chosen = _summary_cli("--columns", "input,output,params")
    header = next(line for line in chosen.stdout.splitlines() if "Module" in line)
    assert [c.strip() for c in header.strip("┃ ").split("┃")] == ["Module", "Input shape", "Output shape", "Params"]


def test_an_unknown_summary_column_is_named_with_the_valid_ones():
    done = _summary_cli("--columns", "params,flops")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip() == ("modscope summary: error: unknown summary column 'flops' (columns: module, type, "
                                   "input, output, params, trainable, mult_adds, fwd, bwd, saved)")
