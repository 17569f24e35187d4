"""Higher-order gradients: ``autograd.grad(..., create_graph=True)`` and what is built on it
(``backward(create_graph=True)``, gradgradcheck, functional.hessian/hvp/vhp/vjp/jvp).

Parity tests compare against torch (skipped without it): the first gradient and the gradient
of a scalar of it (``sum(g * g)``), for every op with a tensor backward. Finite-difference
tests check second derivatives without torch: the gradient function is itself checked by
``tests.gradcheck`` (central differences of the first derivative).
"""

from __future__ import annotations

import numpy as np
import pytest

import engine
from engine.autograd.gradcheck import GradcheckError
from tests.gradcheck import gradcheck as fd_gradcheck

RNG = np.random.default_rng(0)
A = RNG.standard_normal((3, 4))
B = RNG.standard_normal((3, 4))
POS = RNG.random((3, 4)) + 0.5
W = RNG.standard_normal((5, 4))
BIAS = RNG.standard_normal(5)
TARGET = [0, 3, 1]


def _grad_and_gradgrad(lib, fn, arrays):
    """``(first gradients, gradients of sum(g * g))`` of ``fn(lib, *inputs)`` as arrays."""
    xs = [lib.tensor(a, requires_grad=True) for a in arrays]
    gs = lib.autograd.grad(fn(lib, *xs), xs, create_graph=True)
    assert any(g.requires_grad for g in gs)  # (a constant gradient, such as clamp's, has no graph)
    second = lib.autograd.grad(sum((g * g).sum() for g in gs), xs, allow_unused=True)
    # torch may answer a ZeroTensor (abs's sign), which converts only when forced
    to_numpy = (lambda t: t.numpy(force=True)) if lib is not engine else (lambda t: t.numpy())
    return [g.detach().numpy() for g in gs], [None if h is None else to_numpy(h) for h in second]


def F(lib):
    return lib.nn.functional


