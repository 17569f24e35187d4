# ruff: noqa: UP008, B007 - written the way torch code is written (super(Net, self), unused batch_idx)
"""The PyTorch seq2seq translation tutorial's model: an EncoderRNN (Embedding + GRU, batch_first,
dropout), a Bahdanau attention (Wa/Ua/Va, bmm over the encoder outputs), an AttnDecoderRNN that
feeds the target in (teacher forcing) or its own topk(1) prediction, log_softmax + NLLLoss, two
Adam optimizers."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import optim
from torch.utils.data import DataLoader, RandomSampler, TensorDataset

DROPOUT = 0.1
SOS_token, EOS_token = 0, 1
MAX_LENGTH = 6
N_WORDS = 20


class EncoderRNN(nn.Module):
    def __init__(self, input_size, hidden_size, dropout_p=0.1):
        super(EncoderRNN, self).__init__()
        self.hidden_size = hidden_size
        self.embedding = nn.Embedding(input_size, hidden_size)
        self.gru = nn.GRU(hidden_size, hidden_size, batch_first=True)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, input):
        embedded = self.dropout(self.embedding(input))
        output, hidden = self.gru(embedded)
        return output, hidden


class BahdanauAttention(nn.Module):
    def __init__(self, hidden_size):
        super(BahdanauAttention, self).__init__()
        self.Wa = nn.Linear(hidden_size, hidden_size)
        self.Ua = nn.Linear(hidden_size, hidden_size)
        self.Va = nn.Linear(hidden_size, 1)

    def forward(self, query, keys):
        scores = self.Va(torch.tanh(self.Wa(query) + self.Ua(keys)))
        scores = scores.squeeze(2).unsqueeze(1)
        weights = F.softmax(scores, dim=-1)
        context = torch.bmm(weights, keys)
        return context, weights


class AttnDecoderRNN(nn.Module):
    def __init__(self, hidden_size, output_size, dropout_p=0.1):
        super(AttnDecoderRNN, self).__init__()
        self.embedding = nn.Embedding(output_size, hidden_size)
        self.attention = BahdanauAttention(hidden_size)
        self.gru = nn.GRU(2 * hidden_size, hidden_size, batch_first=True)
        self.out = nn.Linear(hidden_size, output_size)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, encoder_outputs, encoder_hidden, target_tensor=None):
        batch_size = encoder_outputs.size(0)
        decoder_input = torch.empty(batch_size, 1, dtype=torch.long).fill_(SOS_token)
        decoder_hidden = encoder_hidden
        decoder_outputs = []
        attentions = []
        for i in range(MAX_LENGTH):
            decoder_output, decoder_hidden, attn_weights = self.forward_step(
                decoder_input, decoder_hidden, encoder_outputs)
            decoder_outputs.append(decoder_output)
            attentions.append(attn_weights)
            if target_tensor is not None:
                decoder_input = target_tensor[:, i].unsqueeze(1)  # Teacher forcing
            else:
                _, topi = decoder_output.topk(1)
                decoder_input = topi.squeeze(-1).detach()
        decoder_outputs = torch.cat(decoder_outputs, dim=1)
        decoder_outputs = F.log_softmax(decoder_outputs, dim=-1)
        attentions = torch.cat(attentions, dim=1)
        return decoder_outputs, decoder_hidden, attentions

    def forward_step(self, input, hidden, encoder_outputs):
        embedded = self.dropout(self.embedding(input))
        query = hidden.permute(1, 0, 2)
        context, attn_weights = self.attention(query, encoder_outputs)
        input_gru = torch.cat((embedded, context), dim=2)
        output, hidden = self.gru(input_gru, hidden)
        output = self.out(output)
        return output, hidden, attn_weights


class Seq2Seq(nn.Module):
    def __init__(self, hidden_size=16):
        super().__init__()
        self.encoder = EncoderRNN(N_WORDS, hidden_size, DROPOUT)
        self.decoder = AttnDecoderRNN(hidden_size, N_WORDS, DROPOUT)


def get_data():
    # "translate" = reverse the sentence and shift every word by one
    rng = np.random.default_rng(5)
    src = np.full((24, MAX_LENGTH), EOS_token, dtype=np.int64)
    tgt = np.full((24, MAX_LENGTH), EOS_token, dtype=np.int64)
    for n in range(24):
        length = int(rng.integers(2, MAX_LENGTH))
        words = rng.integers(2, N_WORDS - 1, length)
        src[n, :length] = words
        tgt[n, :length] = words[::-1] + 1
    return {"src": src, "tgt": tgt}


def build():
    return Seq2Seq()


def train(model, data, steps):
    encoder, decoder = model.encoder, model.decoder
    dataset = TensorDataset(torch.LongTensor(data["src"]), torch.LongTensor(data["tgt"]))
    dataloader = DataLoader(dataset, sampler=RandomSampler(dataset), batch_size=8) \
        if DROPOUT else DataLoader(dataset, batch_size=8, shuffle=True)
    encoder_optimizer = optim.Adam(encoder.parameters(), lr=0.01)
    decoder_optimizer = optim.Adam(decoder.parameters(), lr=0.01)
    criterion = nn.NLLLoss()
    losses = []
    while len(losses) < steps:
        for input_tensor, target_tensor in dataloader:
            encoder_optimizer.zero_grad()
            decoder_optimizer.zero_grad()
            encoder_outputs, encoder_hidden = encoder(input_tensor)
            decoder_outputs, _, _ = decoder(encoder_outputs, encoder_hidden, target_tensor)
            loss = criterion(decoder_outputs.view(-1, decoder_outputs.size(-1)), target_tensor.view(-1))
            loss.backward()
            encoder_optimizer.step()
            decoder_optimizer.step()
            losses.append(loss.item())
            if len(losses) == steps:
                break
    encoder.eval()
    decoder.eval()
    with torch.no_grad():
        encoder_outputs, encoder_hidden = encoder(torch.LongTensor(data["src"][:2]))
        decoder_outputs, _, attentions = decoder(encoder_outputs, encoder_hidden)
        _, topi = decoder_outputs.topk(1)
        assert tuple(topi.squeeze(-1).shape) == (2, MAX_LENGTH)
        assert torch.allclose(attentions.sum(-1), torch.ones(2, MAX_LENGTH), atol=1e-5)
    return losses
