"""The console script: installed, and answering --help and --version."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import modscope
from modscope.cli import main


def test_version_flag(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.strip() == f"modscope {modscope.__version__}"


def test_help_flag(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    assert "usage: modscope" in capsys.readouterr().out


def test_unknown_option_exits_nonzero(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--no-such-option"])
    assert info.value.code == 2
    assert "unrecognized arguments" in capsys.readouterr().err


def test_console_script_is_installed():
    script = Path(sys.executable).parent / "modscope"
    assert script.exists(), "run `make setup` (pip install -e .) to install the console script"
    out = subprocess.run([str(script), "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == f"modscope {modscope.__version__}"
