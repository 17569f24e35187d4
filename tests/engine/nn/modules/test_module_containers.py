"""Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict against torch."""

from __future__ import annotations

from collections import OrderedDict

import pytest

import engine

from .parity import fill_params, outcome, ramp


def _names(m):
    return [(n, type(x).__name__) for n, x in m.named_children()]


def _seq(lib, n=3):
    return lib.nn.Sequential(*[lib.nn.Linear(i + 1, i + 2) for i in range(n)])


def _seq_ops(lib):
    s = _seq(lib)
    out = {"len": len(s), "iter": [m.in_features for m in s], "neg": s[-1].in_features,
           "slice": (type(s[1:]).__name__, _names(s[1:]), _names(s[::2]))}
    s[0] = lib.nn.Identity()
    out["setitem"] = _names(s)
    del s[1]
    out["delitem"] = _names(s)
    s.append(lib.nn.Flatten()).insert(0, lib.nn.Linear(9, 9)).insert(-1, lib.nn.Identity())
    out["append_insert"] = _names(s)
    s.extend([lib.nn.Linear(1, 1)])
    del s[1:3]
    out["del_slice"] = _names(s)
    out["pop"] = (type(s.pop(0)).__name__, _names(s))
    out["add"] = _names(s + _seq(lib, 1))
    s += _seq(lib, 1)
    out["iadd"] = _names(s)
    out["mul"] = (_names(_seq(lib, 2) * 2), _names(2 * _seq(lib, 1)))
    t = _seq(lib, 2)
    t *= 2
    out["imul"] = (_names(t), t[0] is t[2])
    out["named"] = _names(lib.nn.Sequential(OrderedDict(a=lib.nn.Identity(), b=lib.nn.Flatten()))[1:])
    out["dir"] = [k for k in dir(_seq(lib)) if k.isdigit()]
    return out


SEQ_ERRORS = {
    "index_range": lambda lib: _seq(lib)[3],
    "index_neg_range": lambda lib: _seq(lib)[-4],
    "index_type": lambda lib: _seq(lib)["0"],
    "setitem_range": lambda lib: _seq(lib).__setitem__(5, lib.nn.Identity()),
    "add_non_seq": lambda lib: _seq(lib) + [lib.nn.Identity()],
    "iadd_non_seq": lambda lib: _seq(lib).__iadd__(3),
    "mul_float": lambda lib: _seq(lib) * 2.0,
    "mul_zero": lambda lib: _seq(lib) * 0,
    "imul_zero": lambda lib: _seq(lib).__imul__(-1),
    "insert_range": lambda lib: _seq(lib).insert(5, lib.nn.Identity()),
    "insert_not_module": lambda lib: _seq(lib).insert(0, 3),
    "append_not_module": lambda lib: _seq(lib).append(3),
}


def test_sequential_ops(both):
    e, t = both(_seq_ops)
    assert e == t


@pytest.mark.parametrize("name", sorted(SEQ_ERRORS))
def test_sequential_errors(both, name):
    e, t = both(lambda lib: outcome(lambda: SEQ_ERRORS[name](lib)))
    assert e == t
    assert isinstance(SEQ_ERRORS_RESULT(name), Exception)


def SEQ_ERRORS_RESULT(name):  # noqa: N802 - reads as a table lookup
    return outcome(lambda: SEQ_ERRORS[name](engine))


def test_sequential_forward(both):
    def case(lib):
        s = fill_params(lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Flatten(0), lib.nn.Unflatten(0, (2, 4)),
                                          lib.nn.Linear(4, 1)), lib)
        x = ramp(lib, 2, 3, requires_grad=True)
        y = s(x)
        y.sum().backward()
        return y, x.grad, [p.grad for p in s.parameters()]

    e, t = both(case)
    assert e == t


def _list_ops(lib):
    ml = lib.nn.ModuleList([lib.nn.Linear(1, 1), lib.nn.Identity()])
    out = {"len": len(ml), "neg": type(ml[-1]).__name__, "slice": (type(ml[:1]).__name__, _names(ml[1:]))}
    ml[0] = lib.nn.Flatten()
    ml.append(lib.nn.Linear(2, 2)).extend([lib.nn.Identity()])
    ml.insert(1, lib.nn.Linear(3, 3))
    out["edit"] = _names(ml)
    del ml[0]
    del ml[::2]
    out["del"] = _names(ml)
    out["pop"] = (type(ml.pop(-1)).__name__, _names(ml))
    ml += [lib.nn.Identity()]
    out["iadd"] = _names(ml)
    out["add"] = (type(ml + [lib.nn.Flatten()]).__name__, _names(ml + (lib.nn.Flatten(),)))
    out["iter"] = [type(m).__name__ for m in ml]
    out["dir"] = [k for k in dir(ml) if k.isdigit()]
    return out


LIST_ERRORS = {
    "index_range": lambda lib: lib.nn.ModuleList()[0],
    "extend_not_iterable": lambda lib: lib.nn.ModuleList().extend(3),
    "init_not_iterable": lambda lib: lib.nn.ModuleList(lib.nn.Identity()),
    "append_not_module": lambda lib: lib.nn.ModuleList().append("x"),
    "call": lambda lib: lib.nn.ModuleList()(1),
}


def test_modulelist_ops(both):
    e, t = both(_list_ops)
    assert e == t


@pytest.mark.parametrize("name", sorted(LIST_ERRORS))
def test_modulelist_errors(both, name):
    e, t = both(lambda lib: outcome(lambda: LIST_ERRORS[name](lib)))
    assert e == t
    assert isinstance(outcome(lambda: LIST_ERRORS[name](engine)), Exception)


