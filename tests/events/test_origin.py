"""Every event a rank makes carries its rank (``schema.set_origin``, ``capture.ranks``), built in
one place (``schema.make``): the dicts, the fast line writer and the fast line reader agree."""

from __future__ import annotations

import random

import orjson
import pytest

import engine
import modscope
from modscope.capture.ranks import RankEnvironmentError, rank_from_env, stamp_rank
from modscope.events import schema
from modscope.events.files import MODULE_LINE, MODULE_LINE_KINDS, valid_event
from modscope.events.records import module_event, record_line
from modscope.events.schema import EventError, dumps_bytes, make, rank_of, set_origin, validate

from .test_files_fast import RECORDS, _mutations

ORIGIN = {"rank": 1, "local_rank": 1, "world_size": 2, "restart": 3}


@pytest.fixture
def ranked():
    set_origin(ORIGIN)
    yield
    set_origin(None)


def test_a_single_process_events_carry_no_rank_fields():
    event = make("metric", 0, 1, 2, values={})
    assert list(event) == ["v", "kind", "seq", "t", "step", "values"]
    assert rank_of(event) == 0


def test_a_ranks_events_carry_its_rank_right_after_the_envelope(ranked):
    event = make("metric", 0, 1, 2, values={"loss": 1.0})
    assert list(event) == ["v", "kind", "seq", "t", "step", "rank", "local_rank", "world_size", "restart", "values"]
    assert rank_of(event) == 1 and event["restart"] == 3
    assert validate(event) is event and valid_event(event)


@pytest.mark.parametrize("record", RECORDS)
def test_the_fast_line_writer_writes_the_rank_as_the_dict_does(ranked, record):
    event = module_event(*record)
    assert event["rank"] == 1
    line = record_line(record)
    assert line == dumps_bytes(event) + b"\n"
    match = MODULE_LINE.fullmatch(line.rstrip(b"\n"))
    assert match is not None and MODULE_LINE_KINDS[match.lastindex] == record[0]


def test_the_fast_line_reader_never_takes_a_mutated_ranked_line_validate_refuses(ranked):
    rng = random.Random(27)
    taken = 0
    for record in RECORDS:
        for mutated in _mutations(record_line(record).rstrip(b"\n"), rng, 1500):
            match = MODULE_LINE.fullmatch(mutated)
            if match is None:
                continue
            taken += 1
            event = validate(orjson.loads(mutated))
            assert event["kind"] == MODULE_LINE_KINDS[match.lastindex]
    assert taken > 500


@pytest.mark.parametrize("field", schema.ORIGIN_FIELDS)
def test_a_rank_field_that_is_not_an_int_is_refused_by_name(field):
    event = {**make("metric", 0, 1, 2, values={}), **ORIGIN, field: "1"}
    assert not valid_event(event)
    with pytest.raises(EventError, match=f"field '{field}' must be int, got str"):
        validate(event)


def test_set_origin_refuses_what_is_not_a_rank():
    with pytest.raises(ValueError, match="rank field 'world_size' must be an integer >= 0, got None"):
        set_origin({"rank": 0, "local_rank": 0, "restart": 0})
    with pytest.raises(ValueError, match="rank field 'rank' must be an integer >= 0, got -1"):
        set_origin({**ORIGIN, "rank": -1})
    assert schema.origin() == {}


def test_rank_from_torch_launcher_variables():
    assert rank_from_env({}) is None
    assert rank_from_env({"LOCAL_RANK": "0"}) is None  # without RANK: a single process
    env = {"RANK": "3", "LOCAL_RANK": "1", "WORLD_SIZE": "4", "TORCHELASTIC_RESTART_COUNT": "2"}
    assert rank_from_env(env) == {"rank": 3, "local_rank": 1, "world_size": 4, "restart": 2}
    assert rank_from_env({"RANK": "2"}) == {"rank": 2, "local_rank": 2, "world_size": 3, "restart": 0}


@pytest.mark.parametrize(("env", "message"), [
    ({"RANK": "one"}, r"\$RANK must be an integer >= 0, got 'one'"),
    ({"RANK": "0", "WORLD_SIZE": "-2"}, r"\$WORLD_SIZE must be an integer >= 0, got '-2'"),
    ({"RANK": "2", "WORLD_SIZE": "2"}, r"\$RANK \(2\) must be below \$WORLD_SIZE \(2\)"),
])
def test_bad_launcher_variables_are_named(env, message):
    with pytest.raises(RankEnvironmentError, match=message):
        rank_from_env(env)


def test_a_trace_in_a_rank_stamps_every_event_and_its_file_loads(tmp_path, monkeypatch):
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("LOCAL_RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.delenv("TORCHELASTIC_RESTART_COUNT", raising=False)
    try:
        model = engine.nn.Sequential(engine.nn.Linear(3, 4), engine.nn.ReLU(), engine.nn.Linear(4, 1))
        opt = engine.optim.SGD(model.parameters(), lr=0.1)
        with modscope.trace(model, spill=tmp_path / "r.jsonl") as tr:
            for _ in range(2):
                model(engine.randn(2, 3)).sum().backward()
                opt.step()
                opt.zero_grad()
        events = tr.events
        assert {(e["rank"], e["local_rank"], e["world_size"], e["restart"]) for e in events} == {(1, 0, 2, 0)}
        loaded = modscope.load_trace(tmp_path / "r.jsonl")
        assert [e["seq"] for e in loaded.iter_events()] == [e["seq"] for e in events]
        assert {e["rank"] for e in loaded.iter_events()} == {1}
    finally:
        stamp_rank({})
    assert make("metric", 0, 0, 0, values={}).get("rank") is None
