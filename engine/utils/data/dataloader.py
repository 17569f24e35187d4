"""``DataLoader``: batches from a dataset, with torch.utils.data.DataLoader's arguments and checks.

Fast path: when the dataset is a ``TensorDataset`` (or a ``Subset`` of one, e.g. from
``random_split``) and the collate function is the default, each batch is one fancy-index per
tensor (``t[batch_indices]``) instead of ``__getitem__`` per item and a stack; the batch is the
same list of tensors default_collate would build. With the built-in samplers the epoch's order
is also produced as one array, so no Python loop runs over the items.

``num_workers > 0`` is accepted but loading runs in the calling process (there are no worker
processes: ``worker_init_fn`` is not called, ``get_worker_info()`` returns None); ``pin_memory``,
``timeout``, ``prefetch_factor``, ``persistent_workers`` and ``multiprocessing_context`` are
accepted for compatibility and have no effect beyond torch's argument checks (and, for
``pin_memory=True``, torch's warning that there is no accelerator to pin memory for).
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, TypeVar

import numpy as np

from ..._tensor import Tensor
from ._collate import default_collate, default_convert
from .dataset import Dataset, IterableDataset, Subset, TensorDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler, _gives_arrays

__all__ = ["DataLoader", "get_worker_info"]

T_co = TypeVar("T_co", covariant=True)


def get_worker_info() -> None:
    """Always None: the engine's DataLoader loads in the calling process."""
    return None


class DataLoader(Generic[T_co]):
    """Iterate over ``dataset`` in (shuffled) batches.

    Args:
        dataset: a map-style ``Dataset`` (``__getitem__``/``__len__``) or an ``IterableDataset``.
        batch_size: samples per batch (default 1); ``None`` turns batching off.
        shuffle: a new random order every epoch (``generator`` makes it reproducible).
        sampler, batch_sampler: custom index orders / batches (exclusive with the options above,
            as in torch).
        collate_fn: samples -> batch (default ``default_collate``; ``default_convert`` when
            batching is off).
        drop_last: drop the last incomplete batch.
        generator: an ``engine.Generator`` for the shuffle.
        num_workers, pin_memory, timeout, worker_init_fn, multiprocessing_context, prefetch_factor,
            persistent_workers, pin_memory_device, in_order: see the module docstring.

    Example::

        >>> loader = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True,
        ...                     generator=engine.Generator().manual_seed(0))
        >>> for xb, yb in loader: ...
    """

    _initialized = False

    def __init__(self, dataset: Dataset[T_co], batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler: Sampler | Iterable | None = None, batch_sampler: Sampler | Iterable | None = None,
                 num_workers: int = 0, collate_fn: Callable[[list], Any] | None = None, pin_memory: bool = False,
                 drop_last: bool = False, timeout: float = 0, worker_init_fn: Callable[[int], None] | None = None,
                 multiprocessing_context: Any = None, generator: Any = None, *, prefetch_factor: int | None = None,
                 persistent_workers: bool = False, pin_memory_device: str = "", in_order: bool = True) -> None:
        _check_worker_options(num_workers, timeout, prefetch_factor, persistent_workers, multiprocessing_context)
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = 2 if num_workers > 0 and prefetch_factor is None else prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order

        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            _check_iterable_options(shuffle, sampler, batch_sampler)
        else:
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError(
                    "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last"
                )
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError(
                "batch_size=None option disables auto-batching and is mutually exclusive with drop_last"
            )
        if sampler is None and not self._iterable:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None and not self._iterable:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)  # type: ignore[arg-type]

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self._initialized = True

    def __setattr__(self, attr: str, val: Any) -> None:
        if self._initialized and attr in ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
                                          "persistent_workers"):
            raise ValueError(f"{attr} attribute should not be set after {self.__class__.__name__} is initialized")
        super().__setattr__(attr, val)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None or (self._iterable and self.batch_size is not None)

    @property
    def _index_sampler(self) -> Any:
        return self.batch_sampler if self.batch_sampler is not None else self.sampler

    def __iter__(self) -> _DataLoaderIter:
        return _DataLoaderIter(self)

    def __len__(self) -> int:
        """Number of batches (for an IterableDataset: from its ``__len__``, as torch estimates)."""
        if self._iterable:
            length = len(self.dataset)  # type: ignore[arg-type]
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last else math.ceil(length / self.batch_size)
            return length
        return len(self._index_sampler)


def _check_worker_options(num_workers: int, timeout: float, prefetch_factor: int | None, persistent_workers: bool,
                          multiprocessing_context: Any) -> None:
    if num_workers < 0:
        raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable multiprocessing.")
    if timeout < 0:
        raise ValueError("timeout option should be non-negative")
    if num_workers == 0 and prefetch_factor is not None:
        raise ValueError(
            "prefetch_factor option could only be specified in multiprocessing."
            "let num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None."
        )
    if prefetch_factor is not None and prefetch_factor < 0:
        raise ValueError("prefetch_factor option should be non-negative")
    if persistent_workers and num_workers == 0:
        raise ValueError("persistent_workers option needs num_workers > 0")
    if multiprocessing_context is not None and num_workers == 0:
        raise ValueError(
            "multiprocessing_context can only be used with multi-process loading (num_workers > 0), but got "
            f"num_workers={num_workers}"
        )


