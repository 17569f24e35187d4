"""RNN, LSTM, GRU and their cells against torch: outputs, final states and the gradients of
every input, initial state and parameter, for each layout and configuration."""

from __future__ import annotations

import pytest

from .rnn_helpers import check_parity, rand

# torch's own notice that it runs projected LSTMs without oneDNN.
pytestmark = pytest.mark.filterwarnings("ignore:LSTM with projections is not supported with oneDNN")

T, N, H_IN, H = 4, 3, 5, 6

# (class, constructor kwargs) covering every option of the multi-layer modules.
CONFIGS = [
    ("RNN", {}),
    ("RNN", {"nonlinearity": "relu"}),
    ("RNN", {"num_layers": 2, "bidirectional": True}),
    ("RNN", {"batch_first": True, "bias": False}),
    ("RNN", {"num_layers": 2, "dropout": 0.5}),  # evaluation mode: dropout is the identity
    ("LSTM", {}),
    ("LSTM", {"batch_first": True}),
    ("LSTM", {"num_layers": 2, "bidirectional": True}),
    ("LSTM", {"bias": False, "num_layers": 2}),
    ("LSTM", {"proj_size": 2}),
    ("LSTM", {"proj_size": 3, "num_layers": 2, "bidirectional": True, "batch_first": True}),
    ("GRU", {}),
    ("GRU", {"num_layers": 2, "bidirectional": True, "batch_first": True}),
    ("GRU", {"bias": False}),
]


def _make(cls: str, kw: dict):
    return lambda lib: getattr(lib.nn, cls)(H_IN, H, **kw)


def _state_shape(kw: dict, batch: int | None, proj: bool) -> tuple[int, ...]:
    layers = kw.get("num_layers", 1) * (2 if kw.get("bidirectional") else 1)
    size = kw["proj_size"] if proj and kw.get("proj_size") else H
    return (layers, size) if batch is None else (layers, batch, size)


@pytest.mark.parametrize(("cls", "kw"), CONFIGS, ids=lambda v: str(v))
def test_default_state(torch, cls, kw):
    shape = (N, T, H_IN) if kw.get("batch_first") else (T, N, H_IN)
    check_parity(torch, _make(cls, kw), {"x": rand(*shape)}, lambda m, t: m(t["x"]))


@pytest.mark.parametrize(("cls", "kw"), CONFIGS, ids=lambda v: str(v))
def test_given_state(torch, cls, kw):
    shape = (N, T, H_IN) if kw.get("batch_first") else (T, N, H_IN)
    inputs = {"x": rand(*shape), "h0": rand(*_state_shape(kw, N, proj=True), seed=1)}
    if cls == "LSTM":
        inputs["c0"] = rand(*_state_shape(kw, N, proj=False), seed=2)
        check_parity(torch, _make(cls, kw), inputs, lambda m, t: m(t["x"], (t["h0"], t["c0"])))
    else:
        check_parity(torch, _make(cls, kw), inputs, lambda m, t: m(t["x"], t["h0"]))


UNBATCHED = [
    ("RNN", {}),
    ("RNN", {"num_layers": 2, "bidirectional": True, "batch_first": True}),
    ("LSTM", {"num_layers": 2, "bidirectional": True}),
    ("LSTM", {"proj_size": 2, "batch_first": True}),
    ("GRU", {"num_layers": 2}),
]


@pytest.mark.parametrize(("cls", "kw"), UNBATCHED, ids=lambda v: str(v))
def test_unbatched(torch, cls, kw):
    inputs = {"x": rand(T, H_IN), "h0": rand(*_state_shape(kw, None, proj=True), seed=1)}
    check_parity(torch, _make(cls, kw), {"x": inputs["x"]}, lambda m, t: m(t["x"]))
    if cls == "LSTM":
        inputs["c0"] = rand(*_state_shape(kw, None, proj=False), seed=2)
        check_parity(torch, _make(cls, kw), inputs, lambda m, t: m(t["x"], (t["h0"], t["c0"])))
    else:
        check_parity(torch, _make(cls, kw), inputs, lambda m, t: m(t["x"], t["h0"]))


@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU"])
def test_dropout_one_in_training_zeroes_between_layers(torch, cls):
    # p = 1 drops every output of layer 0 on both libraries: a deterministic training-mode check.
    check_parity(torch, _make(cls, {"num_layers": 2, "dropout": 1.0}), {"x": rand(T, N, H_IN)},
                 lambda m, t: m(t["x"]), train=True)


CELLS = [
    ("RNNCell", {}),
    ("RNNCell", {"nonlinearity": "relu"}),
    ("RNNCell", {"bias": False}),
    ("LSTMCell", {}),
    ("LSTMCell", {"bias": False}),
    ("GRUCell", {}),
    ("GRUCell", {"bias": False}),
]


@pytest.mark.parametrize(("cls", "kw"), CELLS, ids=lambda v: str(v))
@pytest.mark.parametrize("batched", [True, False])
def test_cells(torch, cls, kw, batched):
    def make(lib):
        return getattr(lib.nn, cls)(H_IN, H, **kw)

    lead = (N,) if batched else ()
    x, h, c = rand(*lead, H_IN), rand(*lead, H, seed=1), rand(*lead, H, seed=2)
    check_parity(torch, make, {"x": x}, lambda m, t: m(t["x"]))
    if cls == "LSTMCell":
        check_parity(torch, make, {"x": x, "h": h, "c": c}, lambda m, t: m(t["x"], (t["h"], t["c"])))
    else:
        check_parity(torch, make, {"x": x, "h": h}, lambda m, t: m(t["x"], t["h"]))


def test_cell_unrolled_over_time_matches_torch(torch):
    # A hand-written loop over an LSTMCell: the state threads through several steps.
    def unroll(m, t):
        h, c = t["h"], t["c"]
        outs = []
        for step in t["x"].unbind(0):
            h, c = m(step, (h, c))
            outs.append(h)
        return outs + [c]

    check_parity(torch, lambda lib: lib.nn.LSTMCell(H_IN, H),
                 {"x": rand(T, N, H_IN), "h": rand(N, H, seed=1), "c": rand(N, H, seed=2)}, unroll)
