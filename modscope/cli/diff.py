"""``modscope diff A B``: compare two trace files (or two steps, ``run.jsonl@12 run.jsonl@13``, or
two ranks of one run, ``run.jsonl#0 run.jsonl#1``) module by module and name the first module
where they part (``views.diff``).

Exit status: 0 when nothing differs beyond the threshold, 1 when something does, 2 on bad input
(a missing or malformed file, a step the file does not have): one line on stderr naming the file.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from .failure import fail

PIPED_WIDTH = 200  # columns for a report written to a pipe or a file


def add_command(subcommands: argparse._SubParsersAction) -> None:
    """Register ``diff``."""
    p = subcommands.add_parser(
        "diff", help="compare two traces (or two steps of one) module by module",
        description="Compare two recorded traces module by module, in tree order: structure (modules, "
                    "parameters, shapes, dtypes), firing order, per-module numbers (output and gradient "
                    "statistics, parameter norms, gradient norms, update ratios, times) and autograd ops. "
                    "The first module whose numbers part beyond --rtol is named at the top.",
        epilog="FILE@STEP selects one step (e.g. run.jsonl@12 run.jsonl@13 compares two steps of one run; "
               "with one side's step given, the other compares the same step number). Without a step, every "
               "step both traces have is compared pairwise. FILE#RANK selects a rank of a run recorded by several "
               "(run.jsonl#0 run.jsonl#1 compares rank 0 with rank 1, run.jsonl#1@12 both): ranks are compared on "
               "what data parallelism keeps equal, their parameters. Exit status: 0 same within --rtol, "
               "1 different, 2 bad input.")
    p.add_argument("a", metavar="A", help="trace file (.jsonl or .jsonl.gz), optionally FILE#RANK, FILE@STEP or "
                                          "FILE#RANK@STEP")
    p.add_argument("b", metavar="B", help="trace file to compare with, optionally FILE#RANK, FILE@STEP or "
                                          "FILE#RANK@STEP")
    p.add_argument("--rtol", type=_rtol, default=None,
                   help="relative difference beyond which numbers differ (default: 1e-3)")
    p.add_argument("--timing", type=_rtol, nargs="?", const=0.5, default=None, metavar="RTOL",
                   help="let forward/backward times count as differences beyond RTOL (default when given: "
                        "0.5); without it times are shown but never count")
    p.add_argument("--json", action="store_true", help="print the diff as JSON (plain data) instead of the report")
    p.add_argument("--width", type=int, default=None, help="report width (default: the terminal's)")
    p.set_defaults(run=_run)


NO_STATS_NOTE = ("the Forward and Backward columns show \"–\": the traces have no tensor statistics to "
                 "compare (record both with `modscope run --stats` or `modscope.trace(model, stats=True)`); "
                 "shapes, parameters and times are compared")


def _has_tensor_stats(result: Any) -> bool:
    """Whether any module's inputs, outputs or gradients were compared by their statistics (a
    trace recorded without ``stats`` has their shapes only)."""
    from ..views.diff.model import ACTIVATIONS, GRADIENTS

    wanted = ACTIVATIONS + GRADIENTS
    return any(c in m.worst for s in result.steps for m in s.modules.values() for c in wanted)


def _rtol(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}")
    return value


def split_step(arg: str) -> tuple[str, int | None]:
    """``run.jsonl@12`` -> ``("run.jsonl", 12)``; a name that is itself a file, or has no integer
    after its last ``@``, is a file name."""
    name, at, step = arg.rpartition("@")
    if not at or os.path.exists(arg):
        return arg, None
    try:
        return name, int(step)
    except ValueError:
        return arg, None


def _run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from ..events.files import TraceFileError
    from ..views.diff import DEFAULT_RTOL, DiffInputError, diff

    (path_a, step_a), (path_b, step_b) = split_step(args.a), split_step(args.b)
    step: Any = None if step_a is None and step_b is None else (step_a, step_b)
    try:
        result = diff(path_a, path_b, step, rtol=DEFAULT_RTOL if args.rtol is None else args.rtol,
                      timing=args.timing)
    except (TraceFileError, DiffInputError) as exc:
        return fail("diff", str(exc))
    if result.steps and not _has_tensor_stats(result):
        result.notes.append(NO_STATS_NOTE)
    for side in (result.a, result.b):
        if side.truncated:
            print(f"modscope diff: warning: {side.name} was cut off (no end of recording); comparing what it has",
                  file=sys.stderr)
    if args.json:
        json.dump(result.to_dict(), sys.stdout, allow_nan=False)
        sys.stdout.write("\n")
    else:
        # piped (not a terminal), rich would squeeze the report into 80 columns
        width = args.width or (None if sys.stdout.isatty() else PIPED_WIDTH)
        Console(width=width).print(result)
    return result.exit_code
