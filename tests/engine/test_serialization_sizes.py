"""engine.load checks every size a file declares against the bytes it really holds before it
allocates anything: a lying array header is a ``LoadError`` naming the file and the tensor, never
a ``MemoryError`` (or an allocation of terabytes)."""

from __future__ import annotations

import io
import struct
import zipfile
from collections import OrderedDict

import numpy as np
import pytest

import engine
from engine.serialization import LoadError, _save


def checkpoint() -> bytes:
    buf = io.BytesIO()
    # engine's own format (torch-format files have the same checks: test_serialization_torch.py)
    _save(OrderedDict([("fc.weight", engine.ones(2, 3)), ("fc.bias", engine.zeros(3))]), buf, torch_format=False)
    return buf.getvalue()


def npy_header(shape, descr="<f4") -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": descr, "fortran_order": False, "shape": shape})
    return buf.getvalue()


def with_array_header(data: bytes, entry: str, shape, descr="<f4", payload: bytes | None = None) -> bytes:
    """``data`` with the ``.npy`` header of ``entry`` replaced (its data kept, or ``payload``):
    a well-formed zip whose CRCs are right, only the header lies."""
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            content = src.read(info.filename)
            if info.filename == entry:
                with src.open(info) as fh:
                    np.lib.format.read_magic(fh)
                    np.lib.format.read_array_header_1_0(fh)
                    header_len = fh.tell()
                content = npy_header(shape, descr) + (content[header_len:] if payload is None else payload)
            dst.writestr(info.filename, content)
    return out.getvalue()


@pytest.mark.parametrize("shape", [(10**12,), (2**40, 2**40), (4, -1), (3,)],
                         ids=["terabytes", "int64 overflow", "negative", "too few bytes"])
def test_an_array_header_declaring_more_than_the_file_holds_is_a_load_error(tmp_path, shape):
    path = tmp_path / "lying.pt"
    path.write_bytes(with_array_header(checkpoint(), "arrays/0.npy", shape))
    with pytest.raises(LoadError) as info:  # before the fix: MemoryError (3.64 TiB), without the file's name
        engine.load(path)
    message = str(info.value)
    assert repr(str(path)) in message and "not a valid engine.save file" in message
    assert "arrays/0.npy (the tensor obj['fc.weight'])" in message
    assert f"declares shape {shape}" in message and "but holds 24 bytes" in message
    with open(path, "rb") as f, pytest.raises(LoadError, match=r"obj\['fc.weight'\]"):
        engine.load(f)  # a file object: the same check


def test_a_non_seekable_stream_is_checked_too():
    data = with_array_header(checkpoint(), "arrays/0.npy", (10**12,))

    class Pipe(io.RawIOBase):
        def __init__(self) -> None:
            self.inner = io.BytesIO(data)

        def readable(self) -> bool:
            return True

        def readinto(self, b) -> int:
            chunk = self.inner.read(len(b))
            b[:len(chunk)] = chunk
            return len(chunk)

    with pytest.raises(LoadError, match="declares shape"):
        engine.load(io.BufferedReader(Pipe()))


def test_a_zip_entry_claiming_more_than_the_file_is_refused_before_reading(tmp_path):
    data = bytearray(checkpoint())
    # the central directory's record of the manifest: claim a size no file of this length can hold
    name = b"engine_manifest.json"
    at = data.rfind(b"PK\x01\x02", 0, data.rfind(name))
    struct.pack_into("<II", data, at + 20, 2**31, 2**31)  # compressed size, uncompressed size
    path = tmp_path / "claims.pt"
    path.write_bytes(bytes(data))
    with pytest.raises(LoadError, match=r"engine_manifest.json claims 2,147,483,648 stored bytes"):
        engine.load(path)


def test_honest_files_still_load_including_empty_and_scalar_arrays():
    obj = {"empty": engine.zeros(0, 5), "scalar": engine.tensor(3.0), "big": engine.ones(300, 300),
           "array": np.arange(7, dtype=np.int16), "bytes": b"\x00\x01"}
    buf = io.BytesIO()
    engine.save(obj, buf)
    back = engine.load(io.BytesIO(buf.getvalue()))
    assert back["empty"].shape == (0, 5) and back["scalar"].item() == 3.0 and back["big"].sum().item() == 90000
    assert np.array_equal(back["array"], obj["array"]) and back["bytes"] == b"\x00\x01"
