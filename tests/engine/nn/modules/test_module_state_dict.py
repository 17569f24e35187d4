"""state_dict / load_state_dict: keys, metadata, results, error texts and hooks, against torch."""

from __future__ import annotations

import warnings
from collections import OrderedDict

import numpy as np
import pytest

import engine

from .parity import fill_params, outcome, ramp


def _net(lib):
    nn = lib.nn

    class Net(nn.Module):
        _version = 3

        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(3, 4)
            self.fc2 = nn.Linear(4, 2, bias=False)
            self.register_buffer("steps", lib.zeros(1, dtype=lib.long))
            self.register_buffer("cache", lib.zeros(2), persistent=False)
            self.register_buffer("empty", None)
            self.seq = nn.Sequential(nn.Identity(), nn.Linear(2, 2))

    return fill_params(Net(), lib)


def _sd(lib, **kwargs):
    return _net(lib).state_dict(**kwargs)


def _drop(sd, *keys):
    out = OrderedDict((k, v) for k, v in sd.items() if k not in keys)
    return out


def _load(lib, edit, strict=True, assign=False):
    src, dst = _net(lib), lib.nn.Module()
    dst = _net(lib)
    with lib.no_grad():
        for p in dst.parameters():
            p.zero_()
    sd = edit(lib, src.state_dict())
    res = outcome(lambda: dst.load_state_dict(sd, strict=strict, assign=assign))
    return (res if isinstance(res, Exception) else (repr(res), str(res), list(res.missing_keys),
                                                     list(res.unexpected_keys)),
            dst.fc1.weight, dst.seq[1].bias)


def _with(sd, **items):
    sd = OrderedDict(sd)
    sd.update(items)
    return sd


SAVE = {
    "state_dict": lambda lib: _sd(lib),
    "metadata": lambda lib: _sd(lib)._metadata,
    "keep_vars": lambda lib: [(k, v.requires_grad, type(v).__name__) for k, v in _sd(lib, keep_vars=True).items()],
    "detached": lambda lib: [(k, v.requires_grad, type(v).__name__) for k, v in _sd(lib).items()],
    "prefix": lambda lib: list(_sd(lib, prefix="model.").keys()),
    "prefix_metadata": lambda lib: _sd(lib, prefix="model.")._metadata,
    "destination": lambda lib: list(_net(lib).state_dict(destination={"x": 1}).keys()),
    "child_state_dict": lambda lib: _net(lib).seq.state_dict(),
}


@pytest.mark.parametrize("name", sorted(SAVE))
def test_state_dict_matches_torch(both, name):
    e, t = both(SAVE[name])
    assert e == t


def test_state_dict_positional_args_warn(both):
    def case(lib):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            sd = _net(lib).state_dict(OrderedDict(), "p.", True)
        return list(sd), [(x.category.__name__, str(x.message)) for x in w]

    e, t = both(case)
    assert e == t
    assert e[1][0][0] == "FutureWarning"


def _sd_shares_memory(lib):
    m = _net(lib)
    sd = m.state_dict()
    with lib.no_grad():
        m.fc1.bias.add_(1)
    return sd["fc1.bias"]


LOAD = {
    "clean": lambda lib: _load(lib, lambda l, sd: sd),
    "missing": lambda lib: _load(lib, lambda l, sd: _drop(sd, "fc1.bias", "seq.1.weight")),
    "missing_not_strict": lambda lib: _load(lib, lambda l, sd: _drop(sd, "fc1.bias", "seq.1.weight"), strict=False),
    "unexpected": lambda lib: _load(lib, lambda l, sd: _with(sd, **{"fc3.weight": l.zeros(1), "extra": l.zeros(1),
                                                                   "seq.0.w": l.zeros(1), "empty": l.zeros(1)})),
    "unexpected_not_strict": lambda lib: _load(lib, lambda l, sd: _with(sd, extra=l.zeros(1)), strict=False),
    "missing_and_unexpected": lambda lib: _load(lib, lambda l, sd: _with(_drop(sd, "steps"), junk=l.zeros(1))),
    "size_mismatch": lambda lib: _load(lib, lambda l, sd: _with(sd, **{"fc1.weight": l.zeros(3, 3)})),
    "size_mismatch_not_strict": lambda lib: _load(lib, lambda l, sd: _with(sd, **{"fc1.weight": l.zeros(3, 3)}),
                                                  strict=False),
    "size_mismatch_and_missing": lambda lib: _load(lib, lambda l, sd: _with(_drop(sd, "fc1.bias"),
                                                                            **{"fc2.weight": l.zeros(1)})),
    "not_a_tensor": lambda lib: _load(lib, lambda l, sd: _with(sd, **{"fc1.bias": [1.0, 2.0, 3.0, 4.0]})),
    "scalar_from_shape_1": lambda lib: _scalar_compat(lib),
    "assign": lambda lib: _load(lib, lambda l, sd: sd, assign=True),
    "not_mapping": lambda lib: outcome(lambda: _net(lib).load_state_dict([("a", 1)])),
    "shares_memory": _sd_shares_memory,
}


