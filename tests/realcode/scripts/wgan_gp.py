# ruff: noqa: N806 - the paper's names
"""A WGAN-GP (Gulrajani et al.; the pytorch-wgan / PyTorch-GAN implementations) on a 2-d mixture of
Gaussians: an MLP generator and critic (LayerNorm in the critic, no BatchNorm, as the paper asks), the
gradient penalty from torch.autograd.grad(create_graph=True, grad_outputs=ones) on random
interpolates, n_critic critic steps per generator step, Adam(lr, betas=(0.5, 0.9)) for both, and the
critic's Wasserstein estimate logged. Each "step" is one generator update; its loss is returned
together with the critic loss before it."""

import numpy as np
import torch
import torch.autograd as autograd
import torch.nn as nn

LATENT, N_CRITIC, LAMBDA_GP = 4, 3, 10.0


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = nn.Sequential(nn.Linear(LATENT, 64), nn.LeakyReLU(0.2, inplace=True),
                                   nn.Linear(64, 64), nn.LeakyReLU(0.2, inplace=True), nn.Linear(64, 2))

    def forward(self, z):
        return self.model(z)


class Critic(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = nn.Sequential(nn.Linear(2, 64), nn.LayerNorm(64), nn.LeakyReLU(0.2),
                                   nn.Linear(64, 64), nn.LayerNorm(64), nn.LeakyReLU(0.2), nn.Linear(64, 1))

    def forward(self, x):
        return self.model(x)


class GAN(nn.Module):
    def __init__(self):
        super().__init__()
        self.generator = Generator()
        self.critic = Critic()


def compute_gradient_penalty(D, real_samples, fake_samples):
    alpha = torch.rand(real_samples.size(0), 1)
    interpolates = (alpha * real_samples + ((1 - alpha) * fake_samples)).requires_grad_(True)
    d_interpolates = D(interpolates)
    fake = torch.ones(real_samples.shape[0], 1, requires_grad=False)
    gradients = autograd.grad(outputs=d_interpolates, inputs=interpolates, grad_outputs=fake,
                              create_graph=True, retain_graph=True, only_inputs=True)[0]
    gradients = gradients.view(gradients.size(0), -1)
    return ((gradients.norm(2, dim=1) - 1) ** 2).mean()


def get_data():
    rng = np.random.default_rng(8)
    centers = np.array([[2, 0], [-2, 0], [0, 2], [0, -2]], dtype=np.float64)
    pts = centers[rng.integers(0, 4, 512)] + 0.1 * rng.standard_normal((512, 2))
    return {"x": pts.astype(np.float32)}


def build():
    return GAN()


def train(gan, data, steps):
    G, D = gan.generator, gan.critic
    real_all = torch.from_numpy(data["x"])
    opt_G = torch.optim.Adam(G.parameters(), lr=2e-4, betas=(0.5, 0.9))
    opt_D = torch.optim.Adam(D.parameters(), lr=2e-4, betas=(0.5, 0.9))
    losses, batch, cursor = [], 32, 0
    for _ in range(steps):
        for _ in range(N_CRITIC):
            real = real_all[cursor:cursor + batch]
            cursor = (cursor + batch) % real_all.size(0)
            z = torch.randn(batch, LATENT)
            fake = G(z).detach()
            opt_D.zero_grad()
            gp = compute_gradient_penalty(D, real, fake)
            d_loss = -torch.mean(D(real)) + torch.mean(D(fake)) + LAMBDA_GP * gp
            d_loss.backward()
            opt_D.step()
        opt_G.zero_grad()
        g_loss = -torch.mean(D(G(torch.randn(batch, LATENT))))
        g_loss.backward()
        opt_G.step()
        # the generator's loss rises as the critic learns: the logged value is their sum
        losses.append(g_loss.item() + d_loss.item())
    return losses
