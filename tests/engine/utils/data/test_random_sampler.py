"""RandomSampler draws lazily, in torch's chunks: ``randint(high=n, size=(32,))`` per 32 indices
with replacement (the "infinite loader" of minGPT and makemore: ``num_samples=int(1e10)``), one
``randperm(n)`` per pass without. The engine's random stream is not torch's (NumPy's PCG64, not
MT19937), so the check against torch is structural: in both libraries the sampler gives exactly
what those calls give on a generator with the same seed."""

from __future__ import annotations

import itertools
import tracemalloc

import numpy as np
import pytest

import engine
from engine.utils.data import BatchSampler, DataLoader, RandomSampler, TensorDataset

LIBS = ["engine", "torch"]


def lib_of(name):
    return engine if name == "engine" else pytest.importorskip("torch")


def _data(lib, n):
    return lib.utils.data.TensorDataset(lib.arange(n))


@pytest.mark.parametrize("name", LIBS)
@pytest.mark.parametrize("num_samples", [1, 31, 32, 33, 100, 128])
def test_replacement_draws_randint_in_chunks_of_32(name, num_samples):
    lib = lib_of(name)
    sampler = lib.utils.data.RandomSampler(_data(lib, 10), replacement=True, num_samples=num_samples,
                                           generator=lib.Generator().manual_seed(7))
    g = lib.Generator().manual_seed(7)
    want = []
    for _ in range(num_samples // 32):
        want += lib.randint(high=10, size=(32,), dtype=lib.int64, generator=g).tolist()
    want += lib.randint(high=10, size=(num_samples % 32,), dtype=lib.int64, generator=g).tolist()
    assert list(sampler) == want


@pytest.mark.parametrize("name", LIBS)
@pytest.mark.parametrize("num_samples", [4, 10, 25])
def test_without_replacement_draws_one_randperm_per_pass(name, num_samples):
    lib = lib_of(name)
    sampler = lib.utils.data.RandomSampler(_data(lib, 10), num_samples=num_samples,
                                           generator=lib.Generator().manual_seed(3))
    g = lib.Generator().manual_seed(3)
    want = []
    for _ in range(num_samples // 10):
        want += lib.randperm(10, generator=g).tolist()
    want += lib.randperm(10, generator=g).tolist()[: num_samples % 10]
    assert list(sampler) == want


@pytest.mark.parametrize("name", LIBS)
def test_generator_advances_by_what_was_drawn(name):
    """Taking 40 indices of an endless sampler draws two chunks of 32, no more: the generator
    then continues where a torch generator would."""
    lib = lib_of(name)
    g = lib.Generator().manual_seed(11)
    sampler = lib.utils.data.RandomSampler(_data(lib, 5), replacement=True, num_samples=int(1e10), generator=g)
    list(itertools.islice(iter(sampler), 40))
    ref = lib.Generator().manual_seed(11)
    lib.randint(high=5, size=(32,), generator=ref)
    lib.randint(high=5, size=(32,), generator=ref)
    assert lib.rand(3, generator=g).tolist() == lib.rand(3, generator=ref).tolist()
    assert len(sampler) == int(1e10)


def test_infinite_sampler_holds_a_chunk_not_the_epoch():
    """minGPT's loader: ``RandomSampler(replacement=True, num_samples=int(1e10))`` in a DataLoader."""
    data = TensorDataset(engine.arange(100).float())
    loader = DataLoader(data, batch_size=8,
                        sampler=RandomSampler(data, replacement=True, num_samples=int(1e10)))
    tracemalloc.start()
    try:
        batches = list(itertools.islice(iter(loader), 50))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000
    assert all(b[0].shape == (8,) for b in batches)
    assert all(0 <= v < 100 for b in batches for v in b[0].tolist())


@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("num_samples", [7, 64, 100])
def test_array_batches_equal_the_iterated_order(drop_last, num_samples):
    """The DataLoader's array path gives the batches that iterating the sampler gives."""
    data = TensorDataset(engine.arange(10))
    for replacement in (True, False):
        sampler = RandomSampler(data, replacement=replacement, num_samples=num_samples,
                                generator=engine.Generator().manual_seed(5))
        batches = BatchSampler(sampler, 6, drop_last)
        arrays = [b.tolist() for b in batches._array_batches()]
        sampler.generator = engine.Generator().manual_seed(5)
        flat = list(sampler)
        stop = len(flat) - len(flat) % 6 if drop_last else len(flat)
        assert arrays == [flat[i:i + 6] for i in range(0, stop, 6)]
        assert len(arrays) == len(batches)


def test_global_seed_reproduces_the_epoch():
    data = TensorDataset(engine.arange(50))
    engine.manual_seed(0)
    first = list(RandomSampler(data, replacement=True, num_samples=70))
    engine.manual_seed(0)
    assert list(RandomSampler(data, replacement=True, num_samples=70)) == first
    assert np.isin(first, np.arange(50)).all()
