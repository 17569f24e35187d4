"""Finite-difference checks (float64, central differences) of the gradients of every input,
initial state and parameter of the recurrent cells, a small LSTM, MultiheadAttention and
scaled_dot_product_attention; no torch needed."""

from __future__ import annotations

import numpy as np
import pytest

import engine
from tests.gradcheck import gradcheck, rand


def _with_params(module, call):
    """``fn(*inputs, *params)`` for gradcheck: parameters are perturbed in place like inputs."""
    params = list(module.double().parameters())
    return (lambda *args: call(*args[:len(args) - len(params)])), params


@pytest.mark.parametrize("nonlinearity", ["tanh", "relu"])
def test_rnn_cell(nonlinearity):
    engine.manual_seed(0)
    cell = engine.nn.RNNCell(3, 4, nonlinearity=nonlinearity)
    fn, params = _with_params(cell, lambda x, h: cell(x, h))
    gradcheck(fn, rand(2, 3), rand(2, 4, seed=1), *params)


def test_lstm_cell():
    engine.manual_seed(0)
    cell = engine.nn.LSTMCell(3, 4)
    fn, params = _with_params(cell, lambda x, h, c: cell(x, (h, c)))
    gradcheck(fn, rand(2, 3), rand(2, 4, seed=1), rand(2, 4, seed=2), *params)


def test_gru_cell():
    engine.manual_seed(0)
    cell = engine.nn.GRUCell(3, 4)
    fn, params = _with_params(cell, lambda x, h: cell(x, h))
    gradcheck(fn, rand(2, 3), rand(2, 4, seed=1), *params)


@pytest.mark.parametrize("kw", [{"num_layers": 2, "bidirectional": True}, {"proj_size": 2, "batch_first": True}])
def test_small_lstm(kw):
    engine.manual_seed(0)
    lstm = engine.nn.LSTM(2, 3, **kw)
    layers = 2 * lstm.num_layers if lstm.bidirectional else lstm.num_layers
    h_size = lstm.proj_size or lstm.hidden_size

    def run(x, h, c):
        out, (hn, cn) = lstm(x, (h, c))
        return out, hn, cn

    fn, params = _with_params(lstm, run)
    x = rand(2, 3, 2) if lstm.batch_first else rand(3, 2, 2)  # batch of 2, 3 steps
    gradcheck(fn, x, rand(layers, 2, h_size, seed=1), rand(layers, 2, 3, seed=2), *params)


def test_small_gru_and_rnn():
    engine.manual_seed(0)
    for module in (engine.nn.GRU(2, 3, num_layers=2), engine.nn.RNN(2, 3, bidirectional=True)):
        fn, params = _with_params(module, lambda x, m=module: m(x))
        gradcheck(fn, rand(3, 2, 2), *params)


@pytest.mark.parametrize("need_weights", [True, False])
def test_multihead_attention(need_weights):
    engine.manual_seed(0)
    mha = engine.nn.MultiheadAttention(4, 2, kdim=3, vdim=2)
    mask = engine.tensor(np.triu(np.ones((3, 4), bool), 2))
    kpm = engine.tensor(np.array([[False, False, False, True], [False, False, False, False]]))

    def run(q, k, v):
        return mha(q, k, v, attn_mask=mask, key_padding_mask=kpm, need_weights=need_weights)

    fn, params = _with_params(mha, run)
    gradcheck(fn, rand(3, 2, 4), rand(4, 2, 3, seed=1), rand(4, 2, 2, seed=2), *params)


def test_multihead_self_attention_packed():
    engine.manual_seed(0)
    mha = engine.nn.MultiheadAttention(4, 2, batch_first=True)
    with engine.no_grad():  # non-zero biases so their gradients are exercised with nonzero values
        mha.in_proj_bias.uniform_(-0.5, 0.5)
    fn, params = _with_params(mha, lambda x: mha(x, x, x, average_attn_weights=False))
    gradcheck(fn, rand(2, 3, 4), *params)


def test_scaled_dot_product_attention_with_float_mask():
    q, k, v = rand(2, 3, 4), rand(2, 5, 4, seed=1), rand(2, 5, 2, seed=2)
    mask = rand(3, 5, seed=3)
    gradcheck(lambda q, k, v, m: engine.nn.functional.scaled_dot_product_attention(q, k, v, m), q, k, v, mask)


def test_transformer_encoder_layer():
    engine.manual_seed(0)
    layer = engine.nn.TransformerEncoderLayer(4, 2, 6, dropout=0.0, activation="gelu", norm_first=True)
    fn, params = _with_params(layer, lambda x: layer(x))
    gradcheck(fn, rand(3, 2, 4), *params)
