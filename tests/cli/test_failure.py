"""Every command reports bad input the same way: one line naming the command and the file, exit 2
(``modscope.cli.failure``), before it starts anything."""

from __future__ import annotations

from pathlib import Path

import pytest

from modscope.cli import main


def _commands(tmp: Path) -> dict[str, list[str]]:
    missing = str(tmp / "missing.jsonl")
    return {
        "replay": ["replay", missing],
        "report": ["report", missing, "-o", str(tmp / "r.html")],
        "web": ["web", missing, "--port", "0"],
        "diff": ["diff", missing, missing],
        "summary": ["summary", f"{tmp}/missing.py:Net", "--input", "1,4"],
        "export": ["export", f"{tmp}/missing.py:Net", "-o", str(tmp / "x.svg")],
        "record": ["record", "--trace-file", str(tmp / "t.jsonl"), str(tmp / "missing.py")],
        "run": ["run", "--trace-file", str(tmp / "t.jsonl"), str(tmp / "missing.py")],
    }


@pytest.mark.parametrize("command", ["replay", "report", "web", "diff", "summary", "export", "record", "run"])
def test_bad_input_is_one_line_naming_it_and_exit_2(command, tmp_path, capsys):
    assert main(_commands(tmp_path)[command]) == 2
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"modscope {command}: error: ") and "missing" in lines[0]
    assert not (tmp_path / "r.html").exists() and not (tmp_path / "t.jsonl").exists()
