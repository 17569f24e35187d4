"""Datasets: ``Dataset``, ``IterableDataset``, ``TensorDataset``, ``ConcatDataset``,
``ChainDataset``, ``Subset`` and ``random_split`` (torch.utils.data's behaviour)."""

from __future__ import annotations

import bisect
import itertools
import math
import warnings
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Generic, TypeVar

from ..._creation import randperm
from ..._tensor import Tensor

__all__ = ["ChainDataset", "ConcatDataset", "Dataset", "IterableDataset", "StackDataset", "Subset", "TensorDataset",
           "random_split"]

T_co = TypeVar("T_co", covariant=True)


class Dataset(Generic[T_co]):
    """A map-style dataset: ``__getitem__(index)`` and (for samplers) ``__len__``.
    ``a + b`` concatenates (``ConcatDataset``)."""

    def __getitem__(self, index: Any) -> T_co:
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other: Dataset[T_co]) -> ConcatDataset[T_co]:
        return ConcatDataset([self, other])


class IterableDataset(Dataset[T_co]):
    """A dataset that is a stream: subclasses implement ``__iter__``. ``a + b`` chains."""

    def __iter__(self) -> Iterator[T_co]:
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other: Dataset[T_co]) -> ChainDataset:  # type: ignore[override]
        return ChainDataset([self, other])


class StackDataset(Dataset):
    """Datasets of the same length side by side: ``StackDataset(a, b)[i] == (a[i], b[i])``,
    ``StackDataset(x=a, y=b)[i] == {"x": a[i], "y": b[i]}``; batched reads use each dataset's
    ``__getitems__`` where it has one (torch's)."""

    datasets: tuple | dict

    def __init__(self, *args: Dataset, **kwargs: Dataset) -> None:
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or``dict``- (via ``kwargs``) like "
                             "input/output, but both types are given.")
        if not args and not kwargs:
            raise ValueError("At least one dataset should be passed")
        parts = list(args) if args else list(kwargs.values())
        self._length = len(parts[0])  # type: ignore[arg-type]
        if any(self._length != len(dataset) for dataset in parts):  # type: ignore[arg-type]
            raise ValueError("Size mismatch between datasets")
        self.datasets = args if args else kwargs

    def __getitem__(self, index: Any) -> Any:
        if isinstance(self.datasets, dict):
            return {k: dataset[index] for k, dataset in self.datasets.items()}
        return tuple(dataset[index] for dataset in self.datasets)

    def __getitems__(self, indices: list) -> list:
        named = self.datasets.items() if isinstance(self.datasets, dict) else enumerate(self.datasets)
        columns = {}
        for key, dataset in named:
            if callable(getattr(dataset, "__getitems__", None)):
                items = dataset.__getitems__(indices)
                if len(items) != len(indices):
                    raise ValueError("Nested dataset's output size mismatch. "
                                     f"Expected {len(indices)}, got {len(items)}")
                columns[key] = list(items)
            else:
                columns[key] = [dataset[i] for i in indices]
        if isinstance(self.datasets, dict):
            return [{k: column[n] for k, column in columns.items()} for n in range(len(indices))]
        return [tuple(column[n] for column in columns.values()) for n in range(len(indices))]

    def __len__(self) -> int:
        return self._length


class TensorDataset(Dataset[tuple[Tensor, ...]]):
    """Samples are ``tuple(t[i] for t in tensors)``; all tensors share their first dimension.

    A ``DataLoader`` over a TensorDataset (with the default collate) gathers each batch with one
    indexing per tensor instead of stacking items.

    Raises:
        AssertionError: the tensors' first dimensions differ (torch's error).
    """

    tensors: tuple[Tensor, ...]

    def __init__(self, *tensors: Tensor) -> None:
        if any(tensors[0].size(0) != t.size(0) for t in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index: Any) -> tuple[Tensor, ...]:
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].size(0)


class ConcatDataset(Dataset[T_co]):
    """The concatenation of map-style datasets."""

    datasets: list[Dataset[T_co]]
    cumulative_sizes: list[int]

    @staticmethod
    def cumsum(sequence: Iterable[Any]) -> list[int]:
        return list(itertools.accumulate(len(e) for e in sequence))

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = list(datasets)
        if len(self.datasets) == 0:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx: int) -> T_co:
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        dataset_idx = bisect.bisect_right(self.cumulative_sizes, idx)
        sample_idx = idx if dataset_idx == 0 else idx - self.cumulative_sizes[dataset_idx - 1]
        return self.datasets[dataset_idx][sample_idx]


class ChainDataset(IterableDataset):
    """Iterable datasets one after the other."""

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = datasets

    def __iter__(self) -> Iterator[Any]:
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self) -> int:
        total = 0
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            total += len(d)  # type: ignore[arg-type]
        return total


class Subset(Dataset[T_co]):
    """The items of ``dataset`` at ``indices`` (in that order)."""

    dataset: Dataset[T_co]
    indices: Sequence[int]

    def __init__(self, dataset: Dataset[T_co], indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices
        if type(self).__getitem__ is not Subset.__getitem__ and type(self).__getitems__ is Subset.__getitems__:
            raise NotImplementedError(
                f"{type(self).__name__} overrides __getitem__ but not __getitems__. "
                "When subclassing Subset and overriding __getitem__, you must also override "
                "__getitems__ to ensure DataLoader works correctly with your custom logic. "
                "A simple implementation:\n\n"
                "def __getitems__(self, indices):\n"
                "    return [self.__getitem__(idx) for idx in indices]"
            )

    def __getitem__(self, idx: Any) -> T_co:
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list[int]) -> list[T_co]:
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__([self.indices[idx] for idx in indices])  # type: ignore[attr-defined]
        return [self.dataset[self.indices[idx]] for idx in indices]

    def __len__(self) -> int:
        return len(self.indices)


def random_split(dataset: Dataset[T_co], lengths: Sequence[int | float], generator: Any = None) -> list[Subset[T_co]]:
    """Split ``dataset`` into non-overlapping random subsets of the given lengths, or of the
    given fractions (``floor(frac * len)`` each, the remainder dealt out one by one from the
    first split). ``generator`` (an ``engine.Generator``) makes the split reproducible; the
    global generator is used otherwise.

    Raises:
        ValueError: a fraction outside [0, 1], or lengths not summing to ``len(dataset)``.
    """
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        subset_lengths: list[int] = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
            subset_lengths.append(math.floor(len(dataset) * frac))  # type: ignore[arg-type]
        remainder = len(dataset) - sum(subset_lengths)  # type: ignore[arg-type]
        for i in range(remainder):
            subset_lengths[i % len(subset_lengths)] += 1
        lengths = subset_lengths
        for i, length in enumerate(lengths):
            if length == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.",
                              stacklevel=2)
    if sum(lengths) != len(dataset):  # type: ignore[arg-type]
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    indices = randperm(int(sum(lengths)), generator=generator).tolist()
    return [Subset(dataset, indices[offset - length:offset])
            for offset, length in zip(itertools.accumulate(lengths), lengths)]  # type: ignore[arg-type]
