"""The summary's totals on small hand-built copies of the zoo's architectures (issue 31's
real-model benchmark, ``bench/bench_zoo.py``, checks the full-size ones in its own venv): a
torchvision ResNet bottleneck (BatchNorm, a strided 1x1 downsample, ``ReLU(inplace=True)`` and
``out += identity``), a torchvision ViT encoder (patch convolution, class token, positional
embedding, ``nn.MultiheadAttention`` with ``need_weights=False``), a Hugging Face GPT-2 block
(``Conv1D`` as ``addmm``, causal attention written with matmuls and a ``masked_fill``, an LM head
tied to the token embedding) and a BERT layer (separate q/k/v projections, an additive padding
mask, a pooler). Each runs one forward and backward under ``modscope.trace`` on both backends,
and ``totals()`` must equal the counts worked out here by hand from the architecture, formulas
written out:

- parameters: every tensor of ``parameters()`` once (a tied weight once), no buffers;
- multiply-adds: one per multiply-accumulate of a matrix product or a convolution, over one
  forward (attention's ``QK^T`` and ``AV`` included); biases, normalisations, activations,
  softmax and embedding lookups add none.
"""

from __future__ import annotations

import math

import pytest

import modscope
from modscope.views.report import module_figures

# --- hand counts -----------------------------------------------------------------------------------


def conv_macs(batch: int, c_out: int, h_out: int, w_out: int, c_in: int, k: int) -> int:
    """Every output element is a dot product over c_in x k x k inputs."""
    return batch * c_out * h_out * w_out * c_in * k * k


def linear_macs(tokens: int, d_in: int, d_out: int) -> int:
    """Every output element is a dot product over d_in inputs."""
    return tokens * d_in * d_out


def attention_macs(batch: int, seq: int, width: int) -> int:
    """``QK^T``: batch x heads x seq x seq scores, each a dot product over width / heads; ``AV``:
    batch x heads x seq x (width / heads) outputs, each over seq. Both are batch x seq x seq x
    width whatever the number of heads."""
    return 2 * batch * seq * seq * width


def traced_totals(model, run) -> tuple[dict[str, int], dict]:
    """One forward and backward of ``run(model)`` (it returns the output) under a trace: the
    summary's totals and its per-module figures."""
    with modscope.trace(model) as tr:
        run(model).sum().backward()
    events = list(tr.events)
    return tr.totals(), module_figures(events)


def torch_param_count(model) -> int:
    return sum(p.numel() for p in model.parameters())  # parameters() yields a tied weight once


# --- ResNet bottleneck -----------------------------------------------------------------------------

N, SIDE = 2, 8  # batch 2 of 3x8x8 images
STEM, PLANES, EXPANSION, CLASSES = 16, 8, 4, 10


