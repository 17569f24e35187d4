"""The fast paths of loading a trace file (issue 21): module lines checked by their pattern
(``files.MODULE_LINE``) instead of parsed, lines split a chunk at a time (``LineReader.lines``),
and a loaded trace iterated with one generator step per event. Each is checked against the
general path it shortcuts: the pattern never takes a line that ``validate`` would refuse (random
mutations of real lines), and a file loads, iterates and fails exactly as ``read_events`` says."""

from __future__ import annotations

import gzip
import random

import orjson
import pytest

import modscope
from modscope.events import files
from modscope.events.files import MODULE_LINE, MODULE_LINE_KINDS, LineReader, LineTooLong, TraceFileError, read_events
from modscope.events.records import record_line
from modscope.events.schema import validate

SESSION = (b'{"v":1,"kind":"session","seq":0,"t":1,"step":0,"schema":1,"engine_version":"0","framework":"engine",'
           b'"modscope_version":"0","pid":1,"started":"x","argv":[]}')
END = b'{"v":1,"kind":"end","seq":99,"t":9,"step":0,"status":"ok","dropped":0}'

# Module records as the tracer keeps them: (kind, seq, t, step, path, call, dur, count, *fields)
RECORDS = [
    ("forward_pre", 2, 10, 0, "", 0, None, 1, (3, 4), "float32", 1),
    ("forward_pre", 3, 11, 0, "blk.a", 2, None, 2, (3, 4), "float32", 1, None, None, None),
    ("forward", 4, 12, 0, "blk.a", 0, 5, 1, (3, 8), "float64", 2),
    ("forward", 5, 13, 1, "0", 0, 0, 0),
    ("backward_pre", 6, 14, 1, "blk.a", 0, None, 1, (3, 8), "float32", None),
    ("backward", 7, 15, 1, "head", 3, 123456789, 2, None, None, None, (), "int64", None),
    ("forward", 8, 16, 2, "a b-c_d[0]/e:f", 0, 1, 1, (1, 2, 3, 4), "bfloat16", 12345678901234),
]
LINES = [record_line(r).rstrip(b"\n") for r in RECORDS]


def test_the_pattern_takes_what_record_line_writes_and_names_kind_and_path():
    for record, line in zip(RECORDS, LINES, strict=True):
        match = MODULE_LINE.fullmatch(line)
        assert match is not None, line
        assert MODULE_LINE_KINDS[match.lastindex] == record[0]
        assert match[match.lastindex].decode("ascii") == record[4]


def _mutations(line: bytes, rng: random.Random, count: int) -> list[bytes]:
    alphabet = b'0123456789,"\\{}[]-.e:nul tE\xc3\xa9_'
    out = []
    for _ in range(count):
        b = bytearray(line)
        i = rng.randrange(len(b))
        how = rng.randrange(4)
        if how == 0:
            b[i] = rng.choice(alphabet)
        elif how == 1:
            del b[i]
        elif how == 2:
            b.insert(i, rng.choice(alphabet))
        else:
            j = rng.randrange(i, len(b) + 1)
            b[i:i] = b[i:j]  # a piece repeated
        out.append(bytes(b))
    return out


def test_every_line_the_pattern_takes_is_a_valid_event_of_that_kind_and_path():
    """Random mutations of real lines: whatever the pattern still takes parses as JSON, passes
    ``validate``, and has the kind and path the match gives (the shortcut is never more lenient)."""
    rng = random.Random(21)
    taken = 0
    for line in LINES:
        for mutated in _mutations(line, rng, 3000):
            match = MODULE_LINE.fullmatch(mutated)
            if match is None:
                continue
            taken += 1
            event = validate(orjson.loads(mutated))
            assert (event["kind"], event["path"]) == (MODULE_LINE_KINDS[match.lastindex],
                                                      match[match.lastindex].decode("ascii"))
    assert taken > 1000  # (many mutations keep the line valid: digits for digits, a longer path)


def write(path, lines: list[bytes], newline_at_end: bool = True) -> None:
    path.write_bytes(b"\n".join(lines) + (b"\n" if newline_at_end else b""))


def outcome(path):
    """What ``read_events`` (every line parsed and validated) makes of a file: the events and
    whether it was cut off, or the error's message."""
    try:
        return read_events(path)
    except TraceFileError as e:
        return str(e)


