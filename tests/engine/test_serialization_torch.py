"""torch.save checkpoints in engine.load (with torch's weights_only rules) and engine.save files
in torch.load(weights_only=True): state_dicts, optimizer state_dicts (training continues on the
other side with the same numbers), dtypes, views and shared storages; hostile pickles refused
before anything runs; corrupt or lying torch zips refused naming the file."""

from __future__ import annotations

import io
import math
import os
import pickle
import struct
import zipfile
from collections import Counter, OrderedDict

import numpy as np
import pytest

import engine
from engine.serialization import LoadError

# --- helpers -------------------------------------------------------------------------------------


def torch_bytes(torch, obj) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def engine_bytes(obj) -> bytes:
    buf = io.BytesIO()
    engine.save(obj, buf)
    return buf.getvalue()


def torch_zip(pkl: bytes, storages: dict | None = None, byteorder: bytes | None = b"little") -> bytes:
    """A zip laid out as torch.save lays it out, around a hand-written data.pkl."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        zf.writestr("archive/data.pkl", pkl)
        if byteorder is not None:
            zf.writestr("archive/byteorder", byteorder)
        for key, content in (storages or {}).items():
            zf.writestr(f"archive/data/{key}", content)
        zf.writestr("archive/version", b"3\n")
    return out.getvalue()


def rewrite(data: bytes, edit: dict) -> bytes:
    """``data`` (a zip) with entries replaced by ``edit[name]`` (bytes, or None to drop them)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w") as dst:
        for name in src.namelist():
            content = edit.get(name, src.read(name))
            if content is not None:
                dst.writestr(name, content)
    return out.getvalue()


def entry(data: bytes, suffix: str) -> str:
    return next(n for n in zipfile.ZipFile(io.BytesIO(data)).namelist() if n.endswith(suffix))


