"""Every error path of the recurrent layers against torch: same exception type and message.
Size errors carry torch's message followed by the layer and both shapes, as every nn layer's do."""

from __future__ import annotations

import warnings

import pytest

import engine

from .rnn_helpers import outcome


def z(lib, *shape, dtype=None):
    return lib.zeros(*shape, dtype=dtype if dtype is None else getattr(lib, dtype))


# Each case builds and calls a layer on ``lib``; the engine must fail exactly as torch does.
SAME_AS_TORCH = {
    "rnn_unknown_nonlinearity": lambda lib: lib.nn.RNN(3, 4, nonlinearity="foo"),
    "rnn_positional_nonlinearity": lambda lib: lib.nn.RNN(3, 4, 1, "sigmoid"),
    "rnn_proj_size": lambda lib: lib.nn.RNN(3, 4, proj_size=2),
    "gru_proj_size": lambda lib: lib.nn.GRU(3, 4, proj_size=2),
    "lstm_proj_not_smaller": lambda lib: lib.nn.LSTM(3, 4, proj_size=4),
    "lstm_proj_negative": lambda lib: lib.nn.LSTM(3, 4, proj_size=-1),
    "dropout_above_one": lambda lib: lib.nn.LSTM(3, 4, dropout=2),
    "dropout_bool": lambda lib: lib.nn.LSTM(3, 4, dropout=True),
    "dropout_string": lambda lib: lib.nn.GRU(3, 4, dropout="x"),
    "hidden_zero": lambda lib: lib.nn.LSTM(3, 0),
    "input_zero": lambda lib: lib.nn.RNN(0, 4),
    "input_float": lambda lib: lib.nn.RNN(3.0, 4),
    "hidden_float": lambda lib: lib.nn.RNN(3, 4.0),
    "bias_not_bool": lambda lib: lib.nn.GRU(3, 4, bias=1),
    "batch_first_not_bool": lambda lib: lib.nn.GRU(3, 4, batch_first=1),
    "num_layers_zero": lambda lib: lib.nn.LSTM(3, 4, num_layers=0),
    "unknown_mode": lambda lib: lib.nn.RNNBase("FOO", 3, 4),
    "lstm_4d_input": lambda lib: lib.nn.LSTM(3, 4)(z(lib, 5, 2, 3, 1)),
    "rnn_1d_input": lambda lib: lib.nn.RNN(3, 4)(z(lib, 3)),
    "gru_4d_input": lambda lib: lib.nn.GRU(3, 4)(z(lib, 5, 2, 3, 1)),
    "rnn_batched_2d_hx": lambda lib: lib.nn.RNN(3, 4)(z(lib, 5, 2, 3), z(lib, 2, 4)),
    "rnn_unbatched_3d_hx": lambda lib: lib.nn.RNN(3, 4)(z(lib, 5, 3), z(lib, 1, 1, 4)),
    "gru_batched_2d_hx": lambda lib: lib.nn.GRU(3, 4)(z(lib, 5, 2, 3), z(lib, 2, 4)),
    "lstm_batched_2d_hx": lambda lib: lib.nn.LSTM(3, 4)(z(lib, 5, 2, 3), (z(lib, 2, 4), z(lib, 1, 2, 4))),
    "lstm_unbatched_3d_cx": lambda lib: lib.nn.LSTM(3, 4)(z(lib, 5, 3), (z(lib, 1, 4), z(lib, 1, 1, 4))),
    "input_dtype": lambda lib: lib.nn.LSTM(3, 4)(z(lib, 5, 2, 3, dtype="float64")),
    "hx_dtype": lambda lib: lib.nn.RNN(3, 4)(z(lib, 5, 2, 3), z(lib, 1, 2, 4, dtype="float64")),
    "empty_sequence": lambda lib: lib.nn.LSTM(3, 4)(z(lib, 0, 2, 3)),
    "empty_sequence_batch_first": lambda lib: lib.nn.GRU(3, 4, batch_first=True)(z(lib, 2, 0, 3)),
    "cell_3d_input": lambda lib: lib.nn.LSTMCell(3, 4)(z(lib, 2, 3, 1)),
    "rnn_cell_3d_hidden": lambda lib: lib.nn.RNNCell(3, 4)(z(lib, 2, 3), z(lib, 1, 2, 4)),
    "gru_cell_3d_input": lambda lib: lib.nn.GRUCell(3, 4)(z(lib, 1, 2, 3)),
    "gru_cell_3d_hidden": lambda lib: lib.nn.GRUCell(3, 4)(z(lib, 2, 3), z(lib, 1, 2, 4)),
    "lstm_cell_3d_cx": lambda lib: lib.nn.LSTMCell(3, 4)(z(lib, 2, 3), (z(lib, 2, 4), z(lib, 1, 2, 4))),
    "rnn_cell_unknown_nonlinearity": lambda lib: lib.nn.RNNCell(3, 4, nonlinearity="foo")(z(lib, 2, 5)),
    "cell_input_dtype": lambda lib: lib.nn.RNNCell(3, 4)(z(lib, 2, 3, dtype="float64")),
    "cell_hx_dtype": lambda lib: lib.nn.GRUCell(3, 4)(z(lib, 2, 3), z(lib, 2, 4, dtype="float64")),
}


