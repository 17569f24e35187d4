"""nn.functional ops added for real model code (activations, pad modes, interpolate, unfold/fold,
shuffles, distances, 1-D and adaptive-max pools, group/instance/local-response norms): values,
gradients and graph node names against torch, finite-difference gradients without torch, and
torch's errors."""

from __future__ import annotations

import numpy as np
import pytest

import engine
import engine.nn.functional as EF
from tests.gradcheck import gradcheck, rand

from .conftest import close, graph_names


def rnd(*shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _parity(torch, fn_name: str, arrays: list, kwargs: dict, atol=1e-5, rtol=1e-4, names=True, tfn=None,
            efn=None):
    """Run ``F.<fn_name>`` on engine and torch with the same float inputs (all requiring grad),
    backprop one random gradient, compare output, input gradients and graph node names."""
    e_in = [engine.tensor(a, requires_grad=True) for a in arrays]
    t_in = [torch.tensor(a, requires_grad=True) for a in arrays]
    e_out = (efn or getattr(EF, fn_name))(*e_in, **kwargs)
    t_out = (tfn or getattr(torch.nn.functional, fn_name))(*t_in, **kwargs)
    close(e_out, t_out, atol, rtol)
    if names:
        assert graph_names(e_out) == graph_names(t_out)
    g = np.random.default_rng(7).standard_normal(tuple(t_out.shape)).astype(np.float32)
    e_out.backward(engine.tensor(g))
    t_out.backward(torch.tensor(g))
    for e, t in zip(e_in, t_in):
        close(e.grad, t.grad, atol, rtol)
    return e_out, t_out


# --- activations ---------------------------------------------------------------------------------

# values around the kinks (-3, 0, 3, 6, thresholds) and far out, to exercise every branch
_ACT_X = np.concatenate([rnd(40) * 4, np.array([-30., -3., -1., 0., 1., 3., 6., 25., 30.], np.float32)])

ACTIVATIONS = [
    ("silu", {}), ("softplus", {}), ("softplus", {"beta": 2.0, "threshold": 5.0}), ("mish", {}),
    ("hardswish", {}), ("hardsigmoid", {}), ("elu", {}), ("elu", {"alpha": 0.5}), ("selu", {}),
    ("celu", {"alpha": 2.0}), ("hardtanh", {}), ("hardtanh", {"min_val": -2.0, "max_val": 0.5}), ("relu6", {}),
    ("logsigmoid", {}), ("softsign", {}), ("tanhshrink", {}), ("gelu", {"approximate": "tanh"}),
    ("leaky_relu", {"negative_slope": 0.2}),
]


@pytest.mark.parametrize("name,kw", ACTIVATIONS, ids=lambda v: str(v))
def test_activation_parity(torch, name, kw):
    _parity(torch, name, [_ACT_X], kw)


@pytest.mark.parametrize("name,kw", [a for a in ACTIVATIONS if a[0] not in ("gelu", "leaky_relu")],
                         ids=lambda v: str(v))
def test_activation_gradcheck(name, kw):
    x = rand(4, 5, low=-4, high=4)
    gradcheck(lambda t: getattr(EF, name)(t, **kw), x)


@pytest.mark.parametrize("name", ["elu", "selu", "celu", "hardtanh", "relu6", "silu", "hardswish", "hardsigmoid",
                                  "mish"])
def test_activation_inplace(torch, name):
    """In place: the input holds the result, the node is torch's in-place one, gradients match."""
    e_leaf, t_leaf = engine.tensor(_ACT_X, requires_grad=True), torch.tensor(_ACT_X, requires_grad=True)
    e_x, t_x = e_leaf * 1, t_leaf * 1
    e_out = getattr(EF, name)(e_x, inplace=True)
    t_out = getattr(torch.nn.functional, name)(t_x, inplace=True)
    assert e_out is e_x
    close(e_x, t_x)
    assert type(e_out.grad_fn).__name__ == type(t_out.grad_fn).__name__
    e_out.sum().backward()
    t_out.sum().backward()
    close(e_leaf.grad, t_leaf.grad)
    plain = engine.tensor(_ACT_X.copy())  # no graph: updated in place
    getattr(EF, name)(plain, inplace=True)
    close(plain, t_x)


def test_glu(torch):
    _parity(torch, "glu", [rnd(3, 4, 6)], {})
    _parity(torch, "glu", [rnd(3, 4, 6)], {"dim": 1})
    gradcheck(lambda t: EF.glu(t, 0), rand(4, 3))


def test_hardtanh_integers(torch):
    x = np.arange(-3, 4)
    close(EF.hardtanh(engine.tensor(x)), torch.nn.functional.hardtanh(torch.tensor(x)))
    close(EF.relu6(engine.tensor(x * 3)), torch.nn.functional.relu6(torch.tensor(x * 3)))


def _same_error(torch, efn, tfn):
    """Both raise the same exception type with the same message (torch's names mapped)."""
    with pytest.raises(Exception) as t_err:
        tfn()
    with pytest.raises(type(t_err.value)) as e_err:
        efn()
    assert str(e_err.value) == str(t_err.value).replace("torch.", "engine.")


@pytest.mark.parametrize("name", ["silu", "softplus", "mish", "hardswish", "hardsigmoid", "elu", "selu", "celu",
                                  "logsigmoid", "glu"])
def test_activation_integer_errors(torch, name):
    _same_error(torch, lambda: getattr(EF, name)(engine.arange(4)),
                lambda: getattr(torch.nn.functional, name)(torch.arange(4)))


@pytest.mark.parametrize("call", [
    lambda F, T: F.glu(T(3, 5)), lambda F, T: F.glu(T(3, 4), dim=2), lambda F, T: F.glu(T(1)[0]),
    lambda F, T: F.hardtanh(T(3), 2.0, 1.0), lambda F, T: F.celu(T(3), 0.0),
])
def test_activation_errors(torch, call):
    _same_error(torch, lambda: call(EF, lambda *s: engine.randn(*s)), lambda: call(torch.nn.functional,
                                                                                 lambda *s: torch.randn(*s)))


# --- pad -----------------------------------------------------------------------------------------

PADS = [
    ((2, 3, 5), (1, 2), "reflect"), ((3, 5), (2, 0), "reflect"), ((2, 3, 4, 5), (1, 2, 3, 1), "reflect"),
    ((3, 4, 5), (0, 1, 2, 2), "reflect"), ((1, 2, 3, 4, 5), (1, 1, 2, 0, 1, 2), "reflect"),
    ((2, 3, 5), (4, 7), "replicate"), ((2, 3, 4, 5), (1, 2, 3, 1), "replicate"),
    ((2, 3, 4, 5), (1, 1, 2, 0, 1, 2), "replicate"), ((2, 3, 5), (5, 2), "circular"),
    ((2, 3, 4, 5), (1, 2, 3, 1), "circular"), ((1, 2, 3, 4, 5), (1, 1, 2, 0, 3, 2), "circular"),
    ((2, 3, 5), (-1, 2), "reflect"), ((2, 3, 5), (-2, 1), "replicate"), ((2, 3, 5), (1, -2), "circular"),
    ((2, 3, 5), (1, 2), "constant"), ((2, 3, 4, 5), (1, 2, 3, 1, 1, 1, 1, 0), "constant"),
]


@pytest.mark.parametrize("shape,pad,mode", PADS, ids=str)
def test_pad_parity(torch, shape, pad, mode):
    # torch records circular padding as a chain of slice copies; the engine as one CopySlices node
    _parity(torch, "pad", [rnd(*shape)], {"pad": pad, "mode": mode}, names=mode != "circular")


def test_pad_circular_top_node(torch):
    e = EF.pad(engine.tensor(rnd(2, 3, 5), requires_grad=True), (1, 2), mode="circular")
    t = torch.nn.functional.pad(torch.tensor(rnd(2, 3, 5), requires_grad=True), (1, 2), mode="circular")
    assert type(e.grad_fn).__name__ == type(t.grad_fn).__name__ == "CopySlices"


def test_pad_constant_value(torch):
    _parity(torch, "pad", [rnd(2, 3)], {"pad": (1, 1), "value": 2.5})


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_pad_gradcheck(mode):
    gradcheck(lambda t: EF.pad(t, (2, 1, 1, 2), mode=mode), rand(2, 3, 4))


@pytest.mark.parametrize("shape,pad,kw", [
    ((3, 4), (1, 2, 3), {}), ((1, 2, 3, 4), (1,) * 10, {}), ((3, 4), (1, 1), {"mode": "foo"}),
    ((2, 3, 4), (4, 1), {"mode": "reflect"}), ((1, 3, 4), (1, 1, 3, 1), {"mode": "reflect"}),
    ((2, 3, 4), (1, 1, 1, 1, 1, 1), {"mode": "replicate"}), ((4,), (1, 1), {"mode": "reflect"}),
    ((2, 3, 4), (5, 1), {"mode": "circular"}), ((2, 3, 4), (1, 1), {"mode": "reflect", "value": 2.0}),
    ((1, 0, 4), (1, 1), {"mode": "replicate"}),
])
def test_pad_errors(torch, shape, pad, kw):
    _same_error(torch, lambda: EF.pad(engine.randn(*shape), pad, **kw),
                lambda: torch.nn.functional.pad(torch.randn(*shape), pad, **kw))


# --- interpolate ---------------------------------------------------------------------------------

INTERPS = [
    ((2, 3, 4, 5), {"scale_factor": 2}), ((2, 3, 4, 5), {"size": (7, 3)}), ((2, 3, 4, 5), {"scale_factor": 1.7}),
    ((2, 3, 6), {"size": 4}), ((2, 3, 6), {"scale_factor": 0.5}),
    ((1, 2, 3, 4, 5), {"size": (4, 6, 3)}), ((2, 3, 4, 5), {"size": (9, 7), "mode": "nearest-exact"}),
    ((2, 3, 4, 5), {"scale_factor": 2, "mode": "bilinear"}),
    ((2, 3, 4, 5), {"size": (7, 3), "mode": "bilinear", "align_corners": True}),
    ((2, 3, 4, 5), {"size": (7, 9), "mode": "bilinear", "align_corners": False}),
    ((2, 3, 4, 5), {"scale_factor": 1.5, "mode": "bilinear", "recompute_scale_factor": True}),
    ((2, 3, 4, 5), {"scale_factor": (1.5, 0.7), "mode": "bilinear"}),
    ((2, 3, 6), {"size": 11, "mode": "linear"}), ((2, 3, 6), {"size": 4, "mode": "linear", "align_corners": True}),
    ((1, 2, 3, 4, 5), {"size": (4, 6, 3), "mode": "trilinear"}),
    ((2, 3, 4, 5), {"size": (7, 9), "mode": "bicubic"}),
    ((2, 3, 4, 5), {"size": (3, 8), "mode": "bicubic", "align_corners": True}),
    ((2, 3, 8, 9), {"size": (3, 4), "mode": "area"}), ((2, 3, 9), {"size": 4, "mode": "area"}),
    ((2, 3, 4, 5), {"size": (4, 5), "mode": "bilinear"}),
]


@pytest.mark.parametrize("shape,kw", INTERPS, ids=str)
def test_interpolate_parity(torch, shape, kw):
    _parity(torch, "interpolate", [rnd(*shape)], kw)


@pytest.mark.parametrize("mode,shape", [("nearest", (1, 2, 3, 4)), ("bilinear", (1, 2, 3, 4)),
                                        ("bicubic", (1, 1, 3, 4)), ("linear", (1, 2, 4)),
                                        ("trilinear", (1, 1, 2, 3, 2)), ("nearest-exact", (1, 2, 5))])
def test_interpolate_gradcheck(mode, shape):
    size = tuple(n + 2 for n in shape[2:])
    gradcheck(lambda t: EF.interpolate(t, size=size, mode=mode), rand(*shape))


def test_interpolate_nearest_integers(torch):
    x = np.arange(24, dtype=np.uint8).reshape(1, 2, 3, 4)
    close(EF.interpolate(engine.tensor(x), scale_factor=2), torch.nn.functional.interpolate(torch.tensor(x),
                                                                                          scale_factor=2))


@pytest.mark.parametrize("shape,kw", [
    ((1, 2, 3, 4), {"size": 3, "scale_factor": 2}), ((1, 2, 3, 4), {}),
    ((1, 2, 3, 4), {"size": 3, "align_corners": True}), ((1, 2, 3), {"size": 3, "mode": "bilinear"}),
    ((1, 2, 3, 4), {"size": 3, "mode": "linear"}), ((2, 3), {"size": 3}), ((1, 2, 3, 4), {"size": 3, "mode": "foo"}),
    ((1, 2, 3, 4), {"size": (3, 4, 5)}), ((1, 2, 3, 4), {"scale_factor": (3, 4, 5)}),
    ((1, 2, 3, 4), {"size": 0}), ((1, 2, 3, 4), {"size": 3, "recompute_scale_factor": True}),
])
def test_interpolate_errors(torch, shape, kw):
    _same_error(torch, lambda: EF.interpolate(engine.randn(*shape), **kw),
                lambda: torch.nn.functional.interpolate(torch.randn(*shape), **kw))


@pytest.mark.parametrize("kw,message", [
    ({"size": 2, "mode": "bilinear", "antialias": True}, "interpolate: antialias=True is not implemented in engine"),
    ({"size": 2, "mode": "lanczos"}, "Input Error: Only 3D, 4D and 5D input Tensors supported (got 4D) for the "
     "modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact (got lanczos)"),
])
def test_interpolate_not_implemented(kw, message):
    with pytest.raises(NotImplementedError) as err:
        EF.interpolate(engine.randn(1, 2, 3, 4), **kw)
    assert str(err.value) == message


def test_interpolate_area_5d_not_implemented():
    with pytest.raises(NotImplementedError, match="mode='area' on 5-D input is not implemented in engine"):
        EF.interpolate(engine.randn(1, 1, 2, 2, 2), size=1, mode="area")


def test_interpolate_linear_integer_input():
    with pytest.raises(NotImplementedError, match="mode='bilinear' needs a floating point input in engine"):
        EF.interpolate(engine.ones(1, 1, 2, 2, dtype=engine.int64), size=3, mode="bilinear")


# --- unfold / fold -------------------------------------------------------------------------------

UNFOLDS = [
    ((2, 3, 6, 7), {"kernel_size": 2}), ((2, 3, 6, 7), {"kernel_size": (3, 2), "stride": 2, "padding": 1}),
    ((2, 3, 8, 7), {"kernel_size": 2, "dilation": (2, 1), "padding": (1, 0), "stride": (1, 2)}),
    ((3, 6, 7), {"kernel_size": 3}),
]


@pytest.mark.parametrize("shape,kw", UNFOLDS, ids=str)
def test_unfold_parity(torch, shape, kw):
    _parity(torch, "unfold", [rnd(*shape)], kw)


@pytest.mark.parametrize("shape,kw", [((2, 12, 30), {"output_size": (6, 7), "kernel_size": 2}),
                                      ((12, 30), {"output_size": (6, 7), "kernel_size": 2}),
                                      ((2, 18, 12), {"output_size": (6, 7), "kernel_size": (3, 2), "stride": 2,
                                                     "padding": 1}),
                                      ((1, 8, 9), {"output_size": 5, "kernel_size": 2, "dilation": 2})], ids=str)
def test_fold_parity(torch, shape, kw):
    _parity(torch, "fold", [rnd(*shape)], kw)


def test_fold_unfold_gradcheck():
    gradcheck(lambda t: EF.unfold(t, 2, padding=1, stride=2), rand(1, 2, 4, 3))
    gradcheck(lambda t: EF.fold(t, (4, 3), 2, padding=1, stride=2), rand(1, 8, 6))


@pytest.mark.parametrize("call", [
    lambda F, T: F.unfold(T(1, 2, 3, 4), 5), lambda F, T: F.unfold(T(1, 1, 2, 3, 4), 2),
    lambda F, T: F.fold(T(1, 5, 12), (4, 5), 2), lambda F, T: F.fold(T(1, 8, 11), (4, 5), 2),
    lambda F, T: F.fold(T(1, 8, 12, 1), (4, 5), 2),
])
def test_fold_errors(torch, call):
    _same_error(torch, lambda: call(EF, engine.randn), lambda: call(torch.nn.functional, torch.randn))


# --- shuffles ------------------------------------------------------------------------------------

def test_shuffles_parity(torch):
    _parity(torch, "pixel_shuffle", [rnd(2, 8, 3, 4)], {"upscale_factor": 2})
    _parity(torch, "pixel_shuffle", [rnd(2, 1, 9, 2, 3)], {"upscale_factor": 3})
    _parity(torch, "pixel_unshuffle", [rnd(2, 2, 4, 6)], {"downscale_factor": 2})
    _parity(torch, "channel_shuffle", [rnd(2, 6, 3, 2)], {"groups": 3}, tfn=torch.nn.functional.channel_shuffle)
    gradcheck(lambda t: EF.pixel_shuffle(t, 2), rand(1, 4, 2, 3))
    gradcheck(lambda t: EF.pixel_unshuffle(t, 2), rand(1, 1, 2, 4))
    gradcheck(lambda t: EF.channel_shuffle(t, 2), rand(1, 4, 2))


@pytest.mark.parametrize("call", [
    lambda F, T: F.pixel_shuffle(T(1, 5, 2, 2), 2), lambda F, T: F.pixel_shuffle(T(4, 2), 2),
    lambda F, T: F.pixel_unshuffle(T(1, 1, 3, 4), 2), lambda F, T: F.pixel_unshuffle(T(1, 1, 4, 3), 2),
    lambda F, T: F.pixel_unshuffle(T(4, 2), 2), lambda F, T: F.channel_shuffle(T(1, 5, 2, 2), 2),
])
def test_shuffle_errors(torch, call):
    _same_error(torch, lambda: call(EF, engine.randn), lambda: call(torch.nn.functional, torch.randn))


# --- distances -----------------------------------------------------------------------------------

def test_normalize_parity(torch):
    _parity(torch, "normalize", [rnd(3, 4, 5)], {})
    _parity(torch, "normalize", [rnd(3, 4, 5)], {"p": 1.0, "dim": -1})
    x = rnd(3, 4)
    x[1] = 0  # a zero row: the clamp's gradient
    _parity(torch, "normalize", [x], {"dim": 1})
    gradcheck(lambda t: EF.normalize(t, dim=0), rand(3, 4))


def test_cosine_similarity_parity(torch):
    _parity(torch, "cosine_similarity", [rnd(4, 5), rnd(4, 5, seed=1)], {})
    _parity(torch, "cosine_similarity", [rnd(2, 3, 5), rnd(2, 3, 5, seed=1)], {"dim": -1})
    # broadcasting, as in torch (the graph gains expand nodes: values and gradients only)
    _parity(torch, "cosine_similarity", [rnd(2, 1, 5), rnd(3, 5, seed=1)], {"dim": -1}, names=False)
    gradcheck(lambda a, b: EF.cosine_similarity(a, b), rand(3, 4), rand(3, 4, seed=1))


@pytest.mark.parametrize("kw", [{}, {"p": 1.0}, {"p": 3.0, "keepdim": True}, {"p": float("inf")}], ids=str)
def test_pairwise_distance_parity(torch, kw):
    _parity(torch, "pairwise_distance", [rnd(4, 5), rnd(4, 5, seed=1)], kw)
    gradcheck(lambda a, b: EF.pairwise_distance(a, b, **kw), rand(3, 4), rand(3, 4, seed=1))


@pytest.mark.parametrize("call", [
    lambda F, T: F.cosine_similarity(T(2, 3), T(4, 3)), lambda F, T: F.pairwise_distance(T(2, 3), T(4, 3)),
])
def test_distance_errors(torch, call):
    _same_error(torch, lambda: call(EF, engine.randn), lambda: call(torch.nn.functional, torch.randn))


def test_normalize_integer_error(torch):
    _same_error(torch, lambda: EF.normalize(engine.arange(4)), lambda: torch.nn.functional.normalize(torch.arange(4)))


# --- pools ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,shape,kw", [
    ("avg_pool1d", (2, 3, 9), {"kernel_size": 3}), ("avg_pool1d", (3, 9), {"kernel_size": 3, "stride": 2,
                                                                           "padding": 1}),
    ("avg_pool1d", (2, 3, 8), {"kernel_size": 3, "stride": 2, "ceil_mode": True, "count_include_pad": False,
                               "padding": 1}),
    ("max_pool1d", (2, 3, 9), {"kernel_size": 2}), ("max_pool1d", (3, 10), {"kernel_size": 3, "stride": 2,
                                                                            "padding": 1, "dilation": 2}),
    ("adaptive_avg_pool1d", (2, 3, 9), {"output_size": 4}), ("adaptive_avg_pool1d", (3, 9), {"output_size": 1}),
    ("adaptive_max_pool2d", (2, 3, 7, 9), {"output_size": (3, 4)}),
    ("adaptive_max_pool2d", (3, 7, 9), {"output_size": 2}),
    ("adaptive_max_pool2d", (2, 3, 7, 9), {"output_size": (None, 4)}),
    ("adaptive_max_pool2d", (2, 3, 6, 8), {"output_size": (3, 4)}),  # equal windows: the reshape path
], ids=str)
def test_pool_parity(torch, name, shape, kw):
    _parity(torch, name, [rnd(*shape)], kw)


