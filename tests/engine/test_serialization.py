"""engine.save / engine.load: round trips of state_dict-like objects (dtypes, shapes, nesting,
metadata, sharing), paths and file objects, and one clear LoadError for anything else."""

from __future__ import annotations

import io
import json
import math
import pickle
import zipfile
from collections import Counter, OrderedDict

import numpy as np
import pytest

import engine
from engine.serialization import MANIFEST, LoadError, _save

DTYPES = [engine.float16, engine.float32, engine.float64, engine.int8, engine.uint8, engine.int16, engine.int32,
          engine.int64, engine.bool]


def roundtrip(obj, tmp_path=None):
    buf = io.BytesIO()
    engine.save(obj, buf)
    buf.seek(0)
    return engine.load(buf)


def same_tensor(a, b):
    return type(a) is type(b) and a.dtype == b.dtype and a.shape == b.shape and \
        a.requires_grad == b.requires_grad and np.array_equal(a.detach().numpy(), b.detach().numpy())


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 3, 4), (3, 0, 2)])
def test_tensor_round_trip_keeps_dtype_shape_and_values(dtype, shape):
    rng = np.random.default_rng(0)
    data = (rng.standard_normal(shape) * 50).astype(dtype.np) if dtype.is_floating_point \
        else rng.integers(0, 2 if dtype is engine.bool else 100, size=shape).astype(dtype.np)
    t = engine.from_numpy(np.asarray(data))
    back = roundtrip(t)
    assert same_tensor(back, t)


def test_special_values_non_contiguous_and_grad_flags():
    t = engine.tensor([[math.nan, math.inf], [-math.inf, -0.0]]).t()  # a transposed view
    back = roundtrip(t)
    assert back.shape == (2, 2) and np.array_equal(back.numpy(), t.numpy(), equal_nan=True)
    assert np.signbit(back.numpy()[1, 1])
    leaf = engine.ones(3, requires_grad=True)
    assert same_tensor(roundtrip(leaf), leaf) and roundtrip(leaf).is_leaf
    p = engine.nn.Parameter(engine.ones(2))
    frozen = engine.nn.Parameter(engine.ones(2), requires_grad=False)
    back_p, back_frozen = roundtrip([p, frozen])
    assert same_tensor(back_p, p) and same_tensor(back_frozen, frozen)


def test_nested_python_values_round_trip_with_their_types():
    obj = {
        "none": None, "t": True, "f": False, "int": -(2**70), "float": 0.1, "nan": math.nan, "inf": -math.inf,
        "str": "héllo \u2603", "bytes": b"\x00\xffab", "tuple": (1, (2.5, "x"), []), "list": [[], [None]],
        1: "int key", (2, "k"): "tuple key", 3.5: "float key", None: "none key", False: "bool key",
        "odict": OrderedDict([("b", 1), ("a", 2)]), "counter": Counter({3: 2, 10: 1}),
        "np": np.arange(6, dtype=np.complex64).reshape(2, 3), "np_scalar": np.float64(2.5), "np_int": np.int16(-3),
        "dtype": engine.float64, "size": engine.Size([2, 3]), "empty": {}, "strings": np.array(["a", "bc"]),
    }
    back = roundtrip(obj)
    assert list(back) == list(obj)
    for key, value in obj.items():
        got = back[key]
        assert type(got) is type(value), key
        if isinstance(value, np.ndarray):
            assert got.dtype == value.dtype and np.array_equal(got, value)
        elif isinstance(value, float) and math.isnan(value):
            assert math.isnan(got)
        else:
            assert got == value, key
    assert list(back["odict"]) == ["b", "a"] and back["tuple"][1] == (2.5, "x")
    assert type(back["np_scalar"]) is np.float64 and type(back["np_int"]) is np.int16


