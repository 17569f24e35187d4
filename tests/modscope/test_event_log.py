"""EventLog: the trace's in-memory events, module events kept as recorded tuples until read."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import modscope
from modscope.events.log import EventLog
from modscope.events.records import module_event
from modscope.events.sinks import MemorySink
from tests.modscope.fakes import RecordingSink
from tests.modscope.models import comparable_events, nested_model, sgd_steps


def recorded(seq: int, kind: str = "forward") -> tuple:
    fields = ((3, 4), np.dtype(np.float32), 7)  # one value's summary, flat (see Trace._record)
    return (kind, seq, 1000 + seq, 0, "fc", 0, 5 if kind == "forward" else None, 1) + fields


def test_tuples_become_the_same_dicts_as_module_event():
    log = EventLog()
    log.write_records([recorded(0, "forward_pre"), {"kind": "step", "seq": 1}, recorded(2)])
    assert log.events == [module_event(*recorded(0, "forward_pre")), {"kind": "step", "seq": 1},
                          module_event(*recorded(2))]
    assert log.events[0]["inputs"] == [{"shape": [3, 4], "dtype": "float32", "tid": 7}]
    assert log.events[2]["dur_ns"] == 5 and "dur_ns" not in log.events[0]


def test_bounds_headers_and_drops_count_as_in_a_memory_sink():
    items = [{"kind": "session", "seq": 0}] + [recorded(i) for i in range(1, 9)] + [{"kind": "model", "seq": 9}]
    log, plain = EventLog(max_events=3), MemorySink(max_events=3)
    log.write_records(items)
    plain.write_many([it if isinstance(it, dict) else module_event(*it) for it in items])
    assert log.events == plain.events and log.dropped == plain.dropped == 5
    assert [e["seq"] for e in log.events] == [0, 6, 7, 8, 9]


def test_materialize_keeps_the_dicts_so_reads_return_the_same_objects():
    log = EventLog()
    log.write_records([recorded(0), recorded(1)])
    log.materialize()
    first = log.events
    assert all(type(item) is dict for item in log.body)
    assert first[0] is log.events[0]
    log.materialize()  # nothing left to do
    assert first[1] is log.events[1]


def test_reading_from_another_thread_leaves_the_tuples_in_place():
    log = EventLog()
    log.write_records([recorded(0)])
    seen = []
    reader = threading.Thread(target=lambda: seen.append(log.events))
    reader.start()
    reader.join()
    assert seen[0] == [module_event(*recorded(0))] and type(log.body[0]) is tuple


def test_a_bad_bound_is_refused_as_by_a_memory_sink():
    with pytest.raises(ValueError, match="max_events must be a positive number"):
        EventLog(max_events=0)


@pytest.mark.parametrize("stats", [False, True])
def test_an_in_memory_trace_reads_the_events_a_sink_receives(lib, stats):
    """Memory only (tuples until read) and with a sink (dicts at each step's end): same events."""
    def run(sink):
        model = nested_model(lib)
        with modscope.trace(model, stats=stats, sink=sink) as tr:
            sgd_steps(lib, model, 2, seed=3, grad_input=True)
        return tr

    lazy, sink = run(None), RecordingSink()
    eager = run(sink)
    assert any(type(item) is tuple for item in lazy._memory.body)  # not read yet: still tuples
    assert lazy.events[0]["kind"] == "session"
    assert not any(type(item) is tuple for item in lazy._memory.body)  # read once: dicts for good
    assert comparable_events(lazy.events) == comparable_events(eager.events) == comparable_events(sink.events)
    assert len(lazy.events) > 40


@pytest.mark.parametrize("bound", [None, 1, 4, 7])
def test_batches_without_headers_keep_and_drop_exactly_as_one_by_one(bound):
    """A step's batch (no header in it) is appended at once: what is kept and the count of what
    was evicted are those of writing each event by itself."""
    batches = [[recorded(i) for i in range(0, 3)], [recorded(3), {"kind": "step", "seq": 4}],
               [recorded(i) for i in range(5, 11)], [], [recorded(11)]]
    log, batched, single = EventLog(max_events=bound), MemorySink(max_events=bound), MemorySink(max_events=bound)
    for batch in batches:
        log.write_records(batch)
        dicts = [it if isinstance(it, dict) else module_event(*it) for it in batch]
        batched.write_many(dicts)
        for event in dicts:
            single.write(event)
    assert log.events == batched.events == single.events
    assert log.dropped == batched.dropped == single.dropped == (0 if bound is None else 12 - bound)
