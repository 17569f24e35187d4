"""``modscope summary``: the table for a model file (an engine model and a torch model), and one
clear line for bad input."""

from __future__ import annotations

from pathlib import Path

from modscope.cli import main

MODEL = '''
import {lib}.nn as nn

class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(self.fc1(x).relu())
'''


def test_summary_of_a_model_file(lib, tmp_path: Path, capsys):
    path = tmp_path / "small.py"
    path.write_text(MODEL.format(lib=lib.__name__))
    assert main(["summary", f"{path}:Small", "--input", "2,8", "--width", "160"]) == 0
    out = capsys.readouterr().out
    assert "Small summary" in out and "fc1" in out and "[2, 16]" in out
    assert "212" in out  # total parameters: 8*16+16 + 16*4+4
    assert "384" in out  # fc1 multiply-adds: 2*8*16


def test_summary_errors_are_one_line(lib, tmp_path: Path, capsys):
    path = tmp_path / "small.py"
    path.write_text(MODEL.format(lib=lib.__name__))
    assert main(["summary", f"{path}:Small", "--input", "2,9"]) == 2
    assert main(["summary", f"{path}:Small"]) == 2
    assert main(["summary", "missing.py:Small", "--input", "2,8"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and all(line.startswith("modscope summary: error:") for line in err)
    assert "rejected an input of shape (2, 9)" in err[0] and "--input" in err[1] and "file not found" in err[2]
