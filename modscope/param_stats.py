"""Per-step parameter statistics (the ``params`` event): norm, grad norm, update-to-weight ratio,
mean, std and NaN/Inf counts of every parameter and buffer.

This runs at every optimizer step, right after the step's heavy array work has pushed the
parameters out of the CPU caches, so it is built to touch little memory and call NumPy rarely:

- a ``StatsPlan`` is made once for a list of tensors and reused while the list stays the same;
- small float32 tensors (the many biases and norms of a model) are copied into one buffer the plan
  keeps, and reduced per tensor with ``np.add.reduceat`` (float64 accumulation): a handful of
  NumPy calls however many tensors there are, and no allocation;
- large tensors, where a call's overhead is nothing next to the pass over the data, each get BLAS
  passes, and their pre-step copy lives in a buffer the plan keeps too.

Example::

    >>> plan = StatsPlan([w, b])
    >>> plan.snapshot()                     # optimizer step pre-hook
    >>> optimizer.step()
    >>> plan.stats(["w", "b"])[0]["update_ratio"]
    0.0012...
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .events import finite_or_none

SMALL = 1 << 16  # elements; up to here a float32 tensor joins the batched pass


class StatsPlan:
    """Statistics for one fixed list of tensors, with buffers reused from step to step."""

    def __init__(self, tensors: list[Any]) -> None:
        self.tensors = list(tensors)
        self.key = _key(self.tensors)
        self.small = [i for i, t in enumerate(self.tensors)
                      if t._data.dtype == np.float32 and 0 < t._data.size <= SMALL]
        batched = set(self.small)
        self.large = [i for i in range(len(self.tensors)) if i not in batched]
        sizes = [self.tensors[i]._data.size for i in self.small]
        self.sizes = np.array(sizes, dtype=np.float64)
        self.starts = np.concatenate(([0], np.cumsum(sizes[:-1]))).astype(np.intp) if sizes else None
        self.total = sum(sizes)
        self._buffers: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # made on first use
        self.large_old: dict[int, np.ndarray] = {}
        self.has_snapshot = False

    @property
    def buffers(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(before, values, scratch): float32 buffers for the small tensors, one element each."""
        if self._buffers is None:
            self._buffers = tuple(np.empty(self.total, np.float32) for _ in range(3))
        return self._buffers

    def matches(self, tensors: list[Any]) -> bool:
        """The same tensors, with the same sizes, as when the plan was made."""
        return _key(tensors) == self.key

    def snapshot(self) -> None:
        """Remember the current values, so that ``stats`` can measure the update."""
        if self.small:
            np.concatenate([self.tensors[i]._data.reshape(-1) for i in self.small], out=self.buffers[0])
        for i in self.large:
            data = self.tensors[i]._data
            old = self.large_old.get(i)
            if old is None or old.shape != data.shape or old.dtype != data.dtype:
                old = self.large_old[i] = np.empty_like(data)
            np.copyto(old, data)
        self.has_snapshot = True

    def stats(self, paths: list[str]) -> list[dict[str, Any]]:
        """One record per tensor, named by ``paths``; ``update_ratio`` (||after - before|| /
        ||after||) when ``snapshot`` was called since the last ``stats``."""
        update = self.has_snapshot
        self.has_snapshot = False
        out: list[dict[str, Any]] = [{}] * len(self.tensors)
        if self.small:
            with np.errstate(all="ignore"):  # non-finite values are counted, never warned about
                records = self._batched([paths[i] for i in self.small], update)
            for i, record in zip(self.small, records, strict=True):
                out[i] = record
        for i in self.large:
            out[i] = _single(paths[i], self.tensors[i], self.large_old.get(i) if update else None)
        return out

    def _batched(self, paths: list[str], update: bool) -> list[dict[str, Any]]:
        old, values, scratch = self.buffers
        starts, sizes = self.starts, self.sizes
        tensors = [self.tensors[i] for i in self.small]
        np.concatenate([t._data.reshape(-1) for t in tensors], out=values)
        sums = np.add.reduceat(values, starts, dtype=np.float64)
        sq = np.add.reduceat(np.multiply(values, values, out=scratch), starts, dtype=np.float64)
        ratios = [None] * len(paths)
        if update:
            diff = np.subtract(values, old, out=scratch)
            dsq = np.add.reduceat(np.multiply(diff, diff, out=scratch), starts, dtype=np.float64)
            ratios = np.sqrt(dsq / sq).tolist()
        grad_sq = self._grad_sq(tensors)
        mean = sums / sizes
        std = np.sqrt(np.maximum(sq / sizes - mean * mean, 0.0))
        bad = np.flatnonzero(~np.isfinite(sq)).tolist()  # rare: count NaN/Inf only where there are some
        counts = {k: _nonfinite(values[starts[k]:starts[k] + int(sizes[k])]) for k in bad}
        records = []
        for k, (path, sqk, m, sd, r, g) in enumerate(zip(
                paths, sq.tolist(), mean.tolist(), std.tolist(), ratios, grad_sq, strict=True)):
            nan, inf = counts.get(k, (0, 0))
            records.append(_record(path, sqk, m, sd, g, r if sqk > 0 else None, nan, inf))
        return records

    def _grad_sq(self, tensors: list[Any]) -> list[float | None]:
        """Squared gradient norms (``None`` without a gradient), through the same buffer."""
        grads = [t._grad._data.reshape(-1) if t._grad is not None else None for t in tensors]
        if all(g is None for g in grads):
            return [None] * len(tensors)
        filled = [g if g is not None and g.size == t._data.size else np.zeros(t._data.size, np.float32)
                  for g, t in zip(grads, tensors, strict=True)]
        scratch = self.buffers[2]
        np.concatenate(filled, out=scratch, casting="same_kind")
        sq = np.add.reduceat(np.multiply(scratch, scratch, out=scratch), self.starts,
                             dtype=np.float64).tolist()
        return [None if g is None else (s if g.size == t._data.size else _sumsq(g))
                for g, s, t in zip(grads, sq, tensors, strict=True)]