def test_module_state_dict_with_metadata_round_trips(tmp_path):
    model = engine.nn.Sequential(engine.nn.Linear(3, 4), engine.nn.Linear(4, 2))
    sd = model.state_dict()
    engine.save(sd, tmp_path / "model.pt")
    back = engine.load(tmp_path / "model.pt")
    assert type(back) is OrderedDict and list(back) == list(sd)
    assert back._metadata == sd._metadata and type(back._metadata) is type(sd._metadata)
    for k in sd:
        assert same_tensor(back[k], sd[k])
    fresh = engine.nn.Sequential(engine.nn.Linear(3, 4), engine.nn.Linear(4, 2))
    fresh.load_state_dict(back)
    x = engine.randn(5, 3)
    assert np.array_equal(fresh(x).detach().numpy(), model(x).detach().numpy())


def test_optimizer_state_dict_round_trips(tmp_path):
    params = [engine.ones(3, requires_grad=True), engine.zeros(2, 2, requires_grad=True)]
    opt = engine.optim.Adam([{"params": params[:1]}, {"params": params[1:], "lr": 0.5}], amsgrad=True)
    for p in params:
        p.grad = engine.ones_like(p)
    opt.step()
    sd = opt.state_dict()
    path = str(tmp_path / "opt.pt")
    engine.save(sd, path)
    back = engine.load(path)
    assert back["param_groups"] == sd["param_groups"]
    assert isinstance(back["param_groups"][0]["betas"], tuple)
    assert list(back["state"]) == [0, 1]
    for i in back["state"]:
        assert list(back["state"][i]) == list(sd["state"][i])
        for k in sd["state"][i]:
            assert same_tensor(back["state"][i][k], sd["state"][i][k])


def test_sharing_same_object_and_same_array():
    w = engine.randn(2, 2)
    tied = {"a": w, "b": w, "c": w.detach(), "d": w.t()}
    back = roundtrip(tied)
    assert back["a"] is back["b"]  # one object saved twice: one object loaded
    assert back["c"] is not back["a"] and np.shares_memory(back["c"].numpy(), back["a"].numpy())
    # other views share the storage too, as in torch's format (engine's own format copied them)
    assert np.shares_memory(back["d"].numpy(), back["a"].numpy())
    assert np.array_equal(back["d"].numpy(), w.t().numpy())


def test_paths_file_objects_and_non_seekable_streams(tmp_path):
    obj = {"x": engine.arange(4)}
    engine.save(obj, tmp_path / "a.pt")
    engine.save(obj, str(tmp_path / "b.pt"))
    with open(tmp_path / "c.pt", "wb") as f:
        engine.save(obj, f)
    assert (tmp_path / "a.pt").read_bytes() == (tmp_path / "b.pt").read_bytes() == (tmp_path / "c.pt").read_bytes()
    with open(tmp_path / "c.pt", "rb") as f:
        assert engine.load(f)["x"].tolist() == [0, 1, 2, 3]

    class Stream(io.RawIOBase):  # readable, not seekable (a pipe)
        def __init__(self, data):
            self.inner = io.BytesIO(data)

        def readable(self):
            return True

        def readinto(self, b):
            return self.inner.readinto(b)

    assert engine.load(Stream((tmp_path / "a.pt").read_bytes()), map_location="cpu")["x"].tolist() == [0, 1, 2, 3]
    with pytest.raises(RuntimeError, match="cuda"):
        engine.load(tmp_path / "a.pt", map_location="cuda")
    with pytest.raises(FileNotFoundError):
        engine.load(tmp_path / "missing.pt")


def test_saving_a_module_or_optimizer_object_points_to_state_dict(tmp_path):
    model = engine.nn.Linear(2, 2)
    for obj in (model, engine.optim.SGD(model.parameters(), lr=0.1)):
        with pytest.raises(TypeError, match=r"save its state_dict\(\) instead"):
            engine.save({"thing": obj}, tmp_path / "m.pt")
    assert not (tmp_path / "m.pt").exists()


