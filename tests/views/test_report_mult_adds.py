"""Multiply-adds in ``views/report.py``, on hand-made events (plain dicts, no torch): a rule per
fused graph op, the class rules for a module call the graph does not account for, how the two
combine without counting twice, and ``summary_totals`` as the table's footer."""

from __future__ import annotations

import pytest
from rich.console import Console

from modscope.events.schema import validate
from modscope.views.report import module_call_macs, module_figures, node_macs, summary_table, summary_totals

# --- events ----------------------------------------------------------------------------------------


def ev(kind: str, step: int = 0, **fields) -> dict:
    return validate({"v": 1, "kind": kind, "seq": 0, "t": 0, "step": step, **fields})


def s(*shape: int) -> dict:
    return {"shape": list(shape), "dtype": "float32", "tid": 0}


def model(modules: list[tuple[str, str, str]], params: list[tuple[str, list[int], bool]]) -> dict:
    """``modules``: (path, class, extra_repr); ``params``: (path, shape, requires_grad)."""
    def numel(shape: list[int]) -> int:
        n = 1
        for d in shape:
            n *= d
        return n
    paths = [p for p, _, _ in modules]
    return ev("model", model="M", modules=[
        {"path": p, "cls": c, "extra_repr": r, "training": True, "aliases": [],
         "children": [q.rpartition(".")[2] for q in paths if q and q.rpartition(".")[0] == p and q != p]}
        for p, c, r in modules],
        params=[{"path": p, "shape": sh, "dtype": "float32", "numel": numel(sh), "requires_grad": g}
                for p, sh, g in params], buffers=[])


def call(path: str, inputs: list, outputs: list, step: int = 0, n: int = 0, inner: list | None = None) -> list[dict]:
    """A module call's forward_pre and forward events, with the calls made inside it between."""
    return [ev("forward_pre", step, path=path, call=n, inputs=inputs), *(inner or []),
            ev("forward", step, path=path, call=n, outputs=outputs, dur_ns=1)]


def node(i: int, op: str, module: str | None, shape: list[int], inputs: list | None = None, saved: list | None = None,
         n: int | None = 0, saved_bytes: int = 0) -> dict:
    return {"id": i, "op": op, "module": module, "shape": shape, "saved_bytes": saved_bytes,
            "inputs": inputs or [], "seq": i, "call": n,
            "saved": [{"shape": sh, "output": False, "param": prm} for sh, prm in saved or []]}


def leaf(i: int, shape: list[int]) -> dict:
    return {"id": i, "op": "AccumulateGrad", "module": None, "shape": shape, "saved_bytes": 0, "inputs": [],
            "seq": None, "call": None, "saved": []}


def graph(*nodes: dict) -> dict:
    edges = [[j, n["id"]] for n in nodes for j in n["inputs"] if j is not None]
    return ev("graph", nodes=list(nodes), edges=edges, leaves=[])


def macs(op: str, shape: list[int], inputs: list, saved: list | None = None) -> int | None:
    """``node_macs`` of one node whose input nodes have ``inputs``' shapes (None: no gradient)."""
    ids = [None if sh is None else 100 + k for k, sh in enumerate(inputs)]
    shapes = {100 + k: sh for k, sh in enumerate(inputs) if sh is not None}
    return node_macs(node(0, op, "m", shape, ids, saved), shapes)


# The frozen-backbone MLP: Linear(20, 32) frozen, ReLU, Linear(32, 10); batch 8.
MLP = [("", "Sequential", ""), ("0", "Linear", "in_features=20, out_features=32, bias=True"), ("1", "ReLU", ""),
       ("2", "Linear", "in_features=32, out_features=10, bias=True")]
MLP_PARAMS = [("0.weight", [32, 20], False), ("0.bias", [32], False), ("2.weight", [10, 32], True),
              ("2.bias", [10], True)]


def mlp_forward(step: int = 0, n: int = 0) -> list[dict]:
    return call("", [s(8, 20)], [s(8, 10)], step, n, inner=[*call("0", [s(8, 20)], [s(8, 32)], step, n),
                                                             *call("1", [s(8, 32)], [s(8, 32)], step, n),
                                                             *call("2", [s(8, 32)], [s(8, 10)], step, n)])


HEAD_GRAPH = graph(node(0, "AddmmBackward0", "2", [8, 10], [3, None, 1], saved=[([8, 32], None)], saved_bytes=1024),
                   node(1, "TBackward0", "2", [32, 10], [2]), leaf(2, [10, 32]), leaf(3, [10]))


