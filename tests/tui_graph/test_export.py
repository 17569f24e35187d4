"""``modscope.views.tui.export``: the visible graph or tree written as DOT, SVG and PNG."""

from __future__ import annotations

import re

import pytest

from modscope.views.tui import export
from modscope.views.tui.state import SessionState
from modscope.views.tui.widgets.graph_view import AutogradGraphView
from modscope.views.tui.widgets.module_tree import ModuleTree

STEM = re.compile(r"(Residual|Mlp)-(autograd|tree)-\d{8}-\d{6}(-\d+)?$")


def _state(*events) -> SessionState:
    state = SessionState()
    for seq, e in enumerate(events):
        state.apply(dict(e, seq=seq))
    return state


@pytest.fixture
def state(residual_events) -> SessionState:
    graph, model = residual_events
    return _state(model, graph)


def _check_files(paths: list[str], what: str) -> None:
    from pathlib import Path

    files = [Path(p) for p in paths]
    assert [f.suffix for f in files] == [".dot", ".svg", ".png"]
    assert all(f.parent.name == "modscope-export" and STEM.match(f.stem) for f in files)
    assert {f.stem for f in files} == {files[0].stem} and f"-{what}-" in files[0].stem
    assert files[0].read_text().startswith("digraph")
    assert b"<svg" in files[1].read_bytes()[:400]
    assert files[2].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_focused_graph_view_exports_the_graph_at_its_depth(state, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    view = AutogradGraphView()
    view.depth = 1
    with state.lock:
        paths = export.export_current(state, view)
    _check_files(paths, "autograd")
    assert paths[0].startswith(str(tmp_path / "modscope-export" / "Residual-autograd-"))
    dot = open(paths[0]).read()
    assert 'label="block\\nBlock\\n' in dot and "block.fc1" not in dot  # collapsed at depth 1


def test_the_focused_tree_exports_the_module_tree(state, tmp_path):
    job = export.snapshot_export(state, ModuleTree())
    assert job.what == "tree"
    paths = export.write_export(job, tmp_path)
    _check_files(paths, "tree")
    assert 'label="block.fc1\\nLinear(in_features=8, out_features=8, bias=True)\\n72 params"' in open(paths[0]).read()


def test_without_a_relevant_focus_the_graph_wins_if_there_is_one(residual_events, tmp_path):
    graph, model = residual_events
    assert export.snapshot_export(_state(model, graph), None).what == "autograd"
    assert export.snapshot_export(_state(model), object()).what == "tree"
    assert export.snapshot_export(_state(model), AutogradGraphView()).what == "tree"  # no graph: the tree
    for focused in (ModuleTree(), AutogradGraphView(), None):
        with pytest.raises(export.ExportError, match="nothing to export yet: no model has arrived"):
            export.snapshot_export(SessionState(), focused)


def test_two_exports_in_one_second_do_not_overwrite_each_other(state, tmp_path, monkeypatch):
    monkeypatch.setattr(export.time, "strftime", lambda fmt: "20250101-120000")
    job = export.snapshot_export(state, None)
    first = export.write_export(job, tmp_path)
    second = export.write_export(job, tmp_path)
    assert first[0] != second[0] and second[0].endswith("-2.dot")


def test_without_dot_the_dot_file_is_written_and_the_error_says_how_to_install(state, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(export.ExportError) as info:
        export.write_export(export.snapshot_export(state, None), tmp_path)
    files = sorted((tmp_path / "modscope-export").iterdir())
    assert [f.suffix for f in files] == [".dot"]
    message = str(info.value)
    assert message.startswith(f"wrote {files[0]}, but could not render SVG/PNG: graphviz's `dot` was not found")
    assert "apt-get install graphviz" in message and "brew install graphviz" in message


def test_the_model_event_rebuilt_from_the_state_draws_the_tracers_tree(residual_events):
    from modscope.graph import build_module_tree_from_event

    _, model = residual_events
    rebuilt = export.model_event_of(_state(model))
    assert rebuilt["model"] == "Residual" and [m["path"] for m in rebuilt["modules"]] == \
        [m["path"] for m in model["modules"]]
    lines = lambda event: [n.lines for n in build_module_tree_from_event(event).nodes.values()]  # noqa: E731
    assert lines(rebuilt) == lines(model)
    assert export.model_event_of(SessionState()) is None


def test_the_app_can_export_from_its_export_action(residual_events, tmp_path, monkeypatch):
    """Through the app's ``e`` action (``action_export``)."""
    import asyncio

    from modscope.views.tui.app import ModscopeApp
    from modscope.views.tui.sources import EventListSource

    graph, model = residual_events
    session = {"v": 1, "kind": "session", "seq": 0, "t": 0, "step": 0, "schema": 1, "engine_version": "0",
               "modscope_version": "0", "pid": 1, "started": "", "argv": []}
    monkeypatch.chdir(tmp_path)

    async def run() -> list[str]:
        app = ModscopeApp(EventListSource([session, dict(model, seq=1), dict(graph, seq=2)]))
        notes: list[str] = []
        app.notify = lambda message, **kw: notes.append(message)  # type: ignore[method-assign]
        async with app.run_test(size=(120, 36)) as pilot:
            for _ in range(100):
                await pilot.pause(0.05)
                if app.state.graph is not None:
                    break
            app.action_export()
            for _ in range(200):  # synchronous today; a worker thread would report later
                if any(n.startswith(("exported ", "export failed")) for n in notes):
                    break
                await pilot.pause(0.05)
        return notes

    notes = asyncio.run(run())
    folder = tmp_path / "modscope-export"
    # the module tree has the focus at start: what is exported, said in full
    assert any(n.startswith(f"exported the module tree of Residual to {folder}/: Residual-tree-")
               and n.endswith(".png") for n in notes), notes
    assert len(list((tmp_path / "modscope-export").iterdir())) == 3


def test_the_notification_says_which_diagram_at_which_depth_and_where(tmp_path):
    job = export.ExportJob("autograd", "Net", None, None, 2)
    paths = [str(tmp_path / f"Net-autograd-1.{ext}") for ext in ("dot", "svg", "png")]
    assert export.describe_export(job, paths) == \
        f"exported the autograd graph (depth 2) of Net to {tmp_path}/: Net-autograd-1.dot, Net-autograd-1.svg, " \
        "Net-autograd-1.png"
