"""engine's import graph runs one way (issue 29, "Readable, one way"), measured on the source by
``scripts/engine_imports.py``: every import counts, at module level or inside a function, except
a bare ``import engine``.

- no import knot (strongly connected files) at all: the issue allowed 10 files (Tensor and its
  core); none is left, so none may come back;
- optim, distributions and nn hold no knot;
- no module writes names into another module's globals, none uses importlib;
- at most 40 imports live inside functions, each with a one-line reason comment.
"""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("engine_imports", ROOT / "scripts" / "engine_imports.py")
engine_imports = importlib.util.module_from_spec(_spec)
sys.modules["engine_imports"] = engine_imports  # dataclasses look their module up there
_spec.loader.exec_module(engine_imports)

MAX_KNOT = 10
MAX_FUNCTION_IMPORTS = 40


@pytest.fixture(scope="module")
def report():
    return engine_imports.measure(ROOT)


def test_largest_knot_is_tensor_and_its_core(report):
    assert len(report.largest_knot) <= MAX_KNOT, report.largest_knot


def test_no_knot_at_all(report):
    """Every import runs one way (autograd's ``grad`` lives in ``autograd/differentiate.py``;
    ``select``/``slice_dim`` are shape's views, which indexing composes)."""
    assert report.knots == [], report.knots


@pytest.mark.parametrize("subpackage", ["optim", "distributions", "nn"])
def test_no_knot_in_subpackage(report, subpackage):
    assert report.knots_in(subpackage) == []


def test_no_injected_globals(report):
    assert report.injections == []


def test_no_importlib_tricks(report):
    assert report.importlib_tricks == []


def test_function_level_imports_are_few(report):
    assert len(report.function_imports) <= MAX_FUNCTION_IMPORTS, len(report.function_imports)


def test_function_level_imports_say_why(report):
    assert report.unexplained_function_imports == []


# --- the measurement itself, on a small package written for each case ------------------------------

def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, source in files.items():
        path = tmp_path / "engine" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))
    return tmp_path


def test_measure_finds_a_knot_through_a_function_level_import(tmp_path):
    root = _package(tmp_path, {
        "__init__.py": "",
        "a.py": "from .b import f\n",
        "b.py": "def f():\n    from .a import g  # a needs b at import\n",
        "c.py": "import engine\nfrom .a import x\n",
    })
    report = engine_imports.measure(root)
    assert report.knots == [["engine.a", "engine.b"]]
    assert [(m, line, reason) for m, line, _, reason in report.function_imports] == [
        ("engine.b", 2, "a needs b at import")]
    assert report.unexplained_function_imports == []


def test_bare_import_engine_is_not_an_edge(tmp_path):
    root = _package(tmp_path, {"__init__.py": "from . import a\n", "a.py": "import engine\nfrom .. import engine\n"})
    assert engine_imports.measure(root).knots == []


def test_from_package_import_submodule_counts_the_package(tmp_path):
    """``from . import m`` inside a subpackage runs its ``__init__``: a knot with it, as the issue counts."""
    root = _package(tmp_path, {
        "__init__.py": "",
        "optim/__init__.py": "from .sgd import SGD\n",
        "optim/_functional.py": "",
        "optim/sgd.py": "from . import _functional as F\nSGD = 1\n",
    })
    report = engine_imports.measure(root)
    assert report.knots_in("optim") == [["engine.optim", "engine.optim.sgd"]]
    assert report.knots_in("nn") == []


def test_measure_finds_injected_globals_and_unexplained_imports(tmp_path):
    root = _package(tmp_path, {
        "__init__.py": "",
        "core.py": "_Tensor = None\n",
        "tensor.py": """\
            from . import core
            import engine.core as other


            class Tensor:
                pass


            def late():
                from .core import _Tensor
                return _Tensor


            core._Tensor = Tensor
            setattr(other, "_T", Tensor)
            vars(core)["_U"] = Tensor
            core._state.enabled = True  # an attribute of an object in core, not a core global
            """,
        "tricks.py": "import importlib\nimport sys\nsys.modules['x'] = None\n",
    })
    report = engine_imports.measure(root)
    assert sorted(line for _, line, _ in report.injections) == [14, 15, 16]
    assert [(m, line) for m, line, _ in report.unexplained_function_imports] == [("engine.tensor", 10)]
    assert sorted(what for _, _, what in report.importlib_tricks) == ["import importlib", "sys.modules[...] = ..."]


def test_script_prints_the_summary(capsys):
    assert engine_imports.main(["--json"]) == 0
    out = capsys.readouterr().out
    assert '"largest_knot"' in out and '"function_level_imports"' in out
