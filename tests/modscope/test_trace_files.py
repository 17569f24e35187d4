"""Trace files and sinks: JSON Lines (+gzip) round trips, Chrome trace, and every bad file. The traces
are recorded on both capture backends (``lib``: the engine, then torch)."""

from __future__ import annotations

import gzip
import json
import os
import warnings

import pytest

import modscope
from modscope import JsonlSink, TraceFileError, load_trace
from modscope.events import EventError, validate
from tests.modscope.fakes import FakeViewer
from tests.modscope.models import nested_model

warnings.filterwarnings("ignore", message="Full backward hook is firing")


def traced(lib, **kw):
    model = nested_model(lib)
    opt = lib.optim.SGD(model.parameters(), lr=0.1)
    with modscope.trace(model, **kw) as tr:
        for _ in range(2):
            opt.zero_grad()
            model(lib.randn(3, 4)).sum().backward()
            opt.step()
    return tr


@pytest.mark.parametrize("name", ["t.jsonl", "t.jsonl.gz"])
def test_save_and_load_round_trip(lib, tmp_path, name):
    tr = traced(lib, stats=True)
    tr.save(tmp_path / name)
    loaded = load_trace(tmp_path / name)
    assert loaded.events == tr.events and not loaded.truncated
    assert loaded.firing_order() == tr.firing_order()
    if name.endswith(".gz"):
        assert (tmp_path / name).read_bytes()[:2] == b"\x1f\x8b"


def test_streamed_jsonl_sink_is_complete_after_exit(lib, tmp_path):
    path = tmp_path / "live.jsonl"
    tr = traced(lib, sink=JsonlSink(path))
    assert load_trace(path).events == tr.events


def test_jsonl_sink_flushes_each_step_so_a_crash_loses_at_most_that_step(lib, tmp_path):
    path = tmp_path / "crash.jsonl.gz"
    model = nested_model(lib)
    opt = lib.optim.SGD(model.parameters(), lr=0.1)
    tr = modscope.trace(model, sink=JsonlSink(path)).start()
    model(lib.randn(3, 4)).sum().backward()
    opt.step()  # step 0 ends: flushed
    model(lib.randn(3, 4))  # step 1 in progress when we "crash" (never closed)
    loaded = load_trace(path)
    assert {e["step"] for e in loaded.events} == {0} and loaded.events[-1]["kind"] == "params"
    tr.stop()


def test_truncated_last_line_keeps_every_complete_record(lib, tmp_path):
    tr = traced(lib)
    path = tmp_path / "cut.jsonl"
    tr.save(path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 25])  # cut inside the last line
    loaded = load_trace(path)
    assert loaded.truncated and loaded.events == tr.events[:-1]