# --- graph rules -----------------------------------------------------------------------------------


def test_matrix_product_rules_read_whichever_operand_is_known():
    assert macs("AddmmBackward0", [8, 10], [[10], None, [32, 10]]) == 8 * 10 * 32
    assert macs("MmBackward0", [10, 48], [None, [16, 48]]) == 10 * 48 * 16
    assert macs("BmmBackward0", [4, 5, 5], [[4, 5, 8], None]) == 4 * 5 * 5 * 8
    # attention weights under a mask: baddbmm(mask, q, k^T), the mask the first input
    assert macs("BaddbmmBackward0", [4, 5, 6], [None, [4, 5, 8], None]) == 4 * 5 * 6 * 8
    assert macs("BaddbmmBackward0", [4, 5, 6], [[5, 6], None, [4, 8, 6]]) == 4 * 5 * 6 * 8
    # addbmm sums the batch of products too
    assert macs("AddbmmBackward0", [5, 6], [None, [3, 5, 8], None]) == 3 * 5 * 6 * 8
    assert macs("AddmvBackward0", [5], [None, None, [8]]) == 5 * 8
    assert macs("MvBackward0", [5], [[5, 8], None]) == 5 * 8
    assert macs("DotBackward0", [], [[8], None]) == 8


def test_an_op_without_multiply_adds_counts_none_and_an_unknown_operand_is_unknown():
    assert macs("ReluBackward0", [8, 32], [[8, 32]]) == 0
    # a Linear with a frozen weight and a bias to train (BitFit) on an input needing no gradient:
    # the node exists for the bias alone and saved neither matrix
    assert macs("AddmmBackward0", [8, 32], [[32], None, None]) is None


def test_convolution_with_a_frozen_weight_reads_the_saved_weight():
    out = [2, 16, 7, 7]
    right = 2 * 16 * 7 * 7 * 72
    assert macs("ConvolutionBackward0", out, [[2, 8, 16, 16], [16, 8, 3, 3], [16]]) == right
    # the weight needs no gradient: no input node, but the node saved it (torch saves input and
    # weight, by name, whichever needs a gradient)
    saved = [([2, 8, 16, 16], None), ([16, 8, 3, 3], "1.weight")]
    assert macs("ConvolutionBackward0", out, [[2, 8, 16, 16], None, [16]], saved=saved) == right
    assert macs("ConvolutionBackward0", out, [None, None, [16]], saved=saved) == right  # the bias alone trains
    assert macs("ConvolutionBackward0", out, [None, None, [16]], saved=[(sh, None) for sh, _ in saved]) == right
    assert macs("ConvolutionBackward0", out, [None, None, [16]]) is None


def test_transposed_convolution_counts_per_input_element():
    # ConvTranspose2d(4, 8, 3, stride=2, groups=2): weight [in, out / groups, 3, 3]
    x, w, out = [2, 4, 5, 5], [4, 4, 3, 3], [2, 8, 11, 11]
    right = 2 * 4 * 5 * 5 * 4 * 9
    assert macs("ConvolutionBackward0", out, [x, w, [8]]) == right  # the weight does not lead with 8 channels
    saved = [(x, None), (w, "up.weight")]
    assert macs("ConvolutionBackward0", out, [None, None, [8]], saved) == right
    # 4 -> 4 channels: the weight's shape cannot tell, the module's class does
    x, w, out = [2, 4, 5, 5], [4, 4, 3, 3], [2, 4, 11, 11]
    graph_node = node(0, "ConvolutionBackward0", "up", out, [1, 2, None])
    assert node_macs(graph_node, {1: x, 2: w}) == 2 * 4 * 11 * 11 * 36  # read as a convolution
    assert node_macs(graph_node, {1: x, 2: w}, "ConvTranspose2d") == 2 * 4 * 5 * 5 * 36


