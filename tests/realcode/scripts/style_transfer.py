"""The PyTorch neural style transfer tutorial (Gatys et al.), on a small VGG-like feature stack: the
image itself is the parameter (input_img.requires_grad_(True), the model requires_grad_(False) and
in eval mode), ContentLoss/StyleLoss modules that record their loss in forward against detached
targets (a gram matrix by torch.mm, divided by its element count), a Normalization module with
mean/std as .view(-1, 1, 1) tensors, the loss model rebuilt by walking cnn.children() with
isinstance checks, renaming layers (nn.ReLU(inplace=False)) and add_module, then truncated after
the last loss layer; LBFGS([input_img], line_search_fn="strong_wolfe") stepped with a closure that
clamps the image under no_grad and weights style against content. Each "step" is one optimizer.step(closure) (max_iter=4); the
loss it returns is recorded."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

SIZE = 16
CONTENT_LAYERS = ["conv_4"]
STYLE_LAYERS = ["conv_1", "conv_2", "conv_3", "conv_4"]


class ContentLoss(nn.Module):
    def __init__(self, target):
        super(ContentLoss, self).__init__()  # noqa: UP008 - as the tutorial writes it
        self.target = target.detach()

    def forward(self, input):  # noqa: A002 - the tutorial's name
        self.loss = F.mse_loss(input, self.target)
        return input


def gram_matrix(input):  # noqa: A002
    a, b, c, d = input.size()
    features = input.view(a * b, c * d)
    G = torch.mm(features, features.t())
    return G.div(a * b * c * d)


class StyleLoss(nn.Module):
    def __init__(self, target_feature):
        super(StyleLoss, self).__init__()  # noqa: UP008
        self.target = gram_matrix(target_feature).detach()

    def forward(self, input):  # noqa: A002
        G = gram_matrix(input)
        self.loss = F.mse_loss(G, self.target)
        return input


class Normalization(nn.Module):
    def __init__(self, mean, std):
        super(Normalization, self).__init__()  # noqa: UP008
        self.mean = torch.tensor(mean).view(-1, 1, 1)
        self.std = torch.tensor(std).view(-1, 1, 1)

    def forward(self, img):
        return (img - self.mean) / self.std


class Features(nn.Module):
    """A VGG-like `features` stack (the tutorial loads vgg19(pretrained).features)."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(inplace=True), nn.MaxPool2d(2, 2),
            nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(inplace=True), nn.MaxPool2d(2, 2),
            nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(inplace=True),
        )


def get_style_model_and_losses(cnn, normalization_mean, normalization_std, style_img, content_img,
                               content_layers=CONTENT_LAYERS, style_layers=STYLE_LAYERS):
    normalization = Normalization(normalization_mean, normalization_std)
    content_losses = []
    style_losses = []
    model = nn.Sequential(normalization)
    i = 0
    for layer in cnn.children():
        if isinstance(layer, nn.Conv2d):
            i += 1
            name = "conv_{}".format(i)  # noqa: UP032
        elif isinstance(layer, nn.ReLU):
            name = "relu_{}".format(i)  # noqa: UP032
            layer = nn.ReLU(inplace=False)
        elif isinstance(layer, nn.MaxPool2d):
            name = "pool_{}".format(i)  # noqa: UP032
        elif isinstance(layer, nn.BatchNorm2d):
            name = "bn_{}".format(i)  # noqa: UP032
        else:
            raise RuntimeError("Unrecognized layer: {}".format(layer.__class__.__name__))  # noqa: UP032
        model.add_module(name, layer)
        if name in content_layers:
            target = model(content_img).detach()
            content_loss = ContentLoss(target)
            model.add_module("content_loss_{}".format(i), content_loss)  # noqa: UP032
            content_losses.append(content_loss)
        if name in style_layers:
            target_feature = model(style_img).detach()
            style_loss = StyleLoss(target_feature)
            model.add_module("style_loss_{}".format(i), style_loss)  # noqa: UP032
            style_losses.append(style_loss)
    for i in range(len(model) - 1, -1, -1):  # noqa: B007 - i is read after the loop
        if isinstance(model[i], ContentLoss) or isinstance(model[i], StyleLoss):
            break
    model = model[:(i + 1)]
    return model, style_losses, content_losses


def get_data():
    rng = np.random.default_rng(4)
    yy, xx = np.mgrid[0:SIZE, 0:SIZE] / SIZE
    stripes = 0.5 + 0.5 * np.sin(np.stack([xx * 12, yy * 9, (xx + yy) * 7]) * np.pi)
    blob = np.exp(-((xx - 0.5) ** 2 + (yy - 0.4) ** 2) * 8) * np.array([0.9, 0.3, 0.6])[:, None, None]
    return {"style": stripes[None].astype(np.float32), "content": blob[None].astype(np.float32),
            "noise": rng.random((1, 3, SIZE, SIZE)).astype(np.float32)}


def build():
    return Features()


def train(model, data, steps, style_weight=1000, content_weight=1):
    cnn = model.features.eval()
    style_img, content_img = torch.from_numpy(data["style"]), torch.from_numpy(data["content"])
    input_img = content_img.clone() * 0.5 + torch.from_numpy(data["noise"]) * 0.5
    mean = [0.485, 0.456, 0.406]
    std = [0.229, 0.224, 0.225]
    style_model, style_losses, content_losses = get_style_model_and_losses(cnn, mean, std, style_img, content_img)
    input_img.requires_grad_(True)
    style_model.eval()
    style_model.requires_grad_(False)
    optimizer = optim.LBFGS([input_img], max_iter=4, line_search_fn="strong_wolfe")
    losses = []
    for _ in range(steps):
        def closure():
            with torch.no_grad():
                input_img.clamp_(0, 1)
            optimizer.zero_grad()
            style_model(input_img)
            style_score = 0
            content_score = 0
            for sl in style_losses:
                style_score += sl.loss
            for cl in content_losses:
                content_score += cl.loss
            style_score *= style_weight
            content_score *= content_weight
            loss = style_score + content_score
            loss.backward()
            return style_score + content_score

        losses.append(optimizer.step(closure).item())
    with torch.no_grad():
        input_img.clamp_(0, 1)
    assert all(p.grad is None for p in cnn.parameters())
    assert input_img.min().item() >= 0.0 and input_img.max().item() <= 1.0
    return losses
