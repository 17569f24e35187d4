"""Reading trace files in linear time with a cap on a line's length, and cut-off recordings:
a corrupt file is refused quickly (file and line named), a recording without its ``end`` event
loads every event and says it was cut off."""

from __future__ import annotations

import gzip
import json
import time

import pytest

import engine
import modscope
from modscope import TraceFileError, load_trace
from modscope.cli import main
from modscope.events.files import MAX_LINE_BYTES, LineReader, LineTooLong, read_events
from tests.modscope.models import nested_model


def traced():
    model = nested_model(engine)
    opt = engine.optim.SGD(model.parameters(), lr=0.1)
    with modscope.trace(model) as tr:
        for _ in range(2):
            opt.zero_grad()
            model(engine.randn(3, 4)).sum().backward()
            opt.step()
    return tr


def test_the_line_cap_is_generous():
    assert MAX_LINE_BYTES == 16 << 20


def test_a_64mb_line_without_newline_is_refused_in_well_under_a_second(tmp_path):
    path = tmp_path / "blob.jsonl"
    path.write_bytes(b"x" * (64 << 20))  # no newline anywhere
    start = time.perf_counter()
    with pytest.raises(TraceFileError) as info:  # before the fix: 23-43 s of re-splitting, then "not JSON"
        load_trace(path)
    elapsed = time.perf_counter() - start
    assert f"{path}:1: not a modscope trace (a line longer than 16 MiB" in str(info.value)
    assert elapsed < 2.0, f"took {elapsed:.1f} s"


def test_a_long_line_after_good_ones_names_its_line(tmp_path):
    lines = b"".join(json.dumps(e).encode() + b"\n" for e in traced().events[:3])
    path = tmp_path / "mid.jsonl"
    path.write_bytes(lines + b"[" * (MAX_LINE_BYTES + 1) + b"\n")
    with pytest.raises(TraceFileError, match=r"mid.jsonl:4: corrupt trace file \(a line longer than 16 MiB"):
        read_events(path)


def test_a_gzip_bomb_is_refused_at_the_cap(tmp_path):
    path = tmp_path / "bomb.jsonl.gz"
    with gzip.open(path, "wb", compresslevel=1) as f:
        for _ in range(256):
            f.write(b"0" * (1 << 20))  # 256 MiB of one line, a few hundred KB on disk
    start = time.perf_counter()
    with pytest.raises(TraceFileError, match=r"bomb.jsonl.gz:1: .*longer than 16 MiB"):
        read_events(path)
    assert time.perf_counter() - start < 2.0


def test_lines_up_to_the_cap_still_load(tmp_path):
    events = traced().events
    big = {**events[0], "argv": ["x" * (MAX_LINE_BYTES - 2000)]}
    path = tmp_path / "big.jsonl"
    path.write_bytes(b"".join(json.dumps(e).encode() + b"\n" for e in [big, *events[1:]]))
    start = time.perf_counter()
    loaded, truncated = read_events(path)
    assert loaded[0]["argv"] == big["argv"] and loaded[1:] == events[1:] and not truncated
    assert time.perf_counter() - start < 3.0


def test_replay_of_a_corrupt_file_exits_non_zero_at_once(tmp_path, capsys):
    path = tmp_path / "corrupt.jsonl"
    path.write_bytes(b"\x00" * (40 << 20))
    start = time.perf_counter()
    assert main(["replay", str(path)]) == 2
    assert time.perf_counter() - start < 2.0
    err = capsys.readouterr().err
    assert f"modscope replay: error: {path}:1: not a modscope trace" in err and "16 MiB" in err


def test_line_reader_splits_across_chunks_in_order():
    reader = LineReader(max_line=8)
    data = b'{"a":1}\n\n{"b":2}\nxy'
    lines = [line for i in range(len(data)) for line in reader.feed(data[i:i + 1])]  # one byte at a time
    assert lines == [b'{"a":1}', b"", b'{"b":2}'] and reader.pending == b"xy" and reader.lineno == 3
    with pytest.raises(LineTooLong) as info:
        list(reader.feed(b"1234567"))
    assert info.value.lineno == 4


def test_line_reader_can_skip_long_lines_and_go_on():
    reader = LineReader(max_line=4, strict=False)
    assert list(reader.feed(b"ok\ntoo long")) == [b"ok"]
    assert list(reader.feed(b" still\nfine\n123456\nend\n")) == [b"fine", b"end"]
    assert reader.oversized == 2 and reader.lineno == 5


def test_a_recording_without_its_end_event_loads_as_cut_off(tmp_path):
    """What a SIGKILLed child leaves: whole lines, but no ``end`` event."""
    events = traced().events
    assert events[-1]["kind"] == "end"
    path = tmp_path / "killed.jsonl.gz"
    with gzip.open(path, "wb") as f:
        f.write(b"".join(json.dumps(e).encode() + b"\n" for e in events[:-1]))
    loaded = load_trace(path)
    assert loaded.truncated and loaded.events == events[:-1]  # before the fix: truncated=False
    path.write_bytes(gzip.compress(b"".join(json.dumps(e).encode() + b"\n" for e in events)))
    assert not load_trace(path).truncated
