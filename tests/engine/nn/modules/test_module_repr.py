"""Reprs byte-for-byte as torch prints them (``torch`` -> ``engine`` in type names)."""

from __future__ import annotations

from collections import OrderedDict

import pytest

from .parity import normalise


def _custom(lib):
    class Custom(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.body = lib.nn.Sequential(lib.nn.Linear(2, 3), lib.nn.Flatten(0))
            self.missing = None

        def extra_repr(self):
            return "first line\nsecond line"

    return Custom()


def _one_line_with_children(lib):
    class OneLine(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = lib.nn.Identity()

        def extra_repr(self):
            return "k=1"

    return OneLine()


def _with_none_child(lib):
    m = lib.nn.Sequential(lib.nn.Identity())
    m.add_module("gap", None)
    return m


def _blank_line_extra(lib):
    class Blank(lib.nn.Module):
        def extra_repr(self):
            return "a\n\nb"

    return lib.nn.ModuleList([lib.nn.Sequential(Blank()), Blank()])


REPRS = {
    "linear": lambda lib: lib.nn.Linear(3, 4),
    "linear_no_bias": lambda lib: lib.nn.Linear(3, 4, bias=False),
    "identity": lambda lib: lib.nn.Identity(54, unused="x"),
    "flatten": lambda lib: lib.nn.Flatten(),
    "flatten_args": lambda lib: lib.nn.Flatten(0, 2),
    "unflatten": lambda lib: lib.nn.Unflatten(1, (2, 5)),
    "unflatten_list": lambda lib: lib.nn.Unflatten(-1, [3, 1]),
    "module": lambda lib: lib.nn.Module(),
    "sequential_empty": lambda lib: lib.nn.Sequential(),
    "sequential": lambda lib: lib.nn.Sequential(lib.nn.Linear(4, 3), lib.nn.Flatten(), lib.nn.Linear(3, 1)),
    "sequential_named": lambda lib: lib.nn.Sequential(OrderedDict(fc=lib.nn.Linear(1, 2), out=lib.nn.Identity())),
    "nested": lambda lib: lib.nn.Sequential(lib.nn.Sequential(lib.nn.Sequential(lib.nn.Linear(1, 1))), _custom(lib)),
    "custom": _custom,
    "none_child": lambda lib: _with_none_child(lib),
    "one_line_with_children": _one_line_with_children,
    "modulelist_empty": lambda lib: lib.nn.ModuleList(),
    "modulelist_fold": lambda lib: lib.nn.ModuleList([lib.nn.Linear(2, 2) for _ in range(3)]),
    "modulelist_runs": lambda lib: lib.nn.ModuleList(
        [lib.nn.Linear(2, 2), lib.nn.Linear(2, 2), lib.nn.Identity(), lib.nn.Linear(2, 2), lib.nn.Identity(),
         lib.nn.Identity()]),
    "modulelist_nested_fold": lambda lib: lib.nn.ModuleList(
        [lib.nn.Sequential(lib.nn.Linear(1, 1), lib.nn.Identity()) for _ in range(2)] + [lib.nn.Linear(1, 1)]),
    "modulelist_in_module": lambda lib: lib.nn.Sequential(lib.nn.ModuleList([lib.nn.Identity()] * 4)),
    "blank_line_extra": _blank_line_extra,
    "moduledict": lambda lib: lib.nn.ModuleDict({"b": lib.nn.Linear(1, 1), "a": lib.nn.ModuleList([lib.nn.Identity()])}),
    "parameterlist": lambda lib: lib.nn.ParameterList(
        [lib.nn.Parameter(lib.zeros(2, 3)), lib.zeros(4), "text", lib.nn.Parameter(lib.zeros(1, dtype=lib.float64))]),
    "parameterlist_int": lambda lib: lib.nn.ParameterList([lib.nn.Parameter(lib.zeros(2, dtype=lib.long), requires_grad=False)]),
    "parameterlist_empty": lambda lib: lib.nn.ParameterList(),
    "parameterdict": lambda lib: lib.nn.ParameterDict({"w": lib.zeros(2, 2), "a": lib.nn.Parameter(lib.ones(3)), "s": 3}),
    "parameterdict_in_module": lambda lib: lib.nn.Sequential(OrderedDict(
        p=lib.nn.ParameterDict(OrderedDict(z=lib.zeros(1), y=lib.zeros(5, dtype=lib.float64))))),
    "parameter": lambda lib: lib.nn.Parameter(lib.tensor([1.0, 2.5])),
    "parameter_no_grad": lambda lib: lib.nn.Parameter(lib.tensor([[1.0], [2.0]]), requires_grad=False),
    "incompatible_keys_clean": lambda lib: lib.nn.Linear(1, 1).load_state_dict(lib.nn.Linear(1, 1).state_dict()),
    "incompatible_keys": lambda lib: lib.nn.Linear(1, 1).load_state_dict({"x": lib.zeros(1)}, strict=False),
}


@pytest.mark.parametrize("name", sorted(REPRS))
def test_repr_matches_torch(torch, name):
    import engine

    assert repr(REPRS[name](engine)) == normalise(repr(REPRS[name](torch)))


def test_str_of_incompatible_keys(torch):
    import engine

    for name in ("incompatible_keys_clean", "incompatible_keys"):
        assert str(REPRS[name](engine)) == str(REPRS[name](torch))
