"""The engine's random numbers: one global NumPy generator, seeded by ``manual_seed``.
(torch's random streams are not reproduced; seeding gives the engine's own reproducibility.)"""

from __future__ import annotations

import numpy as np

# The names this module adds to torch's top-level namespace (engine/__init__.py star-imports
# them: this list is the one place they are named).
__all__ = ["Generator", "get_rng_state", "initial_seed", "manual_seed", "seed", "set_rng_state"]


class Generator:
    """A seedable source of random numbers (``engine.Generator().manual_seed(0)``)."""

    def __init__(self, device: str = "cpu") -> None:
        self._seed = 67280421310721
        self.rng = np.random.default_rng(self._seed)

    def manual_seed(self, seed: int) -> Generator:
        self._seed = int(seed)
        self.rng = np.random.default_rng(self._seed)
        return self

    def initial_seed(self) -> int:
        return self._seed

    def seed(self) -> int:
        return self.manual_seed(int(np.random.SeedSequence().entropy % (2**63))).initial_seed()

    def get_state(self) -> dict:
        return self.rng.bit_generator.state

    def set_state(self, state: dict) -> Generator:
        self.rng.bit_generator.state = state
        return self


default_generator = Generator()


def manual_seed(seed: int) -> Generator:
    """Seed the global generator; returns it."""
    return default_generator.manual_seed(seed)


def initial_seed() -> int:
    return default_generator.initial_seed()


def seed() -> int:
    return default_generator.seed()


def get_rng_state() -> dict:
    return default_generator.get_state()


def set_rng_state(state: dict) -> None:
    default_generator.set_state(state)


def _rng(generator: Generator | None) -> np.random.Generator:
    return (generator or default_generator).rng


def uniform_array(shape, low, high, dtype, generator=None) -> np.ndarray:
    dt = np.dtype(dtype)
    draw_dt = dt if dt in (np.float32, np.float64) else np.float64
    out = _rng(generator).random(tuple(shape), dtype=draw_dt)
    if low != 0 or high != 1:
        out = out * (high - low) + low
    return out.astype(dt, copy=False)


def normal_array(shape, mean, std, dtype, generator=None) -> np.ndarray:
    dt = np.dtype(dtype)
    draw_dt = dt if dt in (np.float32, np.float64) else np.float64
    out = _rng(generator).standard_normal(tuple(shape), dtype=draw_dt)
    if std != 1:
        out *= std
    if mean != 0:
        out += mean
    return out.astype(dt, copy=False)


def integers_array(low, high, shape, dtype, generator=None) -> np.ndarray:
    return _rng(generator).integers(low, high, size=tuple(shape)).astype(dtype, copy=False)


def permutation(n: int, generator=None) -> np.ndarray:
    return _rng(generator).permutation(n).astype(np.int64)
