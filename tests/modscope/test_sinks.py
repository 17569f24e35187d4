"""Sinks that work off the training thread: BackgroundSink (the trace file of ``modscope run``)
and the socket sink's encoding on its sender thread; the traces feeding them are recorded on
both capture backends (``lib``)."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest

import modscope
from modscope import JsonlSink, load_trace
from modscope.events import MODULE_EVENTS
from modscope.events.sinks import BackgroundSink
from tests.modscope.fakes import FakeViewer, RecordingSink
from tests.modscope.models import nested_model, sgd_steps


def train(lib, sink, steps=3):
    model = nested_model(lib)
    tr = modscope.trace(model, sink=sink).start()
    sgd_steps(lib, model, steps)
    return tr


def test_background_file_is_complete_after_close(lib, tmp_path):
    path = tmp_path / "bg.jsonl.gz"
    tr = train(lib, BackgroundSink(JsonlSink(path)))
    tr.close()
    assert load_trace(path).events == tr.events


def test_background_file_is_on_disk_moments_after_a_step(lib, tmp_path):
    path = tmp_path / "bg.jsonl"
    tr = train(lib, BackgroundSink(JsonlSink(path)), steps=2)
    for _ in range(200):  # a hard crash now would lose at most the last few tens of ms
        if path.stat().st_size and {json.loads(x)["step"] for x in path.read_text().splitlines()} >= {0, 1}:
            break
        time.sleep(0.01)
    steps_on_disk = {json.loads(line)["step"] for line in path.read_text().splitlines()}
    assert {0, 1} <= steps_on_disk  # without close()
    tr.close()


def test_background_sink_reports_a_failing_close():
    class BadClose(RecordingSink):
        def close(self):
            raise OSError("cannot finish the file")

    sink = BackgroundSink(BadClose())
    with pytest.raises(OSError, match="cannot finish the file"):
        sink.close()


def test_a_full_queue_drops_and_counts_instead_of_blocking():
    class Stuck(RecordingSink):  # the writer cannot finish a single write until released
        def __init__(self):
            super().__init__()
            self.release = threading.Event()

        def write(self, event):
            self.release.wait()
            super().write(event)

    sink = BackgroundSink(Stuck(), queue_size=1)
    for i in range(20):
        sink.write({"seq": i})  # returns although the writer is stuck: training never waits
    assert sink.dropped >= 18
    sink.sink.release.set()
    sink.close()
    assert sink.sink.closed and len(sink.sink.events) + sink.dropped == 20


def test_a_failing_inner_sink_is_reported_and_detached(lib):
    sink = BackgroundSink(RecordingSink(fail_on="*"))
    model = nested_model(lib)
    with modscope.trace(model, sink=sink) as tr:
        sgd_steps(lib, model, 3, pause=0.05)  # the pauses let the writer meet the error
    errors = [e for e in tr.events if e["kind"] == "error"]
    assert len(errors) == 1 and errors[0]["message"] == "disk full"
    assert errors[0]["where"] == "sink BackgroundSink (detached)"


def test_socket_sink_skips_and_counts_what_json_cannot_carry(tmp_path):
    viewer = FakeViewer(tmp_path)
    sink = modscope.SocketSink(viewer.address, token="t")
    sink.write_many([{"seq": 0}, {"seq": 1, "bad": object()}, {"seq": 2}])
    sink.close()
    assert viewer.lines()[1:] == [{"seq": 0}, {"seq": 2}] and sink.dropped == 1


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz"])
def test_child_style_tee_of_socket_and_background_file(lib, tmp_path, suffix):
    """What ``modscope run`` records: a Tee of the viewer's socket and a background file."""
    viewer = FakeViewer(tmp_path)
    path = tmp_path / f"t{suffix}"
    tee = modscope.TeeSink(modscope.SocketSink(viewer.address, token="t"), BackgroundSink(JsonlSink(path)))
    tr = train(lib, tee)
    tr.close()
    assert viewer.lines()[1:] == tr.events == load_trace(path).events


def test_socket_sink_counts_what_it_cannot_send_once_the_viewer_is_gone(tmp_path):
    viewer = FakeViewer(tmp_path)
    sink = modscope.SocketSink(viewer.address, token="t")
    sink._sock.shutdown(socket.SHUT_WR)  # the connection breaks under the sink
    viewer.lines()  # the viewer has hung up too
    for i in range(50):
        sink.write({"seq": i})  # never raises into the training loop
    sink.close()
    assert not sink.connected and sink.dropped == 50


