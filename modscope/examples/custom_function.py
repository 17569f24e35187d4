"""Custom autograd Functions, as in "Extending PyTorch": ``LinearF`` and ``ReLUF`` with their
own backward, written twice -- in the modern style (static ``forward(ctx, ...)``/``backward(ctx,
...)``, called through ``.apply``) and in the legacy instance style of the old tutorials
(``LinearF()(input, weight, bias)``; the engine keeps it with a DeprecationWarning, torch removed
it and raises). A ``Linear`` module wraps the Function; an MLP built from it trains briefly on the
digits after its gradients are checked against the built-in ops.

    python modscope/examples/custom_function.py [--style modern|legacy] [--epochs N] [--backend torch|both]
"""

from __future__ import annotations

import math
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _backend  # noqa: E402
from _train import digit_loaders, example_parser, fit, parse_example_args  # noqa: E402

import engine as torch  # noqa: E402
import engine.nn as nn  # noqa: E402
import engine.nn.functional as F  # noqa: E402
import engine.optim as optim  # noqa: E402
from engine.autograd import Function  # noqa: E402

# --- modern style: static methods, a ctx object, Function.apply -------------------------------


class LinearF(Function):
    @staticmethod
    def forward(ctx, input, weight, bias=None):
        ctx.save_for_backward(input, weight, bias)
        output = input.mm(weight.t())
        if bias is not None:
            output += bias.unsqueeze(0).expand_as(output)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        input, weight, bias = ctx.saved_tensors
        grad_input = grad_weight = grad_bias = None
        # needs_input_grad spares the products nobody asked for
        if ctx.needs_input_grad[0]:
            grad_input = grad_output.mm(weight)
        if ctx.needs_input_grad[1]:
            grad_weight = grad_output.t().mm(input)
        if bias is not None and ctx.needs_input_grad[2]:
            grad_bias = grad_output.sum(0)
        return grad_input, grad_weight, grad_bias


class ReLUF(Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return input.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_output):
        (input,) = ctx.saved_tensors
        grad_input = grad_output.clone()
        grad_input[input < 0] = 0
        return grad_input


# --- legacy style: instance methods, the Function object is the context -----------------------


class LegacyLinearF(Function):
    def forward(self, input, weight, bias=None):
        self.save_for_backward(input, weight, bias)
        output = input.mm(weight.t())
        if bias is not None:
            output += bias.unsqueeze(0).expand_as(output)
        return output

    def backward(self, grad_output):
        input, weight, bias = self.saved_tensors
        grad_input = grad_weight = grad_bias = None
        if self.needs_input_grad[0]:
            grad_input = grad_output.mm(weight)
        if self.needs_input_grad[1]:
            grad_weight = grad_output.t().mm(input)
        if bias is not None and self.needs_input_grad[2]:
            grad_bias = grad_output.sum(0)
        return grad_input, grad_weight, grad_bias


class LegacyReLUF(Function):
    def forward(self, input):
        self.save_for_backward(input)
        return input.clamp(min=0)

    def backward(self, grad_output):
        (input,) = self.saved_tensors
        grad_input = grad_output.clone()
        grad_input[input < 0] = 0
        return grad_input


STYLES = ("modern", "legacy")


def linear_f(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None,
             style: str = "modern") -> torch.Tensor:
    """``LinearF`` called the way its ``style`` calls a Function."""
    return LinearF.apply(input, weight, bias) if style == "modern" else LegacyLinearF()(input, weight, bias)


def relu_f(input: torch.Tensor, style: str = "modern") -> torch.Tensor:
    """``ReLUF`` called the way its ``style`` calls a Function."""
    return ReLUF.apply(input) if style == "modern" else LegacyReLUF()(input)


# --- modules on top ---------------------------------------------------------------------------


class Linear(nn.Module):
    def __init__(self, input_features, output_features, bias=True, style="modern"):
        super().__init__()
        if style not in STYLES:
            raise ValueError(f"style must be one of {STYLES}, got {style!r}")
        self.input_features = input_features
        self.output_features = output_features
        self.style = style
        # nn.Parameter registers the tensor as a parameter of the module
        self.weight = nn.Parameter(torch.empty(output_features, input_features))
        if bias:
            self.bias = nn.Parameter(torch.empty(output_features))
        else:
            # optional parameters are registered as None
            self.register_parameter("bias", None)
        bound = 1 / math.sqrt(input_features)
        nn.init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            nn.init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        return linear_f(input, self.weight, self.bias, self.style)

    def extra_repr(self):
        return (f"input_features={self.input_features}, output_features={self.output_features}, "
                f"bias={self.bias is not None}, style={self.style}")


class MLP(nn.Module):
    """784 -> 128 -> 10 from the custom ``Linear`` and ``ReLUF``; flattens image input."""

    def __init__(self, style="modern"):
        super().__init__()
        self.style = style
        self.fc1 = Linear(28 * 28, 128, style=style)
        self.fc2 = Linear(128, 10, style=style)

    def forward(self, x):
        x = torch.flatten(x, 1)
        x = relu_f(self.fc1(x), self.style)
        return self.fc2(x)


def check_gradients(style: str = "modern") -> float:
    """Largest absolute difference between the gradients of ``relu(linear(x))`` computed with
    the custom Functions and with the built-in ops, over input, weight and bias (float64)."""
    x = torch.randn(8, 5, dtype=torch.float64, requires_grad=True)
    w = torch.randn(3, 5, dtype=torch.float64, requires_grad=True)
    b = torch.randn(3, dtype=torch.float64, requires_grad=True)
    relu_f(linear_f(x, w, b, style), style).pow(2).sum().backward()
    custom = [t.grad.clone() for t in (x, w, b)]
    for t in (x, w, b):
        t.grad = None
    F.relu(F.linear(x, w, b)).pow(2).sum().backward()
    return max((c - t.grad).abs().max().item() for c, t in zip(custom, (x, w, b)))


def main(argv: Sequence[str] | None = None) -> float:
    """Check the custom gradients, train the MLP, return the final test accuracy."""
    parser = example_parser(__doc__, epochs=2, lr=0.1)
    parser.add_argument("--style", choices=STYLES, default="modern",
                        help="how the Functions are written and called (default modern)")
    args = parse_example_args(parser, argv)
    if args.backend != torch.__name__:
        return _backend.run(__file__, args.backend, argv, "{:.2%}".format)

    torch.manual_seed(args.seed)
    with warnings.catch_warnings():
        # the legacy style warns on every call; say it once here instead
        warnings.simplefilter("ignore", DeprecationWarning)
        if args.style == "legacy":
            print("legacy instance-style Functions: deprecated (torch removed them)")
        print(f"max |custom grad - built-in grad| = {check_gradients(args.style):.3g}")
        loaders = digit_loaders(torch, args.batch_size, args.train_size, args.test_size)
        model = MLP(args.style)
        optimizer = optim.SGD(model.parameters(), lr=args.lr)
        history = fit(torch, model, optimizer, loaders, args.epochs, F.cross_entropy)
    return history[-1].accuracy


if __name__ == "__main__":
    main()
