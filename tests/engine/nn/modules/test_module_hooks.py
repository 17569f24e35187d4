"""Forward and backward hooks: firing order, arguments and return-value rules, against torch."""

from __future__ import annotations

import copy
import gc
import warnings

import numpy as np
import pytest

import engine

from .parity import fill_params, outcome, ramp


def _g(grads):
    """A hook's gradient tuple as plain data (None stays None)."""
    return tuple(None if g is None else np.round(g.detach().numpy().astype(np.float64), 4).tolist() for g in grads)


def _instrument(log, named, *, fwd=True, bwd=True, values=False):
    for name, m in named:
        if fwd:
            m.register_forward_pre_hook(lambda mod, a, n=name: log.append((n, "fpre", len(a))))
            m.register_forward_hook(lambda mod, a, o, n=name: log.append((n, "fwd")))
        if bwd:
            m.register_full_backward_pre_hook(
                lambda mod, go, n=name: log.append((n, "bpre", _g(go) if values else len(go))))
            m.register_full_backward_hook(
                lambda mod, gi, go, n=name: log.append((n, "bwd", _g(gi) if values else [g is None for g in gi])))


def _seq_case(requires_grad):
    def case(lib):
        log = []
        a, b = lib.nn.Linear(3, 3), lib.nn.Linear(3, 3)
        s = fill_params(lib.nn.Sequential(a, b), lib)
        _instrument(log, [("S", s), ("A", a), ("B", b)], values=True)
        x = ramp(lib, 2, 3, requires_grad=requires_grad)
        s(x).sum().backward()
        return log, x.grad

    return case


