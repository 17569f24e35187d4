"""Small models whose traced ``graph`` and ``model`` events the graph view tests draw, written
once for either framework (``define(lib)``); the engine's are this module's names.

- ``Mlp``: a Linear/ReLU stack (one cluster per Linear);
- ``Residual``: a block with a skip connection and an activation module called twice;
- ``deep(stages)``: nested Sequentials of Linear/ReLU/Linear/Tanh blocks, 63 graph nodes per
  stage: large enough that the drawing needs panning (4 stages: 250 nodes).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import engine
import modscope


def define(lib) -> SimpleNamespace:
    """The models, built with ``lib`` (the engine or torch)."""
    nn, F = lib.nn, lib.nn.functional

    class Mlp(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc1 = nn.Linear(4, 8)
            self.act = nn.ReLU()
            self.fc2 = nn.Linear(8, 3)

        def forward(self, x):
            return self.fc2(self.act(self.fc1(x)))

    class Act(nn.Module):
        def forward(self, x):
            return F.relu(x)

    class Block(nn.Module):
        def __init__(self, d: int = 8) -> None:
            super().__init__()
            self.fc1 = nn.Linear(d, d)
            self.fc2 = nn.Linear(d, d)
            self.act = Act()  # called twice

        def forward(self, x):
            return self.act(self.fc2(self.act(self.fc1(x))) + x)

    class Residual(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inp = nn.Linear(4, 8)
            self.block = Block(8)
            self.head = nn.Linear(8, 2)

        def forward(self, x):
            return self.head(self.block(self.inp(x)))

    def deep(stages: int = 6) -> nn.Module:
        def block() -> nn.Module:
            return nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 16), nn.Tanh())

        return nn.Sequential(*[nn.Sequential(*[block() for _ in range(3)]) for _ in range(stages)], nn.Linear(16, 4))

    return SimpleNamespace(nn=nn, Mlp=Mlp, Act=Act, Block=Block, Residual=Residual, deep=deep)


_engine = define(engine)
Mlp, Act, Block, Residual, deep = _engine.Mlp, _engine.Act, _engine.Block, _engine.Residual, _engine.deep


def traced(lib, model: Any, *input_shape: int) -> tuple[dict, dict]:
    """(graph event, model event) of one traced forward with gradients of ``model``, a ``lib`` model."""
    lib.manual_seed(0)
    with modscope.trace(model) as tr:
        model(lib.randn(*input_shape))
    graph = next(e for e in tr.events if e["kind"] == "graph")
    model_event = next(e for e in tr.events if e["kind"] == "model")
    return graph, model_event
