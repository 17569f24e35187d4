"""The TUI at scale (issue 21): views render what is visible, selections look parameters up by
owner, a big replay shows its first frame before its index is built. Behaviour, not timings
(``bench/bench_tui_scale.py`` measures those)."""

from __future__ import annotations

import threading

import pytest

from modscope.views.tui.app import ModscopeApp
from modscope.views.tui.sources import ReplaySource, Source, fold
from modscope.views.tui.state import SessionState
from modscope.views.tui.widgets.module_tree import ModuleTree, label_width, module_label
from modscope.views.tui.widgets.params_table import ParamsTable
from modscope.views.tui.widgets.timeline import HookTimeline, event_line, event_width
from tests.tui.test_app import settle
from tests.tui.test_replay_index import long_trace, write

BLOCKS = 2500  # × 4 modules: the 10,001-module model


def wide_model_event(blocks: int = BLOCKS) -> dict:
    """A ``Sequential`` of ``blocks`` × [Linear, ReLU, LayerNorm, Identity], as the tracer sends it."""
    kinds = ("Linear", "ReLU", "LayerNorm", "Identity")
    names = [str(i) for i in range(4 * blocks)]
    modules = [{"path": "", "cls": "Sequential", "extra_repr": "", "training": True, "children": names,
                "aliases": []}]
    modules += [{"path": n, "cls": kinds[i % 4], "extra_repr": "", "training": True, "children": [], "aliases": []}
                for i, n in enumerate(names)]
    params = [{"path": f"{n}.{p}", "shape": [8, 8] if p == "weight" else [8], "dtype": "float32", "numel": 64,
               "requires_grad": True} for i, n in enumerate(names) if i % 4 in (0, 2) for p in ("weight", "bias")]
    return {"v": 1, "kind": "model", "seq": 0, "t": 0, "step": 0, "model": "Sequential", "modules": modules,
            "params": params, "buffers": []}


def forward(path: str, seq: int, dur_ns: int, step: int = 0) -> dict:
    return {"v": 1, "kind": "forward", "seq": seq, "t": seq, "step": step, "path": path, "call": 0,
            "dur_ns": dur_ns, "outputs": [{"shape": [2, 8], "dtype": "float32", "tid": 1}]}


class DirectSource(Source):
    """Folds the given events on a thread of its own, as the real sources do (not validated:
    the synthetic model here is built for size, not for the schema's every field)."""

    def __init__(self, events: list[dict]) -> None:
        self.events = events

    def start(self, state: SessionState) -> None:
        threading.Thread(target=fold, args=(state, self.events, None), daemon=True).start()


def visible_module_lines(tree: ModuleTree) -> int:
    return min(tree.size.height, tree.last_line + 1)


@pytest.mark.asyncio
async def test_a_refresh_builds_labels_for_the_visible_lines_only():
    app = ModscopeApp(DirectSource([wide_model_event()]))
    async with app.run_test(size=(200, 55)) as pilot:
        tree = app.query_one(ModuleTree)
        await settle(pilot, app, lambda a: len(tree.modules) == 4 * BLOCKS + 1 and tree.root.is_expanded
                     and len(tree.root.children) == 4 * BLOCKS and a.selected)
        await pilot.pause(0.2)
        height = tree.size.height
        assert tree.labels_built <= 3 * height  # the first frames: not 10,001 labels
        before = tree.labels_built
        with app.state.lock:  # every module ran: every label changes
            for i, path in enumerate(app.state.order[1:]):
                app.state.apply(forward(path, i + 1, 5_000_000))
        first = tree.root.children[0]
        await settle(pilot, app, lambda a: "5.00ms" in str(first.label))
        await pilot.pause(0.3)
        built = tree.labels_built - before
        assert 0 < built <= 3 * height, built  # a few ticks' worth of visible lines, not 10,000
        assert tree._labels.keys() <= {n.data for n in tree.root.children[:height]} | {""}
        # off-screen lines get their label when they are drawn: the last module, scrolled to
        last = tree.root.children[-1]
        tree.move_cursor(last)
        await settle(pilot, app, lambda a: "5.00ms" in str(last.label))
        assert str(last.label) == str(module_label(app.state.modules[last.data], "Sequential"))
        # collapsing and expanding the root rebuilds the lines, not 10,000 labels
        before = tree.labels_built
        tree.root.collapse()
        await pilot.pause(0.2)
        tree.root.expand()
        await pilot.pause(0.3)
        assert tree.labels_built - before <= 3 * height


