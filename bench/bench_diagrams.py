"""Diagram speed: (1) a 10,000-node autograd graph, clustered by module, to DOT source (target
<= 1 s); (2) a tiny ResNet's autograd graph collapsed to depth 2, rendered to SVG by graphviz's
``dot`` (target <= 2 s, forward and dot included). Also the module tree and dataflow of the
ResNet to SVG, for reference. Medians of several rounds.

The ResNet is ``modscope/examples/resnet_tiny.py:ResNetTiny`` when that example exists, else the small
one defined here (torchvision's BasicBlock layout, 3 stages of 2 blocks).

Run: ``.venv/bin/python bench/bench_diagrams.py`` (``--rounds`` for more samples)."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import _common  # noqa: E402  (pins BLAS threads before NumPy loads; median_time)

import engine  # noqa: E402
import engine.nn as nn  # noqa: E402
import modscope  # noqa: E402
from modscope import graph  # noqa: E402
from modscope.capture.target import EXAMPLES, TargetError, load_target  # noqa: E402


def deep_mlp(layers: int) -> nn.Module:
    """``layers`` Linear+ReLU pairs in stages of 10 (two cluster levels): 5 graph nodes each."""
    stages = [nn.Sequential(*[m for _ in range(10) for m in (nn.Linear(4, 4), nn.ReLU())])
              for _ in range(layers // 10)]
    return nn.Sequential(*stages)


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        return self.relu(self.bn2(self.conv2(out)) + identity)


class ResNetTiny(nn.Module):
    def __init__(self, classes: int = 10) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.relu = nn.ReLU()
        self.layer1 = nn.Sequential(BasicBlock(8, 8, 1), BasicBlock(8, 8, 1))
        self.layer2 = nn.Sequential(BasicBlock(8, 16, 2), BasicBlock(16, 16, 1))
        self.layer3 = nn.Sequential(BasicBlock(16, 32, 2), BasicBlock(32, 32, 1))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(32, classes)

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.layer3(self.layer2(self.layer1(x)))
        return self.fc(self.pool(x).flatten(1))


def resnet() -> tuple[nn.Module, engine.Tensor, str]:
    try:
        loaded = load_target("resnet")
        return loaded.model, loaded.example_input(), "modscope/examples/resnet_tiny.py"
    except TargetError:
        return ResNetTiny(), engine.randn(*EXAMPLES["resnet"].input_shape), "bench's own ResNetTiny"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    engine.manual_seed(0)

    # (1) 10,000 nodes to DOT.
    model = deep_mlp(2000)
    with graph.attribute_modules(model):
        loss = model(engine.randn(2, 4)).sum()
    built = graph.build_autograd_graph(loss, model)
    secs, source = _common.median_time(lambda: graph.autograd_graph(loss, model).source, args.rounds)
    flat, _ = _common.median_time(lambda: graph.autograd_graph(loss).source, args.rounds)
    print(f"autograd graph, {len(built.nodes):,} nodes in {len(built.clusters):,} clusters -> DOT source "
          f"({len(source) / 1e6:.1f} MB): {secs * 1000:.0f} ms (target <= 1000 ms); "
          f"without clusters: {flat * 1000:.0f} ms")

    # (2) tiny ResNet collapsed to depth 2 -> SVG, forward and dot included.
    net, x, origin = resnet()
    out_dir = Path(tempfile.mkdtemp(prefix="bench_diagrams_"))

    def resnet_svg() -> Path:
        with graph.attribute_modules(net):
            out = net(x)
        return graph.render(graph.build_autograd_graph(out.sum(), net, depth=2), out_dir / "resnet.svg")

    secs, path = _common.median_time(resnet_svg, args.rounds)
    with graph.attribute_modules(net):
        out = net(x)
    full = graph.build_autograd_graph(out.sum(), net)
    collapsed = graph.build_autograd_graph(out.sum(), net, depth=2)
    print(f"{origin}: autograd graph ({len(full.nodes)} nodes, {len(collapsed.nodes)} at depth 2) -> SVG: "
          f"{secs * 1000:.0f} ms (target <= 2000 ms) [{path}]")
    secs_full, _ = _common.median_time(lambda: graph.render(full, out_dir / "resnet_full.svg"), args.rounds)
    print(f"  full (uncollapsed) autograd graph -> SVG: {secs_full * 1000:.0f} ms")

    secs, _ = _common.median_time(lambda: graph.render(graph.build_module_tree(net), out_dir / "tree.svg"), args.rounds)
    print(f"  module tree -> SVG: {secs * 1000:.0f} ms")

    def dataflow_svg() -> Path:
        with modscope.trace(net, graph=False) as tr, engine.no_grad():  # as `modscope export` runs it
            net(x)
        return graph.render(graph.build_dataflow(tr), out_dir / "dataflow.svg")

    secs, _ = _common.median_time(dataflow_svg, args.rounds)
    print(f"  dataflow (trace + forward + dot) -> SVG: {secs * 1000:.0f} ms")


if __name__ == "__main__":
    main()
