"""Small models defined for any library with torch's API (engine or torch itself), a training
loop for them, and the form in which two traces of them compare."""

from __future__ import annotations

import time
from typing import Any


def nested_model(lib, seed: int = 0):
    """A block used twice (module reuse), a residual add, a shared head under two names."""
    lib.manual_seed(seed)

    class Block(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = lib.nn.Linear(4, 4)
            self.b = lib.nn.Linear(4, 4)

        def forward(self, x):
            return self.b(self.a(x).relu()) + x

    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.blk = Block()
            self.head = lib.nn.Linear(4, 2)
            self.alias = self.head

        def forward(self, x):
            return self.head(self.blk(self.blk(x)))

    return Net()


def sequential_model(lib, seed: int = 0):
    lib.manual_seed(seed)
    return lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.ReLU() if hasattr(lib.nn, "ReLU") else lib.nn.Identity(),
                             lib.nn.Sequential(lib.nn.Linear(8, 8), lib.nn.Linear(8, 3)))


def watch_hooks(model, seen) -> None:
    """A plain hook of each of the four kinds on every module of ``model``, calling
    ``seen(kind, path, values)`` with what the hook received: ``(args,)`` (forward_pre),
    ``(args, output)`` (forward), ``(grad_output,)`` (backward_pre), ``(grad_input, grad_output)``
    (backward)."""
    for name, mod in model.named_modules():
        mod.register_forward_pre_hook(lambda m, a, name=name: seen("forward_pre", name, (a,)))
        mod.register_forward_hook(lambda m, a, o, name=name: seen("forward", name, (a, o)))
        mod.register_full_backward_pre_hook(lambda m, g, name=name: seen("backward_pre", name, (g,)))
        mod.register_full_backward_hook(lambda m, gi, go, name=name: seen("backward", name, (gi, go)))


def record_hooks(model) -> list[tuple[str, str]]:
    """``watch_hooks`` appending ``(kind, path)`` when a hook fires."""
    order: list[tuple[str, str]] = []
    watch_hooks(model, lambda kind, name, values: order.append((kind, name)))
    return order


def hook_order(lib, model, grad_input: bool, seed: int = 1):
    """torch's own firing order for ``model``: plain hooks on every module, no modscope."""
    order = record_hooks(model)
    lib.manual_seed(seed)
    model(lib.randn(3, 4, requires_grad=grad_input)).sum().backward()
    return order


def sgd_steps(lib, model, steps: int, *, seed: int | None = None, grad_input: bool = False,
              pause: float = 0.0) -> None:
    """``steps`` plain SGD steps (lr 0.1, no ``zero_grad``) of ``model`` on random (3, 4) inputs
    with loss ``sum()``. ``seed`` reseeds before each input; ``pause`` sleeps after each step."""
    opt = lib.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        if seed is not None:
            lib.manual_seed(seed)
        model(lib.randn(3, 4, requires_grad=grad_input)).sum().backward()
        opt.step()
        if pause:
            time.sleep(pause)


_PER_RUN = {"t", "dur_ns", "started", "pid", "argv", "nodes", "edges", "leaves"}


def comparable_events(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Copies of ``events`` without what differs between two runs of the same program: times,
    the process, graph nodes (their sequence numbers are per process); tensor ids are renumbered
    by first use (they count per process)."""
    tids: dict[int, int] = {}
    out = []
    for e in events:
        e = {k: v for k, v in e.items() if k not in _PER_RUN}
        for key in ("inputs", "outputs"):
            if key in e:
                e[key] = [dict(s, tid=tids.setdefault(s["tid"], len(tids))) if s and "tid" in s else s
                          for s in e[key]]
        out.append(e)
    return out
