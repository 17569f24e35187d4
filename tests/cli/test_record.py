"""``modscope record``: a script traced with no viewer, in a real process: its output passes
through, its exit code is the command's, one closing line says where the trace is and what it
holds, and a signal leaves a complete trace."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import modscope

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = '''
import sys, time
import engine as torch

model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
steps = int(sys.argv[1])
for i in range(steps if steps >= 0 else 10**9):
    loss = model(torch.randn(3, 4)).pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
    if i == 0:
        print("first step done", flush=True)
    if steps < 0:
        time.sleep(0.01)
print("trained", flush=True)
print("a warning", file=sys.stderr, flush=True)
sys.exit(int(sys.argv[2]))
'''


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE")}
    return {**env, "OMP_NUM_THREADS": "1", **extra}


def _record(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "modscope", "record", *args], capture_output=True, text=True,
                          cwd=tmp_path, env=env or _env(), timeout=300)


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "train.py"
    path.write_text(SCRIPT)
    return path


def test_record_passes_output_and_exit_code_through_and_ends_with_one_line(tmp_path, script):
    done = _record(tmp_path, "--trace-file", "run.jsonl", str(script), "5", "3")
    assert done.returncode == 3
    assert done.stdout == "first step done\ntrained\n"
    lines = done.stderr.splitlines()
    assert lines[0] == "a warning"
    # the defaults (--every 50): steps 0 and 1 in full, the others light (their step event only)
    assert lines[-1] == "modscope record: trace run.jsonl: 5 steps (2 full, 3 light), 4 modules, 43 events, 0 dropped"
    trace = modscope.load_trace(tmp_path / "run.jsonl")
    assert not trace.truncated and len(trace) == 43
    assert max(e["step"] for e in trace.iter_events()) == 4
    assert all("rank" not in e for e in trace.iter_events())  # a single process: no rank fields
    assert trace.summary()  # the reports work on it


def test_record_every_and_full_choose_the_steps_watched_in_full(tmp_path, script):
    done = _record(tmp_path, "--every", "2", "--trace-file", "every.jsonl", str(script), "5", "0")
    assert done.returncode == 0, done.stderr
    assert "5 steps (4 full, 1 light)" in done.stderr.splitlines()[-1]  # 0, 1 (first), 2, 4 (every 2)
    steps = [e for e in modscope.load_trace(tmp_path / "every.jsonl").iter_events() if e["kind"] == "step"]
    assert [e["detail"] for e in steps] == ["full", "full", "full", "light", "full"]
    assert all(e["loss"] is not None for e in steps)  # the loss without modscope.log
    done = _record(tmp_path, "--full", "--trace-file", "full.jsonl", str(script), "5", "0")
    assert done.returncode == 0, done.stderr
    assert "trace full.jsonl: 5 steps, 4 modules" in done.stderr.splitlines()[-1]
    done = _record(tmp_path, "--every", "0", str(script), "5", "0")
    assert done.returncode == 2 and "--every: expected an integer >= 1, got '0'" in done.stderr
    done = _record(tmp_path, "--every", "3", "--full", str(script), "5", "0")
    assert done.returncode == 2 and "not allowed with argument" in done.stderr


def test_record_writes_the_default_trace_file_and_stats(tmp_path, script):
    done = _record(tmp_path, "--stats", str(script), "2", "0")
    assert done.returncode == 0, done.stderr
    files = list((tmp_path / "modscope-traces").glob("train-*.jsonl.gz"))
    assert len(files) == 1
    assert f"trace {files[0]}: 2 steps" in done.stderr.splitlines()[-1]
    outputs = [e for e in modscope.load_trace(files[0]).iter_events() if e["kind"] == "forward"]
    assert "mean" in outputs[0]["outputs"][0]  # --stats


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_the_script_and_leaves_a_complete_trace(tmp_path, script, signum):
    proc = subprocess.Popen([sys.executable, "-m", "modscope", "record", "--trace-file", "run.jsonl.gz", str(script),
                             "-1", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                            env=_env())
    try:
        assert proc.stdout.readline() == "first step done\n"
        time.sleep(0.3)
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 128 + signum
    name = signal.Signals(signum).name
    assert err.splitlines()[-1].startswith("modscope record: trace run.jsonl.gz: ")
    assert err.splitlines()[-1].endswith(f" dropped (stopped by {name})")
    trace = modscope.load_trace(tmp_path / "run.jsonl.gz")
    assert not trace.truncated
    end = [e for e in trace.iter_events() if e["kind"] == "end"]
    assert len(end) == 1 and end[0]["status"] == "ok"


def test_record_errors_are_one_line_with_status_2(tmp_path, script):
    done = _record(tmp_path, "missing.py")
    assert (done.returncode, done.stderr) == (2, "modscope record: error: no such script: missing.py\n")
    done = _record(tmp_path, str(script), "1", "0", env=_env(RANK="x"))
    assert (done.returncode, done.stderr) == (2, "modscope record: error: $RANK must be an integer >= 0, got 'x'\n")
    done = _record(tmp_path, str(script), "1", "0", env=_env(RANK="0", WORLD_SIZE="2"))
    assert done.returncode == 2
    assert done.stderr.startswith("modscope record: error: a rank of a launched job needs --trace-file F")
    done = _record(tmp_path, "--trace-file", "train.py/t.jsonl", str(script), "1", "0")  # a file, not a folder
    assert done.returncode == 2
    assert done.stderr.startswith("modscope record: error: cannot write the trace file train.py/t.jsonl: ")


def test_a_rank_records_beside_the_trace_file_with_its_rank_on_every_event(tmp_path, script):
    env = _env(RANK="1", LOCAL_RANK="1", WORLD_SIZE="2", TORCHELASTIC_RESTART_COUNT="2")
    done = _record(tmp_path, "--trace-file", "run.jsonl.gz", str(script), "2", "0", env=env)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[-1].startswith("modscope record: rank 1 of 2: trace run.rank1.jsonl.gz: 2 steps")
    assert not (tmp_path / "run.jsonl.gz").exists()
    trace = modscope.load_trace(f"{tmp_path / 'run.jsonl.gz'}#1")
    assert trace.path == tmp_path / "run.rank1.jsonl.gz"
    assert {(e["rank"], e["local_rank"], e["world_size"], e["restart"]) for e in trace.iter_events()} == {(1, 1, 2, 2)}
    params = [e for e in trace.iter_events() if e["kind"] == "params"]
    assert all(isinstance(item["fp"], int) for e in params for item in e["items"])  # fingerprints, as a rank


def test_launching_ranks_without_torch_says_how_to_install_it(tmp_path, script, monkeypatch, capsys):
    import argparse
    import importlib.util

    from modscope.cli import record

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a))
    args = argparse.Namespace(script=str(script), args=[], nproc_per_node=2, trace_file=None, backend="auto",
                              stats=False, serve=None)
    assert record._run(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("modscope record: error: --nproc-per-node starts ranks through torch.distributed.run, "
                          "and torch is not installed: pip install torch")
