"""A trace's memory is bounded (issue 21): the last ``keep_steps`` steps (64 by default) and at
most ``max_events`` events are kept, the oldest steps evicted whole and counted; ``spill=``
keeps every event in a file; ``save`` says what the file lacks; reading a big trace builds one
event at a time. Event counts, never timings (those are in ``bench/bench_trace_memory.py``).
Each test that takes ``lib`` runs on both capture backends."""

from __future__ import annotations

import gc
from collections import Counter

import pytest

import modscope
from modscope.capture.recorder import DEFAULT_KEEP_STEPS, DEFAULT_MAX_EVENTS, DEFAULT_MEMORY_WITH_SINK
from modscope.events import MODULE_EVENTS, dumps_bytes
from modscope.events.log import EventLog
from modscope.events.records import event_line, module_event, record_line
from tests.modscope.fakes import RecordingSink
from tests.modscope.models import sequential_model


def sgd(lib, model, steps: int) -> None:
    """``steps`` training steps that stay finite however many (zero_grad, a small rate)."""
    opt = lib.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(steps):
        opt.zero_grad()
        model(lib.randn(3, 4)).square().mean().backward()
        opt.step()


def train(lib, steps: int, **trace_kw):
    model = sequential_model(lib)
    with modscope.trace(model, **trace_kw) as tr:
        sgd(lib, model, steps)
    return tr


def module_steps(events) -> Counter:
    """Module events per step."""
    return Counter(e["step"] for e in events if e["kind"] in MODULE_EVENTS)


def body_count(events, steps) -> int:
    """Events of ``steps`` that a bounded log may evict (every kind but session, model, end)."""
    return sum(1 for e in events if e["step"] in steps and e["kind"] not in ("session", "model", "end"))


def test_by_default_the_last_64_steps_are_kept_and_what_went_is_counted(lib):
    steps = DEFAULT_KEEP_STEPS + 6
    everything = train(lib, steps, keep_steps=None, max_events=None)
    tr = train(lib, steps)
    kept = module_steps(tr.events)
    assert sorted(kept) == list(range(6, steps))
    assert all(kept[s] == module_steps(everything.events)[s] for s in kept)  # whole steps
    assert tr.dropped_steps == 6 and tr.dropped == body_count(everything.events, range(6))
    assert everything.dropped == everything.dropped_steps == 0
    kinds = [e["kind"] for e in tr.events]
    assert kinds[:2] == ["session", "model"] and kinds[-1] == "end"  # headers are never evicted
    assert tr.events[-1]["dropped"] == tr.dropped and tr.events[-1]["dropped_steps"] == 6


def test_keep_steps_keeps_that_many_whole_steps(lib):
    everything = train(lib, 10, keep_steps=None, max_events=None)
    tr = train(lib, 10, keep_steps=3)
    assert module_steps(tr.events) == {s: n for s, n in module_steps(everything.events).items() if s >= 7}
    assert tr.dropped_steps == 7 and tr.dropped == body_count(everything.events, range(7))
    # every event of the kept steps is there, in order, step and params events too
    assert [e["seq"] for e in tr.events if e["step"] >= 7 and e["kind"] != "end"] == \
           [e["seq"] for e in everything.events if e["step"] >= 7 and e["kind"] != "end"]


def test_max_events_evicts_the_oldest_steps_whole_first(lib):
    everything = train(lib, 6, keep_steps=None, max_events=None)
    per_step = body_count(everything.events, [3])
    tr = train(lib, 6, keep_steps=None, max_events=2 * per_step + 1)
    assert sorted(module_steps(tr.events)) == [4, 5] and tr.dropped_steps == 4
    assert tr.dropped == body_count(everything.events, range(4))


def test_one_step_larger_than_max_events_loses_its_oldest_events():
    """A single step over the cap: event by event (the old ``max_events``), no step counted."""
    log = EventLog(max_events=3)
    log.write_records([("forward", seq, 0, 0, "fc", 0, 1, 0) for seq in range(8)])
    assert [e["seq"] for e in log.events] == [5, 6, 7] and log.dropped == 5 and log.dropped_steps == 0
    log.write_records([("forward", seq, 0, 1, "fc", 0, 1, 0) for seq in range(8, 10)])
    assert [e["seq"] for e in log.events] == [8, 9] and log.dropped == 8 and log.dropped_steps == 1
    assert log.first_step == 1


def test_keep_steps_counts_the_step_in_progress():
    log = EventLog(keep_steps=2)
    for step in range(4):
        log.write({"kind": "metric", "seq": step, "step": step})
        assert log.first_step == max(0, step - 1)
    assert [e["step"] for e in log.events] == [2, 3] and log.dropped == log.dropped_steps == 2


def test_without_bounds_everything_is_kept(lib):
    tr = train(lib, DEFAULT_KEEP_STEPS + 2, keep_steps=None, max_events=None)
    assert sorted(module_steps(tr.events)) == list(range(DEFAULT_KEEP_STEPS + 2)) and tr.dropped == 0


def test_the_default_event_bounds():
    import engine

    model = sequential_model(engine)
    assert modscope.trace(model)._memory.max_events == DEFAULT_MAX_EVENTS
    assert modscope.trace(model, sink=RecordingSink())._memory.max_events == DEFAULT_MEMORY_WITH_SINK
    assert modscope.trace(model, max_events=None)._memory.max_events is None
    assert modscope.trace(model)._memory.keep_steps == DEFAULT_KEEP_STEPS


@pytest.mark.parametrize("bad", [{"keep_steps": 0}, {"keep_steps": -2}, {"keep_steps": 1.5},
                                 {"max_events": 0}, {"max_events": "lots"}])
