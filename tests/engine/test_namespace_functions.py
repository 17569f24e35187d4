"""The ``torch.*`` functions of engine/_ops/namespace.py and engine/_ops/aliases.py
against torch 2.13: values, dtypes, errors; the functional aliases with torch's top-level (ATen)
signatures, values and gradients; the in-place top-level forms; the samplers by statistics."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import engine
from tests.engine._outcomes import outcome, same

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def check(fn):
    e, t = outcome(engine, fn, torch), outcome(torch, fn, torch)
    assert same(e, t), f"\nengine {e}\ntorch  {t}"


CASES = {
    "arctan2": lambda L: L.arctan2(L.tensor([1.0, -1.0]), L.tensor([1.0, 2.0])),
    "logspace": lambda L: (L.logspace(0, 2, 3), L.logspace(0, 2, 3, base=2), L.logspace(-1, 1, 5, dtype=L.float64)),
    "logspace_int": lambda L: L.logspace(0, 2, 3, dtype=L.int64),
    "logspace_grad": lambda L: L.logspace(0, 1, 3, requires_grad=True).requires_grad,
    "logspace_neg_steps": lambda L: L.logspace(0, 2, -1),
    "dstack": lambda L: (L.dstack([L.tensor([1, 2]), L.tensor([3, 4])]),
                         L.dstack([L.ones(2, 3), L.zeros(2, 3)]), L.dstack([L.tensor(1.0), L.tensor(2.0)])),
    "dstack_empty": lambda L: L.dstack([]),
    "row_stack": lambda L: L.row_stack([L.tensor([1, 2]), L.tensor([3, 4])]),
    "randint_like_dtype": lambda L: (L.randint_like(L.zeros(3), 5).dtype, L.randint_like(L.zeros(3), 2, 5).shape,
                                     L.randint_like(L.zeros(3, dtype=L.int32), 5, dtype=L.int64).dtype),
    "randint_like_bad": lambda L: L.randint_like(L.zeros(3), 5, 2),
    "scalar_tensor": lambda L: (L.scalar_tensor(3), L.scalar_tensor(3, dtype=L.int64), L.scalar_tensor(True),
                                L.scalar_tensor(L.tensor(2.0)), L.scalar_tensor(2, requires_grad=True).requires_grad),
    "result_type": lambda L: [L.result_type(a, b) for a, b in (
        (L.tensor([1]), 1.0), (L.tensor([1], dtype=L.uint8), L.tensor(1, dtype=L.int8)), (2, 1.0), (1, 2),
        (True, 2.0), (L.tensor([1]), True), (L.tensor(1.0, dtype=L.float64), L.tensor([1], dtype=L.int32)),
        (L.tensor([1], dtype=L.uint8), L.tensor([1], dtype=L.int8)), (L.tensor([1.0]), L.tensor([1.0], dtype=L.float64)))],
    "promote_types": lambda L: [L.promote_types(a, b) for a, b in (
        (L.uint8, L.int8), (L.int64, L.float16), (L.bool, L.bool), (L.int32, L.float64), (L.bool, L.uint8),
        (L.float16, L.float32))],
    "promote_types_bad": lambda L: L.promote_types(L.float32, "a"),
    "can_cast": lambda L: [L.can_cast(a, b) for a, b in (
        (L.float32, L.int32), (L.int32, L.float32), (L.int32, L.uint8), (L.bool, L.uint8), (L.uint8, L.bool),
        (L.float32, L.bool), (L.float64, L.float16), (L.int64, L.int8))],
    "asarray": lambda L: (L.asarray([1, 2]), L.asarray([1.0, 2.0]), L.asarray(3.5),
                          L.asarray([1, 2], dtype=L.float64)),
    "asarray_alias_seq": lambda L: L.asarray([1, 2], copy=False, dtype=L.float32),
    "asarray_alias_dtype": lambda L: L.asarray(L.tensor([1.0, 2.0]), dtype=L.float64, copy=False),
    "asarray_np_alias_dtype": lambda L: L.asarray(np.arange(3.0), dtype=L.float32, copy=False),
    "asarray_np_dtype": lambda L: L.asarray(np.arange(3.0)).dtype,
    "asarray_int_grad": lambda L: L.asarray([1, 2], requires_grad=True),
    "asarray_grad": lambda L: L.asarray([1.0, 2.0], requires_grad=True),
    "unravel_index": lambda L: (L.unravel_index(L.tensor([4, 1]), (2, 3)), L.unravel_index(L.tensor(4), (2, 3)),
                                L.unravel_index(L.tensor([[4, 1], [0, 5]]), L.Size([2, 3])),
                                L.unravel_index(L.tensor([1]), 6)),
    "unravel_index_wraps": lambda L: (L.unravel_index(L.tensor([7]), (2, 3)), L.unravel_index(L.tensor([-1]), (2, 3))),
    "unravel_index_float": lambda L: L.unravel_index(L.tensor([1.0]), (2, 3)),
    "unravel_index_negative_shape": lambda L: L.unravel_index(L.tensor([1]), (2, -3)),
    "default_device": lambda L: (L.get_default_device(), L.set_default_device("cpu"), L.set_default_device(None)),
    "windows": lambda L: [w(n) for n in (0, 1, 2, 5, 8) for w in (
        L.hann_window, L.hamming_window, L.blackman_window, L.bartlett_window, L.kaiser_window)],
    "windows_symmetric": lambda L: [w(6, False) for w in (
        L.hann_window, L.hamming_window, L.blackman_window, L.bartlett_window, L.kaiser_window)],
    "windows_args": lambda L: (L.hamming_window(5, periodic=False, alpha=0.5, beta=0.5),
                               L.kaiser_window(7, False, 5.0), L.blackman_window(5, dtype=L.float64),
                               L.hann_window(4, requires_grad=True).requires_grad),
    "window_int_dtype": lambda L: L.hann_window(4, dtype=L.int64),
    "window_negative": lambda L: L.bartlett_window(-1),
    "histogram": lambda L: L.histogram(L.tensor([1.0, 2, 1, 4]), 3),
    "histogram_edges": lambda L: L.histogram(L.tensor([1.0, 2, 1, 4, 5, 7]), L.tensor([0.0, 1.5, 5])),
    "histogram_weight_density": lambda L: L.histogram(L.tensor([1.0, 2, 1, 4]), 2, range=(0.0, 2.0),
                                                      weight=L.tensor([1.0, 2, 3, 4]), density=True),
    "histogram_const": lambda L: L.histogram(L.tensor([1.0, 1.0]), 2),
    "histogram_range": lambda L: L.tensor([1.0, 2.0]).histogram(2, range=(0, 3)) if hasattr(L.Tensor, "histogram")
    else L.histogram(L.tensor([1.0, 2.0]), 2, range=(0, 3)),
    "histogram_int": lambda L: L.histogram(L.tensor([1, 2]), 2),
    "histogram_bad_bins": lambda L: L.histogram(L.tensor([1.0, 2]), -1),
    "histogram_bad_range": lambda L: L.histogram(L.tensor([1.0, 2]), 2, range=(3.0, 1.0)),
    "histogram_nan": lambda L: L.histogram(L.tensor([1.0, float("nan")]), 2),
    "histogram_decreasing_edges": lambda L: L.histogram(L.tensor([1.0, 2]), L.tensor([2.0, 1.0])),
    "poisson_negative": lambda L: L.poisson(L.tensor([-1.0])),
    "poisson_int": lambda L: L.poisson(L.tensor([1])),
    "poisson_zero_rate": lambda L: L.poisson(L.zeros(3)),
    "binomial_int": lambda L: L.binomial(L.tensor([10]), L.tensor([0.5])),
    "binomial_certain": lambda L: (L.binomial(L.tensor([10.0, 4.0]), L.tensor([1.5, 0.0])),
                                   L.binomial(L.tensor([10.0]), L.tensor([0.5])).dtype),
    "fill": lambda L: L.fill(L.zeros(2), 3),
    "get_device": lambda L: L.get_device(L.zeros(2)),
    "detach": lambda L: (L.detach(L.ones(2, requires_grad=True)).requires_grad,
                         L.detach_(L.ones(2, requires_grad=True) * 2).requires_grad),
    "zero_fill_": lambda L: (L.zero_(L.ones(2)), L.fill_(L.ones(2), 4.0)),
    "inplace_math": lambda L: [getattr(L, n)(L.tensor([0.2, 0.5, 0.7])) for n in (
        "abs_", "ceil_", "exp_", "floor_", "log_", "neg_", "negative_", "round_", "sigmoid_", "sqrt_", "tanh_",
        "trunc_", "sin_", "cos_", "tan_", "asin_", "acos_", "atan_", "arcsin_", "arccos_", "arctan_", "sinh_",
        "cosh_", "asinh_", "atanh_", "arcsinh_", "arctanh_", "deg2rad_", "rad2deg_", "erf_", "erfc_", "exp2_",
        "expm1_", "fix_", "frac_", "i0_", "log10_", "log1p_", "log2_", "logit_", "reciprocal_", "rsqrt_", "sinc_",
        "square_", "relu_", "selu_", "celu_", "nan_to_num_")],
    "inplace_args": lambda L: (L.clamp_(L.tensor([0.2, 0.9]), 0.3, 0.8), L.clip_(L.tensor([0.2, 0.9]), max=0.5),
                               L.clamp_min_(L.tensor([0.2, 0.9]), 0.5), L.clamp_max_(L.tensor([0.2, 0.9]), 0.5),
                               L.xlogy_(L.tensor([1.0, 2.0]), L.tensor([3.0, 4.0])),
                               L.gcd_(L.tensor([12, 9]), L.tensor([8, 6])), L.lcm_(L.tensor([4, 3]), L.tensor([6, 5])),
                               L.ldexp_(L.tensor([1.0, 3.0]), L.tensor([2, 1])),
                               L.acosh_(L.tensor([1.5])), L.arccosh_(L.tensor([2.5])),
                               L.threshold_(L.tensor([0.2, 0.9]), 0.5, -1.0),
                               L.addmv_(L.ones(2), L.ones(2, 3), L.ones(3)),
                               L.index_put_(L.zeros(3), (L.tensor([0, 0]),), L.tensor(1.0), True),
                               L.dropout_(L.ones(3), 0.5, False), L.alpha_dropout_(L.ones(3), 0.5, False),
                               L.feature_alpha_dropout_(L.ones(2, 3, 1), 0.5, False)),
    "inplace_leaf": lambda L: L.sin_(L.ones(2, requires_grad=True)),
    "kl_div_bad_reduction": lambda L: L.kl_div(L.zeros(2), L.ones(2), "mean"),
    "rms_norm_default_eps": lambda L: L.rms_norm(L.tensor([[1.0, 2.0, 3.0]]), [3]),
    "pdist_shapes": lambda L: (L.pdist(L.ones(1, 3)).shape, L.pdist(L.arange(6.0).view(3, 2), 1.0)),
    "pdist_3d": lambda L: L.pdist(L.ones(2, 2, 2)),
    "pdist_negative_p": lambda L: L.pdist(L.ones(2, 2), -1.0),
    "max_pool1d_default_stride": lambda L: L.max_pool1d(L.arange(8.0).view(1, 1, 8), 2),
    "embedding_padding": lambda L: L.embedding(L.eye(3), L.tensor([0, 2]), 2),
    "dropout_eval": lambda L: (L.dropout(L.ones(3), 0.5, False), L.alpha_dropout(L.ones(3), 0.5, False),
                               L.feature_alpha_dropout(L.ones(2, 3, 1), 0.5, False)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_torch(name):
    check(CASES[name])


# --- functional aliases: torch's top-level signatures, values and gradients ------------------------

def _data(seed: int, *shape: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


X4 = _data(0, 2, 4, 6)          # (N, C, L)
X5 = _data(1, 2, 4, 5, 5)       # (N, C, H, W)
X6 = _data(2, 1, 2, 3, 4, 4)    # (N, C, D, H, W)
W1, W2, W3 = _data(3, 3, 4, 3), _data(4, 3, 4, 3, 3), _data(5, 3, 2, 2, 2, 2)
B3 = _data(6, 3)
WT1, WT2, WT3 = _data(7, 4, 3, 3), _data(8, 4, 3, 3, 3), _data(9, 2, 3, 2, 2, 2)
C4, S4 = _data(10, 4), np.abs(_data(11, 4)) + 0.5
A2 = _data(12, 5, 3)
T_ONES = np.sign(_data(13, 5)).astype(np.float32)
TARGET01 = (np.random.default_rng(14).random((5, 3)) > 0.5).astype(np.float32)
LOGP = np.log(np.random.default_rng(15).dirichlet(np.ones(5), size=(6, 2)).astype(np.float32))

ALIAS_CASES = {
    "conv1d": lambda L, T: L.conv1d(T(X4), T(W1), T(B3), 2, 1),
    "conv2d": lambda L, T: L.conv2d(T(X5), T(W2), T(B3), 1, 1, 1, 1),
    "conv3d": lambda L, T: L.conv3d(T(X6), T(W3), None, 1, 0),
    "conv_transpose1d": lambda L, T: L.conv_transpose1d(T(X4), T(WT1), T(B3), 2, 1, 1),
    "conv_transpose2d": lambda L, T: L.conv_transpose2d(T(X5), T(WT2), None, 1, 1),
    "conv_transpose3d": lambda L, T: L.conv_transpose3d(T(X6), T(WT3), None, 2),
    "layer_norm": lambda L, T: L.layer_norm(T(X4), [6], T(_data(16, 6)), T(_data(17, 6)), 1e-3, True),
    "group_norm": lambda L, T: L.group_norm(T(X4), 2, T(C4), T(_data(18, 4)), 1e-5, True),
    "batch_norm_train": lambda L, T: L.batch_norm(T(X4), T(C4), T(_data(19, 4)), L.zeros(4), L.ones(4), True, 0.1,
                                                  1e-5, True),
    "batch_norm_eval": lambda L, T: L.batch_norm(T(X5), T(C4), None, L.tensor(C4), L.tensor(S4), False, 0.1, 1e-5,
                                                 True),
    "instance_norm": lambda L, T: L.instance_norm(T(X4), T(C4), T(_data(20, 4)), None, None, True, 0.1, 1e-5, True),
    "rms_norm": lambda L, T: L.rms_norm(T(X4), [6], T(_data(21, 6)), 1e-6),
    "embedding": lambda L, T: L.embedding(T(A2), L.tensor([[0, 4], [2, 2]])),
    "pixel_shuffle": lambda L, T: L.pixel_shuffle(T(X5), 2),
    "pixel_unshuffle": lambda L, T: L.pixel_unshuffle(T(_data(22, 1, 2, 4, 6)), 2),
    "channel_shuffle": lambda L, T: L.channel_shuffle(T(X5), 2),
    "threshold": lambda L, T: L.threshold(T(X4), 0.1, -2.0),
    "selu": lambda L, T: L.selu(T(X4)),
    "celu": lambda L, T: L.celu(T(X4), 0.7),
    "prelu": lambda L, T: L.prelu(T(X4), T(C4)),
    "rrelu_eval": lambda L, T: L.rrelu(T(X4), 0.1, 0.3),
    "hardshrink": lambda L, T: L.hardshrink(T(X4), 0.3),
    "max_pool1d": lambda L, T: L.max_pool1d(T(X4), 3, 2, 1),
    "max_pool2d": lambda L, T: L.max_pool2d(T(X5), 2, [], 0, 1, True),
    "max_pool3d": lambda L, T: L.max_pool3d(T(X6), 2),
    "avg_pool1d": lambda L, T: L.avg_pool1d(T(X4), 3, 2, 1, False, False),
    "adaptive_avg_pool1d": lambda L, T: L.adaptive_avg_pool1d(T(X4), 4),
    "adaptive_max_pool1d": lambda L, T: L.adaptive_max_pool1d(T(X4), 4)[0],
    "cosine_similarity": lambda L, T: L.cosine_similarity(T(A2), T(_data(23, 5, 3)), 1, 1e-8),
    "pairwise_distance": lambda L, T: L.pairwise_distance(T(A2), T(_data(24, 5, 3)), 1.5, 1e-6, True),
    "pdist": lambda L, T: L.pdist(T(A2)),
    "pdist_p1": lambda L, T: L.pdist(T(A2), 1.0),
    "kl_div": lambda L, T: L.kl_div(T(A2).log_softmax(1), T(np.full((5, 3), 1 / 3, np.float32))),
    "kl_div_sum_log_target": lambda L, T: L.kl_div(T(A2), T(_data(25, 5, 3)), 2, log_target=True),
    "bce_with_logits": lambda L, T: L.binary_cross_entropy_with_logits(T(A2), T(TARGET01), None, L.full((3,), 2.0), 2),
    "bce_with_logits_none": lambda L, T: L.binary_cross_entropy_with_logits(T(A2), T(TARGET01)),
    "kl_div_default_none": lambda L, T: L.kl_div(T(A2), T(_data(34, 5, 3))),
    "kl_div_mean": lambda L, T: L.kl_div(T(A2), T(_data(35, 5, 3)), 1),
    "ctc_loss_default_none": lambda L, T: L.ctc_loss(T(LOGP), L.tensor([[1, 2], [3, 3]]), [6, 5], [2, 2]),
    "cosine_embedding_loss": lambda L, T: L.cosine_embedding_loss(T(A2), T(_data(26, 5, 3)), T(T_ONES), 0.1, 0),
    "hinge_embedding_loss": lambda L, T: L.hinge_embedding_loss(T(A2), T(np.sign(_data(27, 5, 3))), 0.5),
    "margin_ranking_loss": lambda L, T: L.margin_ranking_loss(T(A2[:, 0]), T(A2[:, 1]), T(T_ONES), 0.2, 2),
    "triplet_margin_loss": lambda L, T: L.triplet_margin_loss(T(A2), T(_data(28, 5, 3)), T(_data(29, 5, 3)), 1.0, 2.0,
                                                              1e-6, True, 1),
    "poisson_nll_loss": lambda L, T: L.poisson_nll_loss(T(A2), T(np.abs(_data(30, 5, 3))), True, True, 1e-8, 1),
    "ctc_loss": lambda L, T: L.ctc_loss(T(LOGP), L.tensor([[1, 2], [3, 3]]), [6, 5], [2, 2], 0, 2, False),
    "bilinear": lambda L, T: L.bilinear(T(A2), T(_data(31, 5, 4)), T(_data(32, 2, 3, 4)), T(_data(33, 2))),
}


@pytest.mark.parametrize("name", sorted(ALIAS_CASES))
def test_functional_alias_matches_torch(name):
    fn = ALIAS_CASES[name]
    values, grads = [], []
    for lib in (engine, torch):
        leaves = []

        def T(arr, lib=lib, leaves=leaves):  # noqa: N802 - a leaf that requires grad, from the shared data
            t = lib.tensor(arr, requires_grad=True)
            leaves.append(t)
            return t

        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)  # torch's top-level ops warn about nothing here
            out = fn(lib, T)
        values.append(out.detach().numpy())
        (out * lib.tensor(np.linspace(0.5, 1.5, out.numel(), dtype=np.float32)).reshape(out.shape)).sum().backward()
        grads.append([leaf.grad.numpy() if leaf.grad is not None else None for leaf in leaves])
    np.testing.assert_allclose(values[0], values[1], rtol=1e-4, atol=1e-5)
    for ge, gt in zip(*grads):
        assert (ge is None) == (gt is None)
        if ge is not None:
            np.testing.assert_allclose(ge, gt, rtol=1e-4, atol=1e-5)


def test_adaptive_max_pool1d_returns_indices_as_torch():
    for lib in (engine, torch):
        out, idx = lib.adaptive_max_pool1d(lib.tensor(X4), 3)
        assert idx.dtype == lib.int64
    e_idx = engine.adaptive_max_pool1d(engine.tensor(X4), 3)[1].numpy()
    np.testing.assert_array_equal(e_idx, torch.adaptive_max_pool1d(torch.tensor(X4), 3)[1].numpy())


def test_relu_inplace_aliases_refuse_leaves_and_update_in_place():
    x = engine.tensor([-1.0, 2.0])
    assert engine.relu_(x) is x and x.tolist() == [0.0, 2.0]
    assert engine.selu_(x) is x
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        engine.relu_(engine.ones(2, requires_grad=True))


def test_rrelu_with_a_generator_is_refused():
    with pytest.raises(NotImplementedError, match="generator= is not supported"):
        engine.rrelu(engine.ones(2), generator=engine.Generator())
    with pytest.raises(NotImplementedError, match="generator= is not supported"):
        engine.rrelu_(engine.ones(2), training=True, generator=engine.Generator())


def test_rrelu_training_slopes_within_bounds():
    engine.manual_seed(0)
    x = -engine.ones(1000)
    y = engine.rrelu(x, 0.1, 0.3, True)
    assert float(y.min()) >= -0.3 and float(y.max()) <= -0.1


# --- asarray memory sharing, samplers ------------------------------------------------------------------

def test_asarray_shares_memory_exactly_when_torch_does():
    arr = np.arange(3.0)
    shared, copied = engine.asarray(arr), engine.asarray(arr, copy=True)
    arr[0] = 9.0
    assert shared.tolist() == [9.0, 1.0, 2.0] and copied.tolist() == [0.0, 1.0, 2.0]
    x = engine.tensor([1.0, 2.0])
    assert engine.asarray(x) is x and engine.asarray(x, copy=True) is not x
    y = engine.tensor([1.0, 2.0], requires_grad=True)
    with pytest.warns(UserWarning, match="unspecified requires_grad now defaults to obj.requires_grad"):
        assert engine.asarray(y) is y
    assert not engine.asarray(y, requires_grad=False).requires_grad


def test_poisson_and_binomial_statistics_and_nodes():
    engine.manual_seed(0)
    rates = engine.full((20000,), 3.0, requires_grad=True)
    draws = engine.poisson(rates)
    assert draws.dtype == engine.float32 and abs(float(draws.mean()) - 3.0) < 0.05
    assert type(draws.grad_fn).__name__ == "PoissonBackward0"
    draws.sum().backward()
    assert rates.grad.abs().sum().item() == 0.0
    count = engine.full((20000,), 10.0, requires_grad=True)
    b = engine.binomial(count, engine.full((20000,), 0.25))
    assert abs(float(b.mean()) - 2.5) < 0.05 and float(b.max()) <= 10
    with pytest.raises(RuntimeError, match="derivative for aten::binomial is not implemented"):
        b.sum().backward()


def test_poisson_generator_reproducible():
    g = engine.Generator().manual_seed(5)
    a = engine.poisson(engine.full((10,), 4.0), g)
    g.manual_seed(5)
    assert a.equal(engine.poisson(engine.full((10,), 4.0), g))


def test_set_default_device_other_than_cpu_raises_the_engine_device_error():
    with pytest.raises(RuntimeError, match="engine runs on NumPy and has only the 'cpu' device, not 'cuda'"):
        engine.set_default_device("cuda")
    with pytest.raises(RuntimeError, match="has only the 'cpu' device"):
        engine.hann_window(4, device="cuda")


def test_result_type_refuses_other_objects():
    with pytest.raises(TypeError, match="result_type"):
        engine.result_type("a", 2.0)
