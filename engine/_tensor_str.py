"""Tensor printing in torch's format: precision 4, a shared width per tensor, scientific
notation when magnitudes span too much, ``...`` summaries past 1,000 elements; all of it
adjustable with ``set_printoptions`` as in torch."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import _dtype

# The names this module adds to torch's top-level namespace (engine/__init__.py star-imports
# them: this list is the one place they are named).
__all__ = ["set_printoptions"]


class _PrintOptions:
    """torch's ``PRINT_OPTS``: what ``set_printoptions`` changes (``sci_mode`` None: chosen per
    tensor by the formatter)."""

    def __init__(self) -> None:
        self.precision, self.threshold, self.edgeitems, self.linewidth = 4, 1000, 3, 80
        self.sci_mode: bool | None = None


PRINT_OPTS = _PrintOptions()
_PROFILES = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80), "full": (4, math.inf, 3, 80)}


def set_printoptions(precision: int | None = None, threshold: float | None = None, edgeitems: int | None = None,
                     linewidth: int | None = None, profile: str | None = None, sci_mode: bool | None = None) -> None:
    """torch's ``set_printoptions``: a ``profile`` ('default', 'short', 'full') sets the four
    numbers first, then each given option overrides it; ``sci_mode`` is always set (None: automatic).
    Every later tensor repr follows them, as torch's does."""
    if profile in _PROFILES:
        PRINT_OPTS.precision, PRINT_OPTS.threshold, PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = _PROFILES[profile]
    if precision is not None:
        PRINT_OPTS.precision = precision
    if threshold is not None:
        PRINT_OPTS.threshold = threshold
    if edgeitems is not None:
        PRINT_OPTS.edgeitems = edgeitems
    if linewidth is not None:
        PRINT_OPTS.linewidth = linewidth
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions() -> dict[str, Any]:
    """The current options (torch's ``torch._tensor_str.get_printoptions``)."""
    return dict(vars(PRINT_OPTS))


class _Formatter:
    """Chooses one format for every element of a tensor, as torch's ``_Formatter`` does: the
    width comes from the non-zero finite values only (``nan``/``inf``/0 are padded to it)."""

    def __init__(self, values: np.ndarray) -> None:
        self.floating = values.dtype.kind == "f"
        self.int_mode, self.sci_mode, self.width = True, False, 1
        self.precision = PRINT_OPTS.precision
        if not self.floating:
            self.width = max((len(self._plain(v)) for v in values.ravel()), default=1)
            return
        flat = values.ravel()
        nonzero = flat[np.isfinite(flat) & (flat != 0)].astype(np.float64)
        if nonzero.size == 0:
            return
        mags = np.abs(nonzero)
        lo, hi = mags.min(), mags.max()
        self.int_mode = bool(np.all(nonzero == np.ceil(nonzero)))
        auto = hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4
        self.sci_mode = bool(auto) if PRINT_OPTS.sci_mode is None else PRINT_OPTS.sci_mode
        if self.int_mode and not self.sci_mode:
            self.width = max(self.width, max(len(f"{v:.0f}") + 1 for v in nonzero.tolist()))
        else:
            self.width = max(self.width, max(len(self._finite(v)) for v in nonzero.tolist()))

    @staticmethod
    def _plain(v: Any) -> str:
        return str(bool(v)) if isinstance(v, np.bool_) else str(v)

    def _finite(self, v: float) -> str:
        return f"{v:.{self.precision}e}" if self.sci_mode else f"{v:.{self.precision}f}"

    def format_plain(self, v: Any) -> str:
        if not self.floating:
            return self._plain(v)
        v = float(v)
        if not math.isfinite(v):
            return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
        if self.int_mode and not self.sci_mode:
            return f"{v:.0f}."
        return self._finite(v)

    def format(self, v: Any) -> str:
        return self.format_plain(v).rjust(self.width)


def _summarised(x: np.ndarray) -> np.ndarray:
    """The values that will actually be printed (for choosing the format)."""
    if x.ndim == 0:
        return x.reshape(1)
    edge = PRINT_OPTS.edgeitems
    if x.shape[0] > 2 * edge:
        x = np.concatenate([x[:edge], x[x.shape[0] - edge:]])
    if x.ndim == 1 or x.shape[0] == 0:
        return x.reshape(-1)
    return np.concatenate([_summarised(row).ravel() for row in x])


def _body(x: np.ndarray, fmt: _Formatter, indent: int, summarise: bool) -> str:
    if x.ndim == 0:
        return fmt.format(x.item())
    edge = PRINT_OPTS.edgeitems
    if x.ndim == 1:
        if summarise and not edge:
            items = ["..."]
        elif summarise and x.shape[0] > 2 * edge:
            items = [fmt.format(v) for v in x[:edge].tolist()] + [" ..."] + \
                [fmt.format(v) for v in x[x.shape[0] - edge:].tolist()]
        else:
            items = [fmt.format(v) for v in x.tolist()]
        per_line = max(1, math.floor((PRINT_OPTS.linewidth - indent) / (fmt.width + 2)))
        lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    rows: list[int | None] = list(range(x.shape[0]))
    if summarise and x.shape[0] > 2 * edge:
        rows = rows[:edge] + [None] + rows[x.shape[0] - edge:]
    parts = [_body(x[i], fmt, indent + 1, summarise) if i is not None else "..." for i in rows]
    sep = "," + "\n" * (x.ndim - 1) + " " * (indent + 1)
    return "[" + sep.join(parts) + "]"


def tensor_repr(t: Any, prefix: str = "tensor(") -> str:
    x = t._data
    summarise = x.size > PRINT_OPTS.threshold
    suffixes = []
    name, default = x.dtype.name, _default_name()
    if x.size == 0:  # torch: the size unless 1-d, the dtype unless the default float
        body = "[]"
        if x.ndim != 1:
            suffixes.append(f"size={tuple(x.shape)}")
        if name != default:
            suffixes.append(f"dtype=engine.{name}")
    else:
        if not PRINT_OPTS.edgeitems:
            suffixes.append(f"size={tuple(x.shape)}")
        fmt = _Formatter(_summarised(x) if summarise else x)
        body = _body(x, fmt, len(prefix), summarise)
        if name not in (default, "int64", "bool"):
            suffixes.append(f"dtype=engine.{name}")
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t._requires_grad:
        suffixes.append("requires_grad=True")
    out = prefix + body
    for suffix in suffixes:  # wrap a suffix onto its own line only when it would not fit
        last_line = len(out) - out.rfind("\n") + 1
        if last_line + len(suffix) + 2 > PRINT_OPTS.linewidth:
            out += ",\n" + " " * len(prefix) + suffix
        else:
            out += ", " + suffix
    return out + ")"


def _default_name() -> str:
    return _dtype._default_float.np.name