@pytest.mark.asyncio
async def test_a_label_shown_again_after_scrolling_away_is_current():
    app = ModscopeApp(DirectSource([wide_model_event(100)]))
    async with app.run_test(size=(200, 55)) as pilot:
        tree = app.query_one(ModuleTree)
        await settle(pilot, app, lambda a: len(tree.root.children) == 400 and a.selected)
        first = tree.root.children[0]
        await settle(pilot, app, lambda a: first.data in tree._labels)
        tree.move_cursor(tree.root.children[-1])  # the first child scrolls off screen
        await pilot.pause(0.3)
        with app.state.lock:
            app.state.apply(forward(first.data, 1, 7_000_000))
        await pilot.pause(0.3)
        tree.move_cursor(first)
        await settle(pilot, app, lambda a: "7.00ms" in str(first.label))
        lines = "\n".join(line.text for line in tree.render_lines(tree.region.reset_offset))
        assert "7.00ms" in lines


def test_label_width_is_the_label_cells():
    state = SessionState()
    state.apply(wide_model_event(2))
    state.apply(forward("0", 1, 1_234_567))
    m = state.modules["0"]
    m.grad_norms.extend([1.0, 2.0, 0.5])
    m.nonfinite = m.dead = True
    m.training = False
    for info in (m, state.modules[""], state.modules["1"]):
        assert label_width(info, "Sequential") == module_label(info, "Sequential").cell_len


