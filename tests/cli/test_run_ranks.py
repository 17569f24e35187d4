"""``modscope run --nproc-per-node N``, headless (the viewer's socket source and state, no app):
torch's elastic launcher starts the ranks, every rank streams to the viewer and records its own
file beside the trace file."""

from __future__ import annotations

from pathlib import Path

import pytest

import modscope
from modscope.views.tui.launch import start_child

from .test_record_ranks import SCRIPT
from .test_torch_end_to_end import run_headless

pytest.importorskip("torch")


def test_run_starts_ranks_through_torchs_launcher_and_the_viewer_follows_every_rank(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    trace_file = tmp_path / "run.jsonl"
    code, state, child = run_headless(lambda s: start_child(s, str(SCRIPT), ["--steps", "4"], str(trace_file),
                                                            backend="torch", nproc=2), timeout=300, ranks=2)
    assert code == 0, "\n".join(child.log)
    assert child.proc.args[2:4] == ["-m", "torch.distributed.run"]
    # (two ranks share the launcher's stdout: a line of one may land inside a line of the other)
    assert all("".join(child.log).count(f"rank {r} done") == 1 for r in (0, 1)), "\n".join(child.log)
    ranks = state.all_ranks()  # every rank, folded live
    assert sorted(ranks) == [0, 1] and all(r.model_name == "DistributedDataParallel" and r.step >= 3
                                           for r in ranks.values())
    run = modscope.load_trace(trace_file)
    assert sorted(run.ranks) == [0, 1]
    for rank in (0, 1):
        trace = run.rank_trace(rank)
        assert not trace.truncated
        assert {e["rank"] for e in trace.iter_events()} == {rank}
        assert max(e["step"] for e in trace.iter_events()) == 3


def test_run_passes_the_rank_count_to_the_launcher(tmp_path: Path, monkeypatch):
    from modscope.cli import main
    from modscope.views.tui import launch

    calls = []
    monkeypatch.setattr(launch, "run_script", lambda script, args, trace_file=None, **kw: calls.append(kw) or 0)
    script = tmp_path / "train.py"
    script.write_text("import torch\n")
    assert main(["run", "--nproc-per-node", "2", str(script)]) == 0
    assert main(["run", str(script)]) == 0
    assert calls[0]["nproc"] == 2 and "nproc" not in calls[1]
