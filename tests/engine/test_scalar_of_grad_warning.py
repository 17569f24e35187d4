"""``float(t)`` (and ``complex(t)``, which Python routes through it) of a tensor that requires grad:
torch's UserWarning, given once per process (TORCH_WARN_ONCE); ``int``, ``bool``, ``item`` and a
tensor that needs no grad stay silent. Each case runs in a fresh interpreter, as "once per
process" needs."""

from __future__ import annotations

import subprocess
import sys

import pytest

CASES = {
    "float": "float(x.sum())", "complex": "complex(x.sum())", "leaf": "float(x[0])", "int": "int(x.sum())",
    "bool": "bool(x.sum())", "item": "x.sum().item()", "format": "f'{x.sum():.2f}'", "no_grad_tensor": "float(y)",
    "under_no_grad": "[float(x.sum()) for _ in [lib.no_grad().__enter__()]]",
}
SCRIPT = """
import warnings, {lib} as lib
x, y = lib.ones(3, requires_grad=True), lib.ones(1)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    {call}; {call}
print(len(caught))
for w in caught:
    print(w.category.__name__, w.filename == "<string>", str(w.message).split(" (Triggered")[0].replace("\\n", "|"))
"""


def _run(lib: str, call: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", SCRIPT.format(lib=lib, call=call)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


@pytest.mark.parametrize("case", sorted(CASES))
def test_warns_as_torch(case):
    pytest.importorskip("torch")
    ours, theirs = _run("engine", CASES[case]), _run("torch", CASES[case])
    assert ours == theirs
    warned = case in ("float", "complex", "leaf")
    assert ours[0] == ("1" if warned else "0")
    if warned:
        assert ours[1] == ("UserWarning True Converting a tensor with requires_grad=True to a scalar may lead to "
                           "unexpected behavior.|Consider using tensor.detach() first.")