def test_pool_indices(torch):
    x = rnd(2, 3, 7, 9)
    e = EF.adaptive_max_pool2d(engine.tensor(x), (3, 4), return_indices=True)
    t = torch.nn.functional.adaptive_max_pool2d(torch.tensor(x), (3, 4), return_indices=True)
    close(e[1], t[1])
    x1 = rnd(2, 3, 9)
    e = EF.max_pool1d(engine.tensor(x1), 3, return_indices=True)
    t = torch.nn.functional.max_pool1d(torch.tensor(x1), 3, return_indices=True)
    close(e[0], t[0])
    close(e[1], t[1])


def test_pool_gradcheck():
    gradcheck(lambda t: EF.adaptive_max_pool2d(t, (2, 3)), rand(1, 2, 5, 7))
    gradcheck(lambda t: EF.adaptive_max_pool2d(t, (2, 3)), rand(1, 2, 4, 6))
    gradcheck(lambda t: EF.avg_pool1d(t, 3, 2, 1), rand(2, 7))
    gradcheck(lambda t: EF.max_pool1d(t, 2), rand(2, 3, 6))
    gradcheck(lambda t: EF.adaptive_avg_pool1d(t, 3), rand(2, 7))


@pytest.mark.parametrize("call", [
    lambda F, T: F.adaptive_max_pool2d(T(2, 3), 2), lambda F, T: F.adaptive_avg_pool1d(T(3), 2),
    lambda F, T: F.max_pool1d(T(1, 2, 3, 4), 2), lambda F, T: F.avg_pool1d(T(1, 2, 3, 4), 2),
    lambda F, T: F.max_pool1d(T(1, 2, 3), 4), lambda F, T: F.avg_pool1d(T(1, 2, 3), 4),
])
def test_pool_errors(torch, call):
    _same_error(torch, lambda: call(EF, engine.randn), lambda: call(torch.nn.functional, torch.randn))


