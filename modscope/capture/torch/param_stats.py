"""Per-step parameter statistics (the ``params`` event) of torch tensors, on their own device.

The torch twin of ``capture.engine.param_stats.StatsPlan``: the same API and the same records
(norm, grad norm, update-to-weight ratio, mean, std, NaN/Inf counts per tensor). Built for CUDA:
however many tensors there are, a step is a fixed ~20 torch ops per device and ONE transfer to
the host (``.tolist()``), and nothing waits on the device before that transfer.

How: a plan lays its tensors out once in a float64 (chunks, ``CHUNK``) buffer, each tensor
starting a chunk (the rest of its last chunk is padding, always 0). At each step one
``torch.cat`` fills it with the values and one ``torch._foreach_copy_`` the scratch with the
gradients; whole-buffer ops reduce every chunk at once (sum, squares, NaN and Inf indicators,
the update since ``snapshot``), and one ``index_add_`` adds the chunks' sums up per tensor.
Float64 throughout: float32 values and their squares are exact in it, so the sums are
float64-close whatever a tensor's size, and the std (from the sum of squares, as the engine
takes it) keeps its digits even for a mean far from zero (a norm layer's weight).

Measured alternatives (CPU, 1 thread): ``torch._foreach_norm`` of 200 small gradients costs
190 µs in float32 (350 in float64), their ``_foreach_copy_`` into the layout 57 µs;
``torch.segment_reduce`` sums a segment sequentially (float32: 5e-4 relative error over 1e6
values) and on CUDA runs one thread per output unless the data is 1-d.

The update of a tensor of more than ``SAMPLE`` values is measured on a sample of them (runs of
``RUN`` values evenly spread), the engine plan's (``capture.param_stats``: the same indices, the same
``update_sampled`` in its item); so are, by default, its values' sum, squares and NaN/Inf counts
(the norm scaled to the whole tensor, ``stats_sampled`` in the item; ``exact_stats=True``: over
every value). The gradient's sum of squares is over every value either way.

Memory: two float64 buffers the size of the tensors (values, scratch) and, once ``snapshot``
was called, the values before the step: 24 bytes per value, plus up to ``CHUNK - 1`` padding
values per tensor. With a sampled tensor on the device (by default) the values and their
snapshot are laid out sampled (the samples, and the other tensors whole): 8 bytes per value for
the gradients' scratch and 16 per value of that layout. With ``exact_stats=True`` the values are
laid out whole and the update has a sampled layout of its own (before and after the step): 16
bytes per value of it instead of 8 per value.

Example::

    >>> plan = TorchStatsPlan([w, b])
    >>> plan.snapshot()                     # optimizer step pre-hook
    >>> optimizer.step()
    >>> plan.stats(["w", "b"])[0]["update_ratio"]
    0.0012...
"""

from __future__ import annotations

import math
import operator
from typing import Any

import torch

from ...events.schema import finite_or_none
from ..param_stats import RUN, StatsPlan, arrays_norm, sample_runs
from .summaries import numpy_readable

CHUNK = 64  # values per chunk: each chunk summed along its row, then the chunks per tensor
# What ``sums`` finds of each tensor (in float64): sum, sum of squares, update sum of squares,
# NaN count, Inf count, gradient sum of squares, and the sum of squares of the values after the
# step that the update was measured on (``sq`` itself unless the update was sampled).
FIGURES = ("sum", "sq", "update_sq", "nan", "inf", "grad_sq", "after_sq")
_UPDATE_COLUMNS = [FIGURES.index("update_sq"), FIGURES.index("after_sq")]
_NARROW = (torch.float16, torch.bfloat16, torch.float32)  # exact in float32: joined in float32, then widened


