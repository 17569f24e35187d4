"""``nn.modules.utils`` (``_single``/``_pair``/``_triple``/``_quadruple``/``_ntuple``,
``_reverse_repeat_tuple``, ``_list_with_default``, ``consume_prefix_in_state_dict_if_present``)
and ``nn.common_types``, which custom layers import: the same results as torch's."""

from __future__ import annotations

import importlib
import typing

import pytest

import engine

torch = pytest.importorskip("torch")


def _both(module: str):
    return importlib.import_module(f"engine.{module}"), importlib.import_module(f"torch.{module}")


@pytest.mark.parametrize("value", [3, (1, 2), [4, 5, 6], "ab", 2.5, range(3)])
def test_ntuples(value):
    ours, theirs = _both("nn.modules.utils")
    for name in ("_single", "_pair", "_triple", "_quadruple"):
        assert getattr(ours, name)(value) == getattr(theirs, name)(value)
        assert getattr(ours, name).__name__ == name
    assert ours._ntuple(5)(value) == theirs._ntuple(5)(value)


def test_reverse_repeat_and_list_with_default():
    ours, theirs = _both("nn.modules.utils")
    for t, n in [((1, 2), 2), ((1, 2, 3), 1), ((), 3)]:
        assert ours._reverse_repeat_tuple(t, n) == theirs._reverse_repeat_tuple(t, n)
    for out, defaults in [([None, 3], [1, 8, 9, 10]), (5, [1, 2]), ([2, None], [7, 6, 5])]:
        assert ours._list_with_default(out, defaults) == theirs._list_with_default(out, defaults)
    for lib in (ours, theirs):
        with pytest.raises(ValueError, match="Input dimension should be at least 3"):
            lib._list_with_default([1, 2], [4, 5])


def test_consume_prefix_of_a_wrapped_model():
    ours, theirs = _both("nn.modules.utils")
    states = []
    for lib, utils in ((engine, ours), (torch, theirs)):
        wrapped = lib.nn.parallel.DataParallel(lib.nn.Sequential(lib.nn.Linear(2, 2)))
        state = wrapped.state_dict()
        assert all(k.startswith("module.") for k in state)
        utils.consume_prefix_in_state_dict_if_present(state, "module.")
        lib.nn.Sequential(lib.nn.Linear(2, 2)).load_state_dict(state)
        states.append((list(state), dict(state._metadata)))
        compiled = lib.compile(lib.nn.Linear(1, 1), backend="eager").state_dict()
        utils.consume_prefix_in_state_dict_if_present(compiled, "_orig_mod.")
        assert list(compiled) == ["weight", "bias"]
    assert states[0] == states[1]


def test_common_types():
    ours, theirs = _both("nn.common_types")
    names = [n for n in vars(theirs) if n.startswith("_") and n.endswith("_t")]
    assert len(names) > 15
    for name in names:
        assert str(getattr(ours, name)).replace("engine._tensor", "torch") == str(getattr(theirs, name)), name
    assert typing.get_args(ours._size_2_t) == (int, tuple[int, int])
