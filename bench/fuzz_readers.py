"""The readers' fuzz tests (``tests/events/test_fuzz_readers.py``: the trace reader, the attach
handshake on both sides, a viewer's control lines, the checkpoint reader) with many more cases,
random ones (not the suite's fixed set), by hand:

    .venv/bin/python bench/fuzz_readers.py [--scale 20] [-k checkpoint]

``--scale N`` runs N times the suite's cases per test (the suite: 1,000 to 2,000 each). Prints
pytest's verdict and each test's time; a failure shows hypothesis's smallest failing input.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=20.0, help="times the suite's cases per test (default 20)")
    parser.add_argument("-k", default="", help="only the tests whose name matches (pytest -k)")
    args = parser.parse_args()
    env = {**os.environ, "MODSCOPE_FUZZ_SCALE": str(args.scale)}
    command = [sys.executable, "-m", "pytest", str(ROOT / "tests" / "events" / "test_fuzz_readers.py"), "-q",
               "-p", "no:cacheprovider", "--durations=0", "-o", "timeout=0",  # (no per-test time limit)
               *(["-k", args.k] if args.k else [])]
    print(f"load: {os.getloadavg()}; scale {args.scale:g}", flush=True)
    return subprocess.call(command, cwd=ROOT, env=env)


if __name__ == "__main__":
    raise SystemExit(main())
