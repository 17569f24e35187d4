"""TUI test fixtures: a recorded session (events only: the TUI never sees the engine)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

TRACE = Path(__file__).parent / "data" / "small_trace.jsonl"


@pytest.fixture()
def events() -> list[dict]:
    return [json.loads(line) for line in TRACE.read_text().splitlines()]
