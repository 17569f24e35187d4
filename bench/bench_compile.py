"""What ``--eager`` / ``modscope.trace(model, eager=True)`` costs, by hand: a small transformer
block stack trained on CPU (one thread), its step timed as

- ``eager``: the plain model, uncompiled (twice: ``eager (A/A)`` is the A/A row);
- ``compiled``: ``torch.compile(model)`` (inductor, which needs a C compiler: ``gcc`` here), warmed
  up before timing so compilation is not counted;
- ``compiled, force_eager``: the same compiled wrapper under ``torch.compiler.set_stance
  ("force_eager")``, what ``eager=True`` and ``--eager`` run (``--eager`` sets TORCHDYNAMO_DISABLE,
  so ``torch.compile`` returns the model: the ``eager`` row);
- ``traced eager=True``: the compiled wrapper called inside ``modscope.trace(model, eager=True)``
  with every step in full detail: what a user watching a compiled script pays per step.

All four are timed in interleaved rounds (one step of each in turn, ``--steps`` per round after
``--warmup``), so load changes hit them alike; the table gives each row's median step and its ratio
to the median eager step. Run: ``.venv/bin/python bench/bench_compile.py [--steps 200] [--warmup 20]``.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn as nn

import modscope


class Block(nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, 4, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.ln1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


def make(d: int = 64, layers: int = 4) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(*[Block(d) for _ in range(layers)], nn.Linear(d, 10))


def step(call, opt, x, y) -> float:
    t0 = time.perf_counter()
    loss = nn.functional.cross_entropy(call(x).mean(1), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    args = ap.parse_args()
    torch.set_num_threads(1)
    x, y = torch.randn(8, 32, 64), torch.randint(0, 10, (8,))
    models = {name: make() for name in ("eager", "eager (A/A)", "compiled", "compiled, force_eager",
                                        "traced eager=True")}
    opts = {name: torch.optim.SGD(m.parameters(), lr=0.01) for name, m in models.items()}
    calls = {name: m for name, m in models.items()}
    t0 = time.perf_counter()
    for name in ("compiled", "compiled, force_eager", "traced eager=True"):
        calls[name] = torch.compile(models[name])
        step(calls[name], opts[name], x, y)  # compile now (inductor), not in the timed steps
    print(f"compiling three copies (inductor, first step each): {time.perf_counter() - t0:.1f} s")
    # The trace runs throughout (its stance, force_eager, is global): the compiled row alone
    # switches back to the default stance for its step.
    tr = modscope.trace(models["traced eager=True"], eager=True, graph=False, max_events=10_000).start()
    times: dict[str, list[float]] = {name: [] for name in models}
    try:
        for i in range(args.warmup + args.steps):
            for name in models:
                if name == "compiled":
                    torch.compiler.set_stance("default")
                    dt = step(calls[name], opts[name], x, y)
                    torch.compiler.set_stance("force_eager")
                else:
                    dt = step(calls[name], opts[name], x, y)
                if i >= args.warmup:
                    times[name].append(dt)
    finally:
        tr.stop()
    base = statistics.median(times["eager"])
    print(f"{'step':<24}{'median ms':>10}{'× eager':>9}")
    for name, ts in times.items():
        m = statistics.median(ts)
        print(f"{name:<24}{m * 1e3:>10.2f}{m / base:>9.2f}")


if __name__ == "__main__":
    main()
