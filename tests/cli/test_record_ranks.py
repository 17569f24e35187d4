"""Ranks end to end: a real 2-rank gloo DDP script on CPU (``ddp_train.py``), recorded under the
user's own torchrun and under ``modscope record --nproc-per-node`` (torch's elastic launcher):
one file per rank that every reader opens as one run, ``diff F#0 F#1`` saying "no difference" on
a healthy run and naming the step and parameter of a rank-local update, and a SIGKILLed rank
named with its last step while every rank's file loads."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import modscope
from modscope.views.tui.sources import ReplaySource

pytest.importorskip("torch")

SCRIPT = Path(__file__).with_name("ddp_train.py")


def _env() -> dict[str, str]:
    drop = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RESTART_COUNT")
    return {**{k: v for k, v in os.environ.items() if k not in drop}, "OMP_NUM_THREADS": "1"}


def _run(cwd: Path, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *argv], capture_output=True, text=True, cwd=cwd, env=_env(), timeout=400)


def _diff(cwd: Path, a: str, b: str) -> subprocess.CompletedProcess:
    return _run(cwd, "-m", "modscope", "diff", a, b, "--width", "200")


def test_torchrun_ranks_record_one_run_and_a_healthy_run_diffs_clean(tmp_path):
    done = _run(tmp_path, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--standalone", "-m", "modscope",
                "record", "--trace-file", "run.jsonl.gz", str(SCRIPT), "--steps", "4")
    assert done.returncode == 0, done.stderr
    # the ranks share the launcher's stdout: one rank's line may land inside the other's ('rank 1
    # donerank 0 done', seen in a fresh-clone run), so each is counted, not each line compared
    assert [done.stdout.count(f"rank {r} done") for r in (0, 1)] == [1, 1], done.stdout
    closing = sorted(line for line in done.stderr.splitlines() if line.startswith("modscope record:"))
    run = modscope.load_trace(tmp_path / "run.jsonl.gz")
    assert run.ranks == {0: tmp_path / "run.jsonl.gz", 1: tmp_path / "run.rank1.jsonl.gz"}
    for rank in (0, 1):
        trace = run.rank_trace(rank)
        assert not trace.truncated
        name = run.ranks[rank].name
        assert closing[rank] == (f"modscope record: rank {rank} of 2: trace {name}: 4 steps (2 full, 2 light), 5 modules, "
                                 f"{len(trace)} events, 0 dropped")
        assert {(e["rank"], e["local_rank"], e["world_size"]) for e in trace.iter_events()} == {(rank, rank, 2)}
    same = _diff(tmp_path, "run.jsonl.gz#0", "run.jsonl.gz#1")
    assert same.returncode == 0, same.stdout + same.stderr
    assert same.stdout.startswith("✔ no difference beyond rtol 0.001: 4 step pairs compared")
    one_step = _diff(tmp_path, "run.jsonl.gz#0@2", "run.jsonl.gz#1@2")
    assert one_step.returncode == 0 and "1 step pair compared" in one_step.stdout
    # the replay opens a rank's file by the same name
    replay = ReplaySource(f"{tmp_path / 'run.jsonl.gz'}#1")
    assert replay.path == tmp_path / "run.rank1.jsonl.gz"
    assert replay.description == "replay run.rank1.jsonl.gz · 2 ranks, opened at rank 1 (r: next rank)"


def test_modscope_launches_ranks_names_a_diverging_parameter_and_a_killed_rank(tmp_path):
    done = _run(tmp_path, "-m", "modscope", "record", "--nproc-per-node", "2", "--trace-file", "run.jsonl",
                str(SCRIPT), "--steps", "100", "--pause", "0.15", "--diverge-rank", "1", "--diverge-step", "1",
                "--kill-rank", "1", "--kill-step", "5")
    assert done.returncode == 128 + 9, done.stderr  # the killed rank's status, as a shell reports it
    closing = done.stderr.splitlines()[-1]
    assert closing.startswith("modscope record: trace run.jsonl and 1 beside it (2 ranks): ")
    assert closing.endswith("; rank 1 killed by SIGKILL, last step 4 (its file ends there); "
                            "the launcher stopped the other ranks")
    run = modscope.load_trace(tmp_path / "run.jsonl")
    killed = run.rank_trace(1)
    assert killed.truncated and max(e["step"] for e in killed.iter_events()) == 4
    assert not run.truncated  # rank 0 was stopped by the launcher's SIGTERM: its trace closed cleanly
    # rank 1 nudged module.2.bias after its step 1: the copies part at the next step
    parted = _diff(tmp_path, "run.jsonl#0", "run.jsonl#1")
    assert parted.returncode == 1
    assert parted.stdout.splitlines()[0].startswith(
        "✖ diverged at step 2 in module module.2: module.2.bias is not the same on both ranks (fingerprints ")
    assert "no file for rank 3 of run.jsonl (ranks 0, 1 are recorded beside it)" in \
        _diff(tmp_path, "run.jsonl#0", "run.jsonl#3").stderr


def test_a_ranks_closing_line_is_one_write_with_its_newline(capfd, monkeypatch):
    """Two ranks' closing lines came out as one line in a fresh-clone run (print wrote the text
    and the newline apart, and the other rank's text fell between): the line goes in one write."""
    import os as os_module

    from modscope.cli import record

    writes: list[bytes] = []
    real_write = os_module.write

    def write(fd: int, data: bytes) -> int:
        writes.append(data)
        return real_write(fd, data)

    monkeypatch.setattr(record.os, "write", write)
    record._say_at_once("modscope record: rank 1 of 2: trace t.jsonl: 4 steps")
    assert writes == [b"modscope record: rank 1 of 2: trace t.jsonl: 4 steps\n"]
    assert capfd.readouterr().err == "modscope record: rank 1 of 2: trace t.jsonl: 4 steps\n"


def test_a_closing_line_reaches_a_stderr_without_a_file_descriptor(capsys):
    from modscope.cli import record

    record._say_at_once("modscope record: trace t.jsonl: 4 steps")
    assert capsys.readouterr().err == "modscope record: trace t.jsonl: 4 steps\n"
