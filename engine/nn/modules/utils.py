"""``torch.nn.modules.utils``: the argument normalisers custom layers import (``_single``,
``_pair``, ``_triple``, ``_quadruple``: an int repeated, an iterable as a tuple;
``_reverse_repeat_tuple``: a Conv padding as ``F.pad`` wants it) and
``consume_prefix_in_state_dict_if_present``, which strips the ``module.`` of a DataParallel model's
(or the ``_orig_mod.`` of a compiled model's) state_dict keys and metadata in place."""

from __future__ import annotations

import collections.abc
from collections.abc import Callable
from itertools import repeat
from typing import Any

__all__ = ["consume_prefix_in_state_dict_if_present"]


def _ntuple(n: int, name: str = "parse") -> Callable[[Any], tuple]:
    def parse(x: Any) -> tuple:
        if isinstance(x, collections.abc.Iterable):
            return tuple(x)
        return tuple(repeat(x, n))

    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def _reverse_repeat_tuple(t: tuple, n: int) -> tuple:
    """``t`` reversed, each element repeated ``n`` times: Conv's padding in ``F.pad``'s order."""
    return tuple(x for x in reversed(t) for _ in range(n))


def _list_with_default(out_size: Any, defaults: list[int]) -> Any:
    """An adaptive pool's ``output_size`` with its ``None`` entries taken from the input's sizes."""
    if isinstance(out_size, int):
        return out_size
    if len(defaults) <= len(out_size):
        raise ValueError(f"Input dimension should be at least {len(out_size) + 1}")
    return [v if v is not None else d for v, d in zip(out_size, defaults[-len(out_size):], strict=False)]


def consume_prefix_in_state_dict_if_present(state_dict: dict[str, Any], prefix: str) -> None:
    """Strip ``prefix`` from the keys of ``state_dict`` (and of its ``_metadata``) in place."""
    for key in list(state_dict.keys()):
        if key.startswith(prefix):
            state_dict[key[len(prefix):]] = state_dict.pop(key)
    if hasattr(state_dict, "_metadata"):
        for key in list(state_dict._metadata.keys()):
            # '' is the wrapper's own entry (kept); 'module' and 'module.xx' are the model's
            if len(key) == 0:
                continue
            if key == prefix.replace(".", "") or key.startswith(prefix):
                state_dict._metadata[key[len(prefix):]] = state_dict._metadata.pop(key)
