"""apply/_apply/to/float/double/half/type/cpu/cuda, train/eval, requires_grad_, zero_grad and
deepcopy, against torch."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import engine

from .parity import fill_params, outcome, ramp


def _net(lib):
    nn = lib.nn
    net = nn.Sequential(nn.Linear(2, 3), nn.Sequential(nn.Linear(3, 1), nn.Identity()))
    net.register_buffer("steps", lib.zeros(2, dtype=lib.long))
    net.register_buffer("avg", lib.ones(2))
    return fill_params(net, lib)


def _with_grads(lib):
    net = _net(lib)
    net(ramp(lib, 4, 2)).sum().backward()
    return net


def _dtypes(net):
    return ([(n, str(p.dtype).split(".")[-1], str(p.grad.dtype).split(".")[-1] if p.grad is not None else None)
             for n, p in net.named_parameters()] +
            [(n, str(b.dtype).split(".")[-1]) for n, b in net.named_buffers()])


def _convert(method, *args, prep=None, **kwargs):
    def case(lib):
        net = _with_grads(lib)
        if prep is not None:
            getattr(net, prep)()
        weight = net[0].weight
        out = getattr(net, method)(*[a(lib) if callable(a) else a for a in args], **kwargs)
        return out is net, net[0].weight is weight, _dtypes(net), net[0].weight

    return case


CONVERSIONS = {
    "double": _convert("double"),
    "float_after_double": _convert("float", prep="double"),
    "to_float32_after_double": _convert("to", lambda lib: lib.float32, prep="double"),
    "half": _convert("half"),
    "to_dtype": _convert("to", lambda lib: lib.float64),
    "to_dtype_kw": _convert("to", dtype=None),
    "to_tensor": _convert("to", lambda lib: lib.zeros(1, dtype=lib.float64)),
    "to_cpu": _convert("to", "cpu"),
    "to_device_dtype": _convert("to", "cpu", lambda lib: lib.float64),
    "cpu": _convert("cpu"),
    "type_dtype": _convert("type", lambda lib: lib.float64),
    "type_str": _convert("type", "torch.DoubleTensor"),
    "to_int": lambda lib: outcome(lambda: _net(lib).to(lib.long)),
}


@pytest.mark.parametrize("name", sorted(CONVERSIONS))
def test_conversions_match_torch(both, name):
    e, t = both(CONVERSIONS[name])
    assert e == t


def test_double_runs_in_float64(both):
    def case(lib):
        net = _net(lib).double()
        out = net(ramp(lib, 2, 2).double())
        out.sum().backward()
        return out, net[0].weight.grad

    e, t = both(case)
    assert e == t
    assert e[0][2] == "float64"


def test_cuda_raises_clearly():
    with pytest.raises(RuntimeError, match="no CUDA device"):
        _net(engine).cuda()
    with pytest.raises(RuntimeError, match="cpu"):
        _net(engine).to("cuda")
    with pytest.raises(TypeError, match="bfloat16"):
        _net(engine).bfloat16()


def test_to_rejects_junk():
    with pytest.raises(TypeError, match="invalid combination"):
        _net(engine).to([1])


def test_apply_and_private_apply(both):
    def case(lib):
        seen = []
        net = _net(lib)
        net.apply(lambda m: seen.append(type(m).__name__))
        calls = []

        def fn(t):
            calls.append(tuple(t.shape))
            return t * 2

        net._apply(fn)
        shallow = []
        net._apply(lambda t: shallow.append(tuple(t.shape)) or t, recurse=False)
        return seen, calls, shallow, net[0].bias, net.steps, type(net[0].bias).__name__

    e, t = both(case)
    assert e == t


def test_to_empty(both):
    def case(lib):
        net = _net(lib).to_empty(device="cpu")
        return [(n, tuple(p.shape), type(p).__name__) for n, p in net.named_parameters()]

    e, t = both(case)
    assert e == t


def test_train_eval(both):
    def case(lib):
        net = _net(lib)
        states = [[m.training for m in net.modules()]]
        assert net.eval() is net
        states.append([m.training for m in net.modules()])
        net[1].train()
        states.append([m.training for m in net.modules()])
        net.train(False)
        states.append([m.training for m in net.modules()])
        return states

    e, t = both(case)
    assert e == t


def test_requires_grad_and_zero_grad(both):
    def case(lib):
        net = _with_grads(lib)
        before = [p.grad is not None for p in net.parameters()]
        net.zero_grad(set_to_none=False)
        zeros = [p.grad for p in net.parameters()]
        net.zero_grad()
        after = [p.grad for p in net.parameters()]
        net[0].requires_grad_(False)
        flags = [p.requires_grad for p in net.parameters()]
        out = net(ramp(lib, 1, 2))
        out.sum().backward()
        return before, zeros, after, flags, [p.grad is None for p in net.parameters()]

    e, t = both(case)
    assert e == t


def test_zero_grad_keeps_grad_tensor():
    net = _with_grads(engine)
    g = net[0].weight.grad
    net.zero_grad(set_to_none=False)
    assert net[0].weight.grad is g and not g.detach().numpy().any()


def _deepcopy_case(lib):
    log = []
    net = _with_grads(lib)
    net[1][1] = net[0]  # a shared module
    net.register_forward_hook(lambda m, a, o: log.append("hook"))
    clone = copy.deepcopy(net)
    with lib.no_grad():
        clone[0].weight.add_(1)
    clone.register_buffer("x", None)
    return (clone[1][1] is clone[0], clone[0].weight is net[0].weight, net[0].weight, clone[0].weight,
            clone[0].weight.grad is None, type(clone[0].weight).__name__, clone.steps, len(clone._forward_hooks),
            list(clone.state_dict()), clone.training)


def test_deepcopy_matches_torch(both):
    e, t = both(_deepcopy_case)
    assert e == t
    assert e[0] is True and e[1] is False


def test_deepcopy_memory_is_independent():
    net = _net(engine)
    clone = copy.deepcopy(net)
    assert not np.shares_memory(net[0].weight.detach().numpy(), clone[0].weight.detach().numpy())
    assert clone[0].weight.requires_grad and clone[0].weight.is_leaf
    out = clone(ramp(engine, 1, 2))
    out.sum().backward()
    assert clone[0].weight.grad is not None and net[0].weight.grad is None


@pytest.mark.parametrize("kwargs", [{"foo": 1}, {"dtype": None, "copy": True}])
def test_to_keyword_errors(both, kwargs):
    e, t = both(lambda lib: outcome(lambda: _net(lib).to(**kwargs)))
    assert e[0] == t[0] and e[1] in t[1]