@pytest.mark.parametrize(("value", "where"), [
    (lambda x: x, "obj"), ({"a": [1, object()]}, "obj['a'][1]"), ({"s": {1, 2}}, "obj['s']"),
    ({"k": {engine.zeros(1): 1}}, "obj['k']"), ({"arr": np.array([object()])}, "obj['arr']"),
    ({"sub": type("D", (dict,), {})()}, "obj['sub']"), ({"c": 1j}, "obj['c']"),
])
def test_unsupported_values_raise_type_error_naming_where_and_write_nothing(tmp_path, value, where):
    path = tmp_path / "x.pt"
    with pytest.raises(TypeError) as info:
        engine.save(value, path)
    assert where in str(info.value)
    assert not path.exists()


# --- malformed files ----------------------------------------------------------------------


def good_bytes() -> bytes:
    """An intact file in engine's own format (engine.save writes torch's format now; engine.load
    still reads this one: the cases below check that reader)."""
    buf = io.BytesIO()
    _save({"w": engine.arange(12, dtype=engine.float32).reshape(3, 4), "n": 3}, buf, torch_format=False)
    return buf.getvalue()


def rezip(data: bytes, manifest_edit=None, drop=(), extra=None) -> bytes:
    """Rewrite an engine.save zip with an edited manifest / without some entries / with extras."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w") as dst:
        for name in src.namelist():
            if name in drop:
                continue
            content = src.read(name)
            if name == MANIFEST and manifest_edit is not None:
                content = manifest_edit(content)
            dst.writestr(name, content)
        for name, content in (extra or {}).items():
            dst.writestr(name, content)
    return out.getvalue()


def edit_json(fn):
    def edit(content: bytes) -> bytes:
        m = json.loads(content)
        fn(m)
        return json.dumps(m).encode()

    return edit


def npy_bytes(arr, allow_pickle=False) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, arr, allow_pickle=allow_pickle)
    return buf.getvalue()


MALFORMED = {
    "empty file": lambda: b"",
    "text file": lambda: b"hello, this is a text file\n",
    "random bytes": lambda: bytes(np.random.default_rng(0).integers(0, 256, 300, dtype=np.uint8)),
    "pickle": lambda: pickle.dumps({"w": [1.0, 2.0]}),
    "npy file": lambda: npy_bytes(np.arange(3)),
    "truncated half": lambda: good_bytes()[: len(good_bytes()) // 2],
    "truncated end": lambda: good_bytes()[:-1],
    "truncated to header": lambda: good_bytes()[:30],
    "flipped data byte": lambda: flip(good_bytes(), good_bytes().find(b"\x00\x00\x80\x3f")),
    "flipped manifest byte": lambda: flip(good_bytes(), good_bytes().find(b'"format"') + 3),
    "zip without manifest": lambda: rezip(good_bytes(), drop=(MANIFEST,)),
    "manifest not json": lambda: rezip(good_bytes(), manifest_edit=lambda c: c[:-5]),
    "manifest not utf8": lambda: rezip(good_bytes(), manifest_edit=lambda c: b"\xff\xfe" + c),
    "wrong format": lambda: rezip(good_bytes(), manifest_edit=edit_json(lambda m: m.update(format="other"))),
    "manifest is a list": lambda: rezip(good_bytes(), manifest_edit=lambda c: b"[1, 2]"),
    "future version": lambda: rezip(good_bytes(), manifest_edit=edit_json(lambda m: m.update(version=99))),
    "no root": lambda: rezip(good_bytes(), manifest_edit=edit_json(lambda m: m.pop("root"))),
    "unknown tag": lambda: rezip(good_bytes(), manifest_edit=edit_json(
        lambda m: m.update(root={"t": "function", "name": "os.system"}))),
    "bad array index": lambda: rezip(good_bytes(), manifest_edit=edit_json(
        lambda m: m["root"]["items"][0][1].update(a=7))),
    "array index not int": lambda: rezip(good_bytes(), manifest_edit=edit_json(
        lambda m: m["root"]["items"][0][1].update(a="0"))),
    "shape mismatch": lambda: rezip(good_bytes(), manifest_edit=edit_json(
        lambda m: m["arrays"][0].update(shape=[4, 3]))),
    "missing array entry": lambda: rezip(good_bytes(), drop=("arrays/0.npy",)),
    "items not a list": lambda: rezip(good_bytes(), manifest_edit=edit_json(
        lambda m: m.update(root={"t": "dict", "items": {"a": 1}}))),
    "bad float": lambda: rezip(good_bytes(), manifest_edit=edit_json(
        lambda m: m.update(root={"t": "float", "v": "__import__('os')"}))),
    "unknown dtype": lambda: rezip(good_bytes(), manifest_edit=edit_json(
        lambda m: m.update(root={"t": "dtype", "name": "complex128"}))),
    "complex tensor": lambda: complex_tensor_file(),
    "deep nesting": lambda: rezip(good_bytes(), manifest_edit=lambda c: c.replace(
        b'"root":', b'"root":' + b"[" * 100000 + b"]" * 100000 + b', "x":')),
}


def complex_tensor_file() -> bytes:
    out = io.BytesIO()
    manifest = {"format": "engine.save", "version": 1,
                "arrays": [{"name": "arrays/0.npy", "dtype": "<c8", "shape": [1]}],
                "root": {"t": "tensor", "a": 0, "obj": 0, "requires_grad": False, "param": False}}
    with zipfile.ZipFile(out, "w") as zf:
        zf.writestr("arrays/0.npy", npy_bytes(np.ones(1, np.complex64)))
        zf.writestr(MANIFEST, json.dumps(manifest))
    return out.getvalue()


def flip(data: bytes, index: int) -> bytes:
    assert index > 0
    out = bytearray(data)
    out[index] ^= 0x5A
    return bytes(out)


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_files_raise_one_clear_error_naming_the_file(tmp_path, case):
    path = tmp_path / f"{case.replace(' ', '_')}.pt"
    path.write_bytes(MALFORMED[case]())
    with pytest.raises(LoadError) as info:
        engine.load(path)
    message = str(info.value)
    assert repr(str(path)) in message and "not a valid engine.save file" in message
    assert isinstance(info.value, RuntimeError)
    with open(path, "rb") as f, pytest.raises(LoadError, match="not a valid engine.save file"):
        engine.load(f)


def test_reasons_are_specific():
    def reason(data: bytes) -> str:
        with pytest.raises(LoadError) as info:
            engine.load(io.BytesIO(data))
        return str(info.value)

    assert "the file is empty" in reason(b"")
    assert "pickle stream" in reason(pickle.dumps([1]))
    assert "does not start with a zip header" in reason(b"plain text")
    assert "corrupt, truncated or malformed" in reason(good_bytes()[:-10])
    assert "has no engine_manifest.json" in reason(rezip(good_bytes(), drop=(MANIFEST,)))
    assert "unsupported format version 99" in reason(MALFORMED["future version"]())


def test_torch_checkpoints_load(torch, tmp_path):  # (refused before; the details: test_serialization_torch.py)
    torch.save({"w": torch.ones(2)}, tmp_path / "torch.pt")
    assert engine.load(tmp_path / "torch.pt")["w"].tolist() == [1.0, 1.0]


class _Evil:
    """Unpickling this creates a file: proof that something was executed."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_loading_executes_nothing(tmp_path):
    marker = tmp_path / "pwned"
    evil = str(marker)
    payloads = {
        "raw pickle": pickle.dumps(_Evil(evil)),
        "object array inside an engine zip": rezip(good_bytes(), drop=("arrays/0.npy",), extra={
            "arrays/0.npy": npy_bytes(np.array([_Evil(evil)], dtype=object), allow_pickle=True)}),
        "torch-style zip with data.pkl": zip_with({"archive/data.pkl": pickle.dumps(_Evil(evil))}),
    }
    for name, payload in payloads.items():
        with pytest.raises(LoadError):
            engine.load(io.BytesIO(payload))
        assert not marker.exists(), name


def zip_with(entries: dict) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for name, content in entries.items():
            zf.writestr(name, content)
    return out.getvalue()


def test_a_pickled_tensor_is_refused_by_the_tensor_itself():
    with pytest.raises(TypeError, match="engine.save"):
        pickle.dumps(engine.ones(2))
