"""The ``modscope`` command line. Subcommands arrive with the features they drive (export,
summary, demo, run, replay); ``--help`` and ``--version`` work from the start."""

from __future__ import annotations

import argparse
import sys

from . import __version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="modscope",
        description="See inside a PyTorch-style nn.Module while it trains: hook tracing, graphviz "
                    "diagrams and a live terminal UI, on modscope's NumPy engine.",
    )
    parser.add_argument("--version", action="version", version=f"modscope {__version__}")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    parser.parse_args(argv)
    parser.print_help(sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
