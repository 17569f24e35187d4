"""conv3d, conv_transpose1d/2d/3d, the Conv layers' padding modes, and the memory-lean paths of
conv1d/2d (width-unfolded rows, image and channel blocks): values, gradients and grad_fn names
against torch, finite-difference gradchecks, module shapes/init/repr/state_dict and errors."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import engine
import engine.nn.functional as EF
from engine.nn._functional import conv as conv_impl
from tests.gradcheck import gradcheck

from .conftest import close, copy_params, edge_names, graph_names

pytestmark = pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel lengths")


def rnd(*shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def run(torch, name, arrays, kwargs, grad, atol=1e-4, rtol=1e-4):
    """F.<name> on both libraries: output, every gradient and the graph's node names."""
    e_in = [engine.tensor(a, requires_grad=g) if a is not None else None for a, g in zip(arrays, grad)]
    t_in = [torch.tensor(a, requires_grad=g) if a is not None else None for a, g in zip(arrays, grad)]
    e_out = getattr(EF, name)(*e_in, **kwargs)
    t_out = getattr(torch.nn.functional, name)(*t_in, **kwargs)
    close(e_out, t_out, atol, rtol)
    assert graph_names(e_out) == graph_names(t_out)
    assert edge_names(e_out) == edge_names(t_out)
    g = rnd(*t_out.shape, seed=7, dtype=arrays[0].dtype)
    e_out.backward(engine.tensor(g))
    t_out.backward(torch.tensor(g))
    for e, t, needs in zip(e_in, t_in, grad):
        if needs:
            close(e.grad, t.grad, atol, rtol)


CONV3D = [
    ((2, 3, 5, 6, 7), (4, 3, 2, 3, 3), dict()),
    ((2, 4, 6, 5, 7), (6, 2, 3, 2, 3), dict(stride=(2, 1, 2), padding=(1, 0, 2), dilation=(1, 2, 1), groups=2)),
    ((3, 5, 6, 7), (4, 3, 3, 3, 3), dict(padding="same")),
    ((1, 2, 4, 5, 6), (3, 2, 2, 2, 2), dict(padding="same")),
]


@pytest.mark.parametrize("xs,ws,kw", CONV3D, ids=str)
@pytest.mark.parametrize("bias", [True, False])
def test_conv3d_matches_torch(torch, xs, ws, kw, bias):
    b = rnd(ws[0], seed=3) if bias else None
    run(torch, "conv3d", [rnd(*xs, seed=1), rnd(*ws, seed=2), b], kw, [True, True, bias])


TRANSPOSED = [
    ("conv_transpose1d", (2, 4, 7), (4, 3, 3), dict()),
    ("conv_transpose1d", (4, 7), (4, 3, 3), dict(stride=3, padding=1, output_padding=2, dilation=2)),
    ("conv_transpose1d", (2, 4, 7), (4, 2, 3), dict(groups=2, stride=2, output_padding=1)),
    ("conv_transpose2d", (2, 4, 5, 6), (4, 3, 3, 2), dict()),
    ("conv_transpose2d", (2, 4, 5, 6), (4, 3, 3, 3), dict(stride=2, padding=1, output_padding=1)),
    ("conv_transpose2d", (2, 4, 5, 6), (4, 1, 3, 3), dict(stride=(2, 1), padding=(0, 1), groups=4, dilation=(1, 2))),
    ("conv_transpose2d", (4, 5, 6), (4, 3, 2, 2), dict(stride=2)),
    ("conv_transpose2d", (2, 3, 4, 4), (3, 2, 3, 3), dict(stride=1, output_padding=1, dilation=2)),
    ("conv_transpose3d", (2, 2, 3, 4, 3), (2, 3, 2, 3, 2), dict(stride=(2, 1, 2), padding=(0, 1, 0))),
]


@pytest.mark.parametrize("name,xs,ws,kw", TRANSPOSED, ids=str)
@pytest.mark.parametrize("bias", [True, False])
def test_conv_transpose_matches_torch(torch, name, xs, ws, kw, bias):
    b = rnd(ws[1] * kw.get("groups", 1), seed=3) if bias else None
    run(torch, name, [rnd(*xs, seed=1), rnd(*ws, seed=2), b], kw, [True, True, bias])


@pytest.mark.parametrize("grad", [[True, False, False], [False, True, True], [True, True, False]], ids=str)
def test_conv_transpose_partial_gradients_match_torch(torch, grad):
    run(torch, "conv_transpose2d", [rnd(2, 4, 5, 6, seed=1), rnd(4, 3, 3, 3, seed=2), rnd(3, seed=3)],
        dict(stride=2, padding=1), grad)


