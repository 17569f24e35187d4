"""Autograd semantics: accumulation, retain_grad, tensor and node hooks, freeing the graph,
grad mode, autograd.grad, custom Functions (both styles), version counters, long chains."""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest

import engine
from engine.autograd import Function


def leaf(*values):
    return engine.tensor(list(values), requires_grad=True)


def test_gradients_accumulate_across_backward_calls():
    x = leaf(1.0, 2.0)
    (x * 3).sum().backward()
    (x * x).sum().backward()
    assert x.grad.tolist() == [5.0, 7.0]


def test_accumulated_grad_is_not_shared_between_leaves():
    a, b = leaf(1.0), leaf(2.0)
    (a + b).sum().backward()
    a.grad += 10
    assert b.grad.tolist() == [1.0]


def test_non_leaf_grad_only_after_retain_grad():
    x = leaf(1.0, 2.0)
    y = x * 2
    y.retain_grad()
    z = x * 3
    (y * z).sum().backward()
    assert y.retains_grad and y.grad.tolist() == [3.0, 6.0]
    with pytest.warns(UserWarning, match="not a leaf Tensor"):
        assert z.grad is None
    assert x.is_leaf and not y.is_leaf


def test_retain_grad_accumulates_and_survives_inplace_rebase():
    x = leaf(1.0, 2.0)
    y = x * 2
    y.retain_grad()
    y.add_(1)  # y's grad_fn moves to AddBackward0; the retained grad must follow
    y.sum().backward(retain_graph=True)
    y.sum().backward()
    assert y.grad.tolist() == [2.0, 2.0]


def test_tensor_hook_replaces_gradient_and_can_be_removed():
    x = leaf(1.0, 2.0)
    y = x * 2
    seen = []
    handle = y.register_hook(lambda g: seen.append(g.tolist()) or g * 10)
    y.sum().backward(retain_graph=True)
    assert seen == [[1.0, 1.0]] and x.grad.tolist() == [20.0, 20.0]
    handle.remove()
    x.grad = None
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_leaf_hook_runs_before_accumulation_and_post_accumulate_after():
    x = leaf(1.0)
    order = []
    x.register_hook(lambda g: order.append(("hook", g.item())) or g + 1)
    x.register_post_accumulate_grad_hook(lambda t: order.append(("post", t.grad.item())))
    (x * 5).sum().backward()
    assert order == [("hook", 5.0), ("post", 6.0)]


def test_node_pre_and_post_hooks(torch):
    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * 3
        log = []
        y.grad_fn.register_prehook(lambda go: log.append(("pre", [g.tolist() for g in go])))
        y.grad_fn.register_hook(lambda gi, go: log.append(("post", [g.tolist() for g in gi if g is not None])))
        y.sum().backward()
        return log

    assert run(engine) == run(torch)


def test_hook_order_matches_torch(torch):
    """Tensor hooks on several tensors fire in the order torch's engine reaches them."""
    def run(lib):
        order = []
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        a = x * 2
        b = x.exp()
        c = a * b
        d = c + a
        for name, t in (("x", x), ("a", a), ("b", b), ("c", c), ("d", d)):
            t.register_hook(lambda g, name=name: order.append(name))
        d.sum().backward()
        return order

    assert run(engine) == run(torch)


def test_second_backward_through_freed_graph_raises():
    x = leaf(1.0, 2.0)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()


def test_graph_without_saved_tensors_can_run_twice(torch):
    for lib in (engine, torch):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = (x + 1).sum()
        y.backward()
        y.backward()
        assert x.grad.tolist() == [2.0, 2.0]


def test_retain_graph_allows_second_backward():
    x = leaf(1.0, 2.0)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert x.grad.tolist() == [4.0, 8.0]


def test_no_grad_enable_grad_set_grad_enabled():
    x = leaf(1.0)
    with engine.no_grad():
        assert not (x * 2).requires_grad
        with engine.enable_grad():
            assert (x * 2).requires_grad
        assert not engine.is_grad_enabled()
    assert engine.is_grad_enabled()

    @engine.no_grad()
    def f(t):
        return t * 2

    assert not f(x).requires_grad
    engine.set_grad_enabled(False)
    assert not engine.is_grad_enabled()
    engine.set_grad_enabled(True)
    with engine.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert engine.is_grad_enabled()


def test_grad_mode_restored_when_body_raises():
    with pytest.raises(ValueError), engine.no_grad():
        raise ValueError
    assert engine.is_grad_enabled()


