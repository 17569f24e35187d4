"""The readers of outside bytes, fuzzed with hypothesis: the trace reader (a trace file, plain or
gzip), the attach handshake (the job's side: a first line from a stranger; the viewer's side:
what a job sends back), the viewer's control lines on the attach socket, and the checkpoint
reader (``engine.load``). Every input ends in the reader's own clear error or in a result, never
another exception, and never a hang (each reader is bounded: a hang shows as this file's time).

A few thousand cases each, kept to seconds (``make test``); ``bench/fuzz_readers.py`` runs many
more by hand."""

from __future__ import annotations

import io
import json
import os
import socket
import tempfile
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from modscope.events.files import TraceFileError, TraceScan
from modscope.events.serve import MAX_HELLO_BYTES, EventServer
from modscope.views.trace import load_trace
from modscope.views.tui.sources import AttachSource, _hello_ok
from modscope.views.tui.state import SessionState
from tests.events.fuzz_inputs import hostile

TRACE = Path(__file__).resolve().parent.parent / "tui" / "data" / "small_trace.jsonl"
SEED = TRACE.read_bytes()
SCALE = float(os.environ.get("MODSCOPE_FUZZ_SCALE", "1"))  # bench/fuzz_readers.py: many more cases, not derandomized


def fast(examples: int) -> settings:
    """``examples`` cases (times ``SCALE``), the same ones every run unless scaled."""
    return settings(max_examples=int(examples * SCALE), deadline=None, suppress_health_check=list(HealthCheck),
                    derandomize=SCALE == 1, database=None)


_DIR = tempfile.mkdtemp(prefix="modscope-fuzz-")


def read_trace(data: bytes, name: str = "fuzz.jsonl") -> None:
    """What ``replay``, ``diff`` and ``load_trace`` do with a file: raises ``TraceFileError`` or
    reads it whole."""
    path = Path(_DIR) / (name + (".gz" if data[:2] == b"\x1f\x8b" else ""))
    path.write_bytes(data)
    try:
        for _ in TraceScan(path):
            pass
        trace = load_trace(path)
        for _ in trace.iter_events():
            pass
    finally:
        path.unlink()


@fast(1500)
@given(data=hostile(SEED))
def test_the_trace_reader_takes_any_bytes_with_a_clear_error(data):
    try:
        read_trace(data)
    except TraceFileError as e:
        assert "fuzz.jsonl" in str(e)  # names the file


def test_the_trace_reader_reads_the_seed():
    read_trace(SEED)  # (the fuzzing starts from a good file)


@pytest.fixture(scope="module")
def server():
    server = EventServer("0123456789abcdef0123456789abcdef", port=0)
    yield server
    server.close()


@fast(2000)
@given(hello=st.binary(max_size=MAX_HELLO_BYTES + 64)
       | st.text(max_size=80).map(lambda t: t.encode("utf-8", "surrogatepass") + b"\n"))
def test_the_jobs_handshake_reader_takes_any_first_line(server, hello):
    """``EventServer._hello`` on what a stranger sends (then closes): a line or None, bounded."""
    a, b = socket.socketpair()
    try:
        a.sendall(hello[:200_000])
        a.shutdown(socket.SHUT_WR)
        line = server._hello(b)
    finally:
        a.close()
        b.close()
    assert line is None or (len(line) <= MAX_HELLO_BYTES and b"\n" not in line)
    assert line != b"0123456789abcdef0123456789abcdef" or hello.startswith(line)


@fast(1000)
@given(line=st.binary(max_size=300) | st.builds(
    lambda d: json.dumps(d).encode(), st.dictionaries(st.sampled_from(["hello", "token", "x"]),
                                                      st.one_of(st.none(), st.integers(), st.text(max_size=40)))))
def test_the_viewers_token_check_takes_any_first_line(line):
    assert _hello_ok(line, "0123456789abcdef0123456789abcdef") is False


def _viewer_side() -> tuple[AttachSource, SessionState]:
    source = AttachSource.__new__(AttachSource)  # (its line handling, without a connection)
    source.rejected, source.controls, source.address = 0, None, "fuzz:0"
    source._lock, source._holds = threading.Lock(), {}
    return source, SessionState()


@fast(1000)
@given(data=hostile(SEED[:4000], max_ops=3))
def test_what_a_job_sends_a_viewer_never_crashes_it(data):
    source, state = _viewer_side()
    source._lines(state, data.splitlines())  # parsed, validated, reported: never raised


def test_an_event_with_a_malformed_summary_is_reported_and_the_viewer_goes_on():
    # found by bench/fuzz_readers.py: a forward event whose output summary lost its "inf" count
    # passed the envelope's checks and raised KeyError in the folding thread (the viewer stopped)
    source, state = _viewer_side()
    lines = SEED.splitlines()
    forward = next(i for i, line in enumerate(lines) if b'"kind":"forward"' in line and b'"inf"' in line)
    lines[forward] = lines[forward].replace(b'"inf"', b'"hnf"', 1)
    source._lines(state, lines)
    assert state.malformed == 1 and state.status == "ended"  # the rest was folded
    assert "ignored a malformed forward event" in state.errors[-1]["message"]


@fast(1000)
@given(data=st.binary(max_size=2000) | hostile(b'{"cmd": "pause"}\n{"cmd": "break", "nan": true, '
                                               b'"grad_norm": 1.0, "modules": ["a"]}\n{"cmd": "resume"}\n'))
def test_a_viewers_control_lines_never_crash_the_job(server, data):
    """What a viewer sends on the attach socket (``EventServer.viewer_lines``): only well-formed
    commands reach the job's controller, bounded per read."""
    got: list[bytes] = []
    commands, refused = server.viewer_lines(data, got.append)
    assert commands == len(got) and all(json.loads(line)["cmd"] in ("pause", "resume", "step", "break")
                                        for line in got)
    assert refused >= 0


# --- the checkpoint reader --------------------------------------------------------------------------

def _checkpoints() -> dict[str, bytes]:
    import engine
    import engine.nn as nn

    engine.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))
    opt = engine.optim.Adam(model.parameters())
    model(engine.randn(5, 3)).sum().backward()
    opt.step()
    seeds = {}
    for name, obj in (("model", model.state_dict()), ("optim", opt.state_dict())):
        buf = io.BytesIO()
        engine.save(obj, buf)
        seeds[name] = buf.getvalue()
    import numpy as np

    buf = io.BytesIO()
    engine.save({"a": np.arange(6, dtype=np.float32).reshape(2, 3), "n": 3}, buf)  # engine's own format
    seeds["numpy"] = buf.getvalue()
    return seeds


CHECKPOINTS = _checkpoints()


def load_checkpoint(data: bytes) -> None:
    import engine
    from engine.serialization import LoadError

    try:
        engine.load(io.BytesIO(data))
    except LoadError:
        pass


@pytest.mark.parametrize("name", sorted(CHECKPOINTS))
def test_the_checkpoint_seeds_load(name):
    import engine

    engine.load(io.BytesIO(CHECKPOINTS[name]))


@fast(1000)
@given(data=st.sampled_from(sorted(CHECKPOINTS)).flatmap(lambda n: hostile(CHECKPOINTS[n], max_ops=3)))
def test_the_checkpoint_reader_takes_any_bytes_with_a_clear_error(data):
    load_checkpoint(data)


def test_the_fuzz_folder_is_private():
    assert os.path.isdir(_DIR)