def _key(tensors: list[Any]) -> tuple:
    return tuple((id(t), t._data.size, t._data.dtype) for t in tensors)


def _sumsq(a: np.ndarray) -> float:
    return float(np.dot(a, a)) if a.dtype.kind == "f" else float(np.dot(a.astype(np.float64), a.astype(np.float64)))


def _nonfinite(a: np.ndarray) -> tuple[int, int]:
    return int(np.count_nonzero(np.isnan(a))), int(np.count_nonzero(np.isinf(a)))


def _record(path: str, sq: float, mean: float, std: float, grad_sq: float | None, ratio: float | None,
            nan: int, inf: int) -> dict[str, Any]:
    return {"path": path, "norm": finite_or_none(sq ** 0.5),
            "grad_norm": finite_or_none(grad_sq ** 0.5) if grad_sq is not None else None,
            "update_ratio": finite_or_none(ratio) if ratio is not None else None,
            "mean": finite_or_none(mean), "std": finite_or_none(std), "nan": nan, "inf": inf}


def _single(path: str, p: Any, old: np.ndarray | None) -> dict[str, Any]:
    """The record of one large (or empty, or not float32) tensor, with BLAS passes: the sum of
    squares gives the norm and the spread, and is finite exactly when every value is. ``old`` is
    overwritten (it becomes the update)."""
    flat = p._data.reshape(-1)
    if flat.dtype.kind != "f":
        flat = flat.astype(np.float64)
    n = flat.size or 1
    with np.errstate(all="ignore"):
        sq = float(np.dot(flat, flat))
        mean = float(np.add.reduce(flat)) / n
        nan, inf = _nonfinite(flat) if not np.isfinite(sq) else (0, 0)
        ratio = None
        if old is not None and sq > 0:
            before = old.reshape(-1)
            diff = np.subtract(flat, before, out=before) if before.dtype == flat.dtype else flat - before
            ratio = (float(np.dot(diff, diff)) / sq) ** 0.5
        grad_sq = _sumsq(p._grad._data.reshape(-1)) if p._grad is not None else None
    return _record(path, sq, mean, max(sq / n - mean * mean, 0.0) ** 0.5, grad_sq, ratio, nan, inf)