def timeline_events(n: int) -> list[dict]:
    events, seq = [], 0
    for i in range(n // 2):
        path = f"layer{i}"
        events.append({"v": 1, "kind": "forward_pre", "seq": seq, "t": seq, "step": 1, "path": path, "call": 0,
                       "inputs": []})
        events.append({**forward(path, seq + 1, 1000 * i, step=1)})
        seq += 2
    return events


@pytest.mark.asyncio
async def test_the_timeline_renders_the_visible_lines_only():
    app = ModscopeApp(DirectSource([]))
    async with app.run_test(size=(200, 55)) as pilot:
        await settle(pilot, app, lambda a: "timeline" in a._seen)  # the first tick drew the (empty) timeline
        timeline = app.query_one(HookTimeline)
        timeline.follow = False
        events = timeline_events(4000)
        timeline.render_step(1, events, 0, [1])
        await settle(pilot, app, lambda a: timeline.lines_rendered > 0)
        height = timeline.scrollable_content_region.height
        assert timeline.line_count == 4000
        assert 0 < timeline.lines_rendered <= height  # not 4,000
        timeline.action_jump(-1)
        await settle(pilot, app, lambda a: timeline.line_count - 1 in timeline._strips)
        assert timeline.lines_rendered <= 2 * height
        text = timeline.render_line(height - 1).text  # the last line, on screen now
        assert text.rstrip() == event_line(events[-1], 0).plain.rstrip()
        assert timeline.virtual_size.width == max(event_width(e, 0) for e in events)  # all at depth 0


def test_event_width_is_the_line_cells():
    hook = {"kind": "hook", "qualname": "clip", "hook_kind": "forward", "target": "", "replaced": True}
    error = {"kind": "error", "etype": "NonFiniteValue", "message": "NaN in ✖ 出力 " * 20}
    backward = {"kind": "backward", "path": "blk.a", "call": 2, "dur_ns": 12_345,
                "grad_inputs": [None, {"shape": [8, 4]}]}
    pre = {"kind": "forward_pre", "path": "", "call": 0}
    for e in (hook, error, backward, pre):
        for depth in (0, 3):
            line = event_line(e, depth)
            assert event_width(e, depth) == line.cell_len


def test_params_of_looks_up_the_index_with_the_scans_results(events):
    state = SessionState()
    for e in events:
        state.apply(e)

    def scan(path):
        return [p for p in state.params.values() if p.owner == path]

    for path in [*state.order, "no.such.module"]:
        assert state.params_of(path) == scan(path)
    model = next(e for e in events if e["kind"] == "model")
    buffer = {"path": "head.running", "shape": [4], "dtype": "float32", "numel": 4, "persistent": False}
    resent = {**model, "seq": 10**6, "params": model["params"][1:], "buffers": [buffer]}  # re-sent, changed
    first = model["params"][0]["path"]
    owner = first.rpartition(".")[0]
    state.params.pop(first)
    state.apply(resent)
    assert state.params_of(owner) == scan(owner) and first not in [p.path for p in state.params_of(owner)]
    assert state.params_of("head") == scan("head") and state.params_of("head")[-1].is_buffer
    state.params = {}  # the index, not a scan: it answers from what the model event said
    assert state.params_of(owner)


@pytest.mark.asyncio
async def test_selecting_a_module_shows_its_parameters_from_the_index(events):
    state = SessionState()
    calls = []
    original = state._index_params

    def counted():
        calls.append(1)
        original()

    state._index_params = counted
    app = ModscopeApp(DirectSource(events), state=state)
    async with app.run_test(size=(200, 55)) as pilot:  # the wide layout: every view on screen
        await settle(pilot, app, lambda a: a.selected == "blk.a" and a.screen is a.screen_stack[0]
                     and len(a.screen.query(ParamsTable)) == 1)
        app._select("head")
        table = app.query_one(ParamsTable)
        assert table.module_path == "head" and table.row_count == len(state.params_of("head")) > 0
    assert len(calls) == 1  # once for the model event: not per selection, not per event


@pytest.mark.asyncio
async def test_a_big_replay_shows_its_first_frame_before_its_index_is_built(tmp_path, monkeypatch):
    path = write(tmp_path / "big.jsonl", long_trace(400))
    gate = threading.Event()
    original = ReplaySource._run

    def held(self, state):
        gate.wait(30)  # the background pass cannot start before the test has seen the first frame
        original(self, state)

    monkeypatch.setattr(ReplaySource, "_run", held)
    source = ReplaySource(path, check_bytes=4096)
    app = ModscopeApp(source)
    painted = []
    display = app._display

    def counting(screen, renderable):
        display(screen, renderable)
        painted.append(source.steps.end if source.steps is not None else None)  # None: no index yet

    app._display = counting
    async with app.run_test(size=(200, 55)) as pilot:
        await settle(pilot, app, lambda a: len(painted) > 0)
        assert painted[0] is None  # drawn while the index was not built
        await settle(pilot, app, lambda a: source.thread is not None)
        assert source.thread.is_alive() and source.steps.end is None  # (held at the gate)
        assert app.query_one(ModuleTree).modules == {}
        gate.set()
        await settle(pilot, app, lambda a: source.steps.end is not None and a.query_one(ModuleTree).modules)
        assert app.state.steps_available() == list(range(400)) and app.state.status == "ended"


@pytest.mark.asyncio
async def test_selecting_from_another_view_keeps_the_tree_lines():
    app = ModscopeApp(DirectSource([wide_model_event(100)]))
    async with app.run_test(size=(200, 55)) as pilot:
        tree = app.query_one(ModuleTree)
        await settle(pilot, app, lambda a: len(tree.root.children) == 400 and a.selected)
        lines = tree._tree_lines
        app._select("250")  # as the timeline or the graph does: its ancestors are open already
        await pilot.pause(0.1)
        assert tree.cursor_node is not None and tree.cursor_node.data == "250"
        assert tree._tree_lines_cached is lines  # not rebuilt (10,000 widths on the big model)
