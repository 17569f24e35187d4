"""modscope/examples/_backend.py: swapping an example's engine imports for torch, and running an example
under one backend or both."""

from __future__ import annotations

import textwrap

import _backend
import pytest

SOURCE = textwrap.dedent('''\
    """Mentions import engine in a docstring."""
    import engine as torch
    import engine.nn as nn
    import engine.nn.functional as F
    from engine.autograd import Function
    from engine import optim
    import enginex  # another package whose name starts the same
    text = "import engine as torch"
    def f():
        import engine
        return engine
    ''')


def test_swap_imports_rewrites_import_statements_only():
    swapped = _backend.swap_imports(SOURCE, "torch")
    assert swapped.splitlines() == [
        '"""Mentions import engine in a docstring."""',
        "import torch as torch",
        "import torch.nn as nn",
        "import torch.nn.functional as F",
        "from torch.autograd import Function",
        "from torch import optim",
        "import enginex  # another package whose name starts the same",
        'text = "import engine as torch"',
        "def f():",
        "    import torch",
        "    return engine",
    ]


def test_swap_imports_engine_is_identity():
    assert _backend.swap_imports(SOURCE, "engine") is SOURCE


def test_swap_imports_unknown_backend():
    with pytest.raises(ValueError, match="unknown backend 'jax': expected one of engine, torch"):
        _backend.swap_imports(SOURCE, "jax")


def test_with_backend_appends_last_occurrence():
    assert _backend.with_backend(["--epochs", "2", "--backend", "both"], "torch") == [
        "--epochs", "2", "--backend", "both", "--backend", "torch"]
    assert _backend.with_backend([], "engine") == ["--backend", "engine"]


FAKE_EXAMPLE = textwrap.dedent('''\
    import argparse
    import engine as torch

    def main(argv=None):
        parser = argparse.ArgumentParser()
        parser.add_argument("--backend", default="engine")
        parser.add_argument("--value", type=float, default=0.5)
        args = parser.parse_args(argv)
        assert args.backend == torch.__name__
        print("ran under", torch.__name__)
        return args.value + (0.25 if torch.__name__ == "torch" else 0.0)
    ''')


@pytest.fixture
def fake_example(tmp_path):
    path = tmp_path / "fake_example.py"
    path.write_text(FAKE_EXAMPLE)
    return path


def test_load_engine_registers_a_fresh_module(fake_example):
    import sys

    import engine

    module = _backend.load(fake_example, "engine")
    assert module.torch is engine
    assert sys.modules["fake_example__engine"] is module
    assert module.__name__ == "fake_example__engine" and module.__file__ == str(fake_example)
    assert _backend.load(fake_example, "engine") is not module  # each load executes the file again


def test_load_failure_leaves_no_module(tmp_path):
    import sys

    path = tmp_path / "broken_example.py"
    path.write_text("import engine as torch\nraise RuntimeError('boom')\n")
    with pytest.raises(RuntimeError, match="boom"):
        _backend.load(path, "engine")
    assert "broken_example__engine" not in sys.modules


def test_load_torch_runs_the_file_under_torch(fake_example, torch):
    module = _backend.load(fake_example, "torch")
    assert module.torch is torch


def test_run_both_prints_the_comparison(fake_example, capsys, torch):
    metric = _backend.run(fake_example, "both", ["--value", "0.5"], "{:.2%}".format)
    assert metric == 0.5  # the engine's
    out = capsys.readouterr().out
    assert out.index("ran under engine") < out.index("ran under torch")
    assert out.endswith(
        "final metric by backend:\n"
        "  engine  50.00%\n"
        "  torch   75.00%\n"
        "  difference (engine - torch) -25.00%\n"
    )


def test_run_single_backend(fake_example, capsys):
    assert _backend.run(fake_example, "engine", ["--value", "2"]) == 2.0
    assert "final metric" not in capsys.readouterr().out
