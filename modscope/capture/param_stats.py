"""Per-step parameter statistics (the ``params`` event): norm, grad norm, update-to-weight ratio,
mean, std and NaN/Inf counts of every parameter and buffer, computed with NumPy.

Framework-free: a plan reads tensors that hold NumPy arrays (``t._data``, ``t._grad._data``):
the engine's tensors, or zero-copy views of torch CPU tensors (``capture.torch.param_stats``).

This runs at every optimizer step, right after the step's heavy array work has pushed the
tracer's code and buffers out of the CPU caches (there, every NumPy call and every buffer touched
costs several times what it costs warm), so it is built to touch little memory and call NumPy
rarely:

- a ``StatsPlan`` is made once for a list of tensors and reused while the list stays the same;
- each tensor gets BLAS passes over its own values and gradient (which the optimizer has just
  read, so they are warm): a few calls per tensor, no copy, and no ``np.errstate`` unless some
  value is not finite;
- a model with many small float32 tensors (``BATCH_MIN`` or more of at most ``SMALL`` values:
  the biases and norms of a deep network) has them copied, values and gradients in one call,
  into a buffer the plan keeps, and reduced per tensor by one ``np.add.reduceat`` (pairwise, as
  NumPy sums every float reduction): a handful of NumPy calls however many tensors there are.
  With few of them the per-tensor passes cost less (the seed ``Net``'s 8 tensors: 97 µs in place
  instead of 137); so do larger tensors, whose copy costs more than a few BLAS calls;
- the sum of the gradients' squares comes out of the same passes (``grad_sq``): the step event's
  global gradient norm on a full step needs no pass of its own;
- the grad norm is exact, over every value, in one pass over the gradient (the step event's global
  norm and its NaN/Inf search come out of it); so are the norm, mean and std of a tensor of at
  most ``SAMPLE`` values, and of any tensor with ``exact_stats=True``: one pass over the values
  (their squares and their sum, chunk by chunk: ``_sq_sum``), the std from the norm's sum of
  squares, sums of long tensors added in float64 chunk by chunk;
- the values of a floating-point tensor of more than ``SAMPLE`` values in one C-ordered block
  (the usual weight) are by default read on the sample below only (``_sampled_single``): norm
  ``sqrt(sample_sq * n / m)``, mean and std the sample's ``m`` values', NaN/Inf counts the
  sample's (not scaled: a count of values seen, a lower bound; a non-finite value outside the
  sample is not seen there, while the exact gradient pass still sees a non-finite gradient, where
  NaNs come from, and the update ratio and std are None as soon as the sample holds one). The item
  says so: ``stats_sampled`` (how many values). A pass over ViT-B/16's 86M values costs ~50 ms a
  full step on one thread (a dot with itself and one with ones per 64K-value chunk), out of a
  ~125 ms overhead over the no-op-hook floor; the sample is already copied for the update ratio.
  Measured against float64 over every value (``bench/accuracy_sampled_stats.py``: median /
  largest relative error over the tensors; the mean's error relative to the std): the sampled
  weights of ViT-B/16, GPT-2 and BERT after 3 SGD steps, norm and std 0.13-0.21% / 0.69% (ViT's
  classifier head, zero at init and so only 3 low-rank updates: 3.4%), mean 0.20-0.26% / 1.2%;
  the ramp of ``tests/capture/torch/test_sampled_update.py`` (1M and 2.4M values) 0.20% / 0.70%;
  heavy-tailed SGD on GPT-2-sized Linears 0.25% / 0.50%; an embedding whose rows are scaled by
  log-normal factors (sigma 1: a few rows 10x the typical one) 2.4% / 3.7%;
- the update of a floating-point tensor of more than ``SAMPLE`` values in one C-ordered block
  is measured on a fixed sample of at most ``SAMPLE`` of them, runs of ``RUN`` consecutive
  values evenly spread over the flat tensor, the same indices every step (``sample_indices``;
  the torch plan for other devices, ``capture.torch.param_stats``, takes the same): its snapshot
  before the step is a small copy, and the ratio is the sample's ``||after_s - before_s|| /
  ||after_s||``. Its item says so: ``update_sampled`` (how many values were sampled); an item
  without it measured every value. Measured per 2.36M-value float32 tensor, the exact update
  cost a full copy before the step (1.9 ms), a subtraction (2.1 ms) and a dot (0.9 ms). Runs, not
  single values: each sampled value read alone costs a cache line (GPT-2 small's 50 sampled
  tensors, every 9th to 590th value: 24 ms a step per pass, one thread), runs of a line's 16
  values 12 ms for as many values, and the step reads them once (copied to a buffer)
  where the strided sample was read twice.

Example::

    >>> plan = StatsPlan([w, b])
    >>> plan.snapshot()                     # optimizer step pre-hook
    >>> optimizer.step()
    >>> plan.stats(["w", "b"])[0]["update_ratio"]
    0.0012...
"""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from ..events.schema import finite_or_none