def test_autograd_grad_leaves_dot_grad_untouched():
    x = leaf(1.0, 2.0)
    y = leaf(3.0)
    out = (x * x).sum() * y
    gx, gy = engine.autograd.grad(out, [x, y])
    assert gx.tolist() == [6.0, 12.0] and gy.tolist() == [5.0]
    assert x.grad is None and y.grad is None


def test_autograd_grad_of_intermediate_and_unused():
    x = leaf(1.0, 2.0)
    h = x * 2
    out = (h * h).sum()
    unused = leaf(0.0)
    gh, gu = engine.autograd.grad(out, [h, unused], allow_unused=True)
    assert gh.tolist() == [4.0, 8.0] and gu is None
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        engine.autograd.grad((x * 2).sum(), [unused])
    (gm,) = engine.autograd.grad((x * 2).sum(), [unused], materialize_grads=True)
    assert gm.tolist() == [0.0]


def test_backward_with_inputs_accumulates_only_there():
    x, y = leaf(1.0), leaf(2.0)
    (x * y).backward(inputs=[x])
    assert x.grad.tolist() == [2.0] and y.grad is None


def test_multiple_roots_and_gradient_argument():
    x = leaf(1.0, 2.0)
    y = x * 2
    z = y * 3
    engine.autograd.backward([y, z], [engine.ones(2), engine.ones(2)])
    assert x.grad.tolist() == [8.0, 8.0]
    x.grad = None
    (x * 2).backward(engine.tensor([1.0, 0.5]))
    assert x.grad.tolist() == [2.0, 1.0]


def test_ten_thousand_op_chain_does_not_recurse():
    x = leaf(1.0)
    y = x
    for _ in range(10_000):
        y = y * 1.0001
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(200)  # the executor must not depend on the Python stack depth
    try:
        y.backward()
        (gx,) = engine.autograd.grad(x * 1.0001 * 1.0001, [x])
    finally:
        sys.setrecursionlimit(limit)
    assert abs(x.grad.item() - 1.0001 ** 10_000) < 1e-2
    assert abs(gx.item() - 1.0001 ** 2) < 1e-6


def test_detach_shares_memory_and_version():
    x = leaf(1.0, 2.0)
    d = x.detach()
    assert not d.requires_grad and d.grad_fn is None
    d.add_(1)
    assert x.tolist() == [2.0, 3.0]


@pytest.mark.parametrize("case", ["input_rebased", "own_output", "leaf_input", "input_of_sin"])
def test_inplace_on_saved_tensor_is_detected(torch, case):
    def run(lib):
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        if case == "input_rebased":
            b = a * 1
            c = b * b
            b.add_(1)
        elif case == "own_output":
            c = a.exp()
            c.mul_(2)
        elif case == "leaf_input":
            b = lib.tensor([1.0, 2.0])
            c = a * b
            b.add_(1)
        else:
            b = a * 1
            c = b.sin()
            b.mul_(3)
        with pytest.raises(RuntimeError) as info:
            c.sum().backward()
        return str(info.value).split(" Hint")[0]

    assert run(engine) == run(torch).replace("torch.", "engine.")


def test_inplace_on_output_saved_by_exp_is_detected():
    a = leaf(1.0, 2.0)
    y = a.exp()
    y.mul_(2)
    with pytest.raises(RuntimeError, match="output 0 of Exp, is at version 1"):
        y.sum().backward()


def test_inplace_on_unsaved_input_is_fine():
    a = leaf(1.0, 2.0)
    b = a * 1
    c = b.exp()  # saves its output, not b
    b.mul_(2)
    c.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), np.exp([1.0, 2.0]), rtol=1e-6)


def test_optimizer_style_update_under_no_grad_keeps_leaf():
    w = leaf(1.0, 2.0)
    (w * w).sum().backward()
    with engine.no_grad():
        w -= 0.1 * w.grad
        w.add_(w.grad, alpha=-0.1)
    assert w.is_leaf and w.requires_grad
    np.testing.assert_allclose(w.detach().numpy(), [0.6, 1.2], rtol=1e-6)


class MulAdd(Function):
    @staticmethod
    def forward(ctx, x, y, scale):
        ctx.save_for_backward(x, y)
        ctx.scale = scale
        return x * y * scale + x

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        gx = grad * (y * ctx.scale + 1) if ctx.needs_input_grad[0] else None
        gy = grad * x * ctx.scale if ctx.needs_input_grad[1] else None
        return gx, gy, None


