"""``engine.save`` / ``engine.load``: state_dicts on disk without pickle.

The file is a zip archive (what ``np.savez`` writes) holding:

- ``arrays/<i>.npy``: every tensor's and array's data, written and read with NumPy's ``.npy``
  format and ``allow_pickle=False`` (so object arrays can neither be written nor read);
- ``engine_manifest.json``: the structure of the saved object as JSON, e.g.
  ``{"t": "odict", "items": [["fc.weight", {"t": "tensor", "a": 0, ...}], ...], "metadata": ...}``.

What can be saved: tensors (Parameters stay Parameters; ``requires_grad`` is kept), NumPy arrays
and scalars, ``None``, bools, ints, floats (also nan/inf), strings, bytes, engine dtypes, and
nested ``dict``/``OrderedDict`` (with the ``_metadata`` attribute a Module state_dict carries)/
``Counter``/``list``/``tuple``/``engine.Size``. That covers Module, optimizer and LR-scheduler
state_dicts (functions in a LambdaLR state are ``None`` already, as in torch).

Loading only ever maps manifest tags to those fixed types: nothing from the file is executed.
Anything that is not such a file, or is corrupt or truncated (zip CRCs are checked), raises
``LoadError`` naming the file. Sizes a file declares (a zip entry's length, an array header's
shape) are checked against the bytes the file really holds before anything is allocated, so a
header claiming a shape of ``(10**12,)`` is a ``LoadError`` naming the file and the tensor, not
a ``MemoryError``. Memory sharing: one tensor object saved twice loads as one object;
distinct tensors over the same array (tied weights in a state_dict) load as distinct tensors
sharing one array; other views are saved as copies.
"""

from __future__ import annotations

import io
import json
import math
import os
import re
import struct
import zipfile
import zlib
from collections import Counter, OrderedDict
from typing import IO, Any

import numpy as np

from . import _dtype
from ._tensor import Size, Tensor, device

__all__ = ["LoadError", "load", "save"]

FORMAT = "engine.save"
VERSION = 1
MANIFEST = "engine_manifest.json"
_ARRAY_NAME = re.compile(r"arrays/(\d+)\.npy")
_ALLOWED_KINDS = frozenset("biufcSU")  # never 'O' (objects) or 'V' (structured/raw bytes)
# Deflate cannot expand data more than about 1032:1: a zip entry claiming more is corrupt.
_MAX_INFLATE_RATIO = 1100

FileLike = str | os.PathLike | IO[bytes]


class LoadError(RuntimeError):
    """``engine.load`` was given something that is not an intact ``engine.save`` file."""


# --- save -------------------------------------------------------------------------------------


