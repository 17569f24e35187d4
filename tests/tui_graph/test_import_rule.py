"""The TUI never imports the engine: the graph view, its layout, the export and the diagrams
it draws work from events alone (checked in a fresh interpreter)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap


def _run(code: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, cwd=cwd,
                          timeout=120)


def test_importing_the_tui_and_the_data_based_diagrams_does_not_load_the_engine(tmp_path):
    done = _run("""
        import sys
        import modscope.tui.app, modscope.tui.export, modscope.tui.graph_layout
        import modscope.tui.widgets.graph_view
        import modscope.graph
        from modscope.graph import (Diagram, build_autograd_graph_from_event, build_module_tree_from_event,
                                    model_event_fields, render)
        loaded = sorted(m for m in sys.modules if m == "engine" or m.startswith("engine."))
        assert not loaded, loaded
    """, tmp_path)
    assert done.returncode == 0, done.stderr


def test_drawing_and_exporting_from_events_runs_without_the_engine(residual_events, tmp_path):
    graph, model = residual_events
    (tmp_path / "events.json").write_text(json.dumps([graph, model]))
    done = _run("""
        import json, sys
        from modscope.graph import build_autograd_graph_from_event
        from modscope.tui import export
        from modscope.tui.graph_layout import layout, rasterise
        from modscope.tui.state import SessionState

        graph, model = json.load(open("events.json"))
        canvas = rasterise(layout(build_autograd_graph_from_event(graph, model, depth=2)))
        assert any("block.fc1 (Linear)" in line for line in canvas.text())
        state = SessionState()
        state.apply(model)
        state.apply(graph)
        paths = export.export_current(state, None)
        assert [p.rsplit(".", 1)[1] for p in paths] == ["dot", "svg", "png"], paths
        assert "engine" not in sys.modules
    """, tmp_path)
    assert done.returncode == 0, done.stderr


def test_the_import_check_would_see_the_engine(tmp_path):
    done = _run("""
        import sys
        from modscope.graph import attribute_modules  # the one part that needs the engine
        assert "engine" in sys.modules
    """, tmp_path)
    assert done.returncode == 0, done.stderr
