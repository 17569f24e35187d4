"""``modscope report``: one self-contained HTML file (``views/html/page.py``, ``cli/report.py``):
its sections, its bounds on long runs (``views/html/digest.py``), bad input, and the page in a
real headless Chromium (renders, no console errors, no network request, search and step lists
work)."""

from __future__ import annotations

import re

import pytest

import engine
import modscope
from modscope.cli import main
from modscope.views.html.digest import Series, StepSampler, TraceDigest
from modscope.views.html.page import build_report
from modscope.views.html.plots import line_chart, nice_ticks

from ._browser import PageWatch, browser


def _record(path, steps: int = 4, seed: int = 0):
    engine.manual_seed(seed)
    model = engine.nn.Sequential(engine.nn.Linear(3, 4), engine.nn.ReLU(),
                                 engine.nn.Sequential(engine.nn.Linear(4, 2), engine.nn.BatchNorm1d(2)))
    opt = engine.optim.SGD(model.parameters(), lr=0.1)
    sched = engine.optim.lr_scheduler.StepLR(opt, 2, 0.5)

    def scale_hook(module, inputs, output):  # a hook of the user's: its event sits in the firing order
        return None

    model[0].register_forward_hook(scale_hook)
    with modscope.trace(model, stats=True) as tr:
        for _ in range(steps):
            loss = model(engine.randn(5, 3)).pow(2).mean()
            loss.backward()
            tr.log(loss=loss.item())
            opt.step()
            opt.zero_grad()
            sched.step()
    tr.save(path)
    return tr


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    d = tmp_path_factory.mktemp("report")
    _record(d / "a.jsonl.gz")
    _record(d / "b.jsonl.gz", seed=1)
    return d / "a.jsonl.gz", d / "b.jsonl.gz"


def test_the_report_has_every_section_and_references_nothing(traces, tmp_path, capsys):
    a, b = traces
    out = tmp_path / "run.html"
    assert main(["report", str(a), "--compare", str(b), "-o", str(out)]) == 0
    assert capsys.readouterr().err.strip().startswith(f"wrote {out} (")
    html = out.read_text(encoding="utf-8")
    for section in ("modules", "summary", "plots", "params", "timeline", "graph", "diff"):
        assert f'<h2 id="{section}">' in html
    assert 'id="ms-tree-search"' in html and 'data-path="2.1"' in html and "BatchNorm1d" in html
    assert "running_mean" in html and "num_batches_tracked" in html  # the buffers
    assert html.count("<svg") >= 4  # three plots and the autograd graph
    assert "cluster" in html and "AddmmBackward0" in html  # the graph with module clusters
    assert "diverged at step 0" in html  # the diff (other weights)
    # offline: no URL but the SVG namespaces, no external resource of any kind
    urls = set(re.findall(r"https?://[^\"' )<>]+", html))
    assert urls <= {"http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"}, urls
    assert not re.search(r"<(?:link|img|iframe)\b|\bsrc=", html)


