"""engine.jit is torch.jit with TorchScript disabled (PYTORCH_JIT=0): checked against torch run
with that switch, in a child process (torch reads it at import)."""

from __future__ import annotations

import subprocess
import sys

import pytest

import engine


def f(x):
    return x + 1


class Twice(engine.nn.Module):
    def forward(self, x):
        return x * 2


TORCH_NO_JIT = """
import torch
def f(x): return x + 1
class M(torch.nn.Module):
    def forward(self, x): return x * 2
m = M()
print(torch.jit.script(f) is f, torch.jit.script(m) is m, torch.jit.trace(f, (torch.ones(2),)) is f,
      torch.jit.trace_module(m, {"forward": torch.ones(1)}) is m, torch.jit.is_scripting(), torch.jit.is_tracing(),
      torch.jit.Attribute(3, int), torch.jit.annotate(int, 4), isinstance(torch.jit.ScriptModule(), torch.nn.Module))
"""


def test_matches_torch_with_torchscript_disabled():
    pytest.importorskip("torch")
    env = {"PYTORCH_JIT": "0", "PATH": ""}
    out = subprocess.run([sys.executable, "-c", TORCH_NO_JIT], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    m = Twice()
    ours = (engine.jit.script(f) is f, engine.jit.script(m) is m, engine.jit.trace(f, (engine.ones(2),)) is f,
            engine.jit.trace_module(m, {"forward": engine.ones(1)}) is m, engine.jit.is_scripting(),
            engine.jit.is_tracing(), engine.jit.Attribute(3, int), engine.jit.annotate(int, 4),
            isinstance(engine.jit.ScriptModule(), engine.nn.Module))
    assert out.stdout.split() == [str(v) for v in ours]


def test_decorators_return_the_function_and_it_runs():
    @engine.jit.script
    def gelu(x):
        return x * 0.5 * (1.0 + engine.erf(x / 1.41421))

    assert engine.jit.ignore(f) is f and engine.jit.ignore(drop=True)(f) is f
    assert engine.jit.unused(f) is f and engine.jit.export(f) is f and engine.jit.script_method(f) is f
    assert gelu(engine.zeros(2)).tolist() == [0.0, 0.0]


@pytest.mark.parametrize("call", [lambda: engine.jit.save(Twice(), "m.pt"), lambda: engine.jit.load("m.pt"),
                                  lambda: engine.jit.freeze(Twice()),
                                  lambda: engine.jit.optimize_for_inference(Twice())])
def test_what_needs_a_compiled_program_is_refused_by_name(call, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(NotImplementedError, match=r"torch\.jit\.\w+ needs a compiled TorchScript program"):
        call()
    assert not (tmp_path / "m.pt").exists()