CASES = {
    "add_sub_rsub": (lambda L, a, b: ((a + b * 2) * (a - b) * (2 - a)).sum(), A, B[0]),
    "add_alpha": (lambda L, a, b: (L.add(a, b, alpha=3) ** 2).sum(), A, B),
    "mul": (lambda L, a, b: (a * b * a).sum(), A, B),
    "div": (lambda L, a, b: (a / b + 1 / b).sum(), A, POS),
    "neg": (lambda L, a: (-a * a).sum(), A),
    "pow_scalar": (lambda L, a: (a ** 3 + a ** 2 + a ** 0).sum(), A),
    "pow_tensor": (lambda L, a, b: (a ** b).sum(), POS, B),
    "rpow": (lambda L, a: (2.0 ** a).sum(), A),
    "exp": (lambda L, a: (a.exp() * a).sum(), A),
    "log": (lambda L, a: (a.log() * a).sum(), POS),
    "sqrt": (lambda L, a: a.sqrt().sum(), POS),
    "rsqrt": (lambda L, a: a.rsqrt().sum(), POS),
    "tanh": (lambda L, a: a.tanh().sum(), A),
    "sigmoid": (lambda L, a: a.sigmoid().sum(), A),
    "sin_cos": (lambda L, a: (a.sin() * a.cos()).sum(), A),
    "reciprocal": (lambda L, a: a.reciprocal().sum(), POS),
    "relu": (lambda L, a: (a.relu() * a).sum(), A),
    "abs": (lambda L, a: (a.abs() * a).sum(), A),
    # piecewise-linear ops: their gradient's graph reaches their input with zeros, not nothing
    "relu_zero_edge": (lambda L, a, b: (a + b).relu().sum(), A, B),
    "leaky_relu_zero_edge": (lambda L, a, b: F(L).leaky_relu(a + b, 0.1).sum(), A, B),
    "leaky_relu_inplace": (lambda L, a, b: F(L).leaky_relu(a + b, 0.1, inplace=True).sum(), A, B),
    "abs_zero_edge": (lambda L, a, b: (a + b).abs().sum(), A, B),
    "l1_norm_zero_edge": (lambda L, a, b: (a + b).norm(1, dim=1).sum(), A, B),
    "max_pool": (lambda L, a: (F(L).max_pool2d((a * a).reshape(1, 1, 3, 4), 2, stride=1, padding=1) ** 3).sum(), A),
    "max_pool_indices": (lambda L, a: (F(L).max_pool2d(a.reshape(1, 3, 4), 2, return_indices=True)[0] ** 3).sum(),
                         A),
    "max_pool_zero_edge": (lambda L, a, b: F(L).max_pool2d((a + b).reshape(1, 1, 3, 4), 2, stride=1).sum(), A, B),
    "avg_pool": (lambda L, a: (F(L).avg_pool2d((a * a).reshape(1, 1, 3, 4), 2, stride=1, padding=1,
                                               count_include_pad=False) ** 3).sum(), A),
    "avg_pool_zero_edge": (lambda L, a, b: F(L).avg_pool2d((a + b).reshape(1, 1, 3, 4), 2, ceil_mode=True).sum(),
                           A, B),
    "adaptive_avg_pool": (lambda L, a: (F(L).adaptive_avg_pool2d((a * a).reshape(1, 3, 4), (2, 3)) ** 3).sum(), A),
    "clamp": (lambda L, a, b: (a.clamp(-0.5, 0.7) ** 3).sum() + (a + b).clamp(min=0.1).sum(), A, B),
    "layer_norm": (lambda L, a, w, b: (F(L).layer_norm(a * a, (4,), w[0], b[0], eps=1e-3) ** 3).sum(), A, B, POS),
    "layer_norm_all_dims": (lambda L, a, w: (F(L).layer_norm(a.tanh(), (3, 4)) ** 3 * w).sum(), A, B),
    "layer_norm_linear": (lambda L, a, w, b: (F(L).layer_norm(a, (4,), w[0], b[0]) ** 2).sum()
                          + F(L).layer_norm(a, (4,), w[0], b[0]).sum(), A, B, POS),
    "var_std": (lambda L, a: (a.var(1) ** 2).sum() + a.std() * a.std(0, keepdim=True).sum()
                + a.var(dim=(0, 1), unbiased=False), A),
    "repeat": (lambda L, a: (a.repeat(2, 1, 3) ** 3).sum() + (a.repeat_interleave(2, dim=1) ** 3).sum(), A),
    "where": (lambda L, a, b: L.where(a > 0, a * b, b * b).sum(), A, B),
    "masked_fill": (lambda L, a: (a.masked_fill(a > 0.3, 2.0) * a).sum(), A),
    "sum_mean": (lambda L, a: (a.sum(0, keepdim=True) ** 2).sum() + (a.mean(1) ** 2).sum() + a.mean() ** 2, A),
    "norm": (lambda L, a: (a.norm(2, dim=1) ** 3).sum() + a.norm() + (a.norm(1, dim=0) ** 2).sum(), A),
    "vector_norm": (lambda L, a: L.linalg.vector_norm(a, dim=-1).sum(), A),
    "softmax": (lambda L, a: (L.softmax(a, 1) ** 2 * a).sum(), A),
    "log_softmax": (lambda L, a: (L.log_softmax(a, 0) ** 2).sum(), A),
    "logsumexp": (lambda L, a: (L.logsumexp(a, 1) ** 2).sum(), A),
    "mm_t": (lambda L, a, w: ((a @ w.T) ** 2).sum(), A, W),
    "matmul_batched": (lambda L, a, b: ((a.reshape(3, 2, 2) @ b.reshape(3, 2, 2)) ** 2).sum(), A, B),
    "bmm": (lambda L, a, b: (L.bmm(a.reshape(1, 3, 4), b.reshape(1, 4, 3)) ** 2).sum(), A, B),
    "mv_dot": (lambda L, a, b: ((a @ b[0]) ** 2).sum() + (a[0] @ b[1]) ** 2, A, B),
    "linear": (lambda L, a, w, b: (F(L).linear(a, w, b) ** 2).sum(), A, W, BIAS),
    "linear_3d": (lambda L, a, w, b: (F(L).linear(a.reshape(3, 2, 2), w[:, :2], b).tanh()).sum(), A, W, BIAS),
    "addmm_scaled": (lambda L, c, a, b: (L.addmm(c[0, :3], a, b.T, beta=0.5, alpha=2.0) ** 2).sum(), B, A, B),
    "views": (lambda L, a: (a.view(4, 3).t().permute(1, 0).unsqueeze(0).squeeze(0).transpose(0, 1)
                            .expand(2, 3, 4) ** 3).sum(), A),
    "reshape_flatten": (lambda L, a: (a.t().reshape(12).flatten() ** 3).sum(), A),
    "cat_stack": (lambda L, a, b: (L.cat([a, b], 1) ** 3).sum() + (L.stack([a, b], 0) ** 3).sum(), A, B),
    "indexing": (lambda L, a: (a[1] ** 3).sum() + (a[:, 1:3] ** 3).sum() + (a[[0, 2, 0]] ** 3).sum(), A),
    "clone_contiguous": (lambda L, a: (a.t().contiguous().clone() ** 3).sum(), A),
    "silu": (lambda L, a: (F(L).silu(a) ** 2).sum(), A),
    "softplus": (lambda L, a: (F(L).softplus(a * 3, beta=2.0, threshold=1.5) ** 2).sum(), A),
    "gelu": (lambda L, a: (F(L).gelu(a) ** 2).sum(), A),
    "elu": (lambda L, a: (F(L).elu(a, 0.7) ** 2).sum(), A),
    "selu": (lambda L, a: (F(L).selu(a) ** 2).sum(), A),
    "leaky_relu": (lambda L, a: (F(L).leaky_relu(a, 0.2) ** 2).sum(), A),
    "cross_entropy": (lambda L, a: F(L).cross_entropy(a * a, L.tensor(TARGET)), A),
    "nll_loss_sum": (lambda L, a: F(L).nll_loss(L.log_softmax(a * a, 1), L.tensor(TARGET), reduction="sum"), A),
    "mse_loss": (lambda L, a, b: F(L).mse_loss(a * a, b) + F(L).mse_loss(a, b * a, reduction="sum"), A, B),
}