# --- normalisation -------------------------------------------------------------------------------

@pytest.mark.parametrize("shape,groups", [((2, 6, 5), 3), ((2, 4, 3, 5), 2), ((3, 8), 4), ((2, 6, 2, 2, 2), 1)])
def test_group_norm_parity(torch, shape, groups):
    c = shape[1]
    _parity(torch, "group_norm", [rnd(*shape), rnd(c, seed=1), rnd(c, seed=2)], {},
            efn=lambda x, w, b: EF.group_norm(x, groups, w, b),
            tfn=lambda x, w, b: torch.nn.functional.group_norm(x, groups, w, b))
    _parity(torch, "group_norm", [rnd(*shape)], {"num_groups": groups, "eps": 1e-3})


def test_group_norm_gradcheck():
    gradcheck(lambda x, w, b: EF.group_norm(x, 2, w, b), rand(2, 4, 3), rand(4, seed=1), rand(4, seed=2))


@pytest.mark.parametrize("call", [
    lambda F, T: F.group_norm(T(2, 6, 3), 4), lambda F, T: F.group_norm(T(2, 6, 3), 3, T(5)),
    lambda F, T: F.group_norm(T(6), 3), lambda F, T: F.instance_norm(T(2, 3, 1)),
    lambda F, T: F.local_response_norm(T(2, 3), 2),
])
def test_norm_errors(torch, call):
    _same_error(torch, lambda: call(EF, engine.randn), lambda: call(torch.nn.functional, torch.randn))


