"""One training step of the classic MNIST ``Net`` (modscope/examples/mnist_net.py: conv 10@5x5, conv 20@5x5,
Dropout2d, fc 320-50-10, log_softmax) at batch 64, float32: forward, NLL loss, backward and an SGD
momentum update, the engine against torch CPU, interleaved, one BLAS/OpenMP thread each. Both
start from the same weights and see the same 64 digits.

Also the peak memory of one step above what the process holds between steps:

- engine: ``tracemalloc`` around one step. NumPy reports every array buffer it allocates to
  tracemalloc, so this counts all arrays (activations, saved tensors, im2col columns, gradients,
  temporaries) plus the Python objects of the graph.
- torch: ``torch.profiler`` with ``profile_memory=True`` around one step; the peak of the CPU
  allocator's "Total Allocated" counter, which counts every tensor storage (activations, saved
  tensors, gradients, temporaries) but not autograd's C++ node objects.

Both count the bytes a step allocates on top of the model, optimizer state and input that already
exist; gradients count, since ``zero_grad()`` sets them to None. What either library's allocator
keeps cached is not counted.

Run: ``.venv/bin/python bench/bench_net_step.py`` (``--rounds``/``--steps`` for more samples,
``--profile`` for where the engine's step spends its time, per function)."""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import sys
import tempfile
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "modscope" / "examples"))
os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")  # the profiler warns about blocks allocated before it started

import _common  # noqa: E402  (pins BLAS threads before NumPy loads)
from _backend import load  # noqa: E402
from _train import digit_arrays  # noqa: E402

import engine  # noqa: E402

BATCH, LR, MOMENTUM = 64, 0.01, 0.5  # the example's recipe
NET_FILE = ROOT / "modscope" / "examples" / "mnist_net.py"


def make_step(lib: Any, model: Any) -> Callable[[Any, Any], Any]:
    """The example's training step as a closure over ``model`` and its optimizer."""
    optimizer = lib.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    nll_loss = lib.nn.functional.nll_loss

    def step(x, y):
        optimizer.zero_grad()
        loss = nll_loss(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    return step


def setups(torch: Any) -> dict[str, tuple[Callable[[Any, Any], Any], Any, Any]]:
    """``{name: (step, x, y)}`` for the engine and (when installed) torch, same weights and data."""
    xtr, ytr, _, _ = digit_arrays(BATCH, 1)
    engine.manual_seed(0)
    e_model = load(NET_FILE, "engine").Net()
    out = {"engine": (make_step(engine, e_model), engine.from_numpy(xtr), engine.from_numpy(ytr))}
    if torch is not None:
        t_model = load(NET_FILE, "torch").Net()
        t_model.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in e_model.state_dict().items()})
        out["torch"] = (make_step(torch, t_model), torch.from_numpy(xtr), torch.from_numpy(ytr))
    return out


def engine_peak_bytes(step: Callable[[Any, Any], Any], x: Any, y: Any) -> tuple[int, int]:
    """(peak bytes above the between-steps baseline during one step, bytes still held after it)."""
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        step(x, y)
        current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak - base, current - base


def torch_peak_bytes(torch: Any, step: Callable[[Any, Any], Any], x: Any, y: Any) -> tuple[int, int]:
    """The same two figures for torch, from the profiler's allocator events."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        step(x, y)
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "trace.json"
        prof.export_chrome_trace(str(trace))
        events = json.loads(trace.read_text())["traceEvents"]
    memory = sorted((e for e in events if e.get("name") == "[memory]"), key=lambda e: e["ts"])
    held, peak = 0, 0
    for event in memory:  # a running sum of allocations (+) and frees (-) since the profiler started
        held += event["args"]["Bytes"]
        peak = max(peak, held)
    return peak, held


def profile_engine(step: Callable[[Any, Any], Any], x: Any, y: Any, steps: int, top: int) -> None:
    """cProfile over ``steps`` engine steps: the functions with the most own time."""
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(steps):
        step(x, y)
    profiler.disable()
    stats = pstats.Stats(profiler)
    rows = sorted(stats.stats.items(), key=lambda kv: kv[1][2], reverse=True)[:top]
    total = sum(v[2] for v in stats.stats.values())
    print(f"engine step, cProfile over {steps} steps (own time per step; profiling inflates small calls):")
    for (file, line, name), (_, ncalls, tottime, cumtime, _) in rows:
        where = f"{Path(file).parent.name}/{Path(file).name}:{line}" if line else file
        print(f"  {tottime / steps * 1e3:7.3f} ms own {cumtime / steps * 1e3:7.3f} ms cum "
              f"{ncalls // steps:4d} calls/step  {name} ({where})")
    print(f"  {total / steps * 1e3:7.3f} ms total own time per step")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--profile", action="store_true", help="also profile the engine's step per function")
    args = parser.parse_args()

    torch = _common.try_torch()
    runs = setups(torch)
    candidates = {name: (lambda s=s, x=x, y=y: s(x, y)) for name, (s, x, y) in runs.items()}
    medians = _common.interleaved(candidates, args.rounds, args.steps)
    print(f"MNIST Net training step (SGD momentum), batch {BATCH}, float32, 1 thread; median of "
          f"{args.rounds} rounds x {args.steps} steps")
    for name, sec in medians.items():
        print(f"  {name:7s} {sec * 1e3:7.2f} ms/step")
    if "torch" in medians:
        print(f"  engine / torch = {medians['engine'] / medians['torch']:.3f}")

    print("peak memory of one step above the between-steps baseline (still held after the step):")
    peak, held = engine_peak_bytes(*runs["engine"])
    print(f"  engine  {peak / 2**20:6.2f} MiB  ({held / 2**10:.1f} KiB)  [tracemalloc]")
    if torch is not None:
        t_peak, t_held = torch_peak_bytes(torch, *runs["torch"])
        print(f"  torch   {t_peak / 2**20:6.2f} MiB  ({t_held / 2**10:.1f} KiB)  [torch.profiler memory events]")
        print(f"  engine / torch = {peak / t_peak:.2f}")
    if args.profile:
        profile_engine(*runs["engine"], steps=50, top=18)


if __name__ == "__main__":
    main()