def resnet(lib):
    nn = lib.nn

    class Bottleneck(nn.Module):
        """torchvision's ``Bottleneck`` (v1.5: the stride on the 3x3 convolution)."""

        def __init__(self, inplanes: int, planes: int, stride: int) -> None:
            super().__init__()
            width = planes
            self.conv1 = nn.Conv2d(inplanes, width, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(width)
            self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(width)
            self.conv3 = nn.Conv2d(width, planes * EXPANSION, 1, bias=False)
            self.bn3 = nn.BatchNorm2d(planes * EXPANSION)
            self.relu = nn.ReLU(inplace=True)
            self.downsample = nn.Sequential(nn.Conv2d(inplanes, planes * EXPANSION, 1, stride=stride, bias=False),
                                            nn.BatchNorm2d(planes * EXPANSION))

        def forward(self, x):
            identity = x
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.relu(self.bn2(self.conv2(out)))
            out = self.bn3(self.conv3(out))
            identity = self.downsample(x)
            out += identity
            return self.relu(out)

    class ResNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(3, STEM, 3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(STEM)
            self.relu = nn.ReLU(inplace=True)
            self.layer1 = nn.Sequential(Bottleneck(STEM, PLANES, stride=2))
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(PLANES * EXPANSION, CLASSES)

        def forward(self, x):
            x = self.layer1(self.relu(self.bn1(self.conv1(x))))
            return self.fc(lib.flatten(self.avgpool(x), 1))

    return ResNet()


def test_resnet_bottleneck_totals_match_the_hand_count(lib):
    lib.manual_seed(0)
    model = resnet(lib)
    totals, figs = traced_totals(model, lambda m: m(lib.randn(N, 3, SIDE, SIDE)))
    out_c, half = PLANES * EXPANSION, SIDE // 2
    bn = 2  # weight and bias per channel; running statistics are buffers
    params = (3 * STEM * 3 * 3 + bn * STEM  # stem conv (no bias) and its BatchNorm
              + STEM * PLANES + bn * PLANES  # conv1 1x1 and bn1
              + PLANES * PLANES * 3 * 3 + bn * PLANES  # conv2 3x3 and bn2
              + PLANES * out_c + bn * out_c  # conv3 1x1 and bn3
              + STEM * out_c + bn * out_c  # downsample: 1x1 stride 2 and its BatchNorm
              + out_c * CLASSES + CLASSES)  # fc
    assert params == 2426 == torch_param_count(model)
    block = (conv_macs(N, PLANES, SIDE, SIDE, STEM, 1)  # conv1 at full resolution
             + conv_macs(N, PLANES, half, half, PLANES, 3)  # conv2 strided: half the side
             + conv_macs(N, out_c, half, half, PLANES, 1)  # conv3
             + conv_macs(N, out_c, half, half, STEM, 1))  # downsample
    macs = conv_macs(N, STEM, SIDE, SIDE, 3, 3) + block + linear_macs(N, out_c, CLASSES)
    assert macs == 115_328
    assert totals == {"params": params, "trainable": params, "mult_adds": macs}
    assert figs["layer1.0"]["macs"] == block
    assert figs["layer1.0.downsample"]["macs"] == conv_macs(N, out_c, half, half, STEM, 1)


# --- ViT encoder -----------------------------------------------------------------------------------

PATCH, WIDTH, HEADS, MLP = 4, 16, 2, 64
PATCHES = (SIDE // PATCH) ** 2
TOKENS = PATCHES + 1  # and the class token


def vit(lib, need_weights: bool = False):
    nn = lib.nn

    class EncoderBlock(nn.Module):
        """torchvision's ``EncoderBlock``: pre-norm attention and MLP, each with a residual."""

        def __init__(self) -> None:
            super().__init__()
            self.ln_1 = nn.LayerNorm(WIDTH, eps=1e-6)
            self.self_attention = nn.MultiheadAttention(WIDTH, HEADS, batch_first=True)
            self.dropout = nn.Dropout(0.0)
            self.ln_2 = nn.LayerNorm(WIDTH, eps=1e-6)
            self.mlp = nn.Sequential(nn.Linear(WIDTH, MLP), nn.GELU(), nn.Dropout(0.0), nn.Linear(MLP, WIDTH),
                                     nn.Dropout(0.0))

        def forward(self, x):
            y = self.ln_1(x)
            y, _ = self.self_attention(y, y, y, need_weights=need_weights)
            x = self.dropout(y) + x
            return x + self.mlp(self.ln_2(x))

    class VisionTransformer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv_proj = nn.Conv2d(3, WIDTH, PATCH, stride=PATCH)
            self.class_token = nn.Parameter(lib.zeros(1, 1, WIDTH))
            self.pos_embedding = nn.Parameter(lib.randn(1, TOKENS, WIDTH) * 0.02)
            self.layers = nn.Sequential(EncoderBlock())
            self.ln = nn.LayerNorm(WIDTH, eps=1e-6)
            self.head = nn.Linear(WIDTH, CLASSES)

        def forward(self, x):
            n = x.shape[0]
            x = self.conv_proj(x).reshape(n, WIDTH, PATCHES).permute(0, 2, 1)
            x = lib.cat([self.class_token.expand(n, -1, -1), x], dim=1) + self.pos_embedding
            x = self.ln(self.layers(x))
            return self.head(x[:, 0])

    return VisionTransformer()


@pytest.mark.parametrize("need_weights", [False, True], ids=["fused", "weights"])
def test_vit_encoder_totals_count_the_attention_matmuls(lib, need_weights):
    """torchvision asks for no weights (torch then runs ``scaled_dot_product_attention``, one fused
    node); with weights, torch's attention is ``bmm`` nodes: the same count either way."""
    lib.manual_seed(0)
    model = vit(lib, need_weights)
    totals, figs = traced_totals(model, lambda m: m(lib.randn(N, 3, SIDE, SIDE)))
    ln = 2 * WIDTH
    attention_params = 3 * WIDTH * WIDTH + 3 * WIDTH + WIDTH * WIDTH + WIDTH  # in_proj (q, k, v) and out_proj
    params = (3 * PATCH * PATCH * WIDTH + WIDTH  # patch convolution with bias
              + WIDTH + TOKENS * WIDTH  # class token, positional embedding
              + ln + attention_params + ln  # ln_1, attention, ln_2
              + WIDTH * MLP + MLP + MLP * WIDTH + WIDTH  # MLP
              + ln + WIDTH * CLASSES + CLASSES)  # final LayerNorm, head
    assert params == 4362 == torch_param_count(model)
    tokens = N * TOKENS
    attention = (linear_macs(tokens, WIDTH, 3 * WIDTH)  # q, k, v projections
                 + attention_macs(N, TOKENS, WIDTH)  # QK^T and AV over both heads
                 + linear_macs(tokens, WIDTH, WIDTH))  # out_proj
    macs = (conv_macs(N, WIDTH, SIDE // PATCH, SIDE // PATCH, 3, PATCH)
            + attention + 2 * linear_macs(tokens, WIDTH, MLP)  # MLP: up and down
            + linear_macs(N, WIDTH, CLASSES))  # the head reads the class token alone
    assert macs == 38_784
    assert totals == {"params": params, "trainable": params, "mult_adds": macs}
    assert figs["layers.0.self_attention"]["macs"] == attention


# --- GPT-2 block -----------------------------------------------------------------------------------

VOCAB, POSITIONS, SEQ = 50, 8, 6  # 6 tokens of a context of 8


def gpt2(lib, sdpa: bool = False):
    """``sdpa``: attention by ``F.scaled_dot_product_attention(is_causal=True)`` (transformers'
    default implementation) instead of matmuls (its ``eager`` one)."""
    nn = lib.nn
    F = lib.nn.functional

    class Conv1D(nn.Module):
        """Hugging Face's ``Conv1D``: a linear layer with its weight transposed, run as addmm."""

        def __init__(self, nf: int, nx: int) -> None:
            super().__init__()
            self.nf = nf
            self.weight = nn.Parameter(lib.randn(nx, nf) * 0.02)
            self.bias = nn.Parameter(lib.zeros(nf))

        def forward(self, x):
            size_out = x.size()[:-1] + (self.nf,)
            return lib.addmm(self.bias, x.view(-1, x.size(-1)), self.weight).view(size_out)

    class Attention(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.c_attn = Conv1D(3 * WIDTH, WIDTH)
            self.c_proj = Conv1D(WIDTH, WIDTH)
            self.register_buffer("bias", lib.tril(lib.ones(POSITIONS, POSITIONS)).view(1, 1, POSITIONS, POSITIONS),
                                 persistent=False)

        def forward(self, x):
            b, t, _ = x.shape
            q, k, v = self.c_attn(x).split(WIDTH, dim=2)
            q, k, v = (z.view(b, t, HEADS, WIDTH // HEADS).transpose(1, 2) for z in (q, k, v))
            if sdpa:
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                return self.c_proj(y.transpose(1, 2).contiguous().view(b, t, WIDTH))
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(WIDTH // HEADS))
            att = att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf"))
            y = F.softmax(att, dim=-1) @ v
            return self.c_proj(y.transpose(1, 2).contiguous().view(b, t, WIDTH))

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln_1 = nn.LayerNorm(WIDTH)
            self.attn = Attention()
            self.ln_2 = nn.LayerNorm(WIDTH)
            self.c_fc = Conv1D(4 * WIDTH, WIDTH)
            self.c_proj = Conv1D(WIDTH, 4 * WIDTH)

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.c_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))

    class GPT2Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.wte = nn.Embedding(VOCAB, WIDTH)
            self.wpe = nn.Embedding(POSITIONS, WIDTH)
            self.h = nn.ModuleList([Block()])
            self.ln_f = nn.LayerNorm(WIDTH)

        def forward(self, ids):
            x = self.wte(ids) + self.wpe(lib.arange(ids.shape[1]))
            for block in self.h:
                x = block(x)
            return self.ln_f(x)

    class GPT2LMHeadModel(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.transformer = GPT2Model()
            self.lm_head = nn.Linear(WIDTH, VOCAB, bias=False)
            self.lm_head.weight = self.transformer.wte.weight  # tied, as Hugging Face ties them

        def forward(self, ids):
            return self.lm_head(self.transformer(ids))

    return GPT2LMHeadModel()


def token_ids(lib, vocab: int):
    return lib.tensor([[(7 * i + 3 * j) % vocab for j in range(SEQ)] for i in range(N)])


@pytest.mark.parametrize("sdpa", [False, True], ids=["matmul", "sdpa"])
def test_gpt2_block_counts_the_tied_head_once_in_params_and_its_product_in_mult_adds(lib, sdpa):
    lib.manual_seed(0)
    model = gpt2(lib, sdpa)
    assert model.lm_head.weight is model.transformer.wte.weight
    totals, figs = traced_totals(model, lambda m: m(token_ids(lib, VOCAB)))
    ln = 2 * WIDTH
    params = (VOCAB * WIDTH + POSITIONS * WIDTH  # wte (also the LM head's weight: once), wpe
              + ln + WIDTH * 3 * WIDTH + 3 * WIDTH + WIDTH * WIDTH + WIDTH  # ln_1, c_attn, attn.c_proj
              + ln + WIDTH * 4 * WIDTH + 4 * WIDTH + 4 * WIDTH * WIDTH + WIDTH  # ln_2, c_fc, c_proj
              + ln)  # ln_f; lm_head has no weight of its own and no bias
    assert params == 4240 == torch_param_count(model)
    tokens = N * SEQ
    attention = (linear_macs(tokens, WIDTH, 3 * WIDTH)  # c_attn
                 + attention_macs(N, SEQ, WIDTH)  # q @ k^T and att @ v, every position (a mask zeroes, never skips)
                 + linear_macs(tokens, WIDTH, WIDTH))  # c_proj
    head = linear_macs(tokens, WIDTH, VOCAB)  # lm_head: the tied weight's product counts every call
    macs = attention + 2 * linear_macs(tokens, WIDTH, 4 * WIDTH) + head
    assert macs == 48_768
    assert totals == {"params": params, "trainable": params, "mult_adds": macs}
    assert figs["transformer.h.0.attn"]["macs"] == attention
    assert figs["lm_head"]["macs"] == head


# --- BERT layer ------------------------------------------------------------------------------------

BERT_VOCAB, TYPES, INTERMEDIATE = 40, 2, 64


def bert(lib):
    nn = lib.nn
    F = lib.nn.functional

    class Embeddings(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.word_embeddings = nn.Embedding(BERT_VOCAB, WIDTH, padding_idx=0)
            self.position_embeddings = nn.Embedding(POSITIONS, WIDTH)
            self.token_type_embeddings = nn.Embedding(TYPES, WIDTH)
            self.LayerNorm = nn.LayerNorm(WIDTH, eps=1e-12)
            self.dropout = nn.Dropout(0.1)

        def forward(self, ids):
            t = ids.shape[1]
            x = (self.word_embeddings(ids) + self.position_embeddings(lib.arange(t))
                 + self.token_type_embeddings(lib.zeros_like(ids)))
            return self.dropout(self.LayerNorm(x))

    class SelfAttention(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.query, self.key, self.value = (nn.Linear(WIDTH, WIDTH) for _ in range(3))
            self.dropout = nn.Dropout(0.1)

        def forward(self, x, mask):
            b, t, _ = x.shape
            q, k, v = (lin(x).view(b, t, HEADS, WIDTH // HEADS).transpose(1, 2)
                       for lin in (self.query, self.key, self.value))
            scores = lib.matmul(q, k.transpose(-1, -2)) / math.sqrt(WIDTH // HEADS) + mask
            context = lib.matmul(self.dropout(F.softmax(scores, dim=-1)), v)
            return context.permute(0, 2, 1, 3).contiguous().view(b, t, WIDTH)

    class DenseLayerNorm(nn.Module):
        """``BertSelfOutput`` / ``BertOutput``: dense, dropout, LayerNorm of the residual sum."""

        def __init__(self, d_in: int) -> None:
            super().__init__()
            self.dense = nn.Linear(d_in, WIDTH)
            self.LayerNorm = nn.LayerNorm(WIDTH, eps=1e-12)
            self.dropout = nn.Dropout(0.1)

        def forward(self, x, residual):
            return self.LayerNorm(self.dropout(self.dense(x)) + residual)

    class Layer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.attention = nn.ModuleDict({"self": SelfAttention(), "output": DenseLayerNorm(WIDTH)})
            self.intermediate = nn.Linear(WIDTH, INTERMEDIATE)
            self.output = DenseLayerNorm(INTERMEDIATE)

        def forward(self, x, mask):
            a = self.attention["output"](self.attention["self"](x, mask), x)
            return self.output(F.gelu(self.intermediate(a)), a)

    class Bert(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embeddings = Embeddings()
            self.encoder = nn.ModuleList([Layer()])
            self.pooler = nn.Linear(WIDTH, WIDTH)

        def forward(self, ids):
            # padding (id 0) masked with a large negative added to the scores: [N, 1, 1, T]
            mask = (1.0 - (ids != 0).float())[:, None, None, :] * -10000.0
            x = self.embeddings(ids)
            for layer in self.encoder:
                x = layer(x, mask)
            return lib.tanh(self.pooler(x[:, 0]))

    return Bert()


def test_bert_layer_totals_match_the_hand_count(lib):
    lib.manual_seed(0)
    model = bert(lib)
    ids = token_ids(lib, BERT_VOCAB)
    ids[1, -2:] = 0  # two padding tokens
    totals, figs = traced_totals(model, lambda m: m(ids))
    ln = 2 * WIDTH
    dense = WIDTH * WIDTH + WIDTH
    params = ((BERT_VOCAB + POSITIONS + TYPES) * WIDTH + ln  # embeddings and their LayerNorm
              + 3 * dense + dense + ln  # query, key, value; attention output dense and LayerNorm
              + WIDTH * INTERMEDIATE + INTERMEDIATE  # intermediate
              + INTERMEDIATE * WIDTH + WIDTH + ln  # output dense and LayerNorm
              + dense)  # pooler
    assert params == 4384 == torch_param_count(model)
    tokens = N * SEQ
    self_attention = 3 * linear_macs(tokens, WIDTH, WIDTH) + attention_macs(N, SEQ, WIDTH)
    macs = (self_attention + linear_macs(tokens, WIDTH, WIDTH)  # attention output dense
            + linear_macs(tokens, WIDTH, INTERMEDIATE) + linear_macs(tokens, INTERMEDIATE, WIDTH)
            + linear_macs(N, WIDTH, WIDTH))  # pooler on the first token
    assert macs == 39_680
    assert totals == {"params": params, "trainable": params, "mult_adds": macs}
    assert figs["encoder.0.attention.self"]["macs"] == self_attention
