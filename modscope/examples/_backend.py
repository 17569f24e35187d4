"""Running an example under either library: the engine, or real PyTorch with the example's
``engine`` imports swapped for ``torch``.

Every example imports the engine the way a torch user would import torch (``import engine as
torch``, ``import engine.nn as nn``, ...). ``load(path, "torch")`` reads the example's source,
rewrites exactly those import statements to name ``torch`` instead, and executes the result as a
fresh module, so the very same file runs under torch -- which is how the examples show that they
are plain torch code. Nothing else in the source is touched.
"""

from __future__ import annotations

import re
import sys
import types
from collections.abc import Callable, Sequence
from pathlib import Path

BACKENDS = ("engine", "torch")

# `import engine`, `import engine.nn as nn`, `from engine import nn`, `from engine.nn import functional`:
# only statements at the start of a line, so strings and comments that mention the engine stay as written.
_ENGINE_IMPORT = re.compile(r"^(\s*)(import|from)(\s+)engine(?=[\s.])", re.MULTILINE)


def swap_imports(source: str, backend: str) -> str:
    """``source`` with its engine import statements naming ``backend`` instead. The result is
    ``source`` itself for ``"engine"``; raises ``ValueError`` for an unknown backend."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}: expected one of {', '.join(BACKENDS)}")
    if backend == "engine":
        return source
    return _ENGINE_IMPORT.sub(rf"\1\2\3{backend}", source)


def load(path: str | Path, backend: str) -> types.ModuleType:
    """Execute the example at ``path`` as a new module whose engine imports name ``backend``.

    The module is registered in ``sys.modules`` as ``<stem>__<backend>`` (so pickling and
    dataclasses find its classes) and replaces any earlier module of that name. Its ``__name__``
    is not ``"__main__"``, so the file's ``main()`` does not run on import."""
    path = Path(path).resolve()
    source = swap_imports(path.read_text(encoding="utf-8"), backend)
    name = f"{path.stem}__{backend}"
    module = types.ModuleType(name)
    module.__file__ = str(path)
    sys.modules[name] = module
    folder = str(path.parent)
    if folder not in sys.path:  # the examples import their helpers (_train, _mnist) by name
        sys.path.insert(0, folder)
    try:
        exec(compile(source, str(path), "exec"), module.__dict__)  # noqa: S102 - the example's own code
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def with_backend(argv: Sequence[str] | None, backend: str) -> list[str]:
    """``argv`` (default: the command line) with ``--backend backend`` appended; argparse keeps the
    last occurrence, so this overrides any earlier ``--backend``."""
    args = list(sys.argv[1:] if argv is None else argv)
    return [*args, "--backend", backend]


def run(path: str | Path, backend: str, argv: Sequence[str] | None,
        describe: Callable[[float], str] = "{:.4f}".format) -> float:
    """Run the example at ``path`` under ``backend`` (``"engine"``, ``"torch"``, or ``"both"``)
    and return its final metric. ``"both"`` runs the engine first, then torch, prints the two
    metrics side by side (formatted by ``describe``) and returns the engine's."""
    if backend != "both":
        return load(path, backend).main(with_backend(argv, backend))
    metrics = {name: run(path, name, argv) for name in BACKENDS}
    print(compare_table(metrics, describe), flush=True)
    return metrics["engine"]


def compare_table(metrics: dict[str, float], describe: Callable[[float], str]) -> str:
    """The final metric of each backend and their difference, one line each."""
    lines = ["final metric by backend:"]
    lines += [f"  {name:7s} {describe(value)}" for name, value in metrics.items()]
    lines.append(f"  difference (engine - torch) {describe(metrics['engine'] - metrics['torch'])}")
    return "\n".join(lines)
