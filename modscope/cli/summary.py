"""``modscope summary TARGET --input ...``: one traced forward and backward, printed as the
torchinfo-like table (``Trace.summary``). TARGET's model may be the engine's or torch's."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .failure import fail

PIPED_WIDTH = 80  # columns for a summary written to a pipe or a file (--width widens it)


def add_command(subcommands: argparse._SubParsersAction) -> None:
    """Register ``summary``."""
    from ..capture.target import EXAMPLES
    from . import _positive

    p = subcommands.add_parser(
        "summary", help="print a model's summary table (shapes, parameters, mult-adds, time)",
        description="Run one forward and backward of a model under modscope.trace and print its summary: "
                    "a row per module call (a reused module's repeats marked, its parameters counted once), input and "
                    "output shapes, parameters, trainable, multiply-adds (matmuls, convolutions, attention), "
                    "forward/backward time and bytes saved for backward; then an estimated memory block. "
                    "Columns that do not fit the width are left out, and named.",
        epilog=f"TARGET is FILE.py:CLASS_OR_FACTORY (an engine or torch nn.Module; give --input) or an example "
               f"name ({', '.join(EXAMPLES)}).")
    p.add_argument("target", metavar="TARGET")
    p.add_argument("--input", metavar="SHAPE", help="input shape, e.g. 64,1,28,28 (default: the example's; "
                                                    "required for FILE.py targets)")
    p.add_argument("--tokens", metavar="N", type=_positive, help="make the input integer token ids in [0, N) "
                                                                  "(models that start with an nn.Embedding)")
    p.add_argument("--width", type=_positive, default=None,
                   help=f"table width (default: the terminal's; {PIPED_WIDTH} when piped)")
    from ..views.summary import COLUMNS
    p.add_argument("--columns", metavar="A,B,...", help=f"the columns to show, of: {', '.join(COLUMNS)} "
                                                          f"(default: every one that fits)")
    p.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from ..capture.target import TargetError
    from ..views.summary import SummaryColumnError, parse_columns
    from .export import ExportError

    err = Console(stderr=True)
    try:
        parse_columns(args.columns)
        with err.status("tracing one step..."):
            tr = trace_one_step(args.target, args.input, args.tokens)
    except (TargetError, ExportError, SummaryColumnError) as exc:
        return fail("summary", str(exc))
    width = args.width or (None if sys.stdout.isatty() else PIPED_WIDTH)
    Console(width=width).print(tr.summary(columns=args.columns, width=width))
    return 0


def trace_one_step(spec: str, input_shape: str | None, tokens: int | None = None) -> Any:
    """Load the model ``spec`` names and trace one forward (and a backward of the sum of its
    outputs that require grad); returns the trace. Raises ``TargetError`` or ``ExportError``."""
    import modscope

    from ..capture.target import load_target, parse_shape
    from ..capture.values import tensors_in
    from .export import _forward, check_traceable, with_tokens

    target = with_tokens(load_target(spec), tokens)
    x = target.example_input(parse_shape(input_shape) if input_shape else None)
    check_traceable(target.model)
    with modscope.trace(target.model) as tr:
        out = _forward(target.model, x)
        grads = [t for t in tensors_in(out) if t.requires_grad]
        if grads:
            sum(t.sum() for t in grads).backward()
    return tr
