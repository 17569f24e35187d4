"""scripts/dependency_floors.py: the pins ``make smoke-floors`` installs are pyproject's floors."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("dependency_floors", ROOT / "scripts" / "dependency_floors.py")
dependency_floors = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(dependency_floors)


def write(tmp_path: Path, dependencies: list[str], extras: dict[str, list[str]] | None = None) -> Path:
    lines = ["[project]", f"dependencies = {dependencies!r}".replace("'", '"')]
    if extras:
        lines.append("[project.optional-dependencies]")
        lines += [f"{name} = {reqs!r}".replace("'", '"') for name, reqs in extras.items()]
    path = tmp_path / "pyproject.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_every_runtime_dependency_of_the_project_has_a_floor():
    pins = dependency_floors.floors()
    assert [p.split("==")[0] for p in pins] == ["numpy", "textual", "rich", "graphviz", "orjson"]
    assert dependency_floors.floors(extras=("notebook",))[-1].startswith("pandas==")


def test_floors_of_a_range_and_of_extras(tmp_path):
    path = write(tmp_path, ["numpy>=2.1.0,<3", "rich >= 13.3.3"], {"web": ["textual-serve>=1.1"]})
    assert dependency_floors.floors(path, ("web",)) == ["numpy==2.1.0", "rich==13.3.3", "textual-serve==1.1"]


@pytest.mark.parametrize("requirement", ["numpy", "numpy==2.1", "numpy<3"])
def test_a_dependency_without_a_floor_is_named(tmp_path, requirement):
    with pytest.raises(ValueError, match=f"dependency '{requirement}' has no '>=' floor to test"):
        dependency_floors.floors(write(tmp_path, [requirement]))


def test_an_unknown_extra_is_named(tmp_path, capsys):
    with pytest.raises(ValueError, match="no extra 'gpu' \\(declared: web\\)"):
        dependency_floors.floors(write(tmp_path, ["numpy>=2.1"], {"web": ["x>=1"]}), ("gpu",))
    assert dependency_floors.main(["--extras", "gpu"]) == 2
    assert "dependency_floors: error:" in capsys.readouterr().err
