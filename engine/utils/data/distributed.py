"""``DistributedSampler`` (torch.utils.data.distributed): each of ``num_replicas`` processes visits
its own ``1/num_replicas`` share of the dataset.

The shuffled order is torch's own: ``randperm(len(dataset))`` from a generator seeded with
``seed + epoch``, reproduced exactly (MT19937 with torch's seeding, torch's swaps solved in
vectorised rounds), so a job
mixing engine and torch ranks, or resuming a torch run, visits the same indices. The engine can
start no process group (``engine.distributed``): ``num_replicas`` and ``rank`` must be given;
leaving them out raises the error torch raises when no process group has been initialised.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sized
from typing import TypeVar

import numpy as np

from .sampler import Sampler

__all__ = ["DistributedSampler"]

T_co = TypeVar("T_co", covariant=True)

_NO_PROCESS_GROUP = ("Default process group has not been initialized, please make sure to call "
                     "init_process_group.")
# torch switches to 64-bit draws from here on (randperm_cpu); the engine reproduces the 32-bit path
_RANDPERM_32BIT_LIMIT = (2**32 - 1) // 20


def torch_randperm(n: int, seed: int) -> list[int]:
    """``torch.randperm(n, generator=torch.Generator().manual_seed(seed)).tolist()``, bit for bit.

    torch draws from MT19937 seeded with the low 32 bits of ``seed`` and, for each ``i``, swaps
    positions ``i`` and ``j_i = i + draw_i % (n - i)``. Those swaps depend on each other, so
    instead of replaying them one by one this solves them at once: swap ``i`` finds at ``j_i``
    whatever the previous swap writing ``j_i`` found at its own position (or ``j_i`` itself if
    none did), and what each swap found at its own position follows from the same rule;
    pointer jumping resolves those chains in O(log n) vectorised rounds.
    """
    if n >= _RANDPERM_32BIT_LIMIT:
        raise ValueError(f"DistributedSampler: shuffling {n} indices in torch's order is not supported "
                         f"(torch draws 64-bit numbers from {_RANDPERM_32BIT_LIMIT} on)")
    if n < 2:
        return list(range(n))
    m = n - 1
    bits = np.random.MT19937()
    bits._legacy_seeding(seed & 0xFFFFFFFF)
    i = np.arange(m, dtype=np.int64)
    j = bits.random_raw(m).astype(np.int64) % (n - i) + i
    pred, last_writer = _writers(j, n)
    found = _found_at_own_position(i, pred, last_writer, n)
    out = np.empty(n, np.int64)
    out[:m] = np.where(pred >= 0, found[np.maximum(pred, 0)], j)
    out[m] = found[last_writer[m]] if last_writer[m] >= 0 else m
    return out.tolist()


def _writers(j: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per swap, the previous swap writing the same position ``j`` (-1 if none); per position,
    the last swap writing it (-1 if none)."""
    m = j.size
    order = np.argsort(j * n + np.arange(m))  # swaps grouped by the position they write, in time order
    target = j[order]
    same = target[1:] == target[:-1]
    pred = np.full(m, -1, np.int64)
    pred[order[1:][same]] = order[:-1][same]
    last_writer = np.full(n, -1, np.int64)
    ends = np.append(~same, True)
    last_writer[target[ends]] = order[ends]
    return pred, last_writer


def _found_at_own_position(i: np.ndarray, pred: np.ndarray, last_writer: np.ndarray, n: int) -> np.ndarray:
    """What position ``i`` holds when swap ``i`` runs (``n - 1`` for the untouched last one):
    what the last earlier swap writing ``i`` found at its own position, else ``i``."""
    before = last_writer[: i.size].copy()
    own = before == i  # swap i writing its own position is not earlier than itself
    before[own] = pred[i[own]]
    found = np.arange(n, dtype=np.int64)
    found[: i.size] = np.where(before >= 0, before, i)
    while True:  # pointer jumping: each round halves every remaining chain
        nxt = found[found]
        if np.array_equal(nxt, found):
            return found
        found = nxt


class DistributedSampler(Sampler[T_co]):
    """Visits the indices ``rank, rank + num_replicas, ...`` of a (seeded, per-epoch) shuffled
    or sequential order padded by wrapping around to a multiple of ``num_replicas`` (or cut to
    one, with ``drop_last``): every rank gets ``len(self)`` indices, as in torch. Call
    ``set_epoch(epoch)`` before each epoch for a new shuffle.

    Example::

        >>> s = DistributedSampler(range(10), num_replicas=3, rank=1, shuffle=False)
        >>> list(s)
        [1, 4, 7, 0]
    """

    def __init__(self, dataset: Sized, num_replicas: int | None = None, rank: int | None = None,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False) -> None:
        if num_replicas is None or rank is None:
            raise ValueError(_NO_PROCESS_GROUP)
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        if self.drop_last and len(dataset) % num_replicas != 0:
            self.num_samples = math.ceil((len(dataset) - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(len(dataset) / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self) -> Iterator[T_co]:
        n = len(self.dataset)
        indices = torch_randperm(n, self.seed + self.epoch) if self.shuffle else list(range(n))
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[: self.total_size]
        return iter(indices[self.rank: self.total_size: self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Set the epoch the next shuffle is seeded with (``seed + epoch``)."""
        self.epoch = epoch