# the memory-lean paths of conv2d, each against torch (shapes chosen to take each one)
LEAN = [
    ("rows (O <= C·kw, stride 1 in H)", (3, 6, 9, 8), (5, 6, 3, 3), dict(padding=1, stride=(1, 2), dilation=(2, 1))),
    ("rows, 1-row padding", (2, 4, 7, 7), (3, 4, 2, 3), dict(padding=(1, 0))),
    ("image blocks (first layer)", (9, 1, 12, 12), (6, 1, 3, 3), dict(stride=2)),
    ("channel blocks (wide output)", (4, 3, 8, 8), (16, 3, 3, 3), dict(padding=2)),
]


@pytest.mark.parametrize("budget", [1 << 20, 2048], ids=["one block", "many blocks"])
@pytest.mark.parametrize("case", LEAN, ids=lambda c: c[0])
@pytest.mark.parametrize("grad", [[True, True, True], [False, True, True], [True, False, False]], ids=str)
def test_lean_conv2d_paths_match_torch(torch, monkeypatch, case, budget, grad):
    monkeypatch.setattr(conv_impl, "_COLS_BUDGET", budget)
    monkeypatch.setattr(conv_impl, "_BACKWARD_BUDGET", budget)
    _, xs, ws, kw = case
    run(torch, "conv2d", [rnd(*xs, seed=1), rnd(*ws, seed=2), rnd(ws[0], seed=3)], kw, grad)


def test_which_layer_takes_the_width_unfolded_rows():
    suits = conv_impl._RowGeometry.suits
    assert suits((64, 10, 12, 12), (20, 10, 5, 5), (1, 1), 1)  # the MNIST net's second conv
    assert not suits((64, 1, 28, 28), (10, 1, 5, 5), (1, 1), 1)  # its first: output wider than C·kw
    assert not suits((2, 6, 9, 9), (4, 6, 3, 3), (2, 1), 1) and not suits((2, 6, 9, 9), (4, 3, 3, 3), (1, 1), 2)


def test_retained_graph_backward_twice_gives_the_same_gradients():
    for xs, ws in [((2, 6, 7, 7), (4, 6, 3, 3)), ((2, 1, 7, 7), (8, 1, 3, 3))]:
        x = engine.tensor(rnd(*xs, seed=1), requires_grad=True)
        w = engine.tensor(rnd(*ws, seed=2), requires_grad=True)
        y = EF.conv2d(x, w, padding=1)
        y.sum().backward(retain_graph=True)
        first = (x.grad.numpy().copy(), w.grad.numpy().copy())
        y.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), 2 * first[0], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(w.grad.numpy(), 2 * first[1], rtol=1e-5, atol=1e-6)


# --- finite differences (float64, no torch) --------------------------------------------------


def t64(*shape, seed=0):
    return engine.tensor(rnd(*shape, seed=seed, dtype=np.float64), requires_grad=True)


GRADCHECKS = {
    "conv3d": lambda: (lambda x, w, b: EF.conv3d(x, w, b, stride=(1, 2, 1), padding=1, dilation=(2, 1, 1)),
                       t64(2, 2, 4, 4, 3, seed=1), t64(3, 2, 2, 2, 2, seed=2), t64(3, seed=3)),
    "conv3d groups": lambda: (lambda x, w: EF.conv3d(x, w, groups=2), t64(1, 4, 3, 3, 3, seed=1),
                              t64(2, 2, 2, 2, 2, seed=2)),
    "conv_transpose1d": lambda: (lambda x, w, b: EF.conv_transpose1d(x, w, b, stride=2, padding=1, output_padding=1),
                                 t64(2, 3, 4, seed=1), t64(3, 2, 3, seed=2), t64(2, seed=3)),
    "conv_transpose2d": lambda: (lambda x, w, b: EF.conv_transpose2d(x, w, b, stride=(2, 1), padding=1, dilation=2,
                                                                     output_padding=(1, 0)),
                                 t64(2, 2, 3, 4, seed=1), t64(2, 3, 3, 2, seed=2), t64(3, seed=3)),
    "conv_transpose2d groups": lambda: (lambda x, w: EF.conv_transpose2d(x, w, groups=2, stride=2),
                                        t64(1, 4, 3, 3, seed=1), t64(4, 1, 2, 2, seed=2)),
    "conv2d rows": lambda: (lambda x, w, b: EF.conv2d(x, w, b, padding=1), t64(2, 4, 5, 5, seed=1),
                            t64(3, 4, 3, 3, seed=2), t64(3, seed=3)),
    "conv2d wide output": lambda: (lambda x, w: EF.conv2d(x, w, stride=2, padding=(1, 2)), t64(2, 2, 5, 6, seed=1),
                                   t64(7, 2, 3, 3, seed=2)),
}


