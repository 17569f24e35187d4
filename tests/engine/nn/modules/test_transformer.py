"""TransformerEncoderLayer and TransformerEncoder against torch: outputs and every gradient in
evaluation mode (dropout the identity) for post- and pre-norm, activations, masks and layouts;
reprs; submodule names; warnings and errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import engine
from engine.nn.modules import transformer as e_transformer

from .rnn_helpers import check_parity, outcome, rand

S, N, D, HEADS, FF = 5, 3, 8, 2, 16

KPM = np.zeros((N, S), bool)
KPM[0, 3:] = True
KPM[2, 4] = True
CAUSAL = np.triu(np.full((S, S), -np.inf, np.float32), 1)


def layer(**kw):
    return lambda lib: lib.nn.TransformerEncoderLayer(D, HEADS, FF, **kw)


def src(batch_first: bool = False) -> np.ndarray:
    return rand(N, S, D) if batch_first else rand(S, N, D)


def call(**kw):
    def run(m, t):
        masks = {k: t[k] for k in ("src_mask", "src_key_padding_mask", "mask") if k in t}
        return m(t["src"], **masks, **kw)

    return run


LAYER_CASES = {
    "post_norm": (layer(), {"src": src()}, call()),
    "pre_norm": (layer(norm_first=True), {"src": src()}, call()),
    "gelu_string": (layer(activation="gelu"), {"src": src()}, call()),
    "gelu_function": (lambda lib: lib.nn.TransformerEncoderLayer(D, HEADS, FF, activation=lib.nn.functional.gelu),
                      {"src": src()}, call()),
    "gelu_module_pre_norm": (lambda lib: lib.nn.TransformerEncoderLayer(D, HEADS, FF, activation=lib.nn.GELU(),
                                                                        norm_first=True), {"src": src()}, call()),
    "custom_activation": (lambda lib: lib.nn.TransformerEncoderLayer(D, HEADS, FF, activation=lib.tanh),
                          {"src": src()}, call()),
    "batch_first": (layer(batch_first=True), {"src": src(True)}, call()),
    "no_bias_eps": (layer(bias=False, layer_norm_eps=1e-3), {"src": src()}, call()),
    "unbatched": (layer(), {"src": rand(S, D)}, call()),
    "padding_mask": (layer(batch_first=True), {"src": src(True), "src_key_padding_mask": KPM}, call()),
    "causal_mask": (layer(), {"src": src(), "src_mask": CAUSAL}, call()),
    "causal_hint": (layer(norm_first=True), {"src": src(), "src_mask": CAUSAL}, call(is_causal=True)),
    "both_masks": (layer(batch_first=True), {"src": src(True), "src_mask": np.isinf(CAUSAL),
                                             "src_key_padding_mask": KPM}, call()),
}


@pytest.mark.parametrize("name", LAYER_CASES)
def test_encoder_layer_matches_torch(torch, name):
    make, inputs, run = LAYER_CASES[name]
    check_parity(torch, make, inputs, run)


@pytest.mark.parametrize("name", ["post_norm", "batch_first", "padding_mask", "pre_norm", "gelu_string"])
def test_encoder_layer_without_autograd_matches_torchs_fast_path(torch, name):
    make, inputs, run = LAYER_CASES[name]
    check_parity(torch, make, inputs, run, backward=False)


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_training_with_dropout_one(torch, norm_first):
    # p = 1 zeroes both residual branches on both libraries: output = norms of the input.
    check_parity(torch, layer(dropout=1.0, norm_first=norm_first), {"src": src()}, call(), train=True)


def test_encoder_layer_dropout_is_random_in_training():
    engine.manual_seed(0)
    m = engine.nn.TransformerEncoderLayer(D, HEADS, FF, dropout=0.5)
    x = engine.tensor(src())
    assert not np.allclose(m(x).detach().numpy(), m(x).detach().numpy())
    m.eval()
    np.testing.assert_array_equal(m(x).detach().numpy(), m(x).detach().numpy())


REPRS = [
    "TransformerEncoderLayer(8, 2)",
    "TransformerEncoderLayer(8, 2, 16, 0.2, 'gelu', 1e-3, True, True, False)",
    "TransformerEncoderLayer(8, 2, activation=lib.nn.GELU(approximate='tanh'))",
    "TransformerEncoder(lib.nn.TransformerEncoderLayer(8, 2, 16), 3, norm=lib.nn.LayerNorm(8))",
    "TransformerEncoder(lib.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 1)",
]


@pytest.mark.parametrize("expr", REPRS)
def test_repr_and_names_match_torch(torch, expr):
    def build(lib):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return eval(f"lib.nn.{expr}", {"lib": lib})  # noqa: S307 - the test's own constructor strings

    e, t = build(engine), build(torch)
    assert repr(e) == repr(t)
    assert [n for n, _ in e.named_modules()] == [n for n, _ in t.named_modules()]
    assert [(n, tuple(p.shape)) for n, p in e.named_parameters()] == \
        [(n, tuple(p.shape)) for n, p in t.named_parameters()]


@pytest.mark.parametrize("activation", ["relu", "gelu", "relu_fn", "gelu_fn", "relu_module", "gelu_module", "tanh"])
def test_activation_bookkeeping_matches_torch(torch, activation):
    def build(lib):
        act = {"relu_fn": lib.nn.functional.relu, "gelu_fn": lib.nn.functional.gelu, "relu_module": lib.nn.ReLU(),
               "gelu_module": lib.nn.GELU(), "tanh": lib.tanh}.get(activation, activation)
        return lib.nn.TransformerEncoderLayer(D, HEADS, FF, activation=act)

    e, t = build(engine), build(torch)
    assert e.activation_relu_or_gelu == t.activation_relu_or_gelu
    assert e.norm_first == t.norm_first


ERRORS = {
    "unknown_activation": lambda lib: lib.nn.TransformerEncoderLayer(D, HEADS, activation="tanh"),
    "causal_without_mask": lambda lib: lib.nn.TransformerEncoderLayer(D, HEADS, FF)(lib.zeros(S, N, D),
                                                                                    is_causal=True),
    "mask_not_tensor": lambda lib: lib.nn.TransformerEncoderLayer(D, HEADS, FF)(
        lib.zeros(S, N, D), src_mask=[[0.0]], src_key_padding_mask=lib.zeros(N, S, dtype=lib.bool)),
    "padding_mask_int": lambda lib: lib.nn.TransformerEncoderLayer(D, HEADS, FF)(
        lib.zeros(S, N, D), src_key_padding_mask=lib.zeros(N, S, dtype=lib.int64)),
    "width": lambda lib: lib.nn.TransformerEncoderLayer(D, HEADS, FF)(lib.zeros(S, N, D + 1)),
    "encoder_padding_mask_int": lambda lib: lib.nn.TransformerEncoder(
        lib.nn.TransformerEncoderLayer(D, HEADS, FF, batch_first=True), 1)(
        lib.zeros(N, S, D), src_key_padding_mask=lib.zeros(N, S, dtype=lib.int64)),
}


@pytest.mark.parametrize("name", ERRORS)
def test_errors_match_torch(torch, name):
    case = ERRORS[name]
    expected = outcome(lambda: case(torch))
    got = outcome(lambda: case(engine))
    assert expected is not None
    if name == "width":  # MultiheadAttention's size error, extended with the layer and both shapes
        assert got[0] == expected[0] and got[1].startswith(expected[1] + ": MultiheadAttention(")
    else:
        assert got == expected


# --- TransformerEncoder ---------------------------------------------------------------------------

def encoder(norm: bool = True, **kw):
    def make(lib):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return lib.nn.TransformerEncoder(lib.nn.TransformerEncoderLayer(D, HEADS, FF, **kw), 2,
                                             norm=lib.nn.LayerNorm(D) if norm else None)

    return make


ENCODER_CASES = {
    "plain": (encoder(), {"src": src()}, call()),
    "no_norm_pre_norm": (encoder(norm=False, norm_first=True), {"src": src()}, call()),
    "padding": (encoder(batch_first=True), {"src": src(True), "src_key_padding_mask": KPM}, call()),
    "causal_detected": (encoder(), {"src": src(), "mask": CAUSAL}, call()),
    "causal_given": (encoder(), {"src": src(), "mask": CAUSAL}, call(is_causal=True)),
    "additive_mask": (encoder(batch_first=True), {"src": src(True), "mask": rand(S, S, seed=3)}, call()),
}


@pytest.mark.parametrize("name", ENCODER_CASES)
def test_encoder_matches_torch(torch, name):
    make, inputs, run = ENCODER_CASES[name]
    check_parity(torch, make, inputs, run)


LEFT_ALIGNED = np.zeros((N, S), bool)
LEFT_ALIGNED[0, 3:] = True
LEFT_ALIGNED[1, 1:] = True
GAPPED = np.zeros((N, S), bool)
GAPPED[0, 2] = True


@pytest.mark.parametrize(("kw", "mask"), [
    ({}, LEFT_ALIGNED),  # torch's nested-tensor path: padded positions come out as zeros
    ({"mask_check": False}, LEFT_ALIGNED),
    ({}, GAPPED),  # not left-aligned: computed values everywhere
    ({"enable_nested_tensor": False}, LEFT_ALIGNED),
], ids=["nested", "nested_unchecked", "not_left_aligned", "nested_disabled"])
def test_encoder_without_autograd_matches_torch(torch, kw, mask):
    def make(lib):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            layer_ = lib.nn.TransformerEncoderLayer(D, HEADS, FF, batch_first=True)
            return lib.nn.TransformerEncoder(layer_, 2, norm=lib.nn.LayerNorm(D), **kw)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch: "The PyTorch API of nested tensors is in prototype stage"
        check_parity(torch, make, {"src": src(True), "src_key_padding_mask": mask}, call(), backward=False)


def test_encoder_nested_path_zeroes_padding_before_norm():
    layer_ = engine.nn.TransformerEncoderLayer(D, HEADS, FF, batch_first=True)
    enc = engine.nn.TransformerEncoder(layer_, 1, norm=engine.nn.LayerNorm(D)).eval()
    with engine.no_grad():
        enc.norm.bias.fill_(0.25)
        out = enc(engine.tensor(src(True)), src_key_padding_mask=engine.tensor(LEFT_ALIGNED)).numpy()
    np.testing.assert_allclose(out[LEFT_ALIGNED], 0.25)  # LayerNorm of zeros is its bias
    assert np.abs(out[~LEFT_ALIGNED] - 0.25).max() > 0.1


WHY_NOT_NESTED = [
    "lib.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)",
    "lib.nn.TransformerEncoderLayer(8, 2, 16)",
    "lib.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True, norm_first=True)",
    "lib.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True, bias=False)",
    "lib.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True, activation=lib.tanh)",
    "lib.nn.TransformerEncoderLayer(8, 1, 16, batch_first=True)",
    "lib.nn.Linear(8, 8)",
]


@pytest.mark.parametrize("expr", WHY_NOT_NESTED)
def test_encoder_init_warnings_match_torch(torch, expr):
    results = []
    for lib in (torch, engine):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            enc = lib.nn.TransformerEncoder(eval(expr, {"lib": lib}), 2)  # noqa: S307
        results.append(([str(w.message) for w in caught], enc.use_nested_tensor, enc.enable_nested_tensor))
    assert results[0] == results[1]


def test_encoder_layer_eps_mismatch_disables_nested_as_torch(torch):
    results = []
    for lib in (torch, engine):
        layer_ = lib.nn.TransformerEncoderLayer(D, HEADS, FF, batch_first=True)
        layer_.norm2.eps = 1e-3
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            enc = lib.nn.TransformerEncoder(layer_, 1)
        results.append(([str(w.message) for w in caught], enc.use_nested_tensor))
    assert results[0] == results[1]


@pytest.mark.parametrize(("mask", "is_causal", "size"), [
    (None, None, None), (CAUSAL, None, None), (CAUSAL, None, S), (CAUSAL, None, S + 1), (CAUSAL, False, None),
    (np.zeros((S, S), np.float32), None, None), (np.zeros((S, S), np.float32), True, None),
])
def test_detect_is_causal_mask_matches_torch(torch, mask, is_causal, size):
    from torch.nn.modules import transformer as t_transformer

    def ask(module, lib):
        return module._detect_is_causal_mask(None if mask is None else lib.tensor(mask), is_causal, size)

    assert ask(e_transformer, engine) == ask(t_transformer, torch)


def test_square_subsequent_mask_matches_torch(torch):
    from torch.nn.modules import transformer as t_transformer

    np.testing.assert_array_equal(e_transformer._generate_square_subsequent_mask(4).numpy(),
                                  t_transformer._generate_square_subsequent_mask(4).numpy())
    assert e_transformer._generate_square_subsequent_mask(3, dtype=engine.float64).dtype == engine.float64
