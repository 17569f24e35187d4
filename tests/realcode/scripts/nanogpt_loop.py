# ruff: noqa: UP008, B007 - written the way torch code is written (super(Net, self), unused batch_idx)
"""nanoGPT's model and train.py loop, at toy size: flash attention through
F.scaled_dot_product_attention(is_causal=True), the device/dtype/autocast/GradScaler boilerplate
(ctx = nullcontext() on CPU, torch.cuda.amp.GradScaler(enabled=(dtype == 'float16')), tf32 flags),
batches drawn with torch.randint, gradient accumulation through scaler.scale/unscale_/step/update,
the hand-set cosine learning rate in every param_group, estimate_loss under @torch.no_grad()."""

import math
from contextlib import nullcontext

import numpy as np
import torch
import torch.nn as nn
from torch.nn import functional as F

DROPOUT = 0.1
BLOCK, VOCAB = 16, 32


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd, bias=False)
        self.c_proj = nn.Linear(n_embd, n_embd, bias=False)
        self.resid_dropout = nn.Dropout(DROPOUT)
        self.n_head, self.n_embd, self.dropout = n_head, n_embd, DROPOUT

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        y = torch.nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=None, dropout_p=self.dropout if self.training else 0, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class Block(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd, bias=False)
        self.attn = CausalSelfAttention(n_embd, n_head)
        self.ln_2 = nn.LayerNorm(n_embd, bias=False)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd, bias=False), nn.GELU(),
                                 nn.Linear(4 * n_embd, n_embd, bias=False), nn.Dropout(DROPOUT))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, n_layer=2, n_head=2, n_embd=32):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, n_embd)
        self.wpe = nn.Embedding(BLOCK, n_embd)
        self.h = nn.ModuleList([Block(n_embd, n_head) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd, bias=False)
        self.lm_head = nn.Linear(n_embd, VOCAB, bias=False)
        self.wte.weight = self.lm_head.weight
        self.n_params = sum(p.numel() for p in self.parameters())

    def forward(self, idx, targets=None):
        pos = torch.arange(0, idx.size(1), dtype=torch.long, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        return logits, loss


def get_data():
    rng = np.random.default_rng(15)
    tokens = (np.cumsum(rng.integers(1, 4, 3000)) % VOCAB).astype(np.uint16)  # like nanoGPT's .bin
    return {"train": tokens[:2500], "val": tokens[2500:]}


def build():
    return GPT()


def train(model, data, steps):
    device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = "bfloat16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "float16"
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    device_type = "cuda" if "cuda" in device else "cpu"
    # nanoGPT's dict also names torch.bfloat16, which the engine lacks (NumPy has no bfloat16)
    ptdtype = {"float32": torch.float32, "float16": torch.float16}.get(dtype)
    ctx = nullcontext() if device_type == "cpu" else torch.amp.autocast(device_type=device_type, dtype=ptdtype)
    batch_size, gradient_accumulation_steps, grad_clip = 4, 2, 1.0
    learning_rate, min_lr, warmup_iters, lr_decay_iters = 6e-3, 6e-4, 2, steps

    def get_batch(split):
        d = data[split]
        ix = torch.randint(len(d) - BLOCK, (batch_size,))
        x = torch.stack([torch.from_numpy((d[i:i + BLOCK]).astype(np.int64)) for i in ix])
        y = torch.stack([torch.from_numpy((d[i + 1:i + 1 + BLOCK]).astype(np.int64)) for i in ix])
        return x.to(device), y.to(device)

    def get_lr(it):
        if it < warmup_iters:
            return learning_rate * (it + 1) / (warmup_iters + 1)
        decay_ratio = (it - warmup_iters) / (lr_decay_iters - warmup_iters)
        coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio))
        return min_lr + coeff * (learning_rate - min_lr)

    @torch.no_grad()
    def estimate_loss():
        model.eval()
        losses = torch.zeros(3)
        for k in range(3):
            X, Y = get_batch("val")
            with ctx:
                _, loss = model(X, Y)
            losses[k] = loss.item()
        model.train()
        return losses.mean()

    scaler = torch.cuda.amp.GradScaler(enabled=(dtype == "float16"))
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate, betas=(0.9, 0.95), weight_decay=0.1)
    X, Y = get_batch("train")
    out = []
    for iter_num in range(steps):
        lr = get_lr(iter_num)
        for param_group in optimizer.param_groups:
            param_group["lr"] = lr
        for micro_step in range(gradient_accumulation_steps):
            with ctx:
                logits, loss = model(X, Y)
                loss = loss / gradient_accumulation_steps
            X, Y = get_batch("train")
            scaler.scale(loss).backward()
        if grad_clip != 0.0:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        out.append(loss.item() * gradient_accumulation_steps)
    out.append(estimate_loss().item())
    return out
