"""A tiny Transformer encoder that reads a digit as a sentence of 28 tokens: each row of 28 pixels
is projected to a ``d_model`` vector, a learned position embedding is added, two
``nn.TransformerEncoderLayer`` blocks (4 heads, ``batch_first``) attend across the rows, and the
mean over tokens is classified. Trained with AdamW on a subset of the digits.

    python modscope/examples/transformer_tiny.py [--epochs N] [--train-size N] [--backend torch|both]
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _backend  # noqa: E402
from _train import digit_loaders, example_parser, fit, parse_example_args  # noqa: E402

import engine as torch  # noqa: E402
import engine.nn as nn  # noqa: E402
import engine.nn.functional as F  # noqa: E402
import engine.optim as optim  # noqa: E402

ROWS, COLS = 28, 28  # tokens per digit, features per token


class TransformerTiny(nn.Module):
    def __init__(self, d_model=32, nhead=4, num_layers=2, dim_feedforward=64, dropout=0.1, num_classes=10):
        super().__init__()
        self.embed = nn.Linear(COLS, d_model)  # one token per row of pixels
        self.pos_embedding = nn.Parameter(torch.zeros(1, ROWS, d_model))
        nn.init.normal_(self.pos_embedding, std=0.02)
        encoder_layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout, batch_first=True)
        self.encoder = nn.TransformerEncoder(encoder_layer, num_layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, num_classes)

    def forward(self, x):
        # x: (batch, 28 rows, 28 pixels) -> (batch, 28 tokens, d_model)
        x = self.embed(x) + self.pos_embedding
        x = self.encoder(x)
        # average the tokens, then classify
        return self.head(self.norm(x.mean(dim=1)))


def main(argv: Sequence[str] | None = None) -> float:
    """Train on a subset of the digits read as row tokens, return the final test accuracy."""
    parser = example_parser(__doc__, epochs=8, lr=0.003, train_size=2000, test_size=500)
    args = parse_example_args(parser, argv)
    if args.backend != torch.__name__:
        return _backend.run(__file__, args.backend, argv, "{:.2%}".format)

    torch.manual_seed(args.seed)
    loaders = digit_loaders(torch, args.batch_size, args.train_size, args.test_size, shape=(ROWS, COLS))
    model = TransformerTiny()
    optimizer = optim.AdamW(model.parameters(), lr=args.lr)
    history = fit(torch, model, optimizer, loaders, args.epochs, F.cross_entropy)
    return history[-1].accuracy


if __name__ == "__main__":
    main()
