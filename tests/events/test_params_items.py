"""The ``params`` event's items: ``update_sampled`` and ``stats_sampled`` (added within schema
version 1) are checked when present, by ``validate`` and by the fast reader alike, and a trace without it still loads."""

from __future__ import annotations

import orjson
import pytest

from modscope.events.files import read_events, valid_event
from modscope.events.schema import EventError, dumps_bytes, make, validate

ITEM = {"path": "fc.weight", "norm": 2.0, "grad_norm": 0.5, "update_ratio": 1e-3, "mean": 0.0, "std": 0.1,
        "nan": 0, "inf": 0}


def params_event(**extra) -> dict:
    return make("params", 3, 0, 1, items=[{**ITEM, **extra}])


def test_an_item_with_or_without_update_sampled_is_valid():
    for event in (params_event(), params_event(update_sampled=65_536),
                  params_event(update_sampled=65_536, stats_sampled=65_536)):
        event = orjson.loads(dumps_bytes(event))
        assert validate(event) is event and valid_event(event)


@pytest.mark.parametrize("field", ["update_sampled", "stats_sampled"])
@pytest.mark.parametrize("bad", ["65536", 1.5, True, None])
def test_a_sampled_count_that_is_not_an_int_is_refused_naming_the_field(bad, field):
    event = orjson.loads(dumps_bytes(params_event(**{field: bad})))
    assert not valid_event(event)
    with pytest.raises(EventError, match=rf"params event items\[0\]: field '{field}' must be int"):
        validate(event)


def test_an_old_trace_without_the_field_loads(tmp_path):
    path = tmp_path / "old.jsonl"
    lines = [make("session", 0, 0, 0, schema=1, engine_version="0", modscope_version="0", pid=1, started="x",
                  argv=[]), params_event(), make("end", 2, 0, 1, status="ok", dropped=0)]
    path.write_bytes(b"\n".join(dumps_bytes(e) for e in lines) + b"\n")
    events, truncated = read_events(path)
    assert not truncated and [e["kind"] for e in events] == ["session", "params", "end"]
    assert "update_sampled" not in events[1]["items"][0]
