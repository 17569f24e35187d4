"""``engine.func.functional_call`` (and the deprecated ``nn.utils.stateless`` alias),
``engine.func.grad``/``grad_and_value`` against torch 2.13: swapping and restoring, tied weights,
``strict``, errors word for word, gradients to the passed tensors (a MAML step), transforms."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import engine
import engine.func
import engine.nn.utils.stateless


def twin_weights(tm, em) -> None:
    em.load_state_dict({k: engine.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})


def arr(seed, *shape):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def mlp(lib):
    return lib.nn.Sequential(lib.nn.Linear(3, 5), lib.nn.Tanh(), lib.nn.Linear(5, 2))


def both(torch):
    tm = mlp(torch)
    em = mlp(engine)
    twin_weights(tm, em)
    return (engine, em), (torch, tm)


def error_of(fn) -> tuple[type, str]:
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the type and message are what is compared
        return type(e), str(e)
    raise AssertionError("no error raised")


def same_error(torch, build) -> None:
    """``build(lib)`` returns a thunk that fails; engine and torch fail alike."""
    e_type, e_msg = error_of(build(engine))
    t_type, t_msg = error_of(build(torch))
    assert e_type.__name__ == t_type.__name__
    assert e_msg == t_msg.replace("torch.", "engine.") or e_msg == t_msg


# ---- functional_call ---------------------------------------------------------------------

def test_swaps_in_and_restores(torch):
    outs = {}
    for lib, m in both(torch):
        own = dict(m.named_parameters())
        new = {k: lib.tensor(arr(i, *p.shape)) for i, (k, p) in enumerate(own.items())}
        x = lib.tensor(arr(9, 4, 3))
        outs[lib.__name__] = (engine.func if lib is engine else torch.func).functional_call(m, new, (x,)).numpy()
        assert all(p is own[k] for k, p in m.named_parameters())
        assert not np.allclose(m(x).detach().numpy(), outs[lib.__name__])
    np.testing.assert_allclose(outs["engine"], outs["torch"], rtol=1e-5, atol=1e-6)


def test_restored_when_the_call_raises():
    class Boom(engine.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = engine.nn.Linear(2, 2)

        def forward(self, x):
            self.lin(x)
            raise ValueError("inside")

    m = Boom()
    w = m.lin.weight
    with pytest.raises(ValueError, match="inside"):
        engine.func.functional_call(m, {"lin.weight": engine.zeros(2, 2)}, engine.ones(1, 2))
    assert m.lin.weight is w and m.lin._parameters["weight"] is w


def test_args_kwargs_and_single_argument(torch):
    for lib in (engine, torch):
        class KW(lib.nn.Module):
            def __init__(self, lib=lib) -> None:
                super().__init__()
                self.w = lib.nn.Parameter(lib.ones(2))

            def forward(self, x, scale=1.0):
                return x * self.w * scale

        f = (engine.func if lib is engine else torch.func).functional_call
        v = lib.tensor([2.0, 3.0])
        assert f(KW(), {"w": v}, lib.ones(2)).tolist() == [2.0, 3.0]
        assert f(KW(), {"w": v}, (lib.ones(2),), {"scale": 2.0}).tolist() == [4.0, 6.0]
        assert f(KW(), ({"w": v}, {}), args=(lib.ones(2),)).tolist() == [2.0, 3.0]


def test_buffers_and_in_place_updates_go_to_the_given_tensors(torch):
    res = {}
    for lib in (engine, torch):
        bn = lib.nn.BatchNorm1d(3)
        own_mean = bn.running_mean
        given = {"running_mean": lib.zeros(3), "running_var": lib.ones(3), "num_batches_tracked": lib.tensor(0)}
        f = (engine.func if lib is engine else torch.func).functional_call
        y = f(bn, given, lib.tensor(arr(1, 8, 3)))
        assert bn.running_mean is own_mean and own_mean.tolist() == [0.0, 0.0, 0.0]
        res[lib.__name__] = (y.detach().numpy(), given["running_mean"].numpy(), given["num_batches_tracked"].item())
    np.testing.assert_allclose(res["engine"][0], res["torch"][0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(res["engine"][1], res["torch"][1], rtol=1e-6)
    assert res["engine"][2] == res["torch"][2] == 1


def test_reassigned_attribute_comes_back_in_the_dict(torch):
    """torch's note: a module that does ``self.foo = self.foo + 1`` leaves itself untouched and
    the dict holding the new value."""
    for lib in (engine, torch):
        class Foo(lib.nn.Module):
            def __init__(self, lib=lib) -> None:
                super().__init__()
                self.register_buffer("foo", lib.zeros(()))

            def forward(self, x):
                self.foo = self.foo + 1
                return x + self.foo

        m, a = Foo(), {"foo": lib.zeros(())}
        (engine.func if lib is engine else torch.func).functional_call(m, a, lib.ones(()))
        assert m.foo.item() == 0.0 and a["foo"].item() == 1.0, lib.__name__


def tied(lib):
    class Tied(lib.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b = lib.nn.Linear(2, 2, bias=False), lib.nn.Linear(2, 2, bias=False)
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.a(x) + self.b(x)

    return Tied()


def test_tied_weights_follow_the_given_value(torch):
    for lib in (engine, torch):
        f = (engine.func if lib is engine else torch.func).functional_call
        m, x, z = tied(lib), lib.ones(1, 2), lib.zeros(2, 2)
        own = m.b(x).detach()
        assert f(m, {"a.weight": z}, x).abs().sum().item() == 0.0
        np.testing.assert_allclose(f(m, {"a.weight": z}, x, tie_weights=False).detach().numpy(), own.numpy())
        assert f(m, {"a.weight": z, "b.weight": z}, x).abs().sum().item() == 0.0


def test_tied_weights_with_two_values_raise_as_torch(torch):
    same_error(torch, lambda lib: lambda: (engine.func if lib is engine else torch.func).functional_call(
        tied(lib), {"a.weight": lib.zeros(2, 2), "b.weight": lib.ones(2, 2)}, lib.ones(1, 2)))


@pytest.mark.parametrize("given", [["0.weight"], ["0.weight", "0.bias", "2.weight", "2.bias", "extra"]],
                         ids=["missing", "unexpected"])
def test_strict_errors_as_torch(torch, given):
    def build(lib):
        m = mlp(lib)
        f = (engine.func if lib is engine else torch.func).functional_call
        return lambda: f(m, {k: lib.zeros(1) for k in given}, lib.ones(1, 3), strict=True)

    same_error(torch, build)


@pytest.mark.parametrize("case", ["not_dict", "not_all_dicts", "repeated", "not_tensor", "no_submodule",
                                  "not_module"])
def test_bad_input_errors_as_torch(torch, case):
    models = {}

    def build(lib):
        m = models[lib.__name__] = mlp(lib)
        with lib.no_grad():
            for p in m.parameters():  # the same values: the messages print them
                p.fill_(0.5)
        f = (engine.func if lib is engine else torch.func).functional_call
        w = lib.zeros(5, 3)
        dicts = {
            "not_dict": 3, "not_all_dicts": [{"0.weight": w}, 3], "repeated": [{"0.weight": w}, {"0.weight": w}],
            "not_tensor": {"0.weight": 3}, "no_submodule": {"nope.weight": w}, "not_module": {"0.weight.x": w},
        }[case]
        return lambda: f(m, dicts, lib.ones(1, 3))

    thunk = build(engine)
    m = models["engine"]
    own = {k: id(p) for k, p in m.named_parameters()}
    error_of(thunk)
    assert {k: id(p) for k, p in m.named_parameters()} == own  # nothing left swapped in
    same_error(torch, build)


def test_deprecated_stateless_alias_warns_as_torch(torch):
    msgs = {}
    for lib, m in both(torch):
        mod = engine.nn.utils.stateless if lib is engine else torch.nn.utils.stateless
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            out = mod.functional_call(m, {}, lib.ones(1, 3))
        assert out.shape == (1, 2)
        msgs[lib.__name__] = [(w.category, str(w.message)) for w in rec]
    assert msgs["engine"] == msgs["torch"] and msgs["engine"][0][0] is FutureWarning


def maml_meta_grads(lib, m, func):
    """One MAML step: an inner SGD step taken with create_graph=True, the outer loss's gradients
    with respect to the meta parameters."""
    params = dict(m.named_parameters())
    xs, ys, xq, yq = (lib.tensor(arr(s, 6, d)) for s, d in ((1, 3), (2, 2), (3, 3), (4, 2)))
    inner = ((func.functional_call(m, params, (xs,)) - ys) ** 2).mean()
    grads = lib.autograd.grad(inner, list(params.values()), create_graph=True)
    fast = {k: p - 0.4 * g for (k, p), g in zip(params.items(), grads)}
    outer = ((func.functional_call(m, fast, (xq,)) - yq) ** 2).mean()
    outer.backward()
    return outer.item(), [p.grad.numpy() for p in m.parameters()]


def test_maml_outer_gradients_match_torch(torch):
    (_, em), (_, tm) = both(torch)
    e_loss, e_grads = maml_meta_grads(engine, em, engine.func)
    t_loss, t_grads = maml_meta_grads(torch, tm, torch.func)
    assert e_loss == pytest.approx(t_loss, rel=1e-5)
    for a, b in zip(e_grads, t_grads):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


# ---- grad / grad_and_value ---------------------------------------------------------------

def f_two(lib):
    return lambda x, y: (lib.sin(x) * y).sum() + (y ** 2).mean()


@pytest.mark.parametrize("argnums", [0, 1, (0, 1), (1, 0), -1])
def test_grad_matches_torch(torch, argnums):
    res = {}
    for lib in (engine, torch):
        x, y = lib.tensor(arr(0, 4)), lib.tensor(arr(1, 4))
        g = (engine.func if lib is engine else torch.func).grad(f_two(lib), argnums=argnums)(x, y)
        res[lib.__name__] = [t.numpy() for t in (g if isinstance(g, tuple) else (g,))]
        assert not x.requires_grad and not y.requires_grad
    for a, b in zip(res["engine"], res["torch"]):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_grad_and_value_with_aux_and_dicts(torch):
    res = {}
    for lib in (engine, torch):
        func = engine.func if lib is engine else torch.func
        d = {"a": lib.tensor(arr(0, 3)), "b": lib.tensor(arr(1, 3))}

        def f(d, lib=lib):
            loss = (d["a"] * lib.exp(d["b"])).sum()
            return loss, {"mean": d["a"].mean()}

        (g, (value, aux)) = func.grad_and_value(f, has_aux=True)(d)
        assert not value.requires_grad and not aux["mean"].requires_grad
        res[lib.__name__] = [g["a"].numpy(), g["b"].numpy(), value.numpy(), aux["mean"].numpy()]
    for a, b in zip(res["engine"], res["torch"]):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_grad_of_grad_and_unused_inputs(torch):
    for lib in (engine, torch):
        func = engine.func if lib is engine else torch.func
        assert func.grad(func.grad(lambda x: (x ** 3).sum()))(lib.tensor(2.0)).item() == pytest.approx(12.0)
        assert func.grad(lambda x, lib=lib: lib.tensor(2.0))(lib.ones(3)).tolist() == [0.0, 0.0, 0.0]
        assert func.grad(lambda x, y: y.sum(), argnums=0)(lib.ones(2), lib.ones(2)).tolist() == [0.0, 0.0]


def test_per_sample_loss_gradient_with_functional_call(torch):
    """``grad`` over ``functional_call``: gradients with respect to a parameter dict."""
    res = {}
    for lib, m in both(torch):
        func = engine.func if lib is engine else torch.func
        params = {k: v.detach() for k, v in m.named_parameters()}
        x, y = lib.tensor(arr(5, 4, 3)), lib.tensor(arr(6, 4, 2))
        g = func.grad(lambda p, m=m, func=func, x=x, y=y: ((func.functional_call(m, p, (x,)) - y) ** 2).mean())(params)
        res[lib.__name__] = [g[k].numpy() for k in params]
    for a, b in zip(res["engine"], res["torch"]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("case", ["not_scalar", "argnums_list", "argnum_range", "argnums_repeat", "argnums_empty",
                                  "aux_not_pair", "aux_one", "not_tensor", "integer", "no_inputs"])
@pytest.mark.parametrize("transform", ["grad", "grad_and_value"])
def test_grad_errors_as_torch(torch, case, transform):
    def build(lib):
        func = engine.func if lib is engine else torch.func
        x = lib.ones(3)
        f, kw, args = {
            "not_scalar": (lambda x: x, {}, (x,)),
            "argnums_list": (lambda x: x.sum(), dict(argnums=[0]), (x,)),
            "argnum_range": (lambda x: x.sum(), dict(argnums=2), (x,)),
            "argnums_repeat": (lambda x: x.sum(), dict(argnums=(0, 0)), (x,)),
            "argnums_empty": (lambda x: x.sum(), dict(argnums=()), (x,)),
            "aux_not_pair": (lambda x: x.sum(), dict(has_aux=True), (x,)),
            "aux_one": (lambda x: (x.sum(),), dict(has_aux=True), (x,)),
            "not_tensor": (lambda x: x.sum(), {}, (3.0,)),
            "integer": (lambda x: x.sum(), {}, (lib.ones(2, dtype=lib.long),)),
            "no_inputs": (lambda: x.sum(), {}, ()),
        }[case]
        return lambda: getattr(func, transform)(f, **kw)(*args)

    same_error(torch, build)


def test_jacrev_stays_missing():
    """vmap is provided now (tests/engine/func/test_vmap.py); jacrev is not."""
    with pytest.raises(AttributeError):
        engine.func.jacrev  # noqa: B018 - the attribute access is the test
