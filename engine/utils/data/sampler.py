"""Samplers: which indices a DataLoader visits, and in which batches (torch.utils.data.sampler).

Besides iterating Python ints as torch's do, the built-in samplers can hand an epoch over as
int64 arrays (``_index_array``; ``RandomSampler`` draws them lazily, ``_index_chunks``);
``BatchSampler._array_batches`` slices them, which is how a DataLoader batches without a Python
loop over items. Random orders come from the engine's generators (seeded by
``engine.manual_seed`` or an ``engine.Generator``), not torch's stream.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence, Sized
from typing import Any, Generic, TypeVar

import numpy as np

from ... import _random
from ..._ops.sampling import multinomial
from ..._tensor import Tensor

__all__ = [
    "BatchSampler", "RandomSampler", "Sampler", "SequentialSampler", "SubsetRandomSampler", "WeightedRandomSampler",
]

T_co = TypeVar("T_co", covariant=True)


class Sampler(Generic[T_co]):
    """Base class: subclasses implement ``__iter__`` (and ``__len__`` for ``len(loader)``)."""

    def __init__(self, data_source: Sized | None = None) -> None:
        pass

    def __iter__(self) -> Iterator[T_co]:
        raise NotImplementedError


class SequentialSampler(Sampler[int]):
    """``0, 1, ..., len(data_source) - 1``."""

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)

    def _index_array(self) -> np.ndarray:
        return np.arange(len(self.data_source), dtype=np.int64)


def _epoch_generator(generator: Any) -> Any:
    """torch draws a fresh seed from the global generator for every epoch when none is given."""
    if generator is not None:
        return generator
    seed = int(_random.default_generator.rng.integers(0, 2**63 - 1))
    return _random.Generator().manual_seed(seed)


class RandomSampler(Sampler[int]):
    """A random permutation of the indices (repeated for ``num_samples > len``), or
    ``num_samples`` draws with replacement.

    Raises:
        TypeError: ``replacement`` is not a bool.
        ValueError: ``num_samples`` is not a positive int.
    """

    def __init__(self, data_source: Sized, replacement: bool = False, num_samples: int | None = None,
                 generator: Any = None) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={self.replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={self.num_samples}")

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def _index_chunks(self) -> Iterator[np.ndarray]:
        """The epoch's indices, drawn lazily as torch's ``__iter__`` draws them: with replacement
        ``randint(high=n, size=(32,))`` at a time (so ``num_samples=int(1e10)``, the "infinite
        loader" idiom, holds 32 indices, not 1e10), else one ``randperm(n)`` per pass. The random
        stream is the engine's (``engine.Generator``), not torch's MT19937, so the numbers differ
        from torch's for the same seed; the draws' sizes and order are torch's."""
        n = len(self.data_source)
        generator = _epoch_generator(self.generator)  # drawn at the first index, as torch's generator does
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield _random.integers_array(0, n, (32,), np.int64, generator)
            yield _random.integers_array(0, n, (self.num_samples % 32,), np.int64, generator)
            return
        for _ in range(self.num_samples // n):
            yield _random.permutation(n, generator)
        yield _random.permutation(n, generator)[: self.num_samples % n]

    def _index_array(self) -> np.ndarray:
        return np.concatenate(list(self._index_chunks()))

    def __iter__(self) -> Iterator[int]:
        for chunk in self._index_chunks():
            yield from chunk.tolist()

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler[int]):
    """The given indices in a random order."""

    def __init__(self, indices: Sequence[int], generator: Any = None) -> None:
        self.indices = indices
        self.generator = generator

    def _index_array(self) -> np.ndarray:
        order = _random.permutation(len(self.indices), self.generator)
        return np.asarray(self.indices, dtype=np.int64)[order]

    def __iter__(self) -> Iterator[int]:
        return iter(self._index_array().tolist())

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler[int]):
    """``num_samples`` indices drawn from ``[0, len(weights))`` with probabilities proportional
    to ``weights`` (the weights need not sum to one), with or without replacement.

    ``weights`` is kept as a float64 tensor, as torch keeps it. Invalid distributions (negative,
    all-zero, or too few categories without replacement) raise ``multinomial``'s errors when
    iterated, as in torch.

    Raises:
        ValueError: ``num_samples`` is not a positive int, ``replacement`` not a bool, or
            ``weights`` not one-dimensional.

    Example::

        >>> sampler = WeightedRandomSampler([0.1, 0.9], num_samples=100)
    """

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True,
                 generator: Any = None) -> None:

        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        data = weights._data if isinstance(weights, Tensor) else weights
        weights_tensor = Tensor._wrap(np.array(data, dtype=np.float64))
        if weights_tensor.ndim != 1:
            raise ValueError(
                f"weights should be a 1d sequence but given weights have shape {tuple(weights_tensor.shape)}"
            )
        self.weights = weights_tensor
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def _index_array(self) -> np.ndarray:

        return multinomial(self.weights, self.num_samples, self.replacement, generator=self.generator)._data

    def __iter__(self) -> Iterator[int]:
        return iter(self._index_array().tolist())

    def __len__(self) -> int:
        return self.num_samples


def _gives_arrays(sampler: Any) -> bool:
    """Built-in samplers (not subclasses, which may change ``__iter__``) can give a whole epoch
    as one array."""
    return type(sampler) in (SequentialSampler, RandomSampler, SubsetRandomSampler, WeightedRandomSampler)


class BatchSampler(Sampler[list[int]]):
    """Groups the indices of ``sampler`` into lists of ``batch_size`` (the last one shorter
    unless ``drop_last``).

    Raises:
        ValueError: ``batch_size`` is not a positive int, or ``drop_last`` is not a bool.
    """

    def __init__(self, sampler: Sampler[int] | Iterable[int], batch_size: int, drop_last: bool) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        if _gives_arrays(self.sampler):
            yield from (b.tolist() for b in self._array_batches())
            return
        sampler_iter = iter(self.sampler)
        if self.drop_last:
            yield from (list(b) for b in zip(*[sampler_iter] * self.batch_size))
            return
        batch = list(itertools.islice(sampler_iter, self.batch_size))
        while batch:
            yield batch
            batch = list(itertools.islice(sampler_iter, self.batch_size))

    def _array_batches(self) -> Iterator[np.ndarray]:
        """The epoch's batches as int64 arrays (needs a sampler with ``_index_array``), taken
        from its chunks as they are drawn when it draws lazily (``_index_chunks``)."""
        chunks = getattr(self.sampler, "_index_chunks", None)
        if chunks is None:
            order = self.sampler._index_array()  # type: ignore[union-attr]
            stop = len(order) - len(order) % self.batch_size if self.drop_last else len(order)
            for start in range(0, stop, self.batch_size):
                yield order[start:start + self.batch_size]
            return
        pending: list[np.ndarray] = []
        held = 0
        for chunk in chunks():
            pending.append(chunk)
            held += len(chunk)
            if held >= self.batch_size:
                order = np.concatenate(pending)
                stop = len(order) - len(order) % self.batch_size
                for start in range(0, stop, self.batch_size):
                    yield order[start:start + self.batch_size]
                pending, held = [order[stop:]], len(order) - stop
        if held and not self.drop_last:
            yield np.concatenate(pending)

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size  # type: ignore[arg-type]
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size  # type: ignore[arg-type]
