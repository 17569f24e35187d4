"""The sdist and the wheel hold what the installed package needs: every file git tracks under
``modscope/`` and ``engine/`` (code and the files opened at run time: the TUI's stylesheet, the
demos, the bundled digits), one version, the declared extras; and nothing else at the top level.
``make smoke`` then runs the installed wheel for real (tests/packaging/smoke)."""

from __future__ import annotations

import email.parser
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import modscope

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("modscope", "engine")


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> dict[str, Path]:
    """An sdist and a wheel built from the clone as `python -m build` builds them (the wheel from
    the unpacked sdist, so the sdist must be complete too)."""
    # From a copy of the files git would clone (and the new ones it does not ignore): an earlier
    # build's egg-info in the clone lists files for the sdist and would hide a missing declaration.
    source, out = tmp_path_factory.mktemp("source"), tmp_path_factory.mktemp("dist")
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout.splitlines()
    for name in listed:
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    done = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(source)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (wheel,) = out.glob("*.whl")
    (sdist,) = out.glob("*.tar.gz")
    return {"wheel": wheel, "sdist": sdist}


def tracked_package_files() -> set[str]:
    listed = subprocess.run(["git", "ls-files", *PACKAGES], cwd=ROOT, capture_output=True, text=True, check=True)
    return {line for line in listed.stdout.splitlines() if (ROOT / line).is_file()}


def test_the_wheel_holds_every_file_of_the_packages(dist):
    names = set(zipfile.ZipFile(dist["wheel"]).namelist())
    missing = sorted(tracked_package_files() - names)
    assert not missing, f"files of the packages missing from the wheel: {missing}"
    for needed in ("modscope/views/tui/app.tcss", "modscope/examples/mnist_net.py",
                   "modscope/examples/data/mnist_5k.npz"):
        assert needed in names


def test_the_wheel_installs_only_modscope_and_engine(dist):
    names = zipfile.ZipFile(dist["wheel"]).namelist()
    top = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert top == set(PACKAGES)
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]


def test_the_sdist_holds_the_packages_and_the_readme(dist):
    with tarfile.open(dist["sdist"]) as sdist:
        names = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    assert not sorted(tracked_package_files() - names)
    assert {"README.md", "pyproject.toml"} <= names


def test_one_version_and_the_extras_in_the_metadata(dist):
    with zipfile.ZipFile(dist["wheel"]) as wheel:
        (meta_name,) = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
        meta = email.parser.Parser().parsestr(wheel.read(meta_name).decode())
    assert meta["Version"] == modscope.__version__
    assert dist["wheel"].name.startswith(f"modscope-{modscope.__version__}-")
    assert {"torch", "notebook", "web"} <= set(meta.get_all("Provides-Extra"))
    assert sorted(meta["Requires-Python"].split(",")) == ["<3.14", ">=3.11"]


def test_twine_accepts_both(dist):
    done = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", str(dist["wheel"]), str(dist["sdist"])],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
