"""The TUI's subcommands: ``run``, ``replay`` and ``demo`` (registered by ``cli.build_parser``).

``run --backend auto|engine|torch`` says which framework the child traces (auto: torch when the
script imports torch); ``demo --backend engine|torch`` trains the example under that framework.
Needing PyTorch without having it is one line saying how to install it, and exit status 1.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .failure import fail


def add_commands(subcommands: argparse._SubParsersAction) -> None:
    """Register ``run``, ``replay`` and ``demo``."""
    _add_run(subcommands)
    replay = subcommands.add_parser("replay", help="open the TUI on a recorded trace file",
                                    description="Open the TUI on a recorded trace (.jsonl or .jsonl.gz).")
    replay.add_argument("trace", help="the trace file")
    replay.add_argument("--compare", metavar="B", help="compare each step shown with the same step of trace B "
                                                      "(Δ badges, a Δ column, where the firing orders part)")
    replay.set_defaults(run=_replay)
    _add_demo(subcommands)
    from .record import add_command as add_record  # headless: no viewer

    add_record(subcommands)
    from .attach import add_command as add_attach  # a viewer on a job that serves

    add_attach(subcommands)


def _add_run(subcommands: argparse._SubParsersAction) -> None:
    from ..capture.compiled import add_eager_flag
    from ..capture.params import add_exact_stats_flag
    from ..views.tui.launch import BACKENDS
    from . import _positive, add_detail_flags

    run = subcommands.add_parser(
        "run", help="run your training script with the live TUI",
        description="Run a training script in a child process with tracing on (no change to the script: the "
                    "framework's global module hooks find the models that run; modscope.watch(model) narrows "
                    "it), stream its events to the TUI and record them to a trace file. Works on PyTorch "
                    "scripts and on scripts using the bundled engine.")
    run.add_argument("--backend", choices=BACKENDS, default="auto",
                     help="framework to trace (default: auto, torch when the script imports torch, else the engine)")
    run.add_argument("--trace-file", help="where to record (default: modscope-traces/SCRIPT-TIME.jsonl.gz)")
    run.add_argument("--stats", action="store_true", help="tensor statistics and NaN/Inf detection (slower)")
    add_detail_flags(run)
    add_eager_flag(run)
    add_exact_stats_flag(run)
    run.add_argument("--nproc-per-node", type=_positive, metavar="N",
                     help="start N ranks through torch.distributed.run (torchrun): the TUI follows rank 0, every "
                          "rank records its own file beside the trace file (FILE#R opens rank R)")
    run.add_argument("script", help="the training script")
    run.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the script")
    run.set_defaults(run=_run)


def _add_demo(subcommands: argparse._SubParsersAction) -> None:
    from ..views.tui.launch import DEMO_BACKENDS, DEMOS

    demo = subcommands.add_parser("demo", help="train an example on the bundled digits with the live TUI",
                                  description="Train one of the examples on the bundled MNIST digits (or its toy "
                                              "task) and watch it in the TUI, on the bundled engine or on "
                                              "PyTorch (the same example file).")
    demo.add_argument("--model", choices=list(DEMOS), default="net", help="which example (default: net)")
    demo.add_argument("--backend", choices=DEMO_BACKENDS, default="engine",
                      help="train under the bundled engine or real PyTorch (default: engine)")
    demo.add_argument("--trace-file", help="where to record (default: modscope-traces/...)")
    demo.add_argument("--no-stats", action="store_true", help="skip tensor statistics (faster)")
    demo.set_defaults(run=_demo)


def script_framework(script: str, backend: str) -> str:
    """The framework the child will trace for ``script``: ``backend``, or for ``"auto"`` the one the
    script imports (the child's own rule)."""
    if backend != "auto":
        return backend
    from ..capture.child import script_framework as detect

    return detect(script)


def _run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..capture.compiled import apply_eager_flag
    from ..capture.params import apply_exact_stats_flag
    from ..views.tui.launch import LaunchError, check_framework, run_script
    from . import policy_from_flags

    _tell_child(policy_from_flags(args))
    apply_eager_flag(args)  # (the child inherits this environment)
    apply_exact_stats_flag(args)  # (so does this)
    try:
        if Path(args.script).is_file():
            check_framework(script_framework(args.script, args.backend))
        ranks = {"nproc": args.nproc_per_node} if args.nproc_per_node else {}  # (one process: as before)
        return run_script(args.script, args.args, args.trace_file, stats=args.stats, backend=args.backend, **ranks)
    except LaunchError as e:
        return fail("run", str(e))


def _tell_child(policy: Any) -> None:
    """Which steps the child watches in full (``capture.sampling``): it reads the environment
    it inherits, so the launcher (and torch's, for ranks) passes it on unchanged."""
    import os

    from ..capture.sampling import ENV_VARIABLE

    os.environ[ENV_VARIABLE] = policy.to_env()


def _replay(args: argparse.Namespace) -> int:
    from ..views.tui.compare import CompareError
    from ..views.tui.launch import LaunchError, replay

    try:
        return replay(args.trace, compare=args.compare)
    except LaunchError as e:
        return fail("replay", str(e))
    except CompareError as e:  # the second trace: a bad argument, as argparse reports one (status 2)
        print(f"modscope replay: error: --compare: {e}", file=sys.stderr)
        return 2


def _demo(args: argparse.Namespace) -> int:
    from ..capture.sampling import DetailPolicy
    from ..views.tui.launch import LaunchError, demo

    _tell_child(DetailPolicy(None))  # the demo shows every step in full: it is there to be looked at
    try:
        return demo(args.model, args.trace_file, stats=not args.no_stats, backend=args.backend)
    except LaunchError as e:
        return fail("demo", str(e))
