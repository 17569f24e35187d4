"""The issue-21 scale model, trained on the bundled engine: ``Sequential`` of 2,500 ×
[Linear(8,8), ReLU, LayerNorm, Identity] (10,001 modules; batch 2, SGD; 40,006 events a step).

    python bench/_wide_model.py STEPS               # train (run it under `modscope run`)
    python bench/_wide_model.py STEPS --trace OUT   # record a trace file of STEPS steps

Used by bench_tui_scale.py: as the live child (``modscope run``'s path) and to write the
1M-event replay file (25 steps)."""

import argparse

import engine as torch
import modscope


def build(blocks: int = 2500) -> torch.nn.Module:
    layers = []
    for _ in range(blocks):
        layers += [torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.LayerNorm(8), torch.nn.Identity()]
    return torch.nn.Sequential(*layers)


def train(model: torch.nn.Module, steps: int) -> None:
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(2, 8)
    for _ in range(steps):
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("steps", type=int)
    parser.add_argument("--trace", help="write the trace here instead of being traced by a viewer")
    args = parser.parse_args()
    torch.manual_seed(0)
    model = build()
    if args.trace:
        with modscope.trace(model, sink=modscope.JsonlSink(args.trace), max_events=1000):
            train(model, args.steps)
    else:
        train(model, args.steps)


if __name__ == "__main__":
    main()