def test_instance_norm_parity(torch):
    _parity(torch, "instance_norm", [rnd(2, 3, 5)], {})
    x, w, b = rnd(2, 3, 4, 5), rnd(3, seed=1), rnd(3, seed=2)
    ex, ew, eb = (engine.tensor(a, requires_grad=True) for a in (x, w, b))
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    e_rm, e_rv = engine.zeros(3), engine.ones(3)
    t_rm, t_rv = torch.zeros(3), torch.ones(3)
    e = EF.instance_norm(ex, e_rm, e_rv, ew, eb, momentum=0.3)
    t = torch.nn.functional.instance_norm(tx, t_rm, t_rv, tw, tb, momentum=0.3)
    close(e, t)
    assert graph_names(e) == graph_names(t)
    close(e_rm, t_rm)
    close(e_rv, t_rv)
    g = rnd(2, 3, 4, 5, seed=5)
    e.backward(engine.tensor(g))
    t.backward(torch.tensor(g))
    for a, bb in ((ex, tx), (ew, tw), (eb, tb)):
        close(a.grad, bb.grad)
    # evaluation statistics
    e = EF.instance_norm(engine.tensor(x), e_rm, e_rv, use_input_stats=False)
    t = torch.nn.functional.instance_norm(torch.tensor(x), t_rm, t_rv, use_input_stats=False)
    close(e, t)


