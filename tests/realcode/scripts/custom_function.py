# ruff: noqa: UP008, B007 - written the way torch code is written (super(Net, self), unused batch_idx)
"""Custom autograd Functions inside a model, in the modern style (forward without ctx,
setup_context, save_for_backward, needs_input_grad, mark_non_differentiable, once_differentiable):
a LinearFunction, a straight-through rounding estimator, and a gradient-reversal layer as in domain
adaptation code. The gradients are checked against the built-in ops before training."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Function
from torch.autograd.function import once_differentiable


class LinearFunction(Function):
    @staticmethod
    def forward(input, weight, bias):
        output = input.mm(weight.t())
        if bias is not None:
            output += bias.unsqueeze(0).expand_as(output)
        return output

    @staticmethod
    def setup_context(ctx, inputs, output):
        input, weight, bias = inputs
        ctx.save_for_backward(input, weight, bias)

    @staticmethod
    def backward(ctx, grad_output):
        input, weight, bias = ctx.saved_tensors
        grad_input = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            grad_input = grad_output.mm(weight)
        if ctx.needs_input_grad[1]:
            grad_weight = grad_output.t().mm(input)
        if bias is not None and ctx.needs_input_grad[2]:
            grad_bias = grad_output.sum(0)
        return grad_input, grad_weight, grad_bias


class RoundSTE(Function):
    """Rounds to a grid of `step`; the gradient passes straight through; also returns the
    (non-differentiable) index of each value on the grid."""

    @staticmethod
    def forward(x, step):
        index = torch.round(x / step)
        return index * step, index.long()

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.mark_non_differentiable(output[1])

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output, grad_index):
        return grad_output, None


class GradReverse(Function):
    @staticmethod
    def forward(ctx, x, alpha):
        ctx.alpha = alpha
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output.neg() * ctx.alpha, None


class MyLinear(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(out_features, in_features).uniform_(-0.3, 0.3))
        self.bias = nn.Parameter(torch.zeros(out_features))

    def forward(self, x):
        return LinearFunction.apply(x, self.weight, self.bias)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = MyLinear(8, 16)
        self.fc2 = MyLinear(16, 3)
        self.domain = nn.Linear(16, 2)

    def forward(self, x):
        h = F.relu(self.fc1(x))
        q, _ = RoundSTE.apply(h, 0.25)
        return self.fc2(q), self.domain(GradReverse.apply(h, 0.5))


def get_data():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((32, 8)).astype(np.float32)
    return {"x": x, "y": (x[:, :3].argmax(1)), "d": (x[:, 7] > 0).astype(np.int64)}


def build():
    return Net()


def check_against_builtin():
    x = torch.randn(4, 5, dtype=torch.double, requires_grad=True)
    w = torch.randn(3, 5, dtype=torch.double, requires_grad=True)
    b = torch.randn(3, dtype=torch.double, requires_grad=True)
    assert torch.autograd.gradcheck(LinearFunction.apply, (x, w, b), eps=1e-6, atol=1e-4)
    g_custom = torch.autograd.grad(LinearFunction.apply(x, w, b).pow(2).sum(), (x, w, b))
    g_builtin = torch.autograd.grad(F.linear(x, w, b).pow(2).sum(), (x, w, b))
    assert all(torch.allclose(a, c) for a, c in zip(g_custom, g_builtin))
    y, index = RoundSTE.apply(x, 0.5)
    assert not index.requires_grad and y.requires_grad


def train(model, data, steps):
    check_against_builtin()
    x, y, d = (torch.from_numpy(data[k]) for k in ("x", "y", "d"))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for step in range(steps):
        optimizer.zero_grad()
        logits, domain_logits = model(x)
        loss = F.cross_entropy(logits, y) + F.cross_entropy(domain_logits, d)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    # the reversal layer flipped the sign of what reached fc1 from the domain head
    assert model.fc1.weight.grad is not None and model.domain.weight.grad is not None
    return losses
