# ruff: noqa: UP008, B007 - written the way torch code is written (super(Net, self), unused batch_idx)
"""A small U-Net in the style of milesial/Pytorch-UNet: DoubleConv (Conv-BN-ReLU twice), Down
(MaxPool2d + DoubleConv), Up (bilinear nn.Upsample or ConvTranspose2d, F.pad to the skip's size,
torch.cat), OutConv; a binary segmentation loss of BCEWithLogitsLoss + soft Dice (sigmoid, sums over
dims), Adam with ReduceLROnPlateau on the validation loss, and F.interpolate for resizing masks."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class DoubleConv(nn.Module):
    """(convolution => [BN] => ReLU) * 2"""

    def __init__(self, in_channels, out_channels, mid_channels=None):
        super().__init__()
        if not mid_channels:
            mid_channels = out_channels
        self.double_conv = nn.Sequential(
            nn.Conv2d(in_channels, mid_channels, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(mid_channels),
            nn.ReLU(inplace=True),
            nn.Conv2d(mid_channels, out_channels, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(inplace=True),
        )

    def forward(self, x):
        return self.double_conv(x)


class Down(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.maxpool_conv = nn.Sequential(nn.MaxPool2d(2), DoubleConv(in_channels, out_channels))

    def forward(self, x):
        return self.maxpool_conv(x)


class Up(nn.Module):
    def __init__(self, in_channels, out_channels, bilinear=True):
        super().__init__()
        if bilinear:
            self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
            self.conv = DoubleConv(in_channels, out_channels, in_channels // 2)
        else:
            self.up = nn.ConvTranspose2d(in_channels, in_channels // 2, kernel_size=2, stride=2)
            self.conv = DoubleConv(in_channels, out_channels)

    def forward(self, x1, x2):
        x1 = self.up(x1)
        diffY = x2.size()[2] - x1.size()[2]
        diffX = x2.size()[3] - x1.size()[3]
        x1 = F.pad(x1, [diffX // 2, diffX - diffX // 2, diffY // 2, diffY - diffY // 2])
        x = torch.cat([x2, x1], dim=1)
        return self.conv(x)


class UNet(nn.Module):
    def __init__(self, n_channels=1, n_classes=1, base=8):
        super().__init__()
        self.inc = DoubleConv(n_channels, base)
        self.down1 = Down(base, base * 2)
        self.down2 = Down(base * 2, base * 4 // 2)
        self.up1 = Up(base * 4, base * 2, bilinear=True)
        self.up2 = Up(base * 2, base, bilinear=False)
        self.outc = nn.Conv2d(base, n_classes, kernel_size=1)

    def forward(self, x):
        x1 = self.inc(x)
        x2 = self.down1(x1)
        x3 = self.down2(x2)
        x = self.up1(x3, x2)
        x = self.up2(x, x1)
        return self.outc(x)


def dice_loss(logits, target, epsilon=1e-6):
    probs = torch.sigmoid(logits)
    inter = 2 * (probs * target).sum(dim=(-1, -2))
    sets_sum = probs.sum(dim=(-1, -2)) + target.sum(dim=(-1, -2))
    sets_sum = torch.where(sets_sum == 0, inter, sets_sum)
    dice = (inter + epsilon) / (sets_sum + epsilon)
    return 1 - dice.mean()


def get_data():
    rng = np.random.default_rng(11)
    yy, xx = np.mgrid[0:10, 0:10]
    masks = np.zeros((12, 1, 10, 10), dtype=np.float32)
    for n in range(12):
        cy, cx, r = rng.integers(3, 7), rng.integers(3, 7), rng.integers(2, 4)
        masks[n, 0] = ((yy - cy) ** 2 + (xx - cx) ** 2 <= r * r)
    images = (masks + 0.3 * rng.standard_normal(masks.shape)).astype(np.float32)
    return {"x": images, "mask": masks}


def build():
    return UNet()


def train(model, data, steps):
    criterion = nn.BCEWithLogitsLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2, weight_decay=1e-8)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, "min", patience=1)
    x, mask = torch.from_numpy(data["x"]), torch.from_numpy(data["mask"])
    losses = []
    for step in range(steps):
        model.train()
        lo = (step * 4) % 8
        images, true_masks = x[lo:lo + 4], mask[lo:lo + 4]
        masks_pred = model(images)
        loss = criterion(masks_pred, true_masks) + dice_loss(masks_pred, true_masks)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())
        model.eval()
        with torch.no_grad():
            val_pred = model(x[8:])
            val_loss = criterion(val_pred, mask[8:])
        scheduler.step(val_loss)
    with torch.no_grad():
        small = F.interpolate(torch.sigmoid(val_pred), size=(5, 5), mode="bilinear", align_corners=False)
        coarse = F.interpolate(mask[8:], scale_factor=0.5, mode="nearest")
    assert small.shape == coarse.shape == (4, 1, 5, 5)
    losses.append(val_loss.item())
    return losses