def test_instance_norm_gradcheck():
    gradcheck(lambda x, w: EF.instance_norm(x, weight=w), rand(2, 3, 4), rand(3, seed=1))


@pytest.mark.parametrize("shape,size", [((2, 5, 4), 3), ((2, 6, 3, 4), 2), ((1, 4, 2, 3, 2), 5)], ids=str)
def test_local_response_norm_parity(torch, shape, size):
    # torch pools a 5-D view for 4-D+ input, the engine a 4-D one: values and gradients only there
    _parity(torch, "local_response_norm", [rnd(*shape)], {"size": size, "alpha": 0.1, "k": 2.0},
            names=len(shape) == 3)
    gradcheck(lambda t: EF.local_response_norm(t, size, alpha=0.1), rand(*shape[:2], 3))


# --- affine_grid / grid_sample -------------------------------------------------------------------

_THETA = np.array([[[0.9, -0.3, 0.1], [0.25, 1.1, -0.2]], [[1.4, 0.2, 0.5], [-0.1, 0.7, 0.3]]], np.float32)


@pytest.mark.parametrize("align", [False, True])
def test_affine_grid_parity(torch, align):
    _parity(torch, "affine_grid", [_THETA], {"size": (2, 3, 4, 5), "align_corners": align})
    gradcheck(lambda t: EF.affine_grid(t, (2, 1, 3, 2), align_corners=align), rand(2, 2, 3))


