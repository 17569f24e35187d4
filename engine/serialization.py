"""``engine.save`` / ``engine.load``: state_dicts on disk, in torch's checkpoint format, with
torch's ``weights_only`` rules (nothing from a file is ever imported, constructed or called
except the few rebuild functions listed below, all of them engine's own code).

**torch's format** (what ``engine.save`` writes, and ``engine.load`` reads, whether torch or
engine wrote it): a zip holding ``<archive>/data.pkl`` (a protocol-2 pickle), one
``<archive>/data/<key>`` entry per storage (raw little-endian bytes), ``<archive>/byteorder``
and ``<archive>/version``. ``engine.save`` writes that pickle itself, opcode by opcode, using
only the globals ``torch.load(weights_only=True)`` allows (``collections.OrderedDict``,
``collections.Counter``, ``torch._utils._rebuild_tensor_v2``, ``torch._utils._rebuild_parameter``,
``torch.Size``, ``torch.<dtype>``, ``torch.<Type>Storage``, ``_codecs.encode`` for bytes), so
torch loads the file with ``weights_only=True``. ``engine.load`` reads ``data.pkl`` with its own
opcode interpreter (``_TorchUnpickler``): every GLOBAL is looked up in a fixed table of engine
functions (``_TORCH_GLOBALS``) and anything else (``posix.system``, ``builtins.eval``, a class to
BUILD, an INST/OBJ/NEWOBJ/EXT opcode) is a ``LoadError`` naming the file and the global, raised
before anything runs. Tensors share storage as in torch (views, tied weights, storage offsets);
a Parameter comes back as an ``engine.nn.Parameter`` (what torch's weights_only load gives is a
``torch.nn.Parameter``). No bfloat16 (engine has no such dtype: ``LoadError``), no torch legacy
(non-zip) files.

**engine's own format** (still read; still written for objects holding NumPy arrays or NumPy
scalars, which torch's weights_only loader refuses) is a zip archive (what ``np.savez`` writes) holding:

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
import reprlib
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


def _refuse_complex(np_dtype: np.dtype, where: str) -> None:
    """Complex tensors (engine.fft's results) are not saved or loaded yet: a clear error, not a
    file other tools would misread."""
    if np_dtype.kind == "c":
        raise TypeError(f"engine.save/load do not support complex dtypes yet ({np_dtype} at {where})")


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
        self.numpy = False  # holds NumPy arrays or scalars: torch's weights_only loader refuses those

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
            self.numpy = True
            return {"t": "npscalar", "a": self.array(np.asarray(obj), where)}
        if type(obj) is int:
            return obj
        if type(obj) is float:
            return obj if math.isfinite(obj) else {"t": "float", "v": repr(obj)}
        if isinstance(obj, Tensor):
            return self.tensor(obj, where)
        if type(obj) is np.ndarray:
            self.numpy = True
            return {"t": "ndarray", "a": self.array(obj, where)}
        if type(obj) is bytes:
            return {"t": "bytes", "a": self.array(np.frombuffer(obj, dtype=np.uint8), where)}
        if isinstance(obj, _dtype.dtype):
            _refuse_complex(obj.np, where)
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
        _refuse_complex(t._data.dtype, where)
        if id(t) not in self._tensor_index:
            self._tensor_index[id(t)] = len(self._tensor_index)
            self._keepalive.append(t)
        kind = type(t)
        is_param = kind.__name__ == "Parameter" and kind.__module__.startswith("engine.")
        return {"t": "tensor", "a": self.array(t._data, where), "obj": self._tensor_index[id(t)],
                "requires_grad": bool(t.requires_grad), "param": is_param}


def save(obj: Any, f: FileLike, pickle_module: Any = None, pickle_protocol: Any = None,
         _use_new_zipfile_serialization: bool = True, _disable_byteorder_record: bool = False) -> None:
    """Save ``obj`` (typically a state_dict) to a path or a writable binary file object, in
    torch's checkpoint format: ``torch.load(path, weights_only=True)`` reads it (an object
    holding NumPy arrays or scalars, which torch's weights_only loader refuses, is written in
    engine's own format instead; ``engine.load`` reads both).

    The pickle-related arguments exist for torch compatibility and are ignored: engine writes
    its fixed, minimal pickle itself. Raises ``TypeError`` (before anything is written) for a value it cannot store,
    naming where in ``obj`` it is.

    Example::

        >>> engine.save(model.state_dict(), "model.pt")
        >>> model.load_state_dict(engine.load("model.pt"))
    """
    _save(obj, f, torch_format=True)


def _save(obj: Any, f: FileLike, torch_format: bool) -> None:
    """``save``; ``torch_format=False`` writes engine's own format (kept readable, and written
    for objects holding NumPy values)."""
    enc = _Encoder()
    root = enc.encode(obj, "obj")  # checks every value (TypeError naming where) before writing
    if torch_format and not enc.numpy:
        data = _TorchPickler().dumps(obj)
        if isinstance(f, str | os.PathLike):
            with open(f, "wb") as fh:
                data.write(fh)
        else:
            data.write(f)
        return
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
    """Load a checkpoint written by ``torch.save`` (its default zip format) or ``engine.save``
    from a path or a readable binary file object.

    Nothing in the file is executed: torch checkpoints are read under torch's ``weights_only``
    rules, whatever ``weights_only`` says (tensors come back as engine tensors on the CPU, a
    saved Parameter as an ``engine.nn.Parameter``). ``map_location`` may name the CPU (the
    only device); ``mmap`` is accepted and ignored (data is read into memory).

    Raises:
        FileNotFoundError: the path does not exist.
        LoadError: the file is neither (a plain pickle, torch's legacy non-zip format, text,
            random bytes), is corrupt or truncated, or its pickle names a global that torch's
            weights_only loader refuses (``os.system``, ``builtins.eval``...) or a dtype engine
            lacks (bfloat16). The message names the file (and the global).
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
            pkl_name = _torch_pickle_name(zf)
            if pkl_name is not None and MANIFEST not in zf.namelist():
                return _load_torch(zf, pkl_name, name, size)
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
        raise _error(name, "it is a pickle stream (a plain pickle, or torch's legacy non-zip format, which "
                           "engine does not read: re-save it with torch.save's default zip format)")
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
            found = _dtype._by_name(node["name"])
            _refuse_complex(found.np, "a dtype")
            return found
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
        _refuse_complex(arr.dtype, "a tensor")
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
        from .nn.parameter import Parameter  # engine.nn imports serialization (Module.state_dict): a cycle at import
    except ImportError:
        return t.requires_grad_(requires_grad) if requires_grad else t
    return Parameter(t, requires_grad=requires_grad)


