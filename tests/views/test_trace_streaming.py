"""Saving and loading stream (issue 21): ``save`` writes a batch at a time and the bytes it
always wrote; ``load_trace`` validates every event in one pass that keeps none, and a loaded
trace reads its file again, one event at a time, whenever it is iterated. Truncated and bad
files behave as before. Behaviour only: the timings are in ``bench/bench_trace_memory.py``.
Tests that trace a model run on both capture backends (``lib``)."""

from __future__ import annotations

import copy
import gzip
import os

import pytest

import modscope
from modscope.events import dumps_bytes, validate
from modscope.events import files as trace_files
from modscope.events.files import TraceFileError, save_events, valid_event
from modscope.events.schema import EventError
from modscope.views.report import summary_totals
from modscope.views.summary import SummaryReport
from modscope.views.trace import Printable, RecordedTrace
from tests.modscope.models import nested_model


def traced(lib, steps: int = 3, **trace_kw):
    model = nested_model(lib)
    opt = lib.optim.SGD(model.parameters(), lr=0.01)
    with modscope.trace(model, **trace_kw) as tr:
        for _ in range(steps):
            opt.zero_grad()
            model(lib.randn(3, 4)).square().mean().backward()
            opt.step()
    return tr


def joined(events) -> bytes:
    """What ``save`` wrote before it streamed: every event encoded, joined, at once."""
    return b"".join(dumps_bytes(e) + b"\n" for e in events)


@pytest.mark.parametrize("stats", [False, True])
def test_streaming_save_writes_the_bytes_of_the_whole_file_at_once(lib, tmp_path, stats):
    tr = traced(lib, stats=stats)
    tr.save(tmp_path / "t.jsonl")
    assert (tmp_path / "t.jsonl").read_bytes() == joined(tr.events)


def test_a_loaded_trace_saves_its_file_again_byte_for_byte(lib, tmp_path):
    traced(lib).save(tmp_path / "a.jsonl")
    modscope.load_trace(tmp_path / "a.jsonl").save(tmp_path / "b.jsonl")
    assert (tmp_path / "b.jsonl").read_bytes() == (tmp_path / "a.jsonl").read_bytes()


def test_gzip_save_holds_the_same_lines(lib, tmp_path):
    tr = traced(lib)
    tr.save(tmp_path / "t.jsonl.gz")
    assert gzip.decompress((tmp_path / "t.jsonl.gz").read_bytes()) == joined(tr.events)


def test_save_writes_a_batch_at_a_time(tmp_path, monkeypatch):
    """A generator is read batch by batch: when it fails, the batches before are in the file."""
    monkeypatch.setattr(trace_files, "SAVE_BATCH", 2)
    events = [{"v": 1, "kind": "metric", "seq": i, "t": i, "step": 0, "values": {"x": i}} for i in range(5)]

    def failing():
        yield from events
        raise TypeError("an event field holds a set, which JSON cannot carry")

    with pytest.raises(TypeError, match="JSON cannot carry"):
        save_events(failing(), tmp_path / "t.jsonl")
    assert (tmp_path / "t.jsonl").read_bytes() == joined(events[:4])  # two whole batches
    save_events(iter(events), tmp_path / "t.jsonl")
    assert (tmp_path / "t.jsonl").read_bytes() == joined(events)


def test_save_into_a_missing_folder_names_the_file(lib, tmp_path):
    with pytest.raises(OSError, match="cannot write trace file .*nowhere"):
        traced(lib, 1).save(tmp_path / "nowhere" / "t.jsonl")


@pytest.mark.parametrize("name", ["t.jsonl", "t.jsonl.gz"])
def test_a_loaded_trace_keeps_no_events_and_iterates_in_order(lib, tmp_path, name):
    tr = traced(lib)
    tr.save(tmp_path / name)
    loaded = modscope.load_trace(tmp_path / name)
    assert loaded._events is None and len(loaded) == len(tr.events)
    assert [e["seq"] for e in loaded.iter_events()] == list(range(len(tr.events)))
    assert list(loaded) == tr.events and loaded._events is None  # iterating kept nothing
    assert loaded.firing_order() == tr.firing_order()
    assert loaded.firing_order(["backward"]) == tr.firing_order(["backward"])
    assert loaded.events == tr.events and loaded._events is not None  # ``events``: read once, kept


def test_reports_of_a_loaded_trace_match_the_reports_of_every_event(lib, tmp_path):
    """The reports read the model, graph and last step's events in one pass: the same figures
    as the report functions given every event."""
    tr = traced(lib, steps=4)
    tr.save(tmp_path / "t.jsonl")
    loaded = modscope.load_trace(tmp_path / "t.jsonl")
    events = tr.events
    assert str(loaded.summary()) == str(Printable(SummaryReport(events), piped_width=80)) == str(tr.summary())
    assert loaded.totals() == summary_totals(events) == tr.totals()
    assert str(loaded.tree()) == str(tr.tree())
    kept = loaded._report_events()
    assert {e["step"] for e in kept if e["kind"] == "forward"} == {3}
    assert [e for e in kept if e["kind"] in ("model", "graph")] == [e for e in events if e["kind"] in ("model", "graph")]


def test_a_recorded_trace_over_a_list_still_works(lib):
    events = traced(lib, 1).events
    rt = RecordedTrace(events, "mem", truncated=False)
    assert len(rt) == len(events) and list(rt) == events and rt.firing_order()[0] == ("forward_pre", "")
    assert rt.dropped == 0 and rt.dropped_steps == 0


