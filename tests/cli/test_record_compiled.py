"""``modscope record`` on a script that calls its model through ``torch.compile``: without
``--eager`` the run says at once that the compiled model's calls go unrecorded and what to do
(the warning on stderr, a ``CompiledModel`` event in the trace); with ``--eager`` the script's
``torch.compile`` returns the model itself and every module call is traced. A real process, real
dynamo (``backend="eager"``: no C++ code generation)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import modscope

pytest.importorskip("torch")

SCRIPT = '''
import torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
compiled = torch.compile(model, backend="eager")
print("compiled:", type(compiled).__name__, flush=True)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(2):
    compiled(torch.randn(4, 8)).sum().backward()
    opt.step(); opt.zero_grad()
'''


def _record(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "TORCHDYNAMO_DISABLE", "TORCH_COMPILE_DISABLE")}
    (tmp_path / "train.py").write_text(SCRIPT)
    return subprocess.run([sys.executable, "-m", "modscope", "record", "--trace-file", "run.jsonl", *args, "train.py"],
                          capture_output=True, text=True, cwd=tmp_path, env={**env, "OMP_NUM_THREADS": "1"},
                          timeout=300)


def test_record_eager_traces_a_compiled_script_in_full(tmp_path):
    done = _record(tmp_path, "--eager", "--full")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "compiled: Sequential\n"  # TORCHDYNAMO_DISABLE: torch.compile returned the model
    tr = modscope.load_trace(tmp_path / "run.jsonl")
    assert [e for e in tr.events if e["kind"] == "error"] == []
    assert ("forward", "0") in tr.firing_order() and ("backward", "2") in tr.firing_order()


@pytest.mark.slow  # dynamo traces modscope's hooks into the compiled graph: ~20-40 s on a loaded machine
def test_record_without_eager_says_the_compiled_model_goes_unrecorded(tmp_path):
    done = _record(tmp_path, "--full")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "compiled: OptimizedModule\n"
    assert "the traced model is torch.compile's wrapper of a Sequential" in done.stderr
    assert "--eager" in done.stderr
    tr = modscope.load_trace(tmp_path / "run.jsonl")
    (event,) = [e for e in tr.events if e["kind"] == "error"]
    assert event["etype"] == "CompiledModel" and event["module"] == ""