def _grid(seed=4, shape=(2, 3, 4, 2)):
    # spans beyond [-1, 1] so every padding mode is exercised; no value on a pixel boundary
    return np.random.default_rng(seed).uniform(-1.4, 1.4, size=shape).astype(np.float32)


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [False, True])
def test_grid_sample_parity(torch, mode, padding_mode, align):
    _parity(torch, "grid_sample", [rnd(2, 3, 5, 6), _grid()],
            {"mode": mode, "padding_mode": padding_mode, "align_corners": align})


@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [False, True])
def test_grid_sample_gradcheck(padding_mode, align):
    grid = engine.tensor(_grid(shape=(1, 2, 3, 2)).astype(np.float64), requires_grad=True)
    gradcheck(lambda x, g: EF.grid_sample(x, g, padding_mode=padding_mode, align_corners=align),
              rand(1, 2, 3, 4), grid)


def test_affine_grid_then_sample(torch):
    """The spatial-transformer pattern: sample an image through an affine grid, gradients to theta."""
    x = rnd(2, 3, 6, 7)
    e_theta, t_theta = engine.tensor(_THETA, requires_grad=True), torch.tensor(_THETA, requires_grad=True)
    e = EF.grid_sample(engine.tensor(x), EF.affine_grid(e_theta, (2, 3, 4, 5), align_corners=False),
                       align_corners=False)
    t = torch.nn.functional.grid_sample(torch.tensor(x), torch.nn.functional.affine_grid(t_theta, (2, 3, 4, 5),
                                                                                         align_corners=False),
                                        align_corners=False)
    close(e, t)
    e.sum().backward()
    t.sum().backward()
    close(e_theta.grad, t_theta.grad, atol=1e-4)


