"""A LLaMA-style character model as Meta's llama/model.py and its small ports (lit-llama, baby-llama)
write it: rotary position embeddings by complex multiplication (precompute_freqs_cis with
torch.outer + torch.polar, view_as_complex / view_as_real, reshape_for_broadcast), an RMSNorm module
with rsqrt, grouped-query attention with repeat_kv (expand + reshape), the scores by torch.einsum and
a causal mask from torch.triu(torch.full(..., -inf), diagonal=1), a SwiGLU feed-forward (F.silu(w1) *
w3), pre-norm blocks, an untied output head, AdamW with fused=False, and a SequentialLR chain of
LinearLR warmup then CosineAnnealingLR; greedy generation with torch.multinomial-free argmax."""

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB, BLOCK = 27, 16
DIM, N_LAYERS, N_HEADS, N_KV_HEADS = 32, 2, 4, 2


def precompute_freqs_cis(dim: int, end: int, theta: float = 10000.0):
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    t = torch.arange(end, device=freqs.device)
    freqs = torch.outer(t, freqs).float()
    return torch.polar(torch.ones_like(freqs), freqs)  # complex64


def reshape_for_broadcast(freqs_cis, x):
    ndim = x.ndim
    assert 0 <= 1 < ndim
    assert freqs_cis.shape == (x.shape[1], x.shape[-1])
    shape = [d if i == 1 or i == ndim - 1 else 1 for i, d in enumerate(x.shape)]
    return freqs_cis.view(*shape)


def apply_rotary_emb(xq, xk, freqs_cis):
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    freqs_cis = reshape_for_broadcast(freqs_cis, xq_)
    xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(3)
    xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


def repeat_kv(x, n_rep: int):
    bs, slen, n_kv_heads, head_dim = x.shape
    if n_rep == 1:
        return x
    return (x[:, :, :, None, :].expand(bs, slen, n_kv_heads, n_rep, head_dim)
            .reshape(bs, slen, n_kv_heads * n_rep, head_dim))


class RMSNorm(torch.nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        output = self._norm(x.float()).type_as(x)
        return output * self.weight


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.n_kv_heads = N_KV_HEADS
        self.n_local_heads = N_HEADS
        self.n_rep = N_HEADS // N_KV_HEADS
        self.head_dim = DIM // N_HEADS
        self.wq = nn.Linear(DIM, N_HEADS * self.head_dim, bias=False)
        self.wk = nn.Linear(DIM, self.n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(DIM, self.n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(N_HEADS * self.head_dim, DIM, bias=False)

    def forward(self, x, freqs_cis, mask):
        bsz, seqlen, _ = x.shape
        xq, xk, xv = self.wq(x), self.wk(x), self.wv(x)
        xq = xq.view(bsz, seqlen, self.n_local_heads, self.head_dim)
        xk = xk.view(bsz, seqlen, self.n_kv_heads, self.head_dim)
        xv = xv.view(bsz, seqlen, self.n_kv_heads, self.head_dim)
        xq, xk = apply_rotary_emb(xq, xk, freqs_cis=freqs_cis)
        keys = repeat_kv(xk, self.n_rep)
        values = repeat_kv(xv, self.n_rep)
        scores = torch.einsum("bqhd,bkhd->bhqk", xq, keys) / math.sqrt(self.head_dim)
        if mask is not None:
            scores = scores + mask
        scores = F.softmax(scores.float(), dim=-1).type_as(xq)
        output = torch.einsum("bhqk,bkhd->bqhd", scores, values)
        return self.wo(output.contiguous().view(bsz, seqlen, -1))


class FeedForward(nn.Module):
    def __init__(self, dim: int, hidden_dim: int, multiple_of: int = 16):
        super().__init__()
        hidden_dim = int(2 * hidden_dim / 3)
        hidden_dim = multiple_of * ((hidden_dim + multiple_of - 1) // multiple_of)
        self.w1 = nn.Linear(dim, hidden_dim, bias=False)
        self.w2 = nn.Linear(hidden_dim, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden_dim, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class TransformerBlock(nn.Module):
    def __init__(self, layer_id: int):
        super().__init__()
        self.layer_id = layer_id
        self.attention = Attention()
        self.feed_forward = FeedForward(DIM, 4 * DIM)
        self.attention_norm = RMSNorm(DIM)
        self.ffn_norm = RMSNorm(DIM)

    def forward(self, x, freqs_cis, mask):
        h = x + self.attention(self.attention_norm(x), freqs_cis, mask)
        return h + self.feed_forward(self.ffn_norm(h))


class Transformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok_embeddings = nn.Embedding(VOCAB, DIM)
        self.layers = torch.nn.ModuleList()
        for layer_id in range(N_LAYERS):
            self.layers.append(TransformerBlock(layer_id))
        self.norm = RMSNorm(DIM)
        self.output = nn.Linear(DIM, VOCAB, bias=False)
        self.freqs_cis = precompute_freqs_cis(DIM // N_HEADS, BLOCK * 2)

    def forward(self, tokens, targets=None):
        _bsz, seqlen = tokens.shape
        h = self.tok_embeddings(tokens)
        freqs_cis = self.freqs_cis[:seqlen]
        mask = None
        if seqlen > 1:
            mask = torch.full((seqlen, seqlen), float("-inf"), device=tokens.device)
            mask = torch.triu(mask, diagonal=1).type_as(h)
        for layer in self.layers:
            h = layer(h, freqs_cis, mask)
        logits = self.output(self.norm(h)).float()
        if targets is None:
            return logits, None
        return logits, F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))

    @torch.inference_mode()
    def generate(self, idx, max_new_tokens):
        for _ in range(max_new_tokens):
            logits, _ = self(idx[:, -BLOCK:])
            idx = torch.cat((idx, logits[:, -1, :].argmax(dim=-1, keepdim=True)), dim=1)
        return idx


def get_data():
    text = "a stitch in time saves nine and a rolling stone gathers no moss " * 8
    return {"ids": np.array([26 if c == " " else ord(c) - 97 for c in text], dtype=np.int64)}


def build():
    return Transformer()


def train(model, data, steps):
    ids = torch.from_numpy(data["ids"])
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, betas=(0.9, 0.95), weight_decay=0.1, fused=False)
    warmup = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=0.1, total_iters=3)
    decay = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=max(steps - 3, 1), eta_min=1e-4)
    scheduler = torch.optim.lr_scheduler.SequentialLR(optimizer, schedulers=[warmup, decay], milestones=[3])
    model.train()
    losses = []
    for step in range(steps):
        starts = (np.arange(4) * 29 + step * 7) % (len(ids) - BLOCK - 1)
        x = torch.stack([ids[s:s + BLOCK] for s in starts])
        y = torch.stack([ids[s + 1:s + BLOCK + 1] for s in starts])
        _, loss = model(x, y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
    out = model.generate(ids[:4].view(1, -1), 6)
    assert tuple(out.shape) == (1, 10) and out.dtype == torch.int64
    assert scheduler.get_last_lr()[0] <= 3e-3  # any step count: at 3 steps the cosine phase starts at the peak
    return losses