def loaded(path):
    """The same from ``load_trace``: its events (iterated), ``truncated``, and its firing order,
    checked against the events'."""
    try:
        tr = modscope.load_trace(path)
    except TraceFileError as e:
        return str(e)
    events = list(tr.iter_events())
    assert tr.firing_order() == [(e["kind"], e["path"]) for e in events if "path" in e and e["kind"] in
                                 ("forward_pre", "forward", "backward_pre", "backward")]
    assert len(tr) == len(events)
    return events, tr.truncated


@pytest.mark.parametrize("line", [
    # taken by the general path (valid, but not in the writer's form)
    b'{"v":1,"kind":"forward","seq":4,"t":1,"step":0,"path":"a\\"b","call":0,"outputs":[],"dur_ns":1}',
    '{"v":1,"kind":"forward","seq":4,"t":1,"step":0,"path":"\u00e9","call":0,"outputs":[],"dur_ns":1}'.encode(),
    b'{"v":1,"kind":"forward","seq":4,"t":1,"step":0,"path":"a","call":0,"outputs":[{"shape":[2],'
    b'"dtype":"float32","tid":1,"mean":0.5,"std":null,"min":0,"max":1,"absmax":1,"zeros":0,"nan":0,"inf":0}],'
    b'"dur_ns":1}',
    b'{"v":1,"kind":"forward_pre","seq":-4,"t":1,"step":0,"path":"a","call":0,"inputs":[]}',
    b'{"v":1, "kind":"forward_pre","seq":4,"t":1,"step":0,"path":"a","call":0,"inputs":[]}',
    b'{"v":1,"kind":"forward_pre","seq":4,"t":1,"step":0,"path":"a","call":0,"inputs":[],"dur_ns":3}',
    b'{"v":1,"kind":"forward","seq":4,"t":123456789012345678901,"step":0,"path":"a","call":0,"outputs":[],'
    b'"dur_ns":1}',
    # refused, with the line's number and the reason
    b'{"v":1,"kind":"forward","seq":4,"t":1,"step":0,"path":"a","call":0,"outputs":[]}',
    b'{"v":1,"kind":"forward","seq":4,"t":1,"step":0,"path":"a","call":0,"inputs":[],"dur_ns":1}',
    b'{"v":2,"kind":"forward","seq":4,"t":1,"step":0,"path":"a","call":0,"outputs":[],"dur_ns":1}',
    b'{"v":1,"kind":"backward","seq":4,"t":1,"step":0,"path":"a","call":true,"grad_inputs":[],"dur_ns":1}',
    b'{"v":1,"kind":"backward","seq":4,"t":1,"step":0,"path":"a","call":0,"grad_inputs":[{"shape":[1]}],'
    b'"dur_ns":1}',
    b'{"v":1,"kind":"forward","seq":04,"t":1,"step":0,"path":"a","call":0,"outputs":[],"dur_ns":1}',
    b'{"v":1,"kind":"forward","seq":4,"t":1,"step":0,"path":"a","call":0,"outputs":[3],"dur_ns":1}',
])
def test_a_line_the_pattern_leaves_loads_or_fails_as_read_events_says(tmp_path, line):
    path = tmp_path / "t.jsonl"
    write(path, [SESSION, LINES[0], line, LINES[2], END])
    assert MODULE_LINE.fullmatch(line) is None
    assert loaded(path) == outcome(path)


def test_both_paths_give_one_tuple_per_kind_and_path(tmp_path):
    stats = (b'{"v":1,"kind":"forward","seq":9,"t":1,"step":0,"path":"blk.a","call":1,"outputs":[],'
             b'"dur_ns":1,"note":"not the writer\'s form"}')
    path = tmp_path / "t.jsonl"
    write(path, [SESSION, LINES[2], stats, LINES[2], END])
    order = modscope.load_trace(path).firing_order()
    assert order == [("forward", "blk.a")] * 3
    assert order[0] is order[1] is order[2]


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("newline_at_end", [True, False], ids=["newline", "no-newline"])
def test_iterating_gives_what_read_events_gives(tmp_path, gz, newline_at_end):
    """Blank lines, a last line without its newline, gzip, chunk edges (READ_CHUNK, 64 KiB, is
    crossed many times)."""
    rng = random.Random(5)
    body = [SESSION]
    for i in range(3000):
        body.append(LINES[i % len(LINES)])
        if rng.random() < 0.05:
            body.append(b"")
    body.append(END)
    path = tmp_path / ("t.jsonl.gz" if gz else "t.jsonl")
    text = b"\n".join(body) + (b"\n" if newline_at_end else b"")
    path.write_bytes(gzip.compress(text) if gz else text)
    assert loaded(path) == outcome(path)
    assert len(outcome(path)[0]) == 3002


