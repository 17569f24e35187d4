"""Tracing cost on PyTorch, by hand:

1. the seed MNIST ``Net`` (``modscope/examples/mnist_net.py``, run under real torch through
   ``modscope/examples/_backend.load``) training step (batch 64 of random MNIST-shaped digits,
   ``model.train()``: zero_grad, forward, NLL loss, backward, SGD lr 0.01 momentum 0.5) untraced,
   an identical untraced copy (the A/A row: the noise floor), and under ``modscope.trace(model)``
   with ``stats=False`` and ``stats=True``, each trace started once and kept open for the whole
   benchmark (as in training) with a bounded in-memory log (``max_events``); copies of one model
   interleaved step by step in a seeded random order per round, one thread, medians of the
   thread's CPU time. Targets: x1.10 (``stats=False``) and x1.25 (``stats=True``);
2. peers, one forward of the same ``Net`` (batch 64): a plain forward, the forward inside a new
   ``modscope.trace`` per run (attach, forward, graph, detach; twice: the A/A row, the noise between
   two identical candidates), ``torchlens.trace`` (the current
   name of ``log_forward_pass``), ``torchview.draw_graph`` (graph object only, nothing rendered),
   ``torchinfo.summary(..., verbose=0)``; a peer whose import fails is reported "not installed".
   Target: modscope at least ten times cheaper than torchlens.

Section 1 runs before torchlens is imported or called: torchlens wraps torch's functions on its
first call and leaves them wrapped (its default), so every candidate of section 2 runs on the
wrapped functions, plain forward included, and section 1 on pristine torch.

Torch's optimizer step hooks are global: while the two traces of section 1 run, their pre-hooks
also see the untraced copies' optimizer steps and decide "not ours" (a cached check, microseconds)
-- a cost the untraced rows carry, as any other optimizer in a traced program would.

Run: ``OMP_NUM_THREADS=1 .venv/bin/python bench/bench_torch_tracing.py`` (``--rounds``, ``--runs``).
"""

from __future__ import annotations

import argparse
import copy
import importlib
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "modscope" / "examples"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import _common  # noqa: E402  (pins BLAS threads before NumPy and torch load)

torch = _common.try_torch()  # also torch.set_num_threads(1)
if torch is None:
    sys.exit("bench_torch_tracing.py needs PyTorch: .venv/bin/pip install torch")

import _backend  # noqa: E402

import modscope  # noqa: E402

F = torch.nn.functional
EXAMPLE = Path(__file__).resolve().parent.parent / "modscope" / "examples" / "mnist_net.py"
BATCH = 64
MAX_EVENTS = 5_000  # the in-memory log of a long-lived trace: a window, full after ~190 steps (26 events a step)
TARGETS = {"stats=False": 1.10, "stats=True": 1.25}
PEER_TARGET = 10.0  # modscope at least this many times cheaper than torchlens


def seed_net() -> torch.nn.Module:
    """The example's ``Net`` under torch, seeded weights, training mode."""
    torch.manual_seed(0)
    model = _backend.load(EXAMPLE, "torch").Net()
    return model.train()


def digits() -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    return torch.rand(BATCH, 1, 28, 28, generator=gen), torch.randint(0, 10, (BATCH,), generator=gen)


def make_step(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> Callable[[], None]:
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.5)

    def step() -> None:
        opt.zero_grad()
        loss = F.nll_loss(model(x), y)
        loss.backward()
        opt.step()
    return step


def training_overhead(rounds: int) -> tuple[dict[str, float], list[tuple[str, modscope.Trace]]]:
    """Median seconds per training step of each candidate, and the traces (still running)."""
    base, (x, y) = seed_net(), digits()
    steps, traces = {}, []
    for name, trace_kw in (("untraced", None), ("untraced (A/A)", None),
                           ("stats=False", {"stats": False}), ("stats=True", {"stats": True})):
        model = copy.deepcopy(base)  # same weights in every copy; each has its own optimizer
        if trace_kw is not None:  # started once, open for the whole benchmark
            traces.append((name, modscope.trace(model, max_events=MAX_EVENTS, **trace_kw).start()))
        steps[name] = make_step(model, x, y)
    return _common.interleaved(steps, rounds, steps=1, warmup=30), traces


def tracer_errors(traces: list[tuple[str, modscope.Trace]]) -> list[str]:
    """A line per distinct ``error`` event the traces recorded (a bench of a failing tracer
    measures the failure, not the tracer)."""
    lines = []
    for name, tr in traces:
        seen: dict[str, int] = {}
        for e in tr.events:
            if e["kind"] == "error":
                key = f"{e['etype']}: {e['message']} (in {e['where']})"
                seen[key] = seen.get(key, 0) + 1
        lines += [f"{name}: {count} x {key}" for key, count in seen.items()]
    return lines


def _torchlens(tl, model, x) -> Callable[[], object]:
    """``log_forward_pass`` where it exists (torchlens < 2), else its successor ``trace``; both
    save every activation by default."""
    log = getattr(tl, "log_forward_pass", None) or tl.trace
    return lambda: log(model, x)


