"""Lazy modules against torch 2.13: reprs and state dicts before the first call, the class,
shapes and outputs after it (torch's weights copied in), the hook order of the first call,
optimizers, loading state into lazy modules, and the errors of uninitialized placeholders."""

from __future__ import annotations

import copy
import importlib

import numpy as np
import pytest

import engine
from engine.nn.modules.lazy import LazyModuleMixin
from engine.nn.parameter import UninitializedBuffer, UninitializedParameter, is_lazy

# (class, constructor args, input shape)
CASES = [
    ("LazyLinear", (4,), (2, 3, 5)),
    ("LazyConv1d", (4, 3), (2, 3, 9)),
    ("LazyConv2d", (4, 3), (2, 3, 7, 6)),
    ("LazyConv3d", (2, 2), (1, 3, 4, 5, 4)),
    ("LazyConvTranspose1d", (4, 3), (2, 3, 9)),
    ("LazyConvTranspose2d", (4, 3), (2, 3, 5, 6)),
    ("LazyConvTranspose3d", (2, 2), (1, 3, 3, 4, 3)),
    ("LazyBatchNorm1d", (), (4, 3, 5)),
    ("LazyBatchNorm2d", (), (4, 3, 5, 2)),
    ("LazyBatchNorm3d", (), (2, 3, 2, 3, 2)),
    ("LazyInstanceNorm1d", (), (2, 3, 7)),
    ("LazyInstanceNorm2d", (), (2, 3, 4, 5)),
    ("LazyInstanceNorm3d", (), (2, 3, 2, 3, 4)),
]
IDS = [c[0] for c in CASES]


def data(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def to_engine(state: dict) -> dict:
    return {k: engine.tensor(v.detach().numpy()) for k, v in state.items()}


def norm(text: str) -> str:
    return text.replace("torch.", "engine.")


@pytest.mark.parametrize("name, args, shape", CASES, ids=IDS)
def test_before_and_after_the_first_call_as_torch(torch, name, args, shape):
    em, tm = getattr(engine.nn, name)(*args), getattr(torch.nn, name)(*args)
    assert repr(em) == repr(tm)
    assert {k: repr(v) for k, v in em.state_dict().items()} == {k: repr(v) for k, v in tm.state_dict().items()}
    assert em.has_uninitialized_params() and tm.has_uninitialized_params()

    x = data(shape)
    tm(torch.tensor(x))  # dry runs: materialise
    em(engine.tensor(x))
    assert type(em).__name__ == type(tm).__name__ == name.removeprefix("Lazy")
    assert repr(em) == repr(tm)
    assert not hasattr(em, "_initialize_hook") and not hasattr(em, "_load_hook")
    assert {k: tuple(v.shape) for k, v in em.state_dict().items()} == \
        {k: tuple(v.shape) for k, v in tm.state_dict().items()}
    assert all(type(p) is engine.nn.Parameter for p in em.parameters())

    em.load_state_dict(to_engine(tm.state_dict()))
    x2 = data(shape, seed=1)
    np.testing.assert_allclose(em(engine.tensor(x2)).detach().numpy(), tm(torch.tensor(x2)).detach().numpy(),
                               rtol=1e-4, atol=1e-5)


def hook_log(lib):
    """Pre-hooks around the lazy one: global, prepended, normal; then the forward hook."""
    m = lib.nn.LazyLinear(2)
    log = []
    m.register_forward_pre_hook(lambda mod, a: log.append(("pre", type(mod).__name__)))
    m.register_forward_pre_hook(lambda mod, a: log.append(("pre_prepended", type(mod).__name__)), prepend=True)
    m.register_forward_hook(lambda mod, a, o: log.append(("forward", type(mod).__name__)))
    handle = importlib.import_module(lib.__name__ + ".nn.modules.module").register_module_forward_pre_hook(
        lambda mod, a: log.append(("global_pre", type(mod).__name__)))
    try:
        m(lib.ones(1, 3))
        m(lib.ones(1, 3))
    finally:
        handle.remove()
    return log


def test_first_call_hook_order_as_torch(torch):
    """The lazy hook is the module's first own pre-hook: global pre-hooks and prepended ones see
    the lazy class, hooks registered after it see the materialised one."""
    assert hook_log(engine) == hook_log(torch)
    assert hook_log(engine)[:4] == [("global_pre", "LazyLinear"), ("pre_prepended", "LazyLinear"),
                                    ("pre", "Linear"), ("forward", "Linear")]


def train(lib, opt_before: bool):
    lib.manual_seed(0)
    model = lib.nn.Sequential(lib.nn.LazyLinear(6), lib.nn.Tanh(), lib.nn.LazyLinear(1))
    opt = lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.9) if opt_before else None
    x, y = lib.tensor(data((8, 3))), lib.tensor(data((8, 1), 2))
    model(x)  # the dry run
    with lib.no_grad():
        for i, p in enumerate(model.parameters()):
            p.copy_(lib.tensor(data(tuple(p.shape), 10 + i)) * 0.3)
    opt = opt or lib.optim.Adam(model.parameters(), lr=0.05)
    losses = []
    for _ in range(4):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("opt_before", [True, False], ids=["optimizer_before_dry_run", "after"])
