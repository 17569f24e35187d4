"""The TUI's subcommands: ``run``, ``replay`` and ``demo`` (registered by ``cli.build_parser``)."""

from __future__ import annotations

import argparse
import sys


def add_commands(subcommands: argparse._SubParsersAction) -> None:
    from ..views.tui.launch import DEMOS

    run = subcommands.add_parser(
        "run", help="run your training script with the live TUI",
        description="Run a training script in a child process with tracing on (no change to the script: the "
                    "engine's global module hooks find the models that run; modscope.watch(model) narrows it), "
                    "stream its events to the TUI and record them to a trace file.")
    run.add_argument("script", help="the training script")
    run.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the script")
    run.add_argument("--trace-file", help="where to record (default: modscope-traces/SCRIPT-TIME.jsonl.gz)")
    run.add_argument("--stats", action="store_true", help="tensor statistics and NaN/Inf detection (slower)")
    run.set_defaults(run=_run)

    replay = subcommands.add_parser("replay", help="open the TUI on a recorded trace file",
                                    description="Open the TUI on a recorded trace (.jsonl or .jsonl.gz).")
    replay.add_argument("trace", help="the trace file")
    replay.set_defaults(run=_replay)

    demo = subcommands.add_parser("demo", help="train an example on the bundled digits with the live TUI",
                                  description="Train one of the examples on the bundled MNIST digits (or its toy "
                                              "task) and watch it in the TUI.")
    demo.add_argument("--model", choices=list(DEMOS), default="net", help="which example (default: net)")
    demo.add_argument("--trace-file", help="where to record (default: modscope-traces/...)")
    demo.add_argument("--no-stats", action="store_true", help="skip tensor statistics (faster)")
    demo.set_defaults(run=_demo)


def _fail(command: str, message: str) -> int:
    print(f"modscope {command}: error: {message}", file=sys.stderr)
    return 1


def _run(args: argparse.Namespace) -> int:
    from ..views.tui.launch import LaunchError, run_script

    try:
        return run_script(args.script, args.args, args.trace_file, stats=args.stats)
    except LaunchError as e:
        return _fail("run", str(e))


def _replay(args: argparse.Namespace) -> int:
    from ..views.tui.launch import LaunchError, replay

    try:
        return replay(args.trace)
    except LaunchError as e:
        return _fail("replay", str(e))


def _demo(args: argparse.Namespace) -> int:
    from ..views.tui.launch import LaunchError, demo

    try:
        return demo(args.model, args.trace_file, stats=not args.no_stats)
    except LaunchError as e:
        return _fail("demo", str(e))