@pytest.mark.parametrize("name", list(CASES))
def test_second_derivatives_match_torch(name):
    torch = pytest.importorskip("torch")
    fn, *arrays = CASES[name]
    ours, theirs = _grad_and_gradgrad(engine, fn, arrays), _grad_and_gradgrad(torch, fn, arrays)
    for got, want in zip(ours[0] + ours[1], theirs[0] + theirs[1]):
        assert (got is None) == (want is None)
        if got is not None:
            np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-9)


FD_CASES = ["mul", "div", "pow_tensor", "exp", "tanh", "sigmoid", "sqrt", "softmax", "log_softmax", "norm",
            "linear", "views", "indexing", "cat_stack", "softplus", "gelu", "silu", "elu", "cross_entropy",
            "max_pool", "avg_pool", "adaptive_avg_pool", "layer_norm", "clamp", "var_std", "repeat"]


@pytest.mark.parametrize("name", FD_CASES)
def test_second_derivatives_by_finite_differences(name):
    """The gradient function ``x -> grad(f(x), x, create_graph=True)`` checked as any op is."""
    fn, *arrays = CASES[name]
    xs = [engine.tensor(a, requires_grad=True) for a in arrays]

    def gradient(*inputs):
        with engine.enable_grad():  # the finite differences evaluate under no_grad
            return engine.autograd.grad(fn(engine, *inputs), inputs, create_graph=True)

    fd_gradcheck(gradient, *xs)


def test_third_derivative_through_nested_tensor_backwards():
    x = engine.tensor(np.array([0.5, -1.0, 2.0]), requires_grad=True)
    (g1,) = engine.autograd.grad((x ** 4).sum(), x, create_graph=True)
    (g2,) = engine.autograd.grad(g1.sum(), x, create_graph=True)
    (g3,) = engine.autograd.grad(g2.sum(), x)
    np.testing.assert_allclose(g1.detach().numpy(), 4 * x.detach().numpy() ** 3)
    np.testing.assert_allclose(g2.detach().numpy(), 12 * x.detach().numpy() ** 2)
    np.testing.assert_allclose(g3.numpy(), 24 * x.detach().numpy())


