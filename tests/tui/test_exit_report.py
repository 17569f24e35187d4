"""What ``modscope run`` prints once the TUI is gone: the script's last output and its traceback
with its own frames only (they were only in the ``l`` and ``x`` panels)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from modscope.cli import main
from modscope.views.tui import launch
from modscope.views.tui.exit_report import MODSCOPE_DIR, exit_report, own_frames
from modscope.views.tui.state import SessionState

SCRIPT = str(Path(__file__).parent / "train_script.py")

TRACEBACK = f'''Traceback (most recent call last):
  File "{MODSCOPE_DIR}/capture/child.py", line 139, in run_traced
    runpy.run_path(script, run_name="__main__")
  File "<frozen runpy>", line 291, in run_path
  File "<frozen runpy>", line 88, in _run_code
  File "/home/u/train.py", line 16, in <module>
    check(loss)
  File "/home/u/train.py", line 9, in check
    model(x)
  File "/venv/engine/nn/modules/module.py", line 80, in __call__
    return hook(self, args)
  File "{MODSCOPE_DIR}/capture/recorder.py", line 480, in _on_forward_pre
    raise ValueError("bad")
    ^^^^^^^^^^^^^^^^^^^^^^^
ValueError: bad'''


def test_own_frames_drops_modscope_and_runpy_frames_with_their_source_lines():
    text = own_frames(TRACEBACK)
    assert "modscope" not in text and "runpy" not in text and "^^^" not in text
    assert text.splitlines() == [
        "Traceback (most recent call last):",
        '  File "/home/u/train.py", line 16, in <module>',
        "    check(loss)",
        '  File "/home/u/train.py", line 9, in check',
        "    model(x)",
        '  File "/venv/engine/nn/modules/module.py", line 80, in __call__',  # the framework's frames stay
        "    return hook(self, args)",
        "ValueError: bad",
    ]


def test_own_frames_keeps_chained_exceptions_and_a_traceback_without_modscope():
    chained = ("Traceback (most recent call last):\n  File \"/a.py\", line 1, in f\n    x()\nKeyError: 1\n\n"
               "During handling of the above exception, another exception occurred:\n\n" + TRACEBACK)
    text = own_frames(chained)
    assert "KeyError: 1" in text and "During handling" in text and text.count('File "/home/u/train.py"') == 2
    plain = 'Traceback (most recent call last):\n  File "/a.py", line 1, in <module>\n    1/0\nZeroDivisionError: x'
    assert own_frames(plain) == plain


def test_the_report_takes_the_printed_traceback_out_of_the_output_and_keeps_the_last_lines():
    log = [f"epoch {i}" for i in range(30)] + TRACEBACK.splitlines()
    error = {"where": "user script", "etype": "ValueError", "traceback": TRACEBACK + "\n"}
    output, traceback = exit_report("train.py", log, [{"where": "forward hook", "traceback": "x"}, error], last=5)
    assert output.splitlines() == ["── train.py: the last 5 of 30 lines ──", *[f"epoch {i}" for i in range(25, 30)]]
    assert traceback.splitlines()[0] == "── train.py raised ValueError ──"
    assert traceback.splitlines()[1:] == own_frames(TRACEBACK).splitlines()
    assert exit_report("train.py", ["done", ""], []) == ("── train.py: its output ──\ndone", "")
    assert exit_report("train.py", [], []) == ("", "")


class EndingApp:
    """Stands in for the TUI in ``run_script``: folds events until the script has ended."""

    return_code = 0

    def __init__(self, source, child) -> None:
        self.source, self.child, self.state = source, child, SessionState()

    def run(self) -> None:
        self.source.start(self.state)
        deadline = time.monotonic() + 60
        while (self.state.status != "ended" or self.child.returncode is None) and time.monotonic() < deadline:
            time.sleep(0.05)

    def exit(self, result=None, return_code: int = 0) -> None:  # pragma: no cover - no loop here
        pass


def test_run_prints_the_scripts_last_output_and_its_own_traceback_on_exit(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(launch, "ModscopeApp", EndingApp)
    code = main(["run", "--trace-file", str(tmp_path / "t.jsonl"), SCRIPT, "20", "raise"])
    out, err = capsys.readouterr()
    assert code == 1
    assert "── train_script.py: its output ──\nstep 0 loss" in out
    assert "── train_script.py raised ValueError ──\nTraceback (most recent call last):\n" \
           f'  File "{SCRIPT}", line' in err
    assert err.rstrip().endswith("ValueError: the script failed on purpose") or \
        "ValueError: the script failed on purpose\nmodscope: trace written" in err
    tb = err[err.index("Traceback"):]
    assert "capture" not in tb and "runpy" not in tb
    assert "Traceback" not in out  # printed once, on stderr
    assert err.index("raised ValueError") < err.index("modscope: trace written")


@pytest.mark.parametrize("log", [[], ["only a line"]])
def test_nothing_is_said_of_a_traceback_when_the_script_did_not_raise(log):
    output, traceback = exit_report("s.py", log, [{"where": "viewer", "etype": "ProtocolError", "traceback": ""}])
    assert traceback == "" and (output == "" if not log else output.endswith("only a line"))