def _torchview(tv, model, x) -> Callable[[], object]:
    return lambda: tv.draw_graph(model, input_data=x, save_graph=False)  # the graph object, not rendered


def _torchinfo(ti, model, x) -> Callable[[], object]:
    return lambda: ti.summary(model, input_size=tuple(x.shape), verbose=0)


# (row, module to import, factory(module, model, x) -> one run)
PEERS = (("torchlens.trace", "torchlens", _torchlens), ("torchview.draw_graph", "torchview", _torchview),
         ("torchinfo.summary", "torchinfo", _torchinfo))


def peers(runs: int) -> dict[str, float | None]:
    """Median seconds of one forward of the ``Net`` (batch 64) by itself and under each tool;
    ``None`` for a tool that is not installed."""
    model, (x, _) = seed_net(), digits()

    def traced() -> None:
        with modscope.trace(model):
            model(x)

    candidates: dict[str, Callable[[], object]] = {"plain forward": lambda: model(x), "modscope.trace": traced,
                                                   "modscope.trace (A/A)": traced}
    missing = []
    for name, module_name, make in PEERS:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            missing.append(name)
            continue
        candidates[name] = make(module, model, x)
    result: dict[str, float | None] = dict(_common.interleaved(candidates, runs, steps=1, warmup=3))
    result.update({name: None for name in missing})
    return result


def versions() -> str:
    found = [f"torch {torch.__version__}", f"modscope {modscope.__version__}"]
    for name in ("torchlens", "torchview", "torchinfo"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        version = getattr(module, "__version__", None)
        if version is None:
            from importlib.metadata import version as dist_version
            version = dist_version(name)
        found.append(f"{name} {version}")
    return ", ".join(found)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=600, help="training-step rounds (one step per candidate each)")
    parser.add_argument("--runs", type=int, default=200, help="peer rounds (one forward per candidate each)")
    args = parser.parse_args()

    med, traces = training_overhead(args.rounds)
    errors = tracer_errors(traces)
    dropped = {name: tr.dropped for name, tr in traces}
    for _, tr in traces:
        tr.stop()
    base = med["untraced"]
    print(f"Net training step under torch, batch 64, train mode, 1 thread; median of {args.rounds} rounds "
          f"x 1 step (thread CPU time)")
    print(f"  {'candidate':16s} {'ms/step':>8s} {'ratio':>7s} {'target':>7s}")
    for name, sec in med.items():
        ratio = sec / base
        target = TARGETS.get(name)
        verdict = "" if target is None else f"{'<=':>3s}{target:.2f}  {'ok' if ratio <= target else 'OVER'}"
        print(f"  {name:16s} {sec * 1e3:8.3f} {'x' + format(ratio, '.3f'):>7s} {verdict}")
    print(f"  traces kept at most {MAX_EVENTS:,} events in memory; evicted: "
          + ", ".join(f"{name} {n:,}" for name, n in dropped.items()))
    if errors:
        print("  TRACER ERRORS (the traced rows measure a failing tracer):")
        for line in errors:
            print(f"    {line}")
    else:
        print("  tracer errors: none")

    print()
    result = peers(args.runs)
    plain = result["plain forward"]
    print(f"peers, one forward of the same Net, batch 64; median of {args.runs} interleaved runs (thread CPU time)")
    print(f"  {'tool':22s} {'ms/run':>8s} {'x plain':>8s}")
    for name, sec in result.items():
        if sec is None:
            print(f"  {name:22s} not installed")
        else:
            print(f"  {name:22s} {sec * 1e3:8.3f} {'x' + format(sec / plain, '.2f'):>8s}")
    lens, ours, again = result.get("torchlens.trace"), result["modscope.trace"], result["modscope.trace (A/A)"]
    if lens is None:
        print(f"  target: modscope >= {PEER_TARGET:.0f}x cheaper than torchlens: not measured (no torchlens)")
    else:
        factor, over = lens / ours, (lens - plain) / (ours - plain)
        print(f"  target, modscope >= {PEER_TARGET:.0f}x cheaper than torchlens, read two ways:")
        print(f"    in total time: {factor:.2f}x (A/A {lens / again:.2f}x)  "
              f"{'ok' if factor >= PEER_TARGET else 'MISSED'}  ({PEER_TARGET:.0f}x would need modscope <= "
              f"x{lens / plain / PEER_TARGET:.3f} a plain forward, torchlens being x{lens / plain:.2f})")
        print(f"    in cost above the plain forward: torchlens {(lens - plain) * 1e3:.2f} ms, modscope "
              f"{(ours - plain) * 1e3:.2f} ms: {over:.0f}x (A/A {(lens - plain) / (again - plain):.0f}x)  "
              f"{'ok' if over >= PEER_TARGET else 'MISSED'}")
    print("  (plain forward, modscope and torchlens: train mode, grad enabled, torchlens with its defaults: every "
          "activation saved;\n   torchinfo and torchview run their forward in eval mode under no_grad)")
    print(f"  versions: {versions()}")


if __name__ == "__main__":
    main()
