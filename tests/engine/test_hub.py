"""engine.hub never downloads: checkpoints come from torch's hub cache, models from a local
hubconf.py; what needs the network is refused by name."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

import engine


@pytest.fixture
def hub_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "th"))
    monkeypatch.setattr(engine.hub, "_hub_dir", [None])
    return tmp_path / "th" / "hub"


def test_get_dir_is_torchs(hub_dir):
    torch = pytest.importorskip("torch")
    assert engine.hub.get_dir() == torch.hub.get_dir() == str(hub_dir)
    engine.hub.set_dir("~/elsewhere")
    assert engine.hub.get_dir().endswith("/elsewhere")


def test_state_dict_from_the_cache_checked_by_hash(hub_dir):
    torch = pytest.importorskip("torch")
    (hub_dir / "checkpoints").mkdir(parents=True)
    state = {"w": torch.arange(3.0)}
    tmp = hub_dir / "checkpoints" / "tmp.pth"
    torch.save(state, tmp)
    digest = hashlib.sha256(tmp.read_bytes()).hexdigest()
    good = tmp.rename(hub_dir / "checkpoints" / f"net-{digest[:8]}.pth")
    url = f"https://example.org/models/{good.name}"
    got = engine.hub.load_state_dict_from_url(url, check_hash=True)
    np.testing.assert_array_equal(got["w"].numpy(), [0.0, 1.0, 2.0])
    bad = good.rename(hub_dir / "checkpoints" / "net-00000000.pth")
    with pytest.raises(RuntimeError, match='invalid hash value \\(expected "00000000"'):
        engine.hub.load_state_dict_from_url(f"https://example.org/{bad.name}", check_hash=True)


def test_missing_checkpoint_names_url_and_path(hub_dir):
    with pytest.raises(RuntimeError, match=r"https://example.org/x.pth is not in the hub cache .*checkpoints/x.pth"):
        engine.hub.load_state_dict_from_url("https://example.org/x.pth")


def test_local_hubconf(tmp_path):
    (tmp_path / "helper.py").write_text("SIZE = 3\n")
    (tmp_path / "hubconf.py").write_text("from helper import SIZE\nimport engine\n\n"
                                         "def tiny(out=2):\n    return engine.nn.Linear(SIZE, out)\n\nNOT_CALLABLE = 1\n")
    model = engine.hub.load(str(tmp_path), "tiny", out=4, source="local")
    assert model.weight.shape == (4, 3)
    with pytest.raises(RuntimeError, match="Cannot find callable NOT_CALLABLE in hubconf"):
        engine.hub.load(str(tmp_path), "NOT_CALLABLE", source="local")
    with pytest.raises(ValueError, match='Unknown source: "ftp"'):
        engine.hub.load(str(tmp_path), "tiny", source="ftp")


@pytest.mark.parametrize("call, named", [(lambda: engine.hub.load("pytorch/vision", "resnet18"), "load"),
                                         (lambda: engine.hub.list("pytorch/vision"), "list"),
                                         (lambda: engine.hub.help("pytorch/vision", "resnet18"), "help"),
                                         (lambda: engine.hub.download_url_to_file("https://x/y", "y"),
                                          "download_url_to_file")])
def test_network_calls_refused_by_name(call, named):
    with pytest.raises(NotImplementedError, match=rf"torch\.hub\.{named}.* downloads from the network"):
        call()
