"""Functional ops against torch: outputs, input/weight gradients, grad_fn names and graph shape
(float32, as used in training, and float64 where precision matters)."""

from __future__ import annotations

import numpy as np
import pytest

import engine
import engine.nn.functional as EF

from .conftest import close, edge_names, graph_names

# padding='same' with an even kernel warns (as torch does); test_errors.py asserts the warning.
pytestmark = pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel lengths")


def _run(torch, name: str, arrays: list, kwargs: dict, grad: list[bool], atol=1e-5, rtol=1e-4):
    """Call F.<name> on engine and torch with the same data, backprop the same random gradient,
    compare outputs, gradients and graph node names. Returns (engine out, torch out)."""
    e_in = [engine.tensor(a, requires_grad=g) if isinstance(a, np.ndarray) else a for a, g in zip(arrays, grad)]
    t_in = [torch.tensor(a, requires_grad=g) if isinstance(a, np.ndarray) else a for a, g in zip(arrays, grad)]
    e_out = getattr(EF, name)(*e_in, **kwargs)
    t_out = getattr(torch.nn.functional, name)(*t_in, **kwargs)
    e_main = e_out[0] if isinstance(e_out, tuple) else e_out
    t_main = t_out[0] if isinstance(t_out, tuple) else t_out
    close(e_main, t_main, atol, rtol)
    if any(grad):
        assert graph_names(e_main) == graph_names(t_main)
        assert edge_names(e_main) == edge_names(t_main)
        g = np.random.default_rng(7).standard_normal(t_main.shape).astype(t_main.detach().numpy().dtype)
        e_main.backward(engine.tensor(g))
        t_main.backward(torch.tensor(g))
        for e, t, needs in zip(e_in, t_in, grad):
            if needs:
                close(e.grad, t.grad, atol, rtol)
    return e_out, t_out


def rnd(*shape, seed=0, dtype=np.float32, low=None, high=None):
    rng = np.random.default_rng(seed)
    if low is not None:
        return rng.uniform(low, high, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


CONV2D = [
    ((2, 3, 9, 8), (4, 3, 3, 3), dict()),
    ((2, 3, 9, 8), (4, 3, 3, 2), dict(stride=2, padding=1)),
    ((2, 4, 9, 8), (6, 2, 3, 3), dict(groups=2, dilation=2, padding=(2, 1))),
    ((1, 6, 7, 7), (6, 1, 2, 2), dict(groups=6, stride=(2, 1))),
    # depthwise (groups == in_channels: the tap-sum path), multiplier 1 and 2, as MobileNet's
    ((3, 8, 9, 10), (8, 1, 3, 3), dict(groups=8, padding=1)),
    ((2, 6, 11, 9), (6, 1, 3, 3), dict(groups=6, stride=2, padding=1)),
    ((2, 4, 9, 8), (8, 1, 3, 2), dict(groups=4, stride=(2, 1), padding=(2, 0), dilation=(2, 3))),
    ((8, 48, 16, 16), (48, 1, 3, 3), dict(groups=48, stride=2, padding=1)),
    ((7, 6, 5), (14, 1, 3, 3), dict(groups=7, padding="same")),  # unbatched
    ((3, 9, 8), (4, 3, 3, 3), dict(padding="same")),
    ((2, 3, 9, 8), (4, 3, 4, 2), dict(padding="same", dilation=(1, 3))),
    ((64, 1, 28, 28), (10, 1, 5, 5), dict()),
    ((64, 10, 12, 12), (20, 10, 5, 5), dict()),
]


@pytest.mark.parametrize("xs,ws,kw", CONV2D, ids=str)
@pytest.mark.parametrize("bias", [True, False])
def test_conv2d(torch, xs, ws, kw, bias):
    b = rnd(ws[0], seed=3) if bias else None
    # float32 sums over N·Ho·Wo terms (36,864 for the MNIST layer) differ in the last digits.
    atol = 1e-4 if xs[0] < 64 else 5e-3
    _run(torch, "conv2d", [rnd(*xs, seed=1), rnd(*ws, seed=2), b], kw, [True, True, bias], atol=atol)


def test_conv2d_input_without_grad_records_a_none_edge(torch):
    _run(torch, "conv2d", [rnd(2, 3, 6, 6), rnd(4, 3, 3, 3), rnd(4)], {}, [False, True, True])


@pytest.mark.parametrize("xs,ws,kw", [((2, 3, 10), (4, 3, 3), dict()), ((2, 4, 10), (6, 2, 3), dict(groups=2, stride=2)),
                                      ((3, 10), (4, 3, 2), dict(padding="same", dilation=3)),
                                      ((2, 3, 10), (4, 3, 3), dict(padding=2, dilation=2)),
                                      ((2, 4, 10), (4, 1, 3), dict(groups=4, padding=1))], ids=str)
def test_conv1d(torch, xs, ws, kw):
    _run(torch, "conv1d", [rnd(*xs, seed=1), rnd(*ws, seed=2), rnd(ws[0], seed=3)], kw, [True, True, True])


POOL = [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1), dict(kernel_size=3, stride=2, ceil_mode=True),
        dict(kernel_size=(2, 3), stride=(1, 2), padding=(1, 1), dilation=(2, 1)),
        dict(kernel_size=3, stride=2, padding=1, ceil_mode=True), dict(kernel_size=2, stride=3),
        dict(kernel_size=(2, 1), stride=(2, 3), ceil_mode=True), dict(kernel_size=2, padding=1)]


