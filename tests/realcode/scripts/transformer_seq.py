# ruff: noqa: UP008, B007 - written the way torch code is written (super(Net, self), unused batch_idx)
"""pytorch/examples' word_language_model TransformerModel plus a decoder, as in the "Language
Translation with nn.Transformer" tutorial: sinusoidal PositionalEncoding registered as a buffer,
nn.Transformer (encoder + decoder layers, batch_first, GELU, norm_first) with
generate_square_subsequent_mask, src/tgt key padding masks, a Seq2SeqTransformer with a generator
head, CrossEntropyLoss(ignore_index=PAD), Adam(betas=(0.9, 0.98), eps=1e-9), and greedy decoding."""

import math

import numpy as np
import torch
import torch.nn as nn
from torch import Tensor

DROPOUT = 0.1
PAD_IDX, BOS_IDX, EOS_IDX = 0, 1, 2
VOCAB, EMB = 16, 32


class PositionalEncoding(nn.Module):
    def __init__(self, emb_size: int, dropout: float, maxlen: int = 64):
        super().__init__()
        den = torch.exp(- torch.arange(0, emb_size, 2) * math.log(10000) / emb_size)
        pos = torch.arange(0, maxlen).reshape(maxlen, 1)
        pos_embedding = torch.zeros((maxlen, emb_size))
        pos_embedding[:, 0::2] = torch.sin(pos * den)
        pos_embedding[:, 1::2] = torch.cos(pos * den)
        pos_embedding = pos_embedding.unsqueeze(0)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("pos_embedding", pos_embedding)

    def forward(self, token_embedding: Tensor):
        return self.dropout(token_embedding + self.pos_embedding[:, :token_embedding.size(1), :])


class TokenEmbedding(nn.Module):
    def __init__(self, vocab_size: int, emb_size):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, emb_size)
        self.emb_size = emb_size

    def forward(self, tokens: Tensor):
        return self.embedding(tokens.long()) * math.sqrt(self.emb_size)


class Seq2SeqTransformer(nn.Module):
    def __init__(self, num_layers=2, nhead=4, dim_feedforward=64):
        super().__init__()
        self.transformer = nn.Transformer(d_model=EMB, nhead=nhead, num_encoder_layers=num_layers,
                                          num_decoder_layers=num_layers, dim_feedforward=dim_feedforward,
                                          dropout=DROPOUT, activation="gelu", batch_first=True,
                                          norm_first=True)
        self.generator = nn.Linear(EMB, VOCAB)
        self.src_tok_emb = TokenEmbedding(VOCAB, EMB)
        self.tgt_tok_emb = TokenEmbedding(VOCAB, EMB)
        self.positional_encoding = PositionalEncoding(EMB, dropout=DROPOUT)

    def forward(self, src, trg, tgt_mask, src_padding_mask, tgt_padding_mask):
        src_emb = self.positional_encoding(self.src_tok_emb(src))
        tgt_emb = self.positional_encoding(self.tgt_tok_emb(trg))
        outs = self.transformer(src_emb, tgt_emb, src_mask=None, tgt_mask=tgt_mask,
                                src_key_padding_mask=src_padding_mask,
                                tgt_key_padding_mask=tgt_padding_mask,
                                memory_key_padding_mask=src_padding_mask, tgt_is_causal=True)
        return self.generator(outs)

    def encode(self, src, src_padding_mask=None):
        return self.transformer.encoder(self.positional_encoding(self.src_tok_emb(src)),
                                        src_key_padding_mask=src_padding_mask)

    def decode(self, tgt, memory, tgt_mask):
        return self.transformer.decoder(self.positional_encoding(self.tgt_tok_emb(tgt)), memory, tgt_mask)


def create_mask(src, tgt):
    tgt_seq_len = tgt.shape[1]
    tgt_mask = nn.Transformer.generate_square_subsequent_mask(tgt_seq_len)
    src_padding_mask = src == PAD_IDX
    tgt_padding_mask = tgt == PAD_IDX
    return tgt_mask, src_padding_mask, tgt_padding_mask


def greedy_decode(model, src, max_len):
    memory = model.encode(src)
    ys = torch.ones(1, 1).fill_(BOS_IDX).type(torch.long)
    for _ in range(max_len - 1):
        tgt_mask = nn.Transformer.generate_square_subsequent_mask(ys.size(1)).type(torch.bool)
        out = model.decode(ys, memory, tgt_mask)
        prob = model.generator(out[:, -1])
        _, next_word = torch.max(prob, dim=1)
        ys = torch.cat([ys, torch.ones(1, 1).type_as(src.data).fill_(next_word.item())], dim=1)
        if next_word.item() == EOS_IDX:
            break
    return ys


def get_data():
    # copy task with padding: tgt = BOS + sorted(src) + EOS
    rng = np.random.default_rng(10)
    src = np.full((32, 7), PAD_IDX, dtype=np.int64)
    tgt = np.full((32, 9), PAD_IDX, dtype=np.int64)
    for n in range(32):
        length = int(rng.integers(3, 8))
        words = rng.integers(3, VOCAB, length)
        src[n, :length] = words
        tgt[n, :length + 2] = [BOS_IDX, *sorted(words), EOS_IDX]
    return {"src": src, "tgt": tgt}


def build():
    model = Seq2SeqTransformer()
    for p in model.parameters():
        if p.dim() > 1:
            nn.init.xavier_uniform_(p)
    return model


def train(model, data, steps):
    loss_fn = torch.nn.CrossEntropyLoss(ignore_index=PAD_IDX)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.98), eps=1e-9)
    src_all, tgt_all = torch.from_numpy(data["src"]), torch.from_numpy(data["tgt"])
    losses = []
    model.train()
    for step in range(steps):
        lo = (step * 8) % 32
        src, tgt = src_all[lo:lo + 8], tgt_all[lo:lo + 8]
        tgt_input = tgt[:, :-1]
        tgt_mask, src_padding_mask, tgt_padding_mask = create_mask(src, tgt_input)
        logits = model(src, tgt_input, tgt_mask, src_padding_mask, tgt_padding_mask)
        optimizer.zero_grad()
        tgt_out = tgt[:, 1:]
        loss = loss_fn(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        out = greedy_decode(model, src_all[:1, :5], max_len=8)
    assert out.dtype == torch.long and out[0, 0].item() == BOS_IDX and out.size(1) <= 8
    return losses