class TorchStatsPlan:
    """Statistics for one fixed list of tensors, with device buffers reused from step to step."""

    def __init__(self, tensors: list[torch.Tensor], exact_stats: bool = False) -> None:
        self.tensors = list(tensors)
        self.exact_stats = exact_stats  # False: a sampled tensor's values' figures are its sample's
        self._ptrs = list(map(_data_ptr, self.tensors))
        self._shapes = _shapes(self.tensors)
        by_device: dict[torch.device, list[int]] = {}
        for i, t in enumerate(self.tensors):
            by_device.setdefault(t.device, []).append(i)
        self._groups = [_Group([self.tensors[i] for i in indices], indices, exact_stats)
                        for indices in by_device.values()]
        self.has_snapshot = False

    def matches(self, tensors: list[torch.Tensor]) -> bool:
        """The same tensor objects in the same order, each with the storage address and shape it
        had when the plan was made (after ``p.data = ...`` a new plan is needed)."""
        # C-level passes, no Python call per tensor: this runs at every step
        return (len(tensors) == len(self.tensors) and all(map(operator.is_, tensors, self.tensors))
                and list(map(_data_ptr, tensors)) == self._ptrs and _shapes(tensors) == self._shapes)

    def fingerprints(self) -> None:
        """No fingerprints of tensors on other devices (their bytes would cross to the host
        every step): ranks are then compared by their statistics alone."""
        return None

    def snapshot(self) -> None:
        """Remember the current values (one ``torch.cat`` per device), so that the next
        ``stats`` measures the update."""
        with torch.no_grad():
            for group in self._groups:
                group.snapshot()
        self.has_snapshot = True

    def stats(self, paths: list[str]) -> list[dict[str, Any]]:
        """One record per tensor, named by ``paths``: ``{"path", "norm", "grad_norm",
        "update_ratio", "mean", "std", "nan", "inf"}``. ``update_ratio`` (||after - before|| /
        ||after||) only when ``snapshot`` was called since the last ``stats``; ``grad_norm`` None
        without a gradient; a figure that is not finite is None (the NaN/Inf are counted), as
        the engine's. The device's figures come to the host in one transfer."""
        update = self.has_snapshot
        self.has_snapshot = False
        if not self.tensors:
            return []
        with torch.no_grad():
            parts = [group.sums(update) for group in self._groups]
            device = self._groups[0].device
            rows = torch.cat([figures.to(device) for figures, _ in parts]).tolist()  # the one transfer
        out: list[dict[str, Any]] = [{}] * len(self.tensors)
        start = 0
        for group, (_, has_grad) in zip(self._groups, parts, strict=True):
            for j, i in enumerate(group.indices):
                sampled = group.sampled[j]
                stats_over = sampled if sampled is not None and group.stats_sampled else None
                out[i] = _record(paths[i], group.sizes[j] or 1, *rows[start + j], has_grad[j], update, stats_over)
                if sampled is not None:
                    out[i]["update_sampled"] = sampled
                    if stats_over is not None:
                        out[i]["stats_sampled"] = sampled
            start += len(group.indices)
        return out


