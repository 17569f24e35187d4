"""``DistributedSampler`` (torch.utils.data.distributed): each of ``num_replicas`` processes visits
its own ``1/num_replicas`` share of the dataset.

The shuffled order is torch's own: ``randperm(len(dataset))`` from a generator seeded with
``seed + epoch``, reproduced exactly (MT19937 with torch's seeding, torch's swap loop), so a job
mixing engine and torch ranks, or resuming a torch run, visits the same indices. The engine has
no ``distributed`` package: ``num_replicas`` and ``rank`` must be given; leaving them out raises
the error torch raises when no process group has been initialised.
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
    """``torch.randperm(n, generator=torch.Generator().manual_seed(seed)).tolist()``, bit for bit:
    MT19937 seeded with the low 32 bits of ``seed``, then for each ``i`` a swap of ``i`` with
    ``i + draw_i % (n - i)``. The draws are vectorised; the swaps are a sequential loop (each
    depends on the previous ones), about 0.3 s per million indices."""
    if n >= _RANDPERM_32BIT_LIMIT:
        raise ValueError(f"DistributedSampler: shuffling {n} indices in torch's order is not supported "
                         f"(torch draws 64-bit numbers from {_RANDPERM_32BIT_LIMIT} on)")
    bits = np.random.MT19937()
    bits._legacy_seeding(seed & 0xFFFFFFFF)
    steps = np.arange(max(n - 1, 0), dtype=np.int64)
    partner = (bits.random_raw(steps.size).astype(np.int64) % (n - steps) + steps).tolist()
    order = list(range(n))
    for i, j in enumerate(partner):
        order[i], order[j] = order[j], order[i]
    return order


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