class _Encoder:
    """Turns an object into a JSON-able node tree plus the list of arrays it refers to."""

    def __init__(self) -> None:
        self.arrays: list[np.ndarray] = []
        self._array_index: dict[int, int] = {}  # id(ndarray) -> index: tensors sharing _data share an entry
        self._tensor_index: dict[int, int] = {}  # id(Tensor) -> object id: one object saved twice loads as one
        self._keepalive: list[Any] = []  # ids stay unique only while the objects live

    def array(self, arr: np.ndarray, where: str) -> int:
        if arr.dtype.kind not in _ALLOWED_KINDS:
            raise TypeError(f"engine.save cannot store a NumPy array of dtype {arr.dtype} (at {where})")
        key = id(arr)
        if key not in self._array_index:
            self._array_index[key] = len(self.arrays)
            self.arrays.append(arr)
            self._keepalive.append(arr)
        return self._array_index[key]

    def encode(self, obj: Any, where: str) -> Any:
        if obj is None or isinstance(obj, bool | str):
            return obj
        if isinstance(obj, np.generic):  # before int/float: np.float64 is a float subclass
            return {"t": "npscalar", "a": self.array(np.asarray(obj), where)}
        if type(obj) is int:
            return obj
        if type(obj) is float:
            return obj if math.isfinite(obj) else {"t": "float", "v": repr(obj)}
        if isinstance(obj, Tensor):
            return self.tensor(obj, where)
        if type(obj) is np.ndarray:
            return {"t": "ndarray", "a": self.array(obj, where)}
        if type(obj) is bytes:
            return {"t": "bytes", "a": self.array(np.frombuffer(obj, dtype=np.uint8), where)}
        if isinstance(obj, _dtype.dtype):
            return {"t": "dtype", "name": obj.name}
        if type(obj) in (list, tuple, Size):
            tag = {list: "list", tuple: "tuple", Size: "size"}[type(obj)]
            return {"t": tag, "items": [self.encode(v, f"{where}[{i}]") for i, v in enumerate(obj)]}
        if type(obj) in (dict, OrderedDict, Counter):
            return self.mapping(obj, where)
        hint = " (save its state_dict() instead)" if callable(getattr(obj, "state_dict", None)) else ""
        raise TypeError(
            f"engine.save cannot store an object of type {type(obj).__module__}.{type(obj).__qualname__} "
            f"(at {where}){hint}; it stores tensors, NumPy arrays and scalars, None, bools, ints, floats, strings, "
            "bytes, dtypes and nested dicts, OrderedDicts, Counters, lists and tuples of them"
        )

    def mapping(self, obj: dict, where: str) -> dict[str, Any]:
        tag = {dict: "dict", OrderedDict: "odict", Counter: "counter"}[type(obj)]
        items = []
        for k, v in obj.items():
            if isinstance(k, Tensor | np.ndarray | list | dict):
                raise TypeError(f"engine.save cannot store a dict key of type {type(k).__name__} (at {where})")
            items.append([self.encode(k, f"{where} key {k!r}"), self.encode(v, f"{where}[{k!r}]")])
        node: dict[str, Any] = {"t": tag, "items": items}
        metadata = getattr(obj, "_metadata", None)
        if tag == "odict" and metadata is not None:
            node["metadata"] = self.encode(metadata, f"{where}._metadata")
        return node

    def tensor(self, t: Tensor, where: str) -> dict[str, Any]:
        if id(t) not in self._tensor_index:
            self._tensor_index[id(t)] = len(self._tensor_index)
            self._keepalive.append(t)
        kind = type(t)
        is_param = kind.__name__ == "Parameter" and kind.__module__.startswith("engine.")
        return {"t": "tensor", "a": self.array(t._data, where), "obj": self._tensor_index[id(t)],
                "requires_grad": bool(t.requires_grad), "param": is_param}


def save(obj: Any, f: FileLike, pickle_module: Any = None, pickle_protocol: Any = None,
         _use_new_zipfile_serialization: bool = True, _disable_byteorder_record: bool = False) -> None:
    """Save ``obj`` (typically a state_dict) to a path or a writable binary file object.

    The pickle-related arguments exist for torch compatibility and are ignored: nothing is
    pickled. Raises ``TypeError`` (before anything is written) for a value it cannot store,
    naming where in ``obj`` it is.

    Example::

        >>> engine.save(model.state_dict(), "model.pt")
        >>> model.load_state_dict(engine.load("model.pt"))
    """
    enc = _Encoder()
    root = enc.encode(obj, "obj")
    arrays = [{"name": f"arrays/{i}.npy", "dtype": a.dtype.str, "shape": list(a.shape)}
              for i, a in enumerate(enc.arrays)]
    manifest = json.dumps({"format": FORMAT, "version": VERSION, "arrays": arrays, "root": root},
                          allow_nan=False, separators=(",", ":"))
    if isinstance(f, str | os.PathLike):
        with open(f, "wb") as fh:
            _write_zip(fh, enc.arrays, manifest)
    else:
        _write_zip(f, enc.arrays, manifest)


