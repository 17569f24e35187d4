"""nn.utils.fuse_conv_bn_eval/weights, fuse_linear_bn_eval/weights and skip_init against torch:
fused weights and outputs equal torch's (weights copied in), the fused layer equals conv+bn in
eval mode, gradients of the *_weights forms, and torch's errors."""

from __future__ import annotations

import numpy as np
import pytest

import engine
import engine.nn.utils as EU

torch = pytest.importorskip("torch")
TU = torch.nn.utils


def copy_into(e_mod, t_mod):
    e_mod.load_state_dict({k: engine.tensor(v.detach().numpy()) for k, v in t_mod.state_dict().items()})


def trained_bn(t_bn, shape, seed=0):
    """A torch batch norm with non-trivial running stats and affine parameters."""
    g = torch.Generator().manual_seed(seed)
    t_bn.train()
    for _ in range(3):
        t_bn(torch.randn(*shape, generator=g) * 2 + 1)
    if t_bn.affine:
        with torch.no_grad():
            t_bn.weight.uniform_(0.5, 1.5, generator=g)
            t_bn.bias.uniform_(-1, 1, generator=g)
    return t_bn.eval()


@pytest.mark.parametrize("conv,bn,x_shape,transpose", [
    ("Conv2d(3, 4, 3, padding=1)", "BatchNorm2d(4)", (2, 3, 6, 6), False),
    ("Conv2d(3, 4, 3, bias=False)", "BatchNorm2d(4, affine=False)", (2, 3, 6, 6), False),
    ("Conv1d(3, 5, 2)", "BatchNorm1d(5)", (2, 3, 7), False),
    ("Conv3d(2, 3, 2)", "BatchNorm3d(3)", (1, 2, 4, 4, 4), False),
    ("ConvTranspose2d(3, 4, 3)", "BatchNorm2d(4)", (2, 3, 5, 5), True),
])
def test_fuse_conv_bn_eval_matches_torch(conv, bn, x_shape, transpose):
    torch.manual_seed(0)
    t_conv, e_conv = eval(f"torch.nn.{conv}").eval(), eval(f"engine.nn.{conv}").eval()
    t_bn, e_bn = eval(f"torch.nn.{bn}"), eval(f"engine.nn.{bn}")
    y_shape = (x_shape[0], t_bn.num_features) + (3,) * (len(x_shape) - 2)
    trained_bn(t_bn, y_shape)
    copy_into(e_conv, t_conv)
    copy_into(e_bn, t_bn)
    e_bn.eval()
    t_f = TU.fuse_conv_bn_eval(t_conv, t_bn, transpose=transpose)
    e_f = EU.fuse_conv_bn_eval(e_conv, e_bn, transpose=transpose)
    assert type(e_f) is type(e_conv) and e_f is not e_conv
    assert isinstance(e_f.weight, engine.nn.Parameter) and isinstance(e_f.bias, engine.nn.Parameter)
    np.testing.assert_allclose(e_f.weight.detach().numpy(), t_f.weight.detach().numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(e_f.bias.detach().numpy(), t_f.bias.detach().numpy(), rtol=1e-6, atol=1e-7)
    x = np.random.default_rng(1).standard_normal(x_shape).astype(np.float32)
    fused = e_f(engine.tensor(x)).detach().numpy()
    np.testing.assert_allclose(fused, e_bn(e_conv(engine.tensor(x))).detach().numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(fused, t_f(torch.tensor(x)).detach().numpy(), rtol=1e-4, atol=1e-5)
    # the original conv is untouched
    np.testing.assert_array_equal(e_conv.weight.detach().numpy(), t_conv.weight.detach().numpy())


@pytest.mark.parametrize("bn_features", [6, 1])
def test_fuse_linear_bn_eval_matches_torch(bn_features):
    torch.manual_seed(0)
    t_lin, e_lin = torch.nn.Linear(4, 6).eval(), engine.nn.Linear(4, 6).eval()
    t_bn, e_bn = torch.nn.BatchNorm1d(bn_features), engine.nn.BatchNorm1d(bn_features)
    trained_bn(t_bn, (8, bn_features))
    copy_into(e_lin, t_lin)
    copy_into(e_bn, t_bn)
    e_bn.eval()
    t_f, e_f = TU.fuse_linear_bn_eval(t_lin, t_bn), EU.fuse_linear_bn_eval(e_lin, e_bn)
    np.testing.assert_allclose(e_f.weight.detach().numpy(), t_f.weight.detach().numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(e_f.bias.detach().numpy(), t_f.bias.detach().numpy(), rtol=1e-6, atol=1e-7)
    x = np.random.default_rng(2).standard_normal((5, 4)).astype(np.float32)
    if bn_features == 6:
        np.testing.assert_allclose(e_f(engine.tensor(x)).detach().numpy(),
                                   e_bn(e_lin(engine.tensor(x))).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_fuse_weights_gradients_match_torch():
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in [(4, 3, 2, 2), (4,), (4,), (4,), (4,), (4,)]]
    arrays[3] = np.abs(arrays[3]) + 0.5  # running var
    t_in = [torch.tensor(a, requires_grad=True) for a in arrays]
    e_in = [engine.tensor(a, requires_grad=True) for a in arrays]
    t_w, t_b = TU.fuse_conv_bn_weights(t_in[0], t_in[1], t_in[2], t_in[3], 1e-5, t_in[4], t_in[5])
    e_w, e_b = EU.fuse_conv_bn_weights(e_in[0], e_in[1], e_in[2], e_in[3], 1e-5, e_in[4], e_in[5])
    assert e_w.requires_grad and e_b.requires_grad
    (t_w.sum() * 2 + t_b.sum()).backward()
    # the Parameters returned are leaves in torch too: gradients stop there
    assert t_in[0].grad is None
    (e_w.sum() * 2 + e_b.sum()).backward()
    assert e_in[0].grad is None
    np.testing.assert_allclose(e_w.grad.numpy(), t_w.grad.numpy())
    lw, lb = TU.fuse_linear_bn_weights(torch.tensor(arrays[0][:, :, 0, 0]), None, *[torch.tensor(a) for a in
                                       arrays[2:4]], 1e-3, torch.tensor(arrays[4]), torch.tensor(arrays[5]))
    ew, eb = EU.fuse_linear_bn_weights(engine.tensor(arrays[0][:, :, 0, 0]), None, *[engine.tensor(a) for a in
                                       arrays[2:4]], 1e-3, engine.tensor(arrays[4]), engine.tensor(arrays[5]))
    np.testing.assert_allclose(ew.detach().numpy(), lw.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(eb.detach().numpy(), lb.detach().numpy(), rtol=1e-6)
    assert not eb.requires_grad and not lb.requires_grad


def _same_error(fe, ft):
    with pytest.raises(Exception) as te:
        ft()
    with pytest.raises(type(te.value)) as ee:
        fe()
    assert str(ee.value) == str(te.value)


def test_fusion_errors_match_torch():
    _same_error(lambda: EU.fuse_conv_bn_eval(engine.nn.Conv2d(3, 4, 3), engine.nn.BatchNorm2d(4).eval()),
                lambda: TU.fuse_conv_bn_eval(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4).eval()))
    _same_error(lambda: EU.fuse_linear_bn_eval(engine.nn.Linear(3, 4).eval(), engine.nn.BatchNorm1d(4)),
                lambda: TU.fuse_linear_bn_eval(torch.nn.Linear(3, 4).eval(), torch.nn.BatchNorm1d(4)))
    _same_error(lambda: EU.fuse_linear_bn_eval(engine.nn.Linear(3, 4).eval(), engine.nn.BatchNorm1d(5).eval()),
                lambda: TU.fuse_linear_bn_eval(torch.nn.Linear(3, 4).eval(), torch.nn.BatchNorm1d(5).eval()))
    stateless = engine.nn.BatchNorm2d(4, track_running_stats=False).eval()
    t_stateless = torch.nn.BatchNorm2d(4, track_running_stats=False).eval()
    _same_error(lambda: EU.fuse_conv_bn_eval(engine.nn.Conv2d(3, 4, 3).eval(), stateless),
                lambda: TU.fuse_conv_bn_eval(torch.nn.Conv2d(3, 4, 3).eval(), t_stateless))


class NoDevice(engine.nn.Module):
    def __init__(self, n: int) -> None:
        super().__init__()
        self.w = engine.nn.Parameter(engine.ones(n))


def test_skip_init():
    m = EU.skip_init(engine.nn.Linear, 3, 4, bias=False)
    assert type(m) is engine.nn.Linear and tuple(m.weight.shape) == (4, 3) and m.bias is None
    assert isinstance(m.weight, engine.nn.Parameter) and m.weight.requires_grad
    m2 = EU.skip_init(engine.nn.Conv2d, 2, 3, 3, device="cpu", dtype=engine.float64)
    assert m2.weight.dtype == engine.float64
    with pytest.raises(RuntimeError, match="Module must support a 'device' arg to skip initialization"):
        EU.skip_init(NoDevice, 3)
    with pytest.raises(RuntimeError, match="Expected a Module; got <class 'int'>"):
        EU.skip_init(int, 3)
    with pytest.raises(RuntimeError, match="Module must support a 'device' arg"):
        TU.skip_init(torch.nn.Identity)