def test_a_cut_last_line_and_a_bad_line_fail_or_load_as_read_events_says(tmp_path):
    path = tmp_path / "cut.jsonl"
    write(path, [SESSION, *LINES, LINES[2][:40]], newline_at_end=False)
    events, truncated = loaded(path)
    assert truncated and len(events) == 1 + len(LINES) and (events, truncated) == outcome(path)
    write(path, [SESSION, LINES[0], b"{nope", *LINES, END])
    assert loaded(path) == outcome(path)
    assert outcome(path).startswith(f"{path}:3: not valid JSON")


def _chunked(text: bytes, rng: random.Random, most: int) -> list[bytes]:
    chunks, i = [], 0
    while i < len(text):
        n = rng.randrange(1, most + 1)
        chunks.append(text[i:i + n])
        i += n
    return chunks


def _split(method: str, chunks: list[bytes], max_line: int):
    reader, got = LineReader(max_line), []
    try:
        for chunk in chunks:
            got.extend(getattr(reader, method)(chunk))
    except LineTooLong as e:
        return "too long", e.lineno, got
    return got, reader.lineno, reader.pending


def test_lines_splits_as_feed_does():
    """Random chunkings (chunks no longer than a line may be, as files read them) of a text
    with short, long and empty lines: the same lines, the same count, and the same error for a
    line too long, at the same line, with the same lines before it."""
    rng = random.Random(7)
    text = b"\n".join(b"x" * rng.choice((0, 1, 5, 40, 200)) for _ in range(300)) + b"\nend"
    for max_line in (64, 1 << 20):
        for _ in range(40):
            chunks = _chunked(text, rng, min(max_line, 300))
            fed = _split("feed", chunks, max_line)
            assert _split("lines", chunks, max_line) == fed
            if max_line == 64:
                assert fed[0] == "too long" and fed[1] == text[:text.index(b"x" * 200)].count(b"\n") + 1
            else:
                assert fed == (text.split(b"\n")[:-1], 300, b"end")


def test_lines_takes_a_chunk_longer_than_a_line_may_be():
    """(Never so in a file: chunks are at most 1 MiB, lines 16 MiB.) The same lines as feed."""
    text = b"ab\ncd\n\nef\ngh"
    reader, fed = LineReader(4), LineReader(4)
    assert reader.lines(text) == list(fed.feed(text)) == [b"ab", b"cd", b"", b"ef"]
    assert reader.pending == fed.pending == b"gh"


def test_the_loading_pass_takes_module_lines_by_their_pattern(tmp_path, monkeypatch):
    """The shortcut is used (the general path parses only the other lines)."""
    parsed = []
    monkeypatch.setattr(files, "loads", lambda line: parsed.append(line) or orjson.loads(line))
    path = tmp_path / "t.jsonl"
    write(path, [SESSION, *LINES, END])
    tr = modscope.load_trace(path)
    assert parsed == [SESSION, END] and len(tr) == len(LINES) + 2


@pytest.mark.parametrize(("extra", "valid"), [
    ({}, True), ({"detail": "light", "loss": 0.5, "grad_norm": None, "nonfinite": False, "dur_ns": 7}, True),
    ({"detail": "medium"}, False), ({"loss": "0.5"}, False), ({"nonfinite": 1}, False), ({"dur_ns": 1.5}, False),
])
def test_the_fast_check_agrees_with_validate_on_a_step_events_optional_fields(extra, valid):
    """``valid_event`` took a step event whose optional fields ``validate`` refuses (a string loss,
    an unknown detail): a trace's loader then kept what its validator would not."""
    from modscope.events.schema import EventError, dumps_bytes, make

    event = orjson.loads(dumps_bytes(make("step", 5, 0, 2, optimizer="SGD", index=0, lrs=[0.1], **extra)))
    assert files.valid_event(event) is valid
    if valid:
        assert validate(event) is event
    else:
        with pytest.raises(EventError):
            validate(event)
