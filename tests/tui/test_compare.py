"""Comparing two steps in the TUI (``d``) and a second trace (``replay --compare``): the tree's
badges and first marker, the parameter table's Δ column, the timeline's split marker, clearing it."""

from __future__ import annotations

import copy
import gzip
import json

import pytest
from textual.widgets import Button, Input, Static

from modscope.cli import main
from modscope.views.diff import rel_diff
from modscope.views.tui.app import ModscopeApp
from modscope.views.tui.compare import CompareError, OtherTrace, compare_steps, session_step_whole
from modscope.views.tui.screens import CompareScreen, help_text
from modscope.views.tui.sources import EventListSource, ReplaySource
from modscope.views.tui.state import SessionState
from modscope.views.tui.widgets.module_tree import ModuleTree
from modscope.views.tui.widgets.params_table import ParamsTable
from modscope.views.tui.widgets.timeline import SPLIT, HookTimeline
from tests.tui.conftest import TRACE
from tests.tui.test_app import loaded, settle


def twin_steps(events: list[dict]) -> list[dict]:
    """Steps 0-4 of the recorded session, then a step 5 that repeats step 4 except: ``head``'s
    output mean is 1.5 times as large, and in the backward of ``blk``'s second call ``blk.a``
    fires before ``blk.b`` (the orders part there)."""
    kept = [e for e in events if e["step"] < 5 and e["kind"] != "end"]
    five = copy.deepcopy([e for e in events if e["step"] == 4])
    for e in five:
        e["step"] = 5
        if e["kind"] == "forward" and e["path"] == "head":
            e["outputs"][0]["mean"] *= 1.5
    i = next(i for i, e in enumerate(five) if (e["kind"], e.get("path"), e.get("call")) == ("backward_pre", "blk.b", 1))
    five[i:i + 4] = five[i + 2:i + 4] + five[i:i + 2]  # blk.a's backward pair, then blk.b's
    assert [(e["kind"], e["path"]) for e in five[i:i + 4]] == [("backward_pre", "blk.a"), ("backward", "blk.a"),
                                                               ("backward_pre", "blk.b"), ("backward", "blk.b")]
    seq = kept[-1]["seq"]
    end = dict(next(e for e in events if e["kind"] == "end"))
    out = kept + five + [end]
    for e in out[len(kept):]:
        seq += 1
        e["seq"] = seq
        e["t"] = seq * 1_000_000
    return out


def badge(tree: ModuleTree, path: str) -> str:
    return tree.badges[path].plain if path in tree.badges else ""


def timeline_line(timeline: HookTimeline, index: int) -> str:
    return "".join(seg.text for seg in timeline._strip(index))


async def compare(pilot, app, a: int, b: int) -> None:
    await pilot.press("d")
    await settle(pilot, app, lambda a_: isinstance(a_.screen, CompareScreen))
    for field, step in (("#a", a), ("#b", b)):
        app.screen.query_one(field, Input).value = str(step)
    await pilot.press("enter")
    await settle(pilot, app, lambda a_: a_.comparison is not None and a_.comparison.step_a == a
                 and a_.comparison.step_b == b)


@pytest.mark.asyncio
async def test_comparing_two_steps_badges_the_tree_adds_a_delta_column_and_marks_the_split(events):
    app = ModscopeApp(EventListSource(twin_steps(events)))
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot, app, loaded)
        await settle(pilot, app, lambda a: a.selected == "blk.a")
        await compare(pilot, app, 5, 4)
        tree = app.query_one(ModuleTree)
        await settle(pilot, app, lambda a: "◀ first" in badge(tree, "head"))
        # head's output mean is 1.5 times as large: relative to the tensor's magnitude (the diff's
        # rule) a difference past the threshold, red; blk.a is equal (its backward moved, which is
        # the order's split, not a number)
        out = next(e for e in events if e["step"] == 4 and e["kind"] == "forward" and e["path"] == "head")
        expected = rel_diff(out["outputs"][0]["mean"], 1.5 * out["outputs"][0]["mean"],
                            out["outputs"][0]["absmax"])
        assert badge(tree, "head") == f" Δ{expected:.1e} ◀ first" and tree.badges["head"].style == "bold red"
        assert badge(tree, "blk.a") == " Δ0.0e+00" and tree.badges["blk.a"].style == "dim"
        assert "◀ first" not in badge(tree, "blk.a")
        assert tree.root.children  # the label is drawn with its badge
        label = tree._label_of("head").plain
        assert label.endswith(f"Δ{expected:.1e} ◀ first")
        assert tree._widths["head"] == len(label)  # the column is as wide as the badged label
        assert app.sub_title == "comparing step 5 with 4 · rtol 1e-03 · first: head"
        # the parameter table: a Δ column, the same parameters in both steps
        table = app.query_one(ParamsTable)
        assert [c.label.plain for c in table.columns.values()][-1] == "Δ"
        assert str(table.get_cell("blk.a.weight", list(table.columns)[-1])) == "0.0e+00 norm"
        # the timeline shows step 5 and marks where the orders part: blk.a's backward (call 1)
        timeline = app.query_one(HookTimeline)
        await settle(pilot, app, lambda a: "· ≠ order ·" in timeline.border_title)
        assert timeline.step == 5 and timeline.border_subtitle.startswith(
            "the orders part at event 28 (backward_pre blk.b in step 4) · ")
        marked = [i for i in range(timeline.line_count) if timeline_line(timeline, i).startswith(SPLIT)]
        assert len(marked) == 1
        row, _ = timeline._rows[marked[0]]
        assert (row["kind"], row["path"], row["call"]) == ("backward_pre", "blk.a", 1)
        # another step in the timeline: no marker there (the comparison stays on 5 with 4)
        await pilot.press("left_square_bracket")
        await settle(pilot, app, lambda a: timeline.step == 4 and "≠" not in timeline.border_title)
        assert "orders part" not in timeline.border_subtitle
        assert app.sub_title.startswith("comparing step 5 with 4")