def test_grid_default_align_corners_warns(torch):
    with pytest.warns(UserWarning, match="Default grid_sample and affine_grid behavior has changed"):
        grid = EF.affine_grid(engine.tensor(_THETA), (2, 1, 3, 3))
    with pytest.warns(UserWarning, match="Default grid_sample and affine_grid behavior has changed"):
        EF.grid_sample(engine.randn(2, 1, 3, 3), grid)


@pytest.mark.parametrize("call", [
    lambda F, T, th: F.affine_grid(th, (2, 3, 4), align_corners=False),
    lambda F, T, th: F.affine_grid(th, (2, 3, 4, 5, 6), align_corners=False),
    lambda F, T, th: F.affine_grid(th, (2, 3, 0, 5), align_corners=False),
    lambda F, T, th: F.affine_grid(th[:, :1], (2, 3, 4, 5), align_corners=False),
    lambda F, T, th: F.grid_sample(T(2, 3, 4, 5), T(2, 4, 5, 2), mode="foo", align_corners=False),
    lambda F, T, th: F.grid_sample(T(2, 3, 4, 5), T(2, 4, 5, 2), padding_mode="foo", align_corners=False),
    lambda F, T, th: F.grid_sample(T(3, 3, 4, 5), T(2, 4, 5, 2), align_corners=False),
    lambda F, T, th: F.grid_sample(T(2, 3, 4, 5), T(2, 4, 5, 1), align_corners=False),
    lambda F, T, th: F.grid_sample(T(2, 3, 0, 5), T(2, 4, 5, 2), align_corners=False),
    lambda F, T, th: F.grid_sample(T(2, 3, 4), T(2, 4, 1), align_corners=False),
])
def test_grid_errors(torch, call):
    _same_error(torch, lambda: call(EF, engine.randn, engine.tensor(_THETA)),
                lambda: call(torch.nn.functional, torch.randn, torch.tensor(_THETA)))


