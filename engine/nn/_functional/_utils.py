"""Argument normalisation shared by the functional ops (tuples of ints, reductions, dtypes) and
the wording of the layers' shape errors."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ... import _dtype

_REDUCTIONS = ("none", "mean", "sum")


def ntuple(value: int | Sequence[int], n: int, name: str, fname: str) -> tuple[int, ...]:
    """``3 -> (3, 3)``; a sequence must have 1 or ``n`` entries (torch's pooling checks and words)."""
    if isinstance(value, int | np.integer):
        return (int(value),) * n
    out = tuple(int(v) for v in value)
    if len(out) == 1:
        return out * n
    if len(out) != n:
        count = {2: "two", 3: "three"}.get(n, str(n))
        rule = {"stride": "must either be omitted, a single int,", "dilation": "must be either a single int,"}
        raise RuntimeError(
            f"{fname}: {name} {rule.get(name, 'must either be a single int,')} or a tuple of {count} ints"
        )
    return out


def check_reduction(reduction: str) -> str:
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def legacy_type_name(dt: np.dtype) -> str:
    """torch's scalar-type spelling in dtype errors: ``Float``, ``Double``, ``Long``..."""
    return {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long",
            "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
            "bool": "Bool"}[np.dtype(dt).name]


def check_same_dtype(expected: np.ndarray, other: np.ndarray) -> None:
    """torch's message when a weight's dtype differs from the input's."""
    if other.dtype != expected.dtype:
        raise RuntimeError(
            f"expected scalar type {legacy_type_name(expected.dtype)} but found "
            f"{legacy_type_name(other.dtype)}"
        )


def shape_str(shape: Sequence[int]) -> str:
    """``[2, 3]``: how torch prints a size inside messages."""
    return str(list(shape))


def floating(x: np.ndarray, fname: str) -> np.ndarray:
    """Float ops reject integer inputs with torch's wording."""
    if x.dtype.kind != "f":
        raise RuntimeError(
            f'"{fname}" not implemented for \'{_dtype.from_numpy_dtype(x.dtype).name.capitalize()}\''
        )
    return x


def layer_error(err: Exception, layer: object, expected: str, shape: Sequence[int]) -> Exception:
    """``err`` (torch's message) of the same type, extended to name the layer and both shapes, in
    the form the nn layers share: ``<torch message>: Conv2d(...) expects input of shape (N, 3, H, W)
    but got input of shape [2, 4, 8, 8]``."""
    return type(err)(f"{err}: {layer!r} expects input of shape {expected} but got input of shape {shape_str(shape)}")
