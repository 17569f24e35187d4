"""engine.random (seeding, state, fork_rng) and engine.version, as torch.random / torch.version."""

from __future__ import annotations

import pytest

import engine


def test_fork_rng_restores_the_state_like_torch():
    torch = pytest.importorskip("torch")
    for lib in (engine, torch):
        lib.random.manual_seed(3)
        with lib.random.fork_rng():
            inside = lib.rand(4)
        after = lib.rand(4)
        assert lib.equal(inside, after)  # the block's draws did not advance the stream
        lib.manual_seed(3)
        with lib.random.fork_rng(enabled=False):
            lib.rand(4)
        assert not lib.equal(lib.rand(4), after)  # disabled: the block's draws count


def test_fork_rng_restores_on_error():
    engine.manual_seed(1)
    expected = engine.rand(2)
    engine.manual_seed(1)
    with pytest.raises(ValueError, match="inside"), engine.random.fork_rng():
        engine.rand(5)
        raise ValueError("inside")
    assert engine.equal(engine.rand(2), expected)


def test_random_module_names_as_torch():
    torch = pytest.importorskip("torch")
    for name in ("manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state", "fork_rng",
                 "default_generator", "Generator"):
        assert hasattr(torch.random, name) and hasattr(engine.random, name), name
    assert engine.random.manual_seed(5).initial_seed() == torch.random.manual_seed(5).initial_seed() == 5


def test_version_as_torch_cpu_build():
    torch = pytest.importorskip("torch")
    for name in ("cuda", "hip", "debug"):
        assert getattr(engine.version, name) == getattr(torch.version, name), name
    assert engine.version.__version__ == engine.__version__
