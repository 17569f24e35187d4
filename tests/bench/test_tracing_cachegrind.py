"""bench/tracing_cachegrind.py reads cachegrind's totals, and says what it needs to run."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "tracing_cachegrind.py"
spec = importlib.util.spec_from_file_location("tracing_cachegrind", SCRIPT)
tracing_cachegrind = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tracing_cachegrind)

OUTPUT = """desc: I1 cache:         32768 B, 64 B, 8-way associative
cmd: python x.py
events: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw
fl=x.c
fn=main
1 5 1 0 2 1 0 1 0 0
summary: 100 7 2 50 9 3 20 4 1
"""


def test_the_totals_are_read_by_event_name():
    totals = tracing_cachegrind.parse_totals(OUTPUT)
    assert totals == {"Ir": 100, "I1mr": 7, "ILmr": 2, "Dr": 50, "D1mr": 9, "DLmr": 3, "Dw": 20, "D1mw": 4, "DLmw": 1}
    assert tracing_cachegrind.columns(totals) == (100, 7, 13, 6)


@pytest.mark.parametrize("text", ["", "events: Ir I1mr\n", "events: Ir I1mr\nsummary: 5\n", "summary: 5 6\n"])
def test_a_file_that_is_not_cachegrind_output_is_refused(text):
    with pytest.raises(ValueError, match="not a cachegrind output file"):
        tracing_cachegrind.parse_totals(text)


def test_the_report_shows_each_mode_above_the_untraced_step():
    untraced = {"Ir": 1000, "I1mr": 10, "D1mr": 5, "D1mw": 5, "ILmr": 1, "DLmr": 1, "DLmw": 0}
    traced = {"Ir": 1500, "I1mr": 30, "D1mr": 9, "D1mw": 6, "ILmr": 2, "DLmr": 2, "DLmw": 1}
    lines = tracing_cachegrind.report({"untraced": untraced, "stats=False": traced}).splitlines()
    assert lines[1].split() == ["untraced", "1,000", "10", "10", "2"]
    assert lines[2].split() == ["stats=False", "+500", "+20", "+5", "+3"]


def test_missing_valgrind_says_how_to_install_it(tmp_path):
    env = {**os.environ, "PATH": str(tmp_path)}  # no valgrind on this PATH
    out = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode != 0
    assert out.stderr.strip() == "tracing_cachegrind.py needs valgrind (apt-get install valgrind)"