def _check_iterable_options(shuffle: Any, sampler: Any, batch_sampler: Any) -> None:
    if shuffle not in {False, None}:
        raise ValueError(
            f"DataLoader with IterableDataset: expected unspecified shuffle option, but got shuffle={shuffle}"
        )
    if sampler is not None:
        raise ValueError(
            f"DataLoader with IterableDataset: expected unspecified sampler option, but got sampler={sampler}"
        )
    if batch_sampler is not None:
        raise ValueError(
            "DataLoader with IterableDataset: expected unspecified batch_sampler option, but got "
            f"batch_sampler={batch_sampler}"
        )


def _tensor_source(dataset: Any) -> tuple[tuple[Tensor, ...], np.ndarray | None] | None:
    """``(tensors, index_map)`` when ``dataset[i]`` is ``tuple(t[index_map[i]] for t in tensors)``
    (a TensorDataset, or Subsets of one, not overriding item access); else None."""
    kind = type(dataset)
    if isinstance(dataset, TensorDataset) and kind.__getitem__ is TensorDataset.__getitem__ \
            and getattr(kind, "__getitems__", None) is None:
        return dataset.tensors, None
    if isinstance(dataset, Subset) and kind.__getitem__ is Subset.__getitem__ \
            and kind.__getitems__ is Subset.__getitems__:
        inner = _tensor_source(dataset.dataset)
        if inner is None:
            return None
        tensors, index_map = inner
        indices = np.asarray(dataset.indices, dtype=np.int64)
        return tensors, indices if index_map is None else index_map[indices]
    return None


class _DataLoaderIter:
    """One pass over a DataLoader (torch's ``_SingleProcessDataLoaderIter``)."""

    def __init__(self, loader: DataLoader) -> None:
        if loader.pin_memory and loader.pin_memory_device:
            warnings.warn("pin_memory_device is deprecated, the current accelerator will be used as the device,"
                          f"ignore pin_memory_device='{loader.pin_memory_device}'.", stacklevel=2)
        if loader.pin_memory:  # the CPU is the engine's only device: no accelerator to pin for, as torch says
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then device pinned "
                          "memory won't be used.", stacklevel=2)
        self._loader = loader
        self._dataset = loader.dataset
        self._collate_fn = loader.collate_fn
        self._auto_collation = loader._auto_collation
        self._num_yielded = 0
        self._source = _tensor_source(loader.dataset) if (
            self._auto_collation and not loader._iterable and loader.collate_fn is default_collate) else None
        self._batches = self._make_batches()

    def __iter__(self) -> _DataLoaderIter:
        return self

    def __len__(self) -> int:
        return len(self._loader)

    def __next__(self) -> Any:
        batch = next(self._batches)
        self._num_yielded += 1
        return batch

    def _make_batches(self) -> Iterator[Any]:
        loader = self._loader
        if loader._iterable:
            return self._iterable_batches()
        if self._source is not None:
            return map(self._gather, self._index_batches())
        if self._auto_collation:
            return map(self._fetch_batch, loader.batch_sampler)  # type: ignore[arg-type]
        return (self._collate_fn(self._dataset[i]) for i in loader.sampler)  # type: ignore[union-attr]

    def _index_batches(self) -> Iterator[np.ndarray]:
        batch_sampler = self._loader.batch_sampler
        if type(batch_sampler) is BatchSampler and _gives_arrays(batch_sampler.sampler):
            return batch_sampler._array_batches()
        return (np.asarray(b, dtype=np.int64) for b in batch_sampler)  # type: ignore[union-attr]

    def _gather(self, idx: np.ndarray) -> list[Tensor]:
        tensors, index_map = self._source  # type: ignore[misc]
        rows = idx if index_map is None else index_map[idx]
        return [t[rows] for t in tensors]

    def _fetch_batch(self, indices: list[int]) -> Any:
        getitems = getattr(self._dataset, "__getitems__", None)
        data = getitems(indices) if callable(getitems) else [self._dataset[i] for i in indices]
        return self._collate_fn(data)

    def _iterable_batches(self) -> Iterator[Any]:
        items = iter(self._dataset)  # type: ignore[call-overload]
        if not self._auto_collation:
            yield from (self._collate_fn(item) for item in items)
            return
        size, drop_last = self._loader.batch_size, self._loader.drop_last
        while batch := list(itertools.islice(items, size)):
            if drop_last and len(batch) < size:  # type: ignore[operator]
                return
            yield self._collate_fn(batch)
