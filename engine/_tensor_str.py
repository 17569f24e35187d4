"""Tensor printing in torch's format: precision 4, a shared width per tensor, scientific
notation when magnitudes span too much, ``...`` summaries past 1,000 elements."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

PRECISION, THRESHOLD, EDGEITEMS, LINEWIDTH = 4, 1000, 3, 80


class _Formatter:
    """Chooses one format for every element of a tensor, as torch's ``_Formatter`` does."""

    def __init__(self, values: np.ndarray) -> None:
        self.floating = values.dtype.kind == "f"
        self.int_mode, self.sci_mode = True, False
        if not self.floating:
            self.width = max((len(self._plain(v)) for v in values.ravel()), default=1)
            return
        finite = values[np.isfinite(values)].astype(np.float64)
        nonzero = np.abs(finite[finite != 0])
        self.int_mode = bool(np.all(finite == np.ceil(finite)))
        if nonzero.size:
            lo, hi = nonzero.min(), nonzero.max()
            if self.int_mode:
                self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8
            else:
                self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4
        self.width = max((len(self.format_plain(v)) for v in values.ravel()), default=1)

    @staticmethod
    def _plain(v: Any) -> str:
        return str(bool(v)) if isinstance(v, np.bool_) else str(v)

    def format_plain(self, v: Any) -> str:
        if not self.floating:
            return self._plain(v)
        v = float(v)
        if not math.isfinite(v):
            return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
        if self.sci_mode:
            return f"{v:.{PRECISION}e}"
        if self.int_mode:
            return f"{v:.0f}."
        return f"{v:.{PRECISION}f}"

    def format(self, v: Any) -> str:
        return self.format_plain(v).rjust(self.width)


def _summarised(x: np.ndarray) -> np.ndarray:
    """The values that will actually be printed (for choosing the format)."""
    if x.ndim == 0:
        return x.reshape(1)
    if x.shape[0] > 2 * EDGEITEMS:
        x = np.concatenate([x[:EDGEITEMS], x[-EDGEITEMS:]])
    return np.concatenate([_summarised(row).ravel() for row in x]) if x.ndim > 1 else x


def _body(x: np.ndarray, fmt: _Formatter, indent: int, summarise: bool) -> str:
    if x.ndim == 0:
        return fmt.format(x.item())
    if x.ndim == 1:
        items = [fmt.format(v) for v in x.tolist()] if not (summarise and x.shape[0] > 2 * EDGEITEMS) \
            else [fmt.format(v) for v in x[:EDGEITEMS].tolist()] + [" ..."] + \
            [fmt.format(v) for v in x[-EDGEITEMS:].tolist()]
        per_line = max(1, (LINEWIDTH - indent) // (fmt.width + 2))
        lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    rows = list(range(x.shape[0]))
    if summarise and x.shape[0] > 2 * EDGEITEMS:
        rows = rows[:EDGEITEMS] + [None] + rows[-EDGEITEMS:]
    parts = [_body(x[i], fmt, indent + 1, summarise) if i is not None else "..." for i in rows]
    sep = "," + "\n" * (x.ndim - 1) + " " * (indent + 1)
    return "[" + sep.join(parts) + "]"


def tensor_repr(t: Any, prefix: str = "tensor(") -> str:
    x = t._data
    summarise = x.size > THRESHOLD
    suffixes = []
    if x.size == 0 and x.shape != (0,):
        body = "[]"
        suffixes.append(f"size={tuple(x.shape)}")
    elif x.size == 0:
        body = "[]"
    else:
        fmt = _Formatter(_summarised(x) if summarise else x)
        body = _body(x, fmt, len(prefix), summarise)
    name = x.dtype.name
    if name not in ("float32", "int64", "bool") or (name == "float32" and _default_is_not_f32()):
        suffixes.append(f"dtype=engine.{name}")
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t._requires_grad:
        suffixes.append("requires_grad=True")
    out = prefix + body
    for suffix in suffixes:  # wrap a suffix onto its own line only when it would not fit
        last_line = len(out) - out.rfind("\n") + 1
        if last_line + len(suffix) + 2 > LINEWIDTH:
            out += ",\n" + " " * len(prefix) + suffix
        else:
            out += ", " + suffix
    return out + ")"


def _default_is_not_f32() -> bool:
    from . import _dtype
    return _dtype._default_float is not _dtype.float32
