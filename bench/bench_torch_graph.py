"""Torch autograd graph -> diagram speed: a ResNet-18's graph (batch 1, 3x224x224, forward under
``attribute_modules``) through (a) ``capture.torch.graph.graph_event_fields``, (b) the ``Diagram``
built from that event, (c) its DOT source; target for (a)+(b)+(c): <= 1 s. Also the graph
collapsed to depth 2 and rendered to SVG by graphviz's ``dot``, and the full graph to SVG, for
reference. Medians of 7 rounds of wall-clock time (``time.perf_counter``).

The model is torchvision's ``resnet18(weights=None)`` when torchvision is installed, else the
faithful copy defined here (BasicBlock, [2, 2, 2, 2], 64-512 channels, BatchNorm,
``ReLU(inplace=True)``, 1x1 convolution downsample: torchvision's module names and graph).

Run: ``.venv/bin/python bench/bench_torch_graph.py`` (``--rounds``, ``--size`` for the input's side)."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import _common  # noqa: E402  (pins BLAS threads before NumPy and torch load)

torch = _common.try_torch()
if torch is None:
    sys.exit("bench_torch_graph.py needs PyTorch: .venv/bin/pip install torch")

import modscope.capture.torch as capture_torch  # noqa: E402
from modscope.capture.attribution import attribute_modules  # noqa: E402
from modscope.capture.torch.graph import graph_event_fields  # noqa: E402
from modscope.views.diagrams.autograd import build_autograd_graph_from_event  # noqa: E402
from modscope.views.diagrams.dot import render  # noqa: E402

nn = torch.nn


class BasicBlock(nn.Module):
    """torchvision's ``BasicBlock``."""

    def __init__(self, cin: int, cout: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += identity
        return self.relu(out)


class ResNet18(nn.Module):
    """torchvision's ``resnet18``: BasicBlock, [2, 2, 2, 2], 64-512 channels, 1000 classes."""

    def __init__(self, classes: int = 1000) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        self.layer1 = nn.Sequential(BasicBlock(64, 64), BasicBlock(64, 64))
        self.layer2 = nn.Sequential(BasicBlock(64, 128, 2), BasicBlock(128, 128))
        self.layer3 = nn.Sequential(BasicBlock(128, 256, 2), BasicBlock(256, 256))
        self.layer4 = nn.Sequential(BasicBlock(256, 512, 2), BasicBlock(512, 512))
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512, classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def resnet18() -> tuple[nn.Module, str]:
    try:
        from torchvision.models import resnet18 as tv_resnet18
    except ImportError:
        return ResNet18(), "bench's own ResNet-18 (torchvision not installed)"
    return tv_resnet18(weights=None), "torchvision resnet18(weights=None)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--size", type=int, default=224, help="input height and width (default 224)")
    args = parser.parse_args()
    if not hasattr(capture_torch, "BACKEND"):
        # attribute_modules reads torch's sequence counter through the torch backend; while that
        # backend is being assembled, the counter alone stands in for it.
        capture_torch.BACKEND = SimpleNamespace(current_sequence_nr=torch._C._autograd._get_sequence_nr)

    torch.manual_seed(0)
    model, origin = resnet18()
    x = torch.randn(1, 3, args.size, args.size)
    params = dict(model.named_parameters())
    model_event = {"model": type(model).__name__,
                   "modules": [{"path": p, "cls": type(m).__name__} for p, m in model.named_modules()]}

    def forward():
        with attribute_modules(model):
            return model(x)

    fwd, out = _common.median_time(forward, args.rounds)
    event_s, event = _common.median_time(lambda: graph_event_fields(out, params), args.rounds)
    build_s, diagram = _common.median_time(lambda: build_autograd_graph_from_event(event, model_event), args.rounds)
    dot_s, source = _common.median_time(lambda: diagram.to_digraph().source, args.rounds)
    total = event_s + build_s + dot_s

    out_dir = Path(tempfile.mkdtemp(prefix="bench_torch_graph_"))

    def collapsed_svg() -> Path:
        collapsed = build_autograd_graph_from_event(graph_event_fields(out, params), model_event, depth=2)
        return render(collapsed, out_dir / "resnet18_depth2.svg")

    collapsed = build_autograd_graph_from_event(event, model_event, depth=2)
    build2_s, _ = _common.median_time(lambda: build_autograd_graph_from_event(event, model_event, depth=2), args.rounds)
    dot2_s, _ = _common.median_time(lambda: collapsed.to_digraph().source, args.rounds)
    svg2_s, svg2 = _common.median_time(lambda: render(collapsed, out_dir / "resnet18_depth2_only.svg"), args.rounds)
    all2_s, _ = _common.median_time(collapsed_svg, args.rounds)
    full_svg_s, full_svg = _common.median_time(lambda: render(diagram, out_dir / "resnet18_full.svg"), args.rounds)

    leaves = len(event["leaves"])
    print(f"{origin}, input 1x3x{args.size}x{args.size}, torch {torch.__version__}, "
          f"{torch.get_num_threads()} thread(s); medians of {args.rounds}")
    print(f"autograd graph: {len(event['nodes'])} nodes ({len(event['nodes']) - leaves} ops, {leaves} parameters), "
          f"{len(event['edges'])} edges; diagram: {len(diagram.nodes)} nodes in {len(diagram.clusters)} clusters, "
          f"DOT {len(source) / 1e3:.0f} kB; at depth 2: {len(collapsed.nodes)} nodes")
    rows = [
        ("forward under attribute_modules (reference)", fwd, ""),
        ("(a) graph_event_fields", event_s, ""),
        ("(b) Diagram from the event", build_s, ""),
        ("(c) DOT source", dot_s, ""),
        ("autograd graph -> DOT, (a)+(b)+(c)", total, "<= 1 s: " + ("met" if total <= 1 else "MISSED")),
        ("depth 2: Diagram from the event", build2_s, ""),
        ("depth 2: DOT source", dot2_s, ""),
        ("depth 2: dot -> SVG (render)", svg2_s, ""),
        ("depth 2: event + Diagram + SVG, in one", all2_s, ""),
        ("full graph: dot -> SVG (render, reference)", full_svg_s, ""),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"{'step':<{width}}  {'median':>10}  target")
    for name, secs, note in rows:
        print(f"{name:<{width}}  {secs * 1000:>7.2f} ms  {note}")
    print(f"SVGs: {svg2} ({svg2.stat().st_size / 1e3:.0f} kB), {full_svg} ({full_svg.stat().st_size / 1e3:.0f} kB)")


if __name__ == "__main__":
    main()
