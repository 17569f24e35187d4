"""Sequence classification with a recurrent network: each digit is read as a sequence of 28 rows
(28 pixels each, top to bottom), and the class is predicted from the last hidden state.

``RNNClassifier`` runs the whole sequence through ``nn.RNN`` (``batch_first``); ``RNNCellClassifier``
is the same network written with ``nn.RNNCell`` and an explicit loop over the time steps, as the
classic tutorials write it -- given the same weights the two compute the same thing.

    python modscope/examples/rnn.py [--cell] [--epochs N] [--hidden-size H] [--backend torch|both]
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _backend  # noqa: E402
from _train import digit_loaders, example_parser, fit, parse_example_args, positive_int  # noqa: E402

import engine as torch  # noqa: E402
import engine.nn as nn  # noqa: E402
import engine.nn.functional as F  # noqa: E402
import engine.optim as optim  # noqa: E402

ROWS, COLS = 28, 28  # sequence length, features per step


class RNNClassifier(nn.Module):
    def __init__(self, input_size=COLS, hidden_size=128, num_classes=10):
        super().__init__()
        self.hidden_size = hidden_size
        self.rnn = nn.RNN(input_size, hidden_size, batch_first=True)
        self.fc = nn.Linear(hidden_size, num_classes)

    def forward(self, x):
        # x: (batch, seq_len, input_size); h0 defaults to zeros
        out, h_n = self.rnn(x)
        # the output at the last time step summarises the whole sequence
        return self.fc(out[:, -1, :])


class RNNCellClassifier(nn.Module):
    def __init__(self, input_size=COLS, hidden_size=128, num_classes=10):
        super().__init__()
        self.hidden_size = hidden_size
        self.cell = nn.RNNCell(input_size, hidden_size)
        self.fc = nn.Linear(hidden_size, num_classes)

    def forward(self, x):
        hidden = torch.zeros(x.size(0), self.hidden_size)
        for t in range(x.size(1)):
            hidden = self.cell(x[:, t, :], hidden)
        return self.fc(hidden)


def main(argv: Sequence[str] | None = None) -> float:
    """Train on the digits read row by row, return the final test accuracy."""
    parser = example_parser(__doc__, epochs=8, lr=0.002)
    parser.add_argument("--hidden-size", type=positive_int, default=128, help="default 128")
    parser.add_argument("--cell", action="store_true", help="train RNNCellClassifier (an explicit time loop)")
    args = parse_example_args(parser, argv)
    if args.backend != torch.__name__:
        return _backend.run(__file__, args.backend, argv, "{:.2%}".format)

    torch.manual_seed(args.seed)
    loaders = digit_loaders(torch, args.batch_size, args.train_size, args.test_size, shape=(ROWS, COLS))
    model = (RNNCellClassifier if args.cell else RNNClassifier)(hidden_size=args.hidden_size)
    optimizer = optim.Adam(model.parameters(), lr=args.lr)
    history = fit(torch, model, optimizer, loaders, args.epochs, F.cross_entropy)
    return history[-1].accuracy


if __name__ == "__main__":
    main()