def _write_zip(fh: IO[bytes], arrays: list[np.ndarray], manifest: str) -> None:
    with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        for i, arr in enumerate(arrays):
            with zf.open(f"arrays/{i}.npy", "w", force_zip64=True) as out:
                np.lib.format.write_array(out, np.asanyarray(arr), allow_pickle=False)
        zf.writestr(MANIFEST, manifest.encode("utf-8"))


# --- load -------------------------------------------------------------------------------------

# what a corrupt, truncated or foreign file can make the readers below raise
_READ_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, struct.error, ValueError, KeyError, TypeError,
                IndexError, EOFError, UnicodeDecodeError, NotImplementedError, OSError, RecursionError, OverflowError)


def load(f: FileLike, map_location: Any = None, pickle_module: Any = None, *, weights_only: bool | None = None,
         mmap: bool | None = None, **pickle_load_args: Any) -> Any:
    """Load an object saved by ``engine.save`` from a path or a readable binary file object.

    Only ``engine.save`` files are read; nothing in the file is executed (``weights_only`` is
    accepted and is always effectively True). ``map_location`` may name the CPU (the only
    device); ``mmap`` is accepted and ignored (data is read into memory).

    Raises:
        FileNotFoundError: the path does not exist.
        LoadError: the file is not an ``engine.save`` file (a pickle, a torch checkpoint, text,
            random bytes) or is corrupt or truncated. The message names the file.
    """
    if isinstance(map_location, str | device):
        device(map_location)
    if isinstance(f, str | os.PathLike):
        name = os.fspath(f)
        with open(f, "rb") as fh:
            return _load_stream(fh, repr(name))
    name = getattr(f, "name", None)
    return _load_stream(f, repr(name) if isinstance(name, str) else repr(f))


def _load_stream(fh: IO[bytes], name: str) -> Any:
    seekable = getattr(fh, "seekable", lambda: False)()
    stream = fh if seekable else io.BytesIO(fh.read())
    start = stream.tell()
    head = stream.read(4)
    size = stream.seek(0, io.SEEK_END) - start  # the bytes the file really holds: no entry can be larger
    stream.seek(start)
    _check_header(head, name)
    try:
        with zipfile.ZipFile(stream) as zf:
            manifest = _read_manifest(zf, name, size)
            arrays = _read_arrays(zf, manifest, name, size)
            return _Decoder(arrays).decode(manifest["root"])
    except LoadError:
        raise
    except _READ_ERRORS as e:
        raise _error(name, f"it is corrupt, truncated or malformed ({type(e).__name__}: {e})") from None


def _error(name: str, reason: str) -> LoadError:
    return LoadError(
        f"engine.load: {name} is not a valid engine.save file: {reason}. engine.load reads only files written "
        "by engine.save (a zip of .npy arrays plus a JSON manifest) and never unpickles anything."
    )


def _check_header(head: bytes, name: str) -> None:
    if not head:
        raise _error(name, "the file is empty")
    if head[:1] == b"\x80":
        raise _error(name, "it is a pickle stream")
    if head != b"PK\x03\x04":
        raise _error(name, "it does not start with a zip header")


def _check_entry(info: zipfile.ZipInfo, size: int, name: str) -> None:
    """``LoadError`` when a zip entry claims more bytes than a file of ``size`` bytes can hold:
    checked before the entry is read, so a lying length never becomes an allocation."""
    if info.compress_size > size:
        raise _error(name, f"{info.filename} claims {info.compress_size:,} stored bytes, more than the whole "
                           f"file's {size:,}")
    stored = info.compress_type == zipfile.ZIP_STORED
    if (info.file_size != info.compress_size) if stored else \
            (info.file_size > max(info.compress_size, 1) * _MAX_INFLATE_RATIO):
        raise _error(name, f"{info.filename} claims {info.file_size:,} bytes from {info.compress_size:,} stored "
                           "bytes, which no zip entry can hold")