@pytest.mark.parametrize("kw", POOL, ids=str)
@pytest.mark.parametrize("shape", [(2, 3, 9, 8), (3, 10, 11)], ids=str)
def test_max_pool2d(torch, kw, shape):
    _run(torch, "max_pool2d", [rnd(*shape)], kw, [True])
    e, t = _run(torch, "max_pool2d", [rnd(*shape, seed=2)], dict(kw, return_indices=True), [True])
    assert e[1].dtype == engine.int64
    np.testing.assert_array_equal(e[1].numpy(), t[1].numpy())
    assert e[1].grad_fn is None and not e[1].requires_grad


def test_max_pool2d_ties_go_to_the_first_maximum(torch):
    x = np.zeros((1, 1, 4, 4), np.float32)
    x[0, 0, 1, 1] = -1
    e, t = _run(torch, "max_pool2d", [x], dict(kernel_size=2, return_indices=True), [True])
    np.testing.assert_array_equal(e[1].numpy(), t[1].numpy())


def test_max_pool2d_integer_input(torch):
    x = np.random.default_rng(0).integers(-50, 50, (2, 2, 5, 5))
    _run(torch, "max_pool2d", [x], dict(kernel_size=3, padding=1, stride=2), [False])


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
                                dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
                                dict(kernel_size=(3, 2), stride=(2, 3), padding=1, divisor_override=5)], ids=str)
@pytest.mark.parametrize("shape", [(2, 3, 9, 8), (3, 10, 11)], ids=str)
def test_avg_pool2d(torch, kw, shape):
    _run(torch, "avg_pool2d", [rnd(*shape)], kw, [True])


def test_avg_pool2d_integer_input_truncates(torch):
    x = np.random.default_rng(0).integers(-50, 50, (1, 2, 5, 5))
    _run(torch, "avg_pool2d", [x], dict(kernel_size=2), [False])


@pytest.mark.parametrize("size", [(4, 3), (None, 5), 1, (1, 1), (12, 9), 3, (1, 4)], ids=str)
@pytest.mark.parametrize("shape", [(2, 3, 9, 8), (3, 10, 11)], ids=str)
def test_adaptive_avg_pool2d(torch, size, shape):
    _run(torch, "adaptive_avg_pool2d", [rnd(*shape)], dict(output_size=size), [True])


