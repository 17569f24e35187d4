"""Layers added for real model code: constructor defaults, reprs, state_dict keys, forward and
backward against torch (parameters copied over), and torch's constructor/forward errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import engine
import engine.nn as enn
from tests.gradcheck import gradcheck, rand

from .conftest import close


def rnd(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# (class name, constructor args, constructor kwargs, input shape)
LAYERS = [
    ("SiLU", (), {}, (2, 5)), ("SiLU", (), {"inplace": True}, (2, 5)), ("Mish", (), {}, (2, 5)),
    ("Hardswish", (), {}, (2, 5)), ("Hardsigmoid", (), {}, (2, 5)), ("Softplus", (), {"beta": 2, "threshold": 3},
                                                                      (2, 5)),
    ("ELU", (), {"alpha": 0.5}, (2, 5)), ("ELU", (), {"inplace": True}, (2, 5)), ("SELU", (), {}, (2, 5)),
    ("CELU", (), {"alpha": 1.5}, (2, 5)), ("LeakyReLU", (0.2,), {}, (2, 5)), ("ReLU6", (), {}, (2, 5)),
    ("ReLU6", (), {"inplace": True}, (2, 5)), ("Hardtanh", (-2.0, 0.5), {}, (2, 5)), ("LogSigmoid", (), {}, (2, 5)),
    ("Softsign", (), {}, (2, 5)), ("Tanhshrink", (), {}, (2, 5)), ("GLU", (), {}, (2, 6)), ("GLU", (0,), {}, (2, 5)),
    ("Upsample", (), {"scale_factor": 2}, (1, 2, 3, 4)), ("Upsample", (), {"size": (5, 7), "mode": "bilinear"},
                                                           (1, 2, 3, 4)),
    ("Upsample", (), {"scale_factor": (2, 1.5), "mode": "bicubic", "align_corners": True}, (1, 2, 3, 4)),
    ("UpsamplingNearest2d", (), {"scale_factor": 2}, (1, 2, 3, 4)),
    ("UpsamplingBilinear2d", (), {"size": 5}, (1, 2, 3, 4)),
    ("Unfold", (2,), {"padding": 1, "stride": 2}, (2, 3, 5, 4)), ("Fold", ((4, 5), 2), {}, (2, 8, 12)),
    ("PixelShuffle", (2,), {}, (1, 8, 2, 3)), ("PixelUnshuffle", (2,), {}, (1, 2, 4, 6)),
    ("ChannelShuffle", (2,), {}, (1, 4, 2, 3)),
    ("ReflectionPad1d", (2,), {}, (2, 3, 5)), ("ReflectionPad2d", ((1, 2, 0, 3),), {}, (2, 3, 4, 5)),
    ("ReplicationPad1d", ((3, 1),), {}, (2, 3, 5)), ("ReplicationPad2d", (2,), {}, (2, 3, 4, 5)),
    ("ZeroPad2d", ((1, 0, 2, 1),), {}, (2, 3, 4, 5)), ("ConstantPad1d", (2, 3.5), {}, (2, 3, 5)),
    ("ConstantPad2d", ((1, 0, 2, 1), -1.0), {}, (2, 3, 4, 5)), ("CircularPad2d", (1,), {}, (2, 3, 4, 5)),
    ("ReflectionPad3d", (1,), {}, (1, 2, 3, 4, 5)), ("ReplicationPad3d", ((1, 0, 2, 1, 0, 2),), {}, (2, 3, 4, 5)),
    ("ZeroPad1d", (2,), {}, (2, 3)), ("ZeroPad3d", (1,), {}, (1, 2, 3, 4, 2)),
    ("ConstantPad3d", (1, 0.5), {}, (2, 3, 4, 2)), ("CircularPad1d", ((2, 1),), {}, (2, 3, 4)),
    ("CircularPad3d", (1,), {}, (1, 2, 3, 4, 2)),
    ("GroupNorm", (2, 4), {}, (3, 4, 5)), ("GroupNorm", (1, 4), {"affine": False}, (3, 4, 2, 2)),
    ("GroupNorm", (4, 4), {"bias": False, "eps": 1e-3}, (3, 4, 5)),
    ("InstanceNorm1d", (3,), {}, (2, 3, 5)), ("InstanceNorm1d", (3,), {"affine": True}, (3, 5)),
    ("InstanceNorm2d", (3,), {"affine": True, "track_running_stats": True, "momentum": 0.2}, (2, 3, 4, 5)),
    ("InstanceNorm2d", (3,), {}, (3, 4, 5)),
    ("LocalResponseNorm", (3,), {"alpha": 0.1, "k": 2.0}, (2, 5, 4)),
    ("AvgPool1d", (3,), {"stride": 2, "padding": 1}, (2, 3, 9)), ("MaxPool1d", (2,), {}, (2, 3, 9)),
    ("AdaptiveAvgPool1d", (4,), {}, (2, 3, 9)), ("AdaptiveMaxPool2d", ((3, 2),), {}, (2, 3, 7, 5)),
    ("Identity", (), {}, (2, 3)), ("Unflatten", (1, (2, 3)), {}, (4, 6)),
]


def _layer(torch, name, args, kwargs):
    return getattr(enn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)


@pytest.mark.parametrize("name,args,kwargs,shape", LAYERS, ids=lambda v: str(v))
def test_layer_parity(torch, name, args, kwargs, shape):
    e_mod, t_mod = _layer(torch, name, args, kwargs)
    assert repr(e_mod) == repr(t_mod)
    assert list(e_mod.state_dict()) == list(t_mod.state_dict())
    with torch.no_grad():  # non-default parameter values, the same in both
        for i, p in enumerate(t_mod.parameters()):
            p.copy_(torch.tensor(rnd(*p.shape, seed=10 + i)))
    copy_into_engine(e_mod, t_mod)
    x = rnd(*shape)
    e_in, t_in = engine.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    inplace = kwargs.get("inplace", False)
    e_out = e_mod(e_in * 1 if inplace else e_in)
    t_out = t_mod(t_in * 1 if inplace else t_in)
    close(e_out, t_out)
    g = rnd(*t_out.shape, seed=3)
    e_out.backward(engine.tensor(g))
    t_out.backward(torch.tensor(g))
    close(e_in.grad, t_in.grad)
    for (en, ep), (tn, tp) in zip(e_mod.named_parameters(), t_mod.named_parameters(), strict=True):
        assert en == tn
        close(ep.grad, tp.grad)
    for (en, eb), (tn, tb) in zip(e_mod.named_buffers(), t_mod.named_buffers(), strict=True):
        assert en == tn
        close(eb, tb)


def copy_into_engine(e_mod, t_mod) -> None:
    for name, p in t_mod.named_parameters():
        e_mod.get_parameter(name).data = engine.tensor(p.detach().numpy().copy())
    for name, b in t_mod.named_buffers():
        e_mod.get_buffer(name).copy_(engine.tensor(b.numpy().copy()))


@pytest.mark.parametrize("name", ["InstanceNorm1d", "InstanceNorm2d"])
def test_instance_norm_eval_uses_running_stats(torch, name):
    e_mod, t_mod = _layer(torch, name, (3,), {"track_running_stats": True, "affine": True})
    shape = (2, 3, 6) if name == "InstanceNorm1d" else (2, 3, 4, 3)
    for seed in (0, 1):  # two training steps update the running statistics
        e_mod(engine.tensor(rnd(*shape, seed=seed)))
        t_mod(torch.tensor(rnd(*shape, seed=seed)))
    close(e_mod.running_mean, t_mod.running_mean)
    close(e_mod.running_var, t_mod.running_var)
    e_mod.eval()
    t_mod.eval()
    close(e_mod(engine.tensor(rnd(*shape, seed=2))), t_mod(torch.tensor(rnd(*shape, seed=2))))
    # without tracking, evaluation still normalises with the input's statistics
    e_plain, t_plain = _layer(torch, name, (3,), {})
    e_plain.eval()
    t_plain.eval()
    close(e_plain(engine.tensor(rnd(*shape, seed=2))), t_plain(torch.tensor(rnd(*shape, seed=2))))


def test_layer_defaults(torch):
    """Constructor attributes as torch stores them."""
    for name, args, kwargs in [("Upsample", (), {"scale_factor": (2, 3)}), ("Upsample", (), {"size": 4}),
                               ("AvgPool1d", (3,), {}), ("MaxPool1d", (3,), {}), ("PairwiseDistance", (), {}),
                               ("CosineSimilarity", (), {}), ("Hardtanh", (), {}), ("ReLU6", (), {}),
                               ("InstanceNorm2d", (4,), {}), ("GroupNorm", (2, 4), {}),
                               ("LocalResponseNorm", (2,), {})]:
        e_mod, t_mod = _layer(torch, name, args, kwargs)
        keys = [k for k in vars(t_mod) if not k.startswith("_") and k != "training"]
        assert {k: getattr(e_mod, k) for k in keys} == {k: getattr(t_mod, k) for k in keys}, name
        assert repr(e_mod) == repr(t_mod)


def test_distance_layers(torch):
    a, b = rnd(4, 5), rnd(4, 5, seed=1)
    for name, kwargs in [("CosineSimilarity", {"dim": 0}), ("PairwiseDistance", {"p": 1.0, "keepdim": True})]:
        e_mod, t_mod = _layer(torch, name, (), kwargs)
        assert repr(e_mod) == repr(t_mod)
        close(e_mod(engine.tensor(a), engine.tensor(b)), t_mod(torch.tensor(a), torch.tensor(b)))


def test_layers_gradcheck():
    gradcheck(enn.GroupNorm(2, 4, affine=False), rand(2, 4, 3))
    gradcheck(enn.InstanceNorm1d(2), rand(2, 2, 4))
    gradcheck(enn.ReflectionPad2d((1, 2, 2, 0)), rand(1, 2, 3, 3))
    gradcheck(enn.Upsample(size=(3, 5), mode="bilinear", align_corners=True), rand(1, 1, 2, 3))


def _same_error(torch, efn, tfn):
    with pytest.raises(Exception) as t_err:
        tfn()
    with pytest.raises(type(t_err.value)) as e_err:
        efn()
    assert str(e_err.value) == str(t_err.value).replace("torch.", "engine.")


@pytest.mark.parametrize("build,shape", [
    (lambda nn: nn.Hardtanh(1.0, 1.0), None), (lambda nn: nn.GroupNorm(3, 4), None),
    (lambda nn: nn.CircularPad2d(1), (3, 4)), (lambda nn: nn.InstanceNorm1d(3), (2, 3, 4, 5)),
    (lambda nn: nn.InstanceNorm2d(3, affine=True), (2, 4, 3, 3)), (lambda nn: nn.InstanceNorm1d(3), (2, 3, 1)),
])
def test_layer_errors(torch, build, shape):
    if shape is None:
        _same_error(torch, lambda: build(enn), lambda: build(torch.nn))
    else:
        _same_error(torch, lambda: build(enn)(engine.randn(*shape)), lambda: build(torch.nn)(torch.randn(*shape)))


def test_hardtanh_deprecated_keywords(torch):
    with pytest.warns(FutureWarning, match="keyword argument `min_value` is deprecated and renamed to `min_val`"):
        e = enn.Hardtanh(min_value=-2.0)
    with pytest.warns(FutureWarning, match="keyword argument `max_value` is deprecated and renamed to `max_val`"):
        enn.Hardtanh(max_value=2.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert repr(e) == repr(torch.nn.Hardtanh(min_value=-2.0))


def test_instance_norm_feature_mismatch_warns(torch):
    with pytest.warns(UserWarning) as e_rec:
        enn.InstanceNorm1d(4)(engine.randn(2, 3, 5))
    with pytest.warns(UserWarning) as t_rec:
        torch.nn.InstanceNorm1d(4)(torch.randn(2, 3, 5))
    assert str(e_rec[0].message) == str(t_rec[0].message)


def _small_net(nn, F):
    """A model in the style of real vision code, touching many of the new layers and ops."""

    class Block(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.conv = nn.Conv2d(c, c, 3, padding=1, groups=c)
            self.gn = nn.GroupNorm(2, c)
            self.act = nn.SiLU()
            self.pad = nn.ReflectionPad2d(1)
            self.conv2 = nn.Conv2d(c, c, 3)

        def forward(self, x):
            return x + self.conv2(self.pad(self.act(self.gn(self.conv(x)))))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.InstanceNorm2d(8, affine=True), nn.ReLU6())
            self.block = Block(8)
            self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
            self.shuffle = nn.PixelShuffle(2)
            self.head = nn.Sequential(nn.AdaptiveMaxPool2d(2), nn.Flatten(), nn.Linear(32, 4), nn.Hardswish(),
                                      nn.Linear(4, 3))

        def forward(self, x):
            h = self.shuffle(F.interpolate(self.up(self.block(self.stem(x))), size=(6, 6), mode="bicubic"))
            h = F.fold(F.normalize(F.unfold(h, 2, stride=2), dim=1), (12, 12), 2, stride=2)
            return self.head(F.pad(h, (1, 1, 1, 1), mode="replicate")[:, :, ::7, ::7].repeat(1, 4, 1, 1))

    return Net()


def test_small_net_end_to_end(torch):
    """torch's weights loaded into the same model written against the engine: logits, loss and
    every parameter gradient agree."""
    torch.manual_seed(0)
    t_net = _small_net(torch.nn, torch.nn.functional)
    e_net = _small_net(enn, engine.nn.functional)
    e_net.load_state_dict({k: engine.tensor(v.detach().numpy().copy()) for k, v in t_net.state_dict().items()})
    x, labels = rnd(2, 3, 6, 6), np.array([0, 2])
    e_loss = engine.nn.functional.cross_entropy(e_net(engine.tensor(x)), engine.tensor(labels))
    t_loss = torch.nn.functional.cross_entropy(t_net(torch.tensor(x)), torch.tensor(labels))
    close(e_loss, t_loss)
    e_loss.backward()
    t_loss.backward()
    for (en, ep), (tn, tp) in zip(e_net.named_parameters(), t_net.named_parameters(), strict=True):
        assert en == tn
        close(ep.grad, tp.grad, atol=1e-5)
