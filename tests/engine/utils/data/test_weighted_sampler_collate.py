"""WeightedRandomSampler (torch's checks, its weights tensor, sampling with and without
replacement, DataLoader use), and more DataLoader/collate structure parity with torch."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

import engine
from engine.utils import data as edata
from tests.engine._parity import assert_same_error

from .test_data import plain


def test_weighted_sampler_attributes_match_torch(torch):
    import torch.utils.data as tdata

    for weights in ([0.1, 0.9, 0.0], (1, 2), np.array([0.5, 0.25], np.float32)):
        e, t = edata.WeightedRandomSampler(weights, 7), tdata.WeightedRandomSampler(weights, 7)
        assert e.weights.dtype == engine.float64 and str(t.weights.dtype) == "torch.float64"
        assert e.weights.tolist() == t.weights.tolist()
        assert (len(e), e.num_samples, e.replacement, e.generator) == (len(t), t.num_samples, t.replacement, None)
    w = engine.tensor([1.0, 3.0])
    assert edata.WeightedRandomSampler(w, 2).weights.tolist() == [1.0, 3.0]


def test_weighted_sampler_draws_in_proportion_to_the_weights():
    sampler = edata.WeightedRandomSampler([1.0, 3.0, 0.0, 6.0], 20000, generator=engine.Generator().manual_seed(0))
    draws = np.array(list(sampler))
    assert draws.dtype.kind == "i" and len(draws) == 20000 and all(isinstance(i, int) for i in list(sampler)[:5])
    freq = np.bincount(draws, minlength=4) / len(draws)
    np.testing.assert_allclose(freq, [0.1, 0.3, 0.0, 0.6], atol=0.015)  # ~5 sigma


def test_weighted_sampler_without_replacement_and_determinism():
    gen = engine.Generator().manual_seed(3)
    draws = list(edata.WeightedRandomSampler([5.0, 1.0, 1.0, 1.0], 4, replacement=False, generator=gen))
    assert sorted(draws) == [0, 1, 2, 3]
    one = list(edata.WeightedRandomSampler([1.0] * 50, 10, generator=engine.Generator().manual_seed(7)))
    two = list(edata.WeightedRandomSampler([1.0] * 50, 10, generator=engine.Generator().manual_seed(7)))
    other = list(edata.WeightedRandomSampler([1.0] * 50, 10, generator=engine.Generator().manual_seed(8)))
    assert one == two != other
    engine.manual_seed(0)
    first = list(edata.WeightedRandomSampler([1.0] * 50, 10))
    engine.manual_seed(0)
    assert list(edata.WeightedRandomSampler([1.0] * 50, 10)) == first


def test_weighted_sampler_in_a_dataloader():
    ds = edata.TensorDataset(engine.arange(6), engine.arange(6) * 10)
    sampler = edata.WeightedRandomSampler([0, 0, 1, 0, 0, 1], 9, generator=engine.Generator().manual_seed(0))
    loader = edata.DataLoader(ds, batch_size=4, sampler=sampler)
    batches = list(loader)
    assert len(loader) == 3 and [len(b[0]) for b in batches] == [4, 4, 1]
    for x, y in batches:
        assert set(x.tolist()) <= {2, 5} and (y == x * 10).all()
    batch_sampler = edata.BatchSampler(sampler, 4, drop_last=True)
    assert len(batch_sampler) == 2 and [len(b) for b in batch_sampler] == [4, 4]


WEIGHTED_ERRORS = {
    "zero samples": lambda lib: lib.utils.data.WeightedRandomSampler([1.0], 0),
    "bool samples": lambda lib: lib.utils.data.WeightedRandomSampler([1.0], True),
    "float samples": lambda lib: lib.utils.data.WeightedRandomSampler([1.0], 2.0),
    "replacement not bool": lambda lib: lib.utils.data.WeightedRandomSampler([1.0], 2, replacement=1),
    "2-d weights": lambda lib: lib.utils.data.WeightedRandomSampler([[1.0]], 2),
    "0-d weights": lambda lib: lib.utils.data.WeightedRandomSampler(1.0, 2),
    "too many without replacement": lambda lib: list(lib.utils.data.WeightedRandomSampler([1.0, 1.0], 3, False)),
    "all zero": lambda lib: list(lib.utils.data.WeightedRandomSampler([0.0, 0.0], 3)),
}


@pytest.mark.parametrize("case", list(WEIGHTED_ERRORS))
def test_weighted_sampler_errors_match_torch(torch, case):
    import torch.utils.data  # noqa: F401 - torch.utils.data is imported lazily

    assert_same_error(lambda: WEIGHTED_ERRORS[case](engine), lambda: WEIGHTED_ERRORS[case](torch))


def loader_batches(lib):
    """First batches (and lengths) of loaders over the same data, for structure parity."""
    data = lib.utils.data
    ds = data.TensorDataset(lib.arange(10), lib.arange(10) * 2.0)
    samples = [(i, float(i) / 2, f"s{i}", {"k": [i, i + 1], "flag": i % 2 == 0}) for i in range(5)]
    L = data.DataLoader
    loaders = [
        L(ds, batch_size=4),
        L(ds, batch_size=4, drop_last=True),
        L(ds, batch_size=None),
        L(ds, batch_sampler=data.BatchSampler(range(10), 3, False)),
        L(ds, sampler=[9, 8, 7], batch_size=2),
        L(samples, batch_size=2),
        L(samples, batch_size=3, collate_fn=lambda b: [s[2] for s in b]),
        L(list(range(7)), batch_size=3, shuffle=False),
        L(data.Subset(ds, [1, 3, 5]), batch_size=2),
        L(data.ConcatDataset([ds, ds]), batch_size=8, drop_last=True),
    ]
    return [(len(ld), plain(next(iter(ld)))) for ld in loaders]


def test_loader_structures_and_lengths_match_torch(torch):
    import torch.utils.data  # noqa: F401 - torch.utils.data is imported lazily

    assert loader_batches(engine) == loader_batches(torch)


def test_a_batch_of_tuples_is_a_list_of_stacked_tensors():
    (n, batch) = loader_batches(engine)[0]
    assert n == 3 and batch[0] == "list"
    assert batch[1][0] == ("tensor", "int64", (4,), [0, 1, 2, 3])
    assert batch[1][1] == ("tensor", "float32", (4,), [0.0, 2.0, 4.0, 6.0])


@pytest.mark.parametrize(("lengths", "n", "sizes"), [
    ([0.33, 0.33, 0.34], 10, [4, 3, 3]), ([0.5, 0.5], 11, [6, 5]), ([0.1, 0.9], 3, [1, 2]),
    ([0.0, 1.0], 4, [0, 4]), ([3, 7], 10, [3, 7]),
])
def test_random_split_sizes_match_torch(torch, lengths, n, sizes):
    import torch.utils.data  # noqa: F401 - torch.utils.data is imported lazily

    def split(lib):  # an empty split warns, on both sides
        warns = pytest.warns(UserWarning, match="Length of split at index 0 is 0") if 0 in sizes \
            else contextlib.nullcontext()
        with warns:
            return [len(s) for s in lib.utils.data.random_split(range(n), lengths)]

    assert split(engine) == split(torch) == sizes


def test_random_split_is_a_partition_and_follows_its_generator():
    parts = edata.random_split(range(20), [0.25, 0.25, 0.5], generator=engine.Generator().manual_seed(0))
    assert sorted(i for p in parts for i in p.indices) == list(range(20))
    again = edata.random_split(range(20), [0.25, 0.25, 0.5], generator=engine.Generator().manual_seed(0))
    assert [p.indices for p in parts] == [p.indices for p in again]
