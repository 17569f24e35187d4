"""``engine.set_printoptions`` against torch's: tensor reprs byte for byte (``engine.`` read as
``torch.``) for every option, the profiles and their overrides, over shapes and value kinds."""

from __future__ import annotations

import numpy as np
import pytest

import engine
from engine import _tensor_str

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def _restore_defaults():
    yield
    engine.set_printoptions(profile="default")
    torch.set_printoptions(profile="default")


def _arrays() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {
        "matrix": rng.standard_normal((3, 4)).astype(np.float32),
        "long_vector": (rng.standard_normal(2000) * 100).astype(np.float32),
        "wide_range": np.array([1e-5, 1.0, 123456.0], np.float32),
        "ints": np.arange(30, dtype=np.int64),
        "int_valued_floats": np.array([[1.0, 2.0], [3.0, 4.0]], np.float32),
        "cube": rng.standard_normal((4, 5, 6)).astype(np.float32),
        "nonfinite": np.array([np.nan, -np.inf, 1.5], np.float32),
        "scalar_f64": np.array(3.14159, np.float64),
        "huge": np.array([1e10, 1.0], np.float32),
        "big_matrix": rng.standard_normal((40, 30)).astype(np.float32),
        "uint8": np.arange(12, dtype=np.uint8).reshape(3, 4),
        "bools": np.array([True, False] * 600),
    }


OPTIONS = [
    {},
    {"precision": 2},
    {"precision": 8},
    {"precision": 0},
    {"threshold": 5},
    {"threshold": 5, "edgeitems": 1},
    {"edgeitems": 0, "threshold": 3},
    {"linewidth": 30},
    {"linewidth": 200},
    {"sci_mode": True},
    {"sci_mode": False},
    {"sci_mode": True, "precision": 2},
    {"profile": "short"},
    {"profile": "full"},
    {"profile": "short", "precision": 6},
    {"profile": "full", "edgeitems": 1, "threshold": 10},
]


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "none")
def test_reprs_match_torch(options):
    engine.set_printoptions(**options)
    torch.set_printoptions(**options)
    for name, arr in _arrays().items():
        want = repr(torch.from_numpy(arr.copy()))
        got = repr(engine.from_numpy(arr.copy())).replace("engine.", "torch.")
        assert got == want, f"{name} with {options}:\n{got}\n!=\n{want}"


def test_options_accumulate_and_sci_mode_resets_as_in_torch():
    x = np.array([1e-5, 1.0, 3.25], np.float32)
    for lib in (engine, torch):
        lib.set_printoptions(precision=2, sci_mode=False)
        lib.set_printoptions(linewidth=40)  # precision stays 2, sci_mode goes back to automatic
    got = repr(engine.from_numpy(x.copy())).replace("engine.", "torch.")
    assert got == repr(torch.from_numpy(x.copy()))
    assert _tensor_str.get_printoptions() == torch._tensor_str.get_printoptions()


def test_unknown_profile_changes_nothing_but_sci_mode():
    for lib in (engine, torch):
        lib.set_printoptions(precision=3, sci_mode=True)
        lib.set_printoptions(profile="nonsense")
    assert _tensor_str.get_printoptions() == torch._tensor_str.get_printoptions()
    assert _tensor_str.get_printoptions()["precision"] == 3


def test_suffixes_wrap_at_the_set_linewidth():
    for lib in (engine, torch):
        lib.set_printoptions(linewidth=20)
    e = engine.tensor([1.5, 2.5], dtype=engine.float64, requires_grad=True)
    t = torch.tensor([1.5, 2.5], dtype=torch.float64, requires_grad=True)
    assert repr(e * 2).replace("engine.", "torch.") == repr(t * 2)


def test_empty_tensors_show_size_and_dtype_as_torch():
    for make in (lambda L: L.tensor([], dtype=L.int64), lambda L: L.zeros(0, 2), lambda L: L.zeros(0, dtype=L.float64),
                 lambda L: L.zeros(2, 0, dtype=L.bool)):
        assert repr(make(engine)).replace("engine.", "torch.") == repr(make(torch))
