"""Rich display in Jupyter (``views/notebook.py``, the ``_repr_*`` hooks) and ``to_pandas``
(``views/frames.py``); the last test executes a real notebook with nbclient and ipykernel."""

from __future__ import annotations

import math
import sys
import textwrap

import pytest

import engine
import modscope
from modscope.views.frames import PANDAS_MISSING


def _model():
    return engine.nn.Sequential(engine.nn.Linear(3, 4), engine.nn.ReLU(),
                                engine.nn.Sequential(engine.nn.Linear(4, 2)))


def _train(steps: int = 3, stats: bool = True, seed: int = 0):
    engine.manual_seed(seed)
    model = _model()
    opt = engine.optim.SGD(model.parameters(), lr=0.1)
    with modscope.trace(model, stats=stats) as tr:
        for _ in range(steps):
            loss = model(engine.randn(5, 3)).sum()
            loss.backward()
            tr.log(loss=loss.item())
            opt.step()
            opt.zero_grad()
    return tr


@pytest.fixture(scope="module")
def traced():
    return _train()


def test_a_trace_shows_a_collapsible_tree_with_parameter_counts(traced):
    html = traced._repr_html_()
    assert "<h3>modscope trace: Sequential</h3>" in html
    assert "3 steps (0-2)" in html and f"{len(traced.events)} events" in html
    assert html.count("<details") >= 3 and "<summary>" in html
    # the root's 26 parameters, the nested Sequential's 10, the first Linear's 16
    assert '<span class="ms-np">26 params</span>' in html
    assert html.count('<span class="ms-np">10 params</span>') == 2  # "2" and "2.0"
    assert '<span class="ms-np">16 params</span>' in html
    assert 'data-path="2.0"' in html and "in_features=3, out_features=4, bias=True" in html
    assert "<table" in html and "Mult-adds" in html  # the summary table
    assert html.count("<svg") == 3  # loss, learning rate, gradient norms
    assert "<script" not in html


def test_a_loaded_trace_shows_the_same_and_says_where_it_came_from(traced, tmp_path):
    traced.save(tmp_path / "t.jsonl.gz")
    loaded = modscope.load_trace(tmp_path / "t.jsonl.gz")
    html = loaded._repr_html_()
    assert str(tmp_path / "t.jsonl.gz") in html
    strip = lambda h: h.split('<div class="ms-meta">')[1].split("</div>", 1)[1]  # noqa: E731
    assert strip(html) == strip(traced._repr_html_())


def test_a_cut_off_trace_says_so(traced, tmp_path):
    path = tmp_path / "cut.jsonl"
    traced.save(path)
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:-1]) + "\n")  # no end event
    assert "cut off" in modscope.load_trace(path)._repr_html_()


def test_summary_tree_timeline_and_diff_render_as_html(traced):
    for printable, needle, tag in ((traced.summary(), "Mult-adds", '<table class="ms-table ms-summary">'),
                                   (traced.tree(), "26 params", "<pre"), (traced.timeline(), "forward_pre", "<pre")):
        bundle = printable._repr_mimebundle_()
        assert bundle["text/plain"] == str(printable)
        assert needle in bundle["text/html"] and tag in bundle["text/html"]
    other = _train(seed=1)
    html = modscope.diff(traced, other)._repr_html_()
    assert "<pre" in html and "first" in html.lower()


def test_a_diagram_renders_as_svg():
    d = modscope.graph.build_module_tree(_model())
    bundle = d._repr_mimebundle_()
    assert bundle["image/svg+xml"].startswith("<svg") and "Linear" in bundle["image/svg+xml"]
    assert "module_tree" in bundle["text/plain"]


def test_a_diagram_without_dot_says_why(monkeypatch):
    import modscope.views.diagrams.dot as dot

    monkeypatch.setattr(dot.shutil, "which", lambda name: None)
    bundle = modscope.graph.build_module_tree(_model())._repr_mimebundle_()
    assert "image/svg+xml" not in bundle and "`dot` was not found" in bundle["text/html"]


def test_to_pandas_events(traced):
    df = traced.to_pandas()
    assert len(df) == len(traced.events)
    assert list(df["kind"]) == [e["kind"] for e in traced.events]
    assert list(df["seq"]) == [e["seq"] for e in traced.events]
    assert df.loc[df.kind == "step", "detail"].iloc[0] == "SGD lrs=[0.1]"
    assert "rank" not in df.columns


