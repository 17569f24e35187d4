"""``modscope export``: every diagram in every format from a file target, the example registry,
and every error path exiting non-zero with one clear line. The exports that run a model run an
engine model and a torch model (``models_file``: the target file of ``lib``'s models)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from modscope.capture import target as target_mod
from modscope.capture.target import EXAMPLES, EXAMPLES_DIR, Example, TargetError, load_target, parse_shape
from modscope.cli import export as export_mod
from modscope.cli import main

from .helpers import MODELS_FILE, TORCH_MODELS_FILE

NET = f"{MODELS_FILE}:Net"


@pytest.fixture
def models_file(lib) -> Path:
    """The file defining the diagram models with ``lib`` (``diagram_models.define``)."""
    return MODELS_FILE if lib.__name__ == "engine" else TORCH_MODELS_FILE


def _fails(capsys, argv, *fragments):
    """Run the CLI expecting a user error: exit 2 and one line on stderr holding ``fragments``."""
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("modscope export: error: ")
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("fmt, check", [
    ("dot", lambda b: b.startswith(b"digraph Net {")),
    ("svg", lambda b: b.startswith(b"<?xml") and b"blocks.0.fc1" in b),
    ("png", lambda b: b.startswith(b"\x89PNG")),
    ("pdf", lambda b: b.startswith(b"%PDF")),
    ("mermaid", lambda b: b.startswith(b"flowchart TB")),
    ("json", lambda b: json.loads(b)["graph"]["kind"] == "module_tree"),
])
def test_tree_in_every_format(models_file, tmp_path, capsys, fmt, check):
    out = tmp_path / "tree.out"
    assert main(["export", f"{models_file}:Net", "--what", "tree", "--format", fmt, "-o", str(out)]) == 0
    assert check(out.read_bytes())
    assert capsys.readouterr().err.strip() == f"wrote {out}"


def test_autograd_with_depth_from_a_factory(models_file, tmp_path):
    out = tmp_path / "g.json"
    assert main(["export", f"{models_file}:Net", "--what", "autograd", "--input", "2,8", "--depth", "2",
                 "-o", str(out)]) == 0
    data = json.loads(out.read_text())
    collapsed = sorted(n["module"] for n in data["nodes"] if n["kind"] == "collapsed")
    assert collapsed == ["blocks.0", "blocks.1"]
    assert [n["label"] for n in data["nodes"] if n["kind"] == "output"] == ["output\n()"]  # summed to a scalar
    svg = tmp_path / "g.svg"
    assert main(["export", f"{models_file}:make_res", "--what", "autograd", "--input", "3x4", "-o", str(svg)]) == 0
    assert b"l1.weight" in svg.read_bytes()


def test_dataflow_follows_tensors(models_file, tmp_path):
    out = tmp_path / "flow.mmd"
    assert main(["export", f"{models_file}:make_res", "--what", "dataflow", "--input", "3,4", "-o", str(out)]) == 0
    text = out.read_text()
    assert text.startswith("flowchart TB") and "merge: Merge" in text and text.count("-->") == 8


def test_progress_is_reported_by_stage(tmp_path):
    stages = []
    export_mod.export(NET, "tree", tmp_path / "t.svg", progress=stages.append)
    assert stages == [f"loading {NET}", "building the tree diagram", "rendering svg with dot"]


@pytest.mark.parametrize("spec, fragment", [
    ("nosuchexample", "unknown target 'nosuchexample': give FILE.py:CLASS_OR_FACTORY or an example name (net, "),
    ("models.py:", "bad target 'models.py:': expected FILE.py:CLASS_OR_FACTORY"),
    (":Net", "bad target ':Net'"),
    ("models.py:not-a-name", "bad target 'models.py:not-a-name'"),
])
def test_bad_target_forms(tmp_path, capsys, spec, fragment):
    _fails(capsys, ["export", spec, "-o", str(tmp_path / "x.svg")], fragment)


def test_missing_file_and_missing_class(tmp_path, capsys):
    _fails(capsys, ["export", f"{tmp_path}/nope.py:Net", "-o", str(tmp_path / "x.svg")],
           f"file not found: {tmp_path}/nope.py")
    _fails(capsys, ["export", f"{MODELS_FILE}:Nope", "-o", str(tmp_path / "x.svg")],
           "defines no class or factory named 'Nope'")


@pytest.mark.parametrize("attr, fragment", [
    ("NOT_CALLABLE", "'NOT_CALLABLE' in"),
    ("Broken", "Broken() failed: ValueError: cannot build"),
    ("not_a_module", "not_a_module() returned a list, not an nn.Module of the engine or of torch"),
])
def test_unusable_names(tmp_path, capsys, attr, fragment):
    line = _fails(capsys, ["export", f"{MODELS_FILE}:{attr}", "-o", str(tmp_path / "x.svg")], fragment)
    assert "second line" not in line


def test_file_that_fails_to_import(tmp_path, capsys):
    bad = tmp_path / "bad.py"
    bad.write_text("def broken(:\n    pass\n")
    _fails(capsys, ["export", f"{bad}:Net", "-o", str(tmp_path / "x.svg")], f"cannot import {bad}: SyntaxError")


@pytest.mark.parametrize("what", ["autograd", "dataflow"])
def test_input_shape_the_model_rejects(models_file, tmp_path, capsys, what):
    _fails(capsys, ["export", f"{models_file}:Net", "--what", what, "--input", "2,9", "-o", str(tmp_path / "x.svg")],
           "the model rejected an input of shape (2, 9): RuntimeError: mat1 and mat2 shapes cannot be multiplied")
    assert not (tmp_path / "x.svg").exists()


@pytest.mark.parametrize("text", ["2,a", "", "2,0", "-1,3"])
def test_malformed_input_shape(tmp_path, capsys, text):
    _fails(capsys, ["export", NET, "--what", "autograd", f"--input={text}", "-o", str(tmp_path / "x.svg")],
           f"bad input shape {text!r}: expected positive integers")


def test_missing_input_shape_for_a_file_target(tmp_path, capsys):
    _fails(capsys, ["export", NET, "--what", "autograd", "-o", str(tmp_path / "x.svg")],
           f"no input shape for {NET}: give one with --input")


def test_output_without_a_graph(models_file, tmp_path, capsys):
    _fails(capsys, ["export", f"{models_file}:frozen", "--what", "autograd", "--input", "3,4",
                    "-o", str(tmp_path / "x.svg")], "the model's output does not require grad")


def test_unwritable_output(tmp_path, capsys, monkeypatch):
    _fails(capsys, ["export", NET, "-o", str(tmp_path / "no" / "x.svg")],
           f"cannot write {tmp_path}/no/x.svg: directory {tmp_path}/no does not exist")
    _fails(capsys, ["export", NET, "--format", "svg", "-o", str(tmp_path)], f"cannot write {tmp_path}: it is a directory")

    def refuse(self, *args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "write_text", refuse)
    _fails(capsys, ["export", NET, "-o", str(tmp_path / "x.dot")], f"cannot write {tmp_path}/x.dot: Permission denied")


def test_format_that_cannot_be_told_from_the_name(tmp_path, capsys):
    _fails(capsys, ["export", NET, "-o", str(tmp_path / "x.txt")], "cannot tell the format from 'x.txt': give --format")


def test_missing_dot_writes_the_source_and_says_how_to_install(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    _fails(capsys, ["export", NET, "-o", str(tmp_path / "x.png")], "apt-get install graphviz", str(tmp_path / "x.dot"))
    assert (tmp_path / "x.dot").read_text().startswith("digraph Net {")


def test_argument_errors_are_usage_errors(tmp_path, capsys):
    for argv in (["export", NET, "--depth", "-1", "-o", "x.svg"], ["export", NET, "--what", "cake", "-o", "x.svg"],
                 ["export", NET]):
        with pytest.raises(SystemExit) as info:
            main(argv)
        assert info.value.code == 2
    err = capsys.readouterr().err
    assert "expected an integer >= 0, got '-1'" in err and "invalid choice: 'cake'" in err
    assert "the following arguments are required: -o/--output" in err


def test_console_script_error_is_one_line_and_nonzero(tmp_path):
    script = Path(sys.executable).parent / "modscope"
    run = subprocess.run([str(script), "export", f"{tmp_path}/nope.py:Net", "-o", str(tmp_path / "x.svg")],
                         capture_output=True, text=True)
    assert run.returncode == 2
    assert run.stderr.splitlines() == [f"modscope export: error: {tmp_path}/nope.py:Net: file not found: "
                                       f"{tmp_path}/nope.py"]


# --- the example registry ------------------------------------------------------------------------

def test_registry_names_the_bundled_examples():
    assert {name: (e.file, e.attr) for name, e in EXAMPLES.items()} == {
        "net": ("mnist_net.py", "Net"), "simple": ("simple_net.py", "SimpleNet"), "rnn": ("rnn.py", "RNNClassifier"),
        "resnet": ("resnet_tiny.py", "ResNetTiny"), "transformer": ("transformer_tiny.py", "TransformerTiny")}
    assert EXAMPLES["net"].input_shape == EXAMPLES["simple"].input_shape == (1, 1, 28, 28)
    assert EXAMPLES_DIR.name == "examples" and (EXAMPLES_DIR / "_mnist.py").is_file()


def test_registry_lookup_errors_on_the_real_examples_folder(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(target_mod, "EXAMPLES", {"mnist": Example("_mnist.py", "Net", (1, 1, 28, 28)),
                                                 "gone": Example("no_such_example.py", "Net", (1,))})
    _fails(capsys, ["export", "mnist", "-o", str(tmp_path / "x.svg")],
           f"mnist: {EXAMPLES_DIR / '_mnist.py'} defines no class or factory named 'Net'")
    _fails(capsys, ["export", "gone", "-o", str(tmp_path / "x.svg")],
           f"gone: file not found: {EXAMPLES_DIR / 'no_such_example.py'}")
    _fails(capsys, ["export", "net", "-o", str(tmp_path / "x.svg")], "unknown target 'net'", "(mnist, gone)")


def test_an_example_loads_with_its_default_input_and_sibling_imports(lib, tmp_path):
    (tmp_path / "_helper.py").write_text("WIDTH = 6\n")
    (tmp_path / "toy.py").write_text(
        f"import {lib.__name__}.nn as nn\nfrom _helper import WIDTH\n\n"
        "class Toy(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.fc = nn.Linear(WIDTH, 2)\n\n    def forward(self, x):\n        return self.fc(x)\n")
    examples = {"toy": Example("toy.py", "Toy", (3, 6)), "tokens": Example("toy.py", "Toy", (2, 5), "int64", 7)}
    loaded = load_target("toy", examples, tmp_path)
    assert type(loaded.model).__name__ == "Toy" and loaded.input_shape == (3, 6)
    assert tuple(loaded.model(loaded.example_input()).shape) == (3, 2)
    assert tuple(loaded.example_input((4, 6)).shape) == (4, 6)
    tokens = load_target("tokens", examples, tmp_path).example_input()
    assert str(tokens.dtype).rpartition(".")[2] == "int64" and tuple(tokens.shape) == (2, 5)
    assert int(tokens.max()) < 7 and int(tokens.min()) >= 0
    assert str(tmp_path) not in sys.path  # the folder was importable only while loading


def test_parse_shape():
    assert parse_shape("64,1,28,28") == parse_shape("64x1x28x28") == parse_shape("64 1 28 28") == (64, 1, 28, 28)
    with pytest.raises(TargetError, match="bad input shape"):
        parse_shape("1.5")


@pytest.mark.parametrize("what", ["autograd", "dataflow"])
def test_a_forward_that_updates_a_module_output_in_place_exports(models_file, tmp_path, what):
    out = tmp_path / "g.json"
    assert main(["export", f"{models_file}:InPlaceResidual", "--what", what, "--input", "2,4", "-o", str(out)]) == 0
    labels = [n["label"].split("\n")[0] for n in json.loads(out.read_text())["nodes"]]
    assert ("fc: Linear" in labels) if what == "dataflow" else ("AddBackward0" in labels)