@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (2, 3, 4, 5)], ids=str)
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm(torch, shape, training, affine):
    rm, rv = rnd(3, seed=4), rnd(3, seed=5, low=0.5, high=2)
    e_rm, e_rv, t_rm, t_rv = engine.tensor(rm), engine.tensor(rv), torch.tensor(rm), torch.tensor(rv)
    arrays = [rnd(*shape), e_rm, e_rv, rnd(3, seed=2) if affine else None, rnd(3, seed=3) if affine else None]
    e_in = [engine.tensor(a, requires_grad=True) if isinstance(a, np.ndarray) else a for a in arrays]
    t_in = [torch.tensor(a, requires_grad=True) if isinstance(a, np.ndarray) else a for a in arrays]
    t_in[1], t_in[2] = t_rm, t_rv
    e_out = EF.batch_norm(*e_in, training=training, momentum=0.3, eps=1e-3)
    t_out = torch.nn.functional.batch_norm(*t_in, training=training, momentum=0.3, eps=1e-3)
    close(e_out, t_out)
    close(e_rm, t_rm)
    close(e_rv, t_rv)
    assert type(e_out.grad_fn).__name__ == type(t_out.grad_fn).__name__ == "NativeBatchNormBackward0"
    assert edge_names(e_out) == edge_names(t_out)
    g = rnd(*shape, seed=9)
    e_out.backward(engine.tensor(g))
    t_out.backward(torch.tensor(g))
    for e, t in zip(e_in, t_in):
        if e is not None and e.requires_grad:
            close(e.grad, t.grad)
    assert e_rm._version_value == 0  # torch updates running stats without bumping versions


@pytest.mark.parametrize("shape,ns", [((4, 5), (5,)), ((2, 3, 4, 5), (4, 5)), ((2, 3, 4), (2, 3, 4))], ids=str)
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm(torch, shape, ns, affine):
    arrays = [rnd(*shape), ns, rnd(*ns, seed=2) if affine else None, rnd(*ns, seed=3) if affine else None]
    _run(torch, "layer_norm", arrays, dict(eps=1e-3), [True, False, affine, affine])


@pytest.mark.parametrize("name,kw", [
    ("relu", {}), ("leaky_relu", {}), ("leaky_relu", dict(negative_slope=0.3)), ("gelu", {}),
    ("gelu", dict(approximate="tanh")), ("tanh", {}), ("sigmoid", {}), ("softmax", dict(dim=1)),
    ("log_softmax", dict(dim=0)), ("softmax", dict(dim=-1, dtype=engine.float64)),
], ids=str)
def test_activations(torch, name, kw):
    if "dtype" in kw:
        kw = dict(kw, dtype=torch.float64)
        e = EF.softmax(engine.tensor(rnd(3, 4)), dim=-1, dtype=engine.float64)
        t = torch.nn.functional.softmax(torch.tensor(rnd(3, 4)), dim=-1, dtype=torch.float64)
        close(e, t)
        return
    x = rnd(4, 6) * 3
    x[0, :3] = [0.0, -0.0, 1e-8]
    _run(torch, name, [x], kw, [True])


def test_gelu_is_accurate_in_float32_and_float64(torch):
    for dtype, tol in ((np.float32, 1e-6), (np.float64, 1e-14)):
        x = np.linspace(-12, 12, 20001).astype(dtype)
        _run(torch, "gelu", [x], {}, [True], atol=tol, rtol=tol)


@pytest.mark.parametrize("name", ["relu", "leaky_relu"])
def test_inplace_activations(torch, name):
    x = rnd(3, 4)
    e_leaf, t_leaf = engine.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    e_y, t_y = e_leaf * 1, t_leaf * 1
    e_out = getattr(EF, name)(e_y, inplace=True)
    t_out = getattr(torch.nn.functional, name)(t_y, inplace=True)
    assert e_out is e_y and t_out is t_y
    assert type(e_out.grad_fn).__name__ == type(t_out.grad_fn).__name__
    close(e_out, t_out)
    e_out.sum().backward()
    t_out.sum().backward()
    close(e_leaf.grad, t_leaf.grad)