def test_onednn_rnn_layer_from_its_weights():
    # one MkldnnRnnLayerBackward0 per layer and direction; output [T, B, H]; inputs: input,
    # weight_ih, weight_hh, bias_ih, bias_hh, hx, cx (the states 2-D, [B, H])
    inputs = [None, [64, 8], [64, 16], [64], [64], [4, 16], [4, 16]]
    assert macs("MkldnnRnnLayerBackward0", [5, 4, 16], inputs) == 5 * 4 * (64 * 8 + 64 * 16)
    # frozen weights, an input needing a gradient: the saved parameters (by name: cx_, hx_, input,
    # weight0, weight1, weight2, weight3)
    saved = [([4, 16], None), ([4, 16], None), ([5, 4, 8], None), ([64, 8], "lstm.weight_ih_l0"),
             ([64, 16], "lstm.weight_hh_l0"), ([64], "lstm.bias_ih_l0"), ([64], "lstm.bias_hh_l0")]
    assert macs("MkldnnRnnLayerBackward0", [5, 4, 16], [[5, 4, 8], None, None, None, None, None, None],
                saved) == 5 * 4 * (64 * 8 + 64 * 16)
    assert macs("MkldnnRnnLayerBackward0", [5, 4, 16], [[5, 4, 8], None, None, None, None, None, None]) is None


def test_cudnn_rnn_counts_every_layer_and_direction_over_all_steps():
    # one node for a 2-layer bidirectional GRU (H=16, input 8): every weight matrix once per step
    weights = [[48, 8], [48, 16], [48], [48]] * 2 + [[48, 32], [48, 16], [48], [48]] * 2
    per_step = 2 * (48 * 8 + 48 * 16) + 2 * (48 * 32 + 48 * 16)
    out = [5, 4, 32]  # [T, B, 2H]
    assert macs("CudnnRnnBackward0", out, [[5, 4, 8], *weights, [4, 4, 16], None]) == 5 * 4 * per_step
    saved = [([5, 4, 8], None), ([4, 4, 16], None)] + [(w, f"rnn.w{k}") for k, w in enumerate(weights)]
    assert macs("CudnnRnnBackward0", out, [[5, 4, 8]] + [None] * 18, saved) == 5 * 4 * per_step
    # a packed sequence: the output's leading dimension is the total length, 2-D like the input
    assert macs("MiopenRnnBackward0", [17, 32], [[17, 8], *weights, None, None]) == 17 * per_step


@pytest.mark.parametrize("op", ["ScaledDotProductFlashAttentionForCpuBackward0",
                                "ScaledDotProductEfficientAttentionBackward0",
                                "ScaledDotProductFlashAttentionBackward0", "ScaledDotProductCudnnAttentionBackward0"])
def test_fused_attention_from_query_key_value(op):
    # cross-attention: batch 2, 3 heads, L=7 queries, S=4 keys, E=8 for q/k, Ev=6 for v
    q, k, v, out = [2, 3, 7, 8], [2, 3, 4, 8], [2, 3, 4, 6], [2, 3, 7, 6]
    right = 2 * 3 * 7 * 4 * 8 + 2 * 3 * 7 * 4 * 6  # QK^T + AV
    assert macs(op, out, [q, k, v]) == right
    # only the query needs a gradient: key and value from what the node saved (by name: an
    # attention mask, key, query, value, then the results but its output, e.g. logsumexp)
    saved = [([2, 3, 7, 4], None), (k, None), (q, None), (v, None), ([2, 3, 7], None)]
    assert macs(op, out, [q, None, None], saved) == right
    assert macs(op, out, [q, None, None]) is None


def test_fused_attention_with_grouped_query_heads_counts_the_query_heads():
    q, k, v, out = [2, 4, 7, 8], [2, 2, 5, 8], [2, 2, 5, 8], [2, 4, 7, 8]
    assert macs("ScaledDotProductFlashAttentionForCpuBackward0", out, [q, k, v]) == 2 * 4 * 7 * 5 * 16


# --- class rules -----------------------------------------------------------------------------------


def test_linear_class_rule():
    assert module_call_macs("Linear", [s(2, 5, 16)], [s(2, 5, 32)]) == 2 * 5 * 32 * 16
    # input passed by keyword: not in the events, the weight's shape says
    assert module_call_macs("Linear", [], [s(8, 32)], params={"weight": [32, 20]}) == 8 * 32 * 20
    assert module_call_macs("Linear", [], [s(8, 32)]) is None
    assert module_call_macs("ReLU", [s(8, 32)], [s(8, 32)]) is None