def test_bad_bounds_are_refused_naming_the_option(bad):
    import engine

    name = next(iter(bad))
    with pytest.raises(ValueError, match=f"{name} must be a positive number or None"):
        modscope.trace(engine.nn.Linear(2, 2), **bad)


def test_iterating_builds_no_list_and_keeps_no_dicts(lib):
    tr = train(lib, 3)
    lazy = tr.iter_events()
    assert not isinstance(lazy, list)
    assert list(lazy) == tr._memory.events
    assert all(type(item) is tuple for item in tr._memory.body if not isinstance(item, dict))
    assert any(type(item) is tuple for item in tr._memory.body)  # the records were not replaced
    assert tr.firing_order() == [(e["kind"], e["path"]) for e in tr.events if e["kind"] in MODULE_EVENTS]


def test_firing_order_shares_equal_pairs(lib):
    tr = train(lib, 4)
    order = tr.firing_order()
    assert len({id(pair) for pair in order}) == len(set(order)) < len(order)


def test_save_of_a_bounded_trace_says_what_the_file_lacks(lib, tmp_path):
    tr = train(lib, 5, keep_steps=2)
    tr.save(tmp_path / "t.jsonl")
    loaded = modscope.load_trace(tmp_path / "t.jsonl")
    assert not loaded.truncated and sorted(module_steps(loaded.iter_events())) == [3, 4]
    assert loaded.dropped == tr.dropped > 0 and loaded.dropped_steps == tr.dropped_steps == 3
    end = list(loaded.iter_events())[-1]
    assert end["kind"] == "end" and end["first_step"] == 3
    assert "not in this trace: 3 older steps" in str(loaded.summary())
    assert "not in this trace" in str(tr.summary())


def test_a_trace_that_evicted_nothing_saves_its_end_event_as_it_is(lib, tmp_path):
    tr = train(lib, 2)
    tr.save(tmp_path / "t.jsonl")
    assert modscope.load_trace(tmp_path / "t.jsonl").events == tr.events
    assert "not in this trace" not in str(tr.summary())


def test_beside_a_sink_save_still_counts_what_memory_evicted(lib, tmp_path):
    """The live end event counts what the sink lost (nothing); the saved file lacks what memory
    evicted, and says so."""
    sink = RecordingSink()
    model = sequential_model(lib)
    with modscope.trace(model, sink=sink, keep_steps=1) as tr:
        sgd(lib, model, 3)
    assert sink.events[-1]["dropped"] == 0 and tr.dropped > 0
    tr.save(tmp_path / "t.jsonl")
    assert modscope.load_trace(tmp_path / "t.jsonl").dropped == tr.dropped


@pytest.mark.parametrize("name", ["spill.jsonl", "spill.jsonl.gz"])
def test_spill_keeps_every_event_in_a_file(lib, tmp_path, name):
    tr = train(lib, 5, keep_steps=2, spill=tmp_path / name)
    assert tr.spill_path == tmp_path / name and tr.dropped_steps == 3
    spilled = modscope.load_trace(tmp_path / name)
    events = list(spilled.iter_events())
    assert [e["seq"] for e in events] == list(range(len(events)))  # nothing missing
    assert sorted(module_steps(events)) == [0, 1, 2, 3, 4] and spilled.dropped == 0 and not spilled.truncated
    kept = {e["seq"] for e in tr.events}
    assert [e for e in events if e["seq"] in kept] == tr.events  # memory: the headers and the newest


def test_spill_beside_a_sink_feeds_both(lib, tmp_path):
    sink = RecordingSink()
    tr = train(lib, 2, sink=sink, spill=tmp_path / "s.jsonl")
    assert [e["seq"] for e in sink.events] == [e["seq"] for e in modscope.load_trace(tmp_path / "s.jsonl")]
    assert tr.dropped == 0


def test_spill_to_a_path_that_cannot_be_written_names_it(tmp_path):
    import engine

    with pytest.raises(OSError, match="cannot write trace file .*missing"):
        modscope.trace(engine.nn.Linear(2, 2), spill=tmp_path / "missing" / "t.jsonl")


@pytest.mark.parametrize("stats", [False, True])
def test_record_lines_are_the_bytes_of_their_event_dicts(lib, stats):
    """``save`` writes module records without building their dicts: the bytes must be those
    of the dict path, on either backend's dtypes, with and without statistics."""
    tr = train(lib, 2, stats=stats)
    records = [item for item in tr._memory.body if type(item) is tuple]
    assert records
    for record in records:
        assert record_line(record) == dumps_bytes(module_event(*record)) + b"\n"


@pytest.mark.parametrize("record", [
    ("forward_pre", 1, 2, 0, 'a "quoted" \\ path \u00e9\n', 0, None, 1, (2, 3), "float32", None),
    ("backward", 2**40, 2**62, 7, "", 3, 0, 1, (), "int64", None),
    ("backward_pre", 1, 2, 0, "x", 0, None, 2, (2,), "float16", 4, None, None, None),
    ("forward", 1, 2, 0, "x", 0, 5, 0),
    ("backward", 1, 2, 0, "x", 0, 5, 1, None, None, None),
])
def test_record_lines_of_unusual_records(record):
    assert record_line(record) == event_line(module_event(*record)) == dumps_bytes(module_event(*record)) + b"\n"


def test_records_stay_out_of_the_collectors_lists_in_a_bounded_trace(lib):
    """A bounded trace evicts by popping; what it keeps is still untracked (no full-collection
    cost: measured 0 tracked records of 120,012 on the 10,000-module model)."""
    tr = train(lib, 5, keep_steps=2)
    gc.collect()
    gc.collect()
    records = [r for r in tr._memory.body if type(r) is tuple]
    assert records and not [r for r in records if gc.is_tracked(r)]
