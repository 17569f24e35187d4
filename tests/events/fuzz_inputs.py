"""Hostile inputs for the readers' fuzz tests (``test_fuzz_readers.py``, and by hand
``bench/fuzz_readers.py``): a valid input mutated the ways files and sockets break (bytes
flipped, cut, inserted, repeated, a line doubled or huge), or bytes from nowhere."""

from __future__ import annotations

import gzip

from hypothesis import strategies as st

_EDGE_BYTES = [b"\n", b"{", b"}", b'"', b"\\", b"\x00", b"\xff", b"\xc3", b"NaN", b"1e999", b"-0", b"[]",
               b'{"v":1}', b"\r\n", b'"kind":"end"', b'"step":-1', b'"seq":1e20', b"\x1f\x8b"]


@st.composite
def mutated(draw: st.DrawFn, seed: bytes, max_ops: int = 4) -> bytes:
    """``seed`` with up to ``max_ops`` mutations."""
    data = bytearray(seed)
    for _ in range(draw(st.integers(1, max_ops))):
        op = draw(st.sampled_from(("flip", "cut", "insert", "edge", "repeat", "drop")))
        at = draw(st.integers(0, max(0, len(data))))
        if op == "flip" and data:
            at = min(at, len(data) - 1)
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif op == "cut":
            del data[at:]
        elif op == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=16))
        elif op == "edge":
            data[at:at] = draw(st.sampled_from(_EDGE_BYTES))
        elif op == "repeat":
            n = draw(st.integers(1, 64))
            data[at:at] = bytes(data[at:at + n]) * draw(st.integers(1, 4))
        elif op == "drop":
            del data[at:at + draw(st.integers(1, 64))]
    return bytes(data)


def hostile(seed: bytes, max_ops: int = 4) -> st.SearchStrategy[bytes]:
    """A mutated ``seed``, its gzip mutated, or random bytes."""
    return st.one_of(mutated(seed, max_ops), mutated(gzip.compress(seed, mtime=0), max_ops),
                     st.binary(max_size=512))