@pytest.mark.parametrize("case", list(GRADCHECKS))
def test_gradcheck(case):
    gradcheck(*GRADCHECKS[case]())


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_mode_pad_gradcheck(mode):
    gradcheck(lambda x: conv_impl._mode_pad(x, [2, 1, 1, 2], mode), t64(2, 3, 4, 5, seed=1))
    gradcheck(lambda x: conv_impl._mode_pad(x, [1, 2], mode), t64(3, 4, seed=2))


# --- modules --------------------------------------------------------------------------------

MODULES = [
    ("Conv3d", (4, 6, 3), {}),
    ("Conv3d", (4, 6, (1, 2, 3)), dict(stride=(1, 2, 1), padding=(0, 1, 1), dilation=2, groups=2, bias=False)),
    ("Conv3d", (2, 4, 3), dict(padding="same", padding_mode="replicate")),
    ("Conv2d", (3, 4, 3), dict(padding=1, padding_mode="reflect")),
    ("Conv2d", (3, 4, (2, 3)), dict(padding=(1, 2), padding_mode="circular")),
    ("Conv2d", (3, 4, 4), dict(padding="same", padding_mode="reflect")),
    ("Conv1d", (3, 4, 3), dict(padding=2, padding_mode="replicate", stride=2)),
    ("ConvTranspose1d", (4, 6, 3), dict(stride=2, output_padding=1)),
    ("ConvTranspose2d", (4, 6, 3), {}),
    ("ConvTranspose2d", (4, 6, (3, 2)), dict(stride=2, padding=1, output_padding=1, groups=2, dilation=(2, 1))),
    ("ConvTranspose2d", (4, 6, 2), dict(bias=False, stride=(1, 2), output_padding=(0, 1))),
    ("ConvTranspose3d", (2, 4, 2), dict(stride=2)),
]


@pytest.mark.parametrize("ctor,args,kwargs", MODULES, ids=str)
def test_module_matches_torch(torch, ctor, args, kwargs):
    engine.manual_seed(0)
    e = getattr(engine.nn, ctor)(*args, **kwargs)
    t = getattr(torch.nn, ctor)(*args, **kwargs)
    assert repr(e) == repr(t)
    assert [(n, tuple(p.shape)) for n, p in e.named_parameters()] == \
        [(n, tuple(p.shape)) for n, p in t.named_parameters()]
    assert list(e.state_dict()) == list(t.state_dict())
    for attr in ("in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation", "groups",
                 "padding_mode", "output_padding", "transposed", "_reversed_padding_repeated_twice"):
        assert getattr(e, attr) == getattr(t, attr), attr
    copy_params(e, t, torch)
    nd = int(ctor[-2])
    x = rnd(2, args[0], *[5, 6, 7][:nd], seed=4)
    for inputs in (x, x[0]):  # batched and unbatched
        ex, tx = engine.tensor(inputs, requires_grad=True), torch.tensor(inputs, requires_grad=True)
        ey, ty = e(ex), t(tx)
        close(ey, ty, 1e-4, 1e-4)
        if kwargs.get("padding_mode") == "circular":  # torch's circular pad is a chain of CopySlices and
            assert edge_names(ey) == edge_names(ty)    # slices; engine records one CopySlices node
        else:
            assert graph_names(ey) == graph_names(ty)
        g = rnd(*ty.shape, seed=5)
        ey.backward(engine.tensor(g))
        ty.backward(torch.tensor(g))
        close(ex.grad, tx.grad, 1e-4, 1e-4)
        for p, tp in zip(e.parameters(), t.parameters()):
            close(p.grad, tp.grad, 1e-4, 1e-3)
        e.zero_grad()
        t.zero_grad()


@pytest.mark.parametrize("ctor,args", [("Conv3d", (6, 8, (3, 2, 2))), ("ConvTranspose2d", (6, 8, 3)),
                                       ("ConvTranspose1d", (6, 9, 3, 1, 0, 0, 3))], ids=str)
def test_default_init_is_kaiming_uniform(ctor, args):
    engine.manual_seed(0)
    m = getattr(engine.nn, ctor)(*args)
    fan_in = m.weight.shape[1] * math.prod(m.weight.shape[2:])  # torch's fan_in, also for transposed weights
    bound = 1 / math.sqrt(fan_in)
    w, b = m.weight.detach().numpy(), m.bias.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound and np.abs(w).max() > 0.8 * bound


def test_conv_transpose_output_size_matches_torch(torch):
    e, t = engine.nn.ConvTranspose2d(2, 3, 3, stride=2), torch.nn.ConvTranspose2d(2, 3, 3, stride=2)
    copy_params(e, t, torch)
    x = rnd(1, 2, 5, 5)
    for size in ([11, 11], [12, 12], [1, 3, 12, 11]):
        close(e(engine.tensor(x), output_size=size), t(torch.tensor(x), output_size=size), 1e-5, 1e-5)