def test_affine_grid_integer_theta(torch):
    _same_error(torch, lambda: EF.affine_grid(engine.ones(2, 2, 3, dtype=engine.int64), (2, 3, 4, 5), False),
                lambda: torch.nn.functional.affine_grid(torch.ones(2, 2, 3, dtype=torch.int64), (2, 3, 4, 5), False))


@pytest.mark.parametrize("call,message", [
    (lambda: EF.grid_sample(engine.randn(1, 1, 2, 2), engine.zeros(1, 2, 2, 2), mode="bicubic", align_corners=False),
     "grid_sample: mode='bicubic' is not implemented in engine"),
    (lambda: EF.grid_sample(engine.randn(1, 1, 2, 2, 2), engine.zeros(1, 2, 2, 2, 3), align_corners=False),
     "grid_sample: 5-D (volumetric) input is not implemented in engine"),
    (lambda: EF.affine_grid(engine.zeros(1, 3, 4), (1, 1, 2, 2, 2), align_corners=False),
     "affine_grid: 3-D affine transforms (5-D size) are not implemented in engine"),
])
def test_grid_not_implemented(call, message):
    with pytest.raises(NotImplementedError) as err:
        call()
    assert str(err.value) == message


@pytest.mark.parametrize("call", [
    lambda F, T: F.unfold(T(1, 2, 5, 5), (1, 2, 3)), lambda F, T: F.fold(T(1, 8, 9), (4, 4, 4), 2),
    lambda F, T: F.avg_pool1d(T(1, 2, 5), (1, 2)), lambda F, T: F.avg_pool1d(T(1, 2, 5), 2, stride=(1, 2)),
    lambda F, T: F.max_pool1d(T(1, 2, 5), (1, 2)), lambda F, T: F.max_pool1d(T(1, 2, 5), 2, stride=(1, 2)),
    lambda F, T: F.max_pool1d(T(1, 2, 5), 2, padding=(1, 1)), lambda F, T: F.max_pool1d(T(1, 2, 5), 2, dilation=(1, 1)),
    lambda F, T: F.adaptive_avg_pool1d(T(1, 2, 5), (1, 2)),
])
def test_size_argument_errors(torch, call):
    _same_error(torch, lambda: call(EF, engine.randn), lambda: call(torch.nn.functional, torch.randn))


def test_normalize_out(torch):
    x = rnd(2, 3)
    e_out, t_out = engine.empty(2, 3), torch.empty(2, 3)
    assert EF.normalize(engine.tensor(x), out=e_out) is e_out
    torch.nn.functional.normalize(torch.tensor(x), out=t_out)
    close(e_out, t_out)
    _same_error(torch, lambda: EF.normalize(engine.tensor(x, requires_grad=True), out=engine.empty(2, 3)),
                lambda: torch.nn.functional.normalize(torch.tensor(x, requires_grad=True), out=torch.empty(2, 3)))
    with pytest.raises(RuntimeError, match=r"normalize: out= must have the result's shape \[2, 3\] in engine"):
        EF.normalize(engine.tensor(x), out=engine.empty(3, 3))