# Elements; up to here a float32 tensor may join the batched pass. Above it, its copy into the
# batch buffer (and the passes over the copy) cost more than BLAS passes over the tensor itself,
# still warm from the optimizer. Measured in the optimizer post-hook on bench_long_run's GPT-2
# (2 layers, 128 wide: 16K-64K-value weights, 18 biases and norms), on a loaded machine: 2.9 ms
# a step at 4,096, against 4.3 at 65,536 and 3.1-3.4 at 1,024 or 16,384.
SMALL = 1 << 12
# Values: a tensor with more has its update measured on a sample of at most this many of them
# (``sample_indices``): runs of ``RUN`` values evenly spread. The sample's ratio is an estimate:
# over 40 SGD and Adam steps of 1M- and 2.4M-value tensors whose gradients grow 30x along them
# (``tests/capture/torch/test_sampled_update.py``'s ``big_step``), off by 0.19% (median; at most
# 0.78%; single values strided: 0.18%, 0.57%); over 30 SGD steps of GPT-2-sized weights whose
# gradient is a batch of 8 outer products of heavy-tailed (Student t, 3) vectors, a Linear's,
# off by 5.5% (median; at most 33%; strided: 5.5%, 40%). Updates concentrated on a few rows (an
# embedding's) are estimated less closely still, which the item's ``update_sampled`` says. The
# values' norm, mean and std are estimated from the same sample unless ``exact_stats`` (their
# errors: the module's docstring), which the item's ``stats_sampled`` says.
SAMPLE = 1 << 16
RUN = 16  # consecutive values per run of the sample: one 64-byte cache line of float32
BATCH_MIN = 10  # when there are at least this many: below, BLAS passes per tensor cost less


