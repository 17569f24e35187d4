"""Tracing cost, by hand:

1. the seed MNIST ``Net`` training step (batch 64: forward, NLL loss, backward, SGD momentum)
   untraced vs under ``modscope.trace(model)`` with ``stats=False`` and ``stats=True``, copies of
   the model interleaved step by step in one run (600 rounds), one BLAS thread (and, for
   reference, a copy with four no-op hooks on every module: the engine's floor);
2. the JSON Lines sink: realistic events (module events with tensor summaries) written per
   second, plain and gzip.

Run: ``.venv/bin/python bench/bench_tracing.py``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "modscope" / "examples"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import _common  # noqa: E402,F401  (pins BLAS threads before NumPy loads)
import numpy as np  # noqa: E402
from mnist_net import Net  # noqa: E402

import engine  # noqa: E402
import engine.nn.functional as F  # noqa: E402
import modscope  # noqa: E402
from engine.utils.hooks import transparent_hook  # noqa: E402


def make_step(model, opt, x, y):
    def step():
        opt.zero_grad()
        loss = F.nll_loss(model(x), y)
        loss.backward()
        opt.step()
    return step


def add_noop_hooks(model) -> None:
    """The hooks ``modscope.trace(model)`` registers on every module, as no-ops."""
    for module in model.modules():
        module.register_forward_pre_hook(lambda *a: None, prepend=True)
        module.register_forward_hook(lambda *a: None, always_call=True)
        module.register_full_backward_pre_hook(transparent_hook(lambda *a: None), prepend=True)
        module.register_full_backward_hook(transparent_hook(lambda *a: None))


def net_step(noop_hooks: bool = False, **trace_kw) -> tuple:
    """One seed ``Net`` training step on fixed weights and digits (batch 64, eval mode: dropout
    off, identical work in every copy), as a function, and its trace: with ``trace_kw``, a bounded
    in-memory ``modscope.trace`` of the model, started (the caller stops it); ``noop_hooks``: the
    four hooks a trace registers, as no-ops, instead."""
    rng = np.random.default_rng(0)
    x = engine.from_numpy(rng.random((64, 1, 28, 28), dtype=np.float32))
    y = engine.from_numpy(rng.integers(0, 10, 64))
    engine.manual_seed(0)
    model = Net()
    model.eval()
    opt = engine.optim.SGD(model.parameters(), lr=0.01, momentum=0.5)
    if noop_hooks:
        add_noop_hooks(model)
    trace = modscope.trace(model, max_events=20_000, **trace_kw).start() if trace_kw else None
    return make_step(model, opt, x, y), trace


def tracing_overhead(rounds: int, steps: int) -> dict[str, float]:
    steps_by_name, traces = {}, []
    # "untraced again" is a second, identical untraced copy: its ratio shows the noise floor;
    # "no-op hooks" has the four hooks a trace registers on every module, doing nothing: what the
    # engine's hook machinery costs before the tracer does any work.
    for name, kw in (("untraced", {}), ("untraced again", {}), ("no-op hooks", {"noop_hooks": True}),
                     ("stats=False", {"stats": False}), ("stats=True", {"stats": True})):
        steps_by_name[name], trace = net_step(**kw)
        if trace is not None:  # running for the whole benchmark
            traces.append(trace)
    result = _common.interleaved(steps_by_name, rounds, steps, warmup=30)
    for tr in traces:
        tr.stop()
    return result


def sink_throughput(n: int) -> dict[str, float]:
    fixture = Path(__file__).resolve().parent.parent / "tests" / "tui" / "data" / "small_trace.jsonl"
    body = [json.loads(line) for line in fixture.read_text().splitlines()
            if json.loads(line)["kind"] in ("forward_pre", "forward", "backward_pre", "backward")]
    events = [{**body[i % len(body)], "seq": i} for i in range(n)]
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for suffix in (".jsonl", ".jsonl.gz"):
            sink = modscope.JsonlSink(Path(tmp) / f"t{suffix}")
            start = time.perf_counter()
            for i, e in enumerate(events):
                sink.write(e)
                if i % 100 == 99:
                    sink.flush()  # a training step every 100 events, as in a small model
            sink.close()
            out[suffix] = n / (time.perf_counter() - start)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    # One step per candidate per round, many rounds: the machine's slow drifts hit every
    # candidate alike (rounds of 10 steps let a drift land on one candidate's whole round).
    parser.add_argument("--rounds", type=int, default=600)
    parser.add_argument("--steps", type=int, default=1)
    parser.add_argument("--events", type=int, default=200_000)
    args = parser.parse_args()
    med = tracing_overhead(args.rounds, args.steps)
    base = med["untraced"]
    print(f"Net training step, batch 64, 1 thread; median of {args.rounds} rounds x {args.steps} steps")
    for name, sec in med.items():
        print(f"  {name:15s} {sec * 1e3:7.2f} ms/step   x{sec / base:.3f}")
    rates = sink_throughput(args.events)
    print(f"JSON Lines sink, {args.events:,} module events (flush every 100):")
    for suffix, rate in rates.items():
        print(f"  {suffix:9s} {rate:,.0f} events/s")


if __name__ == "__main__":
    main()