def test_conv_class_rules():
    conv = {"cls": "Conv2d", "extra_repr": "4, 8, kernel_size=(3, 5), stride=(1, 1), groups=2"}
    out = [2, 8, 14, 12]
    right = 2 * 8 * 14 * 12 * (4 // 2) * 3 * 5
    assert module_call_macs("Conv2d", [s(2, 4, 16, 16)], [s(*out)], conv, {"weight": [8, 2, 3, 5]}) == right
    assert module_call_macs("Conv2d", [s(2, 4, 16, 16)], [s(*out)], conv) == right  # a weight tied elsewhere
    lazy = {"cls": "LazyConv1d", "extra_repr": "0, 8, kernel_size=(3,), stride=(1,)"}
    assert module_call_macs("LazyConv1d", [s(2, 4, 10)], [s(2, 8, 8)], lazy) == 2 * 8 * 8 * 4 * 3
    # transposed: each input element is scattered over (out channels / groups) x kernel
    tconv = {"cls": "ConvTranspose2d", "extra_repr": "4, 8, kernel_size=(3, 3), stride=(2, 2), groups=2"}
    assert module_call_macs("ConvTranspose2d", [s(2, 4, 5, 5)], [s(2, 8, 11, 11)], tconv,
                            {"weight": [4, 4, 3, 3]}) == 2 * 4 * 5 * 5 * 4 * 9
    assert module_call_macs("ConvTranspose2d", [s(2, 4, 5, 5)], [s(2, 8, 11, 11)], tconv) == 2 * 4 * 5 * 5 * 4 * 9


def test_recurrent_class_rules():
    lstm = {f"{kind}_l{layer}{d}": shape for layer, width in ((0, 8), (1, 32)) for d in ("", "_reverse")
            for kind, shape in (("weight_ih", [64, width]), ("weight_hh", [64, 16]), ("bias_ih", [64]),
                                ("bias_hh", [64]))}
    per_step = 2 * (64 * 8 + 64 * 16) + 2 * (64 * 32 + 64 * 16)
    # batch_first output [B, T, 2H], then h_n and c_n
    assert module_call_macs("LSTM", [s(4, 5, 8)], [s(4, 5, 32), s(4, 4, 16), s(4, 4, 16)],
                            params=lstm) == 4 * 5 * per_step
    # a packed sequence flattens to its data [total length, 2H] and batch sizes...
    assert module_call_macs("LSTM", [s(17, 8), s(5)], [s(17, 32), s(5), None, None, s(4, 4, 16), s(4, 4, 16)],
                            params=lstm) == 17 * per_step
    proj = {"weight_ih_l0": [64, 8], "weight_hh_l0": [64, 4], "weight_hr_l0": [4, 16]}
    assert module_call_macs("LSTM", [s(5, 4, 8)], [s(5, 4, 4)], params=proj) == 5 * 4 * (64 * 8 + 64 * 4 + 4 * 16)
    cell = {"weight_ih": [48, 8], "weight_hh": [48, 16], "bias_ih": [48], "bias_hh": [48]}
    assert module_call_macs("GRUCell", [s(4, 8)], [s(4, 16)], params=cell) == 4 * (48 * 8 + 48 * 16)
    assert module_call_macs("GRUCell", [s(8)], [s(16)], params=cell) == 48 * 8 + 48 * 16  # unbatched
    assert module_call_macs("RNN", [s(5, 4, 8)], [s(5, 4, 16)]) is None  # no weights known


B, L, S, E = 2, 5, 3, 16


def mha(q: list[int], k: list[int], v: list[int], weights: list[int] | None = None, **params: list[int]) -> int | None:
    """A MultiheadAttention call on query, key and value of these shapes (its output: the query's)."""
    outputs = [s(*q), s(*weights) if weights else None]
    return module_call_macs("MultiheadAttention", [s(*q), s(*k), s(*v)], outputs, params=params)


def test_multihead_attention_class_rule_layouts():
    # projections of q, k, v, QK^T and AV over all heads, output projection
    right = B * L * E * E + 2 * B * S * E * E + 2 * B * L * S * E + B * L * E * E
    assert mha([L, B, E], [S, B, E], [S, B, E]) == right  # sequence first (torch's default)
    assert mha([B, L, E], [B, S, E], [B, S, E]) == right  # batch first: the batch is what q and k share
    assert mha([L, E], [S, E], [S, E]) == right // B  # unbatched
    kdim = B * L * E * E + B * S * E * 12 + B * S * E * 20 + 2 * B * L * S * E + B * L * E * E
    assert mha([B, L, E], [B, S, 12], [B, S, 20]) == kdim


def test_multihead_attention_key_length_from_weights_else_torch_default():
    self_attention = B * L * E * E * 3 + 2 * B * L * L * E + B * L * E * E
    # need_weights: the weights [B, L, S] say S, whatever the layout
    assert mha([B, L, E], [B, L, E], [B, L, E], weights=[B, L, L]) == self_attention
    assert mha([B, L, E], [B, L, E], [B, L, E], weights=[B, 2, L, L]) == self_attention
    # without them a batch-first self-attention cannot be told from a sequence-first one: torch's
    # default (batch_first=False) is assumed, so S is read as B
    assert mha([B, L, E], [B, L, E], [B, L, E]) == B * L * E * E * 3 + 2 * B * L * B * E + B * L * E * E
    # arguments passed by keyword: self-attention on the output's shape
    assert module_call_macs("MultiheadAttention", [], [s(L, B, E), None]) == self_attention
    # add_bias_kv appends one key
    assert mha([L, B, E], [S, B, E], [S, B, E], bias_k=[1, 1, E]) == \
        B * L * E * E + 2 * B * S * E * E + 2 * B * L * (S + 1) * E + B * L * E * E


# --- combining graph and class ---------------------------------------------------------------------


def test_a_frozen_layer_without_graph_nodes_counts_from_its_class():
    events = [model(MLP, MLP_PARAMS), *mlp_forward(), HEAD_GRAPH]
    figs = module_figures(events)
    assert (figs["0"]["macs"], figs["2"]["macs"], figs[""]["macs"]) == (8 * 20 * 32, 8 * 32 * 10, 7_680)
    assert summary_totals(events) == {"params": 1_002, "trainable": 330, "mult_adds": 7_680}


def test_a_module_the_graph_counted_is_not_counted_again():
    both = graph(node(0, "AddmmBackward0", "2", [8, 10], [3, 4, 1]), node(1, "TBackward0", "2", [32, 10], [2]),
                 leaf(2, [10, 32]), leaf(3, [10]), node(4, "ReluBackward0", "1", [8, 32], [5]),
                 node(5, "AddmmBackward0", "0", [8, 32], [6, None, 7]), leaf(6, [32]),
                 node(7, "TBackward0", "0", [20, 32], [8]), leaf(8, [32, 20]))
    assert summary_totals([model(MLP, MLP_PARAMS), *mlp_forward(), both])["mult_adds"] == 7_680


def test_without_a_graph_every_standard_layer_counts_from_its_class():
    # no_grad inference: no graph event at all
    events = [model(MLP, MLP_PARAMS), *mlp_forward()]
    assert summary_totals(events)["mult_adds"] == 7_680
    assert module_figures(events)["1"]["macs"] == 0  # ReLU


def test_class_counts_are_one_forward_pass_like_the_graph():
    # the last step ran the model twice (two top-level calls): one forward's worth, as the graph
    # holds one; an earlier step is not looked at
    events = [model(MLP, MLP_PARAMS), *mlp_forward(step=0), *mlp_forward(step=1), *mlp_forward(step=1, n=1),
              HEAD_GRAPH]
    assert summary_totals(events)["mult_adds"] == 7_680


def test_a_module_called_twice_in_one_forward_counts_twice():
    modules = [("", "Net", ""), ("mid", "Linear", "in_features=16, out_features=16, bias=True")]
    inner = [*call("mid", [s(8, 16)], [s(8, 16)]), *call("mid", [s(8, 16)], [s(8, 16)], n=1)]
    events = [model(modules, [("mid.weight", [16, 16], False), ("mid.bias", [16], False)]),
              *call("", [s(8, 16)], [s(8, 16)], inner=inner)]
    assert summary_totals(events)["mult_adds"] == 2 * 8 * 16 * 16


def test_a_node_with_unknown_operands_gives_way_to_the_class_rule():
    # BitFit: the first Linear's bias alone trains, so its addmm saved neither matrix
    params = [("0.weight", [32, 20], False), ("0.bias", [32], True), ("2.weight", [10, 32], True),
              ("2.bias", [10], True)]
    g = graph(node(0, "AddmmBackward0", "2", [8, 10], [3, 4, 1]), node(1, "TBackward0", "2", [32, 10], [2]),
              leaf(2, [10, 32]), leaf(3, [10]), node(4, "ReluBackward0", "1", [8, 32], [5], saved_bytes=1024),
              node(5, "AddmmBackward0", "0", [8, 32], [6, None, None], saved_bytes=64), leaf(6, [32]))
    figs = module_figures([model(MLP, params), *mlp_forward(), g])
    assert (figs["0"]["macs"], figs[""]["macs"]) == (8 * 20 * 32, 7_680)
    assert figs["0"]["saved"] == 64  # the node's bytes still count


def test_a_node_with_unknown_operands_in_a_module_without_class_rule_counts_none():
    modules = [("", "Net", "")]
    g = graph(node(0, "AddmmBackward0", "", [8, 32], [1, None, None]), leaf(1, [32]))
    events = [model(modules, [("bias", [32], True)]), *call("", [s(8, 20)], [s(8, 32)]), g]
    assert summary_totals(events)["mult_adds"] == 0


ATTN = [("", "Net", ""), ("attn", "MultiheadAttention", ""),
        ("attn.out_proj", "NonDynamicallyQuantizableLinear", "in_features=16, out_features=16, bias=True")]
ATTN_PARAMS = [("attn.in_proj_weight", [48, 16], False), ("attn.in_proj_bias", [48], False),
               ("attn.out_proj.weight", [16, 16], False), ("attn.out_proj.bias", [16], False)]
SELF_ATTENTION = 3 * 10 * 16 * 16 + 2 * 10 * 5 * 16 + 10 * 16 * 16


def test_inside_a_module_counted_from_its_class_nothing_more_counts():
    # attention under no_grad whose output projection (unusually) ran as a module
    inner = call("attn", [s(5, 2, 16)] * 3, [s(5, 2, 16), s(2, 5, 5)],
                 inner=call("attn.out_proj", [s(5, 2, 16)], [s(5, 2, 16)]))
    events = [model(ATTN, ATTN_PARAMS), *call("", [s(5, 2, 16)], [s(5, 2, 16)], inner=inner)]
    figs = module_figures(events)
    assert (figs["attn"]["macs"], figs["attn.out_proj"]["macs"]) == (SELF_ATTENTION, 0)


def test_a_module_with_graph_nodes_inside_it_is_the_graphs():
    inner = call("attn", [s(5, 2, 16)] * 3, [s(5, 2, 16), None],
                 inner=call("attn.out_proj", [s(5, 2, 16)], [s(5, 2, 16)]))
    g = graph(node(0, "AddmmBackward0", "attn.out_proj", [10, 16], [None, 1, None]),
              node(1, "ViewBackward0", "", [10, 16]))
    events = [model(ATTN, ATTN_PARAMS), *call("", [s(5, 2, 16)], [s(5, 2, 16)], inner=inner), g]
    assert summary_totals(events)["mult_adds"] == 10 * 16 * 16  # attention itself not from its class


# --- totals ----------------------------------------------------------------------------------------


def test_summary_totals_is_the_tables_footer():
    events = [model(MLP, MLP_PARAMS), *mlp_forward(), HEAD_GRAPH]
    totals = summary_totals(events)
    table = summary_table(events)
    footers = {c.header: c.footer for c in table.columns}
    assert (footers["Params"], footers["Trainable"], footers["Mult-adds"]) == ("1,002", "330", "7,680")
    assert totals == {"params": 1_002, "trainable": 330, "mult_adds": 7_680}
    console = Console(width=200, record=True)
    console.print(table)
    footer = next(line for line in console.export_text().splitlines() if line.startswith("│ Total"))
    assert [cell.strip() for cell in footer.split("│")[1:8]] == ["Total", "", "", "", "1,002", "330", "7,680"]


def test_summary_totals_without_a_root_module_sums_every_module():
    # a global trace: two top-level modules, no "" path
    modules = [("enc", "Linear", "in_features=20, out_features=32, bias=False"),
               ("dec", "Linear", "in_features=32, out_features=10, bias=False")]
    params = [("enc.weight", [32, 20], False), ("dec.weight", [10, 32], True)]
    g = graph(node(0, "MmBackward0", "dec", [8, 10], [None, 1]), node(1, "TBackward0", "dec", [32, 10], [2]),
              leaf(2, [10, 32]))
    events = [model(modules, params), *call("enc", [s(8, 20)], [s(8, 32)]), g]
    assert summary_totals(events) == {"params": 960, "trainable": 320, "mult_adds": 8 * 20 * 32 + 8 * 32 * 10}