class StatsPlan:
    """Statistics for one fixed list of tensors, with buffers reused from step to step."""

    def __init__(self, tensors: list[Any], exact_stats: bool = False) -> None:
        self.tensors = list(tensors)
        # True: the values' norm, mean, std and NaN/Inf counts over every value, even where the
        # update is sampled; False: over the update's sample (``stats_sampled`` in the item)
        self.exact_stats = exact_stats
        # The tensors' arrays when the plan was made (``matches``: a ``.data =`` gives a new one).
        self.arrays = [t._data for t in self.tensors]
        small = [i for i, t in enumerate(self.tensors) if t._data.dtype == np.float32 and 0 < t._data.size <= SMALL]
        self.small = small if len(small) >= BATCH_MIN else []
        batched = set(self.small)
        self.large = [i for i in range(len(self.tensors)) if i not in batched]
        sizes = [self.tensors[i]._data.size for i in self.small]
        self.sizes = sizes
        self.starts = np.concatenate(([0], np.cumsum(sizes[:-1]))).astype(np.intp) if sizes else None
        self.total = sum(sizes)
        self._old: np.ndarray | None = None  # the small tensors before the step, concatenated
        self._rows: np.ndarray | None = None  # values, grads, their squares, update squares
        self.small_tensors = [self.tensors[i] for i in self.small]
        self._zeros: list[np.ndarray] | None = None  # stand-ins for missing gradients
        self.large_old: dict[int, np.ndarray] = {}  # i -> its values before the step (a flat view)
        # i -> the values as a flat view, for the float tensors whose memory allows one (a view
        # of the array the plan holds stays valid while the plan matches: made once, not per step)
        self.large_flat = {i: _flat_view(self.arrays[i]) for i in self.large}
        # i -> ones of the flat view's dtype and size, for its sum (``_ones_for``; None: too long)
        self.large_ones = {i: _ones_for(flat) for i, flat in self.large_flat.items()}
        # i -> a (runs, RUN) view of the sampled values, for the tensors whose update is sampled
        # (any float dtype in one C-ordered block: the torch plan's rule too), and a buffer the
        # step's sampled values are copied to (read once, then reduced in place)
        self.large_sample = {i: sample for i in self.large
                             if (sample := _sample_view(_float_block(self.arrays[i]))) is not None}
        self.large_now = {i: np.empty(sample.size, sample.dtype) for i, sample in self.large_sample.items()}
        self._old_groups: list[tuple[list[np.ndarray], np.ndarray]] | None = None  # (arrays, buffer)
        self.has_snapshot = False
        # The sum of the squared gradients at the last ``stats`` (tensors without a gradient left
        # out, as ``grad_norm`` does); None before it, when one was not finite, or none was there.
        self.grad_sq: float | None = None

    @property
    def old(self) -> np.ndarray:
        if self._old is None:
            self._old = np.empty(self.total, np.float32)
        return self._old

    @property
    def rows(self) -> np.ndarray:
        """Five float32 rows over the small tensors' elements (gradients, values, gradients
        squared, values squared, updates squared): a few whole-buffer NumPy calls fill them and
        one ``reduceat`` sums the last four (pairwise, as NumPy sums every float reduction)."""
        if self._rows is None:
            self._rows = np.zeros((5, self.total), np.float32)
        return self._rows

    def matches(self, tensors: list[Any]) -> bool:
        """The same tensors, with the same sizes, as when the plan was made."""
        # Identity, element by element, in C-level passes (this runs at every step; a tuple of
        # ids made one int object per tensor and per array)
        return (len(tensors) == len(self.tensors) and all(map(operator.is_, tensors, self.tensors))
                and all(map(operator.is_, map(_data_of, tensors), self.arrays)))

    def fingerprints(self) -> list[int]:
        """A fingerprint of each tensor's value bytes (``fingerprint``): equal on two ranks while
        their copies of the parameter are bitwise equal, as data-parallel training keeps them."""
        return list(map(fingerprint, map(_data_of, self.tensors)))

    def snapshot(self) -> None:
        """Remember the current values, so that ``stats`` can measure the update."""
        if self._old_groups is None:
            self._old_groups = self._group_buffers()
        for arrays, buffer in self._old_groups:  # axis=None flattens: one copy per buffer
            np.concatenate(arrays, axis=None, out=buffer)
        self.has_snapshot = True

    def _group_buffers(self) -> list[tuple[list[np.ndarray], np.ndarray]]:
        """Where the values before the step go: the batched tensors into ``old``, the others
        into one buffer per dtype, whose flat view per tensor ``large_old`` keeps."""
        by_dtype: dict[np.dtype, list[int]] = {}
        for i in self.large:
            by_dtype.setdefault(self.arrays[i].dtype, []).append(i)
        groups = [([self.arrays[i] for i in self.small], self.old)] if self.small else []
        samples = self.large_sample
        for dtype, indices in by_dtype.items():
            # a sampled tensor contributes its strided sample: a small copy, not the whole tensor
            arrays = [samples.get(i, self.arrays[i]) for i in indices]
            buffer = np.empty(sum(a.size for a in arrays), dtype)
            start = 0
            for i, a in zip(indices, arrays, strict=True):
                self.large_old[i] = buffer[start:start + a.size]
                start += a.size
            groups.append((arrays, buffer))
        return groups

    def stats(self, paths: list[str]) -> list[dict[str, Any]]:
        """One record per tensor, named by ``paths``; ``update_ratio`` (||after - before|| /
        ||after||) when ``snapshot`` was called since the last ``stats``."""
        update = self.has_snapshot
        self.has_snapshot = False
        out: list[dict[str, Any]] = [{}] * len(self.tensors)
        grad_sq: float | None = 0.0
        with_grad = False
        # Non-finite values are counted, never warned about; nor are finite ones whose squares
        # overflow float32 (a loss scaled by 1e6): one context for the whole pass, not one per tensor.
        with np.errstate(all="ignore"):
            if self.small:
                records, grad_sq = self._batched([paths[i] for i in self.small], update)
                for i, record in zip(self.small, records, strict=True):
                    out[i] = record
                    with_grad = with_grad or record["grad_norm"] is not None
            flats, olds, ones, tensors = self.large_flat, self.large_old, self.large_ones, self.tensors
            samples, nows, exact = self.large_sample, self.large_now, self.exact_stats
            for i in self.large:
                record = out[i] = _single(paths[i], tensors[i], flats[i], olds.get(i) if update else None, ones[i],
                                          samples.get(i), nows.get(i), exact)
                g = record["grad_norm"]
                if g is not None:
                    with_grad = True
                    if grad_sq is not None:
                        grad_sq += g * g
                elif tensors[i]._grad is not None:  # a gradient whose norm is not finite
                    grad_sq = None
        self.grad_sq = grad_sq if with_grad else None
        return out

    def _batched(self, paths: list[str], update: bool) -> tuple[list[dict[str, Any]], float | None]:
        """The records of the small tensors, and the sum of their gradients' squares (``None``
        when one is not finite)."""
        rows, starts, sizes, tensors = self.rows, self.starts, self.sizes, self.small_tensors
        grads = [t._grad for t in tensors]
        stand_in = self._stand_ins(grads)
        # gradients and values in one copy (rows 0 and 1 are contiguous), then their squares
        np.concatenate(([g._data for g in grads] if stand_in is None else stand_in)
                       + [t._data for t in tensors], axis=None, out=rows[:2].reshape(-1), casting="same_kind")
        np.multiply(rows[:2], rows[:2], out=rows[2:4])
        if update:
            np.subtract(rows[1], self.old, out=rows[4])
            np.multiply(rows[4], rows[4], out=rows[4])
        sums, grad_sq, sq, update_sq = np.add.reduceat(rows[1:], starts, axis=1).tolist()
        if not update:
            update_sq = None  # row 4 holds an older step's update: summed, never read
        if stand_in is None and math.isfinite(sum(sq) + sum(grad_sq) + (sum(update_sq) if update else 0.0)):
            return _finite_records(paths, sizes, sums, sq, grad_sq, update_sq), math.fsum(grad_sq)
        records = []
        total = 0.0  # of the squared gradients there are (zeros stand in for the others)
        for k, path in enumerate(paths):
            n, sqk, g = sizes[k], sq[k], grads[k]
            mean = sums[k] / n
            nan = inf = 0
            if not math.isfinite(sqk):  # rare: count NaN/Inf only where there are some
                nan, inf = _nonfinite(rows[1, starts[k]:starts[k] + n])
            if g is None:
                gsq = None
            else:
                gsq = grad_sq[k] if g._data.size == n else _sumsq(_in_memory_order(g._data))
                total += gsq
            records.append(_record(path, sqk, mean, math.sqrt(max(sqk / n - mean * mean, 0.0)) if nan + inf == 0
                                   else math.nan, gsq, math.sqrt(update_sq[k] / sqk) if update and sqk > 0 else None,
                                   nan, inf))
        return records, total if math.isfinite(total) else None

    def _stand_ins(self, grads: list[Any]) -> list[np.ndarray] | None:
        """``None`` when every tensor has a gradient of its size (the usual case); otherwise the
        arrays to copy in their place, with zeros for the missing or misfit ones."""
        tensors = self.small_tensors
        if all(g is not None and g._data.size == t._data.size for g, t in zip(grads, tensors, strict=True)):
            return None
        if self._zeros is None:
            self._zeros = [np.zeros(t._data.size, np.float32) for t in tensors]
        return [g._data if g is not None and g._data.size == t._data.size else z
                for g, t, z in zip(grads, tensors, self._zeros, strict=True)]


