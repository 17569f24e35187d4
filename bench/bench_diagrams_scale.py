"""Diagrams of big models, by hand (issue 21): every default diagram renders in <= 2 s.

Models (engine, batch 2):

- ``wide``: one ``Sequential`` of 2,500 x [Linear(8, 8), ReLU, LayerNorm(8), Identity]
  (10,001 modules; its autograd graph has 20,002 nodes, its module tree 10,000 children under
  one root);
- ``resnet50``: a ResNet-50-like stack (Bottleneck blocks 3-4-6-3, 64x64 input);
- ``transformer48``: 48 identical pre-norm transformer blocks (d=64, 4 heads, 16 tokens);
- ``net`` / ``resnet18``: small models, checked to be drawn unchanged (nothing folds under the
  budget).

For each model and diagram (tree, autograd, dataflow) with the default settings (``fold=True``,
budget 400): the time to build the diagram from plain events (``build``), to fold it
(``fold``), to write DOT (``dot-src``) and to run ``dot -Tsvg`` (``render``), medians of
``--runs`` runs, run interleaved across configurations; the ``A/A`` row runs the first
configuration twice to show the noise. ``--no-fold`` also measures the unfolded diagrams of
every model but ``wide`` (whose unfolded graphs take minutes in ``dot``: see the issue).

The events are built once per model: the model event with ``model_event_fields``, the graph
event with ``graph_event_fields`` under ``attribute_modules`` and the dataflow's module events
with ``modscope.trace(model, graph=False)``; they are what a recorded trace holds.

Run: ``.venv/bin/python bench/bench_diagrams_scale.py [--runs 3] [--models wide,resnet50,...]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import _common  # noqa: E402,F401  (pins BLAS threads before NumPy loads)
import numpy as np  # noqa: E402

import engine  # noqa: E402
import modscope  # noqa: E402
from modscope.capture.attribution import attribute_modules  # noqa: E402
from modscope.capture.backends import backend_for  # noqa: E402
from modscope.capture.diagrams import model_event_fields  # noqa: E402
from modscope.views.diagrams import (  # noqa: E402
    build_autograd_graph_from_event,
    build_dataflow,
    build_module_tree_from_event,
    fit,
    model_event_in,
)
from modscope.views.diagrams.dot import run_dot  # noqa: E402

nn = engine.nn


def wide(blocks: int = 2500) -> tuple[nn.Module, tuple[int, ...]]:
    layers: list[nn.Module] = []
    for _ in range(blocks):
        layers += [nn.Linear(8, 8), nn.ReLU(), nn.LayerNorm(8), nn.Identity()]
    return nn.Sequential(*layers), (2, 8)


def define_models(lib):
    """``resnet(layers, block)``, ``transformer(n)`` and ``net()`` built with ``lib`` (``engine``
    or ``torch``): the big models of the issue and small ones (the tests use them too)."""
    n_ = lib.nn

    class Bottleneck(n_.Module):
        expansion = 4

        def __init__(self, cin: int, width: int, stride: int = 1) -> None:
            super().__init__()
            cout = width * 4
            self.conv1, self.bn1 = n_.Conv2d(cin, width, 1, bias=False), n_.BatchNorm2d(width)
            self.conv2 = n_.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
            self.bn2 = n_.BatchNorm2d(width)
            self.conv3, self.bn3 = n_.Conv2d(width, cout, 1, bias=False), n_.BatchNorm2d(cout)
            self.relu = n_.ReLU()
            self.downsample = None
            if stride != 1 or cin != cout:
                self.downsample = n_.Sequential(n_.Conv2d(cin, cout, 1, stride=stride, bias=False),
                                                n_.BatchNorm2d(cout))

        def forward(self, x):
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.relu(self.bn2(self.conv2(out)))
            out = self.bn3(self.conv3(out))
            return self.relu(out + (x if self.downsample is None else self.downsample(x)))

    class BasicBlock(n_.Module):
        expansion = 1

        def __init__(self, cin: int, width: int, stride: int = 1) -> None:
            super().__init__()
            self.conv1 = n_.Conv2d(cin, width, 3, stride=stride, padding=1, bias=False)
            self.bn1 = n_.BatchNorm2d(width)
            self.conv2, self.bn2 = n_.Conv2d(width, width, 3, padding=1, bias=False), n_.BatchNorm2d(width)
            self.relu = n_.ReLU()
            self.downsample = None
            if stride != 1 or cin != width:
                self.downsample = n_.Sequential(n_.Conv2d(cin, width, 1, stride=stride, bias=False),
                                                n_.BatchNorm2d(width))

        def forward(self, x):
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return self.relu(out + (x if self.downsample is None else self.downsample(x)))

    class ResNet(n_.Module):
        def __init__(self, layers: list[int], block: type) -> None:
            super().__init__()
            self.conv1, self.bn1 = n_.Conv2d(3, 16, 7, stride=2, padding=3, bias=False), n_.BatchNorm2d(16)
            self.relu, self.maxpool = n_.ReLU(), n_.MaxPool2d(3, stride=2, padding=1)
            cin = 16
            for i, n in enumerate(layers):
                width = 16 * 2 ** i
                blocks = []
                for j in range(n):
                    blocks.append(block(cin, width, 2 if i and not j else 1))
                    cin = width * block.expansion
                setattr(self, f"layer{i + 1}", n_.Sequential(*blocks))
            self.avgpool, self.fc = n_.AdaptiveAvgPool2d(1), n_.Linear(cin, 10)

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(self.avgpool(x).flatten(1))

    class Attention(n_.Module):
        def __init__(self, d: int, heads: int) -> None:
            super().__init__()
            self.heads, self.qkv, self.proj = heads, n_.Linear(d, 3 * d), n_.Linear(d, d)

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(x).reshape(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
            att = (q @ k.transpose(-2, -1) * (d // self.heads) ** -0.5).softmax(-1)
            return self.proj((att @ v).transpose(1, 2).reshape(b, t, d))

    class Block(n_.Module):
        def __init__(self, d: int, heads: int) -> None:
            super().__init__()
            self.ln1, self.attn = n_.LayerNorm(d), Attention(d, heads)
            self.ln2 = n_.LayerNorm(d)
            self.mlp = n_.Sequential(n_.Linear(d, 4 * d), n_.GELU(), n_.Linear(4 * d, d))

        def forward(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))

    class Transformer(n_.Module):
        def __init__(self, n: int, d: int = 64, heads: int = 4) -> None:
            super().__init__()
            self.blocks = n_.ModuleList(Block(d, heads) for _ in range(n))
            self.ln, self.head = n_.LayerNorm(d), n_.Linear(d, 10)

        def forward(self, x):
            for block in self.blocks:
                x = block(x)
            return self.head(self.ln(x))

    class Net(n_.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1, self.conv2 = n_.Conv2d(1, 8, 3), n_.Conv2d(8, 16, 3)
            self.fc1, self.fc2 = n_.Linear(16 * 5 * 5, 32), n_.Linear(32, 10)

        def forward(self, x):
            x = n_.functional.max_pool2d(self.conv1(x).relu(), 2)
            x = n_.functional.max_pool2d(self.conv2(x).relu(), 2)
            return self.fc2(self.fc1(x.flatten(1)).relu())

    return {"resnet": ResNet, "bottleneck": Bottleneck, "basic": BasicBlock, "transformer": Transformer,
            "net": Net}


def build_model(name: str) -> tuple[nn.Module, tuple[int, ...]]:
    engine.manual_seed(0)
    if name == "wide":
        return wide()
    m = define_models(engine)
    if name == "resnet50":
        return m["resnet"]([3, 4, 6, 3], m["bottleneck"]), (2, 3, 64, 64)
    if name == "resnet18":
        return m["resnet"]([2, 2, 2, 2], m["basic"]), (2, 3, 64, 64)
    if name == "transformer48":
        return m["transformer"](48), (2, 16, 64)
    if name == "net":
        return m["net"](), (2, 1, 28, 28)
    raise SystemExit(f"unknown model {name!r}")


def record(name: str) -> dict:
    """The events every diagram of model ``name`` is drawn from (plain data)."""
    model, shape = build_model(name)
    x = engine.from_numpy(np.random.default_rng(0).standard_normal(shape).astype(np.float32))
    model_event = model_event_fields(model)
    with attribute_modules(model):
        out = model(x)
    params = dict(model.named_parameters())
    graph_event = backend_for(out).graph_event_fields([out.sum()], params)
    with modscope.trace(model, graph=False, max_events=1_000_000) as tr, engine.no_grad():
        model(x)
    return {"model": model_event, "graph": graph_event, "trace": list(tr.events)}


def diagram(events: dict, what: str, fold: bool):
    """``(diagram, build seconds, fold seconds)`` with the default settings."""
    t0 = time.perf_counter()
    if what == "tree":
        d = build_module_tree_from_event(events["model"])
        model_event = events["model"]
    elif what == "autograd":
        d = build_autograd_graph_from_event(events["graph"], events["model"])
        model_event = events["model"]
    else:
        d = build_dataflow(events["trace"])
        model_event = model_event_in(events["trace"])
    t1 = time.perf_counter()
    d2 = fit(d, model_event, fold=fold)
    return d, d2, t1 - t0, time.perf_counter() - t1


def measure(events: dict, what: str, fold: bool = True) -> dict:
    raw, d, build_s, fold_s = diagram(events, what, fold)
    t0 = time.perf_counter()
    source = d.to_digraph().source
    t1 = time.perf_counter()
    run_dot(source, "svg", timeout=600)
    t2 = time.perf_counter()
    return {"nodes": len(raw.nodes), "drawn": len(d.nodes), "build": build_s, "fold": fold_s,
            "dot-src": t1 - t0, "render": t2 - t1, "total": build_s + fold_s + (t2 - t0),
            "notes": d.notes}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--models", default="wide,resnet50,transformer48,resnet18,net")
    parser.add_argument("--no-fold", action="store_true", help="also time the unfolded small graphs")
    args = parser.parse_args()
    names = args.models.split(",")
    events = {}
    for name in names:
        t0 = time.perf_counter()
        events[name] = record(name)
        print(f"recorded {name} in {time.perf_counter() - t0:.1f} s", flush=True)
    configs = [(name, what, True) for name in names for what in ("tree", "autograd", "dataflow")]
    configs.insert(1, (*configs[0][:2], "A/A"))  # the first configuration again: the noise
    if args.no_fold:
        configs += [(name, what, False) for name in names if name in ("net", "resnet18", "resnet50", "transformer48")
                    for what in ("tree", "autograd", "dataflow")]
    results: dict[tuple, list[dict]] = {c: [] for c in configs}
    for _ in range(args.runs):  # interleaved: each round measures every configuration once
        for c in configs:
            results[c].append(measure(events[c[0]], c[1], c[2] is not False))
    print(f"\nmedians of {args.runs} runs (seconds); default settings: fold=True, budget 400")
    print(f"{'model':14s} {'diagram':9s} {'fold':5s} {'nodes':>7s} {'drawn':>6s} {'build':>7s} {'fold':>7s} "
          f"{'dot-src':>8s} {'render':>7s} {'total':>7s}")
    for c, rows in results.items():
        med = {k: statistics.median(r[k] for r in rows) for k in ("build", "fold", "dot-src", "render", "total")}
        flag = "A/A" if c[2] == "A/A" else ("on" if c[2] else "off")
        print(f"{c[0]:14s} {c[1]:9s} {flag:5s} {rows[0]['nodes']:7d} {rows[0]['drawn']:6d} {med['build']:7.3f} "
              f"{med['fold']:7.3f} {med['dot-src']:8.3f} {med['render']:7.3f} {med['total']:7.3f}")
    print("\nnotes of the folded diagrams:")
    for c, rows in results.items():
        if c[2] is True and rows[0]["notes"]:
            print(f"  {c[0]} {c[1]}: " + " | ".join(rows[0]["notes"][1:-1]))


if __name__ == "__main__":
    main()