def tensor_pickle(storage_numel: int, offset: int, size: tuple, stride: tuple, storage_type=b"FloatStorage") -> bytes:
    """A protocol-2 data.pkl rebuilding one tensor, written opcode by opcode."""
    def ints(values):
        return b"(" + b"".join(b"J" + struct.pack("<i", v) for v in values) + b"t"
    return (b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n((X\x07\x00\x00\x00storagectorch\n" + storage_type +
            b"\nX\x01\x00\x00\x000X\x03\x00\x00\x00cpuJ" + struct.pack("<i", storage_numel) + b"tQJ" +
            struct.pack("<i", offset) + ints(size) + ints(stride) +
            b"\x89ccollections\nOrderedDict\n)RtR.")


def load_error(data: bytes, tmp_path, name="bad.pt") -> str:
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(LoadError) as info:
        engine.load(path)
    message = str(info.value)
    assert repr(str(path)) in message
    return message


class TorchNet:
    """The same small net (conv, linear) in either library."""

    @staticmethod
    def build(lib):
        lib.manual_seed(0)
        return lib.nn.Sequential(lib.nn.Conv2d(2, 3, 3, padding=1), lib.nn.ReLU(), lib.nn.Flatten(),
                                 lib.nn.Linear(3 * 5 * 5, 4))


# --- torch -> engine ------------------------------------------------------------------------------


def test_torch_model_state_dict_loads_into_an_engine_model_with_the_same_outputs(torch, tmp_path):
    t_model = TorchNet.build(torch)
    torch.save(t_model.state_dict(), tmp_path / "model.pt")
    sd = engine.load(tmp_path / "model.pt")
    assert type(sd) is OrderedDict and list(sd) == list(t_model.state_dict())
    assert sd._metadata == t_model.state_dict()._metadata
    assert all(type(v) is engine.Tensor for v in sd.values())
    e_model = TorchNet.build(engine)
    e_model.load_state_dict(sd)
    x = np.random.default_rng(0).standard_normal((2, 2, 5, 5)).astype(np.float32)
    want = t_model(torch.from_numpy(x)).detach().numpy()
    assert np.allclose(e_model(engine.from_numpy(x)).detach().numpy(), want, rtol=1e-5, atol=1e-6)


def test_engine_model_state_dict_loads_in_torch_weights_only_with_the_same_outputs(torch, tmp_path):
    e_model = TorchNet.build(engine)
    engine.save(e_model.state_dict(), tmp_path / "model.pt")
    assert torch.serialization.get_unsafe_globals_in_checkpoint(tmp_path / "model.pt") == []
    sd = torch.load(tmp_path / "model.pt", weights_only=True)
    assert list(sd) == list(e_model.state_dict()) and sd._metadata == e_model.state_dict()._metadata
    t_model = TorchNet.build(torch)
    t_model.load_state_dict(sd)
    x = np.random.default_rng(1).standard_normal((2, 2, 5, 5)).astype(np.float32)
    want = e_model(engine.from_numpy(x)).detach().numpy()
    assert np.allclose(t_model(torch.from_numpy(x)).detach().numpy(), want, rtol=1e-5, atol=1e-6)


def train(lib, model, opt, steps, seed):
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        x = lib.from_numpy(rng.standard_normal((4, 2, 5, 5)).astype(np.float32))
        y = lib.from_numpy(rng.integers(0, 4, 4))
        opt.zero_grad()
        lib.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()


def params_of(model):
    return [p.detach().numpy().copy() for p in model.parameters()]


@pytest.mark.parametrize("first", ["torch", "engine"])
def test_adamw_checkpoint_continues_training_on_the_other_side(torch, tmp_path, first):
    libs = {"torch": torch, "engine": engine}
    second = "engine" if first == "torch" else "torch"
    a, b = libs[first], libs[second]
    model_a = TorchNet.build(a)
    opt_a = a.optim.AdamW(model_a.parameters(), lr=0.01, weight_decay=0.1)
    train(a, model_a, opt_a, 3, seed=0)
    a.save({"model": model_a.state_dict(), "optim": opt_a.state_dict()}, tmp_path / "ckpt.pt")
    ckpt = b.load(tmp_path / "ckpt.pt", weights_only=True)
    model_b = TorchNet.build(b)
    opt_b = b.optim.AdamW(model_b.parameters(), lr=0.5, weight_decay=0.0)  # overwritten by the state
    model_b.load_state_dict(ckpt["model"])
    opt_b.load_state_dict(ckpt["optim"])
    assert opt_b.param_groups[0]["lr"] == 0.01 and opt_b.param_groups[0]["weight_decay"] == 0.1
    train(a, model_a, opt_a, 3, seed=1)  # both sides continue on the same data
    train(b, model_b, opt_b, 3, seed=1)
    for pa, pb in zip(params_of(model_a), params_of(model_b)):
        assert np.allclose(pa, pb, rtol=1e-4, atol=1e-5)


DTYPES = ["float32", "float64", "float16", "int64", "int32", "int16", "int8", "uint8", "bool"]


@pytest.mark.parametrize("name", DTYPES)
def test_every_dtype_both_ways(torch, name):
    rng = np.random.default_rng(0)
    data = (rng.standard_normal((3, 4)) * 50).astype(name) if name.startswith("float") \
        else rng.integers(0, 2 if name == "bool" else 100, size=(3, 4)).astype(name)
    back = engine.load(io.BytesIO(torch_bytes(torch, {"x": torch.from_numpy(data)})))["x"]
    assert back.dtype is getattr(engine, name) and np.array_equal(back.numpy(), data)
    there = torch.load(io.BytesIO(engine_bytes({"x": engine.from_numpy(data)})), weights_only=True)["x"]
    assert there.dtype is getattr(torch, name) and np.array_equal(there.numpy(), data)


def test_views_offsets_and_shared_storages_are_kept_both_ways(torch):
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    obj = {"base": base, "rows": base[1:3], "t": base.t(), "col": base[:, 2], "step": base[::2, 1::3], "same": base}
    back = engine.load(io.BytesIO(torch_bytes(torch, obj)))
    for k, v in obj.items():
        assert back[k].shape == tuple(v.shape) and np.array_equal(back[k].numpy(), v.numpy()), k
        assert np.shares_memory(back[k].numpy(), back["base"].numpy()), k
    assert back["same"] is back["base"]
    back["base"].numpy()[1, 0] = -1.0  # one storage, as in torch
    assert back["rows"].numpy()[0, 0] == -1.0 and back["t"].numpy()[0, 1] == -1.0
    there = torch.load(io.BytesIO(engine_bytes(back)), weights_only=True)
    for k in obj:
        assert np.array_equal(there[k].numpy(), back[k].numpy()), k
        assert there[k].untyped_storage().data_ptr() == there["base"].untyped_storage().data_ptr(), k
    assert there["step"].stride() == (12, 3) and there["rows"].storage_offset() == 6
    assert there["same"] is there["base"]


def test_parameters_and_requires_grad_match_what_torch_weights_only_gives(torch):
    obj = {"p": torch.nn.Parameter(torch.ones(2)), "frozen": torch.nn.Parameter(torch.ones(2), requires_grad=False),
           "leaf": torch.ones(3, requires_grad=True), "plain": torch.zeros(1)}
    data = torch_bytes(torch, obj)
    want = torch.load(io.BytesIO(data), weights_only=True)
    got = engine.load(io.BytesIO(data))
    for k in obj:
        assert type(want[k]).__name__ == type(got[k]).__name__, k  # Parameter / Tensor
        assert got[k].requires_grad == want[k].requires_grad, k
    assert got["leaf"].is_leaf and got["p"].is_leaf
    again = torch.load(io.BytesIO(engine_bytes(got)), weights_only=True)
    for k in obj:
        assert type(again[k]) is type(want[k]) and again[k].requires_grad == want[k].requires_grad, k


def test_python_values_both_ways(torch):
    obj = OrderedDict([
        ("none", None), ("bools", [True, False]), ("ints", (0, 255, 256, 65536, -1, 2**31, -(2**70))),
        ("floats", [0.1, -0.0, math.inf, -math.inf]), ("str", "héllo \u2603"), ("bytes", b"\x00\xffab"),
        ("empty", ((), [], {}, "")), ("nested", {1: {"a": [1, (2, 3, 4, 5)]}, (2, "k"): None, 3.5: False}),
        ("counter", Counter({3: 2, 10: 1})),
    ])
    want = torch.load(io.BytesIO(torch_bytes(torch, obj)), weights_only=True)
    got = engine.load(io.BytesIO(torch_bytes(torch, obj)))
    assert got == want == obj and type(got["counter"]) is Counter
    assert math.copysign(1, got["floats"][1]) == -1
    assert torch.load(io.BytesIO(engine_bytes(obj)), weights_only=True) == obj
    # torch.save writes b"" as builtins.bytes(), which its own weights_only loader refuses; engine
    # writes it as _codecs.encode('', 'latin1'), which both read
    assert torch.load(io.BytesIO(engine_bytes({"b": b""})), weights_only=True) == {"b": b""}
    sizes = {"size": torch.Size([2, 3]), "dtype": torch.float64, "nan": math.nan}
    back = engine.load(io.BytesIO(torch_bytes(torch, sizes)))
    assert type(back["size"]) is engine.Size and back["size"] == (2, 3) and back["dtype"] is engine.float64
    assert math.isnan(back["nan"])
    there = torch.load(io.BytesIO(engine_bytes(back)), weights_only=True)
    assert type(there["size"]) is torch.Size and there["dtype"] is torch.float64


def test_scalar_empty_and_non_contiguous_engine_tensors_load_in_torch(torch):
    obj = {"scalar": engine.tensor(2.5), "empty": engine.zeros(0, 3), "flip": engine.from_numpy(np.arange(4.0)[::-1]),
           "big": engine.ones(300, 300)}
    there = torch.load(io.BytesIO(engine_bytes(obj)), weights_only=True)
    for k, v in obj.items():
        assert tuple(there[k].shape) == tuple(v.shape) and np.array_equal(there[k].numpy(), v.numpy()), k


def test_numpy_values_are_saved_in_engines_own_format_which_engine_still_reads():
    data = engine_bytes({"arr": np.arange(3), "w": engine.ones(2)})
    assert "engine_manifest.json" in zipfile.ZipFile(io.BytesIO(data)).namelist()
    back = engine.load(io.BytesIO(data))
    assert np.array_equal(back["arr"], np.arange(3)) and back["w"].tolist() == [1.0, 1.0]


def test_bfloat16_is_refused_naming_the_dtype(torch, tmp_path):
    message = load_error(torch_bytes(torch, {"h": torch.ones(2, dtype=torch.bfloat16)}), tmp_path)
    assert "torch.BFloat16Storage" in message and "a dtype engine does not have" in message


# --- hostile pickles -------------------------------------------------------------------------


class ShellOut:
    """Unpickling this runs a shell command (creating a marker file): proof something executed."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def hostile_payloads(marker) -> dict[str, tuple[bytes, str]]:
    """name -> (data.pkl bytes, what the error must name)."""
    cmd = f"open({str(marker)!r}, 'w')".encode()
    touch = f"touch {marker}".encode()
    return {
        "os.system via REDUCE": (pickle.dumps(ShellOut(marker), protocol=2), "'posix.system'"),
        "os.system via STACK_GLOBAL": (pickle.dumps(ShellOut(marker), protocol=4), "'posix.system'"),
        "GLOBAL builtins.eval": (b"\x80\x02cbuiltins\neval\nX" + struct.pack("<I", len(cmd)) + cmd + b"\x85R.",
                                 "'builtins.eval'"),
        "BUILD on an unexpected class": (b"\x80\x02]}X\x04\x00\x00\x00evilK\x01sb.", "state of a list (BUILD)"),
        "INST opcode": (b"(X" + struct.pack("<I", len(touch)) + touch + b"ios\nsystem\n.", "INST on os.'system'"),
        "REDUCE of an allowed non-function": (b"\x80\x02ctorch\nfloat32\n)R.", "not a tensor rebuild function"),
        "persistent id that is not a storage": (b"\x80\x02X\x03\x00\x00\x00abcQ.", "not a storage"),
    }


@pytest.mark.parametrize("case", list(hostile_payloads("m")))
def test_hostile_pickles_are_refused_before_anything_runs(tmp_path, case):
    marker = tmp_path / "pwned"
    pkl, named = hostile_payloads(marker)[case]
    message = load_error(torch_zip(pkl), tmp_path)
    assert named in message and "not a loadable torch.save checkpoint" in message
    assert not marker.exists()


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")
def test_torch_refuses_the_same_payloads(torch, tmp_path):  # the oracle agrees they are hostile
    marker = tmp_path / "pwned"
    for case, (pkl, _) in hostile_payloads(marker).items():
        path = tmp_path / "h.pt"
        path.write_bytes(torch_zip(pkl))
        with pytest.raises((pickle.UnpicklingError, TypeError)):  # TypeError: "torch.dtype is not callable"
            torch.load(path, weights_only=True)
        assert not marker.exists(), case


def test_a_torch_save_of_a_hostile_object_is_refused_naming_the_global(torch, tmp_path):
    marker = tmp_path / "pwned"
    data = torch_bytes(torch, {"w": torch.ones(2), "payload": ShellOut(marker)})
    message = load_error(data, tmp_path)
    assert "forbidden global 'posix.system'" in message
    assert not marker.exists()


# --- corrupt, truncated or lying torch zips ------------------------------------------------------


def test_truncated_and_corrupt_torch_zips_raise_load_error_naming_the_file(torch, tmp_path):
    good = torch_bytes(torch, {"w": torch.arange(12, dtype=torch.float32)})
    pkl, storage = entry(good, "data.pkl"), entry(good, "data/0")
    flipped = bytearray(good)
    flipped[good.find(struct.pack("<f", 5.0))] ^= 0x5A
    cases = {
        "truncated half": good[: len(good) // 2], "truncated end": good[:-1],
        "flipped data byte": bytes(flipped), "missing storage": rewrite(good, {storage: None}),
        "pickle cut short": rewrite(good, {pkl: zipfile.ZipFile(io.BytesIO(good)).read(pkl)[:-3]}),
        "bad byteorder": rewrite(good, {entry(good, "byteorder"): b"middle"}),
    }
    for case, data in cases.items():
        message = load_error(data, tmp_path, f"{case.replace(' ', '_')}.pt")
        assert "torch.save checkpoint" in message or "engine.save file" in message, case


def test_a_storage_holding_fewer_bytes_than_declared_is_refused(tmp_path):
    pkl = tensor_pickle(10**9, 0, (10**9,), (1,))  # declares 4 GB; the entry holds 8 bytes
    message = load_error(torch_zip(pkl, {"0": b"\x00" * 8}), tmp_path)
    assert "archive/data/0 declares 1,000,000,000 elements of float32 (4,000,000,000 bytes) but holds 8 bytes" \
        in message


def test_a_view_reaching_past_its_storage_is_refused(tmp_path):
    pkl = tensor_pickle(2, 1, (3,), (1,))
    message = load_error(torch_zip(pkl, {"0": b"\x00" * 8}), tmp_path)
    assert "reaches element 3 of a storage of 2 elements" in message


def test_a_hand_written_tensor_pickle_loads_with_its_strides(tmp_path):
    pkl = tensor_pickle(6, 1, (2, 2), (1, 2))
    data = np.arange(6, dtype="<f4").tobytes()
    got = engine.load(io.BytesIO(torch_zip(pkl, {"0": data})))
    assert got.tolist() == [[1.0, 3.0], [2.0, 4.0]]
    big = torch_zip(pkl, {"0": np.arange(6, dtype=">f4").tobytes()}, byteorder=b"big")
    assert engine.load(io.BytesIO(big)).tolist() == [[1.0, 3.0], [2.0, 4.0]]


def test_torch_legacy_non_zip_files_are_refused_with_a_hint(torch, tmp_path):
    path = tmp_path / "legacy.pt"
    torch.save({"w": torch.ones(2)}, path, _use_new_zipfile_serialization=False)
    with pytest.raises(LoadError, match="legacy non-zip format"):
        engine.load(path)
