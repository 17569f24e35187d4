"""Starting the TUI: the viewer yields the CPU to the training child once that has started."""

from __future__ import annotations

import os
import subprocess
import sys

import modscope.tui.launch as launch


def test_yield_to_training_lowers_this_process_priority():
    code = ("import os; from modscope.tui.launch import yield_to_training; before = os.nice(0); "
            "ok = yield_to_training(3); print(ok, os.nice(0) - before)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    ok, raised = out.stdout.split()
    assert ok == "True"
    assert int(raised) == min(3, 19 - os.nice(0))  # niceness stops at 19


def test_yield_to_training_where_the_platform_cannot(monkeypatch):
    def refuse(increment):
        raise OSError(1, "Operation not permitted")

    monkeypatch.setattr(os, "nice", refuse)
    assert launch.yield_to_training() is False
    monkeypatch.delattr(os, "nice")  # not Unix
    assert launch.yield_to_training() is False


def test_run_script_yields_after_the_child_started(monkeypatch, tmp_path):
    calls = []

    class FakeChild:
        def __init__(self, source, script, args, trace_file, stats=False):
            calls.append("child started")

        def stop(self, source):
            return 0

    monkeypatch.setattr(launch, "ChildProcess", FakeChild)
    monkeypatch.setattr(launch, "yield_to_training", lambda: calls.append("viewer yields"))
    monkeypatch.setattr(launch.ModscopeApp, "run", lambda self: calls.append("app runs"))
    script = tmp_path / "train.py"
    script.write_text("pass\n")
    assert launch.run_script(str(script), [], str(tmp_path / "t.jsonl.gz")) == 0
    assert calls == ["child started", "viewer yields", "app runs"]