class _Layout:
    """Tensors laid out in chunks of ``CHUNK`` values of a float64 buffer, each tensor starting a
    chunk (the rest of its last chunk is padding, always 0): ``fill`` copies their current
    values in."""

    def __init__(self, sources: list[torch.Tensor], device: torch.device) -> None:
        self.sources = sources
        chunks = [-(-t.numel() // CHUNK) for t in sources]
        starts = _cumsum(chunks)
        self.starts, self.chunks = starts[:-1], starts[-1]
        self.narrow = all(t.dtype in _NARROW for t in sources)  # exact in float32
        self.pieces = _pieces(sources, chunks, torch.float32 if self.narrow else torch.float64, device)
        owner = torch.repeat_interleave(torch.arange(len(sources)), torch.tensor(chunks, dtype=torch.long))
        self.owner = owner.to(device)  # chunk -> its tensor

    def empty(self, device: torch.device) -> torch.Tensor:
        return torch.zeros(self.chunks, CHUNK, dtype=torch.float64, device=device)

    def fill(self, buffer: torch.Tensor, staging: torch.Tensor) -> None:
        """The current values into ``buffer`` (this layout), zeros in the padding. The float32
        and 16-bit tensors are joined in float32, in the first half of ``staging``'s memory (a
        float64 buffer at least as long as ``buffer``, overwritten), then widened in one copy:
        ``torch.cat`` converting to float64 on the way copies tensor by tensor (20x slower for
        200 small tensors on CPU)."""
        if self.pieces is None:  # a tensor whose memory is not one block: copied through views of its shape
            buffer.zero_()
            torch._foreach_copy_(_slots(buffer, self.sources, self.starts), self.sources)
        elif self.narrow:
            buffer.view(-1).copy_(torch.cat(self.pieces, out=staging.view(-1).view(torch.float32)[:buffer.numel()]))
        else:
            torch.cat(self.pieces, out=buffer.view(-1))


class _Group:
    """The tensors of one device, laid out in chunks of ``CHUNK`` values (``_Layout``).

    The update of a floating-point tensor of more than ``SAMPLE`` values in one block of memory
    is measured on a sample of at most ``SAMPLE`` of them (the engine plan's rule and indices:
    ``capture.param_stats.sample_runs``). With ``exact_stats`` the values' figures stay exact,
    over every value, and the update has a second layout (``update``) of every tensor's update
    values: the sampled tensors' (runs, ``RUN``) views and the others whole; its snapshot then
    holds the sample, not the whole tensor: 8 bytes per sampled value instead of 8 per value.
    Without (the default), that sampled layout is the values' layout itself (``layout``): the
    values' sum, squares and NaN/Inf counts are the sample's, the update is measured on it, and
    the gradients go to a layout of their own (``grad_layout``, every value)."""

    def __init__(self, tensors: list[torch.Tensor], indices: list[int], exact_stats: bool = False) -> None:
        self.tensors, self.indices = tensors, indices
        self.shapes = [t.shape for t in tensors]
        self.sizes = [t.numel() for t in tensors]
        self.device = tensors[0].device
        # per tensor: how many values its update is measured on when sampled, else None
        self.sampled: list[int | None] = [None] * len(tensors)
        sources = list(tensors)
        for j, t in enumerate(tensors):
            runs = sample_runs(t.numel())
            if runs is not None and t.is_floating_point() and t.is_contiguous():
                count, step = runs  # a (runs, RUN) view: the engine plan's ``_sample_view``
                sources[j] = t.detach().view(-1)[:count * step].view(count, step)[:, :RUN]
                self.sampled[j] = sources[j].numel()
        any_sampled = any(n is not None for n in self.sampled)
        self.stats_sampled = any_sampled and not exact_stats  # the values' figures are the samples'
        self.grad_layout = _Layout(tensors, self.device)  # every value: the gradients' layout
        self.layout = _Layout(sources, self.device) if self.stats_sampled else self.grad_layout
        self.starts, self.owner = self.layout.starts, self.layout.owner
        self.values = self.layout.empty(self.device)
        # the gradients' buffer (as long as the values' layout or longer: a sample is never
        # longer than its tensor), and scratch for the values' figures (its first rows)
        self.scratch = self.grad_layout.empty(self.device)
        self.grad_slots = _slots(self.scratch, tensors, self.grad_layout.starts)  # gradients go there, last
        self._old: torch.Tensor | None = None
        # None: every update measured on the values' layout (every value, or sampled stats' samples)
        self.update = _Layout(sources, self.device) if any_sampled and not self.stats_sampled else None
        self._now: torch.Tensor | None = None  # the update layout's values after the step

    def snapshot(self) -> None:
        layout = self.update or self.layout
        if self._old is None:
            self._old = layout.empty(self.device)
        layout.fill(self._old, self.scratch)

    def sums(self, update: bool) -> tuple[torch.Tensor, list[bool]]:
        """Per tensor, a row of ``FIGURES`` (float64, on the device); and whether it has a
        gradient."""
        x, scratch = self.values, self.scratch
        sampled_update = None
        if update and self._old is not None and self.update is not None:  # before the scratch is in use
            sampled_update = self._sampled_update()
        self.layout.fill(x, scratch)
        rows = scratch[:x.shape[0]]  # the values' layout may be shorter (samples): its first rows
        per_chunk = [x.sum(-1), torch.mul(x, x, out=rows).sum(-1)]
        if update and self._old is not None and self.update is None:
            per_chunk.append(self._old.sub_(x).square_().sum(-1))  # the snapshot is used up
        else:
            per_chunk.append(per_chunk[1])  # a stand-in: never read, or replaced by the sample's
        per_chunk.append(torch.ne(x, x, out=rows).sum(-1))  # NaN
        per_chunk.append(torch.eq(torch.abs(x, out=rows), math.inf, out=rows).sum(-1))  # ±Inf
        if self.layout is not self.grad_layout:
            scratch.zero_()  # the gradients' padding must be 0: the values' figures left theirs there
        # The gradients, over the scratch (its padding is 0 now, as the values'). A tensor
        # without a gradient of its shape leaves other figures in its place, never read.
        grads = list(map(_grad_of, self.tensors))
        if _shapes(grads) == self.shapes:  # the usual case: every tensor has its gradient
            torch._foreach_copy_(self.grad_slots, grads)
            return self._figures(per_chunk, sampled_update), [True] * len(grads)
        fits = [g is not None and g.shape == s for g, s in zip(grads, self.shapes, strict=True)]
        if any(fits):
            torch._foreach_copy_([s for s, f in zip(self.grad_slots, fits, strict=True) if f],
                                 [g for g, f in zip(grads, fits, strict=True) if f])
        figures = self._figures(per_chunk, sampled_update)
        misfit = [j for j, (g, f) in enumerate(zip(grads, fits, strict=True)) if g is not None and not f]
        if misfit:  # a gradient kept from before a ``.data`` of another size
            norms = torch._foreach_norm([grads[j] for j in misfit], 2, dtype=torch.float64)
            figures[misfit, FIGURES.index("grad_sq")] = torch.stack(norms).square_()
        return figures, [g is not None for g in grads]

    def _sampled_update(self) -> torch.Tensor:
        """Per tensor, the update's sum of squares and the after values' one, over the update
        layout (the samples and the unsampled tensors whole): (tensors, 2). Uses the snapshot up."""
        layout, old = self.update, self._old
        assert layout is not None and old is not None
        if self._now is None:
            self._now = layout.empty(self.device)
        now = self._now
        layout.fill(now, self.scratch)
        per_chunk = torch.stack([old.sub_(now).square_().sum(-1), now.square_().sum(-1)], dim=1)
        return _per_tensor(per_chunk, layout.owner, len(self.tensors))

    def _figures(self, per_chunk: list[torch.Tensor], sampled_update: torch.Tensor | None) -> torch.Tensor:
        """The per-chunk sums so far and the gradients' sums of squares (the gradients are in
        the scratch), added up per tensor: (tensors, ``FIGURES``). The update's columns come
        from ``sampled_update`` when given; else ``after_sq`` is the values' ``sq``."""
        grad_sq = self.scratch.square_().sum(-1)
        one_layout = self.layout is self.grad_layout
        # two layouts (the values' figures per sample, the gradients' per tensor): a stand-in
        # for grad_sq, replaced below
        per_chunk.append(grad_sq if one_layout else per_chunk[0])
        per_chunk.append(per_chunk[1])  # after_sq
        figures = _per_tensor(torch.stack(per_chunk, dim=1), self.owner, len(self.tensors))
        if not one_layout:
            figures[:, FIGURES.index("grad_sq")] = _per_tensor(grad_sq[:, None], self.grad_layout.owner,
                                                               len(self.tensors))[:, 0]
        if sampled_update is not None:
            figures[:, _UPDATE_COLUMNS] = sampled_update
        return figures


_data_ptr = torch.Tensor.data_ptr
_grad_of = operator.attrgetter("grad")
_shape_of = operator.attrgetter("shape")


def _shapes(tensors: list[torch.Tensor | None]) -> list[torch.Size] | None:
    """The shapes of ``tensors``; None when one is None (a C-level pass: this runs per step)."""
    try:
        return list(map(_shape_of, tensors))
    except AttributeError:
        return None


def _cumsum(counts: list[int]) -> list[int]:
    """0 and the running totals of ``counts``."""
    out = [0]
    for c in counts:
        out.append(out[-1] + c)
    return out


def _pieces(tensors: list[torch.Tensor], chunks: list[int], dtype: torch.dtype,
            device: torch.device) -> list[torch.Tensor] | None:
    """What ``torch.cat`` joins into the layout: each tensor flat (a view that follows its
    in-place updates) and zeros up to its last chunk's end. None when a tensor's memory is not
    one block (no flat view of it exists)."""
    if not all(t.is_contiguous() for t in tensors):
        return None
    zeros = torch.zeros(CHUNK, dtype=dtype, device=device)
    pieces = []
    for t, c in zip(tensors, chunks, strict=True):
        pieces.append(t.detach().view(-1))
        if c * CHUNK > t.numel():
            pieces.append(zeros[:c * CHUNK - t.numel()])
    return pieces


def _per_tensor(per_chunk: torch.Tensor, owner: torch.Tensor, k: int) -> torch.Tensor:
    """Columns of per-chunk sums added up per tensor: (chunks, columns) -> (k, columns)."""
    out = torch.zeros(k, per_chunk.shape[1], dtype=per_chunk.dtype, device=per_chunk.device)
    return out.index_add_(0, owner, per_chunk)


def _slots(buffer: torch.Tensor, tensors: list[torch.Tensor], starts: list[int]) -> list[torch.Tensor]:
    """Views of ``buffer`` shaped as ``tensors``, each starting on its own chunk (``starts``)."""
    flat = buffer.view(-1)
    return [flat[s * CHUNK:s * CHUNK + t.numel()].view(t.shape) for s, t in zip(starts, tensors, strict=True)]


def _record(path: str, n: int, total: float, sq: float, update_sq: float, nan: float, inf: float,
            grad_sq: float, after_sq: float, has_grad: bool, update: bool,
            sampled: int | None = None) -> dict[str, Any]:
    """The engine's ``params`` item from one tensor's ``FIGURES`` (``n``: its size, 1 when
    empty: mean and std 0, as the engine's). A figure that is not finite is None; so is the
    update ratio when any value is (as the engine's, even if the sample's values are finite).
    ``sampled``: the values' figures are over a sample of that many values (the norm scaled to
    ``n``, ``sqrt(sq * n / sampled)``; mean, std and the NaN/Inf counts the sample's)."""
    scale = 1.0
    if sampled is not None:
        n, scale = sampled, n / sampled
    mean = total / n
    if nan or inf or not math.isfinite(sq + grad_sq + update_sq + after_sq):
        return _checked_record(path, n, total, sq, update_sq, int(nan), int(inf), grad_sq, after_sq, has_grad,
                               update, scale)
    return {"path": path, "norm": math.sqrt(sq * scale), "grad_norm": math.sqrt(grad_sq) if has_grad else None,
            "update_ratio": math.sqrt(update_sq / after_sq) if update and sq > 0 and after_sq > 0 else None,
            "mean": mean, "std": math.sqrt(max(sq / n - mean * mean, 0.0)), "nan": 0, "inf": 0}


def _checked_record(path: str, n: int, total: float, sq: float, update_sq: float, nan: int, inf: int,
                    grad_sq: float, after_sq: float, has_grad: bool, update: bool,
                    scale: float = 1.0) -> dict[str, Any]:
    """``_record`` when some figure is not finite (NaN/Inf values, or an overflow); ``scale``:
    the norm's, ``numel / n`` for a sample of ``n`` values."""
    mean = total / n
    ratio = None
    if update and sq > 0 and after_sq > 0:  # NaN > 0 is False: no ratio from non-finite values
        ratio = finite_or_none(math.sqrt(update_sq / after_sq))
    return {"path": path, "norm": finite_or_none(math.sqrt(sq * scale)),
            "grad_norm": finite_or_none(math.sqrt(grad_sq)) if has_grad else None,
            "update_ratio": ratio,
            "mean": finite_or_none(mean),
            "std": finite_or_none(math.sqrt(max(sq / n - mean * mean, 0.0))) if nan + inf == 0 else None,
            "nan": nan, "inf": inf}


class _Array:
    """A gradient as the NumPy plan reads it (``._data``)."""

    __slots__ = ("_data",)

    def __init__(self, data: Any) -> None:
        self._data = data


class _NumpyView:
    """A torch CPU tensor as the NumPy plan reads it: ``_data`` a zero-copy view of its values
    (valid while its storage is: ``CpuStatsPlan.matches`` checks that), ``_grad`` its current
    gradient's view (``zero_grad`` makes a new gradient tensor each step)."""

    __slots__ = ("_data", "tensor")

    def __init__(self, tensor: torch.Tensor) -> None:
        self.tensor = tensor
        self._data = tensor.detach().numpy()

    @property
    def _grad(self) -> _Array | None:
        grad = self.tensor.grad
        return None if grad is None or grad.layout != torch.strided else _Array(grad.detach().numpy())


class CpuStatsPlan:
    """Parameter statistics of CPU tensors by the NumPy plan the engine uses
    (``capture.param_stats.StatsPlan``), through zero-copy views: on the seed Net 27 µs a step
    against 87 µs for ``TorchStatsPlan``, whose ~20 torch ops are built for other devices."""

    def __init__(self, tensors: list[torch.Tensor], exact_stats: bool = False) -> None:
        self.tensors = list(tensors)
        self._where = [(t.data_ptr(), t.shape) for t in self.tensors]
        self._plan = StatsPlan([_NumpyView(t) for t in self.tensors], exact_stats)

    def matches(self, tensors: list[torch.Tensor]) -> bool:
        """The same tensor objects on the same memory, with the same shapes."""
        return (len(tensors) == len(self.tensors) and all(map(operator.is_, tensors, self.tensors))
                and [(t.data_ptr(), t.shape) for t in tensors] == self._where)

    def snapshot(self) -> None:
        self._plan.snapshot()

    def stats(self, paths: list[str]) -> list[dict[str, Any]]:
        return self._plan.stats(paths)

    @property
    def grad_sq(self) -> float | None:
        """The sum of the squared gradients at the last ``stats`` (``StatsPlan.grad_sq``)."""
        return self._plan.grad_sq

    def fingerprints(self) -> list[int]:
        return self._plan.fingerprints()


def grad_norm(tensors: list[torch.Tensor]) -> tuple[float | None, bool]:
    """``(global gradient norm, whether a gradient holds a NaN/Inf)`` of ``tensors``' gradients,
    as ``clip_grad_norm_`` measures it: what a light step records (``capture.sampling``). One
    ``_foreach_norm`` over the dense gradients (any device; one value fetched), the NaN/Inf search
    only when the norm is not finite. ``None`` for the norm when no gradient is there or it
    overflows."""
    grads = [g for g in (t.grad for t in tensors) if g is not None]
    if not grads:
        return None, False
    if all(map(numpy_readable, grads)):  # CPU: one BLAS dot per gradient (a third of _foreach_norm's time)
        return arrays_norm([g.detach().numpy() for g in grads])
    dense = [g.to_dense() if g.layout != torch.strided else g for g in grads]
    with torch.no_grad():
        try:
            norms = torch._foreach_norm(dense, 2.0)
        except RuntimeError:  # mixed devices or dtypes the fused kernel refuses: one at a time
            norms = [torch.linalg.vector_norm(g) for g in dense]
        total = float(torch.linalg.vector_norm(torch.stack([n.to(dense[0].device, torch.float64) for n in norms])))
        if math.isfinite(total):
            return total, False
        return None, any(not bool(torch.isfinite(g).all()) for g in dense if g.is_floating_point())


def stats_plan(tensors: list[torch.Tensor], exact_stats: bool = False) -> CpuStatsPlan | TorchStatsPlan:
    """The plan for ``tensors``: NumPy through views when every one is a plain CPU tensor, else
    torch ops on their devices with one transfer. ``exact_stats``: the values' norm, mean, std
    and NaN/Inf counts over every value of a sampled tensor too (``capture.param_stats``)."""
    if all(map(numpy_readable, tensors)):
        return CpuStatsPlan(tensors, exact_stats)
    return TorchStatsPlan(tensors, exact_stats)