@pytest.mark.asyncio
async def test_clearing_the_comparison_restores_every_view(events):
    app = ModscopeApp(EventListSource(twin_steps(events)))
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot, app, loaded)
        await settle(pilot, app, lambda a: a.selected == "blk.a")
        await compare(pilot, app, 5, 4)
        timeline = app.query_one(HookTimeline)
        await settle(pilot, app, lambda a: "≠ order" in timeline.border_title)
        await pilot.press("d")
        await settle(pilot, app, lambda a: isinstance(a.screen, CompareScreen))
        await pilot.click("#clear")
        await settle(pilot, app, lambda a: a.comparison is None and "≠" not in timeline.border_title)
        tree, table = app.query_one(ModuleTree), app.query_one(ParamsTable)
        assert tree.badges == {} and "Δ" not in tree._label_of("head").plain
        assert [c.label.plain for c in table.columns.values()][-1] == "std"
        assert app.sub_title == "events"  # the source's own description again
        assert not any(timeline_line(timeline, i).startswith(SPLIT) for i in range(timeline.line_count))


@pytest.mark.asyncio
async def test_the_compare_dialog_refuses_a_step_that_is_not_kept(events):
    app = ModscopeApp(EventListSource(twin_steps(events)))
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot, app, loaded)
        await pilot.press("d")
        await settle(pilot, app, lambda a: isinstance(a.screen, CompareScreen))
        # the defaults: the step on screen and the one before it
        assert app.screen.query_one("#a", Input).value == "5" and app.screen.query_one("#b", Input).value == "4"
        assert not app.screen.query("#trace")  # no second trace: no button for it
        app.screen.query_one("#b", Input).value = "9"
        await pilot.press("enter")
        await pilot.pause(0.1)
        assert isinstance(app.screen, CompareScreen)
        assert "step 9 is not kept (kept: 0–5)" in str(app.screen.query_one("#error", Static).render())
        app.screen.query_one("#b", Input).value = "x"
        await pilot.press("enter")
        await pilot.pause(0.1)
        assert "not a step number: 'x'" in str(app.screen.query_one("#error", Static).render())
        await pilot.press("escape")
        await pilot.pause(0.1)
        assert app.comparison is None and app.compare_mode is None


def same_steps_trace(path, events: list[dict]) -> None:
    path.write_text("".join(json.dumps(e) + "\n" for e in events))


def changed_layer(events: list[dict], layer: str) -> list[dict]:
    """The session with ``layer``'s forward outputs changed in every step (mean and max)."""
    out = copy.deepcopy(events)
    for e in out:
        if e["kind"] == "forward" and e["path"] == layer:
            e["outputs"][0]["mean"] *= 1.5
            e["outputs"][0]["max"] *= 1.5
    return out


async def replay_compared(b_path):
    app = ModscopeApp(ReplaySource(TRACE), compare=OtherTrace(b_path))
    return app