_data_of = operator.attrgetter("_data")


def fingerprint(a: np.ndarray) -> int:
    """The sum of ``a``'s bytes read as 64-bit words, modulo 2**63: one vectorised pass at memory
    speed (0.17 ms for 1.6 MB, where zlib's CRC-32 took 2 ms), no copy for a contiguous array.
    Any change of one value changes it; a change that leaves the sum of the words as it was (two
    values swapped) does not, which an update that reaches one rank alone does not do."""
    words = (a if a.flags.c_contiguous else np.ascontiguousarray(a)).reshape(-1).view(np.uint8)
    whole = len(words) // 8 * 8
    total = int(words[:whole].view(np.uint64).sum()) + int(words[whole:].sum())
    return total & 0x7FFF_FFFF_FFFF_FFFF


def _in_memory_order(a: np.ndarray) -> np.ndarray:
    """``a`` flat, its elements in memory order: a view, not a copy, for the transposed layouts
    of the engine's weight gradients (a sum of squares does not care about the order)."""
    return a.ravel("K")


def _sumsq(a: np.ndarray) -> float:
    return _sq(a) if a.dtype.kind == "f" else float(np.dot(a.astype(np.float64), a.astype(np.float64)))


def _sq(flat: np.ndarray) -> float:
    """The sum of the squares of a flat float array: one BLAS dot per ``SUM_BY_DOT`` values,
    added in float64. One dot over 2.36M float32 values is off by 9e-6 (relative; it accumulates
    in float32), the chunks by 4e-8, for ~15% more time (0.90 against 0.78 ms)."""
    if flat.size <= SUM_BY_DOT:
        return float(flat.dot(flat))
    return math.fsum([float(c.dot(c)) for c in (flat[i:i + SUM_BY_DOT] for i in range(0, flat.size, SUM_BY_DOT))])


