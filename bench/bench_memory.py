"""Peak memory of one warm training step of the MNIST ``Net`` (modscope/examples/mnist_net.py: conv 10@5x5,
conv 20@5x5, Dropout2d, fc 320-50-10, log_softmax, NLL loss, SGD momentum) at batch 64, float32:
the engine against torch CPU, one thread each, measured the same way for both; plus the step-time
ratio. Run by hand (never a timed assertion in the tests):

    .venv/bin/python bench/bench_memory.py [--runs 7] [--reps 5]

How memory is measured, and why that way: as the operating system sees it, the growth of the
process's resident set over one step, in a fresh subprocess per library and run.

- In the child: build the model, optimizer and batch, run 3 warm steps (lazy initialisation,
  optimizer state, thread pools and kernels' first-call buffers come before the measurement);
  then, per repetition, ``malloc_trim(0)`` (hands freed-but-cached heap pages back to the OS, so
  the baseline is what the process really holds between steps), read ``VmRSS``, reset the
  peak-RSS counter (``echo 5 > /proc/self/clear_refs``), run one step, read ``VmHWM``. The
  figure is ``VmHWM - VmRSS before``: every page the step touched beyond what it started with.
- Why not ``tracemalloc`` against torch's profiler (what bench_net_step.py prints): the two count
  different things (tracemalloc counts NumPy buffers and every Python object of the graph; the
  profiler counts tensor storages of torch's CPU allocator, not its C++ autograd nodes or
  oneDNN/BLAS scratch), so their ratio is not a fair comparison. Page-level RSS counts everything
  for both libraries, through the same glibc allocator both use, with the same trim before.
- What it does not count: memory freed and re-used within the step without touching new pages
  (both libraries alike), and pages the allocator already held before the step (trimmed away).

The report: the median over ``--runs`` child processes (each the median of ``--reps``
repetitions) for the engine, torch, and the engine again (the A/A row: the spread between two
identical measurements, what a difference must exceed to mean something); then the step-time
ratio engine/torch from bench_net_step's interleaved timing.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "modscope" / "examples"))

import _common  # noqa: E402  (pins BLAS/OpenMP threads before NumPy or torch load)

NET_FILE = ROOT / "modscope" / "examples" / "mnist_net.py"
BATCH, LR, MOMENTUM, WARM = 64, 0.01, 0.5, 3


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def child(lib_name: str, reps: int) -> None:
    """Runs in the fresh subprocess: prints the per-repetition peak growths in bytes as JSON."""
    from _backend import load
    from _train import digit_arrays

    if lib_name == "torch":
        lib = _common.try_torch()
    else:
        import engine as lib
    xtr, ytr, _, _ = digit_arrays(BATCH, 1)
    lib.manual_seed(0)
    model = load(NET_FILE, lib_name).Net()
    optimizer = lib.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    x, y = lib.from_numpy(xtr), lib.from_numpy(ytr)
    nll_loss = lib.nn.functional.nll_loss

    def step() -> None:
        optimizer.zero_grad()
        loss = nll_loss(model(x), y)
        loss.backward()
        optimizer.step()

    for _ in range(WARM):
        step()
    libc = ctypes.CDLL("libc.so.6")
    growths = []
    for _ in range(reps):
        libc.malloc_trim(0)
        before = _status_kib("VmRSS")
        Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM to the current RSS
        step()
        growths.append((_status_kib("VmHWM") - before) * 1024)
    print(json.dumps(growths))


def measure(lib_name: str, reps: int) -> float:
    """One fresh child's median peak growth in bytes."""
    out = subprocess.run([sys.executable, __file__, "--child", lib_name, "--reps", str(reps)],
                         check=True, capture_output=True, text=True).stdout
    return statistics.median(json.loads(out.strip().splitlines()[-1]))


def step_time_ratio(rounds: int, steps: int) -> tuple[float, float]:
    """(engine ms/step, torch ms/step), interleaved as in bench_net_step."""
    import bench_net_step

    runs = bench_net_step.setups(_common.try_torch())
    candidates = {name: (lambda s=s, x=x, y=y: s(x, y)) for name, (s, x, y) in runs.items()}
    medians = _common.interleaved(candidates, rounds, steps)
    return medians["engine"] * 1e3, medians["torch"] * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7, help="fresh child processes per row")
    parser.add_argument("--reps", type=int, default=5, help="measured steps per child")
    parser.add_argument("--rounds", type=int, default=15, help="timing rounds (step-time ratio)")
    parser.add_argument("--steps", type=int, default=10, help="steps per timing round")
    parser.add_argument("--child", choices=["engine", "torch"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.reps)
        return

    rows = {"engine": [], "torch": [], "engine (A/A)": []}
    for _ in range(args.runs):  # interleaved, so drift on the machine hits every row alike
        for row in rows:
            rows[row].append(measure(row.split()[0], args.reps))
    med = {row: statistics.median(v) for row, v in rows.items()}
    print(f"MNIST Net training step, batch {BATCH}, float32, 1 thread: peak RSS growth over one warm step, "
          f"median of {args.runs} fresh processes x {args.reps} steps")
    for row, values in rows.items():
        spread = f"{min(values) / 2**20:.2f}-{max(values) / 2**20:.2f}"
        print(f"  {row:13s} {med[row] / 2**20:6.2f} MiB  (runs {spread} MiB)")
    print(f"  engine / torch        = {med['engine'] / med['torch']:.2f}")
    print(f"  engine / engine (A/A) = {med['engine'] / med['engine (A/A)']:.2f}")
    e_ms, t_ms = step_time_ratio(args.rounds, args.steps)
    print(f"step time (median of {args.rounds} rounds x {args.steps} steps, thread CPU time): engine "
          f"{e_ms:.2f} ms, torch {t_ms:.2f} ms, engine / torch = {e_ms / t_ms:.3f}")


if __name__ == "__main__":
    main()