def test_to_pandas_modules_is_step_by_module(traced):
    df = traced.to_pandas("modules")
    assert sorted(set(df.step)) == [0, 1, 2]
    assert len(df) == 3 * 5  # five modules ran in each step
    row = df[(df.step == 1) & (df.module == "0")].iloc[0]
    fwd = [e for e in traced.events if e["kind"] == "forward" and e["step"] == 1 and e["path"] == "0"][0]
    assert row.cls == "Linear" and row.calls == 1 and row.output_shape == (5, 4)
    assert row.fwd_ms == pytest.approx(fwd["dur_ns"] / 1e6)
    assert row.out_mean == pytest.approx(fwd["outputs"][0]["mean"])
    items = {i["path"]: i for e in traced.events if e["kind"] == "params" and e["step"] == 1 for i in e["items"]}
    assert row.grad_norm == pytest.approx(math.hypot(items["0.weight"]["grad_norm"], items["0.bias"]["grad_norm"]))
    assert math.isnan(df[(df.step == 1) & (df.module == "1")].iloc[0].grad_norm)  # ReLU: no parameters


def test_to_pandas_params(traced):
    df = traced.to_pandas("params")
    assert len(df) == 3 * 4
    row = df[(df.step == 2) & (df.param == "2.0.weight")].iloc[0]
    item = [i for e in traced.events if e["kind"] == "params" and e["step"] == 2 for i in e["items"]
            if i["path"] == "2.0.weight"][0]
    assert row.module == "2.0" and row["shape"] == (2, 4) and row.numel == 8
    assert row.norm == pytest.approx(item["norm"]) and row.update_ratio == pytest.approx(item["update_ratio"])


def test_to_pandas_params_says_which_update_ratios_are_sampled(tmp_path):
    """A weight of more than 65,536 values has its update ratio estimated on a sample: its rows
    say on how many values (``update_sampled``); the exact ones have <NA>, also from a saved trace."""
    engine.manual_seed(0)
    model = engine.nn.Sequential(engine.nn.Linear(300, 300), engine.nn.Linear(300, 2))
    opt = engine.optim.SGD(model.parameters(), lr=0.1)
    with modscope.trace(model, stats=True) as tr:
        for _ in range(2):
            model(engine.randn(4, 300)).sum().backward()
            opt.step()
            opt.zero_grad()
    tr.save(tmp_path / "big.jsonl.gz")
    for trace in (tr, modscope.load_trace(tmp_path / "big.jsonl.gz")):
        df = trace.to_pandas("params")
        assert str(df["update_sampled"].dtype) == "Int64"
        by_param = df[df.step == 1].set_index("param")
        assert by_param.loc["0.weight", "update_sampled"] == 90_000 // 32 * 16  # every other run of 16 values
        assert by_param.loc["0.weight", "update_ratio"] > 0
        assert by_param[["update_sampled"]].drop("0.weight")["update_sampled"].isna().all()
        # its norm, mean, std and NaN/Inf counts were taken on that sample too (the default)
        assert str(df["stats_sampled"].dtype) == "Int64"
        assert by_param.loc["0.weight", "stats_sampled"] == 90_000 // 32 * 16
        assert by_param["stats_sampled"].drop("0.weight").isna().all()


def test_to_pandas_params_of_a_trace_without_sampled_items_has_the_column_empty(traced):
    df = traced.to_pandas("params")
    assert "update_sampled" in df.columns and df["update_sampled"].isna().all()
    assert "stats_sampled" in df.columns and df["stats_sampled"].isna().all()


def test_to_pandas_refuses_an_unknown_table(traced):
    with pytest.raises(ValueError, match="unknown table 'steps': choose one of events, modules, params"):
        traced.to_pandas("steps")


