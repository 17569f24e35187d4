"""The package's layers, checked on the source: capture touches frameworks, views and events
never do (see ``modscope/__init__.py``). Every import statement counts, also one inside a
function: a view that needs a framework must get its data as events instead."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "modscope"

# folder (relative to the repository) -> import prefixes none of its modules may name
RULES: dict[str, tuple[str, ...]] = {
    "modscope/events": ("engine", "torch", "modscope.capture", "modscope.views", "modscope.cli",
                        "modscope.tracing", "modscope.graph"),
    "modscope/views": ("engine", "torch", "modscope.capture", "modscope.cli", "modscope.tracing", "modscope.graph"),
    "modscope/capture": ("torch", "engine", "modscope.views", "modscope.cli", "modscope.tracing",
                         "modscope.graph"),  # the shared half
    "modscope/capture/engine": ("torch", "modscope.views", "modscope.cli", "modscope.tracing", "modscope.graph"),
    "modscope/capture/torch": ("engine", "modscope.views", "modscope.cli", "modscope.tracing", "modscope.graph"),
    "engine": ("modscope", "torch"),
}
# Capture makes events and reads nothing from views (live diagrams become event data there and are
# drawn by ``modscope.graph``, the live trace gets its reports in ``modscope.tracing``); only its
# backend folders import the frameworks.
BACKEND_FOLDERS = {"modscope/capture/engine": "engine", "modscope/capture/torch": "torch"}


def imported_names(path: Path, package: str) -> list[tuple[int, str]]:
    """``(line, absolute module name)`` of every import in the file, relative ones resolved
    against ``package`` (the file's own package)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            names.append((node.lineno, module))
            names += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
    return names


def _package_of(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts if path.name == "__init__.py" else parts[:-1]).removesuffix(".__init__")


def violations(folder: str) -> list[str]:
    """What the files of ``folder`` (not its sub-folders with rules of their own) import against
    ``RULES[folder]``."""
    banned = RULES[folder]
    own = [f for f in RULES if f != folder and f.startswith(folder + "/")]
    out = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if any(rel.startswith(f + "/") for f in own):
            continue
        for line, name in imported_names(path, _package_of(path)):
            if any(name == b or name.startswith(b + ".") for b in banned):
                out.append(f"{rel}:{line} imports {name}")
    return out


@pytest.mark.parametrize("folder", sorted(RULES))
def test_each_layer_imports_only_what_it_may(folder):
    assert violations(folder) == []


def test_each_backend_folder_imports_its_framework():
    for folder, framework in BACKEND_FOLDERS.items():
        names = {name for path in (ROOT / folder).rglob("*.py") for _, name in imported_names(path, _package_of(path))}
        assert any(n == framework or n.startswith(framework + ".") for n in names), folder


def _violations_of_a_probe(folder: str, source: str) -> list[str]:
    """What the check finds in ``modscope/<folder>`` with a module of ``source`` added there."""
    probe = PACKAGE / folder / "_layer_probe.py"
    probe.write_text(source)
    try:
        return violations(f"modscope/{folder}")
    finally:
        probe.unlink()


def test_the_check_sees_a_relative_import_inside_a_function(tmp_path, monkeypatch):
    found = _violations_of_a_probe("views", "def f():\n    from ..capture import recorder\n    import torch\n")
    assert found == ["modscope/views/_layer_probe.py:2 imports modscope.capture",
                     "modscope/views/_layer_probe.py:2 imports modscope.capture.recorder",
                     "modscope/views/_layer_probe.py:3 imports torch"]


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)


def test_importing_modscope_and_its_views_loads_no_framework():
    done = _run("""
        import sys
        import modscope, modscope.graph, modscope.views.tui.app, modscope.views.tui.export
        import modscope.views.tui.widgets.graph_view, modscope.cli
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("engine", "torch"))
        assert not loaded, loaded
    """)
    assert done.returncode == 0, done.stderr


def test_tracing_an_engine_model_does_not_import_torch():
    done = _run("""
        import sys
        import engine, modscope
        m = engine.nn.Linear(2, 2)
        with modscope.trace(m) as tr:
            m(engine.randn(1, 2)).sum().backward()
        assert tr.firing_order()[0] == ("forward_pre", ""), tr.firing_order()
        assert "torch" not in sys.modules
    """)
    assert done.returncode == 0, done.stderr


def test_the_check_sees_capture_reaching_into_views():
    found = _violations_of_a_probe("capture", "from ..views.trace import EventTrace\nimport modscope.views.diagrams\n")
    assert found == ["modscope/capture/_layer_probe.py:1 imports modscope.views.trace",
                     "modscope/capture/_layer_probe.py:1 imports modscope.views.trace.EventTrace",
                     "modscope/capture/_layer_probe.py:2 imports modscope.views.diagrams"]


def _dict_literals_with_envelope(path: Path) -> list[int]:
    """Lines of ``path`` with a dict display whose keys include both ``"v"`` and ``"kind"``: an
    event built by hand."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            keys = {k.value for k in node.keys if isinstance(k, ast.Constant)}
            if {"v", "kind"} <= keys:
                lines.append(node.lineno)
    return lines


def test_events_are_built_in_one_place():
    """``events.schema.make`` builds every event modscope makes (the envelope, the rank fields):
    no other module of the package writes an event's envelope as a dict by hand."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel == "modscope/events/schema.py":
            continue
        found += [f"{rel}:{line}" for line in _dict_literals_with_envelope(path)]
    assert found == []
    assert _dict_literals_with_envelope(PACKAGE / "events" / "schema.py")  # the check sees the one place