@pytest.mark.asyncio
async def test_replay_compare_with_the_same_trace_shows_nothing_past_the_threshold(events, tmp_path):
    b = tmp_path / "same.jsonl.gz"
    with gzip.open(b, "wt") as f:  # compressed, as `modscope run` records: read by content
        f.write(TRACE.read_text())
    app = await replay_compared(b)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot, app, loaded)
        await settle(pilot, app, lambda a: a.comparison is not None and a.comparison.step_a == 5)  # the last step
        tree = app.query_one(ModuleTree)
        assert tree.badges and all(b_.plain.startswith(" Δ0.0e+00") for b_ in tree.badges.values())
        assert not any(b_.style == "bold red" or "first" in b_.plain for b_ in tree.badges.values())
        assert app.sub_title == "comparing step 5 with step 5 of same.jsonl.gz · rtol 1e-03 · " \
                                "no difference past the threshold"
        timeline = app.query_one(HookTimeline)
        await settle(pilot, app, lambda a: "· same order ·" in timeline.border_title
                     and timeline.border_subtitle.startswith("as same.jsonl.gz step 5 · "))


@pytest.mark.asyncio
async def test_replay_compare_follows_the_step_on_screen_and_names_the_changed_layer(events, tmp_path):
    b = tmp_path / "changed.jsonl"
    same_steps_trace(b, changed_layer(events, "blk.b"))
    app = await replay_compared(b)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot, app, loaded)
        await settle(pilot, app, lambda a: a.comparison is not None and a.comparison.step_a == 5)  # the last step
        tree = app.query_one(ModuleTree)
        assert "◀ first" in badge(tree, "blk.b") and tree.badges["blk.b"].style == "bold red"
        assert not any("first" in badge(tree, p) for p in ("", "blk", "blk.a", "head"))
        assert app.sub_title.endswith("first: blk.b")
        # another step on screen: compared with B's same step
        await pilot.press("left_square_bracket")
        await settle(pilot, app, lambda a: a.comparison is not None and a.comparison.step_a == 4)
        assert app.comparison.step_b == 4 and app.comparison.first_path == "blk.b"
        # the dialog offers the second trace; Clear turns it off, the button turns it back on
        await pilot.press("d")
        await settle(pilot, app, lambda a: isinstance(a.screen, CompareScreen))
        assert "changed.jsonl" in str(app.screen.query_one("#trace", Button).label)
        await pilot.click("#clear")
        await settle(pilot, app, lambda a: a.comparison is None and not tree.badges)
        await pilot.press("d")
        await settle(pilot, app, lambda a: isinstance(a.screen, CompareScreen))
        await pilot.click("#trace")
        await settle(pilot, app, lambda a: a.comparison is not None and a.comparison.first_path == "blk.b")


def test_a_step_the_second_trace_lacks_is_a_note_not_a_crash(events, tmp_path):
    b = tmp_path / "short.jsonl"
    same_steps_trace(b, [e for e in events if e["step"] < 3 and e["kind"] != "end"])
    state = SessionState()
    with state.lock:
        for e in events:
            state.apply(e)
    other = OtherTrace(b)
    assert other.steps == [0, 1, 2]
    result = compare_steps(state, 5, 5, other=other)
    assert result.result is None and result.note == "no step 5 in short.jsonl"
    assert result.describe().endswith("· no step 5 in short.jsonl") and result.badges() == {}
    missing = compare_steps(state, 9, 6)
    assert missing.note == "no step 9 in this session"