@pytest.mark.parametrize("name", SAME_AS_TORCH)
def test_same_error_as_torch(torch, name):
    case = SAME_AS_TORCH[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = outcome(lambda: case(torch))
        got = outcome(lambda: case(engine))
    assert expected is not None
    assert got == expected


# (case, torch's exact message's layer-and-shapes extension)
EXTENDED = {
    "lstm_input_size": (
        lambda lib: lib.nn.LSTM(3, 4)(z(lib, 5, 2, 4)),
        "LSTM(3, 4) expects input of shape (L, N, 3) but got input of shape [5, 2, 4]"),
    "rnn_input_size_batch_first": (
        lambda lib: lib.nn.RNN(3, 4, batch_first=True)(z(lib, 2, 5, 4)),
        "RNN(3, 4, batch_first=True) expects input of shape (N, L, 3) but got input of shape [2, 5, 4]"),
    "gru_input_size_unbatched": (
        lambda lib: lib.nn.GRU(3, 4)(z(lib, 5, 4)),
        "GRU(3, 4) expects input of shape (L, 3) but got input of shape [5, 4]"),
    "rnn_hidden_batch": (
        lambda lib: lib.nn.RNN(3, 4)(z(lib, 5, 2, 3), z(lib, 1, 3, 4)),
        "RNN(3, 4) expects hx of shape (1, 2, 4) but got hx of shape [1, 3, 4]"),
    "rnn_hidden_unbatched": (
        lambda lib: lib.nn.RNN(3, 4, num_layers=2)(z(lib, 5, 3), z(lib, 1, 4)),
        "RNN(3, 4, num_layers=2) expects hx of shape (2, 4) but got hx of shape [1, 4]"),
    "gru_hidden_bidirectional": (
        lambda lib: lib.nn.GRU(3, 4, bidirectional=True)(z(lib, 5, 2, 3), z(lib, 1, 2, 4)),
        "GRU(3, 4, bidirectional=True) expects hx of shape (2, 2, 4) but got hx of shape [1, 2, 4]"),
    "lstm_h0": (
        lambda lib: lib.nn.LSTM(3, 4, proj_size=2)(z(lib, 5, 2, 3), (z(lib, 1, 2, 4), z(lib, 1, 2, 4))),
        "LSTM(3, 4, proj_size=2) expects hx[0] of shape (1, 2, 2) but got hx[0] of shape [1, 2, 4]"),
    "lstm_c0": (
        lambda lib: lib.nn.LSTM(3, 4)(z(lib, 5, 2, 3), (z(lib, 1, 2, 4), z(lib, 1, 2, 5))),
        "LSTM(3, 4) expects hx[1] of shape (1, 2, 4) but got hx[1] of shape [1, 2, 5]"),
    "lstm_c0_unbatched": (
        lambda lib: lib.nn.LSTM(3, 4)(z(lib, 5, 3), (z(lib, 1, 4), z(lib, 1, 5))),
        "LSTM(3, 4) expects hx[1] of shape (1, 4) but got hx[1] of shape [1, 5]"),
    "cell_input_size": (
        lambda lib: lib.nn.LSTMCell(3, 4)(z(lib, 2, 4)),
        "LSTMCell(3, 4) expects input of shape (N, 3) but got input of shape [2, 4]"),
    "cell_input_size_unbatched": (
        lambda lib: lib.nn.RNNCell(3, 4)(z(lib, 4)),
        "RNNCell(3, 4) expects input of shape (3) but got input of shape [4]"),
    "cell_hidden_batch": (
        lambda lib: lib.nn.RNNCell(3, 4)(z(lib, 2, 3), z(lib, 3, 4)),
        "RNNCell(3, 4) expects hx of shape (2, 4) but got hx of shape [3, 4]"),
    "cell_hidden_size": (
        lambda lib: lib.nn.GRUCell(3, 4)(z(lib, 2, 3), z(lib, 2, 5)),
        "GRUCell(3, 4) expects hx of shape (2, 4) but got hx of shape [2, 5]"),
    "cell_hidden_size_unbatched": (
        lambda lib: lib.nn.RNNCell(3, 4, nonlinearity="relu")(z(lib, 3), z(lib, 5)),
        "RNNCell(3, 4, nonlinearity=relu) expects hx of shape (4) but got hx of shape [5]"),
    "cell_unbatched_input_batched_hidden": (
        lambda lib: lib.nn.LSTMCell(3, 4)(z(lib, 3), (z(lib, 2, 4), z(lib, 2, 4))),
        "LSTMCell(3, 4) expects hx[0] of shape (4) but got hx[0] of shape [2, 4]"),
    "lstm_cell_h_size": (
        lambda lib: lib.nn.LSTMCell(3, 4)(z(lib, 2, 3), (z(lib, 2, 5), z(lib, 2, 4))),
        "LSTMCell(3, 4) expects hx[0] of shape (2, 4) but got hx[0] of shape [2, 5]"),
    "lstm_cell_c_size": (
        lambda lib: lib.nn.LSTMCell(3, 4)(z(lib, 2, 3), (z(lib, 2, 4), z(lib, 2, 5))),
        "LSTMCell(3, 4) expects hx[1] of shape (2, 4) but got hx[1] of shape [2, 5]"),
    "lstm_cell_c_batch": (
        lambda lib: lib.nn.LSTMCell(3, 4)(z(lib, 2, 3), (z(lib, 2, 4), z(lib, 3, 4))),
        "LSTMCell(3, 4) expects hx[1] of shape (2, 4) but got hx[1] of shape [3, 4]"),
}


@pytest.mark.parametrize("name", EXTENDED)
def test_size_error_is_torchs_extended_with_layer_and_shapes(torch, name):
    case, extension = EXTENDED[name]
    kind, message = outcome(lambda: case(torch))
    assert outcome(lambda: case(engine)) == (kind, f"{message}: {extension}")


def test_dropout_with_one_layer_warns_as_torch(torch):
    messages = []
    for lib in (torch, engine):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lib.nn.LSTM(3, 4, dropout=0.5)
        messages.append([str(w.message) for w in caught if w.category is UserWarning])
    assert messages[0] == messages[1] and len(messages[0]) == 1


def test_public_checks_raise_torchs_exact_messages(torch):
    # check_input / check_hidden_size are torch's public methods: no extension there.
    for lib in (torch, engine):
        m = lib.nn.RNN(3, 4)
        results = [outcome(lambda m=m, lib=lib: m.check_input(lib.zeros(5, 3), None)),
                   outcome(lambda m=m, lib=lib: m.check_hidden_size(lib.zeros(1, 2, 4), (1, 3, 4))),
                   outcome(lambda m=m, lib=lib: m.check_forward_args(lib.zeros(5, 2, 4), lib.zeros(1, 2, 4), None))]
        if lib is torch:
            expected = results
    assert results == expected
