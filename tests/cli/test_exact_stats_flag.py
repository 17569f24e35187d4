"""``--exact-stats`` on ``modscope run`` and ``record`` (``capture.params``): the script's trace
measures every value of a large parameter (no ``stats_sampled``); without it, the values'
figures of a tensor of more than 65,536 values come from the update's sample, and the item says
so. The flag reaches the trace through ``EXACT_STATS_VARIABLE``; a bad value is refused."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import modscope
from modscope.capture.params import (
    EXACT_STATS_VARIABLE,
    add_exact_stats_flag,
    apply_exact_stats_flag,
    exact_stats_from_env,
)
from modscope.cli import build_parser

pytest.importorskip("torch")

SCRIPT = '''
import numpy as np
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(512, 256), torch.nn.Linear(256, 4))  # 131,072 weights: sampled
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for _ in range(2):
    opt.zero_grad(); model(torch.randn(8, 512)).pow(2).mean().backward(); opt.step()
np.save("weight.npy", model[0].weight.detach().double().numpy())
'''


def _record(tmp_path: Path, *args: str, **extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE", EXACT_STATS_VARIABLE)}
    return subprocess.run([sys.executable, "-m", "modscope", "record", *args], capture_output=True, text=True,
                          cwd=tmp_path, env={**env, "OMP_NUM_THREADS": "1", **extra}, timeout=300)


def _last_weight_item(path: Path) -> dict:
    params = [e for e in modscope.load_trace(path).iter_events() if e["kind"] == "params"]
    return next(i for i in params[-1]["items"] if i["path"] == "0.weight")


def test_record_with_and_without_exact_stats(tmp_path):
    (tmp_path / "train.py").write_text(SCRIPT)
    done = _record(tmp_path, "--full", "--trace-file", "sampled.jsonl", "train.py")
    assert done.returncode == 0, done.stderr
    weight = np.load(tmp_path / "weight.npy")
    item = _last_weight_item(tmp_path / "sampled.jsonl")
    assert item["stats_sampled"] == item["update_sampled"] == 131_072 // 32 * 16  # every other run of 16
    assert item["norm"] == pytest.approx(np.linalg.norm(weight), rel=3e-2)  # an estimate
    done = _record(tmp_path, "--full", "--exact-stats", "--trace-file", "exact.jsonl", "train.py")
    assert done.returncode == 0, done.stderr
    item = _last_weight_item(tmp_path / "exact.jsonl")
    assert "stats_sampled" not in item and item["update_sampled"] == 131_072 // 32 * 16
    assert item["norm"] == pytest.approx(np.linalg.norm(weight), rel=1e-6)
    assert item["mean"] == pytest.approx(weight.mean(), rel=1e-4, abs=1e-9)
    assert item["std"] == pytest.approx(weight.std(), rel=1e-5)


def test_record_refuses_a_bad_variable_before_the_script_runs(tmp_path):
    (tmp_path / "train.py").write_text("print('never runs')\n")
    done = _record(tmp_path, "--trace-file", "t.jsonl", "train.py", **{EXACT_STATS_VARIABLE: "yes"})
    assert done.returncode == 2 and f"${EXACT_STATS_VARIABLE}='yes'" in done.stderr
    assert "never runs" not in done.stdout


def test_the_flag_goes_through_the_environment_and_is_taken_out():
    parser = argparse.ArgumentParser()
    add_exact_stats_flag(parser)
    env: dict[str, str] = {}
    apply_exact_stats_flag(parser.parse_args([]), env)
    assert env == {} and exact_stats_from_env(env) is False
    apply_exact_stats_flag(parser.parse_args(["--exact-stats"]), env)
    assert env == {EXACT_STATS_VARIABLE: "1"}
    assert exact_stats_from_env(env) is True and env == {}  # taken out: the script does not see it
    with pytest.raises(ValueError, match=r"\$MODSCOPE_EXACT_STATS='true': expected '1' \(set by --exact-stats\)"):
        exact_stats_from_env({EXACT_STATS_VARIABLE: "true"})


@pytest.mark.parametrize("command", ["run", "record"])
def test_both_commands_take_the_flag(command):
    parser = build_parser()
    assert parser.parse_args([command, "--exact-stats", "train.py"]).exact_stats is True
    assert parser.parse_args([command, "train.py"]).exact_stats is False


def test_run_tells_the_child_through_its_environment(monkeypatch, tmp_path):
    from modscope.cli import live

    monkeypatch.setenv(EXACT_STATS_VARIABLE, "")  # (undone after the test, whatever _run writes)
    args = build_parser().parse_args(["run", "--exact-stats", str(tmp_path / "missing.py")])
    assert live._run(args) == 2  # no such script: refused, but the child's environment was set first
    assert os.environ[EXACT_STATS_VARIABLE] == "1"
