# ruff: noqa: UP008, B007 - written the way torch code is written (super(Net, self), unused batch_idx)
"""pytorch/examples' word_language_model: RNNModel (Embedding, LSTM, Dropout, decoder with tied
weights), batchify/get_batch, hidden states repackaged (detached) between batches, log_softmax +
NLLLoss over flattened logits, clip_grad_norm_ and the hand-written SGD update on p.data."""

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

DROPOUT = 0.2
NTOKEN, BPTT = 50, 7


class RNNModel(nn.Module):
    def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, dropout=0.5, tie_weights=False):
        super(RNNModel, self).__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        if tie_weights:
            if nhid != ninp:
                raise ValueError("When using the tied flag, nhid must be equal to emsize")
            self.decoder.weight = self.encoder.weight
        self.init_weights()
        self.rnn_type = rnn_type
        self.nhid = nhid
        self.nlayers = nlayers

    def init_weights(self):
        initrange = 0.1
        nn.init.uniform_(self.encoder.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output)
        decoded = decoded.view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        if self.rnn_type == "LSTM":
            return (weight.new_zeros(self.nlayers, bsz, self.nhid),
                    weight.new_zeros(self.nlayers, bsz, self.nhid))
        return weight.new_zeros(self.nlayers, bsz, self.nhid)


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    data = data.view(bsz, -1).t().contiguous()
    return data


def repackage_hidden(h):
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def get_batch(source, i):
    seq_len = min(BPTT, len(source) - 1 - i)
    data = source[i:i + seq_len]
    target = source[i + 1:i + 1 + seq_len].view(-1)
    return data, target


def get_data():
    rng = np.random.default_rng(1)
    # a corpus with structure: each word is mostly followed by (3 * word + 1) mod NTOKEN
    words = [0]
    for _ in range(400):
        words.append((3 * words[-1] + 1) % NTOKEN if rng.random() < 0.8 else int(rng.integers(NTOKEN)))
    return {"ids": np.array(words, dtype=np.int64)}


def build():
    return RNNModel("LSTM", NTOKEN, 16, 16, 2, dropout=DROPOUT, tie_weights=True)


def train(model, data, steps):
    train_data = batchify(torch.tensor(data["ids"]), 4)
    criterion = nn.NLLLoss()
    lr, clip = 5.0, 0.25
    model.train()
    hidden = model.init_hidden(4)
    losses = []
    i = 0
    while len(losses) < steps:
        if i >= train_data.size(0) - 2:
            i = 0
            hidden = model.init_hidden(4)
        x, targets = get_batch(train_data, i)
        hidden = repackage_hidden(hidden)
        model.zero_grad()
        output, hidden = model(x, hidden)
        loss = criterion(output, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-lr)
        losses.append(loss.item())
        i += BPTT
    assert math.isfinite(math.exp(losses[-1]))  # perplexity
    return losses
