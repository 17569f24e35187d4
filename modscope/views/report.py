"""Reports built from events alone (so they work live, in-process and on a loaded file):
``summary_table`` (torchinfo-like), ``module_tree`` and ``timeline``, as rich renderables.

Figures per module come from the last step that has forward events; multiply-adds and bytes
saved for backward come from the ``graph`` event (each graph node knows the module that created
it), so matmuls written inline in a ``forward`` and attention are counted, not only known layers.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from ..events.schema import MODULE_EVENTS

# op -> MACs(out_shape, input_shapes): input shapes by position, None where unknown.
_MAC_RULES = {
    "MmBackward0": lambda out, ins: _prod(out) * _inner(ins, (0, 1), (1, 0)),
    "AddmmBackward0": lambda out, ins: _prod(out) * _inner(ins, (1, 1), (2, 0)),
    "BmmBackward0": lambda out, ins: _prod(out) * _inner(ins, (0, 2), (1, 1)),
    "MvBackward0": lambda out, ins: _prod(out) * _inner(ins, (0, 1), (1, 0)),
    "DotBackward0": lambda out, ins: _inner(ins, (0, 0), (1, 0)),
    "ConvolutionBackward0": lambda out, ins: _prod(out) * _prod((ins[1] or [0])[1:]),
}


def _prod(shape: list[int] | None) -> int:
    n = 1
    for s in shape or []:
        n *= s
    return n


def _inner(ins: list, *where: tuple[int, int]) -> int:
    """The contracted dimension, read from whichever operand's shape is known."""
    for pos, dim in where:
        if pos < len(ins) and ins[pos] is not None and len(ins[pos]) > dim:
            return ins[pos][dim]
    return 0


def _last(events: list[dict], kind: str) -> dict | None:
    return next((e for e in reversed(events) if e["kind"] == kind), None)


def _model(events: list[dict]) -> dict:
    model = _last(events, "model")
    if model is None:
        raise ValueError("the trace has no model event (was a model traced?)")
    return model


def module_figures(events: list[dict]) -> dict[str, dict[str, Any]]:
    """Per module path: own/total params, trainable, output shape, forward/backward ns, MACs,
    bytes saved for backward (each over the module and everything below it)."""
    model = _model(events)
    paths = [m["path"] for m in model["modules"]]
    figs: dict[str, dict[str, Any]] = {p: {"params": 0, "trainable": 0, "total_params": 0, "output": None,
                                           "fwd_ns": 0, "bwd_ns": 0, "macs": 0, "saved": 0, "calls": 0}
                                       for p in paths}
    for prm in model["params"]:
        owner = prm["path"].rpartition(".")[0]
        if owner in figs:
            figs[owner]["params"] += prm["numel"]
            figs[owner]["trainable"] += prm["numel"] if prm["requires_grad"] else 0
        for p in paths:
            if _within(prm["path"], p):
                figs[p]["total_params"] += prm["numel"]
    steps = [e["step"] for e in events if e["kind"] == "forward"]
    last = max(steps) if steps else None
    for e in events:
        if e["step"] != last or e.get("path") not in figs:
            continue
        f = figs[e["path"]]
        if e["kind"] == "forward":
            f["fwd_ns"] += e["dur_ns"]
            f["calls"] += 1
            f["output"] = next((s["shape"] for s in e["outputs"] if s is not None), f["output"])
        elif e["kind"] == "backward":
            f["bwd_ns"] += e["dur_ns"]
    graph = _last(events, "graph")
    if graph is not None:
        shapes = {n["id"]: n["shape"] for n in graph["nodes"]}
        for node in graph["nodes"]:
            label = node["module"]
            if label is None:
                continue
            rule = _MAC_RULES.get(node["op"])
            macs = rule(node["shape"], [shapes.get(i) if i is not None else None for i in node["inputs"]]) \
                if rule else 0
            for p in paths:
                if _within(label, p):
                    figs[p]["macs"] += macs
                    figs[p]["saved"] += node["saved_bytes"]
    return figs


def _within(path: str, ancestor: str) -> bool:
    return ancestor == "" or path == ancestor or path.startswith(ancestor + ".")


def _fmt_count(n: int) -> str:
    return f"{n:,}" if n else "--"


def _fmt_ms(ns: int) -> str:
    return f"{ns / 1e6:.3f}" if ns else "--"