def _nonfinite(a: np.ndarray) -> tuple[int, int]:
    return int(np.count_nonzero(np.isnan(a))), int(np.count_nonzero(np.isinf(a)))


def _entry(path: str, norm: float | None, grad_norm: float | None, update_ratio: float | None,
           mean: float | None, std: float | None, nan: int, inf: int) -> dict[str, Any]:
    """One item of a ``params`` event."""
    return {"path": path, "norm": norm, "grad_norm": grad_norm, "update_ratio": update_ratio,
            "mean": mean, "std": std, "nan": nan, "inf": inf}


def _record(path: str, sq: float, mean: float, std: float, grad_sq: float | None, ratio: float | None,
            nan: int, inf: int) -> dict[str, Any]:
    return _entry(path, finite_or_none(sq ** 0.5), finite_or_none(grad_sq ** 0.5) if grad_sq is not None else None,
                  finite_or_none(ratio) if ratio is not None else None, finite_or_none(mean), finite_or_none(std),
                  nan, inf)


def _finite_records(paths: list[str], sizes: list[int], sums: list[float], sq: list[float],
                    grad_sq: list[float], update_sq: list[float] | None) -> list[dict[str, Any]]:
    """``_finite_entry`` for every tensor of the batched pass, when every sum is finite (no
    NaN/Inf anywhere, every tensor with its gradient)."""
    return [_finite_entry(path, sizes[k], sums[k], sq[k], grad_sq[k], None if update_sq is None else update_sq[k])
            for k, path in enumerate(paths)]


def _finite_entry(path: str, n: int, total: float, sq: float, grad_sq: float | None,
                  update_sq: float | None, numel: int | None = None) -> dict[str, Any]:
    """The item of a tensor of ``n`` values from its sums, known to be finite: no per-value
    checks (at the step's end every call counts). ``numel``: the tensor's size when the sums
    are over a sample of ``n`` of its values (the norm is then scaled to the whole tensor,
    ``sqrt(sq * numel / n)``; the mean and std are the sample's)."""
    mean = total / n
    ratio = None if update_sq is None or sq <= 0 else finite_or_none(math.sqrt(update_sq / sq))
    norm = math.sqrt(sq) if numel is None else finite_or_none(math.sqrt(sq * (numel / n)))
    return _entry(path, norm, None if grad_sq is None else math.sqrt(grad_sq), ratio,
                  mean, math.sqrt(max(sq / n - mean * mean, 0.0)), 0, 0)