def write_lines(path, lines) -> None:
    path.write_bytes(b"".join(lines))


def lines_of(lib, tmp_path) -> list[bytes]:
    traced(lib, 1).save(tmp_path / "good.jsonl")
    return (tmp_path / "good.jsonl").read_bytes().splitlines(keepends=True)


def test_a_file_cut_mid_line_loads_what_came_before(lib, tmp_path):
    lines = lines_of(lib, tmp_path)
    path = tmp_path / "cut.jsonl"
    write_lines(path, lines[:-3] + [lines[-3][:20]])
    loaded = modscope.load_trace(path)
    assert loaded.truncated and len(loaded) == len(lines) - 3
    assert [e["seq"] for e in loaded] == list(range(len(lines) - 3))


def test_a_file_without_end_is_truncated(lib, tmp_path):
    lines = lines_of(lib, tmp_path)
    path = tmp_path / "noend.jsonl"
    write_lines(path, lines[:-1] + [b"\n"])  # a blank line is allowed
    loaded = modscope.load_trace(path)
    assert loaded.truncated and loaded.dropped == 0 and len(list(loaded)) == len(lines) - 1


@pytest.mark.parametrize(("bad", "message"), [
    (b"{not json\n", r":5: not valid JSON"),
    (b'{"v": 1, "kind": "nope", "seq": 4, "t": 0, "step": 0}\n', r":5: unknown event kind 'nope'"),
    (b'{"v": 1, "kind": "forward", "seq": 4, "t": 0, "step": true, "path": "", "call": 0, '
     b'"outputs": [], "dur_ns": 1}\n', r":5: event: field 'step' must be int, got bool"),
    (b'{"v": 1, "kind": "forward", "seq": 4, "t": 0, "step": 0, "path": "", "call": 0, '
     b'"outputs": [{"shape": [2]}], "dur_ns": 1}\n', r":5: forward event outputs\[0\]: missing field 'dtype'"),
    (b'{"x": "\xff"}\n', r":5: not valid JSON \(not UTF-8 text\)"),
])
def test_a_bad_line_raises_at_load_naming_the_file_and_line(lib, tmp_path, bad, message):
    lines = lines_of(lib, tmp_path)
    path = tmp_path / "bad.jsonl"
    write_lines(path, lines[:4] + [bad] + lines[4:])
    with pytest.raises(TraceFileError, match=f"bad.jsonl{message}"):
        modscope.load_trace(path)


def test_a_missing_file_raises_naming_it(tmp_path):
    with pytest.raises(TraceFileError, match="nothing.jsonl: no such trace file"):
        modscope.load_trace(tmp_path / "nothing.jsonl")


def test_a_file_changed_after_loading_raises_when_read_again(lib, tmp_path):
    lines = lines_of(lib, tmp_path)
    path = tmp_path / "t.jsonl"
    write_lines(path, lines)
    loaded = modscope.load_trace(path)
    assert len(list(loaded)) == len(lines)
    write_lines(path, lines[:2])
    os.utime(path, ns=(1, 1))  # a different modification time even within the clock's resolution
    with pytest.raises(TraceFileError, match="t.jsonl: the trace file changed since it was loaded"):
        list(loaded)
    assert len(loaded) == len(lines) and loaded.firing_order()  # what the load noted stays


def test_a_file_removed_after_loading_raises_naming_it(lib, tmp_path):
    path = tmp_path / "gone.jsonl"
    write_lines(path, lines_of(lib, tmp_path))
    loaded = modscope.load_trace(path)
    path.unlink()
    with pytest.raises(TraceFileError, match="gone.jsonl: cannot read trace file"):
        list(loaded)


def test_the_validation_shortcut_accepts_exactly_what_validate_accepts(lib, tmp_path):
    """Every event of a real trace file passes both; each corruption fails the shortcut, and
    ``validate`` rejects it too (the shortcut is never more lenient). A subclass of a JSON type
    (torch's version string, in a live session event) is left to ``validate``."""
    tr = traced(lib, 2, stats=True)
    tr.save(tmp_path / "t.jsonl")
    events = list(modscope.load_trace(tmp_path / "t.jsonl"))  # as parsed from a file
    assert all(valid_event(e) and validate(e) for e in events)
    assert all(valid_event(e) or (validate(e) and e["kind"] == "session") for e in tr.events)
    by_kind = {e["kind"]: e for e in events}
    corruptions = [
        ("forward", lambda e: e.update(step=True)),
        ("forward", lambda e: e.update(seq=1.0)),
        ("forward", lambda e: e.update(v=2)),
        ("forward", lambda e: e.pop("dur_ns")),
        ("forward", lambda e: e["outputs"].append(3)),
        ("forward", lambda e: e["outputs"].append({"shape": (2,), "dtype": "float32"})),
        ("backward", lambda e: e.update(path=None)),
        ("model", lambda e: e["modules"][0].pop("cls")),
        ("model", lambda e: e["params"].append(None)),  # only module summaries may be null
        ("params", lambda e: e["items"][0].update(nan=1.5)),
        ("graph", lambda e: e["nodes"][0].update(module=3)),
        ("end", lambda e: e.update(dropped="0")),
        ("session", lambda e: e.update(kind="sessions")),
    ]
    for kind, corrupt in corruptions:
        event = copy.deepcopy(by_kind[kind])
        corrupt(event)
        assert not valid_event(event), (kind, event)
        with pytest.raises(EventError):
            validate(event)
    assert not valid_event([]) and not valid_event(None)
