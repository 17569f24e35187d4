"""``modscope record``: run a training script with tracing on and no viewer (CI, SSH, batch jobs).

    modscope record [--trace-file F] [--stats] [--every N | --full] [--backend B] script.py [args]
    modscope record --nproc-per-node N [...] script.py [args]          # N ranks, torch's launcher
    torchrun --nproc-per-node N -m modscope record --trace-file F script.py [args]

The script runs in this process, as ``modscope run``'s child runs it (``capture.child.run_traced``:
the same runner, the same trace-file writer on its own thread): its stdout and stderr are this
process's, its exit code is this command's, and one line on stderr ends the run: where the trace
is and what it holds (steps, modules, events, dropped). SIGINT, SIGTERM and SIGHUP stop the script
and leave a complete trace (exit status 128 + the signal's number, as a shell reports a signal).

In a rank of several (torch's ``RANK`` is set: torchrun, ``--nproc-per-node``) every event carries
the rank, and rank R writes its own file beside F (``events.trace_paths``: F for rank 0,
``F`` with ``.rankR`` before its suffix for the others), which every command opens as one trace.
``--nproc-per-node N`` starts the N ranks through torch's own elastic launcher
(``torch.distributed.run``: its environment variables, rendezvous and failure handling): when a
rank dies the launcher stops the others, and this command names the rank, how it ended and its
last step, then exits with that rank's status.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any

from .failure import fail

REPORT_VARIABLE = "MODSCOPE_RECORD_REPORT"  # set by --nproc-per-node: where each rank writes its counts
SECRET_VARIABLE = "MODSCOPE_ATTACH_SECRET"  # set by --nproc-per-node --serve: the job's one secret, every rank's


def add_command(subcommands: argparse._SubParsersAction) -> None:
    """Register ``record``."""
    from ..capture.compiled import add_eager_flag
    from ..capture.params import add_exact_stats_flag
    from . import _positive, add_detail_flags

    p = subcommands.add_parser(
        "record", help="run your training script with tracing on and no TUI (CI, SSH, batch jobs, torchrun)",
        description="Run a training script with tracing on and no viewer: its output passes through, the "
                    "command exits with the script's exit code and ends with one line saying where the trace is "
                    "and what it holds. Under torchrun (or with --nproc-per-node) each rank records its own file "
                    "beside the trace file.",
        epilog="Ranks: rank 0 writes TRACE_FILE, rank R writes TRACE_FILE with .rankR before its suffix "
               "(run.jsonl.gz, run.rank1.jsonl.gz); replay, diff and load_trace open TRACE_FILE as the run and "
               "TRACE_FILE#R as rank R. Example: torchrun --nproc-per-node 2 -m modscope record --trace-file "
               "run.jsonl.gz train.py")
    p.add_argument("--backend", choices=("auto", "engine", "torch"), default="auto",
                   help="framework to trace (default: auto, torch when the script imports torch, else the engine)")
    p.add_argument("--trace-file", help="where to record (default: modscope-traces/SCRIPT-TIME.jsonl.gz; "
                                        "required under a launcher of your own)")
    p.add_argument("--stats", action="store_true", help="tensor statistics and NaN/Inf detection (slower)")
    p.add_argument("--nproc-per-node", type=_positive, metavar="N",
                   help="start N ranks on this machine through torch.distributed.run (torchrun)")
    add_detail_flags(p)
    add_eager_flag(p)
    add_exact_stats_flag(p)
    p.add_argument("--serve", metavar="[HOST:]PORT",
                   help="keep a live event stream open for `modscope attach` (127.0.0.1 unless HOST is given; "
                        "port 0: any free port); the job's secret goes to an owner-only file, never a command line")
    p.add_argument("script", help="the training script")
    p.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the script")
    p.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    if not Path(args.script).is_file():
        return fail("record", f"no such script: {args.script}")
    from ..capture.compiled import apply_eager_flag
    from ..capture.params import apply_exact_stats_flag

    apply_eager_flag(args)  # (the script, run here or by the ranks, inherits this environment)
    apply_exact_stats_flag(args)  # (so do the ranks: each takes it out in ``record_here``)
    if args.nproc_per_node is not None:
        return launch_ranks(args)
    return record_here(args)


def _writable(path: Path) -> str | None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
    except OSError as e:
        return f"cannot write the trace file {path}: {e.strerror}"
    return None


def record_here(args: argparse.Namespace) -> int:
    """Record the script in this process (a single process, or one rank of a launcher's)."""
    from ..capture.child import import_framework, run_traced
    from ..capture.compiled import eager_from_env
    from ..capture.params import exact_stats_from_env
    from ..capture.ranks import RankEnvironmentError, rank_from_env
    from ..events.sinks import BackgroundSink, JsonlSink, TeeSink
    from ..events.trace_paths import default_trace_path, rank_path
    from ..tracing import Trace
    from . import policy_from_flags

    try:
        origin = rank_from_env()
    except RankEnvironmentError as e:
        return fail("record", str(e))
    if origin is not None and not args.trace_file:
        return fail("record", "a rank of a launched job needs --trace-file F (rank 0 writes F, rank R beside "
                    "it), so that every rank records to the same run")
    rank = origin["rank"] if origin else 0
    path = rank_path(args.trace_file or default_trace_path(args.script), rank)
    problem = _writable(path)
    if problem:
        return fail("record", problem)
    try:
        backend = import_framework(args.script, args.backend)
        eager = eager_from_env()  # (--eager-full)
        exact_stats = exact_stats_from_env()  # (--exact-stats)
    except (ImportError, ValueError) as e:
        return fail("record", str(e))
    server = secret_file = controller = None
    shared_secret = os.environ.pop(SECRET_VARIABLE, None)  # (never seen by the script)
    if args.serve is not None:
        # The attached viewer holding the controls pauses, steps and sets breakpoints (as
        # ``modscope run``'s child: ``capture.control``). Ranks: each serves its own stream on
        # PORT + its local rank (a viewer attaches to every rank of the machine and holds them at
        # one step boundary); under --nproc-per-node they share one secret.
        from ..capture.control import Controller

        controller = Controller()
        try:
            server, secret_file = _serve(args.serve, controller, origin, shared_secret)
        except (ValueError, OSError) as e:
            return fail("record", f"--serve: {e}")
    # The file is written on a thread of its own (encoding, compression, I/O out of the training
    # loop), flushed every 25 ms: a hard kill loses at most that much. So is the live stream.
    sink = BackgroundSink(JsonlSink(path))
    if server is not None:
        sink = TeeSink(sink, BackgroundSink(server))
    policy = policy_from_flags(args)
    tr = Trace(None, stats=args.stats, sink=sink, max_events=1000, backend=backend, observer=controller,
               every=policy.every, first=policy.first, eager=eager, exact_stats=exact_stats)
    if controller is not None:
        controller.trace = tr
    try:
        code, signum = run_traced(tr, args.script, args.args, stop_signals=(signal.SIGINT,))
    finally:
        if secret_file is not None:
            secret_file.unlink(missing_ok=True)
    if signum is not None:
        code = 128 + signum
    counts = tr.counts()
    report_dir = os.environ.get(REPORT_VARIABLE)
    if report_dir and origin is not None:  # the launching command says it all in one line
        _write_report(Path(report_dir), rank, {**counts, "path": str(path), "code": code, "signal": signum})
        return code
    who = f"rank {rank} of {origin['world_size']}: " if origin else ""
    stopped = f" (stopped by {_signal_name(signum)})" if signum is not None else ""
    _say_at_once(f"modscope record: {who}trace {path}: {_holds(counts)}{stopped}")
    return code


def _say_at_once(line: str) -> None:
    """``line`` on stderr in one write: the ranks of a job say theirs at the same moment on one
    stderr, and print's text and newline, two writes, interleaved them on one line."""
    sys.stderr.flush()
    try:
        os.write(sys.stderr.fileno(), (line + "\n").encode())
    except (AttributeError, OSError, ValueError):  # no file descriptor (stderr captured in-process)
        sys.stderr.write(line + "\n")
        sys.stderr.flush()


def _serve(address: str, controller: Any = None, origin: dict[str, int] | None = None,
           secret: str | None = None) -> tuple[Any, Path]:
    """Start the live stream on ``address`` (``[HOST:]PORT``; a rank serves on PORT + its local
    rank) and write its secret file; say where on stderr (with a warning when it is reachable from
    other machines; a rank other than local rank 0 says nothing)."""
    import ipaddress

    from ..events.serve import EventServer, new_secret, parse_address, write_secret

    host, port = parse_address(address)
    local = origin["local_rank"] if origin and origin["world_size"] > 1 else None
    if local is not None:
        if port == 0:
            raise ValueError("a job of several ranks needs a port to serve on (rank R serves on PORT + its local "
                             "rank), not 0")
        port += local
    secret = secret or new_secret()
    server = EventServer(secret, host, port, on_control=controller.handle if controller is not None else None)
    secret_file = write_secret(server.port, secret)
    if local:
        return server, secret_file
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if not loopback:
        print(f"modscope record: warning: serving on {host}:{server.port}, reachable from other machines "
              "(a viewer still needs the job's secret)", file=sys.stderr)
    ranks = f" (rank 0; each local rank R on {server.port}+R)" if local is not None else ""
    print(f"modscope record: serving on {server.host}:{server.port}{ranks}: modscope attach "
          f"{server.host}:{server.port} (the job's secret: {secret_file}, owner-only)", file=sys.stderr, flush=True)
    return server, secret_file


def _holds(counts: dict[str, Any]) -> str:
    light = counts.get("light", 0)
    detail = f" ({counts.get('full', 0):,} full, {light:,} light)" if light else ""
    return (f"{counts['steps']:,} steps{detail}, {counts['modules']:,} modules, {counts['events']:,} events, "
            f"{counts['dropped']:,} dropped")


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def _write_report(folder: Path, rank: int, report: dict[str, Any]) -> None:
    try:
        (folder / f"rank{rank}.json").write_text(json.dumps(report), encoding="utf-8")
    except OSError:
        pass  # the launcher then reads the rank's trace file instead


def _read_report(folder: Path, rank: int) -> dict[str, Any] | None:
    try:
        report = json.loads((folder / f"rank{rank}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return report if isinstance(report, dict) else None


def launch_ranks(args: argparse.Namespace) -> int:
    """Start ``args.nproc_per_node`` ranks of ``modscope record`` through torch's elastic
    launcher, wait for them, and end with one line over every rank (naming a rank that died)."""
    from ..events.trace_paths import default_trace_path, rank_path, rank_paths
    from ..install_hints import TORCH_INSTALL

    if importlib.util.find_spec("torch") is None:
        return fail("record", "--nproc-per-node starts ranks through torch.distributed.run, and torch is not "
                    f"installed: {TORCH_INSTALL}")
    n = args.nproc_per_node
    trace = Path(args.trace_file) if args.trace_file else default_trace_path(args.script)
    problem = _writable(trace)
    if problem:
        return fail("record", problem)
    for rank, stale in rank_paths(trace).items():  # a longer earlier run's ranks are not this run's
        if rank >= n:
            stale.unlink(missing_ok=True)
    command = ["record", "--trace-file", str(trace), "--backend", args.backend, *(["--stats"] if args.stats else []),
               *(["--full"] if args.full else ["--every", str(args.every)]),
               *(["--serve", args.serve] if args.serve is not None else []), args.script, *args.args]
    report_dir = Path(tempfile.mkdtemp(prefix="modscope-ranks-"))
    env = {REPORT_VARIABLE: str(report_dir)}
    if args.serve is not None:  # one secret for the job: a viewer attaching to every rank reads one file
        from ..events.serve import new_secret

        env[SECRET_VARIABLE] = new_secret()
    try:
        failures, signum = run_elastic(n, command, env)
        reports = {rank: _read_report(report_dir, rank) for rank in range(n)}
    finally:
        shutil.rmtree(report_dir, ignore_errors=True)
    return _close_ranks(trace, n, reports, failures, signum, rank_path)


def run_elastic(nproc: int, command: list[str], env: dict[str, str]) -> tuple[dict[int, Any], int | None]:
    """Run ``python -m modscope COMMAND`` as ``nproc`` ranks on this machine through
    ``torch.distributed.run`` (a standalone rendezvous on a free port, no restarts), with ``env``
    added to their environment. Returns the launcher's failures (``{rank: ProcessFailure}``,
    empty when every rank succeeded) and the signal that stopped the launcher itself, if one did."""
    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.run import get_args_parser, run

    launcher = get_args_parser().parse_args(["--nproc-per-node", str(nproc), "--standalone", "--max-restarts", "0",
                                             "--monitor-interval", "0.1", "-m", "modscope", *command])
    saved = {key: os.environ.get(key) for key in env}
    os.environ.update(env)
    try:
        run(launcher)
    except ChildFailedError as e:
        return dict(e.failures), None
    except SignalException as e:
        return {}, int(e.sigval)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return {}, None


def _last_step(path: Path) -> int | None:
    """The last step a (possibly cut off) rank file holds."""
    from ..events.files import TraceFileError, TraceScan

    last = None
    try:
        for _, _, event in TraceScan(path):
            last = event["step"]
    except (TraceFileError, OSError):
        pass
    return last


def _killed_by_other(exitcode: int) -> bool:
    """A rank's exit code says it was killed by a signal other than the launcher's SIGTERM."""
    return exitcode < 0 and -exitcode != signal.SIGTERM


def _close_ranks(trace: Path, n: int, reports: dict[int, dict[str, Any] | None], failures: dict[int, Any],
                 signum: int | None, rank_path: Any) -> int:
    """The closing line over every rank, and the exit status: the first failed rank's (128 + N
    for a signal N), or 128 + the signal that stopped the launcher, or 0."""
    ok = [r for r in reports.values() if r is not None]
    counts = {"steps": max((r["steps"] for r in ok), default=0),
              "modules": reports[0]["modules"] if reports.get(0) else max((r["modules"] for r in ok), default=0),
              "events": sum(r["events"] for r in ok), "dropped": sum(r["dropped"] for r in ok)}
    files = f"{trace} and {n - 1} beside it" if n > 1 else str(trace)
    line = f"modscope record: trace {files} ({n} ranks): {_holds(counts)}"
    code = 0
    if failures:
        # The cause first: a rank killed by a signal the launcher does not send (a SIGKILL, a
        # segfault) before a rank that failed after it (a peer's collective then errors out).
        first_rank = min(failures, key=lambda r: (not _killed_by_other(failures[r].exitcode),
                                                  failures[r].timestamp, r))
        failure = failures[first_rank]
        how = (f"killed by {_signal_name(-failure.exitcode)}" if failure.exitcode < 0
               else f"exited with status {failure.exitcode}")
        step = _last_step(rank_path(trace, first_rank))
        at = f", last step {step}" if step is not None else ", before its first event"
        line += (f"; rank {first_rank} {how}{at} (its file ends there); the launcher stopped the other ranks")
        code = 128 - failure.exitcode if failure.exitcode < 0 else failure.exitcode
    elif signum is not None:
        line += f"; stopped by {_signal_name(signum)}"
        code = 128 + signum
    else:
        code = max((r["code"] for r in ok), default=0)
    print(line, file=sys.stderr, flush=True)
    return code