def _critic(lib, weights):
    torch_nn = lib.nn
    net = torch_nn.Sequential(torch_nn.Linear(4, 8), torch_nn.LeakyReLU(0.2), torch_nn.Linear(8, 8),
                              torch_nn.Tanh(), torch_nn.Linear(8, 1))
    with lib.no_grad():
        for p, w in zip(net.parameters(), weights):
            p.copy_(lib.tensor(w))
    return net


def _gradient_penalty(lib, weights, real, fake, eps):
    critic = _critic(lib, weights)
    alpha = lib.tensor(eps)
    x_hat = (alpha * lib.tensor(real) + (1 - alpha) * lib.tensor(fake)).requires_grad_(True)
    scores = critic(x_hat)
    (g,) = lib.autograd.grad(scores.sum(), x_hat, create_graph=True)
    penalty = ((g.norm(2, dim=1) - 1) ** 2).mean()
    penalty.backward()
    return penalty.item(), [None if p.grad is None else p.grad.numpy() for p in critic.parameters()]


def test_wgan_gp_gradient_penalty_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    shapes = [(8, 4), (8,), (8, 8), (8,), (1, 8), (1,)]
    weights = [(rng.standard_normal(s) * 0.7).astype(np.float32) for s in shapes]
    real = rng.standard_normal((6, 4)).astype(np.float32)
    fake = rng.standard_normal((6, 4)).astype(np.float32)
    eps = rng.random((6, 1)).astype(np.float32)
    ours = _gradient_penalty(engine, weights, real, fake, eps)
    theirs = _gradient_penalty(torch, weights, real, fake, eps)
    assert ours[0] == pytest.approx(theirs[0], rel=1e-5)
    for got, want in zip(ours[1], theirs[1]):
        assert (got is None) == (want is None)  # the last bias does not move the input gradient
        if got is not None:
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


def test_backward_create_graph_leaves_grads_with_a_graph():
    torch = pytest.importorskip("torch")
    results = []
    for lib in (engine, torch):
        x = lib.tensor(np.array([0.3, -1.2, 2.0]), requires_grad=True)
        with pytest.warns(UserWarning, match="^Using backward\\(\\) with create_graph=True will create a "
                                             "reference cycle between the parameter and its gradient"):
            (x.sin() * x * x).sum().backward(create_graph=True)
        first = x.grad
        assert first.requires_grad and first.grad_fn is not None
        (h,) = lib.autograd.grad(first.sum(), x)
        results.append((first.detach().numpy().copy(), h.numpy()))
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-10)


def test_create_graph_false_is_unchanged():
    x = engine.tensor([1.0, 2.0], requires_grad=True)
    (g,) = engine.autograd.grad((x * x).sum(), x)
    assert not g.requires_grad and g.grad_fn is None and g.tolist() == [2.0, 4.0]
    y = (x * x).sum()
    y.backward()
    assert x.grad.grad_fn is None and not x.grad.requires_grad
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()  # the graph was freed: retain_graph defaults to False without create_graph


def test_grad_outputs_with_a_graph_are_differentiated_through():
    """``create_graph`` gradients depend on the given grad_outputs, as in torch (double-vjp)."""
    torch = pytest.importorskip("torch")
    results = []
    for lib in (engine, torch):
        x = lib.tensor(np.array([0.5, 1.5]), requires_grad=True)
        v = lib.tensor(np.array([2.0, -1.0]), requires_grad=True)
        (g,) = lib.autograd.grad(x.exp(), x, v, create_graph=True)
        (gv,) = lib.autograd.grad((g * g).sum(), v)
        results.append(gv.numpy())
    np.testing.assert_allclose(results[0], results[1])