def _scalar_compat(lib):
    m = lib.nn.Module()
    m.register_buffer("s", lib.tensor(0.0))
    m.load_state_dict({"s": lib.tensor([5.0])})
    return m.s


@pytest.mark.parametrize("name", sorted(LOAD))
def test_load_state_dict_matches_torch(both, name):
    e, t = both(LOAD[name])
    assert e == t


def test_load_errors_are_raised():
    for name in ("missing", "unexpected", "size_mismatch", "size_mismatch_not_strict", "not_a_tensor",
                 "missing_and_unexpected", "size_mismatch_and_missing"):
        assert isinstance(LOAD[name](engine)[0], RuntimeError), name
    assert isinstance(LOAD["not_mapping"](engine), TypeError)
    res = LOAD["missing_not_strict"](engine)[0]
    assert res[2] == ["fc1.bias", "seq.1.weight"]


def test_error_text_structure():
    err = LOAD["size_mismatch_and_missing"](engine)[0]
    lines = str(err).split("\n\t")
    assert lines[0] == "Error(s) in loading state_dict for Net:"
    assert lines[1] == 'Missing key(s) in state_dict: "fc1.bias". '
    assert lines[2] == ("size mismatch for fc2.weight: copying a param with shape engine.Size([1]) from checkpoint, "
                        "the shape in current model is engine.Size([2, 4]).")


def test_assign_keeps_requires_grad_and_installs_tensor():
    src, dst = _net(engine), _net(engine)
    dst.fc1.weight.requires_grad_(False)
    sd = src.state_dict()
    dst.load_state_dict(sd, assign=True)
    assert isinstance(dst.fc1.weight, engine.nn.Parameter) and not dst.fc1.weight.requires_grad
    assert dst.fc2.weight.requires_grad
    assert np.shares_memory(dst.fc1.weight.detach().numpy(), sd["fc1.weight"].numpy())
    assert dst.steps is sd["steps"]


def _hooks_case(lib):
    log = []
    m = _net(lib)

    def pre(mod, prefix, keep_vars):
        log.append(("sd_pre", type(mod).__name__, prefix, keep_vars))

    def post(mod, sd, prefix, meta):
        log.append(("sd_post", prefix, dict(meta), len(sd)))
        sd[prefix + "added"] = lib.ones(1)

    def legacy(mod, sd, prefix, meta):
        return OrderedDict(only=lib.zeros(1)) if prefix == "" else None

    m.register_state_dict_pre_hook(pre)
    m.seq.register_state_dict_pre_hook(pre)
    m.seq.register_state_dict_post_hook(post)
    sd = m.state_dict(keep_vars=True)
    m._register_state_dict_hook(legacy)
    replaced = m.state_dict()
    bad = lib.nn.Linear(1, 1)
    bad.register_state_dict_post_hook(lambda *a: {})
    again = outcome(lambda: m._register_state_dict_hook(post))

    def load_pre(mod, sd, prefix, meta, strict, missing, unexpected, errors):
        log.append(("load_pre", type(mod).__name__, prefix, dict(meta), strict))

    def load_post(mod, keys):
        log.append(("load_post", type(mod).__name__, list(keys.missing_keys), list(keys.unexpected_keys)))
        keys.unexpected_keys.clear()  # edits in place are honoured by strict loading

    target = _net(lib)
    target.seq.register_load_state_dict_pre_hook(load_pre)
    target.seq.register_load_state_dict_post_hook(load_post)
    target._register_load_state_dict_pre_hook(lambda sd, prefix, *rest: log.append(("legacy_pre", prefix)))
    src = m.state_dict.__func__(_net(lib))
    src["seq.junk"] = lib.zeros(1)
    result = target.load_state_dict(src)
    returning = _net(lib)
    returning.register_load_state_dict_post_hook(lambda mod, keys: keys)
    return (log, list(sd), list(replaced), outcome(lambda: bad.state_dict()), again, repr(result),
            outcome(lambda: returning.load_state_dict(_net(lib).state_dict())))


