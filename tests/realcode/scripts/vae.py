# ruff: noqa: UP008, B007 - written the way torch code is written (super(Net, self), unused batch_idx)
"""pytorch/examples' vae/main.py: a fully connected VAE with the reparameterisation trick
(randn_like), sigmoid decoder, BCE(reduction='sum') + KL divergence, Adam, and sampling afterwards."""

import numpy as np
import torch
import torch.utils.data
from torch import nn, optim
from torch.nn import functional as F


class VAE(nn.Module):
    def __init__(self):
        super(VAE, self).__init__()
        self.fc1 = nn.Linear(784, 400)
        self.fc21 = nn.Linear(400, 20)
        self.fc22 = nn.Linear(400, 20)
        self.fc3 = nn.Linear(20, 400)
        self.fc4 = nn.Linear(400, 784)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        eps = torch.randn_like(std)
        return mu + eps * std

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, 784))
        z = self.reparameterize(mu, logvar)
        return self.decode(z), mu, logvar


def loss_function(recon_x, x, mu, logvar):
    BCE = F.binary_cross_entropy(recon_x, x.view(-1, 784), reduction="sum")
    KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return BCE + KLD


def get_data():
    rng = np.random.default_rng(2)
    return {"x": (rng.random((64, 1, 28, 28)) ** 3).astype(np.float32)}


def build():
    return VAE()


def train(model, data, steps):
    dataset = torch.utils.data.TensorDataset(torch.from_numpy(data["x"]))
    loader = torch.utils.data.DataLoader(dataset, batch_size=16, shuffle=False)
    optimizer = optim.Adam(model.parameters(), lr=1e-3)
    model.train()
    losses = []
    while len(losses) < steps:
        for batch_idx, (x,) in enumerate(loader):
            optimizer.zero_grad()
            recon_batch, mu, logvar = model(x)
            loss = loss_function(recon_batch, x, mu, logvar)
            loss.backward()
            optimizer.step()
            losses.append(loss.item() / len(x))
            if len(losses) == steps:
                break
    model.eval()
    with torch.no_grad():
        sample = model.decode(torch.randn(8, 20))
        assert tuple(sample.view(8, 1, 28, 28).shape) == (8, 1, 28, 28)
        assert float(sample.min()) >= 0.0 and float(sample.max()) <= 1.0
    return losses