def test_inplace_leaky_relu_without_grad(torch):
    x = rnd(3, 4)
    e, t = engine.tensor(x), torch.tensor(x)
    EF.leaky_relu(e, 0.2, inplace=True)
    torch.nn.functional.leaky_relu(t, 0.2, inplace=True)
    close(e, t)


def test_softmax_implicit_dim_warns_like_torch(torch):
    for shape in [(5,), (2, 3), (2, 3, 4), (2, 3, 4, 5)]:
        x = rnd(*shape)
        with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
            e = EF.softmax(engine.tensor(x))
        with pytest.warns(UserWarning, match="Implicit dimension choice for log_softmax"):
            el = EF.log_softmax(engine.tensor(x))
        with pytest.warns(UserWarning):
            t = torch.nn.functional.softmax(torch.tensor(x))
            tl = torch.nn.functional.log_softmax(torch.tensor(x))
        close(e, t)
        close(el, tl)


def test_embedding(torch):
    idx = np.array([[1, 3, 1], [0, 4, 1]])
    w = rnd(5, 3)
    _run(torch, "embedding", [idx, w], {}, [False, True])
    _run(torch, "embedding", [idx, w], dict(padding_idx=1), [False, True])
    _run(torch, "embedding", [idx, w], dict(padding_idx=-4, scale_grad_by_freq=True), [False, True])
    _run(torch, "embedding", [idx.astype(np.int32), w], {}, [False, True])
    _run(torch, "embedding", [np.array(2), w], {}, [False, True])


def test_embedding_max_norm_renormalises_the_looked_up_rows(torch):
    w = rnd(5, 3) * 5
    e_w, t_w = engine.tensor(w), torch.tensor(w)
    idx = np.array([1, 1, 2])
    e = EF.embedding(engine.tensor(idx), e_w, max_norm=1.0)
    t = torch.nn.functional.embedding(torch.tensor(idx), t_w, max_norm=1.0)
    close(e, t)
    close(e_w, t_w)  # rows 1 and 2 rescaled in place, the others untouched


def test_one_hot(torch):
    for args in [((np.array([1, 2, 0]),), {}), ((np.array([[1], [3]]),), dict(num_classes=5)),
                 ((np.array(2),), dict(num_classes=3)), ((np.zeros(0, np.int64),), dict(num_classes=3))]:
        e = EF.one_hot(engine.tensor(args[0][0]), **args[1])
        t = torch.nn.functional.one_hot(torch.tensor(args[0][0]), **args[1])
        assert e.dtype == engine.int64
        np.testing.assert_array_equal(e.numpy(), t.numpy())


def test_dropout_graph_matches_torch(torch):
    x = rnd(4, 5)
    e = EF.dropout(engine.tensor(x, requires_grad=True), 0.5)
    t = torch.nn.functional.dropout(torch.tensor(x, requires_grad=True), 0.5)
    assert graph_names(e) == graph_names(t) == ["MulBackward0", []]
    assert edge_names(e) == edge_names(t)
    e2 = EF.dropout2d(engine.tensor(rnd(2, 3, 4, 4), requires_grad=True))
    t2 = torch.nn.functional.dropout2d(torch.tensor(rnd(2, 3, 4, 4), requires_grad=True))
    assert edge_names(e2) == edge_names(t2)


def test_empty_batches_like_torch(torch):
    for name, args, kw in [("batch_norm", [np.ones((0, 3), np.float32), None, None], dict(training=True)),
                           ("max_pool2d", [np.ones((0, 1, 4, 4), np.float32)], dict(kernel_size=2)),
                           ("avg_pool2d", [np.ones((0, 1, 4, 4), np.float32)], dict(kernel_size=2)),
                           ("layer_norm", [np.ones((0, 3, 4), np.float32), (4,)], {})]:
        e, t = _run(torch, name, args, kw, [True] + [False] * (len(args) - 1))
        assert tuple(e.shape) == tuple(t.shape)
    e, t = _run(torch, "conv2d", [np.ones((0, 1, 4, 4), np.float32), np.ones((2, 1, 3, 3), np.float32)], {},
                [True, True])