def test_truncated_gzip_stream_keeps_what_decompresses(lib, tmp_path):
    tr = traced(lib)
    path = tmp_path / "cut.jsonl.gz"
    tr.save(path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    loaded = load_trace(path)
    assert 0 < len(loaded.events) < len(tr.events)
    assert loaded.events == tr.events[: len(loaded.events)]


def _write(tmp_path, name, content: bytes):
    path = tmp_path / name
    path.write_bytes(content)
    return path


@pytest.mark.parametrize("content,message", [
    (b"", "empty trace file"),
    (b"hello world\n", ":1: not a modscope trace (not JSON Lines"),
    (b'{"name": "x"}\n', ":1: not a modscope trace (event: missing field 'v')"),
    (b'[1, 2]\n', ":1: not a modscope trace (an event must be a JSON object"),
    (b"\x80\x81\x82\n", ":1: not a modscope trace (not JSON Lines: not UTF-8 text)"),
    (b"PK\x03\x04 binary zip", ":1: not a modscope trace"),
])
def test_foreign_files_are_refused_with_file_and_line(tmp_path, content, message):
    path = _write(tmp_path, "bad.jsonl", content)
    with pytest.raises(TraceFileError) as info:
        load_trace(path)
    assert str(path) in str(info.value) and message in str(info.value)


def test_malformed_line_in_the_middle_names_its_line(lib, tmp_path):
    tr = traced(lib)
    lines = [json.dumps(e) for e in tr.events]
    lines[3] = '{"v": 1, "kind": "forward", "seq": 3'  # broken JSON, not the last line
    path = _write(tmp_path, "mid.jsonl", ("\n".join(lines) + "\n").encode())
    with pytest.raises(TraceFileError, match=r"mid.jsonl:4: not valid JSON"):
        load_trace(path)
    lines[3] = json.dumps({**tr.events[3], "kind": "forward", "path": 7})
    path = _write(tmp_path, "typ.jsonl", ("\n".join(lines) + "\n").encode())
    with pytest.raises(TraceFileError, match=r"typ.jsonl:4: .*field 'path' must be str, got int"):
        load_trace(path)


def test_future_schema_version_is_refused(tmp_path):
    event = {"v": 99, "kind": "session", "seq": 0, "t": 0, "step": 0}
    path = _write(tmp_path, "future.jsonl", (json.dumps(event) + "\n").encode())
    with pytest.raises(TraceFileError, match="unsupported schema version 99"):
        load_trace(path)


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(TraceFileError, match="no such trace file"):
        load_trace(tmp_path / "nope.jsonl")
    with pytest.raises(TraceFileError, match="is a directory"):
        load_trace(tmp_path)


def test_nothing_in_a_trace_file_is_executed(tmp_path):
    marker = tmp_path / "pwned"
    payload = {"v": 1, "kind": "metric", "seq": 0, "t": 0, "step": 0,
               "values": {"__import__('os').system('touch " + str(marker) + "')": 1.0}}
    path = _write(tmp_path, "evil.jsonl", (json.dumps(payload) + "\n").encode())
    loaded = load_trace(path)
    assert not marker.exists() and loaded.events[0]["kind"] == "metric"


def test_unwritable_outputs_raise_clear_errors(lib, tmp_path):
    tr = traced(lib)
    with pytest.raises(OSError, match="cannot write trace file"):
        tr.save(tmp_path / "missing-dir" / "t.jsonl")
    with pytest.raises(OSError, match="cannot write trace file"):
        JsonlSink(tmp_path / "missing-dir" / "t.jsonl")
    with pytest.raises(OSError, match="cannot write Chrome trace"):
        tr.to_chrome_trace(tmp_path / "missing-dir" / "t.json")


def test_chrome_trace_spans_nest_by_module(lib, tmp_path):
    tr = traced(lib)
    path = tmp_path / "chrome.json"
    tr.to_chrome_trace(path)
    data = json.loads(path.read_text())
    spans = [e for e in data["traceEvents"] if e["ph"] == "X" and e["cat"] == "forward" and e["args"]["step"] == 0]
    by_name = {}
    for s in spans:
        by_name.setdefault(s["name"], []).append(s)
    root, inner = by_name["<root>"][0], by_name["blk.a"][0]
    assert root["ts"] <= inner["ts"] and inner["ts"] + inner["dur"] <= root["ts"] + root["dur"]
    assert any(e["ph"] == "i" and e["name"] == "SGD.step" for e in data["traceEvents"])
    assert any(e["ph"] == "X" and e["cat"] == "backward" for e in data["traceEvents"])


def test_validate_rejects_bad_events(lib):
    good = traced(lib).events[2]
    validate(good)
    for bad, msg in [({**good, "kind": "nope"}, "unknown event kind"), ({**good, "seq": True}, "got bool"),
                     ({k: v for k, v in good.items() if k != "path"}, "missing field 'path'"),
                     ({**good, "inputs": ["x"]}, r"inputs\[0\] must be an object")]:
        with pytest.raises(EventError, match=msg):
            validate(bad)


def test_socket_sink_streams_to_a_listener_and_drops_when_the_viewer_is_gone(lib, tmp_path):
    viewer = FakeViewer(tmp_path)
    tr = traced(lib, sink=modscope.SocketSink(viewer.address, token="secret"))
    lines = viewer.lines()
    assert lines[0] == {"hello": "modscope", "token": "secret"}
    assert lines[1:] == tr.events
    with pytest.raises(ConnectionError, match="cannot connect to the modscope viewer"):
        modscope.SocketSink(str(tmp_path / "nobody.sock"), token="x")


def test_gzip_written_by_hand_loads(lib, tmp_path):
    tr = traced(lib)
    path = tmp_path / "hand.jsonl.gz"
    with gzip.open(path, "wt") as f:
        for e in tr.events:
            f.write(json.dumps(e) + "\n")
    assert load_trace(path).events == tr.events
    os.remove(path)


def _text_and_gzip(tmp_path, n=30_000):
    """A text of ``n`` numbered lines (about 2 MB) as three concatenated gzip members."""
    text = b"".join(b'{"line": %d, "pad": "%s"}\n' % (i, b"x" * (i % 97)) for i in range(n))
    cut1, cut2 = len(text) // 3, 2 * len(text) // 3
    path = tmp_path / "three.gz"
    path.write_bytes(gzip.compress(text[:cut1]) + gzip.compress(text[cut1:cut2]) + gzip.compress(text[cut2:]))
    return text, path


def test_a_gzip_trace_is_read_from_any_offset_through_checkpoints(tmp_path, monkeypatch):
    from modscope.events.files import TraceStream

    monkeypatch.setattr(TraceStream, "CHECKPOINT_SPACING", 1 << 16)
    text, path = _text_and_gzip(tmp_path)
    stream = TraceStream(path)
    first = list(stream.chunks(checkpoints=True))  # the indexing pass keeps checkpoints
    assert b"".join(c for _, c in first) == text and [o for o, _ in first][1] == len(first[0][1])
    assert len(stream.checkpoints) >= len(text) // (1 << 16) - 1
    starts = [0, 1, 65535, 65536, len(text) // 3, len(text) // 3 + 1, len(text) - 1, len(text), *range(7, len(text), 104_729)]
    for start in starts:
        got = list(stream.chunks(start))
        assert b"".join(c for _, c in got) == text[start:] and (not got or got[0][0] == start)
    lines = text.splitlines()
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    for i in (0, 5, 12_345, len(lines) - 3):
        assert list(stream.read_lines(offsets[i], offsets[i + 3])) == lines[i:i + 3]
    plain = tmp_path / "plain.jsonl"
    plain.write_bytes(text)
    assert list(TraceStream(plain).read_lines(offsets[7], offsets[9])) == lines[7:9]


def test_a_gzip_member_ending_inside_a_bounded_inflate_step_goes_on_to_the_next(lib, tmp_path):
    """Before: a member that ended while input was left in ``unconsumed_tail`` (over 1 MiB of text
    from one read) sent the reader round the same bytes for ever."""
    from modscope.events.files import read_events

    events = traced(lib).events
    data = b"".join(json.dumps(e).encode() + b"\n" for e in events)
    body = data[:-len(json.dumps(events[-1])) - 1]
    blank = b"\n" * (3 << 20)  # blank lines are skipped: over 1 MiB of text in a few KB of gzip
    path = tmp_path / "members.jsonl.gz"
    path.write_bytes(gzip.compress(body + blank) + gzip.compress(data[len(body):]))
    loaded, truncated = read_events(path)
    assert loaded == events and not truncated