def _single(path: str, p: Any, flat: np.ndarray | None, old: np.ndarray | None,
            ones: np.ndarray | None = None, sample: np.ndarray | None = None,
            now: np.ndarray | None = None, exact: bool = True) -> dict[str, Any]:
    """The record of one tensor outside the batched pass, from BLAS passes over the tensor
    itself: no copy, and right after the optimizer's step its values and gradient are still in
    the CPU caches. ``flat``: the plan's flat view of the values (``_flat_view``), ``None`` for
    the careful path; ``old`` (flat, the values before the step) becomes the update; ``ones``
    (``_ones_for(flat)``) makes the sum a BLAS dot; ``sample`` (``_sample_view(flat)``, or
    None: every value) is what ``old`` holds the values before the step of, and what the update
    ratio is measured on, its values copied to ``now`` (flat, ``sample.size``) first; unless
    ``exact``, the values' norm, mean, std and NaN/Inf counts are the sample's too
    (``_sampled_single``).

    A finite sum of squares (of values and gradient) means no value is NaN/Inf and none can
    overflow the sums that follow, so that common case needs neither ``np.errstate`` nor
    per-value checks; in place, at the step's end, each of those costs several microseconds.
    (A subtraction from a pre-step value within 2e19 of float32's largest could still warn.)"""
    grad = p._grad
    if flat is not None and (grad is None or grad._data.dtype is flat.dtype):
        if sample is not None and not exact:
            assert now is not None
            return _sampled_single(path, p, flat.size, grad, old, sample, now)
        # ``a.dot(a)``, not ``np.dot(a, a)``: the method skips NumPy's Python-level dispatcher.
        if ones is not None:
            sq = float(flat.dot(flat))
            total = float(flat.dot(ones))
        else:
            sq, total = _sq_sum(flat)
        grad_sq = None if grad is None else _sq(_in_memory_order(grad._data))
        if math.isfinite(sq) and (grad_sq is None or math.isfinite(grad_sq)):
            update_sq = None
            if sample is not None:
                entry = _finite_entry(path, flat.size, total, sq, grad_sq, None)
                entry["update_sampled"] = sample.size
                if old is not None and sq > 0:
                    assert now is not None
                    np.copyto(now.reshape(sample.shape), sample)  # the sample read once, in runs
                    sample_sq = float(now.dot(now))
                    diff = np.subtract(now, old, out=old)
                    update_sq = float(diff.dot(diff))
                    if sample_sq > 0 and math.isfinite(update_sq):
                        entry["update_ratio"] = math.sqrt(update_sq / sample_sq)
                return entry
            if old is not None and sq > 0:
                diff = np.subtract(flat, old, out=old)
                update_sq = float(diff.dot(diff))
            return _finite_entry(path, flat.size, total, sq, grad_sq, update_sq)
    with np.errstate(all="ignore"):  # non-finite values are counted, never warned about
        return _checked_single(path, p, old, sample, sampled_stats=sample is not None and not exact)


def _sampled_single(path: str, p: Any, numel: int, grad: Any, old: np.ndarray | None, sample: np.ndarray,
                    now: np.ndarray) -> dict[str, Any]:
    """``_single``'s record with the values' figures estimated from the sample the update is
    measured on (``sample``, copied to ``now``): the norm ``sqrt(sample_sq * numel / m)``, the
    mean and std the sample's (``m`` values, ``stats_sampled``); the gradient's norm is exact,
    over every value. Two dots over at most ``SAMPLE`` values instead of a pass over all of them."""
    np.copyto(now.reshape(sample.shape), sample)  # the sample read once, in runs
    sq = float(now.dot(now))
    total = float(now.dot(_ones_for(now)))
    grad_sq = None if grad is None else _sq(_in_memory_order(grad._data))
    if not (math.isfinite(sq) and math.isfinite(total) and (grad_sq is None or math.isfinite(grad_sq))):
        with np.errstate(all="ignore"):  # NaN/Inf in the sample or the gradient: counted, never warned about
            return _checked_single(path, p, old, sample, sampled_stats=True)
    update_sq = None
    if old is not None and sq > 0:
        diff = np.subtract(now, old, out=old)
        update_sq = float(diff.dot(diff))
    entry = _finite_entry(path, now.size, total, sq, grad_sq, update_sq if update_sq is None or math.isfinite(update_sq)
                          else None, numel=numel)
    entry["update_sampled"] = entry["stats_sampled"] = now.size
    return entry