def _read_manifest(zf: zipfile.ZipFile, name: str, size: int) -> dict[str, Any]:
    names = zf.namelist()
    if MANIFEST not in names:
        if any(n == "data.pkl" or n.endswith("/data.pkl") for n in names):
            raise _error(name, "it is a torch.save checkpoint (a zip holding a pickle)")
        raise _error(name, f"the zip archive has no {MANIFEST}")
    info = zf.getinfo(MANIFEST)
    _check_entry(info, size, name)
    manifest = json.loads(zf.read(info).decode("utf-8"))
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise _error(name, "its manifest does not describe an engine.save file")
    if manifest.get("version") != VERSION:
        raise _error(name, f"unsupported format version {manifest.get('version')!r} (this engine reads {VERSION})")
    if not isinstance(manifest.get("arrays"), list) or "root" not in manifest:
        raise _error(name, "its manifest is malformed")
    return manifest


def _read_arrays(zf: zipfile.ZipFile, manifest: dict[str, Any], name: str, size: int) -> list[np.ndarray]:
    arrays = []
    for i, entry in enumerate(manifest["arrays"]):
        if entry["name"] != f"arrays/{i}.npy":
            raise ValueError(f"array entry {i} is named {entry['name']!r}")
        info = zf.getinfo(entry["name"])
        _check_entry(info, size, name)
        with zf.open(info) as fh:
            shape, dtype, header_bytes = _npy_header(fh)
        declared = math.prod(shape) * dtype.itemsize
        held = info.file_size - header_bytes
        if min(shape, default=0) < 0 or declared != held:
            raise _error(name, f"{entry['name']} ({_owner(manifest['root'], i)}) declares shape {shape} of "
                               f"{dtype}, {_bytes(declared)} of data, but holds {_bytes(held)}")
        with zf.open(info) as fh:  # its sizes agree with the file: reading allocates only what is there
            arr = np.lib.format.read_array(fh, allow_pickle=False)
            if fh.read(1):
                raise ValueError(f"{entry['name']} has trailing bytes")
        if arr.dtype.str != entry["dtype"] or list(arr.shape) != entry["shape"]:
            raise ValueError(f"{entry['name']} holds {arr.dtype.str}{list(arr.shape)}, the manifest says "
                             f"{entry['dtype']}{entry['shape']}")
        if arr.dtype.kind not in _ALLOWED_KINDS:
            raise ValueError(f"{entry['name']} has unsupported dtype {arr.dtype}")
        arrays.append(arr if arr.dtype.isnative else arr.astype(arr.dtype.newbyteorder("=")))
    return arrays


def _npy_header(fh: IO[bytes]) -> tuple[tuple[int, ...], np.dtype, int]:
    """(shape, dtype, header length in bytes) of the ``.npy`` data ``fh`` starts with; reads
    only the header."""
    fmt = np.lib.format
    version = fmt.read_magic(fh)
    if version == (1, 0):
        shape, _, dtype = fmt.read_array_header_1_0(fh)
    elif version == (2, 0):
        shape, _, dtype = fmt.read_array_header_2_0(fh)
    else:
        raise ValueError(f"unsupported .npy format version {version}")
    return tuple(shape), dtype, fh.tell()


def _bytes(n: int) -> str:
    return "1 byte" if n == 1 else f"{n:,} bytes"


_ARRAY_TAGS = {"tensor": "the tensor", "ndarray": "the array", "npscalar": "the NumPy scalar", "bytes": "the bytes"}


