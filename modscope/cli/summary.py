"""``modscope summary TARGET --input ...``: one traced forward and backward, printed as the
torchinfo-like table (``Trace.summary``)."""

from __future__ import annotations

import argparse
import sys


def add_command(subcommands: argparse._SubParsersAction) -> None:
    from ..capture.target import EXAMPLES

    p = subcommands.add_parser(
        "summary", help="print a model's summary table (shapes, parameters, mult-adds, time)",
        description="Run one forward and backward of a model under modscope.trace and print its summary: "
                    "output shapes, parameters, trainable, multiply-adds (matmuls, convolutions, attention), "
                    "forward/backward time and bytes saved for backward.",
        epilog=f"TARGET is FILE.py:CLASS_OR_FACTORY or an example name ({', '.join(EXAMPLES)}).")
    p.add_argument("target", metavar="TARGET")
    p.add_argument("--input", metavar="SHAPE", help="input shape, e.g. 64,1,28,28 (default: the example's)")
    p.add_argument("--width", type=int, default=None, help="table width (default: the terminal's)")
    p.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from ..capture.attribution import tensors_in
    from ..capture.target import TargetError, load_target, parse_shape
    from .export import ExportError, _forward

    err = Console(stderr=True)
    try:
        with err.status("tracing one step..."):
            import modscope

            target = load_target(args.target)
            shape = parse_shape(args.input) if args.input else None
            x = target.example_input(shape)
            with modscope.trace(target.model) as tr:
                out = _forward(target.model, x)
                grads = [t for t in tensors_in(out) if t.requires_grad]
                if grads:
                    sum(t.sum() for t in grads).backward()
    except (TargetError, ExportError) as exc:
        print(f"modscope summary: error: {exc}", file=sys.stderr)
        return 1
    Console(width=args.width).print(tr.summary())
    return 0