def _lines(t: dict) -> list[list]:
    """A step's firing order as the page's script reads it (flat triples ``m``, others ``o``)."""
    out, others, m = [], {o[0]: o[1:] for o in t["o"]}, iter(t["m"])
    for i in range(len(t["m"]) // 3 + len(t["o"])):
        out.append(others[i] if i in others else [next(m), next(m), next(m)])
    return out


def test_the_page_data_is_each_steps_params_and_firing_order(traces):
    a, _ = traces
    html = build_report(a).html
    data = __import__("json").loads(re.search(r'id="ms-data">(.*?)</script>', html, re.S).group(1))
    assert sorted(data["timelines"], key=int) == ["0", "1", "2", "3"] and sorted(data["params"], key=int) == [
        "0", "1", "2", "3"]
    loaded = modscope.load_trace(a)
    step2 = [e for e in loaded.iter_events() if e["step"] == 2 and e["kind"] in
             ("forward_pre", "forward", "backward_pre", "backward")]
    kinds = ("forward_pre", "forward", "backward_pre", "backward")
    lines = _lines(data["timelines"]["2"])
    assert [line[1:] for line in lines if line[0] == 4] == [["_record.<locals>.scale_hook", "forward", "0", False]]
    assert [(kinds[c], data["paths"][p], call) for c, p, call in (line for line in lines if line[0] < 4)] == [
        (e["kind"], e["path"], e["call"]) for e in step2]
    items = next(e for e in loaded.iter_events() if e["kind"] == "params" and e["step"] == 3)["items"]
    assert [r[0] for r in data["params"]["3"]] == [i["path"] for i in items]
    assert data["params"]["3"][0][1] == pytest.approx(items[0]["norm"], rel=1e-4)
    assert data["pinfo"]["0.weight"] == ["(4, 3)", "float32", 12, "yes"]
    assert data["pinfo"]["2.1.running_mean"] == ["(2,)", "float32", 2, "buffer"]


def test_missing_and_damaged_traces_are_one_line_and_exit_2(traces, tmp_path, capsys):
    a, _ = traces
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"v": 1, "kind": "session"}\n')
    for argv, name in ((["report", str(tmp_path / "nope.jsonl"), "-o", str(tmp_path / "o.html")], "nope.jsonl"),
                       (["report", str(bad), "-o", str(tmp_path / "o.html")], "bad.jsonl:1"),
                       (["report", str(a), "--compare", str(tmp_path / "gone.jsonl"), "-o", str(tmp_path / "o.html")],
                        "gone.jsonl")):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("modscope report: error: ") and name in err
    assert not (tmp_path / "o.html").exists()