def test_training_after_the_dry_run_as_torch(torch, opt_before):
    """An optimizer built on the placeholders keeps working (they are materialised in place)."""
    np.testing.assert_allclose(train(engine, opt_before), train(torch, opt_before), rtol=1e-5)


def test_loading_real_state_into_a_lazy_module(torch):
    for lib in (engine, torch):
        src = lib.nn.Linear(3, 2)
        lazy = lib.nn.LazyLinear(2)
        lazy.load_state_dict(src.state_dict())
        assert type(lazy).__name__ == "LazyLinear" and not lazy.has_uninitialized_params()
        assert lazy.weight.shape == (2, 3)
        x = lib.ones(1, 3)
        np.testing.assert_array_equal(lazy(x).detach().numpy(), src(x).detach().numpy())  # not re-drawn
        assert type(lazy).__name__ == "Linear"


def test_lazy_state_into_lazy_and_into_initialized(torch):
    for lib in (engine, torch):
        lazy = lib.nn.LazyLinear(2)
        lib.nn.LazyLinear(2).load_state_dict(lazy.state_dict())  # placeholders stay placeholders
        assert lazy.has_uninitialized_params()
        with pytest.raises(RuntimeError, match="^Can't access the shape of an uninitialized parameter or buffer"):
            lib.nn.Linear(3, 2).load_state_dict(lazy.state_dict())


def test_dtype_moves_before_the_dry_run(torch):
    for lib in (engine, torch):
        m = lib.nn.LazyLinear(2).double()
        assert m.weight.dtype == lib.float64 and is_lazy(m.weight) == isinstance(m.weight, UninitializedParameter)
        assert m(lib.ones(1, 3, dtype=lib.float64)).dtype == lib.float64
        assert m.weight.dtype == lib.float64 and tuple(m.weight.shape) == (2, 3)


def test_deepcopy_keeps_parameter_placeholders_and_refuses_buffer_ones(torch):
    for lib in (engine, torch):
        m = copy.deepcopy(lib.nn.LazyLinear(3))
        assert type(m.weight).__name__ == "UninitializedParameter" and m.has_uninitialized_params()
        assert m(lib.ones(1, 2)).shape == (1, 3)
        with pytest.raises(ValueError, match=r"^Attempted to use an uninitialized parameter in .*__deepcopy__"):
            copy.deepcopy(lib.nn.LazyBatchNorm1d())


def uninitialized(lib):
    return lib.nn.LazyLinear(2).weight


@pytest.mark.parametrize("use", ["numel", "sum", "add", "detach", "len", "bool", "dim", "zero_", "count_params",
                                 "parameters_to_vector"])