def test_records_become_dicts_on_the_worker_in_order_with_single_events():
    seen_on = []

    def to_event(item):
        seen_on.append(threading.current_thread().name)
        return {"seq": item[0]}

    sink = BackgroundSink(RecordingSink())
    sink.write_records([(0,), (1,)], to_event)
    sink.write({"seq": 2})  # a single event (a status, an error) between two batches
    sink.write_records([(3,)], to_event)
    sink.close()
    assert sink.sink.events == [{"seq": i} for i in range(4)]
    assert seen_on == ["modscope-writer"] * 3


def test_the_file_and_viewer_share_one_encoding_built_off_the_training_thread(lib, tmp_path, monkeypatch):
    """``modscope run``'s sinks take the tracer's records; a worker thread builds each event's
    dict and JSON line once, for the viewer and the file both, so a training step spends no
    time on them and the workers no time twice."""
    import modscope.capture.delivery

    built_on = []

    def spy(item, real=modscope.capture.delivery.as_event):
        if type(item) is tuple:  # a recorded module event (the others are dicts already)
            built_on.append(threading.current_thread().name)
        return real(item)

    monkeypatch.setattr(modscope.capture.delivery, "as_event", spy)
    viewer = FakeViewer(tmp_path)
    path = tmp_path / "t.jsonl"
    tr = train(lib, modscope.TeeSink(modscope.SocketSink(viewer.address, token="t"), BackgroundSink(JsonlSink(path))))
    tr.close()
    assert set(built_on) <= {"modscope-sink", "modscope-writer"}
    monkeypatch.undo()
    recorded = [e for e in tr.events if e["kind"] in MODULE_EVENTS]
    assert len(built_on) == len(recorded) > 0  # once each, not once per sink
    assert viewer.lines()[1:] == tr.events == load_trace(path).events


def test_a_shared_batch_with_a_bad_record_is_dropped_and_counted_by_each_sink(tmp_path):
    def to_event(item):
        if item == ("bad",):
            raise ValueError("not a record")
        return {"seq": item[0], "kind": "forward"}

    viewer = FakeViewer(tmp_path)
    socket_sink, file_sink = modscope.SocketSink(viewer.address, token="t"), BackgroundSink(JsonlSink(tmp_path / "t.jsonl"))
    tee = modscope.TeeSink(socket_sink, file_sink)
    tee.write_records([(0,), ("bad",), (1,)], to_event)
    tee.write_many([{"seq": 2, "kind": "forward"}, {"seq": 3, "kind": "forward", "x": object()}])  # not JSON
    tee.close()
    want = [{"seq": i, "kind": "forward"} for i in range(3)]
    assert viewer.lines()[1:] == want
    assert [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()] == want
    assert socket_sink.dropped == file_sink.dropped == 2


def test_a_file_sink_that_fails_on_shared_lines_raises_at_the_next_hand_over(tmp_path):
    class Full(JsonlSink):
        def write_lines(self, data):
            raise OSError(28, "No space left on device")

    viewer = FakeViewer(tmp_path)
    file_sink = BackgroundSink(Full(tmp_path / "t.jsonl"))
    tee = modscope.TeeSink(modscope.SocketSink(viewer.address, token="t"), file_sink)
    tee.write_records([(0,)], lambda item: {"seq": item[0], "kind": "forward"})
    deadline = time.monotonic() + 5
    while file_sink.error is None and time.monotonic() < deadline:
        time.sleep(0.01)
    with pytest.raises(OSError, match="No space left"):
        tee.write_records([(1,)], lambda item: {"seq": item[0], "kind": "forward"})
    tee.sinks[0].close()


def test_a_sink_without_records_support_gets_the_dicts(lib):
    plain = RecordingSink()
    tr = train(lib, modscope.TeeSink(plain))
    tr.stop()
    assert plain.events == tr.events


def test_a_record_that_cannot_become_an_event_is_dropped_and_counted():
    def to_event(item):
        if item == ("bad",):
            raise ValueError("not a record")
        return {"seq": item[0]}

    sink = BackgroundSink(RecordingSink())
    sink.write_records([(0,), ("bad",), (1,)], to_event)
    sink.write_records([(2,)], to_event)  # the worker goes on after the bad one
    sink.close()
    assert sink.sink.events == [{"seq": 0}, {"seq": 1}, {"seq": 2}] and sink.dropped == 1
