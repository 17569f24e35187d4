"""The ``modscope`` command line. Subcommands arrive with the features they drive (export,
summary, demo, run, replay); ``--help`` and ``--version`` work from the start.

``modscope export TARGET --what tree|autograd|dataflow -o FILE``: a diagram of a model."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from .. import __version__
from .failure import fail

if TYPE_CHECKING:
    from ..capture.sampling import DetailPolicy


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="modscope",
        description="See inside a PyTorch-style nn.Module while it trains: hook tracing, graphviz "
                    "diagrams and a live terminal UI, on PyTorch or modscope's NumPy engine.",
    )
    parser.add_argument("--version", action="version", version=f"modscope {__version__}")
    # Each subcommand adds its parser here and sets ``run`` (a function of the parsed args).
    subcommands = parser.add_subparsers(dest="command", metavar="COMMAND")
    _add_export(subcommands)
    from .diff import add_command as add_diff
    from .live import add_commands  # run, replay, demo (the TUI)
    from .summary import add_command as add_summary

    add_summary(subcommands)
    add_diff(subcommands)
    add_commands(subcommands)
    from .report import add_command as add_report
    from .web import add_command as add_web

    add_report(subcommands)
    add_web(subcommands)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "run", None) is None:
        parser.print_help(sys.stdout)
        return 0
    return args.run(args)


# --- export -----------------------------------------------------------------------------------

def _add_export(subcommands: argparse._SubParsersAction) -> None:
    from ..capture.target import EXAMPLES
    from .export import FORMATS, WHATS

    p = subcommands.add_parser(
        "export", help="write a diagram of a model (module tree, autograd graph, dataflow)",
        description="Write a diagram of a model: its module tree, the autograd graph of one forward, or the "
                    "dataflow between module calls, as DOT, SVG, PNG, PDF (graphviz's dot), Mermaid or JSON.",
        epilog=f"TARGET is FILE.py:CLASS_OR_FACTORY or an example name ({', '.join(EXAMPLES)}). "
               "Example: modscope export net --what autograd --depth 1 -o net.svg")
    p.add_argument("target", metavar="TARGET", help="FILE.py:CLASS_OR_FACTORY, or an example name")
    p.add_argument("--what", choices=WHATS, default="tree", help="which diagram (default: tree)")
    p.add_argument("--input", metavar="SHAPE", help="input shape, e.g. 64,1,28,28 (default: the example's; "
                                                    "required for FILE.py targets)")
    p.add_argument("--tokens", metavar="N", type=_positive, help="make the input integer token ids in [0, N) "
                                                                  "(models that start with an nn.Embedding)")
    p.add_argument("--format", choices=FORMATS, help="output format (default: from the output file's suffix)")
    p.add_argument("-o", "--output", metavar="FILE", required=True, help="file to write")
    p.add_argument("--depth", type=_depth, help="show modules down to this depth, collapse deeper ones")
    p.add_argument("--no-fold", dest="fold", action="store_false",
                   help="draw every node: do not fold repeated blocks, group wide fan-outs or cut the depth of "
                        "a diagram over the budget (big models then take long to lay out)")
    p.add_argument("--budget", metavar="N", type=_positive, default=None,
                   help="nodes a diagram may have before it is folded (default: 400)")
    p.set_defaults(run=_run_export)


def _depth(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return value


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    return value


def add_detail_flags(parser: argparse.ArgumentParser) -> None:
    """``--every N`` and ``--full`` (``modscope run`` and ``record``)."""
    from ..capture.sampling import DEFAULT_EVERY, DEFAULT_FIRST

    group = parser.add_mutually_exclusive_group()
    group.add_argument("--every", type=_positive, metavar="N", default=DEFAULT_EVERY,
                       help=f"watch one step in N in full detail (and the first {DEFAULT_FIRST}, and steps asked "
                            f"for from the TUI or after a breakpoint's condition), with the per-module hooks removed "
                            f"in between: those light steps record the loss, learning rates, step time, global "
                            f"gradient norm and NaN/Inf (default: {DEFAULT_EVERY})")
    group.add_argument("--full", action="store_true", help="watch every step in full detail (costs what torch's own "
                                                           "module hooks cost: 1.1-2x a small model's step)")


def policy_from_flags(args: argparse.Namespace) -> DetailPolicy:
    """The policy ``--every``/``--full`` chose."""
    from ..capture.sampling import DetailPolicy

    return DetailPolicy(None) if args.full else DetailPolicy(args.every)


def _run_export(args: argparse.Namespace) -> int:
    from rich.console import Console

    from ..capture.target import TargetError
    from .export import ExportError, export

    console = Console(stderr=True)
    try:
        with console.status("exporting...") as status:
            path = export(args.target, args.what, args.output, fmt=args.format, input_shape=args.input,
                          depth=args.depth, tokens=args.tokens, fold=args.fold,
                          **({} if args.budget is None else {"budget": args.budget}),
                          progress=lambda message: status.update(message + "..."))
    except (ExportError, TargetError) as exc:
        return fail("export", str(exc))
    print(f"wrote {path}", file=sys.stderr)
    return 0
