"""A SegNet-style encoder-decoder (Badrinarayanan et al.; the common PyTorch ports): conv-BN-ReLU
encoder stages each ending in MaxPool2d(2, 2, return_indices=True), a decoder that upsamples with
MaxUnpool2d(2, 2) at the saved indices (output_size given for the odd-sized stage), per-pixel
cross-entropy with class weights and ignore_index, SGD with Nesterov momentum, PolynomialLR, the
model and batches in channels_last (torchvision's --channels-last recipe), and a pixel accuracy /
mean IoU computed with bincount at the end."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

N_CLASSES, IGNORE = 3, 255


def conv_bn_relu(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout),
                         nn.ReLU(inplace=True))


class SegNet(nn.Module):
    def __init__(self, in_ch=1, n_classes=N_CLASSES):
        super().__init__()
        self.enc1 = nn.Sequential(conv_bn_relu(in_ch, 8), conv_bn_relu(8, 8))
        self.enc2 = nn.Sequential(conv_bn_relu(8, 16), conv_bn_relu(16, 16))
        self.pool = nn.MaxPool2d(2, stride=2, return_indices=True)
        self.unpool = nn.MaxUnpool2d(2, stride=2)
        self.dec2 = nn.Sequential(conv_bn_relu(16, 16), conv_bn_relu(16, 8))
        self.dec1 = nn.Sequential(conv_bn_relu(8, 8), nn.Conv2d(8, n_classes, 3, padding=1))

    def forward(self, x):
        x = self.enc1(x)
        size1 = x.size()
        x, idx1 = self.pool(x)
        x = self.enc2(x)
        size2 = x.size()
        x, idx2 = self.pool(x)
        x = self.unpool(x, idx2, output_size=size2)
        x = self.dec2(x)
        x = self.unpool(x, idx1, output_size=size1)
        return self.dec1(x)


def get_data():
    rng = np.random.default_rng(13)
    n, h, w = 12, 18, 18  # 18 -> 9 -> 4: the second unpool needs output_size
    yy, xx = np.mgrid[:h, :w]
    masks = np.zeros((n, h, w), dtype=np.int64)
    imgs = 0.3 * rng.standard_normal((n, 1, h, w))
    for k in range(n):
        cy, cx, r = rng.integers(4, 14), rng.integers(4, 14), rng.integers(3, 6)
        disc = (yy - cy) ** 2 + (xx - cx) ** 2 < r * r
        bar = (np.abs(xx - (cx + 7) % w) < 2) & ~disc
        masks[k][disc], masks[k][bar] = 1, 2
        imgs[k, 0][disc] += 1.0
        imgs[k, 0][bar] -= 1.0
    masks[:, 0, :] = IGNORE  # an unlabelled border row, as datasets mark void pixels
    return {"x": imgs.astype(np.float32), "y": masks}


def build():
    return SegNet()


def mean_iou(pred, target):
    valid = target != IGNORE
    hist = torch.bincount(N_CLASSES * target[valid] + pred[valid], minlength=N_CLASSES ** 2)
    hist = hist.reshape(N_CLASSES, N_CLASSES).float()
    iou = torch.diag(hist) / (hist.sum(0) + hist.sum(1) - torch.diag(hist)).clamp(min=1)
    return (torch.diag(hist).sum() / hist.sum()).item(), iou.mean().item()


def train(model, data, steps):
    x, y = torch.from_numpy(data["x"]), torch.from_numpy(data["y"])
    weight = torch.tensor([0.5, 1.0, 1.5])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True,
                                weight_decay=5e-4)
    scheduler = torch.optim.lr_scheduler.PolynomialLR(optimizer, total_iters=steps, power=0.9)
    losses = []
    model = model.to(memory_format=torch.channels_last)
    model.train()
    for step in range(steps):
        i = (step * 4) % 12
        images = x[i:i + 4].contiguous(memory_format=torch.channels_last)
        assert images.is_contiguous(memory_format=torch.channels_last)
        out = model(images)
        loss = F.cross_entropy(out, y[i:i + 4], weight=weight, ignore_index=IGNORE)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        out = model(x)
        pixel_acc, miou = mean_iou(out.argmax(1), y)
        assert 0.0 <= pixel_acc <= 1.0 and 0.0 <= miou <= 1.0
        losses.append(F.cross_entropy(out, y, ignore_index=IGNORE).item())
    return losses
