"""autograd.Function in torch's modern style (``forward`` without ctx + ``setup_context``),
``mark_dirty``/``mark_non_differentiable``/``set_materialize_grads`` with torch's checks,
``autograd.grad``'s ``allow_unused``/``retain_graph``, and ``autograd.gradcheck``."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import engine
from engine.autograd.gradcheck import GradcheckError
from tests.gradcheck import gradcheck as fd_gradcheck
from tests.gradcheck import rand


def functions(lib):
    """The same custom Functions, defined over either library."""
    F = lib.autograd.Function

    class ScaledSquare(F):
        @staticmethod
        def forward(x, k, offset=0.5):
            return x * x * k + offset

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, k, offset = inputs
            ctx.save_for_backward(x)
            ctx.k = k
            ctx.n_inputs = len(inputs)
            ctx.seen_needs_input_grad = ctx.needs_input_grad

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 2 * x * ctx.k, None, None

    class MulAdd(F):
        """Two tensor inputs, two outputs; setup_context saves the output too."""

        @staticmethod
        def forward(a, b):
            return a * b, a + b

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(*inputs)

        @staticmethod
        def backward(ctx, g_prod, g_sum):
            a, b = ctx.saved_tensors
            return g_prod * b + g_sum, g_prod * a + g_sum

    class Double(F):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class DirtyNotReturned(F):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_dirty(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g

    class SortWithIndices(F):
        @staticmethod
        def forward(ctx, x):
            s, i = x.sort()
            ctx.mark_non_differentiable(i)
            ctx.save_for_backward(i)
            return s, i

        @staticmethod
        def backward(ctx, gs, gi):
            (i,) = ctx.saved_tensors
            ctx.gi = gi.tolist()
            g = lib.zeros_like(gs)
            g[i] = gs
            return g

    class Pair(F):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x.clone(), x.clone()

        @staticmethod
        def backward(ctx, g1, g2):
            ctx.got_none = (g1 is None, g2 is None)
            return g1 if g2 is None else g1 + g2

    class Exp(F):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        @lib.autograd.function.once_differentiable
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

    return {c.__name__: c for c in (ScaledSquare, MulAdd, Double, DirtyNotReturned, SortWithIndices, Pair, Exp)}


E, T = "engine", "torch"


def lib_of(name):
    return engine if name == E else pytest.importorskip("torch")


@pytest.mark.parametrize("name", [E, T])
def test_setup_context_style(name):
    lib = lib_of(name)
    fns = functions(lib)
    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = fns["ScaledSquare"].apply(x, 3.0)
    assert type(y.grad_fn).__name__ == "ScaledSquareBackward"
    # defaults are bound into ``inputs``; needs_input_grad is ready in setup_context
    assert y.grad_fn.n_inputs == 3 and y.grad_fn.seen_needs_input_grad == (True, False, False)
    assert y.tolist() == [3.5, 12.5, 27.5]
    y.sum().backward()
    assert x.grad.tolist() == [6.0, 12.0, 18.0]
    z = fns["ScaledSquare"].apply(x, k=1.0, offset=0.0)
    assert z.grad_fn.n_inputs == 3 and z.tolist() == [1.0, 4.0, 9.0]
    no_grad_input = fns["ScaledSquare"].apply(lib.ones(2), 2.0)
    assert not no_grad_input.requires_grad and no_grad_input.grad_fn is None


@pytest.mark.parametrize("name", [E, T])
def test_setup_context_two_outputs(name):
    lib = lib_of(name)
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    b = lib.tensor([3.0, -1.0], requires_grad=True)
    p, s = functions(lib)["MulAdd"].apply(a, b)
    assert p.grad_fn is s.grad_fn and (p.output_nr, s.output_nr) == (0, 1)
    (p.sum() * 2 + s.sum()).backward()
    assert a.grad.tolist() == [7.0, -1.0] and b.grad.tolist() == [3.0, 5.0]


def test_setup_context_function_passes_finite_differences():
    fn = functions(engine)["MulAdd"]
    fd_gradcheck(lambda a, b: fn.apply(a, b), rand(2, 3), rand(2, 3, seed=1))
    fd_gradcheck(lambda x: functions(engine)["ScaledSquare"].apply(x, 1.5), rand(4))


def test_forward_without_ctx_needs_setup_context(torch):
    """Without setup_context, forward gets ctx first (torch's error when it does not take it)."""
    def call(lib):
        class NoSetup(lib.autograd.Function):
            @staticmethod
            def forward(x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2

        NoSetup.apply(lib.ones(2, requires_grad=True))

    with pytest.raises(TypeError) as want:
        call(torch)
    with pytest.raises(TypeError) as got:
        call(engine)
    assert str(got.value) == str(want.value)


def test_base_setup_context_raises():
    with pytest.raises(NotImplementedError, match="setup_context is not implemented."):
        engine.autograd.Function.setup_context(None, (), None)


@pytest.mark.parametrize("name", [E, T])
def test_mark_dirty(name):
    lib = lib_of(name)
    fns = functions(lib)
    def version(t):
        return t._version
    a = lib.ones(2, requires_grad=True)
    b = a * 1
    out = fns["Double"].apply(b)
    assert out is b and type(out.grad_fn).__name__ == "DoubleBackward"
    assert version(b) == 2  # the in-place mul_ and mark_dirty's own bump
    out.sum().backward()
    assert a.grad.tolist() == [2.0, 2.0]
    plain = lib.ones(2)
    assert fns["Double"].apply(plain) is plain and version(plain) == 2
    with lib.no_grad():  # a leaf that requires grad is fine when nothing is recorded
        assert fns["Double"].apply(a).tolist() == [2.0, 2.0]


def dirty_errors(lib):
    fns = functions(lib)
    return {
        "leaf": lambda: fns["Double"].apply(lib.ones(2, requires_grad=True)),
        "not returned": lambda: fns["DirtyNotReturned"].apply(lib.ones(2) * lib.ones(2, requires_grad=True)),
        "not returned, no graph": lambda: fns["DirtyNotReturned"].apply(lib.ones(2)),
    }


@pytest.mark.parametrize("case", list(dirty_errors(engine)))
def test_mark_dirty_errors_match_torch(torch, case):
    with pytest.raises(RuntimeError) as want:
        dirty_errors(torch)[case]()
    with pytest.raises(RuntimeError) as got:
        dirty_errors(engine)[case]()
    assert str(got.value) == str(want.value)


def test_mark_dirty_messages():
    with pytest.raises(RuntimeError, match="^a leaf Variable that requires grad has been used in an in-place"):
        dirty_errors(engine)["leaf"]()
    with pytest.raises(RuntimeError, match="^Some elements marked as dirty during the forward method were not"):
        dirty_errors(engine)["not returned"]()


@pytest.mark.parametrize("name", [E, T])
def test_mark_non_differentiable_and_materialized_zero_grad(name):
    lib = lib_of(name)
    x = lib.tensor([3.0, 1.0, 2.0], requires_grad=True)
    s, i = functions(lib)["SortWithIndices"].apply(x)
    assert s.requires_grad and not i.requires_grad and i.grad_fn is None
    node = s.grad_fn
    (s * lib.tensor([1.0, 10.0, 100.0])).sum().backward()
    assert node.gi == [0, 0, 0]  # the index output's gradient arrives materialized as zeros
    assert x.grad.tolist() == [100.0, 1.0, 10.0]


@pytest.mark.parametrize("name", [E, T])
def test_set_materialize_grads_false_passes_none(name):
    lib = lib_of(name)
    x = lib.ones(2, requires_grad=True)
    p, q = functions(lib)["Pair"].apply(x)
    node = p.grad_fn
    p.sum().backward()
    assert node.got_none == (False, True) and x.grad.tolist() == [1.0, 1.0]


@pytest.mark.parametrize("name", [E, T])
def test_once_differentiable_backward(name):
    lib = lib_of(name)
    x = lib.tensor([0.0, 1.0], requires_grad=True)
    functions(lib)["Exp"].apply(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp([0.0, 1.0]), rtol=1e-6)


# --- autograd.grad: allow_unused, retain_graph, create_graph -----------------------------------


def grad_cases(lib):
    def unused():
        x, y = lib.ones(2, requires_grad=True), lib.ones(2, requires_grad=True)
        return lib.autograd.grad((x * 2).sum(), [x, y])

    def twice():
        x = lib.ones(2, requires_grad=True)
        out = (x * x).sum()
        lib.autograd.grad(out, x)
        return lib.autograd.grad(out, x)

    def no_grad_input():
        x = lib.ones(2, requires_grad=True)
        return lib.autograd.grad((x * 2).sum(), [lib.ones(2)])

    return {"unused": unused, "twice": twice, "no_grad_input": no_grad_input}


@pytest.mark.parametrize("case", list(grad_cases(engine)))
def test_grad_errors_match_torch(torch, case):
    with pytest.raises(RuntimeError) as want:
        grad_cases(torch)[case]()
    with pytest.raises(RuntimeError) as got:
        grad_cases(engine)[case]()
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("name", [E, T])
def test_grad_allow_unused_retain_graph_and_materialize(name):
    lib = lib_of(name)
    x, y = lib.tensor([1.0, 2.0], requires_grad=True), lib.ones(2, requires_grad=True)
    out = (x * x).sum()
    gx, gy = lib.autograd.grad(out, [x, y], allow_unused=True, retain_graph=True)
    assert gx.tolist() == [2.0, 4.0] and gy is None and x.grad is None
    gx2, gy2 = lib.autograd.grad(out, [x, y], allow_unused=True, materialize_grads=True)
    assert gx2.tolist() == [2.0, 4.0] and gy2.tolist() == [0.0, 0.0]


def test_create_graph_gives_a_gradient_with_a_graph():
    # (more in test_double_backward.py)
    x = engine.ones(2, requires_grad=True)
    (g,) = engine.autograd.grad((x * x).sum(), x, create_graph=True)
    assert g.requires_grad and g.tolist() == [2.0, 2.0]
    (h,) = engine.autograd.grad(g.sum(), x)
    assert h.tolist() == [2.0, 2.0]


# --- gradcheck ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [E, T])
def test_gradcheck_passes_on_correct_gradients(name):
    lib = lib_of(name)
    gen = np.random.default_rng(0)
    x = lib.tensor(gen.standard_normal(3), dtype=lib.float64, requires_grad=True)
    w = lib.tensor(gen.standard_normal((2, 3)), dtype=lib.float64, requires_grad=True)
    assert lib.autograd.gradcheck(lambda a, b: ((b @ a).tanh() * 2, a.sum(), a.detach()), (x, w)) is True
    assert lib.autograd.gradcheck(lambda a: (a ** 3).sum(), x, fast_mode=True) is True
    assert lib.autograd.gradcheck(functions(lib)["MulAdd"].apply, (x, x.detach().clone().requires_grad_()))


def bad_function(lib):
    class Bad(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * a

        @staticmethod
        def backward(ctx, g):
            return g * 3

    return Bad


def gradcheck_error(lib) -> type:
    """``GradcheckError`` of either library (``lib.autograd.gradcheck`` is the function)."""
    return importlib.import_module(f"{lib.__name__}.autograd.gradcheck").GradcheckError


def test_gradcheck_mismatch_message_matches_torch(torch):
    def run(lib):
        x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        return lib.autograd.gradcheck(bad_function(lib).apply, (x,))

    with pytest.raises(gradcheck_error(torch)) as want:
        run(torch)
    with pytest.raises(GradcheckError) as got:
        run(engine)
    assert str(got.value) == str(want.value).replace("torch.", "engine.")
    assert str(got.value).startswith("Jacobian mismatch for output 0 with respect to input 0,\nnumerical:")
    assert isinstance(got.value, RuntimeError) and engine.autograd.GradcheckError is GradcheckError


def test_gradcheck_returns_false_without_raising():
    x = engine.tensor([1.0, 2.0], dtype=engine.float64, requires_grad=True)
    assert engine.autograd.gradcheck(bad_function(engine).apply, (x,), raise_exception=False) is False


def test_gradcheck_names_the_failing_output_and_input():
    x = engine.tensor([1.0, 2.0], dtype=engine.float64, requires_grad=True)
    y = engine.tensor([0.5], dtype=engine.float64, requires_grad=True)
    with pytest.raises(GradcheckError, match="^Jacobian mismatch for output 1 with respect to input 1,"):
        engine.autograd.gradcheck(lambda a, b: (a * 2, bad_function(engine).apply(b)), (x, y))


def gradcheck_cases(lib):
    f64 = {"dtype": lib.float64}

    class Unscaled(lib.autograd.Function):
        """Right Jacobian for a one-element output, but backward ignores grad_output."""

        @staticmethod
        def forward(ctx, a):
            return a.sum()

        @staticmethod
        def backward(ctx, g):
            return lib.ones(2, **f64)

    return {
        "no input requires grad": (ValueError, lambda: lib.autograd.gradcheck(lambda a: a * 2, (lib.ones(2, **f64),))),
        "constant output expected": (
            gradcheck_error(lib),
            lambda: lib.autograd.gradcheck(lambda a: a.detach() * 2, (lib.ones(2, requires_grad=True, **f64),))),
        "stride 0": (RuntimeError, lambda: lib.autograd.gradcheck(
            lambda a: a * 2, (lib.ones(1, **f64).expand(3).requires_grad_(),))),
        "not multiplied by grad_output": (
            gradcheck_error(lib),
            lambda: lib.autograd.gradcheck(Unscaled.apply, (lib.ones(2, requires_grad=True, **f64),))),
    }


@pytest.mark.parametrize("case", list(gradcheck_cases(engine)))
def test_gradcheck_errors_match_torch(torch, case):
    want_type, want_fn = gradcheck_cases(torch)[case]
    got_type, got_fn = gradcheck_cases(engine)[case]
    with pytest.raises(want_type) as want:
        want_fn()
    with pytest.raises(got_type) as got:
        got_fn()
    assert str(got.value) == str(want.value)


def test_gradcheck_warns_for_float32_inputs(torch):
    for lib in (engine, torch):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        with pytest.warns(UserWarning, match="Input #0 requires gradient and is not a double precision"):
            lib.autograd.gradcheck(lambda a: a * 2, (x,), eps=1e-3, atol=1e-2)


def test_gradcheck_leaves_inputs_untouched():
    x = engine.tensor([0.3, -1.2], dtype=engine.float64, requires_grad=True)
    before = (x.tolist(), x._version)
    assert engine.autograd.gradcheck(lambda a: a.sin(), (x,))
    assert (x.tolist(), x._version) == before and x.grad is None


def test_gradcheck_refuses_checks_it_cannot_do():
    x = engine.ones(2, dtype=engine.float64, requires_grad=True)
    with pytest.raises(NotImplementedError, match="need forward-mode AD or vmap"):
        engine.autograd.gradcheck(lambda a: a * 2, (x,), check_forward_ad=True)


# --- autograd.functional.jacobian -------------------------------------------------------------


def jacobian_cases(lib):
    gen = np.random.default_rng(0)
    x = lib.tensor(gen.standard_normal((2, 3)).astype(np.float32))
    y = lib.tensor(gen.standard_normal(3).astype(np.float32))
    jac = lib.autograd.functional.jacobian
    return {
        "tensor -> tensor": lambda: jac(lambda a: a.tanh().sum(dim=1), x),
        "tuple -> tensor": lambda: jac(lambda a, b: (a * b).pow(2).sum(dim=0), (x, y)),
        "tensor -> tuple": lambda: jac(lambda a: (a.exp(), a.sum()), y),
        "tuple -> tuple, one constant": lambda: jac(lambda a, b: (a @ b, b * 2, lib.ones(1)), (x, y)),
        "output independent of an input": lambda: jac(lambda a, b: a * 3, (x, y)),
        "vectorize": lambda: jac(lambda a: a.sigmoid(), y, vectorize=True),
    }


def as_arrays(x):
    if isinstance(x, tuple):
        return ("tuple", [as_arrays(v) for v in x])
    return (str(x.dtype).split(".")[-1], tuple(x.shape), x.detach().numpy())


@pytest.mark.parametrize("case", list(jacobian_cases(engine)))
def test_jacobian_matches_torch(torch, case):
    def compare(e, t):
        assert type(e) is tuple if type(t) is tuple else isinstance(e, engine.Tensor)
        if isinstance(t, tuple):
            assert len(e) == len(t)
            for a, b in zip(e, t):
                compare(a, b)
            return
        assert tuple(e.shape) == tuple(t.shape) and e.dtype.name == str(t.dtype).split(".")[-1]
        assert not e.requires_grad
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-5, atol=1e-6)

    compare(jacobian_cases(engine)[case](), jacobian_cases(torch)[case]())


def test_jacobian_of_a_linear_map_is_the_matrix():
    w = engine.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    x = engine.ones(3, requires_grad=True)
    jac = engine.autograd.functional.jacobian(lambda v: w @ v, x)
    assert jac.tolist() == w.tolist() and x.grad is None


def jacobian_errors(lib):
    jac = lib.autograd.functional.jacobian
    x = lib.ones(2)
    return {
        "non-tensor input": (TypeError, lambda: jac(lambda a: a, 1.0)),
        "non-tensor in a tuple": (TypeError, lambda: jac(lambda a, b: a, (x, 2))),
        "non-tensor output": (TypeError, lambda: jac(lambda a: 3, x)),
        "strict, constant output": (RuntimeError, lambda: jac(lambda a: lib.ones(2), x, strict=True)),
        "strict, unused input": (RuntimeError, lambda: jac(lambda a, b: a * 2, (x, lib.ones(1)), strict=True)),
        "strict and vectorize": (RuntimeError, lambda: jac(lambda a: a, x, strict=True, vectorize=True)),
    }


@pytest.mark.parametrize("case", list(jacobian_errors(engine)))
def test_jacobian_errors_match_torch(torch, case):
    want_type, want_fn = jacobian_errors(torch)[case]
    got_type, got_fn = jacobian_errors(engine)[case]
    with pytest.raises(want_type) as want:
        want_fn()
    with pytest.raises(got_type) as got:
        got_fn()
    assert str(got.value) == str(want.value)


def test_jacobian_refuses_what_the_engine_lacks():
    with pytest.raises(NotImplementedError, match="forward-mode AD"):
        engine.autograd.functional.jacobian(lambda a: a * a, engine.ones(2), strategy="forward-mode")