def sample_runs(n: int) -> tuple[int, int] | None:
    """How the update of a tensor of ``n`` values is sampled: ``(runs, step)``, ``runs`` runs of
    ``RUN`` consecutive values, one starting every ``step = RUN * ceil(n / SAMPLE)`` values from
    the first (the values after the last whole step are left out); at most ``SAMPLE`` values,
    ``1 / ceil(n / SAMPLE)`` of them. None when ``n`` is at most ``SAMPLE`` (every value)."""
    if n <= SAMPLE:
        return None
    step = RUN * -(-n // SAMPLE)
    return n // step, step


def sample_indices(n: int) -> np.ndarray | None:
    """The flat indices (in order) of the values a tensor of ``n`` values has its update measured
    on (``sample_runs``); None: every value."""
    runs = sample_runs(n)
    if runs is None:
        return None
    count, step = runs
    return (np.arange(count)[:, None] * step + np.arange(RUN)).reshape(-1)


def _sample_view(flat: np.ndarray | None) -> np.ndarray | None:
    """The values of ``flat`` an update is measured on, as a (runs, ``RUN``) view
    (``sample_runs``); None when ``flat`` is missing or has at most ``SAMPLE`` values."""
    runs = None if flat is None else sample_runs(flat.size)
    if runs is None:
        return None
    count, step = runs
    return flat[:count * step].reshape(count, step)[:, :RUN]


def _float_block(a: np.ndarray) -> np.ndarray | None:
    """``a`` as a flat view when it holds floats (any width) in one C-ordered block, else None."""
    return a.reshape(-1) if a.dtype.kind == "f" and a.flags.c_contiguous else None


def _sq_sum(flat: np.ndarray) -> tuple[float, float]:
    """The sum of the squares and the sum of a flat float array of more than ``SUM_BY_DOT``
    values, in one pass over memory: per ``SUM_BY_DOT``-value chunk (256 KiB of float32, which
    the second BLAS dot reads from the CPU cache) its dot with itself and with ones, the chunks'
    figures added in float64. Per 2.36M float32 values out of cache, one thread: 1.35 ms against
    1.55 for two passes; off by 4e-8 (relative) where one dot over all of them was off by 9e-6
    (it accumulates in float32)."""
    ones = _ones_for(flat[:SUM_BY_DOT])
    sq, total = [], []
    for i in range(0, flat.size, SUM_BY_DOT):
        c = flat[i:i + SUM_BY_DOT]
        sq.append(float(c.dot(c)))
        total.append(float(c.dot(ones if c.size == SUM_BY_DOT else ones[:c.size])))
    return math.fsum(sq), math.fsum(total)


def _flat_view(a: np.ndarray) -> np.ndarray | None:
    """``a`` as a flat view, when it holds float32/float64 values in one C-ordered block (the
    usual parameter); ``None`` otherwise (``_single`` then takes the careful path)."""
    if (a.dtype is _F32 or a.dtype is _F64) and a.size and a.flags.c_contiguous:
        return a.reshape(-1)
    return None


_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)  # native dtypes are singletons

SUM_BY_DOT = 1 << 16  # values: up to here a tensor's sum is a BLAS dot with ones (``_ones_for``)
_ONES: dict[np.dtype, np.ndarray] = {}  # dtype -> SUM_BY_DOT read-only ones, shared by every plan