def test_hessian_vector_product_by_hand_and_by_functional():
    torch = pytest.importorskip("torch")

    def f(lib, x):
        return (x.sin() * x.sum() + x ** 3).sum()

    x0 = np.array([0.2, -0.7, 1.1])
    v0 = np.array([1.0, 0.5, -2.0])
    results = []
    for lib in (engine, torch):
        x = lib.tensor(x0, requires_grad=True)
        (g,) = lib.autograd.grad(f(lib, x), x, create_graph=True)
        (hv,) = lib.autograd.grad(g, x, lib.tensor(v0))
        _, hvp = lib.autograd.functional.hvp(lambda t, lib=lib: f(lib, t), lib.tensor(x0), lib.tensor(v0))
        _, vhp = lib.autograd.functional.vhp(lambda t, lib=lib: f(lib, t), lib.tensor(x0), lib.tensor(v0))
        results.append((hv.numpy(), hvp.numpy(), vhp.numpy()))
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-10)
    np.testing.assert_allclose(results[0][0], results[0][1])


def test_hessian_matches_torch_for_one_and_several_inputs():
    torch = pytest.importorskip("torch")
    x0, y0 = np.array([1.0, 2.0, 0.5]), np.array([0.3, -0.4])

    def one(lib):
        return lib.autograd.functional.hessian(lambda x: (x ** 3).sum() * x[0] + x.exp().sum() ** 2,
                                               lib.tensor(x0))

    def two(lib):
        return lib.autograd.functional.hessian(lambda x, y: (x.sum() * y * y).sum() + (x * x).sum() * y[0],
                                               (lib.tensor(x0), lib.tensor(y0)))

    np.testing.assert_allclose(one(engine).numpy(), one(torch).numpy(), rtol=1e-10)
    ours, theirs = two(engine), two(torch)
    for i in range(2):
        for j in range(2):
            assert tuple(ours[i][j].shape) == tuple(theirs[i][j].shape)
            np.testing.assert_allclose(ours[i][j].numpy(), theirs[i][j].numpy(), rtol=1e-10, atol=1e-12)


def test_hessian_of_a_quadratic_form_without_torch():
    m = np.array([[2.0, 1.0], [1.0, 3.0]])
    h = engine.autograd.functional.hessian(lambda x: 0.5 * (x @ engine.tensor(m) @ x),
                                           engine.tensor(np.array([0.7, -0.1])))
    np.testing.assert_allclose(h.numpy(), m)
    assert not h.requires_grad


def test_hessian_errors_match_torch():
    torch = pytest.importorskip("torch")
    for fn in (lambda x: x * 2, lambda x: (x.sum(), x.sum())):
        errors = []
        for lib in (engine, torch):
            with pytest.raises(RuntimeError) as e:
                lib.autograd.functional.hessian(fn, lib.ones(2))
            errors.append(str(e.value))
        assert errors[0] == errors[1]


def test_vjp_and_jvp_match_torch():
    torch = pytest.importorskip("torch")
    x0, v_out, v_in = np.array([0.5, 1.0, -1.5]), np.array([1.0, -2.0]), np.array([0.3, 0.1, 2.0])

    def f(x):
        return (x[:2] * x[1:]).exp()

    results = []
    for lib in (engine, torch):
        out, vj = lib.autograd.functional.vjp(f, lib.tensor(x0), lib.tensor(v_out))
        out2, jv = lib.autograd.functional.jvp(f, lib.tensor(x0), lib.tensor(v_in))
        assert not vj.requires_grad and not jv.requires_grad
        results.append((out.numpy(), vj.numpy(), out2.numpy(), jv.numpy()))
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-10)


def test_jacobian_with_create_graph_keeps_the_graph():
    torch = pytest.importorskip("torch")
    results = []
    for lib in (engine, torch):
        x = lib.tensor(np.array([0.4, -0.3]), requires_grad=True)
        jac = lib.autograd.functional.jacobian(lambda t: t.exp() * t.sum(), x, create_graph=True)
        assert jac.requires_grad
        (g,) = lib.autograd.grad((jac ** 2).sum(), x)
        results.append((jac.detach().numpy(), g.numpy()))
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-10)