# --- torch's checkpoint format ------------------------------------------------------------------

# engine dtype name <-> torch's legacy storage class name (what torch.save pickles as the storage type)
_STORAGE_NAMES = {"float32": "FloatStorage", "float64": "DoubleStorage", "float16": "HalfStorage",
                  "int64": "LongStorage", "int32": "IntStorage", "int16": "ShortStorage",
                  "int8": "CharStorage", "uint8": "ByteStorage", "bool": "BoolStorage"}
# torch dtypes and storages engine has no dtype for: named in the LoadError
_UNSUPPORTED_TORCH_DTYPES = ("bfloat16", "complex32", "complex64", "complex128", "cfloat", "cdouble", "chalf",
                             "float8_e4m3fn", "float8_e5m2", "uint16", "uint32", "uint64", "qint8", "quint8",
                             "qint32", "quint4x2", "BFloat16Storage", "ComplexFloatStorage",
                             "ComplexDoubleStorage", "QInt8Storage", "QUInt8Storage", "QInt32Storage")
_TORCH_VERSION_RECORD = b"3\n"  # the version torch.save writes


class _TorchPickleData:
    """A pickle plus the storages it refers to, ready to be written as torch's zip."""

    def __init__(self, pickle_bytes: bytes, storages: list[np.ndarray]) -> None:
        self.pickle_bytes, self.storages = pickle_bytes, storages

    def write(self, fh: IO[bytes]) -> None:
        with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
            zf.writestr("archive/data.pkl", self.pickle_bytes)
            zf.writestr("archive/byteorder", b"little")
            for key, storage in enumerate(self.storages):
                with zf.open(f"archive/data/{key}", "w", force_zip64=storage.nbytes > 2**31) as out:
                    out.write(memoryview(np.ascontiguousarray(storage).astype(storage.dtype.newbyteorder("<"),
                                                                              copy=False)).cast("B"))
            zf.writestr("archive/version", _TORCH_VERSION_RECORD)