def _ones_for(flat: np.ndarray | None) -> np.ndarray | None:
    """Ones to sum ``flat`` with, by ``flat.dot(ones)``: a read-only view of a shared buffer
    (256 KiB for float32); ``None`` for a missing or longer view (``np.add.reduce`` sums those).

    A dot is one BLAS call where ``np.add.reduce`` sets up NumPy's reduction machinery (1.4 against
    0.6 µs warm for 10 values, 6.0 against 1.6 µs for 16,000), and it is as accurate: relative to
    the sum of the absolute values, the worst error over 200 random tensors of 10 to 100,000
    values was 6.5e-8 for the dot and 7.3e-8 for NumPy's pairwise sum (float64 reference). Either
    sum of values that cancel (a weight matrix's mean near zero) carries that error, which is
    large relative to the sum itself and small relative to the values."""
    if flat is None or flat.size > SUM_BY_DOT:
        return None
    ones = _ONES.get(flat.dtype)
    if ones is None:
        ones = _ONES[flat.dtype] = np.ones(SUM_BY_DOT, flat.dtype)
        ones.flags.writeable = False
    return ones[:flat.size]


def _checked_single(path: str, p: Any, old: np.ndarray | None, sample: np.ndarray | None = None,
                    sampled_stats: bool = False) -> dict[str, Any]:
    """``_single`` for any tensor: any dtype, empty, NaN/Inf (counted) or too large to square.
    ``sample``: as ``_single``'s (the update measured on it, and the item says so); with
    ``sampled_stats``, the values' figures and NaN/Inf counts are the sample's too (in float64:
    a float16 sample's squares overflow its dtype), the norm scaled to the whole tensor."""
    if sampled_stats and sample is not None:
        flat = sample.astype(np.float64).reshape(-1)
    else:
        flat = p._data.reshape(-1)
        if flat.dtype.kind != "f":
            flat = flat.astype(np.float64)
        sampled_stats = False
    n = flat.size or 1
    sq = _sq(flat)
    mean = float(np.add.reduce(flat, dtype=np.float64)) / n
    nan, inf = _nonfinite(flat) if not math.isfinite(sq) else (0, 0)
    ratio = None
    if old is not None and sq > 0 and sample is None:
        diff = np.subtract(flat, old, out=old) if old.dtype == flat.dtype else flat - old
        ratio = math.sqrt(float(np.dot(diff, diff)) / sq)
    elif old is not None and sq > 0:  # in float64: a float16 sample's squares overflow its dtype
        after = sample.astype(np.float64).reshape(-1)
        diff = after - old.astype(np.float64)
        after_sq = float(np.dot(after, after))
        ratio = math.sqrt(float(np.dot(diff, diff)) / after_sq) if after_sq > 0 else None
    grad_sq = _sumsq(_in_memory_order(p._grad._data)) if p._grad is not None else None
    std = max(sq / n - mean * mean, 0.0) ** 0.5
    record = _record(path, sq * (p._data.size / n) if sampled_stats else sq, mean, std, grad_sq, ratio, nan, inf)
    if sample is not None:
        record["update_sampled"] = sample.size
        if sampled_stats:
            record["stats_sampled"] = sample.size
    return record


def grad_norm(tensors: list[Any]) -> tuple[float | None, bool]:
    """``(global gradient norm, whether a gradient holds a NaN/Inf)`` of ``tensors``' gradients
    (``t._grad._data``), as ``clip_grad_norm_`` measures it: what a light step records
    (``capture.sampling``). ``None`` for the norm when no tensor has a gradient or it overflows."""
    return arrays_norm([g._data for g in (t._grad for t in tensors) if g is not None])


def arrays_norm(arrays: list[np.ndarray]) -> tuple[float | None, bool]:
    """``grad_norm`` of the gradients' arrays: one BLAS dot each, no copy; the NaN/Inf search
    runs only when the sum is not finite."""
    if not arrays:
        return None, False
    sq = 0.0
    flat = []
    with np.errstate(all="ignore"):  # a square that overflows float32 is an overflow, not a warning
        for a in arrays:
            a = _in_memory_order(a)
            flat.append(a)
            sq += _sumsq(a) if a.dtype.kind == "f" and a.dtype.itemsize >= 4 else _sumsq(a.astype(np.float64))
    if math.isfinite(sq):
        return math.sqrt(sq), False
    return None, any(not np.isfinite(a).all() for a in flat if a.dtype.kind == "f")