class _Cube(engine.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x * x


class _CubeWrongSecond(_Cube):
    """First derivative right, second wrong: the backward detaches what it differentiates."""

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x.detach() ** 2


def test_custom_function_backward_records_a_graph():
    x = engine.tensor(np.array([1.0, -2.0]), requires_grad=True)
    (g,) = engine.autograd.grad(_Cube.apply(x).sum(), x, create_graph=True)
    (h,) = engine.autograd.grad(g.sum(), x)
    assert h.tolist() == [6.0, -12.0]


def test_once_differentiable_backward_gives_constants():
    class Cube(_Cube):
        @staticmethod
        @engine.autograd.once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x * x

    x = engine.tensor(np.array([1.0, -2.0]), requires_grad=True)
    (g,) = engine.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
    assert g.tolist() == [3.0, 12.0] and not g.requires_grad


def test_gradgradcheck_passes_on_correct_ops():
    x = engine.tensor(A[:2], requires_grad=True)
    w = engine.tensor(W[:3], requires_grad=True)
    assert engine.autograd.gradgradcheck(lambda a, b: F(engine).softplus(a @ b.T).tanh(), (x, w))
    assert engine.autograd.gradgradcheck(lambda a: (a.norm(dim=1) * a.sum(0)[:2]).exp(), (x,))
    go = engine.tensor(RNG.standard_normal((2, 3)), requires_grad=True)
    assert engine.autograd.gradgradcheck(lambda a, b: a @ b.T * a.sum(), (x, w), (go,))
    assert engine.autograd.gradgradcheck(_Cube.apply, (x,))


def test_gradgradcheck_fails_on_a_wrong_second_derivative():
    x = engine.tensor(np.array([0.5, -1.0, 2.0]), requires_grad=True)
    assert engine.autograd.gradcheck(_CubeWrongSecond.apply, (x,))  # the first derivative is right
    with pytest.raises(GradcheckError, match=r"^Jacobian mismatch for output 0 with respect to input 0"):
        engine.autograd.gradgradcheck(_CubeWrongSecond.apply, (x,))
    assert engine.autograd.gradgradcheck(_CubeWrongSecond.apply, (x,), raise_exception=False) is False


def test_gradgradcheck_matches_torch_on_the_same_functions():
    torch = pytest.importorskip("torch")
    for lib in (engine, torch):
        x = lib.tensor(A[:2], requires_grad=True)
        assert lib.autograd.gradgradcheck(lambda a, lib=lib: lib.log_softmax(a * a, 1), (x,))


def test_gradgradcheck_refuses_forward_mode_checks():
    x = engine.ones(2, requires_grad=True)
    with pytest.raises(NotImplementedError, match="check_fwd_over_rev and check_batched_grad need forward-mode"):
        engine.autograd.gradgradcheck(lambda a: a * a, (x,), check_fwd_over_rev=True)


def test_op_without_double_backward_is_named_in_the_error():
    x = engine.ones(2, 3, requires_grad=True)
    with pytest.raises(NotImplementedError) as e:
        engine.autograd.grad(engine.cumsum(x, 1).sum(), x, create_graph=True)
    assert str(e.value) == ("double backward through CumsumBackward0 is not supported by engine "
                            "(create_graph=True)")
    (g,) = engine.autograd.grad(engine.cumsum(x, 1).sum(), x)  # first order still works
    assert g.tolist() == [[3.0, 2.0, 1.0]] * 2


def test_output_saving_ops_differentiate_through_their_output():
    """exp, tanh, softmax... keep their output, not their input: changing the input in place
    afterwards does not matter (as in torch), and a changed output is refused."""
    torch = pytest.importorskip("torch")
    results = []
    for lib in (engine, torch):
        x = lib.tensor(np.array([0.5, 1.0]), requires_grad=True)
        y = x * 1
        z = y.exp() * y.tanh().sum() + lib.softmax(y, 0)
        y.add_(1)
        (g,) = lib.autograd.grad(z.sum(), x, create_graph=True)
        (h,) = lib.autograd.grad(g.sum(), x)
        results.append((g.detach().numpy(), h.numpy()))
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-10)
    errors = []
    for lib in (engine, torch):
        x = lib.tensor(np.array([0.5, 1.0]), requires_grad=True)
        z = (x * 1).exp()
        z.mul_(2)
        with pytest.raises(RuntimeError) as e:
            lib.autograd.grad(z.sum(), x, create_graph=True)
        errors.append(str(e.value).replace("torch.", "engine."))
    assert errors[0] == errors[1]


