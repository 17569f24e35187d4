"""The recurrent layers as modules: reprs, parameter names/shapes/order, initialisation, weight
replacement, dtype conversion, state_dict, copying, training-mode dropout and the recorded graph."""

from __future__ import annotations

import copy
import math
from collections import Counter

import numpy as np
import pytest

import engine

from .rnn_helpers import check_parity, rand

CONSTRUCTORS = [
    "RNN(3, 4)",
    "RNN(3, 4, 2, 'relu', False, True, 0.5, True)",
    "RNN(3, 4, nonlinearity='relu')",
    "LSTM(3, 4)",
    "LSTM(3, 4, 2, bias=False, batch_first=True, dropout=0.25, bidirectional=True, proj_size=2)",
    "GRU(3, 4, num_layers=3, bidirectional=True)",
    "RNNCell(3, 4)",
    "RNNCell(3, 4, False, 'relu')",
    "LSTMCell(3, 4, bias=False)",
    "GRUCell(3, 4)",
]


def build(lib, expr: str):
    return eval(f"lib.nn.{expr}", {"lib": lib})  # noqa: S307 - the test's own constructor strings


@pytest.mark.parametrize("expr", CONSTRUCTORS)
def test_repr_matches_torch(torch, expr):
    assert repr(build(engine, expr)) == repr(build(torch, expr))


@pytest.mark.parametrize("expr", CONSTRUCTORS)
def test_parameter_names_shapes_and_order_match_torch(torch, expr):
    def listing(m):
        return [(name, tuple(p.shape)) for name, p in m.named_parameters()]

    e, t = build(engine, expr), build(torch, expr)
    assert listing(e) == listing(t)
    assert list(e.state_dict().keys()) == list(t.state_dict().keys())
    if hasattr(t, "all_weights"):
        assert [[tuple(w.shape) for w in ws] for ws in e.all_weights] == \
            [[tuple(w.shape) for w in ws] for ws in t.all_weights]
        assert e._flat_weights_names == t._flat_weights_names


@pytest.mark.parametrize("expr", ["LSTM(3, 16, 2, bidirectional=True)", "GRUCell(3, 16)", "RNN(3, 16)"])
def test_default_init_is_uniform_within_one_over_sqrt_hidden(expr):
    engine.manual_seed(0)
    m = build(engine, expr)
    values = np.concatenate([p.detach().numpy().ravel() for p in m.parameters()])
    bound = 1 / math.sqrt(16)
    assert values.min() >= -bound and values.max() <= bound
    assert values.min() < -0.9 * bound and values.max() > 0.9 * bound  # spread over the interval
    assert abs(values.mean()) < 0.1 * bound


def test_reassigned_weight_is_used_and_tracked():
    engine.manual_seed(0)
    m = engine.nn.RNN(3, 4)
    x = engine.tensor(rand(5, 2, 3))
    new = engine.nn.Parameter(engine.zeros(4, 4))
    m.weight_hh_l0 = new
    assert m._flat_weights[1] is new
    out, h = m(x)
    # With no recurrent weights every step only sees its own input.
    expected = engine.tanh(x @ m.weight_ih_l0.T + m.bias_ih_l0 + m.bias_hh_l0)
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), atol=1e-6)


def test_double_then_float64_input_matches_torch(torch):
    check_parity(torch, lambda lib: lib.nn.LSTM(3, 4, num_layers=2).double(),
                 {"x": rand(4, 2, 3).astype(np.float64)}, lambda m, t: m(t["x"]), atol=1e-10, rtol=1e-10)


def test_torch_state_dict_loads_and_gives_torchs_outputs(torch):
    t = torch.nn.GRU(3, 4, num_layers=2, bidirectional=True)
    e = engine.nn.GRU(3, 4, num_layers=2, bidirectional=True)
    e.load_state_dict({k: engine.tensor(v.numpy()) for k, v in t.state_dict().items()})
    x = rand(5, 2, 3)
    t_out, t_h = t(torch.tensor(x))
    e_out, e_h = e(engine.tensor(x))
    np.testing.assert_allclose(e_out.detach().numpy(), t_out.detach().numpy(), atol=1e-6)
    np.testing.assert_allclose(e_h.detach().numpy(), t_h.detach().numpy(), atol=1e-6)