def test_custom_function_modern_style(torch):
    def run(lib, fn_cls):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = lib.tensor([3.0, 4.0], requires_grad=True)
        out = fn_cls.apply(x, y, 2.0)
        out.sum().backward()
        return type(out.grad_fn).__name__, len(out.grad_fn.next_functions), x.grad.tolist(), y.grad.tolist()

    class TorchMulAdd(torch.autograd.Function):
        forward = MulAdd.forward
        backward = MulAdd.backward

    e = run(engine, MulAdd)
    t = run(torch, TorchMulAdd)
    assert e[0] == "MulAddBackward" and t[0] == "TorchMulAddBackward"
    assert e[1:] == t[1:]


def test_custom_function_ctx_is_grad_fn_and_needs_input_grad():
    x = leaf(1.0)
    y = engine.tensor([2.0])
    out = MulAdd.apply(x, y, 1.0)
    assert out.grad_fn.needs_input_grad == (True, False, False)
    assert out.grad_fn.scale == 1.0


def test_custom_function_saved_tensors_freed_after_backward():
    x, y = leaf(1.0), leaf(2.0)
    out = MulAdd.apply(x, y, 1.0)
    out.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        out.grad_fn.saved_tensors  # noqa: B018
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        out.backward()


def test_custom_function_mark_non_differentiable_and_materialize():
    class SortWithIndex(Function):
        @staticmethod
        def forward(ctx, x):
            idx = engine.from_numpy(np.argsort(x.detach().numpy()))
            ctx.mark_non_differentiable(idx)
            ctx.set_materialize_grads(False)
            ctx.save_for_backward(idx)
            return x[idx], idx

        @staticmethod
        def backward(ctx, g, g_idx):
            assert g_idx is None  # materialize off: no zeros invented
            (idx,) = ctx.saved_tensors
            out = engine.zeros_like(g)
            out[idx] = g
            return out

    x = leaf(3.0, 1.0, 2.0)
    values, idx = SortWithIndex.apply(x)
    assert not idx.requires_grad and values.requires_grad
    (values * engine.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert x.grad.tolist() == [3.0, 1.0, 2.0]


def test_custom_function_backward_can_modify_its_grad_in_place():
    """The classic tutorial's ReLU: ``grad_input = grad_output.clone(); grad_input[input < 0] = 0``."""

    class MyReLU(Function):
        @staticmethod
        def forward(ctx, inp):
            ctx.save_for_backward(inp)
            return inp.clamp(min=0)

        @staticmethod
        def backward(ctx, grad_output):
            (inp,) = ctx.saved_tensors
            grad_input = grad_output.clone()
            grad_input[inp < 0] = 0
            return grad_input

    x = leaf(-1.0, 2.0)
    MyReLU.apply(x).sum().backward()
    assert x.grad.tolist() == [0.0, 1.0]


class LegacyLinear(Function):
    """The classic tutorial's LinearFunction in the legacy instance style."""

    def forward(self, inp, weight, bias=None):
        self.save_for_backward(inp, weight, bias)
        out = inp.mm(weight.t())
        return out + bias.unsqueeze(0).expand_as(out) if bias is not None else out

    def backward(self, grad_output):
        inp, weight, bias = self.saved_tensors
        gi = gw = gb = None
        if self.needs_input_grad[0]:
            gi = grad_output.mm(weight)
        if self.needs_input_grad[1]:
            gw = grad_output.t().mm(inp)
        if bias is not None and self.needs_input_grad[2]:
            gb = grad_output.sum(0)
        return gi, gw, gb


def test_legacy_instance_style_function_works_with_warning():
    engine.manual_seed(0)
    x = engine.randn(5, 3, requires_grad=True)
    w = engine.randn(2, 3, requires_grad=True)
    b = engine.randn(2, requires_grad=True)
    with pytest.warns(DeprecationWarning, match="legacy autograd.Function style"):
        out = LegacyLinear()(x, w, b)
    assert type(out.grad_fn).__name__ == "LegacyLinearBackward"
    out.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), np.ones((5, 2)).T @ x.detach().numpy(), rtol=1e-5)
    np.testing.assert_allclose(b.grad.numpy(), [5.0, 5.0])
    np.testing.assert_allclose(x.grad.numpy(), np.ones((5, 2)) @ w.detach().numpy(), rtol=1e-5)


def test_function_styles_are_not_mixed_up():
    with pytest.raises(RuntimeError, match="legacy style"):
        LegacyLinear.apply(leaf(1.0), leaf(1.0))
    with warnings.catch_warnings(), pytest.raises(RuntimeError, match="static forward"):
        MulAdd()(leaf(1.0), leaf(1.0), 1.0)


def test_float_default_and_set_default_dtype():
    assert engine.tensor([1.0]).dtype == engine.float32 and engine.get_default_dtype() == engine.float32
    engine.set_default_dtype(engine.float64)
    try:
        assert engine.tensor([1.0]).dtype == engine.float64
        assert (engine.tensor([1, 2]) * 0.5).dtype == engine.float64
    finally:
        engine.set_default_dtype(engine.float32)
    with pytest.raises(TypeError, match="only floating-point types"):
        engine.set_default_dtype(engine.int64)