def test_double_backward_through_an_inplace_op_uses_the_old_value():
    torch = pytest.importorskip("torch")
    results = []
    for lib in (engine, torch):
        x = lib.tensor(np.array([0.5, -1.0]), requires_grad=True)
        y = x * 2
        y.tanh_()
        (g,) = lib.autograd.grad((y * y).sum(), x, create_graph=True)
        (h,) = lib.autograd.grad(g.sum(), x)
        results.append((g.detach().numpy(), h.numpy()))
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-10)


def test_tensor_hooks_see_tensors_with_a_graph():
    torch = pytest.importorskip("torch")
    results = []
    for lib in (engine, torch):
        x = lib.tensor(np.array([1.0, 2.0]), requires_grad=True)
        seen = []
        y = x * x
        y.register_hook(lambda g, seen=seen: seen.append(g.requires_grad) or g * 2)
        (g,) = lib.autograd.grad(y.sum() * x.sum(), x, create_graph=True)
        (h,) = lib.autograd.grad(g.sum(), x)
        results.append((seen, g.detach().numpy(), h.numpy()))
    assert results[0][0] == results[1][0]
    for got, want in zip(results[0][1:], results[1][1:]):
        np.testing.assert_allclose(got, want, rtol=1e-10)


CONV_CASES = [
    ((2, 3, 7, 6), (4, 3, 3, 3), {}),  # the row-unfolded kernel
    ((2, 3, 7, 6), (4, 3, 3, 2), {"stride": 2, "padding": 1}),
    ((2, 4, 7, 6), (4, 2, 3, 3), {"groups": 2, "dilation": 2, "padding": 2}),
    ((2, 3, 8), (5, 3, 3), {"stride": 2}),  # conv1d
    ((2, 3, 7, 6), (2, 3, 3, 3), {"padding": "same"}),
    ((3, 7, 6), (4, 3, 3, 3), {"padding": 1}),  # unbatched
    ((2, 3, 7, 6), (6, 1, 3, 3), {"groups": 3, "stride": 2, "padding": 1}),  # depthwise
]


def _conv_grads(lib, x0, w0, b0, kw, x_grad):
    x = lib.tensor(x0, requires_grad=x_grad)
    w, b = lib.tensor(w0, requires_grad=True), lib.tensor(b0, requires_grad=True)
    conv = lib.nn.functional.conv1d if len(w0.shape) == 3 else lib.nn.functional.conv2d
    y = conv(x, w, b, **kw).tanh()
    ins = (x, w, b) if x_grad else (w, b)
    gs = lib.autograd.grad((y * y).sum(), ins, create_graph=True)
    second = lib.autograd.grad(sum((g ** 2).sum() for g in gs), ins, allow_unused=True)
    return [g.detach().numpy() for g in gs] + [None if h is None else h.numpy() for h in second]


@pytest.mark.parametrize("x_grad", [True, False])
@pytest.mark.parametrize("case", range(len(CONV_CASES)))
def test_conv_second_derivatives_match_torch(case, x_grad):
    torch = pytest.importorskip("torch")
    xs, ws, kw = CONV_CASES[case]
    rng = np.random.default_rng(case)
    arrays = rng.standard_normal(xs), rng.standard_normal(ws), rng.standard_normal(ws[0])
    ours, theirs = _conv_grads(engine, *arrays, kw, x_grad), _conv_grads(torch, *arrays, kw, x_grad)
    for got, want in zip(ours, theirs):
        assert (got is None) == (want is None)
        if got is not None:
            np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-10)


