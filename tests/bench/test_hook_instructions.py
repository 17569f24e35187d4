"""bench/hook_instructions.py refuses what it cannot count, with one clear line."""

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "hook_instructions.py"


def run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=60)


def test_a_root_without_the_engine_is_named(tmp_path):
    out = run("--root", str(tmp_path))
    assert out.returncode != 0
    assert out.stderr.strip() == f"hook_instructions.py: no engine package in {tmp_path.resolve()}"


def test_missing_valgrind_says_how_to_install_it(tmp_path):
    env = {**os.environ, "PATH": str(tmp_path)}  # no valgrind on this PATH
    out = run(env=env)
    assert out.returncode != 0
    assert "needs valgrind (apt-get install valgrind)" in out.stderr
