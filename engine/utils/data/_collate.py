"""``default_collate`` / ``default_convert``: samples -> batch, with torch's type rules.

Tensors are stacked; NumPy arrays and scalars become tensors (then stacked); Python floats
become a float64 tensor and ints an int64 tensor (bools a bool tensor); strings and bytes stay
a list; mappings, namedtuples and sequences are collated field by field (tuples give lists, as
in torch).
"""

from __future__ import annotations

import collections.abc
import copy
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from ... import _dtype
from ..._creation import as_tensor, tensor
from ..._ops.shape import stack
from ..._tensor import Tensor

__all__ = ["collate", "default_collate", "default_collate_fn_map", "default_convert"]

np_str_obj_array_pattern = re.compile(r"[SaUO]")

default_collate_err_msg_format = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"
)


def default_convert(data: Any) -> Any:
    """Convert NumPy arrays and scalars (also inside mappings and sequences) into tensors;
    everything else is returned unchanged. The collate of a DataLoader with ``batch_size=None``."""
    elem_type = type(data)
    if isinstance(data, Tensor):
        return data
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_"):
        if elem_type.__name__ == "ndarray" and np_str_obj_array_pattern.search(data.dtype.str) is not None:
            return data
        return as_tensor(np.asarray(data))  # a NumPy scalar keeps its dtype (np.int32 -> int32)
    if isinstance(data, collections.abc.Mapping):
        try:
            if isinstance(data, collections.abc.MutableMapping):
                clone = copy.copy(data)
                clone.update({key: default_convert(data[key]) for key in data})
                return clone
            return elem_type({key: default_convert(data[key]) for key in data})
        except TypeError:
            return {key: default_convert(data[key]) for key in data}
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # namedtuple
        return elem_type(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, str | bytes):
        try:
            if isinstance(data, collections.abc.MutableSequence):
                clone = copy.copy(data)
                for i, d in enumerate(data):
                    clone[i] = default_convert(d)
                return clone
            return elem_type([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data


def collate(batch: list[Any], *, collate_fn_map: dict[Any, Callable] | None = None) -> Any:
    """Collate ``batch`` using ``collate_fn_map`` (element type -> function) for leaves and
    recursing through mappings, namedtuples and sequences."""
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for collate_type in collate_fn_map:
            if isinstance(elem, collate_type):
                return collate_fn_map[collate_type](batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        return _collate_mapping(batch, elem, collate_fn_map)
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return elem_type(*(collate(samples, collate_fn_map=collate_fn_map) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        return _collate_sequence(batch, elem, collate_fn_map)
    raise TypeError(default_collate_err_msg_format.format(elem_type))


def _collate_mapping(batch: list[Any], elem: Any, collate_fn_map: dict | None) -> Any:
    fields = {key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map) for key in elem}
    try:
        if isinstance(elem, collections.abc.MutableMapping):
            clone = copy.copy(elem)
            clone.update(fields)
            return clone
        return type(elem)(fields)
    except TypeError:
        return fields


def _collate_sequence(batch: list[Any], elem: Any, collate_fn_map: dict | None) -> Any:
    it = iter(batch)
    elem_size = len(next(it))
    if not all(len(e) == elem_size for e in it):
        raise RuntimeError("each element in list of batch should be of equal size")
    # each field is collated from the tuple zip gives (strings come back as that tuple, as in torch)
    fields = [collate(samples, collate_fn_map=collate_fn_map) for samples in zip(*batch)]
    if isinstance(elem, tuple):
        return fields  # a list, for backwards compatibility (as torch)
    try:
        if isinstance(elem, collections.abc.MutableSequence):
            clone = copy.copy(elem)
            for i, f in enumerate(fields):
                clone[i] = f
            return clone
        return type(elem)(fields)
    except TypeError:
        return fields


def collate_tensor_fn(batch: list[Tensor], *, collate_fn_map: dict | None = None) -> Tensor:
    return stack(batch, 0)


def collate_numpy_array_fn(batch: list[np.ndarray], *, collate_fn_map: dict | None = None) -> Tensor:
    elem = batch[0]
    if np_str_obj_array_pattern.search(elem.dtype.str) is not None:
        raise TypeError(default_collate_err_msg_format.format(elem.dtype))
    return collate([as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch: list[Any], *, collate_fn_map: dict | None = None) -> Tensor:
    return as_tensor(np.asarray(batch))


def collate_float_fn(batch: list[float], *, collate_fn_map: dict | None = None) -> Tensor:
    return tensor(batch, dtype=_dtype.float64)


def collate_int_fn(batch: list[int], *, collate_fn_map: dict | None = None) -> Tensor:
    return tensor(batch)


def collate_str_fn(batch: list[Any], *, collate_fn_map: dict | None = None) -> list[Any]:
    return batch


default_collate_fn_map: dict[Any, Callable] = {
    Tensor: collate_tensor_fn,
    np.ndarray: collate_numpy_array_fn,
    (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,
    float: collate_float_fn,
    int: collate_int_fn,
    str: collate_str_fn,
    bytes: collate_str_fn,
}


def default_collate(batch: list[Any]) -> Any:
    """Put a list of samples into a batch: tensors/arrays/numbers gain a leading batch
    dimension, containers are collated field by field.

    Example::

        >>> default_collate([(engine.tensor([1.]), 0), (engine.tensor([2.]), 1)])
        [tensor([[1.], [2.]]), tensor([0, 1])]
    """
    return collate(batch, collate_fn_map=default_collate_fn_map)
