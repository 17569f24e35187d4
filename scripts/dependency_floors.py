"""Print the lowest version of each dependency that ``pyproject.toml`` allows, as pip requirements
(``numpy==2.1.0`` for ``numpy>=2.1.0``): ``make smoke-floors`` installs exactly these beside the
wheel, so the declared floors are the versions that are tested.

    python scripts/dependency_floors.py [--extras notebook,web]
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"
FLOOR = re.compile(r"^\s*([A-Za-z0-9_.\-]+)\s*>=\s*([0-9][0-9A-Za-z.]*)\s*(,.*)?$")


def floors(pyproject: Path = PYPROJECT, extras: tuple[str, ...] = ()) -> list[str]:
    """``name==floor`` for every runtime dependency and those of ``extras``; ``ValueError`` naming
    a dependency that has no ``>=`` floor, or an extra the project does not declare."""
    project = tomllib.loads(pyproject.read_text())["project"]
    requirements = list(project["dependencies"])
    declared = project.get("optional-dependencies", {})
    for extra in extras:
        if extra not in declared:
            raise ValueError(f"{pyproject}: no extra {extra!r} (declared: {', '.join(declared)})")
        requirements += declared[extra]
    pins = []
    for requirement in requirements:
        match = FLOOR.match(requirement)
        if match is None:
            raise ValueError(f"{pyproject}: dependency {requirement!r} has no '>=' floor to test")
        pins.append(f"{match[1]}=={match[2]}")
    return pins


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--extras", default="", help="comma-separated extras whose floors to add")
    args = parser.parse_args(argv)
    try:
        print(" ".join(floors(extras=tuple(e for e in args.extras.split(",") if e))))
    except ValueError as e:
        print(f"dependency_floors: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
