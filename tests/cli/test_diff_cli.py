"""``modscope diff A B``: the report, ``--json``, ``FILE@STEP``, exit codes 0/1/2 and one clear
line on stderr naming the file for bad input (missing, not a trace, a step it lacks), a cut-off
trace compared as far as it goes, two different models reported, not a crash."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from modscope.cli import main
from modscope.cli.diff import split_step
from modscope.events.files import save_events
from tests.views.test_diff import clone, find, make

ROOT = Path(__file__).resolve().parents[2]


def _save(tmp_path: Path, name: str, events) -> str:
    path = tmp_path / name
    save_events(events, path)
    return str(path)


@pytest.fixture
def pair(tmp_path):
    """Two trace files that differ in fc2's output at step 1, and a copy of the first."""
    a = make(steps=3)
    b = clone(a)
    find(b, "forward", "fc2", step=1)["outputs"][0]["mean"] += 0.5
    return _save(tmp_path, "a.jsonl", a), _save(tmp_path, "b.jsonl.gz", b), _save(tmp_path, "same.jsonl", clone(a))


def test_same_traces_exit_0(pair, capsys):
    a, _, same = pair
    assert main(["diff", a, same]) == 0
    out = capsys.readouterr().out
    assert out.startswith("✔ no difference beyond rtol 0.001: 3 step pairs compared")


def test_different_traces_exit_1_and_name_the_module_first(pair, capsys):
    a, b, _ = pair
    assert main(["diff", a, b]) == 1
    captured = capsys.readouterr()
    assert captured.out.startswith("✖ diverged at step 1 in module fc2: forward output[0] mean: 3.2 vs 3.7")
    assert "fc2 Linear ◀ first" in captured.out and captured.err == ""
    assert main(["diff", a, b, "--rtol", "0.2"]) == 0