class _Twice:
    """A module that calls the same child twice, and a container holding one child twice."""

    @staticmethod
    def build(lib):
        class Twice(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.inner = lib.nn.Linear(2, 2)

            def forward(self, x):
                return self.inner(self.inner(x))

        return Twice()


def _reused_case(lib):
    log = []
    net = fill_params(_Twice.build(lib), lib)
    _instrument(log, [("T", net), ("inner", net.inner)], values=True)
    x = ramp(lib, 1, 2, requires_grad=True)
    net(x).sum().backward()
    return log


def _shared_in_sequential(lib):
    log = []
    a = lib.nn.Linear(2, 2)
    s = fill_params(lib.nn.Sequential(a, lib.nn.Identity(), a), lib)
    _instrument(log, [("S", s), ("A", a)])
    x = ramp(lib, 3, 2, requires_grad=True)
    s(x).sum().backward()
    return log


def _two_inputs(lib, which_require):
    class Add(lib.nn.Module):
        def forward(self, x, k, y):
            return x * k + y, y * 2

    log = []
    m = Add()
    _instrument(log, [("M", m)], values=True)
    x = ramp(lib, 2, requires_grad=which_require[0])
    y = ramp(lib, 2, requires_grad=which_require[1])
    out, other = m(x, 3, y)
    losses = [o.sum() for o in (out, other) if o.requires_grad]
    if losses:
        sum(losses).backward()
    return log, x.grad, y.grad


def _partial_outputs(lib):
    """Only one of three outputs is used: the others' grad_output entries are None."""
    log = []

    class Two(lib.nn.Module):
        def forward(self, x):
            return x * 2, x * 3, 5

    m = Two()
    m.register_full_backward_pre_hook(lambda mod, go: log.append(("pre", _g(go))))
    m.register_full_backward_hook(lambda mod, gi, go: log.append(("post", _g(gi), _g(go))))
    x = ramp(lib, 2, requires_grad=True)
    a, b, c = m(x)
    a.sum().backward()
    return log, x.grad, c


CASES = {
    "partial_outputs": _partial_outputs,
    "sequential_input_grad": _seq_case(True),
    "sequential_no_input_grad": _seq_case(False),
    "module_reused_in_forward": _reused_case,
    "module_shared_in_sequential": _shared_in_sequential,
    "two_inputs_both_grad": lambda lib: _two_inputs(lib, (True, True)),
    "two_inputs_first_grad": lambda lib: _two_inputs(lib, (True, False)),
    "two_inputs_second_grad": lambda lib: _two_inputs(lib, (False, True)),
    "two_inputs_no_grad": lambda lib: _two_inputs(lib, (False, False)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_hook_order_matches_torch(both, name):
    e, t = both(CASES[name])
    assert e == t
    assert e  # something fired


def test_nested_order_is_torch_documented_order():
    log = []
    a, b = engine.nn.Linear(3, 3), engine.nn.Linear(3, 3)
    s = engine.nn.Sequential(a, b)
    _instrument(log, [("S", s), ("A", a), ("B", b)], fwd=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s(engine.randn(2, 3, requires_grad=True)).sum().backward()
    assert [(n, k) for n, k, _ in log] == [("S", "bpre"), ("B", "bpre"), ("B", "bwd"), ("A", "bpre"),
                                            ("A", "bwd"), ("S", "bwd")]


def test_no_output_grad_means_no_backward_hooks(both):
    def case(lib):
        log = []
        m = lib.nn.Linear(2, 2)
        _instrument(log, [("M", m)], fwd=False)
        x = ramp(lib, 1, 2, requires_grad=True)
        with lib.no_grad():
            out = m(x)
        m.requires_grad_(False)
        out2 = m(ramp(lib, 1, 2))
        return log, out.requires_grad, out2.requires_grad, out.grad_fn is None

    e, t = both(case)
    assert e == t
    assert e[0] == []


def test_no_input_grad_warns_and_rejects_gradients(both):
    def case(lib):
        m = lib.nn.Linear(2, 2)
        m.register_full_backward_hook(lambda mod, gi, go: (lib.ones(1, 2),))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            res = outcome(lambda: m(ramp(lib, 1, 2)).sum().backward())
        return res, [str(x.message).split(" See ")[0] for x in w if "Full backward hook" in str(x.message)]

    e, t = both(case)
    assert e == t
    assert e[0][0] == "RuntimeError" and len(e[1]) == 1


def _replace_case(lib):
    m = fill_params(lib.nn.Linear(2, 2), lib)
    m.register_full_backward_pre_hook(lambda mod, go: (go[0] * 10,))
    m.register_full_backward_hook(lambda mod, gi, go: (gi[0] + 1,))
    m.register_forward_pre_hook(lambda mod, args: args[0] * 2)       # a bare value is wrapped
    m.register_forward_hook(lambda mod, args, out: out - 1)
    x = ramp(lib, 2, 2, requires_grad=True)
    y = m(x)
    y.sum().backward()
    return y, x.grad, m.weight.grad


def test_return_values_replace_inputs_outputs_and_grads(both):
    e, t = both(_replace_case)
    assert e == t


def _bad_count(lib, kind):
    m = lib.nn.Linear(2, 2)
    if kind == "pre":
        m.register_full_backward_pre_hook(lambda mod, go: (go[0], go[0]))
    else:
        m.register_full_backward_hook(lambda mod, gi, go: (gi[0], gi[0]))
    return outcome(lambda: m(ramp(lib, 1, 2, requires_grad=True)).sum().backward())


@pytest.mark.parametrize("kind", ["pre", "post"])
def test_wrong_number_of_gradients(both, kind):
    e, t = both(lambda lib: _bad_count(lib, kind))
    assert e == t
    assert e[0] == "RuntimeError"


def _prepend_case(lib):
    log = []
    m = lib.nn.Linear(2, 2)
    for tag in ("a", "b"):
        m.register_forward_pre_hook(lambda mod, a, t=tag: log.append(("fpre", t)), prepend=tag == "b")
        m.register_forward_hook(lambda mod, a, o, t=tag: log.append(("fwd", t)), prepend=tag == "b")
        m.register_full_backward_pre_hook(lambda mod, g, t=tag: log.append(("bpre", t)), prepend=tag == "b")
        m.register_full_backward_hook(lambda mod, gi, go, t=tag: log.append(("bwd", t)), prepend=tag == "b")
    mm = lib.nn.modules.module
    handles = [mm.register_module_forward_pre_hook(lambda mod, a: log.append(("fpre", "global"))),
               mm.register_module_forward_hook(lambda mod, a, o: log.append(("fwd", "global"))),
               mm.register_module_full_backward_pre_hook(lambda mod, g: log.append(("bpre", "global"))),
               mm.register_module_full_backward_hook(lambda mod, gi, go: log.append(("bwd", "global")))]
    try:
        m(ramp(lib, 1, 2, requires_grad=True)).sum().backward()
    finally:
        for h in handles:
            h.remove()
    m(ramp(lib, 1, 2))  # global hooks gone
    return log


def test_prepend_and_global_hooks(both):
    e, t = both(_prepend_case)
    assert e == t
    assert e[:3] == [("fpre", "global"), ("fpre", "b"), ("fpre", "a")]


def _kwargs_case(lib):
    log = []

    class M(lib.nn.Module):
        def forward(self, x, scale=1.0):
            return x * scale

    m = M()

    def pre(mod, args, kwargs):
        log.append(("pre", len(args), sorted(kwargs)))
        return (args[0] + 1,), {"scale": kwargs.get("scale", 1.0) * 2}

    def post(mod, args, kwargs, out):
        log.append(("post", sorted(kwargs)))
        return out + 100

    m.register_forward_pre_hook(pre, with_kwargs=True)
    m.register_forward_hook(post, with_kwargs=True)
    m.register_forward_hook(lambda mod, args, out: log.append(("plain", len(args))))
    out = m(ramp(lib, 2), scale=3.0)
    bad = M()
    bad.register_forward_pre_hook(lambda mod, a, k: 5, with_kwargs=True)
    return log, out, outcome(lambda: bad(ramp(lib, 2)))


def test_with_kwargs(both):
    e, t = both(_kwargs_case)
    assert e == t
    assert e[2][0] == "RuntimeError"


class _Boom(Exception):
    pass


def _always_call_case(lib, global_hook):
    log = []

    class Failing(lib.nn.Module):
        def forward(self, x):
            raise ValueError("forward failed")

    m = Failing()
    m.register_forward_hook(lambda mod, a, o: log.append(("normal", o)))
    m.register_forward_hook(lambda mod, a, o: log.append(("always", o)), always_call=True)
    m.register_forward_hook(lambda mod, a, k, o: log.append(("always_kwargs", sorted(k))),
                            always_call=True, with_kwargs=True)

    def raising(mod, a, o):
        raise RuntimeError("hook failed too")

    m.register_forward_hook(raising, always_call=True)
    handles = []
    if global_hook:
        mm = lib.nn.modules.module
        handles.append(mm.register_module_forward_hook(lambda mod, a, o: log.append(("global", o)), always_call=True))
    try:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            res = outcome(lambda: m(ramp(lib, 2), ))
    finally:
        for h in handles:
            h.remove()
    return log, res, [str(x.message) for x in w]


@pytest.mark.parametrize("global_hook", [False, True])
def test_always_call_hooks_run_when_forward_raises(both, global_hook):
    e, t = both(lambda lib: _always_call_case(lib, global_hook))
    assert e == t
    assert ("always", None) in e[0] and ("normal", None) not in e[0]
    assert e[1] == ("ValueError", "forward failed")


def test_always_call_hook_not_rerun_after_later_hook_raises(both):
    def case(lib):
        log = []
        m = lib.nn.Identity()
        m.register_forward_hook(lambda mod, a, o: log.append("always"), always_call=True)

        def boom(mod, a, o):
            raise KeyError("late")

        m.register_forward_hook(boom)
        return outcome(lambda: m(ramp(lib, 1))), log

    e, t = both(case)
    assert e == t
    assert e[1] == ["always"]


def _deprecated_case(lib):
    log = []

    class TwoNodes(lib.nn.Module):
        def forward(self, x):
            return (x * 2).sum(dim=1)

    m = TwoNodes()
    m.register_backward_hook(lambda mod, gi, go: log.append(("bwd", _g(gi), _g(go))))
    x = ramp(lib, 2, 2, requires_grad=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        m(x).sum().backward()
    lin = lib.nn.Linear(2, 2)
    lin.register_backward_hook(lambda mod, gi, go: None)
    with warnings.catch_warnings(record=True) as w2:
        warnings.simplefilter("always")
        lin(x)
    mixed = outcome(lambda: lin.register_full_backward_hook(lambda *a: None))
    full = lib.nn.Linear(2, 2)
    full.register_full_backward_hook(lambda *a: None)
    mixed2 = outcome(lambda: full.register_backward_hook(lambda *a: None))
    return (log, [(x.category.__name__, str(x.message)) for x in w],
            [(x.category.__name__, str(x.message)) for x in w2], mixed, mixed2)


def test_deprecated_backward_hook(both):
    e, t = both(_deprecated_case)
    assert e == t
    assert e[1] and e[1][0][0] == "FutureWarning"
    assert e[3][0] == "RuntimeError" and e[4][0] == "RuntimeError"


def test_global_backward_hook_kinds_cannot_mix(both):
    def case(lib):
        mm = lib.nn.modules.module
        h = mm.register_module_full_backward_hook(lambda *a: None)
        try:
            return outcome(lambda: mm.register_module_backward_hook(lambda *a: None))
        finally:
            h.remove()
            mm._global_is_full_backward_hook = None

    e, t = both(case)
    assert e == t
    assert e[0] == "RuntimeError"


def test_non_tensor_output_warns(both):
    def case(lib):
        class D(lib.nn.Module):
            def forward(self, x):
                return {"y": x * 2}

        m = D()
        m.register_full_backward_hook(lambda *a: None)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            out = m(ramp(lib, 2, requires_grad=True))
        return sorted(out), [str(x.message) for x in w]

    e, t = both(case)
    assert e == t
    assert "For backward hooks to be called" in e[1][0]


def test_removable_handle_semantics(both):
    def case(lib):
        log = []
        m = lib.nn.Identity()
        h1 = m.register_forward_hook(lambda *a: log.append(1), with_kwargs=False, always_call=True)
        h2 = m.register_forward_pre_hook(lambda *a: log.append(2), with_kwargs=True)
        ids_increase = h2.id == h1.id + 1
        m(ramp(lib, 1))
        h1.remove()
        h1.remove()  # a second remove is a no-op
        with m.register_forward_hook(lambda *a: log.append(3)):
            m(ramp(lib, 1))
        m(ramp(lib, 1))
        h2.remove()
        m(ramp(lib, 1))
        return (log, ids_increase, len(m._forward_hooks), len(m._forward_hooks_always_called),
                len(m._forward_pre_hooks_with_kwargs), len(m._forward_pre_hooks))

    e, t = both(case)
    assert e == t


def test_handle_does_not_keep_module_alive():
    m = engine.nn.Linear(2, 2)
    handle = m.register_forward_hook(lambda *a: None)
    ref = __import__("weakref").ref(m)
    del m
    gc.collect()
    assert ref() is None
    handle.remove()  # the module is gone: still a no-op, no error


def test_backward_hook_sees_kwargs_only_as_absent(both):
    def case(lib):
        log = []

        class M(lib.nn.Module):
            def forward(self, x, *, y):
                return x * y

        m = M()
        m.register_full_backward_hook(lambda mod, gi, go: log.append((len(gi), _g(gi))))
        x, y = ramp(lib, 2, requires_grad=True), ramp(lib, 2, requires_grad=True)
        m(x, y=y).sum().backward()
        return log, y.grad

    e, t = both(case)
    assert e == t


def _inplace_on_hooked_output(lib, kind):
    m = lib.nn.Linear(2, 2)
    if kind == "pre":
        m.register_full_backward_pre_hook(lambda *a: None)
        x = ramp(lib, 1, 2)
    else:
        m.register_full_backward_hook(lambda *a: None)
        x = ramp(lib, 1, 2, requires_grad=True)
    y = m(x)
    with lib.no_grad():
        y.mul_(1)  # allowed without grad mode
    return outcome(lambda: y.add_(1)), outcome(lambda: y[0].mul_(2))


@pytest.mark.parametrize("kind", ["pre", "post"])
def test_inplace_on_hooked_output_is_refused(both, kind):
    """torch treats the identity Function's outputs as views and forbids in-place updates
    (engine core fix: ``Function`` marks inputs returned as-is, ``_check_inplace`` refuses)."""
    e, t = both(lambda lib: _inplace_on_hooked_output(lib, kind))
    assert e[0] == t[0]
    assert e[0][0] == "RuntimeError" and "Output 0 of BackwardHookFunction is a view" in e[0][1]
    assert e[1][0] == t[1][0] == "RuntimeError"


def test_custom_function_returning_input_refuses_inplace(both):
    def case(lib):
        class Ident(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                ctx.mark_non_differentiable(b)
                return a, b

            @staticmethod
            def backward(ctx, ga, gb):
                return ga, None

        x = ramp(lib, 2, requires_grad=True) * 1
        y, z = Ident.apply(x, ramp(lib, 2))
        return outcome(lambda: y.relu_()), z.relu_(), y.clone().relu_().requires_grad

    e, t = both(case)
    assert e == t
    assert e[0][0] == "RuntimeError"


def test_hooks_fire_again_with_retain_graph_and_autograd_grad(both):
    def case(lib):
        log = []
        m = fill_params(lib.nn.Linear(2, 2), lib)
        _instrument(log, [("M", m)], fwd=False, values=True)
        x = ramp(lib, 1, 2, requires_grad=True)
        y = m(x).sum()
        y.backward(retain_graph=True)
        y.backward()
        z = m(x).sum()
        (gx,) = lib.autograd.grad(z, x)
        return log, x.grad, gx

    e, t = both(case)
    assert e == t
    assert len(e[0]) == 6


def test_identity_module_with_backward_hooks(both):
    def case(lib):
        log = []
        m = lib.nn.Identity()
        _instrument(log, [("I", m)], values=True)
        x = ramp(lib, 3, requires_grad=True)
        y = m(x)
        (y * 2).sum().backward()
        return log, y is x, x.grad

    e, t = both(case)
    assert e == t


def test_unused_output_gets_zeros_past_the_hooks_that_saw_none():
    """Engine-only (runs without torch): a module returning its inputs, one output unused. The
    backward pre-hook sees ``None`` for that output, the identity nodes pass zeros on, so the
    backward hook sees a zero gradient for its input and the leaf gets zeros. (torch 2.13 gives
    exactly these values; without the zeros the hook would see ``None`` and ``b.grad`` stay
    ``None``.)"""

    class Pair(engine.nn.Module):
        def forward(self, a, b):
            return a, b

    log = []
    m = Pair()
    m.register_full_backward_pre_hook(lambda mod, go: log.append(("pre", _g(go))))
    m.register_full_backward_hook(lambda mod, gi, go: log.append(("post", _g(gi), _g(go))))
    a, b = engine.ones(2, requires_grad=True), engine.ones(2, requires_grad=True)
    out_a, _ = m(a, b)
    (out_a * 3).sum().backward()
    assert log == [("pre", ([3.0, 3.0], None)), ("post", ([3.0, 3.0], [0.0, 0.0]), ([3.0, 3.0], None))]
    assert a.grad.tolist() == [3.0, 3.0] and b.grad.tolist() == [0.0, 0.0]


def test_deprecated_hook_sees_output_node_gradients(both):
    """The non-full hook sits on the output's grad_fn (AddmmBackward0 for Linear): its
    grad_input is that node's (bias, input, weight.T) gradients."""
    def case(lib):
        log = []
        lin = fill_params(lib.nn.Linear(2, 3), lib)
        lin.register_backward_hook(lambda m, gi, go: log.append((_g(gi), _g(go))))
        for rg in (True, False):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                lin(ramp(lib, 4, 2, requires_grad=rg)).sum().backward()
        return log

    e, t = both(case)
    assert e == t
    assert e[1][0][1] is None  # no input gradient when the input does not require grad


def _non_full_warning(lib, kind):
    class M(lib.nn.Module):
        def forward(self, x, k=1):
            if kind == "output":
                return {"y": x * 2}
            if kind == "many_nodes":
                return x * 2, x + 1
            if kind == "single_node":
                return x.exp()  # one node, fed directly by the (non-leaf) input: no warning
            return x * k

    m = M()
    m.register_backward_hook(lambda *a: None)
    x = ramp(lib, 2, requires_grad=True)
    x = x * 1 if kind == "single_node" else x
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        m(x, 3) if kind == "input" else m(x)
    return [(x.category.__name__, str(x.message)) for x in w]


@pytest.mark.parametrize("kind", ["output", "input", "many_nodes", "single_node"])
def test_non_full_backward_hook_warnings(both, kind):
    e, t = both(lambda lib: _non_full_warning(lib, kind))
    assert e == t
    assert (e == []) == (kind == "single_node")


def test_global_non_full_then_full_cannot_mix(both):
    def case(lib):
        mm = lib.nn.modules.module
        h = mm.register_module_backward_hook(lambda *a: None)
        try:
            return outcome(lambda: mm.register_module_full_backward_hook(lambda *a: None))
        finally:
            h.remove()
            mm._global_is_full_backward_hook = None

    e, t = both(case)
    assert e == t
    assert e[0] == "RuntimeError"


def test_global_non_full_backward_hook_fires(both):
    def case(lib):
        log = []
        mm = lib.nn.modules.module
        lin = fill_params(lib.nn.Linear(2, 2), lib)
        h = mm.register_module_backward_hook(lambda mod, gi, go: log.append((type(mod).__name__, _g(go))))
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                lin(ramp(lib, 1, 2, requires_grad=True)).sum().backward()
        finally:
            h.remove()
            mm._global_is_full_backward_hook = None
        return log

    e, t = both(case)
    assert e == t
    assert e


def test_copied_handle_removes_the_same_hook(both):
    def case(lib):
        m = lib.nn.Identity()
        h = m.register_forward_hook(lambda *a: None, always_call=True)
        c = copy.copy(h)
        c.remove()
        return c.id == h.id, len(m._forward_hooks), len(m._forward_hooks_always_called)

    e, t = both(case)
    assert e == t == (True, 0, 0)


def test_wrapped_hook_of_dead_module():
    m = engine.nn.Linear(1, 1)
    m.register_load_state_dict_pre_hook(lambda *a: None)
    (wrapped,) = m._load_state_dict_pre_hooks.values()
    alive = copy.copy(wrapped)
    assert alive.module() is m
    del m
    gc.collect()
    with pytest.raises(RuntimeError, match="dead Module"):
        wrapped({}, "", {}, True, [], [], [])
    with pytest.raises(RuntimeError, match="revive the hook of a dead Module"):
        copy.copy(wrapped)
