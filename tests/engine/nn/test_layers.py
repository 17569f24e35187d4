"""Layers against torch: reprs, parameters/buffers, default initialisation, forward and backward
with copied weights, train/eval behaviour and BatchNorm's running statistics."""

from __future__ import annotations

import math
import warnings
from collections import OrderedDict

import numpy as np
import pytest

import engine

from .conftest import close, copy_params, graph_names


def rnd(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def both(torch, ctor: str, *args, **kwargs):
    """The same layer built by engine and by torch, torch given engine's parameters/buffers."""
    e = getattr(engine.nn, ctor)(*args, **kwargs)
    t = getattr(torch.nn, ctor)(*args, **kwargs)
    copy_params(e, t, torch)
    return e, t


REPRS = [
    ("Conv2d", (1, 10, 5), {}),
    ("Conv2d", (4, 8, (3, 2)), dict(stride=2, padding=1, dilation=2, groups=2, bias=False)),
    ("Conv2d", (3, 3, 3), dict(padding="same")),
    ("Conv2d", (3, 3, 3), dict(padding="valid", stride=(1, 1))),
    ("Conv1d", (16, 33, 3), dict(stride=2)),
    ("Conv1d", (4, 4, 2), dict(padding=1, dilation=3, groups=4)),
    ("MaxPool2d", (2,), {}),
    ("MaxPool2d", ((3, 2),), dict(stride=1, padding=1, dilation=2, return_indices=True, ceil_mode=True)),
    ("AvgPool2d", (3,), dict(stride=2, padding=1, ceil_mode=True, count_include_pad=False)),
    ("AdaptiveAvgPool2d", ((5, None),), {}),
    ("AdaptiveAvgPool2d", (1,), {}),
    ("BatchNorm1d", (100,), {}),
    ("BatchNorm2d", (16,), dict(eps=1e-3, momentum=None, affine=False, track_running_stats=False)),
    ("LayerNorm", (10,), {}),
    ("LayerNorm", ((3, 4),), dict(eps=1e-6, elementwise_affine=False)),
    ("LayerNorm", ((3, 4),), dict(bias=False)),
    ("Dropout", (), {}),
    ("Dropout", (0.2,), dict(inplace=True)),
    ("Dropout2d", (0.3,), {}),
    ("Embedding", (10, 3), {}),
    ("Embedding", (10, 3), dict(padding_idx=-1, max_norm=1.5, norm_type=1.0, scale_grad_by_freq=True)),
    ("ReLU", (), {}),
    ("ReLU", (True,), {}),
    ("LeakyReLU", (), {}),
    ("LeakyReLU", (0.2, True), {}),
    ("GELU", (), {}),
    ("GELU", ("tanh",), {}),
    ("Tanh", (), {}),
    ("Sigmoid", (), {}),
    ("Softmax", (1,), {}),
    ("Softmax", (), {}),
    ("LogSoftmax", (-1,), {}),
]


@pytest.mark.parametrize("ctor,args,kwargs", REPRS, ids=lambda v: str(v))
def test_repr_parameters_and_buffers_match_torch(torch, ctor, args, kwargs):
    e = getattr(engine.nn, ctor)(*args, **kwargs)
    t = getattr(torch.nn, ctor)(*args, **kwargs)
    assert repr(e) == repr(t)
    assert e.extra_repr() == t.extra_repr()
    e_params = [(n, tuple(p.shape), p.requires_grad) for n, p in e.named_parameters()]
    t_params = [(n, tuple(p.shape), p.requires_grad) for n, p in t.named_parameters()]
    assert e_params == t_params
    e_bufs = [(n, tuple(b.shape), str(b.dtype).split(".")[-1]) for n, b in e.named_buffers()]
    t_bufs = [(n, tuple(b.shape), str(b.dtype).split(".")[-1]) for n, b in t.named_buffers()]
    assert e_bufs == t_bufs
    assert list(e.state_dict()) == list(t.state_dict())
    for attr in ("in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation", "groups",
                 "padding_mode", "output_padding", "transposed", "num_features", "eps", "momentum", "affine",
                 "track_running_stats", "normalized_shape", "elementwise_affine", "p", "inplace",
                 "num_embeddings", "embedding_dim", "padding_idx", "negative_slope", "approximate", "dim",
                 "ceil_mode", "return_indices", "count_include_pad", "divisor_override", "output_size"):
        assert getattr(e, attr, "missing") == getattr(t, attr, "missing"), attr


@pytest.mark.parametrize("ctor,args", [("Conv2d", (6, 8, (3, 5))), ("Conv1d", (4, 6, 3)),
                                       ("Conv2d", (6, 9, 3, 1, 0, 1, 3))], ids=str)
def test_conv_default_init_is_kaiming_uniform(ctor, args):
    engine.manual_seed(0)
    m = getattr(engine.nn, ctor)(*args)
    fan_in = m.weight.shape[1] * math.prod(m.weight.shape[2:])
    bound = 1 / math.sqrt(fan_in)  # kaiming_uniform_(a=√5): gain √(1/3), times √3/√fan_in
    w, b = m.weight.detach().numpy(), m.bias.detach().numpy()
    assert w.dtype == np.float32 and b.dtype == np.float32
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    assert np.abs(w).max() > 0.8 * bound  # spread over the whole interval, not a constant
    assert abs(w.std() - bound / math.sqrt(3)) < 0.25 * bound / math.sqrt(3)


def test_norm_and_embedding_default_init():
    engine.manual_seed(0)
    bn = engine.nn.BatchNorm2d(5)
    assert bn.weight.tolist() == [1.0] * 5 and bn.bias.tolist() == [0.0] * 5
    assert bn.running_mean.tolist() == [0.0] * 5 and bn.running_var.tolist() == [1.0] * 5
    assert bn.num_batches_tracked.item() == 0 and bn.num_batches_tracked.dtype == engine.int64
    ln = engine.nn.LayerNorm((2, 3))
    assert ln.weight.tolist() == [[1.0] * 3] * 2 and ln.bias.tolist() == [[0.0] * 3] * 2
    emb = engine.nn.Embedding(400, 50, padding_idx=3)
    w = emb.weight.detach().numpy()
    assert abs(w.mean()) < 0.02 and abs(w.std() - 1) < 0.02  # N(0, 1)
    assert (w[3] == 0).all()


def test_reset_parameters_redraws(torch):
    engine.manual_seed(0)
    m = engine.nn.Conv2d(3, 4, 3)
    before = m.weight.detach().numpy().copy()
    m.reset_parameters()
    assert not np.array_equal(before, m.weight.detach().numpy())


@pytest.mark.parametrize("ctor,args,kwargs,shape", [
    ("Conv2d", (3, 6, 3), dict(stride=2, padding=1), (2, 3, 9, 8)),
    ("Conv2d", (4, 6, (3, 2)), dict(groups=2, dilation=2, bias=False), (2, 4, 9, 8)),
    ("Conv2d", (3, 6, 3), dict(padding="same"), (3, 7, 7)),
    ("Conv1d", (3, 5, 3), dict(padding=2, stride=2), (2, 3, 11)),
    ("LayerNorm", ((4, 5),), {}, (2, 3, 4, 5)),
    ("LayerNorm", (5,), dict(bias=False), (3, 5)),
    ("MaxPool2d", (3,), dict(stride=2, padding=1), (2, 3, 9, 8)),
    ("AvgPool2d", (2,), {}, (2, 3, 9, 8)),
    ("AdaptiveAvgPool2d", ((3, 2),), {}, (2, 3, 9, 8)),
    ("LeakyReLU", (0.1,), {}, (4, 5)),
    ("GELU", (), {}, (4, 5)),
    ("Tanh", (), {}, (4, 5)),
    ("Sigmoid", (), {}, (4, 5)),
    ("Softmax", (1,), {}, (4, 5)),
    ("LogSoftmax", (0,), {}, (4, 5)),
    ("ReLU", (), {}, (4, 5)),
], ids=lambda v: str(v))
def test_forward_backward_match_torch(torch, ctor, args, kwargs, shape):
    e, t = both(torch, ctor, *args, **kwargs)
    x = rnd(*shape)
    ex, tx = engine.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ey, ty = e(ex), t(tx)
    close(ey, ty)
    assert graph_names(ey) == graph_names(ty)
    g = rnd(*ty.shape, seed=3)
    ey.backward(engine.tensor(g))
    ty.backward(torch.tensor(g))
    close(ex.grad, tx.grad)
    for (_name, p), tp in zip(e.named_parameters(), t.parameters()):
        close(p.grad, tp.grad)


def test_inplace_relu_module(torch):
    e, t = both(torch, "ReLU", True)
    x = rnd(3, 4)
    ex, tx = engine.tensor(x), torch.tensor(x)
    assert e(ex) is ex and t(tx) is tx
    close(ex, tx)


def test_max_pool_module_returns_indices(torch):
    e, t = both(torch, "MaxPool2d", 2, return_indices=True)
    x = rnd(2, 3, 6, 6)
    (ey, ei), (ty, ti) = e(engine.tensor(x)), t(torch.tensor(x))
    close(ey, ty)
    np.testing.assert_array_equal(ei.numpy(), ti.numpy())


@pytest.mark.parametrize("ctor,shape", [("BatchNorm1d", (8, 4)), ("BatchNorm1d", (8, 4, 3)),
                                        ("BatchNorm2d", (5, 4, 3, 3))], ids=str)
@pytest.mark.parametrize("momentum", [0.1, 0.5, None])
def test_batchnorm_running_stats_over_steps_then_eval(torch, ctor, shape, momentum):
    e, t = both(torch, ctor, 4, momentum=momentum)
    with torch.no_grad():
        t.weight.uniform_(0.5, 1.5)
        t.bias.uniform_(-1, 1)
    copy_params_back(t, e)
    for step in range(4):
        x = rnd(*shape, seed=step) * (step + 1) + step
        ex, tx = engine.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        ey, ty = e(ex), t(tx)
        close(ey, ty)
        g = rnd(*shape, seed=10 + step)
        ey.backward(engine.tensor(g))
        ty.backward(torch.tensor(g))
        close(ex.grad, tx.grad)
        close(e.running_mean, t.running_mean)
        close(e.running_var, t.running_var)
        assert e.num_batches_tracked.item() == t.num_batches_tracked.item() == step + 1
    close(e.weight.grad, t.weight.grad, atol=1e-4)
    close(e.bias.grad, t.bias.grad, atol=1e-4)
    e.eval()
    t.eval()
    x = rnd(*shape, seed=99)
    ex, tx = engine.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ey, ty = e(ex), t(tx)
    close(ey, ty)
    ey.sum().backward()
    ty.sum().backward()
    close(ex.grad, tx.grad)
    assert e.num_batches_tracked.item() == 4  # eval leaves the statistics alone
    close(e.running_mean, t.running_mean)


def copy_params_back(torch_module, engine_module) -> None:
    with engine.no_grad():
        for name, p in torch_module.named_parameters():
            engine_module.get_parameter(name).copy_(engine.tensor(p.detach().numpy()))


@pytest.mark.parametrize("training", [True, False])
def test_batchnorm_without_running_stats_always_uses_batch_stats(torch, training):
    e, t = both(torch, "BatchNorm2d", 3, affine=False, track_running_stats=False)
    e.train(training)
    t.train(training)
    x = rnd(4, 3, 2, 2) * 3 + 1
    close(e(engine.tensor(x)), t(torch.tensor(x)))
    assert e.running_mean is None and e.num_batches_tracked is None


def test_batchnorm_state_dict_roundtrip_and_old_versions(torch):
    e, t = both(torch, "BatchNorm1d", 3)
    t(torch.tensor(rnd(6, 3)))
    sd = {k: engine.tensor(v.numpy()) for k, v in t.state_dict().items()}
    e.load_state_dict(sd)
    close(e.running_var, t.running_var)
    assert e.num_batches_tracked.item() == 1
    # A version-1 state dict has no num_batches_tracked: it loads, keeping the current count.
    old = OrderedDict((k, v) for k, v in sd.items() if k != "num_batches_tracked")
    old._metadata = {"": {"version": 1}}
    fresh = engine.nn.BatchNorm1d(3)
    assert str(fresh.load_state_dict(old)) == "<All keys matched successfully>"
    assert fresh.num_batches_tracked.item() == 0


def test_dropout_train_and_eval(torch):
    engine.manual_seed(0)
    m = engine.nn.Dropout(0.3)
    x = engine.ones(200, 100)
    y = m(x).numpy()
    kept = y != 0
    assert abs(kept.mean() - 0.7) < 0.01
    np.testing.assert_allclose(y[kept], 1 / 0.7, rtol=1e-6)
    m.eval()
    assert m(x) is x


def test_dropout2d_zeroes_whole_channels():
    engine.manual_seed(1)
    m = engine.nn.Dropout2d(0.5)
    y = m(engine.ones(40, 30, 4, 4)).numpy()
    per_channel = y.reshape(40, 30, -1)
    assert ((per_channel == 0).all(-1) | (per_channel == 2).all(-1)).all()
    assert abs((per_channel[..., 0] == 0).mean() - 0.5) < 0.05
    m.eval()
    x = engine.ones(2, 3, 4, 4)
    assert m(x) is x


def test_dropout_extremes_and_inplace():
    x = engine.ones(3, 4)
    assert engine.nn.functional.dropout(x, 0.0) is x
    assert engine.nn.functional.dropout(x, 1.0).tolist() == [[0.0] * 4] * 3
    y = engine.ones(3, 4)
    out = engine.nn.Dropout(0.5, inplace=True)(y)
    assert out is y and set(np.unique(y.numpy())) <= {0.0, 2.0}
    z = engine.ones(2, 3, 2, 2)
    assert engine.nn.functional.dropout2d(z, 0.5, inplace=True) is z


def test_dropout2d_on_3d_input_warns_like_torch():
    with pytest.warns(UserWarning, match="Received a 3D input to dropout2d"):
        y = engine.nn.functional.dropout2d(engine.ones(4, 5, 6))
    assert ((y.numpy() == 0).all(-1) | (y.numpy() == 2).all(-1)).all()
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout2d"):
        engine.nn.functional.dropout2d(engine.ones(4, 5))


def test_embedding_module(torch):
    e, t = both(torch, "Embedding", 6, 3, padding_idx=2)
    idx = np.array([[0, 2, 5], [2, 1, 0]])
    ey, ty = e(engine.tensor(idx)), t(torch.tensor(idx))
    close(ey, ty)
    assert graph_names(ey) == graph_names(ty) == ["EmbeddingBackward0", []]
    ey.sum().backward()
    ty.sum().backward()
    close(e.weight.grad, t.weight.grad)
    assert e.weight.grad.numpy()[2].tolist() == [0.0, 0.0, 0.0]


def test_embedding_from_pretrained(torch):
    w = rnd(4, 3)
    e = engine.nn.Embedding.from_pretrained(engine.tensor(w))
    t = torch.nn.Embedding.from_pretrained(torch.tensor(w))
    assert repr(e) == repr(t) and e.weight.requires_grad is t.weight.requires_grad is False
    close(e(engine.tensor([3, 0])), t(torch.tensor([3, 0])))
    assert engine.nn.Embedding.from_pretrained(engine.tensor(w), freeze=False).weight.requires_grad


def test_mnist_net_step_matches_torch(torch):
    """The issue's benchmark network: same weights, same batch -> same loss and gradients."""
    def build(lib):
        nn, F = lib.nn, lib.nn.functional

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv1 = nn.Conv2d(1, 10, kernel_size=5)
                self.conv2 = nn.Conv2d(10, 20, kernel_size=5)
                self.conv2_drop = nn.Dropout2d()
                self.fc1 = nn.Linear(320, 50)
                self.fc2 = nn.Linear(50, 10)

            def forward(self, x):
                x = F.relu(F.max_pool2d(self.conv1(x), 2))
                x = F.relu(F.max_pool2d(self.conv2_drop(self.conv2(x)), 2))
                x = x.view(-1, 320)
                x = F.relu(self.fc1(x))
                x = F.dropout(x, training=self.training)
                return F.log_softmax(self.fc2(x), dim=1)

        return Net().eval()  # eval: dropout off, so both see the same function

    e, t = build(engine), build(torch)
    copy_params(e, t, torch)
    x = rnd(16, 1, 28, 28)
    y = np.random.default_rng(0).integers(0, 10, 16)
    el = engine.nn.functional.nll_loss(e(engine.tensor(x)), engine.tensor(y))
    tl = torch.nn.functional.nll_loss(t(torch.tensor(x)), torch.tensor(y))
    close(el, tl)
    el.backward()
    tl.backward()
    for (_name, p), tp in zip(e.named_parameters(), t.parameters()):
        close(p.grad, tp.grad, atol=1e-4)