def test_to_pandas_without_pandas_says_how_to_install_it(traced, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas now raises ImportError
    with pytest.raises(ImportError) as info:
        traced.to_pandas()
    assert str(info.value) == PANDAS_MISSING == "to_pandas() needs pandas, which is not installed: pip install pandas"


NOTEBOOK_CELLS = [
    """
    import sys, engine, modscope
    engine.manual_seed(0)
    model = engine.nn.Sequential(engine.nn.Linear(3, 4), engine.nn.ReLU(), engine.nn.Linear(4, 2))
    opt = engine.optim.SGD(model.parameters(), lr=0.1)
    with modscope.trace(model, stats=True) as tr:
        for _ in range(2):
            loss = model(engine.randn(5, 3)).sum(); loss.backward(); tr.log(loss=loss.item()); opt.step(); opt.zero_grad()
    sys.executable
    """,
    "tr",
    "tr.save('t.jsonl.gz'); modscope.load_trace('t.jsonl.gz')",
    "tr.summary()",
    "modscope.graph.build_module_tree(model)",
    "modscope.diff(tr, modscope.load_trace('t.jsonl.gz'))",
    "tr.to_pandas('params')",
]


def test_a_real_notebook_displays_them(tmp_path):
    nbformat = pytest.importorskip("nbformat", reason="nbformat is not installed (pip install -e '.[dev]')")
    nbclient = pytest.importorskip("nbclient", reason="nbclient is not installed (pip install -e '.[dev]')")
    pytest.importorskip("ipykernel", reason="ipykernel is not installed (pip install -e '.[dev]')")
    from jupyter_client.kernelspec import NATIVE_KERNEL_NAME

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(textwrap.dedent(c).strip()) for c in NOTEBOOK_CELLS]
    # The native kernel is this interpreter (ipykernel's own spec), whatever else is installed.
    client = nbclient.NotebookClient(nb, timeout=60, kernel_name=NATIVE_KERNEL_NAME,
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    outputs = [cell.outputs[-1] for cell in nb.cells]
    assert all(o.output_type == "execute_result" for o in outputs), [o.get("ename") for o in outputs]
    data = [o.data for o in outputs]
    assert sys.prefix in data[0]["text/plain"]  # the kernel ran in this environment
    assert "modscope trace: Sequential" in data[1]["text/html"] and "<details" in data[1]["text/html"]
    assert "t.jsonl.gz" in data[2]["text/html"] and "26 params" in data[2]["text/html"]
    assert "Mult-adds" in data[3]["text/html"] and "Input shape" in data[3]["text/html"]
    assert "Memory (estimated)" in data[3]["text/html"]
    assert data[4]["image/svg+xml"].lstrip().startswith("<svg")
    assert "<pre" in data[5]["text/html"]
    assert "grad_norm" in data[6]["text/html"] and "<table" in data[6]["text/html"]


def test_a_run_of_several_ranks_lists_them(traced):
    from pathlib import Path

    from modscope.views.notebook import trace_html

    class Ranked:  # what load_trace gives for a run recorded by two ranks (one file each)
        ranks = {0: Path("run.jsonl.gz"), 1: Path("run.rank1.jsonl.gz")}
        path = Path("run.jsonl.gz")

        def iter_events(self):
            return iter(traced.events)

    html = trace_html(Ranked())
    assert "ranks of this run (2; rank_trace(R) loads one): 0: run.jsonl.gz, 1: run.rank1.jsonl.gz" in html
    assert "ranks of this run" not in traced._repr_html_()


def test_a_loaded_run_of_several_ranks_overlays_them_in_its_plots(tmp_path, monkeypatch):
    import re

    from tests.views.test_report_page import _record

    for rank, name in ((0, "run.jsonl.gz"), (1, "run.rank1.jsonl.gz")):
        monkeypatch.setenv("RANK", str(rank))
        monkeypatch.setenv("WORLD_SIZE", "2")
        _record(tmp_path / name, steps=3, seed=rank)
    html = modscope.load_trace(tmp_path / "run.jsonl.gz")._repr_html_()
    legend = re.findall(r">([^<]*· rank \d)</text>", html)
    assert legend[:4] == ["loss · rank 0", "loss · rank 1", "SGD · rank 0", "SGD · rank 1"]
    assert 'stroke-dasharray="6 3"' in html
    one = modscope.load_trace(f"{tmp_path / 'run.jsonl.gz'}#1")._repr_html_()  # a rank's file: still the run
    assert re.findall(r">([^<]*· rank \d)</text>", one)[:2] == ["loss · rank 0", "loss · rank 1"]


def test_a_loaded_run_of_several_ranks_gives_every_ranks_rows(tmp_path, monkeypatch):
    from tests.views.test_report_page import _record

    for rank, name in ((0, "run.jsonl.gz"), (1, "run.rank1.jsonl.gz")):
        monkeypatch.setenv("RANK", str(rank))
        monkeypatch.setenv("WORLD_SIZE", "2")
        _record(tmp_path / name, steps=3, seed=rank)
    run = modscope.load_trace(tmp_path / "run.jsonl.gz")
    for table in ("events", "modules", "params"):
        df = run.to_pandas(table)
        alone = [modscope.load_trace(f"{tmp_path / 'run.jsonl.gz'}#{r}").to_pandas(table, all_ranks=False)
                 for r in (0, 1)]
        assert list(df["rank"].unique()) == [0, 1], table
        assert len(df) == len(alone[0]) + len(alone[1]) and (df["rank"] == 1).sum() == len(alone[1])
        assert list(df.columns) == list(alone[0].columns if "rank" in alone[0].columns else ["rank", *alone[0].columns])
    one = modscope.load_trace(f"{tmp_path / 'run.jsonl.gz'}#1")  # a rank's file: still the run
    assert len(one.to_pandas("params")) == len(run.to_pandas("params"))
    assert set(one.to_pandas("params", all_ranks=False)["step"]) == set(alone[1]["step"])
