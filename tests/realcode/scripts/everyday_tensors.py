# ruff: noqa: UP008, B007 - written the way torch code is written (super(Net, self), unused batch_idx)
"""Everyday tensor code around a small classifier: a Dataset subclass and TensorDataset,
random_split, a DataLoader with a custom collate_fn that pads variable-length rows, one_hot targets,
cat/stack/where/gather/masked_fill/clamp, argmax accuracy, a bag-of-embeddings model with
mean pooling over a mask, CrossEntropyLoss with label_smoothing, and a no_grad validation pass."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, random_split

DROPOUT = 0.1
VOCAB, N_CLASSES, PAD = 30, 3, 0


class Sentences(Dataset):
    def __init__(self, rows, labels):
        self.rows = rows
        self.labels = labels

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, idx):
        return torch.tensor(self.rows[idx], dtype=torch.long), int(self.labels[idx])


def pad_collate(batch):
    seqs, labels = zip(*batch)
    lengths = torch.tensor([len(s) for s in seqs])
    padded = torch.full((len(seqs), int(lengths.max())), PAD, dtype=torch.long)
    for i, s in enumerate(seqs):
        padded[i, :len(s)] = s
    return padded, lengths, torch.tensor(labels)


class BagModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 16, padding_idx=PAD)
        self.proj = nn.Sequential(nn.Linear(32, 32), nn.Tanh(), nn.Dropout(DROPOUT))
        self.head = nn.Linear(32, N_CLASSES)

    def forward(self, tokens, lengths):
        mask = torch.arange(tokens.size(1)).unsqueeze(0) < lengths.unsqueeze(1)
        e = self.emb(tokens)
        mean = (e * mask.unsqueeze(-1)).sum(1) / lengths.unsqueeze(1).clamp(min=1)
        mx = e.masked_fill(~mask.unsqueeze(-1), float("-inf")).max(dim=1).values
        return self.head(self.proj(torch.cat([mean, mx], dim=-1)))


def get_data():
    rng = np.random.default_rng(8)
    rows, labels = [], []
    for _ in range(60):
        label = int(rng.integers(N_CLASSES))
        length = int(rng.integers(3, 9))
        words = rng.integers(1, VOCAB, length)
        words[rng.random(length) < 0.5] = 1 + label * 9 + rng.integers(0, 9)
        rows.append(words.tolist())
        labels.append(label)
    return {"rows": rows, "labels": np.array(labels)}


def build():
    return BagModel()


def train(model, data, steps):
    dataset = Sentences(data["rows"], data["labels"])
    train_set, val_set = random_split(dataset, [48, 12], generator=torch.Generator().manual_seed(42))
    train_loader = DataLoader(train_set, batch_size=8, shuffle=True, collate_fn=pad_collate)
    val_loader = DataLoader(val_set, batch_size=6, collate_fn=pad_collate)
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    optimizer = torch.optim.RMSprop(model.parameters(), lr=3e-3, alpha=0.9)
    losses = []
    while len(losses) < steps:
        model.train()
        for tokens, lengths, labels in train_loader:
            logits = model(tokens, lengths)
            loss = criterion(logits, labels)
            # a soft-target term built by hand from one_hot, gather and where
            target = F.one_hot(labels, N_CLASSES).float()
            logp = F.log_softmax(logits, dim=-1)
            picked = logp.gather(1, labels.unsqueeze(1)).squeeze(1)
            assert torch.allclose(picked, (logp * target).sum(-1))
            confident = torch.where(picked.exp() > 0.9, torch.zeros_like(picked), -picked)
            loss = loss + 0.1 * confident.mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            if len(losses) == steps:
                break
    model.eval()
    correct, seen, val_losses = 0, 0, []
    with torch.no_grad():
        for tokens, lengths, labels in val_loader:
            logits = model(tokens, lengths)
            val_losses.append(F.cross_entropy(logits, labels, reduction="none"))
            correct += (logits.argmax(dim=1) == labels).sum().item()
            seen += labels.numel()
    all_val = torch.stack(val_losses).flatten()
    assert all_val.shape == (12,) and 0 <= correct <= seen == 12
    losses.append(all_val.mean().item())
    return losses
