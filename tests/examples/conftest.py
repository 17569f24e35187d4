"""The examples import their helpers (``_train``, ``_mnist``, ``_backend``) by name, as they do when
run as scripts: put ``examples/`` on the path for every test in this folder."""

from __future__ import annotations

import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "modscope" / "examples"

if str(EXAMPLES) not in sys.path:
    sys.path.insert(0, str(EXAMPLES))