def test_conv_second_derivatives_by_finite_differences():
    rng = np.random.default_rng(7)
    x = engine.tensor(rng.standard_normal((1, 2, 5, 4)), requires_grad=True)
    w = engine.tensor(rng.standard_normal((3, 2, 2, 2)), requires_grad=True)

    def gradient(a, b):
        with engine.enable_grad():
            y = engine.nn.functional.conv2d(a, b, stride=(1, 2), padding=1)
            return engine.autograd.grad((y * y).sum(), (a, b), create_graph=True)

    fd_gradcheck(gradient, x, w)


def test_wgan_gp_with_a_conv_critic_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(11)
    real, fake = rng.standard_normal((3, 2, 6, 6)), rng.standard_normal((3, 2, 6, 6))
    eps = rng.random((3, 1, 1, 1))
    w1, b1 = rng.standard_normal((4, 2, 3, 3)) * 0.5, rng.standard_normal(4) * 0.1
    w2, b2 = rng.standard_normal((1, 4 * 2 * 2)) * 0.5, rng.standard_normal(1) * 0.1
    results = []
    for lib in (engine, torch):
        F_ = lib.nn.functional
        params = [lib.tensor(a, requires_grad=True) for a in (w1, b1, w2, b2)]
        x_hat = (lib.tensor(eps) * lib.tensor(real) + (1 - lib.tensor(eps)) * lib.tensor(fake)).requires_grad_(True)
        h = F_.leaky_relu(F_.conv2d(x_hat, params[0], params[1], stride=2, padding=1), 0.2)
        h = h[:, :, ::2, ::2]
        score = F_.linear(h.reshape(3, -1), params[2], params[3])
        (g,) = lib.autograd.grad(score.sum(), x_hat, create_graph=True)
        penalty = ((g.reshape(3, -1).norm(2, dim=1) - 1) ** 2).mean()
        penalty.backward()
        results.append([penalty.item()] + [None if p.grad is None else p.grad.numpy() for p in params])
    assert results[0][0] == pytest.approx(results[1][0], rel=1e-10)
    for got, want in zip(results[0][1:], results[1][1:]):
        assert (got is None) == (want is None)  # the biases do not move the input gradient here
        if got is not None:
            np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("name", ["vjp", "jvp", "vhp", "hvp", "hessian"])
def test_functional_strict_is_refused(name):
    fn = getattr(engine.autograd.functional, name)
    args = (engine.ones(2),) if name == "hessian" else (engine.ones(2), engine.ones(1 if name == "vjp" else 2))
    with pytest.raises(NotImplementedError, match=f"^{name}: strict=True is not supported by engine$"):
        fn(lambda x: x.sum(), *args, strict=True)


def test_module_backward_hooks_fire_and_gradients_match_under_create_graph():
    """Modules with full backward hooks (what modscope attaches) pass gradients with their graph
    through; the hooks fire in torch's order."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    weights = [rng.standard_normal(s) for s in [(5, 3), (5,), (1, 5), (1,)]]
    x0 = rng.standard_normal((4, 3))
    results = []
    for lib in (engine, torch):
        net = lib.nn.Sequential(lib.nn.Linear(3, 5), lib.nn.Tanh(), lib.nn.Linear(5, 1)).double()
        with lib.no_grad():
            for p, w in zip(net.parameters(), weights):
                p.copy_(lib.tensor(w))
        calls = []
        for m in net:
            m.register_full_backward_hook(lambda mod, gi, go, calls=calls: calls.append(type(mod).__name__))
        x = lib.tensor(x0, requires_grad=True)
        (g,) = lib.autograd.grad(net(x).sum(), x, create_graph=True)
        penalty = ((g.norm(2, dim=1) - 1) ** 2).mean()
        penalty.backward()
        results.append((penalty.item(), [None if p.grad is None else p.grad.numpy() for p in net.parameters()],
                        calls))
    assert results[0][0] == pytest.approx(results[1][0], rel=1e-12)
    assert results[0][2] == results[1][2]
    for got, want in zip(results[0][1], results[1][1]):
        assert (got is None) == (want is None)
        if got is not None:
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-14)