def test_manual_seed_reproduces():
    engine.manual_seed(7)
    a = engine.randn(3)
    engine.manual_seed(7)
    assert engine.equal(a, engine.randn(3))
    g1, g2 = engine.Generator().manual_seed(7), engine.Generator().manual_seed(7)
    assert engine.equal(engine.rand(2, generator=g1), engine.rand(2, generator=g2))
    assert not engine.equal(engine.rand(2, generator=g1), engine.rand(2, generator=engine.Generator().manual_seed(8)))


def test_random_creation_shapes_and_ranges():
    engine.manual_seed(0)
    assert engine.rand(1000).min().item() >= 0 and engine.rand(1000).max().item() < 1
    r = engine.randint(3, 7, (500,))
    assert r.dtype == engine.int64 and r.min().item() >= 3 and r.max().item() <= 6
    assert engine.randint(5, (2, 2)).shape == (2, 2)
    assert sorted(engine.randperm(6).tolist()) == list(range(6))
    n = engine.randn(10000)
    assert abs(n.mean().item()) < 0.05 and abs(n.std().item() - 1) < 0.05
    t = engine.empty(1000).uniform_(-2, 3)
    assert t.min().item() >= -2 and t.max().item() < 3
    t.normal_(5, 0.1)
    assert abs(t.mean().item() - 5) < 0.05


def test_tensor_attributes():
    t = engine.arange(6.0).reshape(2, 3)
    assert t.shape == (2, 3) and t.size() == (2, 3) and t.size(-1) == 3 and t.dim() == 2 and t.ndim == 2
    assert t.numel() == 6 and t.dtype == engine.float32 and str(t.dtype) == "engine.float32"
    assert t.T.shape == (3, 2) and t.t().shape == (3, 2) and t[1, 2].item() == 5.0
    assert t.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]] and t.numpy().shape == (2, 3)
    assert t.clone().data_ptr() != t.data_ptr() and t.contiguous() is t
    assert len(t) == 2 and float(t[0, 1]) == 1.0 and int(t[1, 0]) == 3
    assert t.device == engine.device("cpu") and t.cpu() is t and t.type() == "engine.FloatTensor"
    assert t.long().dtype == engine.int64 and t.double().dtype == engine.float64 and t.to(engine.float32) is t
    d = t.data
    d[0, 0] = 10
    assert t[0, 0].item() == 10.0
    t.data = engine.zeros(4)
    assert t.shape == (4,)


def test_fill_zero_copy_and_inplace_random_under_no_grad():
    w = engine.zeros(2, 3, requires_grad=True)
    with engine.no_grad():
        w.fill_(2.0)
        w.copy_(engine.ones(3))
        w.uniform_(0, 1)
        w.normal_()
        w.zero_()
    assert w.is_leaf and w.requires_grad and w.sum().item() == 0.0


def test_softmax_of_a_fully_masked_row_is_nan_without_warnings(torch):
    import warnings as w

    x = [[float("-inf")] * 3, [0.0, 1.0, 2.0]]
    with w.catch_warnings():
        w.simplefilter("error")
        out = engine.tensor(x).softmax(1)
        logp = engine.tensor(x).log_softmax(1)
    ref = torch.tensor(x).softmax(1)
    np.testing.assert_allclose(out.numpy(), ref.numpy(), equal_nan=True, rtol=1e-6)
    assert np.isnan(logp.numpy()[0]).all() == np.isnan(torch.tensor(x).log_softmax(1).numpy()[0]).all()


def test_fresh_gradients_are_taken_without_a_copy_but_shared_ones_are_copied():
    w = engine.randn(4, 3, requires_grad=True)
    x = engine.randn(2, 4)
    (x @ w).sum().backward()
    g = w.grad
    w.grad = None
    (x @ w).sum().backward()
    assert not np.shares_memory(g.numpy(), w.grad.numpy())
    a, b = leaf(1.0, 2.0), leaf(3.0, 4.0)
    (a + b).sum().backward()  # the same array would reach both leaves
    assert not np.shares_memory(a.grad.numpy(), b.grad.numpy())
    kept = []
    c = leaf(1.0, 2.0)
    y = c * 2
    y.register_hook(lambda g: kept.append(g) or None)
    y.sum().backward()
    kept[0].add_(100)  # a hook's reference is not the leaf's gradient
    assert c.grad.tolist() == [2.0, 2.0]