def _fmt_bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def summary_table(events: list[dict]) -> Table:
    """Path, type, output shape, parameters (own), trainable, multiply-adds, forward and
    backward time, bytes saved for backward; totals count shared parameters once."""
    model = _model(events)
    figs = module_figures(events)
    table = Table(title=f"{model['model']} summary", title_justify="left", show_footer=True)
    total_params = sum(p["numel"] for p in model["params"])
    trainable = sum(p["numel"] for p in model["params"] if p["requires_grad"])
    root = figs.get("", {})
    columns = [("Module", "Total"), ("Type", ""), ("Output shape", ""), ("Params", f"{total_params:,}"),
               ("Trainable", f"{trainable:,}"), ("Mult-adds", _fmt_count(root.get("macs", 0))),
               ("Fwd ms", _fmt_ms(root.get("fwd_ns", 0))), ("Bwd ms", _fmt_ms(root.get("bwd_ns", 0))),
               ("Saved for bwd", _fmt_bytes(root.get("saved", 0)))]
    for header, footer in columns:
        table.add_column(header, footer=footer, justify="left" if header in ("Module", "Type") else "right")
    for m in model["modules"]:
        f = figs[m["path"]]
        depth = m["path"].count(".") + (1 if m["path"] else 0)
        name = "  " * depth + (m["path"].rsplit(".", 1)[-1] or "(root)")
        table.add_row(name, m["cls"], str(f["output"]) if f["output"] is not None else "--",
                      _fmt_count(f["params"]), _fmt_count(f["trainable"]), _fmt_count(f["macs"]),
                      _fmt_ms(f["fwd_ns"]), _fmt_ms(f["bwd_ns"]), _fmt_bytes(f["saved"]) if f["saved"] else "--")
    return table


def module_tree(events: list[dict]) -> Tree:
    """``named_modules`` as a rich Tree: class, extra_repr, parameters (with children), time."""
    model = _model(events)
    figs = module_figures(events)
    by_path = {m["path"]: m for m in model["modules"]}

    def label(m: dict) -> Text:
        f = figs[m["path"]]
        text = Text()
        text.append(m["path"].rsplit(".", 1)[-1] or model["model"], style="bold")
        text.append(f" {m['cls']}", style="cyan")
        if m["extra_repr"]:
            text.append(f"({m['extra_repr']})", style="dim")
        if f["total_params"]:
            text.append(f"  {f['total_params']:,} params", style="green")
        if f["fwd_ns"]:
            text.append(f"  fwd {_fmt_ms(f['fwd_ns'])} ms", style="yellow")
        if m["aliases"]:
            text.append(f"  shared with {', '.join(m['aliases'])}", style="magenta")
        return text

    root = by_path.get("") or model["modules"][0]
    tree = Tree(label(root))
    stack = [(root, tree)]
    while stack:
        m, node = stack.pop()
        children = []
        for child in m["children"]:
            path = f"{m['path']}.{child}" if m["path"] else child
            if path in by_path:
                children.append(by_path[path])
            else:  # a shared module drawn under its first path
                alias = next((x for x in model["modules"] if path in x["aliases"]), None)
                if alias is not None:
                    node.add(Text(f"{child} → {alias['path'] or '(root)'} (shared)", style="magenta"))
        branches = [(c, node.add(label(c))) for c in children]
        stack.extend(reversed(branches))
    return tree


def timeline(events: list[dict], step: int | None = None) -> Text:
    """The hook firing order of one step (the last by default), indented by nesting."""
    steps = [e["step"] for e in events if e["kind"] in MODULE_EVENTS]
    if step is None:
        step = max(steps) if steps else 0
    text = Text()
    depth = 0
    arrows = {"forward_pre": "▶", "forward": "◀", "backward_pre": "▷", "backward": "◁"}
    for e in events:
        if e["step"] != step:
            continue
        kind = e["kind"]
        if kind in ("forward", "backward"):
            depth = max(depth - 1, 0)
        if kind in MODULE_EVENTS:
            text.append("  " * depth + f"{arrows[kind]} {kind:<12} {e['path'] or '(root)'}", style=_STYLE[kind])
            if e["call"]:
                text.append(f"  call {e['call']}", style="dim")
            text.append("\n")
        elif kind == "hook":
            text.append("  " * depth + f"  • hook {e['qualname']} ({e['hook_kind']} on {e['target'] or '(root)'})"
                        + (" replaced the value" if e["replaced"] else "") + "\n", style="magenta")
        elif kind == "error":
            text.append("  " * depth + f"  ✖ {e['etype']}: {e['message']}\n", style="bold red")
        if kind in ("forward_pre", "backward_pre"):
            depth += 1
    return text


_STYLE = defaultdict(str, {"forward_pre": "green", "forward": "green", "backward_pre": "blue", "backward": "blue"})