def test_state_dict_hooks_match_torch(both):
    e, t = both(_hooks_case)
    assert e == t
    assert e[3][0] == "RuntimeError" and e[4][0] == "RuntimeError" and e[6][0] == "AssertionError"


def _extra_state_case(lib):
    class WithExtra(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = lib.nn.Linear(1, 1)
            self.note = "fresh"

        def get_extra_state(self):
            return {"note": self.note}

        def set_extra_state(self, state):
            self.note = state["note"] + " (loaded)"

    a, b = WithExtra(), WithExtra()
    a.note = "saved"
    sd = a.state_dict()
    b.load_state_dict(sd)
    missing = outcome(lambda: WithExtra().load_state_dict(_drop(sd, "_extra_state")))
    plain = lib.nn.Linear(1, 1)
    unexpected = outcome(lambda: plain.load_state_dict(_with(plain.state_dict(), _extra_state=1)))
    return list(sd), sd["_extra_state"], b.note, missing, unexpected


def test_extra_state_matches_torch(both):
    e, t = both(_extra_state_case)
    assert e == t


def test_metadata_version_reaches_load_from_state_dict(both):
    def case(lib):
        seen = []

        class Versioned(lib.nn.Linear):
            _version = 7

            def _load_from_state_dict(self, sd, prefix, meta, *rest):
                seen.append((prefix, dict(meta)))
                super()._load_from_state_dict(sd, prefix, meta, *rest)

        outer = lib.nn.Sequential(Versioned(1, 1))
        outer.load_state_dict(outer.state_dict())
        no_meta = OrderedDict(outer.state_dict())
        outer.load_state_dict(no_meta)
        outer.load_state_dict(outer.state_dict(), assign=True)
        return seen

    e, t = both(case)
    assert e == t


def test_load_copies_into_existing_parameters():
    m = _net(engine)
    w = m.fc1.weight
    src = fill_params(_net(engine), engine, seed=5)
    m.load_state_dict(src.state_dict())
    assert m.fc1.weight is w
    assert np.array_equal(w.detach().numpy(), src.fc1.weight.detach().numpy())
    assert not np.shares_memory(w.detach().numpy(), src.fc1.weight.detach().numpy())


def test_load_does_not_record_graph():
    m = _net(engine)
    m.load_state_dict(_net(engine).state_dict())
    assert m.fc1.weight.grad_fn is None and m.fc1.weight.is_leaf
    out = m.fc1(ramp(engine, 1, 3))
    assert out.requires_grad


def test_copy_failure_is_reported(both):
    def case(lib):
        m = lib.nn.Linear(1, 2)

        def broken(src):
            raise ValueError("cannot copy")

        m.weight.copy_ = broken
        return outcome(lambda: m.load_state_dict(lib.nn.Linear(1, 2).state_dict()))

    e, t = both(case)
    assert e == t
    assert e[0] == "RuntimeError" and "an exception occurred : ('cannot copy',)" in e[1]


def test_extra_state_defaults_raise(both):
    def case(lib):
        return (outcome(lambda: lib.nn.Module().get_extra_state()),
                outcome(lambda: lib.nn.Module().set_extra_state(1)))

    e, t = both(case)
    assert [x[0] for x in e] == [x[0] for x in t] == ["RuntimeError", "RuntimeError"]
    assert all(a[1] in b[1] for a, b in zip(e, t))
