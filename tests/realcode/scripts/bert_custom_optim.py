# ruff: noqa: UP008, B007, B023 - written the way torch code is written (closures over the loop batch)
"""A BERT-style encoder trained with a hand-written optimizer and an EMA of the weights:
the erf GELU of the original BERT code, a custom torch.optim.Optimizer subclass (Adam with
decoupled weight decay written with mul_/add_/addcmul_/addcdiv_ under @torch.no_grad(), state
per parameter, closure support), an exponential moving average kept with lerp_, the device and
determinism boilerplate (torch.backends, torch.accelerator), and masked-token prediction."""

import math

import numpy as np
import torch
import torch.backends.cudnn as cudnn
import torch.nn as nn
import torch.nn.functional as F
from torch.optim import Optimizer

DROPOUT = 0.1
VOCAB, MASK_ID, SEQ = 24, 1, 10


def gelu(x):
    """Original Google BERT GELU (erf form)."""
    return x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))


class BertLayer(nn.Module):
    def __init__(self, hidden=32, heads=4):
        super().__init__()
        self.attn = nn.MultiheadAttention(hidden, heads, dropout=DROPOUT, batch_first=True)
        self.ln1 = nn.LayerNorm(hidden, eps=1e-12)
        self.fc1 = nn.Linear(hidden, 4 * hidden)
        self.fc2 = nn.Linear(4 * hidden, hidden)
        self.ln2 = nn.LayerNorm(hidden, eps=1e-12)
        self.drop = nn.Dropout(DROPOUT)

    def forward(self, x, pad_mask):
        a, _ = self.attn(x, x, x, key_padding_mask=pad_mask, need_weights=False)
        x = self.ln1(x + self.drop(a))
        return self.ln2(x + self.drop(self.fc2(gelu(self.fc1(x)))))


class TinyBert(nn.Module):
    def __init__(self, hidden=32, layers=2):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, hidden, padding_idx=0)
        self.pos = nn.Parameter(torch.zeros(1, SEQ, hidden))
        self.layers = nn.ModuleList([BertLayer(hidden) for _ in range(layers)])
        self.head = nn.Linear(hidden, VOCAB)
        nn.init.normal_(self.pos, std=0.02)

    def forward(self, ids):
        pad_mask = ids == 0
        x = self.tok(ids) + self.pos[:, :ids.size(1)]
        for layer in self.layers:
            x = layer(x, pad_mask)
        return self.head(x)


class AdamWFromScratch(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                state["step"] += 1
                p.mul_(1 - group["lr"] * group["weight_decay"])
                exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                bias_correction1 = 1 - beta1 ** state["step"]
                bias_correction2 = 1 - beta2 ** state["step"]
                step_size = group["lr"] / bias_correction1
                denom = (exp_avg_sq.sqrt() / math.sqrt(bias_correction2)).add_(group["eps"])
                p.addcdiv_(exp_avg, denom, value=-step_size)
        return loss


class EMA:
    def __init__(self, model, decay=0.9):
        self.decay = decay
        self.shadow = {k: v.detach().clone() for k, v in model.state_dict().items()}

    @torch.no_grad()
    def update(self, model):
        for k, v in model.state_dict().items():
            if v.dtype.is_floating_point:
                self.shadow[k].lerp_(v, 1.0 - self.decay)
            else:
                self.shadow[k].copy_(v)


def get_data():
    rng = np.random.default_rng(13)
    ids = np.zeros((32, SEQ), dtype=np.int64)
    for n in range(32):
        length = int(rng.integers(5, SEQ + 1))
        start = int(rng.integers(2, VOCAB - SEQ))
        ids[n, :length] = np.arange(start, start + length)  # runs of consecutive tokens
    return {"ids": ids}


def mask_tokens(ids, step):
    rng = np.random.default_rng(100 + step)  # the same masking under both libraries
    chosen = torch.from_numpy(rng.random(tuple(ids.shape)) < 0.25) & (ids != 0)
    inputs = ids.masked_fill(chosen, MASK_ID)
    labels = torch.where(chosen, ids, torch.full_like(ids, -100))
    return inputs, labels


def build():
    return TinyBert()


def train(model, data, steps):
    cudnn.benchmark = True
    device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
    model = model.to(device)
    ids_all = torch.from_numpy(data["ids"])
    optimizer = AdamWFromScratch(model.parameters(), lr=3e-3, weight_decay=0.01)
    ema = EMA(model)
    losses = []
    for step in range(steps):
        model.train()
        ids = ids_all[(step * 8) % 32:(step * 8) % 32 + 8].to(device)
        inputs, labels = mask_tokens(ids, step)

        def closure():
            optimizer.zero_grad()
            logits = model(inputs)
            loss = F.cross_entropy(logits.view(-1, VOCAB), labels.view(-1), ignore_index=-100)
            loss.backward()
            return loss

        loss = optimizer.step(closure)
        ema.update(model)
        losses.append(loss.item())
    # evaluate the EMA weights on a copy of the model
    ema_model = build()
    ema_model.load_state_dict(ema.shadow)
    ema_model.eval()
    with torch.no_grad():
        inputs, labels = mask_tokens(ids_all, 999)
        logits = ema_model(inputs)
        ema_loss = F.cross_entropy(logits.view(-1, VOCAB), labels.view(-1))
    losses.append(ema_loss.item())
    assert len(optimizer.state) == len(list(model.parameters()))
    return losses
