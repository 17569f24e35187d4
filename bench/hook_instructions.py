"""What module backward hooks cost the engine, in CPU instructions (deterministic, unlike time
on this shared machine): a warm forward+backward of ``Sequential(Linear(4, 4), ReLU(),
Linear(4, 4))``, with and without a no-op backward pre-hook and backward hook on every module,
counted by valgrind's callgrind. Each count is the difference of two runs (250 and 50
iterations) over 200, so start-up and imports drop out.

Run: ``.venv/bin/python bench/hook_instructions.py [--root CHECKOUT]`` (needs ``valgrind``:
``apt-get install valgrind``; ``--root`` counts another checkout's engine, e.g. an older commit's
``git worktree``). The README quotes it where it says where the tracing overhead goes.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def workload(root: str, hooks: bool, iterations: int) -> None:
    sys.path.insert(0, root)
    import engine
    import engine.nn as nn
    from engine.utils.hooks import transparent_hook

    engine.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 4))
    if hooks:
        for module in model.modules():
            module.register_full_backward_pre_hook(transparent_hook(lambda *a: None), prepend=True)
            module.register_full_backward_hook(transparent_hook(lambda *a: None))
    x = engine.randn(2, 4, requires_grad=True) * 1  # a non-leaf input, as inside a network
    for _ in range(iterations):
        model(x).sum().backward()


def instructions(root: str, hooks: bool, iterations: int) -> int:
    # One BLAS thread: idle BLAS threads spinning would be counted too.
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    out = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
                          __file__, "--run", root, "hooks" if hooks else "plain", str(iterations)],
                         capture_output=True, text=True, check=True, env=env)
    return int(re.search(r"Collected : (\d+)", out.stderr).group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=str(ROOT), help="the checkout whose engine is counted")
    root = str(Path(parser.parse_args().root).resolve())
    if not (Path(root) / "engine" / "__init__.py").is_file():
        sys.exit(f"hook_instructions.py: no engine package in {root}")
    if shutil.which("valgrind") is None:
        sys.exit("hook_instructions.py needs valgrind (apt-get install valgrind)")
    per_iteration = {}
    for hooks in (False, True):
        per_iteration[hooks] = (instructions(root, hooks, 250) - instructions(root, hooks, 50)) / 200
    plain, hooked = per_iteration[False], per_iteration[True]
    print(f"forward+backward, Sequential of 3 (4 modules): {plain / 1e6:.3f}M instructions without hooks, "
          f"{hooked / 1e6:.3f}M with backward hooks on every module (+{(hooked - plain) / 4e3:.1f}k per module call)")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--run"]:
        workload(sys.argv[2], sys.argv[3] == "hooks", int(sys.argv[4]))
    else:
        main()
