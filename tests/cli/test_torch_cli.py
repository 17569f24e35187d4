"""The command line on torch models: ``export`` and ``summary`` of a ``FILE.py:Factory`` whose
factory returns a torch module, their one-line errors, and ``demo --backend torch`` / ``run
--backend`` as parsed and handed to the launcher (no TUI is started)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from modscope.cli import build_parser, main
from modscope.install_hints import TORCH_INSTALL
from modscope.views.tui import launch, sources

pytest.importorskip("torch")

MODELS = '''
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3)
        self.act = nn.ReLU(inplace=True)
        self.fc = nn.Linear(4 * 6 * 6, 10)

    def forward(self, x):
        return self.fc(self.act(self.conv(x)).flatten(1))


def make_net():
    return Net()


def make_tokens():
    return nn.Sequential(nn.Embedding(20, 8), nn.Flatten(), nn.Linear(3 * 8, 2))


def not_a_model():
    return 42


def broken():
    raise RuntimeError("factory exploded")


def scripted():
    return torch.jit.script(Net())
'''
NET_PARAMS = (1 * 4 * 9 + 4) + (4 * 36 * 10 + 10)  # 1,490
NET_INPUT = "2,1,8,8"


@pytest.fixture()
def models(tmp_path: Path) -> Path:
    path = tmp_path / "torch_models.py"
    path.write_text(MODELS)
    return path


@pytest.mark.parametrize("what", ["tree", "autograd", "dataflow"])
@pytest.mark.parametrize("suffix", ["dot", "svg"])
def test_export_torch_factory(models: Path, tmp_path: Path, what: str, suffix: str, capsys):
    out = tmp_path / f"{what}.{suffix}"
    assert main(["export", f"{models}:make_net", "--what", what, "--input", NET_INPUT, "-o", str(out)]) == 0
    text = out.read_text()
    assert f"wrote {out}" in capsys.readouterr().err
    assert text.startswith("digraph") if suffix == "dot" else "<svg" in text
    expected = {"tree": ["Net", "Conv2d", "Linear", f"{NET_PARAMS:,} params"],
                "autograd": ["ConvolutionBackward0", "conv.weight", "fc (Linear)"],
                "dataflow": ["conv: Conv2d", "act: ReLU", "fc: Linear", "(2, 1, 8, 8)"]}[what]
    if suffix == "svg":  # graphviz escapes and splits labels: check the words only
        expected = [w for w in expected if " " not in w and "(" not in w]
    assert all(word in text for word in expected), (what, expected)


def test_summary_torch_factory(models: Path, capsys):
    assert main(["summary", f"{models}:make_net", "--input", NET_INPUT, "--width", "160"]) == 0
    out = capsys.readouterr().out
    assert "Net summary" in out and "Conv2d" in out and "[2, 10]" in out
    assert f"{NET_PARAMS:,}" in out


def test_summary_and_export_with_token_input(models: Path, tmp_path: Path, capsys):
    assert main(["summary", f"{models}:make_tokens", "--input", "2,3", "--tokens", "20", "--width", "160"]) == 0
    assert "Embedding" in capsys.readouterr().out
    out = tmp_path / "tokens.dot"
    assert main(["export", f"{models}:make_tokens", "--what", "autograd", "--input", "2,3", "--tokens", "20",
                 "-o", str(out)]) == 0
    assert "EmbeddingBackward0" in out.read_text()


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch.jit.script is deprecated
@pytest.mark.parametrize(("factory", "extra", "fragment"), [
    ("not_a_model", [], "returned a int, not an nn.Module"),
    ("broken", [], "broken() failed: RuntimeError: factory exploded"),
    ("missing", [], "defines no class or factory named 'missing'"),
    ("make_net", ["--input", "2,3"], "the model rejected an input of shape (2, 3)"),
    ("scripted", [], "cannot trace the TorchScript module"),
])
def test_bad_factory_is_one_line_and_nonzero(models: Path, tmp_path: Path, capsys, factory: str,
                                             extra: list[str], fragment: str):
    args = extra or ["--input", NET_INPUT]
    assert main(["summary", f"{models}:{factory}", *args]) == 2
    assert main(["export", f"{models}:{factory}", "--what", "autograd", *args, "-o", str(tmp_path / "x.svg")]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert [line.split(":")[0] for line in lines] == ["modscope summary", "modscope export"], lines
    assert all(fragment in line for line in lines), lines


def test_torch_factory_without_input_says_to_give_one(models: Path, tmp_path: Path, capsys):
    assert main(["summary", f"{models}:make_net"]) == 2
    assert main(["export", f"{models}:make_net", "--what", "dataflow", "-o", str(tmp_path / "x.dot")]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 2 and all("give one with --input" in line for line in lines)


def test_console_script_exit_status(models: Path):
    modscope = Path(sys.executable).parent / "modscope"
    done = subprocess.run([str(modscope), "summary", f"{models}:broken", "--input", "1,1"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.strip().count("\n") == 0 and "factory exploded" in done.stderr


# --- demo and run: parsed and handed to the launcher, no TUI ---------------------------------------

@pytest.fixture()
def launched(monkeypatch) -> list[dict[str, Any]]:
    """Replaces ``launch.run_script`` (which would start the app); records each call."""
    calls: list[dict[str, Any]] = []

    def fake_run_script(script: str, args: list[str], trace_file: str | None = None, stats: bool = False,
                        backend: str = "auto", trace_tag: str = "", nice: int = 0) -> int:
        calls.append({"script": script, "args": args, "trace_file": trace_file, "stats": stats,
                      "backend": backend, "tag": trace_tag, "nice": nice})
        return 0

    monkeypatch.setattr(launch, "run_script", fake_run_script)
    return calls


def test_demo_backend_torch_parses_and_reaches_the_child(launched):
    assert main(["demo", "--backend", "torch", "--model", "rnn", "--no-stats"]) == 0
    (call,) = launched
    assert Path(call["script"]) == launch.EXAMPLES_DIR / "rnn.py" and Path(call["script"]).is_file()
    assert call["args"][-2:] == ["--backend", "torch"] and call["backend"] == "torch"
    assert call["stats"] is False and call["tag"] == "torch"


def test_demo_defaults_to_the_engine(launched):
    assert main(["demo"]) == 0
    assert launched[0]["backend"] == "engine" and "--backend" not in launched[0]["args"]
    assert Path(launched[0]["script"]).name == "mnist_net.py" and launched[0]["stats"] is True


def test_demo_backend_choices_are_checked(capsys):
    with pytest.raises(SystemExit) as info:
        build_parser().parse_args(["demo", "--backend", "jax"])
    assert info.value.code == 2 and "invalid choice: 'jax'" in capsys.readouterr().err


@pytest.mark.parametrize("backend", ["engine", "torch"])
def test_every_demo_has_a_script_under_both_backends(backend):
    for name in launch.DEMOS:
        path, args = launch.demo_command(name, backend)
        assert path.is_file(), name
        assert ("--backend" in args) == (backend == "torch")


def test_missing_torch_says_how_to_install(launched, monkeypatch, tmp_path: Path, capsys):
    monkeypatch.setattr(launch, "torch_installed", lambda: False)
    script = tmp_path / "train.py"
    script.write_text("import torch\n")
    assert main(["demo", "--backend", "torch"]) == 2
    assert main(["run", str(script)]) == 2  # auto: the script imports torch
    assert main(["run", "--backend", "torch", str(script)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 3 and all(TORCH_INSTALL in line for line in lines), lines
    assert not launched


def test_run_backend_option(launched, tmp_path: Path):
    script = tmp_path / "train.py"
    script.write_text("import torch\n")
    assert main(["run", str(script), "--lr", "1"]) == 0
    assert main(["run", "--backend", "engine", "--stats", str(script)]) == 0
    assert [(c["backend"], c["args"], c["stats"]) for c in launched] == [("auto", ["--lr", "1"], False),
                                                                        ("engine", [], True)]


def test_child_command_carries_the_backend():
    class Source:
        address, token = "/tmp/sock", "tok"

    auto = sources.child_command(Source(), "train.py", ["--lr", "1"], "t.jsonl")
    torch_cmd = sources.child_command(Source(), "train.py", ["--lr", "1"], None, stats=True, backend="torch")
    assert "--backend" not in auto and auto[-3:] == ["train.py", "--lr", "1"]
    assert torch_cmd[torch_cmd.index("--backend") + 1] == "torch" and "--stats" in torch_cmd
    assert torch_cmd.index("--backend") < torch_cmd.index("train.py")
