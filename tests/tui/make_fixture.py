"""Regenerates ``data/small_trace.jsonl``: a deterministic recorded session for the TUI tests and
snapshots (timings are recorded, so the file, not a live run, keeps snapshots stable).

    .venv/bin/python -m tests.tui.make_fixture
"""

from __future__ import annotations

import warnings
from pathlib import Path

import engine
import modscope
from tests.modscope.models import nested_model

OUT = Path(__file__).parent / "data" / "small_trace.jsonl"


def main() -> None:
    warnings.filterwarnings("ignore")
    model = nested_model(engine)
    model.head.register_forward_hook(lambda m, a, o: None)
    opt = engine.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    engine.manual_seed(3)
    with modscope.trace(model, stats=True) as tr:
        for _ in range(6):
            opt.zero_grad()
            loss = model(engine.randn(8, 4)).pow(2).mean()
            loss.backward()
            tr.log(loss=loss.item())
            opt.step()
    for i, e in enumerate(tr.events):  # fixed clocks: snapshots must not depend on the machine
        e["t"] = 1_000_000 * i
        if "dur_ns" in e:
            e["dur_ns"] = 1000 * (1 + len(e.get("path", "")))
        if e["kind"] == "session":
            e.update(pid=1, started="2026-11-21T00:00:00+00:00", argv=["train.py"])
    tr.save(OUT)


if __name__ == "__main__":
    main()
