"""A viewer that fails while it starts (a stylesheet the install lost, say) shows one clear error
and exits non-zero: no second traceback from teardown code that assumed a full start."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

TRACE = Path(__file__).parent / "data" / "small_trace.jsonl"

# Runs `modscope replay TRACE` headless with the stylesheet pointed at a file that does not exist.
DRIVER = textwrap.dedent("""
    import sys
    from modscope.views.tui import app as tui_app
    from modscope.views.tui import launch

    tui_app.ModscopeApp.CSS_PATH = "no-such-stylesheet.tcss"
    run = tui_app.ModscopeApp.run
    tui_app.ModscopeApp.run = lambda self, **kw: run(self, headless=True)
    if sys.argv[1].endswith(".py"):
        sys.exit(launch.run_script(sys.argv[1], [], sys.argv[2]))
    sys.exit(launch.replay(sys.argv[1]))
""")


def test_a_viewer_that_cannot_start_says_why_once_and_exits_non_zero():
    done = subprocess.run([sys.executable, "-c", DRIVER, str(TRACE)], capture_output=True, text=True, timeout=60)
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    assert "no-such-stylesheet.tcss" in output
    assert "AttributeError" not in output and "_ticker" not in output, output
    assert output.count("Traceback") <= 1, output


def test_a_live_viewer_that_cannot_start_stops_the_program_and_keeps_its_trace(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("print('hello')\n")
    trace = tmp_path / "t.jsonl"
    done = subprocess.run([sys.executable, "-c", DRIVER, str(script), str(trace)], capture_output=True, text=True,
                          timeout=60, cwd=tmp_path)
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    assert "AttributeError" not in output and output.count("Traceback") <= 1, output
    assert f"the viewer stopped on an error; the training program was stopped and its trace written to {trace}" in output
    assert trace.is_file()
