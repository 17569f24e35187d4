"""What capture reads inside a module's inputs and outputs, on either backend."""

from __future__ import annotations

import dataclasses

import pytest

import engine
import modscope
from modscope.capture.values import container_values, tensors_in


@dataclasses.dataclass
class Out:
    logits: object
    extra: object = None


def test_containers_are_read_in_order_and_other_values_are_not():
    a, b, c = engine.randn(1), engine.randn(2), engine.randn(3)
    assert container_values((a, [b])) == [a, [b]]
    assert container_values({"x": c}) == [c]
    assert container_values(Out(a, b)) == [a, b]
    assert container_values(Out) is None and container_values(3) is None and container_values(a) is None
    assert list(tensors_in({"k": (a, Out(b, [c]))})) == [a, b, c]


@pytest.mark.parametrize("name", ["engine", "torch"])
def test_a_dataclass_output_is_summarised_field_by_field(name):
    lib = pytest.importorskip(name)

    class Model(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = lib.nn.Linear(3, 2)

        def forward(self, x):
            return Out(self.fc(x), 7)

    model = Model()
    with modscope.trace(model) as tr:
        model(lib.randn(4, 3)).logits.sum().backward()
    out = next(e for e in tr.events if e["kind"] == "forward" and e["path"] == "")
    assert [s and s["shape"] for s in out["outputs"]] == [[4, 2], None]