def test_a_bad_second_trace_is_one_error_naming_it(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    with pytest.raises(CompareError, match="bad.jsonl:1"):
        OtherTrace(bad)
    with pytest.raises(CompareError, match="missing.jsonl"):
        OtherTrace(tmp_path / "missing.jsonl")


@pytest.mark.parametrize("name", ["bad.jsonl", "missing.jsonl"])
def test_replay_compare_with_a_bad_file_exits_2_naming_it(tmp_path, capsys, name):
    (tmp_path / "bad.jsonl").write_text('{"kind": "nothing"}\n')
    code = main(["replay", str(TRACE), "--compare", str(tmp_path / name)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("modscope replay: error: --compare: cannot compare with ") and name in err
    assert len(err.strip().splitlines()) == 1


def test_help_names_the_compare_key():
    assert "compare two steps" in _screen_text_of_help()


def _screen_text_of_help() -> str:
    import io

    from rich.console import Console
    console = Console(file=io.StringIO(), width=120)
    console.print(help_text())
    return console.file.getvalue()



def without_statistics(events: list[dict]) -> list[dict]:
    """The session as ``modscope run`` records it by default: tensor summaries with a shape and
    a dtype only."""
    out = copy.deepcopy(events)
    for e in out:
        for key in ("inputs", "outputs", "grad_outputs", "grad_inputs"):
            for s in e.get(key) or []:
                if s is not None:
                    for stat in [k for k in s if k not in ("shape", "dtype")]:
                        del s[stat]
    return out


def test_a_module_with_nothing_compared_says_no_data_not_a_zero_difference(events):
    """Without statistics a module without parameters has only its timings compared: its badge
    said Δ0.0e+00, as if it were identical."""
    state = SessionState()
    with state.lock:
        for e in without_statistics(events):
            state.apply(e)
    badges = compare_steps(state, 5, 4).badges()
    assert badges[""].plain == " Δ no data" and badges["blk"].plain == " Δ no data"
    assert badges["blk.a"].plain.startswith(" Δ") and badges["blk.a"].plain[2].isdigit()  # its parameters



@pytest.mark.asyncio
async def test_a_replayed_step_compared_while_still_indexed_is_compared_again_when_whole(tmp_path):
    """A replay's step whose text range is not indexed yet gives only what the timeline kept (no
    ``params`` event): every parameter compared as changed (Δ∞). Once indexed, it is compared again."""
    app = ModscopeApp(ReplaySource(TRACE), compare=OtherTrace(str(TRACE)))
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot, app, loaded)
        await settle(pilot, app, lambda a: a.comparison is not None and a.comparison.step_a == 5)
        with app.state.lock:
            record = next(r for r in app.state.steps if r.step == 5)
            indexed = record.start, record.end
            record.start = record.end = None  # as while the background pass has not reached it
        assert not session_step_whole(app.state, 5)
        tree = app.query_one(ModuleTree)
        await settle(pilot, app, lambda a: "Δ∞" in badge(tree, "blk.a"))  # compared on what was kept
        with app.state.lock:
            record.start, record.end = indexed  # the background pass reaches it
        assert session_step_whole(app.state, 5)
        await settle(pilot, app, lambda a: all(b.plain.startswith(" Δ0.0e+00") for b in tree.badges.values()))


def test_a_sampled_update_ratios_delta_is_marked_approximate(events):
    """``blk.a.weight``'s update ratio measured on a sample (``update_sampled``) in both steps: its
    Δ cell and its module's badge say ``≈`` when that ratio is what differs most; the exact
    parameters' cells do not."""
    events = copy.deepcopy(events)
    for e in events:
        if e["kind"] == "params" and e["step"] in (4, 5):
            weight = next(i for i in e["items"] if i["path"] == "blk.a.weight")
            weight["update_sampled"] = 65_536
            if e["step"] == 5:
                weight["update_ratio"] = 10 * next(i for i in next(
                    p for p in events if p["kind"] == "params" and p["step"] == 4)["items"]
                    if i["path"] == "blk.a.weight")["update_ratio"]
    state = SessionState()
    with state.lock:
        for e in events:
            state.apply(e)
    result = compare_steps(state, 5, 4)
    number = result.result.params["blk.a.weight"]["update_ratio"]
    assert number.approx and number.diverged
    deltas = result.param_deltas()
    want = rel_diff(number.a, number.b)
    assert deltas["blk.a.weight"].plain == f"≈{want:.1e} update" and deltas["blk.a.weight"].style == "bold red"
    assert not any("≈" in t.plain for path, t in deltas.items() if path != "blk.a.weight")
    badge_a = result.badges()["blk.a"].plain
    assert badge_a.startswith(f" Δ≈{want:.1e}"), badge_a
    assert "≈" not in result.badges()["head"].plain


def test_a_sampled_norms_delta_is_marked_approximate(events):
    """``blk.a.weight``'s norm taken on a sample (``stats_sampled``) in both steps: its Δ cell says
    ``≈`` when the norm is what differs most."""
    events = copy.deepcopy(events)
    for e in events:
        if e["kind"] == "params" and e["step"] in (4, 5):
            weight = next(i for i in e["items"] if i["path"] == "blk.a.weight")
            weight["update_sampled"] = weight["stats_sampled"] = 65_536
            weight["update_ratio"] = 1e-3
            weight["grad_norm"] = 1.0
            if e["step"] == 5:
                weight["norm"] *= 3
    state = SessionState()
    with state.lock:
        for e in events:
            state.apply(e)
    result = compare_steps(state, 5, 4)
    number = result.result.params["blk.a.weight"]["norm"]
    assert number.approx and number.diverged and not result.result.params["blk.a.weight"]["grad_norm"].approx
    deltas = result.param_deltas()
    assert deltas["blk.a.weight"].plain == f"≈{rel_diff(number.a, number.b):.1e} norm"
