"""A nanoGPT-style stack trained the way memory-bound public code trains it: every block run through
torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False), an EMA of the weights kept by
torch.optim.swa_utils.AveragedModel(multi_avg_fn=get_ema_multi_avg_fn(0.99)), clip_grad_norm_,
AdamW with decay/no-decay groups, linear warmup + cosine decay via LambdaLR, and the EMA model's
loss on a held-out batch at the end (returned after the training losses)."""

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn
from torch.utils.checkpoint import checkpoint

DROPOUT = 0.1
VOCAB, BLOCK = 31, 12


class Block(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = nn.MultiheadAttention(n_embd, n_head, dropout=DROPOUT, batch_first=True)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(),
                                 nn.Linear(4 * n_embd, n_embd), nn.Dropout(DROPOUT))

    def forward(self, x):
        T = x.size(1)
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        h = self.ln_1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, n_layer=3, n_head=2, n_embd=32):
        super().__init__()
        self.tok_emb = nn.Embedding(VOCAB, n_embd)
        self.pos_emb = nn.Parameter(torch.zeros(1, BLOCK, n_embd))
        self.blocks = nn.ModuleList([Block(n_embd, n_head) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.head = nn.Linear(n_embd, VOCAB, bias=False)
        self.grad_checkpointing = True

    def forward(self, idx, targets=None):
        x = self.tok_emb(idx) + self.pos_emb[:, : idx.size(1)]
        for block in self.blocks:
            if self.grad_checkpointing and self.training:
                x = checkpoint(block, x, use_reentrant=False)
            else:
                x = block(x)
        logits = self.head(self.ln_f(x))
        if targets is None:
            return logits, None
        return logits, F.cross_entropy(logits.view(-1, VOCAB), targets.view(-1))


def get_data():
    rng = np.random.default_rng(11)
    # a noisy counting language: next token = token + 1 (mod VOCAB) most of the time
    start = rng.integers(0, VOCAB, (40, 1))
    seq = (start + np.arange(BLOCK + 1)) % VOCAB
    noise = rng.random(seq.shape) < 0.1
    seq = np.where(noise, rng.integers(0, VOCAB, seq.shape), seq)
    return {"x": seq[:, :-1].astype(np.int64), "y": seq[:, 1:].astype(np.int64)}


def build():
    return GPT()


def configure_optimizers(model, lr):
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2 and "pos_emb" not in n]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2 or "pos_emb" in n]
    return torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                              {"params": no_decay, "weight_decay": 0.0}], lr=lr, betas=(0.9, 0.95))


def train(model, data, steps):
    x, y = torch.from_numpy(data["x"]), torch.from_numpy(data["y"])
    optimizer = configure_optimizers(model, 3e-3)
    warmup = 2

    def lr_lambda(step):
        if step < warmup:
            return (step + 1) / warmup
        progress = (step - warmup) / max(1, steps - warmup)
        return 0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * progress))

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda)
    ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.9))
    losses = []
    model.train()
    for _ in range(steps):
        idx = torch.randint(0, 32, (8,))
        _, loss = model(x[idx], y[idx])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        ema.update_parameters(model)
        losses.append(loss.item())
    assert int(ema.n_averaged) == steps
    ema.eval()
    with torch.no_grad():
        _, held_out = ema.module(x[32:], y[32:])
    losses.append(held_out.item())
    return losses
