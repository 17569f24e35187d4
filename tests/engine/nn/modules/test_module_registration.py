"""Attribute routing and registration: torch's rules, exception types and messages."""

from __future__ import annotations

import pytest

import engine

from .parity import outcome, ramp


def _net(lib):
    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = lib.nn.Linear(2, 2)
            self.w = lib.nn.Parameter(lib.zeros(2))
            self.register_buffer("b", lib.zeros(2))
            self.plain = 3

    return Net()


def _before_init(lib, value_fn, action="assign"):
    class Early(lib.nn.Module):
        def __init__(self):
            if action == "assign":
                self.x = value_fn(lib)
            elif action == "buffer":
                self.register_buffer("x", value_fn(lib))
            else:
                self.register_parameter("x", value_fn(lib))
            super().__init__()

    return outcome(Early)


def _nonleaf_param(lib):
    q = lib.nn.Parameter(lib.ones(2), requires_grad=False)
    q.mul_(lib.ones(2, requires_grad=True))  # in-place op gives the parameter a history
    return q


ERRORS = {
    # before Module.__init__()
    "param_before_init": lambda lib: _before_init(lib, lambda l: l.nn.Parameter(l.zeros(1))),
    "module_before_init": lambda lib: _before_init(lib, lambda l: l.nn.Linear(1, 1)),
    "buffer_obj_before_init": lambda lib: _before_init(lib, lambda l: l.nn.Buffer(l.zeros(1))),
    "register_buffer_before_init": lambda lib: _before_init(lib, lambda l: l.zeros(1), "buffer"),
    "register_param_before_init": lambda lib: _before_init(lib, lambda l: None, "param"),
    "tensor_before_init_is_plain": lambda lib: _before_init(lib, lambda l: l.zeros(1)),
    # wrong kinds onto registered names
    "tensor_onto_param": lambda lib: outcome(lambda: setattr(_net(lib), "w", lib.zeros(2))),
    "int_onto_param": lambda lib: outcome(lambda: setattr(_net(lib), "w", 3)),
    "int_onto_child": lambda lib: outcome(lambda: setattr(_net(lib), "fc", 3)),
    "tensor_onto_child": lambda lib: outcome(lambda: setattr(_net(lib), "fc", lib.zeros(1))),
    "int_onto_buffer": lambda lib: outcome(lambda: setattr(_net(lib), "b", [1])),
    # register_parameter
    "param_dot": lambda lib: outcome(lambda: _net(lib).register_parameter("a.b", None)),
    "param_empty": lambda lib: outcome(lambda: _net(lib).register_parameter("", None)),
    "param_exists": lambda lib: outcome(lambda: _net(lib).register_parameter("plain", None)),
    "param_exists_child": lambda lib: outcome(lambda: _net(lib).register_parameter("fc", None)),
    "param_exists_method": lambda lib: outcome(lambda: _net(lib).register_parameter("forward", None)),
    "param_name_int": lambda lib: outcome(lambda: _net(lib).register_parameter(1, None)),
    "param_not_param": lambda lib: outcome(lambda: _net(lib).register_parameter("p", lib.zeros(1))),
    "param_dot_and_bad_value": lambda lib: outcome(lambda: _net(lib).register_parameter("a.b", 5)),
    "param_nonleaf": lambda lib: outcome(lambda: _net(lib).register_parameter("q", _nonleaf_param(lib))),
    "param_nonleaf_setattr": lambda lib: outcome(lambda: setattr(_net(lib), "q", _nonleaf_param(lib))),
    # register_buffer
    "buffer_dot": lambda lib: outcome(lambda: _net(lib).register_buffer("a.b", None)),
    "buffer_empty": lambda lib: outcome(lambda: _net(lib).register_buffer("", None)),
    "buffer_exists": lambda lib: outcome(lambda: _net(lib).register_buffer("w", None)),
    "buffer_name_int": lambda lib: outcome(lambda: _net(lib).register_buffer(2, None)),
    "buffer_not_tensor": lambda lib: outcome(lambda: _net(lib).register_buffer("c", [1.0])),
    # add_module
    "module_not_module": lambda lib: outcome(lambda: _net(lib).add_module("m", 5)),
    "module_not_module_bad_name": lambda lib: outcome(lambda: _net(lib).add_module("a.b", 5)),
    "module_name_int": lambda lib: outcome(lambda: _net(lib).add_module(3, None)),
    "module_dot": lambda lib: outcome(lambda: _net(lib).add_module("a.b", None)),
    "module_empty": lambda lib: outcome(lambda: _net(lib).register_module("", None)),
    "module_exists": lambda lib: outcome(lambda: _net(lib).add_module("w", None)),
    "module_exists_plain": lambda lib: outcome(lambda: _net(lib).add_module("plain", lib.nn.Linear(1, 1))),
    # lookups
    "getattr_missing": lambda lib: outcome(lambda: _net(lib).nope),
    "delattr_missing": lambda lib: outcome(lambda: delattr(_net(lib), "nope")),
    "get_submodule_missing": lambda lib: outcome(lambda: _net(lib).get_submodule("fc.x")),
    "get_submodule_not_module": lambda lib: outcome(lambda: _net(lib).get_submodule("w")),
    "get_parameter_missing": lambda lib: outcome(lambda: _net(lib).get_parameter("fc.nope")),
    "get_parameter_not_param": lambda lib: outcome(lambda: _net(lib).get_parameter("b")),
    "get_buffer_not_buffer": lambda lib: outcome(lambda: _net(lib).get_buffer("fc.weight")),
    "get_buffer_missing": lambda lib: outcome(lambda: _net(lib).get_buffer("zz")),
    "set_submodule_empty": lambda lib: outcome(lambda: _net(lib).set_submodule("", lib.nn.Identity())),
    "set_submodule_not_module": lambda lib: outcome(lambda: _net(lib).set_submodule("fc", 3)),
    "set_submodule_strict_missing": lambda lib: outcome(lambda: _net(lib).set_submodule("new", lib.nn.Identity(), strict=True)),
    "set_submodule_onto_param": lambda lib: outcome(lambda: _net(lib).set_submodule("w", lib.nn.Identity())),
    # forward not implemented; init arguments
    "forward_missing": lambda lib: outcome(lambda: lib.nn.Module()(1)),
    "init_kwargs": lambda lib: outcome(lambda: lib.nn.Module(foo=1)),
    "init_args": lambda lib: outcome(lambda: lib.nn.Module(1, 2)),
    "train_not_bool": lambda lib: outcome(lambda: _net(lib).train(1)),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_match_torch(both, name):
    e, t = both(ERRORS[name])
    assert e == t


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_raise(name):
    """Every case but the control really raises (a regression would otherwise pass silently
    when both libraries change)."""
    result = ERRORS[name](engine)
    if name == "tensor_before_init_is_plain":
        assert not isinstance(result, Exception)
    else:
        assert isinstance(result, Exception)


def _routing(lib):
    """Where values end up after a series of assignments, as dict keys per registry."""
    m = _net(lib)
    log = []

    def state(tag):
        log.append((tag, list(m._parameters), list(m._buffers), list(m._modules),
                    sorted(m._non_persistent_buffers_set), "plain" in m.__dict__))

    state("start")
    m.w = None                          # None onto a parameter keeps the slot
    state("w=None")
    m.plain = lib.nn.Parameter(lib.ones(1))  # a Parameter replaces a plain attribute
    state("plain=Parameter")
    m.sub = lib.nn.Linear(1, 1)
    m.sub = lib.nn.Parameter(lib.ones(1))  # a Parameter replaces a child module
    state("sub=Parameter")
    m.bb = lib.nn.Buffer(lib.ones(1))
    m.bb = lib.nn.Identity()            # a Module replaces a buffer
    state("bb=Module")
    m.b = lib.ones(3)                   # a tensor onto a buffer name stays a buffer
    state("b=tensor")
    m.register_buffer("nb", lib.zeros(1), persistent=False)
    m.nb = lib.ones(1)                  # reassigning keeps it non-persistent
    state("nb")
    m.nb2 = lib.nn.Buffer(lib.zeros(1), persistent=False)
    state("Buffer(persistent=False)")
    m.t = lib.zeros(1)                  # a plain tensor is a plain attribute
    state("t=tensor")
    m.fc = None
    state("fc=None")
    m.b = None
    state("b=None")
    del m.w, m.nb, m.plain, m.t
    state("deleted")
    m.register_buffer("b", lib.ones(1), persistent=False)
    m.register_buffer("b", lib.ones(1), persistent=True)
    state("re-register persistent")
    return log, m.fc, m.b, getattr(m, "nb2", "missing")


def test_routing_matches_torch(both):
    e, t = both(_routing)
    assert e == t


def test_registration_hooks_match_torch(both):
    def case(lib):
        mm = lib.nn.modules.module
        log = []
        replacement = lib.nn.Parameter(lib.zeros(2, 2))
        hs = [
            mm.register_module_parameter_registration_hook(
                lambda m, n, p: log.append(("param", n)) or (replacement if n == "weight" else None)),
            mm.register_module_buffer_registration_hook(
                lambda m, n, b: log.append(("buffer", n)) or (lib.ones(1) if n == "b" else None)),
            mm.register_module_module_registration_hook(lambda m, n, s: log.append(("module", n, type(s).__name__))),
        ]
        try:
            net = lib.nn.Sequential(lib.nn.Linear(2, 2))
            net.register_buffer("b", lib.zeros(3))
            net.extra = lib.nn.Identity()
            net.extra = None
        finally:
            for h in hs:
                h.remove()
        return log, net[0].weight is replacement, net.b

    e, t = both(case)
    assert e == t


def test_dir_lists_registered_names(both):
    def case(lib):
        net = lib.nn.Sequential(lib.nn.Linear(1, 1))
        net.register_buffer("buf", lib.zeros(1))
        net.p = lib.nn.Parameter(lib.zeros(1))
        net.attr = 1
        names = dir(net)
        return [n for n in names if not n.startswith("__")] == sorted(n for n in names if not n.startswith("__")), \
            [n for n in ("buf", "p", "attr", "0", "forward", "training") if n in names]

    e, t = both(case)
    assert e == t


def test_ramp_helper_is_deterministic(torch):
    assert ramp(engine, 2, 3).tolist() == ramp(torch, 2, 3).tolist()