def _dict_ops(lib):
    d = lib.nn.ModuleDict({"b": lib.nn.Identity(), "a": lib.nn.Linear(1, 1)})
    out = {"keys": list(d.keys()), "len": len(d), "contains": ("a" in d, "z" in d), "iter": list(d)}
    d.update([("c", lib.nn.Flatten()), ["a", lib.nn.Identity()]])
    d.update(lib.nn.ModuleDict(OrderedDict(z=lib.nn.Identity(), y=lib.nn.Identity())))
    d["n"] = lib.nn.Linear(2, 2)
    out["after_update"] = [(k, type(v).__name__) for k, v in d.items()]
    del d["b"]
    out["pop"] = (type(d.pop("c")).__name__, list(d.keys()), [type(v).__name__ for v in d.values()])
    out["params"] = [n for n, _ in d.named_parameters()]
    d.clear()
    out["clear"] = len(d)
    return out


DICT_ERRORS = {
    "missing": lambda lib: lib.nn.ModuleDict()["x"],
    "update_not_iterable": lambda lib: lib.nn.ModuleDict().update(3),
    "update_element_not_iterable": lambda lib: lib.nn.ModuleDict().update([3]),
    "update_element_length": lambda lib: lib.nn.ModuleDict().update([("a", lib.nn.Identity(), 1)]),
    "bad_key": lambda lib: lib.nn.ModuleDict({"a.b": lib.nn.Identity()}),
    "bad_value": lambda lib: lib.nn.ModuleDict({"a": 1}),
}


def test_moduledict_ops(both):
    e, t = both(_dict_ops)
    assert e == t


@pytest.mark.parametrize("name", sorted(DICT_ERRORS))
def test_moduledict_errors(both, name):
    e, t = both(lambda lib: outcome(lambda: DICT_ERRORS[name](lib)))
    assert e == t
    assert isinstance(outcome(lambda: DICT_ERRORS[name](engine)), Exception)


def _plist_ops(lib):
    pl = lib.nn.ParameterList([lib.zeros(2), lib.nn.Parameter(lib.ones(1), requires_grad=False)])
    pl.append(lib.ones(3)).append("text")
    pl.extend([lib.zeros(1)])
    pl[0] = lib.ones(2)
    out = {"len": len(pl), "kinds": [type(p).__name__ for p in pl], "rg": [getattr(p, "requires_grad", None) for p in pl],
           "slice": [type(p).__name__ for p in pl[1:4:2]], "neg": type(pl[-2]).__name__,
           "named": [n for n, _ in pl.named_parameters()], "state": list(pl.state_dict()),
           "dir": [k for k in dir(pl) if k.isdigit()]}
    pl += [lib.zeros(1)]
    out["iadd"] = len(pl)
    return out


def _pdict_ops(lib):
    pd = lib.nn.ParameterDict({"b": lib.zeros(1), "a": lib.ones(1), "c": "obj"})
    out = {"sorted_from_dict": list(pd.keys())}
    pd.update(OrderedDict(z=lib.zeros(2), y=lib.nn.Parameter(lib.ones(2), requires_grad=False)))
    pd.update([("m", lib.zeros(3))])
    out["keys"] = list(pd)
    out["reversed"] = list(reversed(pd))
    out["kinds"] = [(k, type(v).__name__) for k, v in pd.items()]
    out["get"] = (type(pd.get("a")).__name__, pd.get("nope", 5))
    out["setdefault"] = (type(pd.setdefault("n", lib.zeros(1))).__name__, type(pd.setdefault("a")).__name__)
    out["pop"] = (type(pd.pop("b")).__name__, "b" in pd)
    out["popitem"] = (pd.popitem()[0], list(pd))
    out["copy"] = list(pd.copy())
    out["fromkeys"] = list(pd.fromkeys(["q", "r"], lib.zeros(1)))
    out["or"] = list(pd | lib.nn.ParameterDict({"new": lib.zeros(1)}))
    other = lib.nn.ParameterDict({"first": lib.zeros(1)})
    other |= pd
    out["ior"] = list(other)
    out["named"] = [n for n, _ in pd.named_parameters()]
    out["values"] = [type(v).__name__ for v in pd.values()]
    pd.clear()
    out["clear"] = (len(pd), list(pd.named_parameters()))
    return out


PARAM_ERRORS = {
    "list_call": lambda lib: lib.nn.ParameterList()(1),
    "list_extend_tensor": lambda lib: lib.nn.ParameterList().extend(lib.zeros(2)),
    "list_extend_int": lambda lib: lib.nn.ParameterList(3),
    "list_index": lambda lib: lib.nn.ParameterList([lib.zeros(1)])[1],
    "dict_call": lambda lib: lib.nn.ParameterDict()(1),
    "dict_key_type": lambda lib: lib.nn.ParameterDict()[1],
    "dict_missing": lambda lib: lib.nn.ParameterDict()["x"],
    "dict_update_int": lambda lib: lib.nn.ParameterDict(5),
    "dict_update_pair_len": lambda lib: lib.nn.ParameterDict([("a",)]),
    "dict_update_pair_type": lambda lib: lib.nn.ParameterDict([5]),
}


@pytest.mark.parametrize("case", [_seq_ops, _plist_ops, _pdict_ops], ids=["seq", "plist", "pdict"])
def test_container_ops_match_torch(both, case):
    e, t = both(case)
    assert e == t


@pytest.mark.parametrize("name", sorted(PARAM_ERRORS))
def test_parameter_container_errors(both, name):
    e, t = both(lambda lib: outcome(lambda: PARAM_ERRORS[name](lib)))
    assert e == t
    assert isinstance(outcome(lambda: PARAM_ERRORS[name](engine)), Exception)
