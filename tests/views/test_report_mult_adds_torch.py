"""``summary_totals``' multiply-adds on real torch traces, against the figure worked out by hand:
frozen layers, layers under ``no_grad``, fused kernels (oneDNN's LSTM, scaled_dot_product_attention)
and masked attention. The rules themselves are tested on hand-made events in
``test_report_mult_adds.py``."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import modscope  # noqa: E402
from modscope.views.report import summary_totals  # noqa: E402

nn = torch.nn
F = torch.nn.functional

B, L, D = 2, 5, 16  # attention: batch, tokens, width (2 heads)
ATTENTION = B * L * D * 3 * D + 2 * B * L * L * D + B * L * D * D  # in_proj, QK^T and AV, out_proj
S, T = 4, 5  # RNN: batch, steps
CONV = B * 8 * 16 * 16 * (3 * 9) + B * 16 * 7 * 7 * (8 * 9)


def traced(model: nn.Module, *inputs: torch.Tensor, grad: bool = True, train: bool = True) -> list[dict]:
    torch.manual_seed(0)
    model.train(train)
    with modscope.trace(model) as tr:
        if grad:
            out = model(*inputs)
            (out[0] if isinstance(out, tuple) else out).sum().backward()
        else:
            with torch.no_grad():
                model(*inputs)
    assert not [e["message"] for e in tr.events if e["kind"] == "error"]
    tr.summary()
    return tr.events


def mult_adds(*args, **kwargs) -> int:
    return summary_totals(traced(*args, **kwargs))["mult_adds"]


def ops(events: list[dict]) -> set[str]:
    return {n["op"] for e in events if e["kind"] == "graph" for n in e["nodes"]}


def cnn() -> nn.Module:
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 16, 3, stride=2))


class Attention(nn.Module):
    def __init__(self, **kwargs) -> None:
        super().__init__()
        self.attn = nn.MultiheadAttention(D, 2, **kwargs)

    def forward(self, x, mask=None):
        return self.attn(x, x, x, attn_mask=mask)[0]


class Recurrent(nn.Module):
    def __init__(self, cls: type, **kwargs) -> None:
        super().__init__()
        self.rnn = cls(8, 16, **kwargs)

    def forward(self, x):
        return self.rnn(x)[0]


class CrossAttention(nn.Module):
    """scaled_dot_product_attention called inline: 7 queries over 3 keys, 2 heads of 8."""

    def __init__(self) -> None:
        super().__init__()
        self.q, self.kv = nn.Linear(D, D), nn.Linear(D, 2 * D)

    def forward(self, x, memory):
        q = self.q(x).view(B, 7, 2, 8).transpose(1, 2)
        k, v = self.kv(memory).view(B, 3, 2, 16).transpose(1, 2).split(8, dim=-1)
        return F.scaled_dot_product_attention(q, k, v)


def frozen(model: nn.Module, *parts: str) -> nn.Module:
    for name, p in model.named_parameters():
        if any(name.startswith(part) for part in parts):
            p.requires_grad_(False)
    return model


def test_frozen_or_bias_only_layers_count():
    x = torch.randn(B, 3, 16, 16)
    assert mult_adds(frozen(cnn(), "0."), x) == CONV  # no graph node: from its class
    assert mult_adds(frozen(cnn(), "2.weight"), x) == CONV  # the node's weight from what it saved
    assert mult_adds(frozen(cnn(), "0.weight"), x) == CONV  # bias-only: a node without its operands
    mlp = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 10))
    assert mult_adds(frozen(mlp, "0.weight"), torch.randn(8, 20)) == 8 * 20 * 32 + 8 * 32 * 10


def test_transposed_convolution():
    up = nn.Sequential(nn.ConvTranspose2d(3, 8, 3, stride=2), nn.ConvTranspose2d(8, 8, 3, stride=2, groups=2))
    x = torch.randn(B, 3, 16, 16)
    right = B * 3 * 16 * 16 * 8 * 9 + B * 8 * 33 * 33 * 4 * 9  # each input element: (out / groups) x kernel
    assert mult_adds(up, x) == right
    assert mult_adds(frozen(up, "0."), x) == right
    assert mult_adds(up, x, grad=False) == right


def test_no_grad_inference_counts_standard_layers():
    assert mult_adds(cnn(), torch.randn(B, 3, 16, 16), grad=False) == CONV
    assert mult_adds(Attention(), torch.randn(L, B, D), grad=False) == ATTENTION
    # eval mode: torch's fused inference path, need_weights (by default) gives the key length
    assert mult_adds(Attention(batch_first=True), torch.randn(B, L, D), grad=False, train=False) == ATTENTION
    encoder = nn.TransformerEncoderLayer(D, 2, dim_feedforward=32, dropout=0.0)  # sequence first
    assert mult_adds(encoder, torch.randn(L, B, D), grad=False) == ATTENTION + 2 * B * L * D * 32
    assert mult_adds(nn.LSTMCell(8, 16), torch.randn(S, 8), grad=False) == S * (64 * 8 + 64 * 16)
    transposed = nn.ConvTranspose2d(3, 8, 3, stride=2)
    assert mult_adds(transposed, torch.randn(B, 3, 16, 16), grad=False) == B * 3 * 16 * 16 * 8 * 9


@pytest.mark.parametrize(("cls", "gates"), [(nn.LSTM, 4), (nn.GRU, 3), (nn.RNN, 1)])
@pytest.mark.parametrize("grad", [True, False])
def test_deep_bidirectional_rnns(cls, gates, grad):
    per_direction = gates * 16 * 8 + gates * 16 * 16 + gates * 16 * 32 + gates * 16 * 16  # layers 0 and 1
    model = Recurrent(cls, num_layers=2, bidirectional=True, batch_first=True)
    assert mult_adds(model, torch.randn(S, T, 8), grad=grad) == S * T * 2 * per_direction


def test_onednn_lstm_node_is_counted():
    events = traced(Recurrent(nn.LSTM, batch_first=True), torch.randn(S, T, 8))
    if "MkldnnRnnLayerBackward0" not in ops(events):
        pytest.skip("torch ran the composite LSTM (no oneDNN)")
    assert summary_totals(events)["mult_adds"] == S * T * (64 * 8 + 64 * 16)
    # frozen weights, an input that needs a gradient: the node's saved parameters
    model = frozen(Recurrent(nn.LSTM, batch_first=True), "rnn.")
    assert mult_adds(model, torch.randn(S, T, 8, requires_grad=True)) == S * T * (64 * 8 + 64 * 16)


@pytest.mark.filterwarnings("ignore:LSTM with projections is not supported with oneDNN")
@pytest.mark.parametrize("grad", [True, False])
def test_lstm_with_projection(grad):
    projected = Recurrent(nn.LSTM, proj_size=4)
    assert mult_adds(projected, torch.randn(T, S, 8), grad=grad) == S * T * (64 * 8 + 64 * 4 + 4 * 16)


def test_fused_attention_is_counted():
    events = traced(CrossAttention(), torch.randn(B, 7, D), torch.randn(B, 3, D))
    assert any(op.startswith("ScaledDotProduct") for op in ops(events))
    projections = B * 7 * D * D + B * 3 * D * 2 * D
    assert summary_totals(events)["mult_adds"] == projections + B * 2 * 7 * 3 * (8 + 8)


def test_masked_attention_weights_are_counted():
    # need_weights with a mask: torch computes the scores with baddbmm(mask, q, k^T)
    mask = torch.triu(torch.full((L, L), float("-inf")), 1)
    events = traced(Attention(batch_first=True), torch.randn(B, L, D), mask)
    assert "BaddbmmBackward0" in ops(events)
    assert summary_totals(events)["mult_adds"] == ATTENTION
