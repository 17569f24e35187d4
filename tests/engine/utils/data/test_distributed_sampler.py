"""utils.data.DistributedSampler against torch's: the same index lists per rank for every
(num_replicas, rank, shuffle, seed, drop_last, epoch), lengths, use in a DataLoader, and torch's
errors (no process group: the engine has no ``distributed``; invalid rank)."""

from __future__ import annotations

import pytest

import engine
from engine.utils.data import DataLoader, DistributedSampler, TensorDataset
from engine.utils.data.distributed import torch_randperm

torch = pytest.importorskip("torch")
TorchSampler = torch.utils.data.DistributedSampler


@pytest.mark.parametrize("n", [0, 1, 2, 7, 10, 23, 1000])
@pytest.mark.parametrize("replicas", [1, 3, 4])
@pytest.mark.parametrize("shuffle", [True, False])
@pytest.mark.parametrize("drop_last", [True, False])
def test_same_indices_as_torch(n, replicas, shuffle, drop_last):
    data = list(range(n))
    for rank in range(replicas):
        for seed, epoch in [(0, 0), (5, 0), (5, 3)]:
            e = DistributedSampler(data, replicas, rank, shuffle=shuffle, seed=seed, drop_last=drop_last)
            t = TorchSampler(data, replicas, rank, shuffle=shuffle, seed=seed, drop_last=drop_last)
            e.set_epoch(epoch)
            t.set_epoch(epoch)
            assert list(e) == list(t)
            assert len(e) == len(t) and e.total_size == t.total_size and e.num_samples == t.num_samples


def test_ranks_partition_the_padded_epoch_and_epochs_reshuffle():
    data = list(range(11))
    parts = [list(DistributedSampler(data, 4, r, seed=1)) for r in range(4)]
    visited = sum(parts, [])
    assert len(visited) == 12 and set(visited) == set(data)  # 12 slots: one index is visited twice
    assert all(len(p) == 3 for p in parts)
    s = DistributedSampler(data, 4, 0, seed=1)
    first = list(s)
    assert list(s) == first  # same epoch: same order
    s.set_epoch(1)
    assert list(s) != first


def test_torch_randperm_matches_for_large_and_odd_seeds():
    # every small size (self-swaps, chains of swaps through one position) and a few large ones
    for n, seed in [(n, s) for n in range(41) for s in range(3)] + [(5000, 0), (100003, 9), (7, 2**40 + 3), (9, -5)]:
        g = torch.Generator()
        g.manual_seed(seed)
        assert torch_randperm(n, seed) == torch.randperm(n, generator=g).tolist()


def test_in_a_dataloader():
    ds = TensorDataset(engine.arange(10))
    sampler = DistributedSampler(ds, num_replicas=2, rank=1, shuffle=False)
    batches = [b[0].tolist() for b in DataLoader(ds, batch_size=2, sampler=sampler)]
    assert batches == [[1, 3], [5, 7], [9]]


def test_errors_match_torch():
    for kwargs in [{}, {"num_replicas": 2}, {"rank": 0}]:
        with pytest.raises(ValueError) as te:
            TorchSampler(range(10), **kwargs)
        with pytest.raises(ValueError) as ee:
            DistributedSampler(range(10), **kwargs)
        assert str(ee.value) == str(te.value)
        assert "init_process_group" in str(ee.value)
    for rank in (2, -1):
        with pytest.raises(ValueError) as te:
            TorchSampler(range(10), 2, rank)
        with pytest.raises(ValueError) as ee:
            DistributedSampler(range(10), 2, rank)
        assert str(ee.value) == str(te.value) == f"Invalid rank {rank}, rank should be in the interval [0, 1]"


class Huge:
    def __len__(self) -> int:
        return 2**31


def test_shuffling_beyond_torchs_32bit_path_is_refused():
    s = DistributedSampler(Huge(), 2, 0)
    assert len(s) == 2**30
    with pytest.raises(ValueError, match="shuffling 2147483648 indices in torch's order is not supported"):
        iter(s)