def _owner(root: Any, index: int) -> str:
    """Where in the saved object array ``index`` is used, e.g. ``the tensor obj['fc.weight']``
    (for messages: a malformed manifest gives ``array <index>``)."""
    stack: list[tuple[Any, str]] = [(root, "obj")]
    while stack:
        node, where = stack.pop()
        if not isinstance(node, dict):
            continue
        tag, items = node.get("t"), node.get("items")
        if tag in _ARRAY_TAGS and node.get("a") == index:
            return f"{_ARRAY_TAGS[tag]} {where}"
        children: list[tuple[Any, str]] = []
        if tag in ("dict", "odict", "counter") and isinstance(items, list):
            for pair in items:
                if isinstance(pair, list) and len(pair) == 2:
                    key = repr(pair[0]) if pair[0] is None or isinstance(pair[0], str | int | float) else "?"
                    children.append((pair[1], f"{where}[{key}]"))
        elif tag in ("list", "tuple", "size") and isinstance(items, list):
            children += [(v, f"{where}[{j}]") for j, v in enumerate(items)]
        if "metadata" in node:
            children.append((node["metadata"], f"{where}._metadata"))
        stack += reversed(children)
    return f"array {index}"


class _Decoder:
    """Rebuilds the object from the manifest's node tree; every tag maps to one fixed type."""

    def __init__(self, arrays: list[np.ndarray]) -> None:
        self.arrays = arrays
        self.tensors: dict[int, Tensor] = {}

    def decode(self, node: Any) -> Any:
        if node is None or isinstance(node, bool | int | float | str):
            return node
        if isinstance(node, list) or not isinstance(node, dict):
            raise ValueError(f"unexpected manifest node {node!r:.80}")
        tag = node["t"]
        if tag in ("list", "tuple", "size"):
            items = [self.decode(v) for v in _as_list(node["items"])]
            return {"list": list, "tuple": tuple, "size": Size}[tag](items)
        if tag in ("dict", "odict", "counter"):
            return self.mapping(node, tag)
        if tag == "tensor":
            return self.tensor(node)
        if tag == "ndarray":
            return self.array(node["a"])
        if tag == "npscalar":
            return self.array(node["a"]).reshape(())[()]
        if tag == "bytes":
            return self.array(node["a"]).astype(np.uint8).tobytes()
        if tag == "float":
            if node["v"] not in ("nan", "inf", "-inf"):
                raise ValueError(f"bad float {node['v']!r}")
            return float(node["v"])
        if tag == "dtype":
            return _dtype._by_name(node["name"])
        raise ValueError(f"unknown manifest tag {tag!r:.40}")

    def array(self, index: Any) -> np.ndarray:
        if type(index) is not int or not 0 <= index < len(self.arrays):
            raise ValueError(f"bad array index {index!r:.40}")
        return self.arrays[index]

    def mapping(self, node: dict[str, Any], tag: str) -> dict:
        out: dict = {"dict": dict, "odict": OrderedDict, "counter": Counter}[tag]()
        for pair in _as_list(node["items"]):
            k, v = _as_list(pair)
            out[self.decode(k)] = self.decode(v)
        if tag == "odict" and "metadata" in node:
            out._metadata = self.decode(node["metadata"])  # type: ignore[attr-defined]
        return out

    def tensor(self, node: dict[str, Any]) -> Tensor:
        obj = node["obj"]
        if obj in self.tensors:
            return self.tensors[obj]
        arr = self.array(node["a"])
        _dtype.from_numpy_dtype(arr.dtype)  # raises TypeError for dtypes a tensor cannot have
        t: Tensor = Tensor._wrap(arr)
        requires_grad = bool(node["requires_grad"])
        if node.get("param"):
            t = _as_parameter(t, requires_grad)
        elif requires_grad:
            t.requires_grad_(True)
        self.tensors[obj] = t
        return t


def _as_list(value: Any) -> list:
    if not isinstance(value, list):
        raise ValueError(f"expected a list in the manifest, got {type(value).__name__}")
    return value


def _as_parameter(t: Tensor, requires_grad: bool) -> Tensor:
    """A saved ``engine.nn.Parameter`` comes back as one (a plain tensor if nn is unavailable)."""
    try:
        from .nn.parameter import Parameter
    except ImportError:
        return t.requires_grad_(requires_grad) if requires_grad else t
    return Parameter(t, requires_grad=requires_grad)