def test_deepcopy_is_independent_and_computes_the_same():
    m = engine.nn.LSTM(3, 4, proj_size=2)
    c = copy.deepcopy(m)
    x = engine.tensor(rand(5, 2, 3))
    np.testing.assert_array_equal(c(x)[0].detach().numpy(), m(x)[0].detach().numpy())
    assert c._flat_weights[0] is c.weight_ih_l0 and c.weight_ih_l0 is not m.weight_ih_l0
    with engine.no_grad():
        c.weight_hr_l0.zero_()
    assert not np.array_equal(c(x)[0].detach().numpy(), m(x)[0].detach().numpy())


def test_dropout_between_layers_only_in_training():
    engine.manual_seed(0)
    m = engine.nn.GRU(3, 8, num_layers=2, dropout=0.5)
    x = engine.tensor(rand(5, 4, 3))
    m.eval()
    first, second = m(x)[0].detach().numpy(), m(x)[0].detach().numpy()
    np.testing.assert_array_equal(first, second)
    m.train()
    a, b = m(x)[0].detach().numpy(), m(x)[0].detach().numpy()
    assert not np.allclose(a, first) and not np.allclose(a, b)


def test_flatten_parameters_is_a_no_op():
    m = engine.nn.LSTM(3, 4)
    before = [p.detach().numpy().copy() for p in m.parameters()]
    m.flatten_parameters()
    assert all(np.array_equal(b, p.detach().numpy()) for b, p in zip(before, m.parameters()))


def _node_names(root) -> Counter:
    seen, stack, names = set(), [root], Counter()
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        names[node.name().replace("torch::autograd::", "")] += 1
        stack.extend(n for n, _ in node.next_functions)
    return names


def test_rnn_graph_matches_torchs_node_for_node(torch):
    # torch's RNN on CPU is composite: one input projection per layer and direction, then one
    # addmm per time step. The engine records the same nodes (what modscope counts MACs from).
    graphs = []
    for lib in (torch, engine):
        m = lib.nn.RNN(3, 4, num_layers=2, bidirectional=True)
        out, h = m(lib.tensor(rand(5, 2, 3), requires_grad=True))
        graphs.append((_node_names(out.grad_fn), _node_names(h.grad_fn)))
    assert graphs[0] == graphs[1]


def test_lstm_cell_graph_matches_torchs_node_for_node(torch):
    graphs = []
    for lib in (torch, engine):
        h, c = lib.nn.LSTMCell(3, 4)(lib.tensor(rand(2, 3), requires_grad=True))
        graphs.append(_node_names(h.grad_fn))
    t_graph, e_graph = graphs
    assert e_graph == t_graph  # torch's unsafe_chunk of the gates included (UnsafeSplitBackward0)


def test_lstm_graph_matches_torchs_node_for_node(torch):
    # torch's CPU LSTM (oneDNN) records one MkldnnRnnLayerBackward0 per layer and direction, the
    # final states stacked from its outputs 1 and 2; the engine's layer is one op too (fused_rnn.lstm_layer)
    graphs = []
    for lib in (torch, engine):
        m = lib.nn.LSTM(3, 4, num_layers=2, bidirectional=True)
        out, (h, c) = m(lib.tensor(rand(5, 2, 3), requires_grad=True))
        graphs.append((_node_names(out.grad_fn), _node_names(h.grad_fn), _node_names(c.grad_fn),
                       sorted(nr for _, nr in h.grad_fn.next_functions), sorted(nr for _, nr in c.grad_fn.next_functions)))
    assert graphs[0] == graphs[1]
    assert graphs[1][0]["MkldnnRnnLayerBackward0"] == 4


def test_lstm_with_projections_steps_op_by_op():
    # proj_size has no fused layer (torch's oneDNN path has none either): a step is an addmm and the fused cell
    T, L, D = 6, 2, 2
    m = engine.nn.LSTM(3, 4, num_layers=L, bidirectional=True, proj_size=2)
    out, _ = m(engine.tensor(rand(T, 2, 3), requires_grad=True))
    names = _node_names(out.grad_fn)
    assert names["AddmmBackward0"] == L * D * (T + 1)  # one per step + one input projection
    assert names["ThnnFusedLstmCellBackward0"] == L * D * T  # the gate arithmetic: one fused op per step
    assert names["SigmoidBackward0"] == 0


@pytest.mark.parametrize("module", ["rnn", "attention", "transformer"])
def test_docstring_examples_run(module):
    import doctest
    import importlib

    mod = importlib.import_module(f"engine.nn.modules.{module}")
    result = doctest.testmod(mod, extraglobs={"engine": engine}, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