# --- errors (torch's types and messages) -------------------------------------------------------

def _t(lib, shape):
    return lib.ones(*shape)


ERRORS = {
    "conv3d channels": lambda L: L.nn.functional.conv3d(_t(L, (1, 2, 5, 5, 5)), _t(L, (2, 4, 3, 3, 3))),
    "conv3d unbatched channels": lambda L: L.nn.functional.conv3d(_t(L, (2, 5, 5, 5)), _t(L, (2, 4, 3, 3, 3))),
    "conv3d rank": lambda L: L.nn.functional.conv3d(_t(L, (2, 5, 5)), _t(L, (2, 4, 3, 3, 3))),
    "conv3d kernel too big": lambda L: L.nn.functional.conv3d(_t(L, (1, 4, 2, 5, 5)), _t(L, (2, 4, 3, 3, 3))),
    "transposed channels": lambda L: L.nn.functional.conv_transpose2d(_t(L, (1, 3, 5, 5)), _t(L, (2, 4, 3, 3))),
    "transposed output padding 1d": lambda L: L.nn.functional.conv_transpose1d(
        _t(L, (1, 2, 5)), _t(L, (2, 4, 3)), stride=2, output_padding=2),
    "transposed output padding 3d": lambda L: L.nn.functional.conv_transpose3d(
        _t(L, (1, 2, 5, 5, 5)), _t(L, (2, 4, 3, 3, 3)), stride=2, output_padding=2),
    "transposed output too small": lambda L: L.nn.functional.conv_transpose2d(
        _t(L, (1, 2, 5, 5)), _t(L, (2, 4, 3, 3)), padding=5),
    "transposed groups": lambda L: L.nn.functional.conv_transpose2d(_t(L, (1, 2, 5, 5)), _t(L, (2, 4, 3, 3)),
                                                                     groups=3),
    "transposed bias": lambda L: L.nn.functional.conv_transpose2d(_t(L, (1, 2, 5, 5)), _t(L, (2, 4, 3, 3)),
                                                                   _t(L, (3,))),
    "transposed rank": lambda L: L.nn.functional.conv_transpose2d(_t(L, (2, 5, 5, 5, 5)), _t(L, (2, 4, 3, 3))),
    "transposed stride": lambda L: L.nn.functional.conv_transpose2d(_t(L, (1, 2, 5, 5)), _t(L, (2, 4, 3, 3)),
                                                                     stride=0),
    "transposed negative padding": lambda L: L.nn.functional.conv_transpose2d(
        _t(L, (1, 2, 5, 5)), _t(L, (2, 4, 3, 3)), padding=-1),
    "transposed negative output padding": lambda L: L.nn.functional.conv_transpose2d(
        _t(L, (1, 2, 5, 5)), _t(L, (2, 4, 3, 3)), output_padding=-1),
    "transposed padding string": lambda L: L.nn.functional.conv_transpose2d(
        _t(L, (1, 2, 5, 5)), _t(L, (2, 4, 3, 3)), padding="same"),
    "reflect padding too big": lambda L: L.nn.Conv2d(2, 2, 3, padding=(0, 5), padding_mode="reflect")(
        _t(L, (1, 2, 5, 5))),
    "circular padding too big": lambda L: L.nn.Conv2d(2, 2, 3, padding=(0, 6), padding_mode="circular")(
        _t(L, (1, 2, 5, 5))),
    "transposed module padding mode": lambda L: L.nn.ConvTranspose2d(2, 3, 3, padding_mode="reflect"),
    "conv3d module padding mode": lambda L: L.nn.Conv3d(2, 3, 3, padding_mode="bad"),
    "conv3d module groups": lambda L: L.nn.Conv3d(3, 4, 3, groups=2),
    "output size out of range": lambda L: L.nn.ConvTranspose2d(2, 4, 3, stride=2)(_t(L, (1, 2, 5, 5)),
                                                                               output_size=[20, 20]),
    "output size length": lambda L: L.nn.ConvTranspose2d(2, 4, 3, stride=2)(_t(L, (1, 2, 5, 5)),
                                                                          output_size=[20, 20, 20]),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_errors_match_torch(torch, case):
    with pytest.raises(Exception) as t_err:
        ERRORS[case](torch)
    with pytest.raises(type(t_err.value)) as e_err:
        ERRORS[case](engine)
    assert same_sets(str(e_err.value)) == same_sets(str(t_err.value).replace("torch.", "engine."))


def same_sets(message: str) -> str:
    """A message with the items of each printed set sorted: a set literal's order depends on the
    hash seed of the process that compiled the .pyc (torch's and engine's differ)."""
    return re.sub(r"\{([^{}]*)\}", lambda m: "{" + ", ".join(sorted(m.group(1).split(", "))) + "}", message)
