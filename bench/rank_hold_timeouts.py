"""What a pause does to gloo's collective timeouts, on a real 2-rank DDP run (CPU, gloo), through
``modscope run --nproc-per-node 2``'s own pieces (the viewer's socket source, state and
``RankHold``; no screen).

Two runs of ``tests/tui/ddp_hold.py`` with ``init_process_group("gloo", timeout=T)``:

- ``every rank``: the viewer pauses every rank (``RankHold``: one step boundary), holds them for
  ``--hold`` seconds (longer than T), then resumes. Expected: no timeout, the run ends with 0.
- ``rank 0 only`` (what ``modscope run`` did before): rank 0 alone is paused; rank 1 enters the
  next step's allreduce and waits there. Expected: gloo raises its timeout in rank 1 after about
  T seconds, and torch's launcher stops the run.

    .venv/bin/python bench/rank_hold_timeouts.py [--timeout 5] [--hold 15]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from modscope.views.tui.launch import start_child  # noqa: E402
from modscope.views.tui.ranks import RankHold  # noqa: E402
from modscope.views.tui.sources import SocketSource  # noqa: E402
from modscope.views.tui.state import SessionState  # noqa: E402

SCRIPT = ROOT / "tests" / "tui" / "ddp_hold.py"


def wait_for(condition, timeout: float, poll: float = 0.05, each=None) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if each is not None:
            each()
        if condition():
            return True
        time.sleep(poll)
    return False


class Run:
    """A 2-rank run with the viewer's pieces: the source, the state, the hold."""

    def __init__(self, trace: Path, timeout: float, steps: int = 400) -> None:
        self.source, self.state, self.hold = SocketSource(ranks=2), SessionState(), RankHold()
        self.source.start(self.state)
        self.child = start_child(self.source, str(SCRIPT), ["--steps", str(steps), "--timeout", str(timeout)],
                                 str(trace), backend="torch", nproc=2)

    def steps(self) -> dict[int, int]:
        with self.state.lock:
            return {r: s.step for r, s in self.state.all_ranks().items()}

    def statuses(self) -> dict[int, str]:
        with self.state.lock:
            return {r: s.status for r, s in self.state.all_ranks().items()}

    def settle(self) -> None:
        """What the app does every tick: send ``RankHold``'s messages."""
        with self.state.lock:
            moves = self.hold.settle(self.state.board, self.state.all_ranks()) if self.state.board else {}
        for rank, message in moves.items():
            self.source.control(message, rank=rank)

    def held_at(self) -> int | None:
        with self.state.lock:
            return RankHold.held_at(self.state.all_ranks())

    def close(self) -> int:
        code = self.child.stop(self.source)
        self.source.stop()
        return code


def every_rank(trace: Path, timeout: float, hold: float) -> dict:
    run = Run(trace, timeout)
    try:
        assert wait_for(lambda: len(run.steps()) == 2 and min(run.steps().values()) >= 3, 180), "no steps"
        run.hold.start()
        run.source.control({"cmd": "pause"})
        t0 = time.monotonic()
        assert wait_for(lambda: run.held_at() is not None, 30, each=run.settle), f"not held: {run.statuses()}"
        held, took = run.held_at(), time.monotonic() - t0
        time.sleep(hold)
        still = run.held_at()
        alive = run.child.returncode is None
        with run.state.lock:
            run.hold.release(run.state.all_ranks())
        run.source.control({"cmd": "resume"})
        assert wait_for(lambda: max(run.steps().values()) >= held + 3, 60), "did not go on after the resume"
        after = run.steps()
        run.source.control({"cmd": "stop"})
        code = run.child.proc.wait(timeout=60)
        return {"held_at": held, "held_after_s": took, "held_for_s": hold, "still_held": still, "alive": alive,
                "steps_after_resume": after, "exit": code, "log": list(run.child.log)[-5:]}
    finally:
        run.close()


def rank_0_only(trace: Path, timeout: float, hold: float) -> dict:
    run = Run(trace, timeout)
    try:
        assert wait_for(lambda: len(run.steps()) == 2 and min(run.steps().values()) >= 3, 180), "no steps"
        run.source.control({"cmd": "pause"}, rank=0)
        assert wait_for(lambda: run.statuses().get(0) == "paused", 30), "rank 0 did not pause"
        t0 = time.monotonic()

        def gone() -> bool:
            with run.state.lock:
                last = run.state.board.last.get(1)
                return last is not None and bool(last.ended)

        rank_1_gone = wait_for(gone, timeout + hold + 30)
        rank_1_after = time.monotonic() - t0
        ended = wait_for(lambda: run.child.returncode is not None, timeout + hold + 30)
        took = time.monotonic() - t0
        log = [line.strip() for line in run.child.log if "imed out" in line][:2]
        return {"rank_1_stream_ended": rank_1_gone, "rank_1_ended_after_s": round(rank_1_after, 2),
                "run_ended": ended, "run_ended_after_s": round(took, 2), "exit": run.child.returncode,
                "gloo": log}
    finally:
        run.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--timeout", type=float, default=5.0, help="gloo's collective timeout, seconds")
    parser.add_argument("--hold", type=float, default=15.0, help="how long the paused run is held, seconds")
    parser.add_argument("--out", default="/tmp/modscope-rank-hold", help="folder for the traces")
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    print(f"load: {os.getloadavg()}")
    print("every rank held:", every_rank(out / "every.jsonl", args.timeout, args.hold), flush=True)
    print("rank 0 alone paused:", rank_0_only(out / "alone.jsonl", args.timeout, args.hold), flush=True)


if __name__ == "__main__":
    main()