class _TorchPickler:
    """Writes the protocol-2 pickle ``torch.save`` would write for a state_dict-like object,
    opcode by opcode (no ``pickle`` module: it would import torch to check the globals).

    Tensors become ``_rebuild_tensor_v2(storage, offset, size, stride, requires_grad, {})``
    over a storage per distinct underlying buffer: tensors whose arrays are views of one
    contiguous base array (tied weights, slices, transposes) share it, as in torch; other
    arrays (negative strides, a different dtype than their base) are written as their own copy.
    Values are already checked by ``_Encoder``: only the types it accepts (minus NumPy) get here.
    """

    def __init__(self) -> None:
        self.out = bytearray(b"\x80\x02")  # PROTO 2
        self.storages: list[np.ndarray] = []
        self._storage_keys: dict[int, int] = {}  # id(base array) -> storage key
        self._memo: dict[int, int] = {}  # id(Tensor) -> memo index: one object saved twice loads as one
        self._keepalive: list[Any] = []

    def dumps(self, obj: Any) -> _TorchPickleData:
        self.save(obj)
        self.out += b"."  # STOP
        return _TorchPickleData(bytes(self.out), self.storages)

    def glob(self, module: str, name: str) -> None:
        self.out += b"c" + module.encode() + b"\n" + name.encode() + b"\n"

    def save(self, obj: Any) -> None:
        out = self.out
        if obj is None:
            out += b"N"
        elif obj is True or obj is False:
            out += b"\x88" if obj else b"\x89"
        elif type(obj) is int:
            if 0 <= obj < 256:
                out += b"K" + bytes([obj])
            elif 0 <= obj < 65536:
                out += b"M" + struct.pack("<H", obj)
            elif -(2**31) <= obj < 2**31:
                out += b"J" + struct.pack("<i", obj)
            else:
                from pickle import encode_long  # pure function: bytes of a long
                data = encode_long(obj)
                out += (b"\x8a" + bytes([len(data)]) if len(data) < 256 else b"\x8b" + struct.pack("<i", len(data)))
                out += data
        elif type(obj) is float:
            out += b"G" + struct.pack(">d", obj)
        elif type(obj) is str:
            data = obj.encode("utf-8", "surrogatepass")
            out += b"X" + struct.pack("<I", len(data)) + data
        elif type(obj) is bytes:  # what pickle protocol 2 does: _codecs.encode(latin-1 text, 'latin1')
            self.glob("_codecs", "encode")
            self.save((obj.decode("latin-1"), "latin1"))
            out += b"R"
        elif isinstance(obj, Tensor):
            self.tensor(obj)
        elif isinstance(obj, _dtype.dtype):
            _refuse_complex(obj.np, "a dtype")
            self.glob("torch", obj.name)
        elif type(obj) is Size:
            self.glob("torch", "Size")
            self.save((tuple(obj),))
            out += b"R"
        elif type(obj) is tuple:
            if not obj:
                out += b")"
            elif len(obj) <= 3:
                for v in obj:
                    self.save(v)
                out += {1: b"\x85", 2: b"\x86", 3: b"\x87"}[len(obj)]
            else:
                out += b"("
                for v in obj:
                    self.save(v)
                out += b"t"
        elif type(obj) is list:
            out += b"]"
            if obj:
                out += b"("
                for v in obj:
                    self.save(v)
                out += b"e"  # APPENDS
        elif type(obj) in (dict, OrderedDict, Counter):
            self.mapping(obj)
        else:  # unreachable: _Encoder has checked every value
            raise TypeError(f"engine.save cannot store {type(obj).__name__}")

    def mapping(self, obj: dict) -> None:
        if type(obj) is dict:
            self.out += b"}"
        else:
            self.glob("collections", type(obj).__name__)
            self.out += b")R"
        if obj:
            self.out += b"("
            for k, v in obj.items():
                self.save(k)
                self.save(v)
            self.out += b"u"  # SETITEMS
        metadata = getattr(obj, "_metadata", None)
        if type(obj) is OrderedDict and metadata is not None:
            self.save({"_metadata": metadata})
            self.out += b"b"  # BUILD: torch's weights_only loader allows it on an OrderedDict

    def tensor(self, t: Tensor) -> None:
        _refuse_complex(t._data.dtype, "a tensor")
        if id(t) in self._memo:
            self.out += b"j" + struct.pack("<I", self._memo[id(t)])  # LONG_BINGET
            return
        kind = type(t)
        is_param = kind.__name__ == "Parameter" and kind.__module__.startswith("engine.")
        if is_param:
            self.glob("torch._utils", "_rebuild_parameter")
        self.glob("torch._utils", "_rebuild_tensor_v2")
        key, numel, offset, strides = self.storage(t._data)
        self.out += b"(("  # MARK for the args; MARK for the persistent id
        self.save("storage")  # ('storage', storage type, key, location, numel)
        self.glob("torch", _STORAGE_NAMES[t._data.dtype.name])
        self.save(str(key))
        self.save("cpu")
        self.save(numel)
        self.out += b"tQ"  # TUPLE, BINPERSID: the storage
        self.save(offset)
        self.save(tuple(int(n) for n in t._data.shape))
        self.save(strides)
        self.save(bool(t.requires_grad) and not is_param)
        self.glob("collections", "OrderedDict")
        self.out += b")RtR"  # the (empty) backward hooks; TUPLE of the args; REDUCE
        if is_param:
            self.save(bool(t.requires_grad))
            self.glob("collections", "OrderedDict")
            self.out += b")R\x87R"  # (tensor, requires_grad, hooks) -> _rebuild_parameter
        self._memo[id(t)] = len(self._memo)
        self._keepalive.append(t)
        self.out += b"r" + struct.pack("<I", self._memo[id(t)])  # LONG_BINPUT

    def storage(self, arr: np.ndarray) -> tuple[int, int, int, tuple[int, ...]]:
        """(storage key, storage numel, offset, strides in elements) for ``arr``: a view of a
        contiguous base array of its dtype shares the base's storage."""
        base = arr
        while isinstance(base.base, np.ndarray):
            base = base.base
        item = arr.dtype.itemsize
        shareable = (base.dtype == arr.dtype and base.flags.c_contiguous and arr.size > 0
                     and all(s >= 0 and s % item == 0 for s in arr.strides))
        if shareable:
            start = arr.__array_interface__["data"][0] - base.__array_interface__["data"][0]
            extent = start + sum((n - 1) * s for n, s in zip(arr.shape, arr.strides)) + item
            shareable = start >= 0 and start % item == 0 and extent <= base.nbytes
        if not shareable:
            base, start = np.ascontiguousarray(arr), 0  # its own storage (a copy unless contiguous)
            strides = tuple(s // item for s in base.strides)
        else:
            strides = tuple(s // item for s in arr.strides)
        if id(base) not in self._storage_keys:
            self._storage_keys[id(base)] = len(self.storages)
            self.storages.append(base.reshape(-1))
            self._keepalive.append(base)
        return self._storage_keys[id(base)], base.size, start // item, strides


def _short(obj: Any) -> str:
    """A bounded repr of a value from a file (for messages: never a huge or deep repr)."""
    return reprlib.repr(obj)


class _Refused(Exception):
    """The pickle asks for something torch's weights_only rules (and engine) do not allow."""


class _StorageType:
    """What a ``torch.<Type>Storage`` global stands for: only a dtype."""

    def __init__(self, dtype: _dtype.dtype) -> None:
        self.dtype = dtype


def _rebuild_tensor_v2(storage: Any, storage_offset: Any, size: Any, stride: Any, requires_grad: Any = False,
                       backward_hooks: Any = None, metadata: Any = None) -> Tensor:
    """torch._utils._rebuild_tensor_v2: a view of ``storage`` (a 1-D array), bounds-checked."""
    if not isinstance(storage, np.ndarray) or storage.ndim != 1:
        raise _Refused(f"_rebuild_tensor_v2 got {type(storage).__name__} instead of a storage")
    ints = (storage_offset, *_int_tuple(size, "size"), *_int_tuple(stride, "stride"))
    if len(size) != len(stride) or any(type(v) is not int or v < 0 for v in ints):
        raise _Refused(f"_rebuild_tensor_v2 got size {_short(size)} and stride {_short(stride)}")
    numel = math.prod(size)
    if numel == 0:
        arr = storage[:0].reshape(size)
    else:
        end = storage_offset + sum((n - 1) * s for n, s in zip(size, stride)) + 1
        if end > storage.shape[0]:
            raise _Refused(f"a tensor of size {list(size)}, stride {list(stride)} and offset {storage_offset} "
                           f"reaches element {end - 1:,} of a storage of {storage.shape[0]:,} elements")
        contiguous = all(s == math.prod(size[i + 1:]) for i, s in enumerate(stride) if size[i] > 1)
        if contiguous:
            arr = storage[storage_offset:storage_offset + numel].reshape(size)
        else:
            item = storage.dtype.itemsize  # a view whose .base is the storage (shared on save, too)
            arr = np.ndarray(size, storage.dtype, buffer=storage, offset=storage_offset * item,
                             strides=[s * item for s in stride])
    t = Tensor._wrap(arr)
    if requires_grad is True:
        t.requires_grad_(True)
    return t


def _int_tuple(value: Any, what: str) -> tuple:
    if type(value) not in (tuple, Size):
        raise _Refused(f"_rebuild_tensor_v2 got a {what} of type {type(value).__name__}")
    return tuple(value)


def _rebuild_parameter(data: Any, requires_grad: Any, backward_hooks: Any) -> Tensor:
    if not isinstance(data, Tensor):
        raise _Refused(f"_rebuild_parameter got {type(data).__name__} instead of a tensor")
    return _as_parameter(data.detach() if data.requires_grad else data, bool(requires_grad))


def _rebuild_parameter_with_state(data: Any, requires_grad: Any, backward_hooks: Any, state: Any) -> Tensor:
    if state:  # torch would setattr these on the Parameter: engine refuses attributes from a file
        raise _Refused("a Parameter with Python attributes (_rebuild_parameter_with_state)")
    return _rebuild_parameter(data, requires_grad, backward_hooks)


def _codecs_encode(text: Any, encoding: Any = "utf-8") -> bytes:
    """How protocol 2 pickles bytes: ``_codecs.encode(latin-1 text, 'latin1')``."""
    if type(text) is not str or encoding not in ("latin1", "latin-1"):
        raise _Refused(f"_codecs.encode with {type(text).__name__}, {_short(encoding)}")
    return text.encode("latin-1")


def _torch_globals() -> dict[str, Any]:
    """Every global a torch checkpoint may name, each mapped to engine's own stand-in."""
    table: dict[str, Any] = {
        "collections.OrderedDict": OrderedDict,
        "collections.Counter": Counter,
        "torch.Size": Size,
        "torch._utils._rebuild_tensor_v2": _rebuild_tensor_v2,
        "torch._utils._rebuild_parameter": _rebuild_parameter,
        "torch._utils._rebuild_parameter_with_state": _rebuild_parameter_with_state,
        "_codecs.encode": _codecs_encode,
    }
    for d in _dtype._ALL:
        table[f"torch.{d.name}"] = d
        table[f"torch.{_STORAGE_NAMES[d.name]}"] = _StorageType(d)
    return table


_TORCH_GLOBALS = _torch_globals()
_TORCH_CALLABLES = tuple(v for v in _TORCH_GLOBALS.values() if callable(v) and not isinstance(v, _dtype.dtype))


class _TorchUnpickler:
    """Reads ``data.pkl`` the way torch's weights_only unpickler does: a fixed set of opcodes
    (the ones protocol 2 writes for state_dicts, plus FRAME/MEMOIZE/STACK_GLOBAL/
    SHORT_BINUNICODE of later protocols) on a stack; every global goes through ``_TORCH_GLOBALS``;
    REDUCE calls only those functions; BUILD only sets attributes of an OrderedDict (a Module
    state_dict's ``_metadata``). Anything else raises ``_Refused`` before it happens."""

    def __init__(self, data: bytes, persistent_load: Any) -> None:
        self.f = io.BytesIO(data)
        self.persistent_load = persistent_load
        self.memo: dict[int, Any] = {}

    def read(self, n: int) -> bytes:
        data = self.f.read(n)
        if len(data) != n:
            raise EOFError("the pickle ends early")
        return data

    def find_class(self, module: str, name: str, opcode: str = "GLOBAL") -> Any:
        full = f"{module}.{name}"
        if full in _TORCH_GLOBALS:
            return _TORCH_GLOBALS[full]
        if module == "torch" and name in _UNSUPPORTED_TORCH_DTYPES:
            raise _Refused(f"it holds {full} data, a dtype engine does not have")
        raise _Refused(f"it names the forbidden global {full!r} ({opcode}); torch.load(weights_only=True) "
                       "refuses it too")

    def load(self) -> Any:  # noqa: C901 - one branch per opcode, as in pickle itself
        stack: list[Any] = []
        marks: list[list[Any]] = []
        read, unpack = self.read, struct.unpack

        def pop_mark() -> list[Any]:
            nonlocal stack
            items, stack = stack, marks.pop()
            return items

        while True:
            op = read(1)
            if op == b"\x80":  # PROTO
                read(1)
            elif op == b"\x95":  # FRAME
                read(8)
            elif op in (b"c", b"i"):  # GLOBAL; INST names a class to instantiate: refused outright
                module, name = (self.f.readline(256)[:-1].decode("utf-8") for _ in range(2))
                if op == b"i":
                    raise _Refused(f"it uses the forbidden opcode INST on {module}.{name!r}")
                stack.append(self.find_class(module, name))
            elif op == b"\x93":  # STACK_GLOBAL
                name, module = stack.pop(), stack.pop()
                if type(name) is not str or type(module) is not str:
                    raise _Refused("STACK_GLOBAL with non-string names")
                stack.append(self.find_class(module, name, "STACK_GLOBAL"))
            elif op == b"R":  # REDUCE
                args = stack.pop()
                func = stack[-1]
                if not any(func is f for f in _TORCH_CALLABLES) or type(args) is not tuple:
                    raise _Refused(f"it calls {_short(func)}, which is not a tensor rebuild function")
                stack[-1] = func(*args)
            elif op == b"b":  # BUILD
                state = stack.pop()
                inst = stack[-1]
                if type(inst) is not OrderedDict or type(state) is not dict or \
                        not all(type(k) is str for k in state):
                    raise _Refused(f"it sets the state of a {type(inst).__name__} (BUILD), which only an "
                                   "OrderedDict's attributes may be")
                inst.__dict__.update(state)
            elif op == b"Q":  # BINPERSID
                stack.append(self.persistent_load(stack.pop()))
            elif op == b"(":  # MARK
                marks.append(stack)
                stack = []
            elif op == b"t":
                items = pop_mark()
                stack.append(tuple(items))
            elif op in (b"\x85", b"\x86", b"\x87"):  # TUPLE1..3
                n = op[0] - 0x84
                if len(stack) < n:
                    raise IndexError("stack underflow")
                stack[-n:] = [tuple(stack[-n:])]
            elif op == b")":
                stack.append(())
            elif op == b"]":
                stack.append([])
            elif op == b"}":
                stack.append({})
            elif op in (b"a", b"e"):  # APPEND, APPENDS
                items = [stack.pop()] if op == b"a" else pop_mark()
                if type(stack[-1]) is not list:
                    raise _Refused(f"it appends to a {type(stack[-1]).__name__}")
                stack[-1].extend(items)
            elif op in (b"s", b"u"):  # SETITEM, SETITEMS
                items = stack[-2:] if op == b"s" else pop_mark()
                if op == b"s":
                    del stack[-2:]
                target = stack[-1]
                if type(target) not in (dict, OrderedDict, Counter) or len(items) % 2:
                    raise _Refused(f"it sets items of a {type(target).__name__}")
                for i in range(0, len(items), 2):
                    target[items[i]] = items[i + 1]
            elif op == b"N":
                stack.append(None)
            elif op in (b"\x88", b"\x89"):
                stack.append(op == b"\x88")
            elif op == b"K":
                stack.append(read(1)[0])
            elif op == b"M":
                stack.append(unpack("<H", read(2))[0])
            elif op == b"J":
                stack.append(unpack("<i", read(4))[0])
            elif op in (b"\x8a", b"\x8b"):  # LONG1, LONG4
                n = read(1)[0] if op == b"\x8a" else unpack("<i", read(4))[0]
                if n < 0:
                    raise ValueError("negative LONG4 length")
                stack.append(int.from_bytes(read(n), "little", signed=True))
            elif op == b"G":
                stack.append(unpack(">d", read(8))[0])
            elif op in (b"X", b"\x8c"):  # BINUNICODE, SHORT_BINUNICODE
                n = unpack("<I", read(4))[0] if op == b"X" else read(1)[0]
                stack.append(str(read(n), "utf-8", "surrogatepass"))
            elif op in (b"q", b"r", b"\x94"):  # BINPUT, LONG_BINPUT, MEMOIZE
                idx = read(1)[0] if op == b"q" else unpack("<I", read(4))[0] if op == b"r" else len(self.memo)
                self.memo[idx] = stack[-1]
            elif op in (b"h", b"j"):  # BINGET, LONG_BINGET
                stack.append(self.memo[read(1)[0] if op == b"h" else unpack("<I", read(4))[0]])
            elif op == b".":
                return stack.pop()
            else:
                raise _Refused(f"it uses the pickle opcode {_opcode_name(op)}, which weights_only loading refuses")


def _opcode_name(op: bytes) -> str:
    import pickletools  # only for the name in a message

    for info in pickletools.opcodes:
        if info.code.encode("latin-1") == op:
            return f"{info.name} ({op!r})"
    return repr(op)


def _torch_error(name: str, reason: str) -> LoadError:
    return LoadError(
        f"engine.load: {name} is not a loadable torch.save checkpoint: {reason}. engine.load follows "
        "torch.load(weights_only=True): it rebuilds tensors, Parameters, dicts, OrderedDicts, lists, tuples, "
        "torch.Size, dtypes and Python scalars, and never imports or calls anything else."
    )


def _torch_pickle_name(zf: zipfile.ZipFile) -> str | None:
    """The ``<archive>/data.pkl`` entry of a torch.save zip, or None."""
    found = [n for n in zf.namelist() if n.endswith("/data.pkl") and n.count("/") == 1]
    return found[0] if len(found) == 1 else None


def _load_torch(zf: zipfile.ZipFile, pkl_name: str, name: str, size: int) -> Any:
    prefix = pkl_name[: -len("data.pkl")]
    names = set(zf.namelist())
    byteorder = "little"
    if prefix + "byteorder" in names:
        info = zf.getinfo(prefix + "byteorder")
        _check_entry(info, size, name)
        byteorder = zf.read(info).decode("ascii")
        if byteorder not in ("little", "big"):
            raise _torch_error(name, f"its byteorder record says {_short(byteorder)}")
    storages: dict[str, np.ndarray] = {}

    def persistent_load(pid: Any) -> np.ndarray:
        if type(pid) is not tuple or len(pid) != 5 or pid[0] != "storage":
            raise _Refused(f"a persistent id {_short(pid)} that is not a storage")
        _, kind, key, _location, numel = pid
        if not isinstance(kind, _StorageType) or type(key) is not str or type(numel) is not int or numel < 0:
            raise _Refused(f"a malformed storage id {_short(pid)}")
        if key in storages:
            if storages[key].dtype != kind.dtype.np:
                raise _Refused(f"storage {key} used as {storages[key].dtype} and {kind.dtype.name}")
            return storages[key]
        storages[key] = _read_storage(zf, f"{prefix}data/{key}", kind.dtype, numel, byteorder, name, size)
        return storages[key]

    info = zf.getinfo(pkl_name)
    _check_entry(info, size, name)
    try:
        return _TorchUnpickler(zf.read(info), persistent_load).load()
    except _Refused as e:
        raise _torch_error(name, str(e)) from None
    except LoadError:
        raise
    except _READ_ERRORS as e:
        raise _torch_error(name, f"it is corrupt, truncated or malformed ({type(e).__name__}: {e})") from None


def _read_storage(zf: zipfile.ZipFile, entry: str, dtype: _dtype.dtype, numel: int, byteorder: str,
                  name: str, size: int) -> np.ndarray:
    """The storage's elements, after checking the entry holds exactly what the pickle declares
    (so a declared numel of 10**12 is an error, not an allocation)."""
    info = zf.getinfo(entry)
    _check_entry(info, size, name)
    declared = numel * dtype.itemsize
    if info.file_size != declared:
        raise _Refused(f"{entry} declares {numel:,} elements of {dtype.name} ({_bytes(declared)}) but holds "
                       f"{_bytes(info.file_size)}")
    arr = np.empty(numel, dtype.np.newbyteorder("<" if byteorder == "little" else ">"))
    view = memoryview(arr).cast("B")
    with zf.open(info) as fh:
        got = 0
        while got < declared:
            n = fh.readinto(view[got:])
            if not n:
                raise EOFError(f"{entry} ends early")
            got += n
    return arr if arr.dtype.isnative else arr.astype(dtype.np)