def test_json_is_the_plain_data(pair, capsys):
    a, b, _ = pair
    assert main(["diff", a, b, "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["diverged"] is True and data["first"]["path"] == "fc2" and data["first"]["step_a"] == 1
    assert [s["step_a"] for s in data["steps"]] == [0, 1, 2]
    assert data["steps"][1]["modules"]["fc2"]["worst"]["output"]["diverged"] is True
    assert data["a"]["name"] == a and data["a"]["steps"] == [0, 1, 2]


def test_two_steps_of_one_file(pair, capsys):
    a, _, _ = pair
    assert main(["diff", f"{a}@1", f"{a}@1"]) == 0
    assert main(["diff", f"{a}@0", f"{a}@2"]) == 1
    assert "at step 0 of A / 2 of B" in capsys.readouterr().out
    assert main(["diff", f"{a}@2", a, "--json"]) == 0  # one side's step: the same number on the other
    assert [s["step_b"] for s in json.loads(capsys.readouterr().out)["steps"]] == [2]


def test_split_step(tmp_path):
    assert split_step("run.jsonl@12") == ("run.jsonl", 12)
    assert split_step("run.jsonl") == ("run.jsonl", None)
    assert split_step("run@home.jsonl") == ("run@home.jsonl", None)
    odd = tmp_path / "odd@3"
    odd.write_text("")
    assert split_step(str(odd)) == (str(odd), None)  # a file by that name is the file


def test_bad_input_exits_2_with_one_line_naming_the_file(pair, tmp_path, capsys):
    a, _, _ = pair
    missing = str(tmp_path / "missing.jsonl")
    assert main(["diff", a, missing]) == 2
    assert capsys.readouterr().err == f"modscope diff: error: {missing}: no such trace file\n"
    text = tmp_path / "notes.txt"
    text.write_text("hello\n")
    assert main(["diff", str(text), a]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"modscope diff: error: {text}:1: not a modscope trace") and err.count("\n") == 1
    assert main(["diff", f"{a}@99", a]) == 2
    assert capsys.readouterr().err == f"modscope diff: error: {a}: no step 99 in this trace (it has steps 0-2)\n"


def test_bad_options_exit_2(pair, capsys):
    a, b, _ = pair
    with pytest.raises(SystemExit) as exc:
        main(["diff", a, b, "--rtol", "-1"])
    assert exc.value.code == 2
    assert "expected a number >= 0, got '-1'" in capsys.readouterr().err


def test_a_cut_off_trace_is_compared_as_far_as_it_goes(tmp_path, capsys):
    a = make(steps=3)
    full = _save(tmp_path, "full.jsonl", a)
    cut = tmp_path / "cut.jsonl"
    text = Path(full).read_bytes()
    stop = text.index(b'"kind":"backward_pre","seq":' + str(find(a, "backward_pre", "fc2", step=2)["seq"]).encode())
    cut.write_bytes(text[:stop + 20])  # killed mid-line during step 2's backward
    assert main(["diff", full, str(cut)]) == 1  # step 2's backward is missing from B
    captured = capsys.readouterr()
    assert captured.err == f"modscope diff: warning: {cut} was cut off (no end of recording); comparing what it has\n"
    assert "note: B" in captured.out and "its step 2 is incomplete" in captured.out
    assert "(incomplete)" in captured.out
    assert main(["diff", full, str(cut), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert [s["first"] is None for s in data["steps"]] == [True, True, False]
    assert data["steps"][2]["partial"] is True
    assert main(["diff", f"{full}@1", f"{cut}@1"]) == 0  # what is there agrees


def test_two_different_models_are_structure_differences(tmp_path, capsys):
    a = make(steps=1)
    b = clone(a)
    model = find(b, "model")
    model["modules"][1] = {**model["modules"][1], "cls": "Conv1d", "extra_repr": "4, 8, kernel_size=(1,)"}
    model["params"][0]["shape"] = [8, 4, 1]
    for e in b:
        if e.get("path") == "act":
            e["path"] = "gelu"
    model["modules"][2]["path"] = "gelu"
    assert main(["diff", _save(tmp_path, "a.jsonl", a), _save(tmp_path, "b.jsonl", b)]) == 1
    out = capsys.readouterr().out
    assert out.startswith("✖ diverged in module fc1: module fc1 is Linear(in_features=4, out_features=8, bias=True) in A, "
                          "Conv1d(4, 8, kernel_size=(1,)) in B")
    for needle in ("module", "gelu", "added", "removed", "parameter", "[8, 4, 1] float32", "only in A", "only in B"):
        assert needle in out


def test_piped_output_is_wide_and_width_is_honoured(pair):
    a, b, _ = pair
    run = [sys.executable, "-m", "modscope", "diff", a, b]
    piped = subprocess.run(run, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert piped.returncode == 1 and piped.stderr == ""
    assert max(len(line) for line in piped.stdout.splitlines()) > 120  # not squeezed into 80 columns
    narrow = subprocess.run(run + ["--width", "90"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert narrow.returncode == 1 and max(len(line) for line in narrow.stdout.splitlines()) <= 90


def _recorded(tmp_path: Path, name: str, stats: bool) -> str:
    import engine as torch
    import engine.nn as nn
    import modscope

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    with modscope.trace(model, stats=stats) as tr:
        model(torch.randn(5, 4)).sum().backward()
    path = tmp_path / name
    tr.save(path)
    return str(path)


def test_a_diff_of_traces_without_statistics_says_why_forward_and_backward_show_a_dash(tmp_path, capsys):
    """Recorded without ``stats`` (``modscope run``'s default), the two columns are "–" with no
    word why; with statistics, no such note."""
    plain = [_recorded(tmp_path, f"plain{i}.jsonl", stats=False) for i in range(2)]
    assert main(["diff", *plain]) == 0
    out = capsys.readouterr().out
    assert 'note: the Forward and Backward columns show "–"' in out and "--stats" in out
    main(["diff", *plain, "--json"])
    assert any("--stats" in note for note in json.loads(capsys.readouterr().out)["notes"])
    with_stats = [_recorded(tmp_path, f"stats{i}.jsonl", stats=True) for i in range(2)]
    main(["diff", *with_stats])
    assert "--stats" not in capsys.readouterr().out