def test_using_a_placeholder_raises_torchs_value_error(torch, use):
    for lib in (engine, torch):
        p = uninitialized(lib)
        action = {
            "numel": lambda p: p.numel(), "sum": lambda p: p.sum(), "add": lambda p: p + 1,
            "detach": lambda p: p.detach(), "len": lambda p: len(p), "bool": lambda p: bool(p),
            "dim": lambda p: p.dim(), "zero_": lambda p: p.zero_(),
            "count_params": lambda p: sum(q.numel() for q in [p]),
            "parameters_to_vector": lambda p, lib=lib: lib.nn.utils.parameters_to_vector([p]),
        }[use]
        with pytest.raises(ValueError, match="^Attempted to use an uninitialized parameter in .*This error happens "
                                             "when you are using a `LazyModule` or explicitly manipulating "
                                             r"`(torch|engine)\.nn\.parameter\.UninitializedParameter` objects"):
            action(p)


def test_placeholder_attributes_as_torch(torch):
    for lib in (engine, torch):
        p = uninitialized(lib)
        assert repr(p) == str(p) == "<UninitializedParameter>"
        assert p.requires_grad and p.is_leaf and p.grad is None and p.dtype == lib.float32
        assert tuple(p.size()) == (0,)
        assert isinstance(p, lib.nn.Parameter)
        with pytest.raises(RuntimeError, match="^Can't access the shape of an uninitialized parameter"):
            p.shape  # noqa: B018 - the access is the test
        with pytest.raises(RuntimeError, match="^Can't share memory on an uninitialized parameter or buffer"):
            p.share_memory_()
    b = UninitializedBuffer(persistent=False)
    assert repr(b) == "<UninitializedBuffer>" and b.persistent is False and not b.requires_grad
    b.materialize((3,), dtype=engine.float64)
    assert type(b) is engine.Tensor and b.shape == (3,) and b.dtype == engine.float64


def test_bad_first_inputs_raise_as_torch(torch):
    for lib in (engine, torch):
        with pytest.raises(RuntimeError) as info:
            lib.nn.LazyConv2d(4, 3)(lib.ones(2, 3))
        assert norm(str(info.value)) == "Expected 3D (unbatched) or 4D (batched) input to LazyConv2d, but got " \
                                       "input of size: engine.Size([2, 3])"
        with pytest.raises(ValueError, match="^in_channels must be divisible by groups$"):
            lib.nn.LazyConv1d(4, 3, groups=2)(lib.ones(1, 3, 8))


def test_mixin_contract_errors_as_torch(torch):
    for lib, mixin in ((engine, LazyModuleMixin), (torch, torch.nn.modules.lazy.LazyModuleMixin)):
        P = UninitializedParameter if lib is engine else torch.nn.UninitializedParameter

        class NoInit(mixin, lib.nn.Module):
            def __init__(self, P=P) -> None:
                super().__init__()
                self.w = P()

        with pytest.raises(NotImplementedError, match="^initialize_parameters is not implemented for NoInit$"):
            NoInit()(lib.ones(1))

        class Half(mixin, lib.nn.Module):
            def __init__(self, P=P) -> None:
                super().__init__()
                self.w, self.v = P(), P()

            def initialize_parameters(self, x):
                self.w.materialize(x.shape)

        with pytest.raises(RuntimeError, match="^module Half has not been fully initialized$"):
            Half()(lib.ones(1))


def test_lazy_norm_defaults_as_torch(torch):
    """torch's lazy instance norms default to affine=True, track_running_stats=True."""
    for name in ("LazyInstanceNorm1d", "LazyBatchNorm1d"):
        e, t = getattr(engine.nn, name)(), getattr(torch.nn, name)()
        assert (e.affine, e.track_running_stats) == (t.affine, t.track_running_stats) == (True, True)
        assert list(e.state_dict()) == list(t.state_dict())
        e2, t2 = getattr(engine.nn, name)(affine=False, track_running_stats=False), \
            getattr(torch.nn, name)(affine=False, track_running_stats=False)
        assert repr(e2) == repr(t2) and not e2.has_uninitialized_params() and list(e2.state_dict()) == []