def test_an_output_that_cannot_be_written_exits_1(traces, tmp_path, capsys):
    a, _ = traces
    assert main(["report", str(a), "-o", str(tmp_path / "no" / "dir" / "run.html")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("modscope report: error: cannot write the report") and "run.html" in err


def test_a_trace_without_dot_still_reports_and_says_why(traces, monkeypatch):
    import modscope.views.diagrams.dot as dot

    monkeypatch.setattr(dot.shutil, "which", lambda name: None)
    report = build_report(traces[0])
    assert report.warnings and "`dot` was not found" in report.warnings[0]
    assert "not drawn:" in report.html


# --- bounds -------------------------------------------------------------------------------------

def test_the_step_sampler_keeps_its_budget_and_the_last_step():
    sampler = StepSampler(budget=100, max_steps=8)
    for step in range(1000):
        sampler.offer(step, step, 10, last=step == 999)
        assert sampler.units <= 100 + 10 and len(sampler.kept) <= 9
    steps = sampler.steps()
    assert steps[0] == 0 and steps[-1] == 999 and sampler.sampled
    gaps = {b - a for a, b in zip(steps[:-2], steps[1:-1])}
    assert gaps == {sampler.stride}  # evenly spaced, then the last


def test_a_series_is_thinned_evenly_and_keeps_its_last_point():
    s = Series(cap=50)
    for i in range(1001):
        s.add(i, float(i))
    pts = s.points()
    assert len(pts) <= 51 and pts[0] == (0, 0.0) and pts[-1] == (1000, 1000.0)
    s.add(1001, float("nan"))  # not finite: not a point
    assert s.points()[-1] == (1000, 1000.0)


def _synthetic(steps: int, modules: int) -> list[dict]:
    """A trace of ``modules`` Linear layers in a Sequential, ``steps`` steps, built as events."""
    from modscope.events.schema import make

    paths = [str(i) for i in range(modules)]
    model = make("model", 0, 0, 0, model="Sequential",
                 modules=[{"path": "", "cls": "Sequential", "extra_repr": "", "training": True, "children": paths,
                           "aliases": []}]
                 + [{"path": p, "cls": "Linear", "extra_repr": "in_features=2, out_features=2, bias=False",
                     "training": True, "children": [], "aliases": []} for p in paths],
                 params=[{"path": f"{p}.weight", "shape": [2, 2], "dtype": "float32", "numel": 4, "requires_grad": True}
                         for p in paths], buffers=[])
    events, seq = [model], 1
    s = {"shape": [1, 2], "dtype": "float32"}
    for step in range(steps):
        for kind, key in (("forward_pre", "inputs"), ("forward", "outputs")):
            for p in ["", *paths] if kind == "forward_pre" else [*paths, ""]:
                extra = {"dur_ns": 1000} if kind == "forward" else {}
                events.append(make(kind, seq, seq, step, path=p, call=0, **{key: [s]}, **extra))
                seq += 1
        events.append(make("params", seq, seq, step, items=[
            {"path": f"{p}.weight", "norm": 1.0, "grad_norm": 0.1 * (step + 1), "update_ratio": 1e-3, "mean": 0.0,
             "std": 1.0, "nan": 0, "inf": 0} for p in paths]))
        events.append(make("metric", seq + 1, seq + 1, step, values={"loss": 1.0 / (step + 1)}))
        seq += 2
    return events


def test_a_long_run_is_sampled_and_the_page_says_so():
    digest = TraceDigest(_synthetic(steps=300, modules=50), timeline_lines=2_000, param_cells=5_000)
    kept = digest.timelines.steps()
    assert kept[-1] == 299 and sum(len(digest.timelines.payload(s)) for s in kept) <= 2_000 + 102
    assert digest.params.steps()[-1] == 299 and digest.params.units <= 5_000 + 251
    notes = " ".join(digest.notes())
    assert f"hook firing order: {len(kept)} of 300 steps kept" in notes
    assert "parameters: " in notes and "of 300 steps with statistics kept" in notes
    assert digest.metrics["loss"].points()[-1] == (299, pytest.approx(1 / 300))


def test_a_step_longer_than_its_line_budget_is_cut_and_says_so(monkeypatch):
    import modscope.views.html.digest as digest_module

    monkeypatch.setattr(digest_module, "TIMELINE_STEP_LINES", 30)
    digest = TraceDigest(_synthetic(steps=2, modules=50))
    assert len(digest.timelines.payload(1)) == 30 and digest.timelines.payload(1).cut == 102 - 30
    assert "hook firing order: 144 events past 30 in a step left out" in digest.notes()


# --- plots --------------------------------------------------------------------------------------

def test_nice_ticks():
    assert nice_ticks(0, 10) == [0, 2, 4, 6, 8, 10]
    assert nice_ticks(0, 3, 6, integer=True) == [0, 1, 2, 3]
    assert nice_ticks(0.0012, 0.0101) == pytest.approx([0.002, 0.004, 0.006, 0.008, 0.01])


def test_a_chart_draws_each_series_and_goes_log_for_wide_ranges():
    svg = line_chart({"a": [(0, 1.0), (1, 2.0)], "b <x>": [(0, 1e-6), (1, 1.0)]}, title="t")
    assert svg.count("<polyline") == 2 and "b &lt;x&gt;" in svg and "(log y)" in svg
    assert "no data" in line_chart({"a": []}, title="loss")


# --- in a real browser --------------------------------------------------------------------------

def test_the_report_in_headless_chromium(traces, tmp_path):
    a, b = traces
    out = tmp_path / "run.html"
    assert main(["report", str(a), "--compare", str(b), "-o", str(out)]) == 0
    with browser() as chromium:
        page = chromium.new_page()
        watch = PageWatch(page)
        page.goto(out.as_uri())
        page.wait_for_load_state("load")
        assert page.title() == "modscope report: Sequential"
        # the script drew the chosen step's parameters and firing order
        assert page.locator("#ms-params-body tr").count() == 9  # 6 parameters, 3 BatchNorm buffers
        assert "2.1.num_batches_tracked () int64 1 buffer 4" in " ".join(page.locator("#ms-params-body").inner_text().split())
        assert page.locator("#ms-timeline").inner_text().splitlines()[0].strip() == "▶ forward_pre  (root)"
        page.select_option("#ms-timeline-step", "0")
        timeline = page.locator("#ms-timeline").inner_text().splitlines()
        assert "backward     0" in "\n".join(timeline)
        at = next(i for i, line in enumerate(timeline) if "• hook" in line)  # between the Linear's pre and post
        assert "scale_hook (forward on 0)" in timeline[at] and timeline[at - 1].strip() == "▶ forward_pre  0"
        # search: one module matches, its ancestors stay, the rest hide
        page.fill("#ms-tree-search", "batchnorm")
        assert page.locator("#ms-tree-count").inner_text() == "1 module matches"
        visible = page.locator("#ms-tree li[data-path]:visible")
        assert sorted(visible.evaluate_all("els => els.map(e => e.dataset.path)")) == ["", "2", "2.1"]
        page.fill("#ms-tree-search", "")
        assert page.locator("#ms-tree li[data-path]:visible").count() == 6
        assert page.locator("#graph + div svg, #graph ~ div svg").count() >= 1
        assert watch.errors == []
        assert watch.requests == [out.as_uri()]


def test_a_run_of_several_ranks_lists_each_ranks_file(traces, tmp_path):
    from modscope.views.html.page import _ranks

    a, b = traces
    cut = tmp_path / "cut.jsonl"
    cut.write_text("")  # a rank whose recording never started

    class Ranked:
        path = a
        ranks = {0: a, 1: b, 2: cut}

    html = _ranks(Ranked())
    assert f"<td>0 (this page)</td><td class=l>{a}</td>" in html
    assert f"<td>1</td><td class=l>{b}</td><td class=l>{len(modscope.load_trace(b)):,} events</td>" in html
    assert "cut.jsonl: empty trace file (no events)" in html
    assert _ranks(type("One", (), {"path": a, "ranks": {0: a}})()) == ""


def _plain_trace(path, steps: int) -> None:
    """A small Sequential trained ``steps`` steps under a plain trace (no statistics), saved."""
    engine.manual_seed(0)
    model = engine.nn.Sequential(engine.nn.Linear(3, 4), engine.nn.ReLU(), engine.nn.Linear(4, 2))
    with modscope.trace(model) as tr:
        for _ in range(steps):
            model(engine.randn(5, 3)).sum().backward()
            tr.step()
    tr.save(path)


def test_module_lines_read_unparsed_give_the_same_page(tmp_path):
    """Without statistics every module line is read through ``files.MODULE_LINE`` (not parsed):
    the page's firing order is the file's, and the tree's figures come from the parsed best step."""
    _plain_trace(tmp_path / "plain.jsonl", steps=3)
    from modscope.events.files import TraceScan

    assert all(type(e) is not dict for _, _, e in TraceScan(tmp_path / "plain.jsonl").module_lines()
               if type(e) is not dict or e["kind"] in ("forward_pre", "forward", "backward_pre", "backward"))
    html = build_report(tmp_path / "plain.jsonl").html
    data = __import__("json").loads(re.search(r'id="ms-data">(.*?)</script>', html, re.S).group(1))
    kinds = ("forward_pre", "forward", "backward_pre", "backward")
    got = [(kinds[c], data["paths"][p]) for step in sorted(data["timelines"], key=int) for c, p, _ in
           _lines(data["timelines"][step])]
    assert got == modscope.load_trace(tmp_path / "plain.jsonl").firing_order()
    assert '<span class="ms-np">26 params</span>' in html and 'fwd ' in html


def _firing_order(events: list[dict], step: int, cut: int) -> tuple[list[tuple], int]:
    """What the page should show of ``step``: its first ``cut`` lines (module events, hooks,
    errors, in the file's order) and how many module events after them were left out."""
    kinds = ("forward_pre", "forward", "backward_pre", "backward")
    lines, left_out = [], 0
    for e in (e for e in events if e["step"] == step):
        if e["kind"] in kinds:
            line = (e["kind"], e["path"], e["call"])
        elif e["kind"] == "hook":
            line = ("hook", e["qualname"], e["hook_kind"], e["target"], e["replaced"])
        elif e["kind"] == "error":
            line = ("error", e["etype"], e["message"], e["module"] or "")
        else:
            continue
        if len(lines) < cut:
            lines.append(line)
        elif line[0] in kinds:
            left_out += 1
    return lines, left_out


@pytest.mark.parametrize("cut", [10_000, 17, 4])
def test_the_firing_order_of_matched_and_parsed_lines_hooks_and_errors(tmp_path, monkeypatch, cut):
    """A step's module lines read unparsed (``files.MODULE_LINE``) and parsed (here: written with
    spaces), hooks and errors among them: each kept step shows its lines in the file's order, the
    first ``TIMELINE_STEP_LINES`` of them, and counts the module events cut after them."""
    import json

    import modscope.views.html.digest as digest_module
    from modscope.events.schema import make

    monkeypatch.setattr(digest_module, "TIMELINE_STEP_LINES", cut)
    _plain_trace(tmp_path / "plain.jsonl", steps=6)
    out, n = [], 0
    for line in (tmp_path / "plain.jsonl").read_bytes().splitlines():
        e = json.loads(line)
        n += 1
        out.append(json.dumps(e).encode() if e["kind"] in ("forward", "backward_pre") and n % 3 else line)
        if e["kind"] == "forward" and n % 4 == 0:
            out.append(json.dumps(make("error", e["seq"], e["t"], e["step"], etype="ValueError", message=f"bad {n}",
                                       where="forward", module=e["path"] or None, traceback="")).encode())
        if e["kind"] == "backward" and n % 2:
            out.append(json.dumps(make("hook", e["seq"], e["t"], e["step"], qualname=f"h{n}", target=e["path"],
                                       hook_kind="backward", replaced=bool(n % 3), dur_ns=5)).encode())
    (tmp_path / "mixed.jsonl").write_bytes(b"\n".join(out) + b"\n")
    events = list(modscope.load_trace(tmp_path / "mixed.jsonl").iter_events())
    assert sum(e["kind"] == "error" for e in events) >= 4 and sum(e["kind"] == "hook" for e in events) >= 6

    html = build_report(tmp_path / "mixed.jsonl").html
    data = json.loads(re.search(r'id="ms-data">(.*?)</script>', html, re.S).group(1))
    kinds = ("forward_pre", "forward", "backward_pre", "backward", "hook", "error")
    assert data["timelines"]
    for step, timeline in data["timelines"].items():
        got = [(kinds[line[0]], data["paths"][line[1]], line[2]) if line[0] < 4 else (kinds[line[0]], *line[1:])
               for line in _lines(timeline)]
        want, left_out = _firing_order(events, int(step), cut)
        assert got == want and data["timeline_cut"].get(step, 0) == left_out
    if cut < 10_000:
        assert "events past" in html


def test_the_collector_is_paused_while_a_report_is_built_and_restored_after(traces, tmp_path, monkeypatch):
    """``build_report`` turns Python's cyclic collector off while it reads and draws (its
    collections traversed a big trace's objects again and again) and leaves it as it found it,
    also when the trace is bad."""
    import gc

    import modscope.views.html.page as page_module

    seen = []
    digest = page_module.TraceDigest
    monkeypatch.setattr(page_module, "TraceDigest", lambda *a, **k: seen.append(gc.isenabled()) or digest(*a, **k))
    a, _ = traces
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    was = gc.isenabled()
    try:
        gc.enable()
        assert "<h2 id=\"timeline\">" in build_report(a).html and gc.isenabled() and seen == [False]
        with pytest.raises(modscope.TraceFileError):
            build_report(bad)
        assert gc.isenabled()
        gc.disable()
        build_report(a)
        assert not gc.isenabled() and seen == [False, False, False]
    finally:
        (gc.enable if was else gc.disable)()


def test_a_report_draws_its_graph_without_importing_textual(traces):
    """The report's graph hides the hook nodes by the TUI's rule (``diagrams.hook_nodes``)
    without importing the TUI's widgets: importing textual cost a report ~0.3 s CPU."""
    import subprocess
    import sys

    a, _ = traces
    code = ("import sys; from modscope.views.html.page import build_report; r = build_report(sys.argv[1]); "
            "assert 'AddmmBackward0' in r.html and not r.warnings, r.warnings; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'textual'))")
    done = subprocess.run([sys.executable, "-c", code, str(a)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory):
    """A run of two ranks as ``modscope record`` under torchrun writes it: ``run.jsonl.gz`` (rank 0)
    and ``run.rank1.jsonl.gz`` beside it, each rank's session naming its rank, other data each."""
    d = tmp_path_factory.mktemp("ranks")
    with pytest.MonkeyPatch.context() as mp:
        for rank, name in ((0, "run.jsonl.gz"), (1, "run.rank1.jsonl.gz")):
            mp.setenv("RANK", str(rank))
            mp.setenv("LOCAL_RANK", str(rank))
            mp.setenv("WORLD_SIZE", "2")
            _record(d / name, steps=5, seed=rank)
    return d / "run.jsonl.gz"


def _legend(svg_html: str) -> list[str]:
    return re.findall(r"</?text[^>]*>([^<]*· rank \d+)</text>", svg_html)


def test_the_ranks_of_a_run_are_overlaid_in_every_plot(two_ranks):
    html = build_report(two_ranks).html
    plots = html[html.index('<h2 id="plots">'):html.index('<h2 id="params">')]
    charts = plots.split('<div class="ms-svg">')[1:]
    assert len(charts) == 3  # metrics, learning rate, gradient norms
    metrics, lr, grads = charts
    assert _legend(metrics) == ["loss · rank 0", "loss · rank 1"]
    assert _legend(lr) == ["SGD · rank 0", "SGD · rank 1"]
    # the top-level modules with parameters (0 and 2; at most 8 lines over 2 ranks: 4 modules),
    # the largest on rank 0 first, each drawn for both ranks
    modules = [label.split(" · ")[0] for label in _legend(grads)[::2]]
    assert sorted(modules) == ["0", "2"]
    assert _legend(grads) == [f"{m} · rank {r}" for m in modules for r in (0, 1)]
    for chart in charts:  # one colour per quantity, rank 1 dashed
        lines = re.findall(r'<polyline fill="none" stroke="(#[0-9A-F]{6})" stroke-width="1.5"( stroke-dasharray="6 3")?',
                           chart)
        assert [dash for _, dash in lines] == ["", ' stroke-dasharray="6 3"'] * (len(lines) // 2)
        assert all(lines[i][0] == lines[i + 1][0] for i in range(0, len(lines), 2))
    # the two ranks' losses differ (other data): two different lines, each its rank's own values
    losses = {r: [e["values"]["loss"] for e in modscope.load_trace(f"{two_ranks}#{r}") if e["kind"] == "metric"]
              for r in (0, 1)}
    assert losses[0] != losses[1]


def test_a_single_rank_and_a_broken_rank_file(two_ranks, traces, tmp_path):
    a, _ = traces
    assert "· rank" not in build_report(a).html  # one process: the plots as before
    import shutil

    run = tmp_path / "run.jsonl.gz"
    shutil.copy(two_ranks, run)
    (tmp_path / "run.rank1.jsonl.gz").write_bytes(b"not a trace\n")
    html = build_report(run).html
    assert "run.rank1.jsonl.gz" in html and "not a modscope trace" in html  # the ranks table says so
    plots = html[html.index('<h2 id="plots">'):html.index('<h2 id="params">')]
    assert _legend(plots)[:1] == ["loss · rank 0"] and "rank 1" not in plots  # the rank that loads is drawn


def test_the_loss_is_plotted_without_modscope_log(tmp_path, lib):
    """A step event carries the loss its backward started from: a program that logs nothing
    still gets its loss curve, in the report and in a notebook, as in the TUI; a logged
    ``loss`` is the one drawn when there is one."""
    model = lib.nn.Linear(3, 1)
    opt = lib.optim.SGD(model.parameters(), lr=0.1)
    with modscope.trace(model) as tr:
        for _ in range(3):
            opt.zero_grad()
            model(lib.randn(4, 3)).pow(2).mean().backward()
            opt.step()
    path = tmp_path / "t.jsonl"
    tr.save(path)
    losses = [e["loss"] for e in tr.events if e["kind"] == "step"]
    assert len(losses) == 3 and all(isinstance(x, float) for x in losses)
    digest = TraceDigest(modscope.load_trace(path).iter_events())
    assert digest.metrics["loss"].points() == [(0, losses[0]), (1, losses[1]), (2, losses[2])]
    for html in (build_report(path).html, modscope.load_trace(path)._repr_html_()):
        assert re.search(r">loss</text>", html)
    logged = [e | {"kind": "metric", "values": {"loss": 7.0}} for e in tr.events if e["kind"] == "step"]
    assert TraceDigest(tr.events + logged).metrics["loss"].points() == [(0, 7.0), (1, 7.0), (2, 7.0)]


def test_a_sampled_update_ratio_travels_to_the_page_as_an_estimate():
    """A ``params`` item with ``update_sampled`` (a large tensor's ratio measured on a sample)
    gives its row that count last, which the page draws as ``≈`` and a title; an item without it
    (an older trace, or an exact ratio) gives 0."""
    import json

    from modscope.views.html.page import _data

    events = _synthetic(steps=2, modules=2)
    params = [e for e in events if e["kind"] == "params"][-1]
    params["items"][1]["update_sampled"] = 65_536
    digest = TraceDigest(events)
    data = json.loads("".join(_data(digest)))
    rows = data["params"]["1"]
    assert [r[8] for r in rows] == [0, 65_536] and rows[1][3] == pytest.approx(1e-3)
    assert [r[8] for r in data["params"]["0"]] == [0, 0]
    from modscope.views.html.assets import PAGE_JS
    assert "estimated on " in PAGE_JS and "\\u2248" in PAGE_JS


def test_sampled_values_figures_are_drawn_as_estimates(tmp_path):
    """A ``params`` item with ``stats_sampled`` (a large tensor's norm, mean, std and NaN/Inf
    counts taken on its update's sample) gives its row that count last; in a real browser its
    norm, mean, std and NaN/Inf cells read ``≈`` with a title, its gradient norm and the exact
    row's cells do not."""
    import json

    from modscope.events.schema import dumps_bytes
    from modscope.views.html.page import _data

    events = _synthetic(steps=2, modules=2)
    params = [e for e in events if e["kind"] == "params"][-1]
    params["items"][1].update(update_sampled=65_536, stats_sampled=65_536, nan=2)
    rows = json.loads("".join(_data(TraceDigest(events))))["params"]["1"]
    assert [r[8:] for r in rows] == [[0, 0], [65_536, 65_536]]
    path, out = tmp_path / "t.jsonl", tmp_path / "t.html"
    path.write_bytes(b"\n".join(map(dumps_bytes, events)) + b"\n")
    assert main(["report", str(path), "-o", str(out)]) == 0
    with browser() as chromium:
        page = chromium.new_page()
        page.goto(out.as_uri())
        page.wait_for_load_state("load")
        cells = [[c.strip() for c in row.split("\t")] for row in page.locator("#ms-params-body").inner_text().splitlines()]
        assert cells[0][5:] == ["1", "0.2", "0.001", "0", "1", "0 / 0"]
        assert cells[1][5:] == ["≈1", "0.2", "≈0.001", "≈0", "≈1", "≈2 / 0"]
        title = page.locator("#ms-params-body tr").nth(1).locator("td").nth(5).get_attribute("title")
        assert title == "estimated on 65536 sampled values"
