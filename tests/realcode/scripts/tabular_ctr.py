"""A tabular click-through model in the style of fastai's TabularModel / Kaggle DLRM baselines:
an nn.Embedding per categorical column (fastai's emb_sz_rule sizes), an nn.EmbeddingBag(mode="mean")
over a variable-length multi-hot column given as flat indices + offsets (with per_sample_weights in
a second "sum" bag), BatchNorm1d on the continuous columns, an MLP, BCEWithLogitsLoss(pos_weight=...)
for the rare positives, Adam, ReduceLROnPlateau stepped on a validation loss, and the model's own
sanity check with torch.testing.assert_close (eval-mode predictions are batch-size independent)."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

CARDINALITIES = (7, 12, 30)
N_CONT, TAGS = 3, 20


def emb_sz_rule(n_cat):
    return min(600, round(1.6 * n_cat ** 0.56))


class TabularModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.embeds = nn.ModuleList([nn.Embedding(n, emb_sz_rule(n)) for n in CARDINALITIES])
        self.tag_bag = nn.EmbeddingBag(TAGS, 6, mode="mean")
        self.weighted_bag = nn.EmbeddingBag(TAGS, 4, mode="sum")
        self.bn_cont = nn.BatchNorm1d(N_CONT)
        n_emb = sum(e.embedding_dim for e in self.embeds) + 6 + 4
        self.layers = nn.Sequential(nn.Linear(n_emb + N_CONT, 32), nn.ReLU(inplace=True),
                                    nn.BatchNorm1d(32), nn.Linear(32, 16), nn.ReLU(inplace=True),
                                    nn.Linear(16, 1))

    def forward(self, x_cat, x_cont, tags, offsets, tag_weights):
        x = [e(x_cat[:, i]) for i, e in enumerate(self.embeds)]
        x.append(self.tag_bag(tags, offsets))
        x.append(self.weighted_bag(tags, offsets, per_sample_weights=tag_weights))
        x = torch.cat(x + [self.bn_cont(x_cont)], 1)
        return self.layers(x).squeeze(-1)


def get_data():
    rng = np.random.default_rng(23)
    n = 96
    x_cat = np.stack([rng.integers(0, c, n) for c in CARDINALITIES], 1)
    x_cont = rng.standard_normal((n, N_CONT)) * np.array([1.0, 10.0, 0.1]) + np.array([0, 50, 1])
    lengths = rng.integers(1, 5, n)
    tags = rng.integers(0, TAGS, int(lengths.sum()))
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    logit = (x_cat[:, 0] == 3) * 2.0 + x_cont[:, 0] - 2.5 + np.add.reduceat((tags < 4) * 1.0, offsets)
    y = (logit + 0.5 * rng.standard_normal(n) > 0).astype(np.float32)
    return {"x_cat": x_cat.astype(np.int64), "x_cont": x_cont.astype(np.float32), "lengths": lengths,
            "tags": tags.astype(np.int64), "tag_weights": rng.random(tags.size).astype(np.float32), "y": y}


def batch(data, rows):
    """Rows ``rows`` of the table, the multi-hot column cut out of its flat form."""
    ends = np.cumsum(data["lengths"])
    starts = ends - data["lengths"]
    pieces = [np.arange(starts[r], ends[r]) for r in rows]
    flat = np.concatenate(pieces)
    offsets = np.concatenate([[0], np.cumsum([len(p) for p in pieces])[:-1]])
    return (torch.from_numpy(data["x_cat"][rows]), torch.from_numpy(data["x_cont"][rows]),
            torch.from_numpy(data["tags"][flat]), torch.from_numpy(offsets.astype(np.int64)),
            torch.from_numpy(data["tag_weights"][flat])), torch.from_numpy(data["y"][rows])


def build():
    return TabularModel()


def train(model, data, steps):
    train_rows, valid_rows = np.arange(64), np.arange(64, 96)
    y_train = data["y"][train_rows]
    pos_weight = torch.tensor([(len(y_train) - y_train.sum()) / max(1.0, y_train.sum())])
    criterion = nn.BCEWithLogitsLoss(pos_weight=pos_weight)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2, weight_decay=1e-5)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode="min", factor=0.5, patience=1)
    losses, valid_losses = [], []
    for step in range(steps):
        model.train()
        rows = train_rows[(step * 16) % 64:(step * 16) % 64 + 16]
        inputs, target = batch(data, rows)
        loss = criterion(model(*inputs), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        model.eval()
        with torch.no_grad():
            v_inputs, v_target = batch(data, valid_rows)
            valid_losses.append(F.binary_cross_entropy_with_logits(model(*v_inputs), v_target).item())
        scheduler.step(valid_losses[-1])
    sanity_check(model, data, valid_rows)
    assert optimizer.param_groups[0]["lr"] <= 1e-2
    return losses + valid_losses[-1:]


def sanity_check(model, data, rows):
    model.eval()
    with torch.no_grad():
        whole = model(*batch(data, rows)[0])
        halves = torch.cat([model(*batch(data, rows[:16])[0]), model(*batch(data, rows[16:])[0])])
    torch.testing.assert_close(halves, whole, rtol=1e-5, atol=1e-5)
    assert whole.shape == (len(rows),) and torch.isfinite(whole).all()
