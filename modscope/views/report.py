"""Reports built from events alone (so they work live, in-process and on a loaded file):
``summary_table`` (torchinfo-like), ``summary_totals`` (its footer's figures as numbers),
``module_tree`` and ``timeline``, as rich renderables.

Figures per module come from the last step that has forward events; bytes saved for backward
come from the ``graph`` event (each graph node knows the module that created it). Multiply-adds
(one per multiply-accumulate of a matrix product, a convolution, an RNN's gate products or
attention's ``QK^T`` and ``AV``; biases, normalisations and activations add none) come from two
sources, so nothing is counted twice:

- the graph: a rule per op (``_MAC_RULES``) reads the node's output shape and its operands' shapes
  (the ``inputs`` nodes, else the shapes it ``saved``), so matmuls written inline in a ``forward``,
  fused ops (oneDNN's LSTM layer, cuDNN's RNN, ``scaled_dot_product_attention``'s kernels) and
  attention are counted, not only known layers;
- the module's class (``_MODULE_RULES``: Linear, Conv, ConvTranspose, RNN/LSTM/GRU and their
  cells, MultiheadAttention) and its forward events' shapes, for a call the graph cannot account
  for: the module made no node (frozen weights and an input needing no gradient, ``no_grad``, or
  no graph at all) or one of its nodes' operand shapes is unknown. A module with any node labelled
  with it or with a module inside it is the graph's; inside a module counted by its class nothing
  more is counted; and only the calls of one forward pass are counted (the step's first top-level
  call), as the graph holds one.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from ..events.schema import MODULE_EVENTS

Shape = list[int]

# --- multiply-adds from the graph ----------------------------------------------------------------
# op -> MACs(out_shape, input_shapes, saved): input shapes by position (None where that input needs
# no gradient), ``saved`` the tensors the node saved for backward other than its own output
# (``{"shape", "param"}``, in the order torch declares them: by name). None when it cannot tell.


def _prod(shape: Shape | None) -> int:
    n = 1
    for s in shape or []:
        n *= s
    return n


def _at(shapes: list, i: int) -> Shape | None:
    return shapes[i] if -len(shapes) <= i < len(shapes) else None


def _inner(ins: list, *where: tuple[int, int]) -> int | None:
    """The contracted dimension, read from whichever operand's shape is known."""
    for pos, dim in where:
        shape = _at(ins, pos)
        if shape is not None and len(shape) > dim:
            return shape[dim]
    return None


def _matmul(*where: tuple[int, int], outer: int = 0) -> Callable[[Shape, list, list], int | None]:
    """Each output element is a dot product over the inner dimension (``outer``: the operand
    dimension summed over as well, as ``addbmm`` sums over its batch)."""
    def rule(out: Shape, ins: list, saved: list) -> int | None:
        inner = _inner(ins, *where)
        if inner is None:
            return None
        if outer:
            batch = _inner(ins, (outer, 0), (outer + 1, 0))
            return None if batch is None else _prod(out) * inner * batch
        return _prod(out) * inner
    return rule


def _convolution(out: Shape, ins: list, saved: list, transposed: bool = False) -> int | None:
    """Each output element of a convolution: (input channels / groups) x kernel multiply-adds,
    the weight's dimensions after the first; each input element of a transposed one: (output
    channels / groups) x kernel, spread over the output. Torch saves the input and the weight
    (by name: input, weight) whichever needs a gradient, so a frozen one is read there. A
    transposed convolution is one whose module is one, or whose weight ``[in, out / groups, *k]``
    does not lead with the output's channels."""
    both = [s["shape"] for s in saved] if len(saved) == 2 else [None, None]
    weight = _at(ins, 1) or next((s["shape"] for s in saved if s.get("param")), None) or both[1]
    if weight is None or len(weight) < 3 or len(out) < len(weight) - 1:
        return None
    if not transposed and weight[0] == out[len(out) - len(weight) + 1]:
        return _prod(out) * _prod(weight[1:])
    x = _at(ins, 0) or both[0]
    return None if x is None else _prod(x) * _prod(weight[1:])


def _rnn_macs(out: Shape, weights: list[Shape]) -> int | None:
    """Every weight matrix of a recurrent layer (input-hidden, hidden-hidden, projection; every
    layer and direction) is applied once per time step and batch element: the output's
    leading dimensions (time x batch, or the packed sequence's total length)."""
    return _prod(out[:-1]) * sum(_prod(w) for w in weights) if weights and out else None


def _saved_matrices(saved: list) -> list[Shape]:
    return [s["shape"] for s in saved if s.get("param") and len(s["shape"]) == 2]


def _mkldnn_rnn_layer(out: Shape, ins: list, saved: list) -> int | None:
    """oneDNN's RNN layer (one node per layer and direction): inputs ``input, weight_ih,
    weight_hh, bias_ih, bias_hh, hx, cx``; frozen weights are found among the saved parameters."""
    weights = [_at(ins, 1), _at(ins, 2)]
    return _rnn_macs(out, weights if None not in weights else _saved_matrices(saved))


def _fused_rnn(out: Shape, ins: list, saved: list) -> int | None:
    """cuDNN's / MIOpen's RNN (one node for all layers): inputs ``input, *weights, hx, cx``, the
    states 3-D, so the weight matrices are the 2-D inputs after the first, or the saved ones."""
    return _rnn_macs(out, _saved_matrices(saved) or [s for s in ins[1:] if s is not None and len(s) == 2])


def _attention(out: Shape, ins: list, saved: list) -> int | None:
    """A fused ``scaled_dot_product_attention`` (inputs ``query, key, value``): ``QK^T`` is
    L x S x E and ``AV`` L x S x Ev per batch and head (query heads: grouped-query attention shares
    key heads). Under a causal mask the kernels skip about half of the products; all are counted,
    as the unfused (matmul) path does them."""
    if len(out) < 2:
        return None
    q, k, v = _at(ins, 0), _at(ins, 1), _at(ins, 2)
    if None in (q, k, v):  # saved by name: (attn_mask,) key, query, value, then the other results
        operands = [s["shape"] for s in saved if len(s["shape"]) == len(out)][-3:]
        if len(operands) == 3:
            k, q, v = k or operands[0], q or operands[1], v or operands[2]
    seq = _inner([k, v], (0, len(out) - 2), (1, len(out) - 2))
    width = _inner([q, k], (0, len(out) - 1), (1, len(out) - 1))
    if seq is None or width is None:
        return None
    return _prod(out[:-2]) * out[-2] * seq * (width + out[-1])


_MAC_RULES: dict[str, Callable[[Shape, list, list], int | None]] = {
    "MmBackward0": _matmul((0, 1), (1, 0)),
    "AddmmBackward0": _matmul((1, 1), (2, 0)),
    "BmmBackward0": _matmul((0, 2), (1, 1)),
    "BaddbmmBackward0": _matmul((1, 2), (2, 1)),  # attention weights under a mask: baddbmm(mask, q, k^T)
    "AddbmmBackward0": _matmul((1, 2), (2, 1), outer=1),
    "MvBackward0": _matmul((0, 1), (1, 0)),
    "AddmvBackward0": _matmul((1, 1), (2, 0)),
    "DotBackward0": lambda out, ins, saved: _inner(ins, (0, 0), (1, 0)),
    "ConvolutionBackward0": _convolution,
    "MkldnnRnnLayerBackward0": _mkldnn_rnn_layer,
    "CudnnRnnBackward0": _fused_rnn,
    "MiopenRnnBackward0": _fused_rnn,
    **dict.fromkeys(("ScaledDotProductFlashAttentionForCpuBackward0", "ScaledDotProductFlashAttentionBackward0",
                     "ScaledDotProductEfficientAttentionBackward0", "ScaledDotProductCudnnAttentionBackward0",
                     "ScaledDotProductFusedAttentionOverrideableBackward0"), _attention),
}


def node_macs(node: dict, shapes: dict[int, Shape], cls: str | None = None) -> int | None:
    """A graph node's multiply-adds (``shapes``: node id -> shape; ``cls``: the class of the module
    that made it): 0 for an op without any, None for one that has some but whose operand shapes
    the graph does not give."""
    rule = _MAC_RULES.get(node["op"])
    if rule is None:
        return 0
    ins = [shapes.get(i) if i is not None else None for i in node["inputs"]]
    saved = [s for s in node.get("saved", ()) if not s.get("output")]
    if rule is _convolution and cls is not None and "ConvTranspose" in cls:
        return _convolution(node["shape"], ins, saved, transposed=True)
    return rule(node["shape"], ins, saved)


# --- multiply-adds from a module's class ---------------------------------------------------------
# cls -> MACs(input shapes, output shapes, module, own params {name: shape}), for a call the graph
# does not account for; None when the shapes do not tell.


def _linear(ins: list, outs: list, module: dict, params: dict) -> int | None:
    out, x = _at(outs, 0), _at(ins, 0)
    width = x[-1] if x else _inner([params.get("weight")], (0, 1))  # a tied weight is not its own
    return None if out is None or width is None else _prod(out) * width


def _conv_per_element(ins: list, module: dict, params: dict, dims: int, transposed: bool) -> int | None:
    """(input channels / groups) x kernel for a convolution; (output channels / groups) x kernel
    for a transposed one: the weight's dimensions after the first, from the weight, else from
    ``extra_repr`` (``in, out, kernel_size=(..), ..., groups=g``) and the input's channels."""
    weight = params.get("weight")
    if weight is not None and len(weight) == dims + 2 and _prod(weight):
        return _prod(weight[1:])
    found = re.match(r"\s*(\d+),\s*(\d+),\s*kernel_size=\(([\d,\s]+)\)", module.get("extra_repr", ""))
    if found is None:
        return None
    channels, out_channels = int(found[1]), int(found[2])
    x = _at(ins, 0)
    if not channels and x is not None and len(x) > dims:  # a lazy module before its first call
        channels = x[-dims - 1]
    groups = re.search(r"groups=(\d+)", module["extra_repr"])
    kernel = [int(k) for k in found[3].split(",") if k.strip()]
    return (out_channels if transposed else channels) // (int(groups[1]) if groups else 1) * _prod(kernel)


def _conv(dims: int) -> Callable[[list, list, dict, dict], int | None]:
    def rule(ins: list, outs: list, module: dict, params: dict) -> int | None:
        out, per = _at(outs, 0), _conv_per_element(ins, module, params, dims, transposed=False)
        return None if out is None or per is None else _prod(out) * per
    return rule


def _conv_transpose(dims: int) -> Callable[[list, list, dict, dict], int | None]:
    def rule(ins: list, outs: list, module: dict, params: dict) -> int | None:  # each input element scatters
        x, per = _at(ins, 0), _conv_per_element(ins, module, params, dims, transposed=True)
        return None if x is None or per is None else _prod(x) * per
    return rule


def _rnn(ins: list, outs: list, module: dict, params: dict) -> int | None:
    """RNN/LSTM/GRU (every layer and direction) and their cells: the weight matrices applied per
    step and batch element; the output's leading dimensions are (time x) batch."""
    out = _at(outs, 0)
    return None if out is None else _rnn_macs(out, [s for n, s in params.items() if n.startswith("weight_")
                                                   and len(s) == 2])


def _multihead_attention(ins: list, outs: list, module: dict, params: dict) -> int | None:
    """The q, k, v projections (E x their width), ``QK^T`` and ``AV`` (L x S x E each, over all
    heads) and the output projection (E x E). Arguments passed by keyword are not in the forward
    events: a missing key is the query, a missing value the key (self-attention)."""
    out = _at(outs, 0)
    if out is None:
        return None
    width = out[-1]
    q = _at(ins, 0) or out
    k = _at(ins, 1) or q
    v = _at(ins, 2) or k
    tokens = _prod(q[:-1])
    seq = _key_length(q, k, _at(outs, 1)) + (1 if "bias_k" in params else 0)
    projections = sum(_prod(x[:-1]) * x[-1] for x in (q, k, v)) * width + tokens * width * width
    return projections + 2 * tokens * seq * width


def _key_length(q: Shape, k: Shape, weights: Shape | None) -> int:
    """S, the number of keys: from the attention weights (``need_weights``: ``[.., L, S]``), else
    the key's sequence dimension, which ``batch_first`` decides and the events do not say. The
    batch dimension is the one the query and key share; if both do (self-attention), torch's
    default, ``batch_first=False``, is assumed."""
    if weights:
        return weights[-1]
    if len(k) == 3 and len(q) == 3 and k[0] == q[0] and k[1] != q[1]:
        return k[1]  # batch first
    return k[0]


_MODULE_RULES: dict[str, Callable[[list, list, dict, dict], int | None]] = {
    **dict.fromkeys(("Linear", "LazyLinear", "NonDynamicallyQuantizableLinear"), _linear),
    **{f"{lazy}Conv{d}d": _conv(d) for d in (1, 2, 3) for lazy in ("", "Lazy")},
    **{f"{lazy}ConvTranspose{d}d": _conv_transpose(d) for d in (1, 2, 3) for lazy in ("", "Lazy")},
    **dict.fromkeys(("RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell"), _rnn),
    "MultiheadAttention": _multihead_attention,
}


def module_call_macs(cls: str, inputs: list, outputs: list, module: dict | None = None,
                     params: dict[str, Shape] | None = None) -> int | None:
    """A standard layer's multiply-adds for one call, from its class, the shapes of the call's
    inputs and outputs (summaries or shapes; None where not a tensor) and its own parameters'
    shapes; None for another class or when the shapes do not tell."""
    rule = _MODULE_RULES.get(cls)
    if rule is None:
        return None
    shape = [s.get("shape") if isinstance(s, dict) else s for s in inputs]
    out = [s.get("shape") if isinstance(s, dict) else s for s in outputs]
    return rule(shape, out, module or {"cls": cls, "extra_repr": ""}, params or {})


# --- figures -------------------------------------------------------------------------------------


def _last(events: list[dict], kind: str) -> dict | None:
    return next((e for e in reversed(events) if e["kind"] == kind), None)


def _model(events: list[dict]) -> dict:
    model = _last(events, "model")
    if model is None:
        raise ValueError("the trace has no model event (was a model traced?)")
    return model


def _one_forward(events: list[dict], step: int | None) -> list[tuple[str, int, list, list]]:
    """``(path, call, inputs, outputs)`` of each module call within the step's first top-level
    call (itself included), in call order."""
    order: list[tuple[str, int]] = []
    inputs: dict[tuple[str, int], list] = {}
    outputs: dict[tuple[str, int], list] = {}
    depth = 0
    for e in events:
        if e["step"] != step or e["kind"] not in ("forward_pre", "forward"):
            continue
        key = (e["path"], e["call"])
        if e["kind"] == "forward_pre":
            depth += 1
            order.append(key)
            inputs[key] = e["inputs"]
        elif key in inputs:
            depth -= 1
            outputs[key] = e["outputs"]
            if depth <= 0:
                break
    return [(path, call, inputs[path, call], outputs.get((path, call), [])) for path, call in order]


def _ancestors(path: str) -> list[str]:
    """The paths of the modules enclosing ``path`` ("" for the root), nearest last."""
    if path == "":
        return []
    parts = path.split(".")
    return [""] + [".".join(parts[:i]) for i in range(1, len(parts))]


def _mult_adds(events: list[dict], model: dict, step: int | None) -> list[tuple[str, int | None, int, int]]:
    """``(module path, call, multiply-adds, bytes saved for backward)``: one per graph node labelled with
    a module, one per module call counted from its class (see the module docstring)."""
    by_path = {m["path"]: m for m in model["modules"]}
    own: dict[str, dict[str, Shape]] = defaultdict(dict)
    for prm in model["params"]:
        owner, _, name = prm["path"].rpartition(".")
        own[owner][name] = prm["shape"]
    items: list[list] = []  # [path, call, macs, saved bytes]
    labelled: set[str] = set()
    enclosing: set[str] = set()  # modules with a labelled module inside them
    unknown: set[tuple[str, int | None]] = set()  # calls with a node whose multiply-adds are unknown
    graph = _last(events, "graph")
    if graph is not None:
        shapes = {n["id"]: n["shape"] for n in graph["nodes"]}
        for node in graph["nodes"]:
            label = node["module"]
            if label is None:
                continue
            macs = node_macs(node, shapes, by_path[label]["cls"] if label in by_path else None)
            if macs is None:
                unknown.add((label, node.get("call")))
            items.append([label, node.get("call"), macs or 0, node["saved_bytes"]])
            if label not in labelled:
                labelled.add(label)
                enclosing.update(_ancestors(label))
    by_class: set[str] = set()
    for path, call, inputs, outputs in _one_forward(events, step):
        module = by_path.get(path)
        if module is None or module["cls"] not in _MODULE_RULES or path in enclosing \
                or any(a in by_class for a in _ancestors(path)):
            continue
        replaced = {(path, call), (path, None)} & unknown
        if path in labelled and not replaced:
            continue  # the graph accounts for it
        macs = module_call_macs(module["cls"], inputs, outputs, module, own[path])
        if macs is None:
            continue
        for item in items:  # a call the graph knew only in part: its nodes keep their saved bytes
            if (item[0], item[1]) in replaced:
                item[2] = 0
        items.append([path, call, macs, 0])
        by_class.add(path)
    return [(path, call, macs, saved) for path, call, macs, saved in items]


def _figures(events: list[dict], mult_adds: list | None = None
             ) -> tuple[dict, dict[str, dict[str, Any]], dict[str, int]]:
    """The model event, ``module_figures`` and ``summary_totals``, from one pass; ``mult_adds``,
    a list, receives ``_mult_adds``'s items (the summary attributes them to calls: on a
    10,000-module model computing them twice cost a page 0.3 s)."""
    model = _model(events)
    paths = [m["path"] for m in model["modules"]]
    figs: dict[str, dict[str, Any]] = {p: {"params": 0, "trainable": 0, "total_params": 0, "output": None,
                                           "fwd_ns": 0, "bwd_ns": 0, "macs": 0, "saved": 0, "calls": 0,
                                           "no_backward": False}
                                       for p in paths}
    for prm in model["params"]:
        owner = prm["path"].rpartition(".")[0]
        if owner in figs:
            figs[owner]["params"] += prm["numel"]
            figs[owner]["trainable"] += prm["numel"] if prm["requires_grad"] else 0
        for p in (owner, *_ancestors(owner)):  # the modules it lies within (not every module: 10k x 10k)
            if p in figs:
                figs[p]["total_params"] += prm["numel"]
    steps = [e["step"] for e in events if e["kind"] == "forward"]
    last = max(steps) if steps else None
    began: dict[str, int] = {}  # path -> when its first backward began (backward_pre)
    ended: dict[str, int] = {}  # path -> when the last backward in its subtree ended
    own: dict[str, bool] = {}  # path -> whether any of its backward events was one of its own
    for e in events:
        if e["step"] != last or e.get("path") not in figs:
            continue
        f = figs[e["path"]]
        if e["kind"] == "forward":
            f["fwd_ns"] += e["dur_ns"]
            f["calls"] += 1
            f["output"] = next((s["shape"] for s in e["outputs"] if s is not None), f["output"])
        elif e["kind"] == "backward_pre":
            began.setdefault(e["path"], e["t"])
        elif e["kind"] == "backward":
            f["bwd_ns"] += e["dur_ns"]
            own.setdefault(e["path"], False)
            own[e["path"]] |= own_backward(e)
            for p in (e["path"], *_ancestors(e["path"])):
                ended[p] = max(ended.get(p, e["t"]), e["t"])
    # A module's backward hook fires when its inputs' gradients are ready, which for a model
    # whose input needs no gradient is at once, before any child's: a container's backward
    # time is the span from its backward_pre to the end of the last backward in its subtree.
    for path, start in began.items():
        if path in ended:
            figs[path]["bwd_ns"] = max(figs[path]["bwd_ns"], ended[path] - start)
    for path, any_own in own.items():
        figs[path]["no_backward"] = not any_own
    total_macs = 0
    items = _mult_adds(events, model, last)
    if mult_adds is not None:
        mult_adds.extend(items)
    for label, _call, macs, saved in items:
        total_macs += macs
        for p in [label, *_ancestors(label)]:
            if p in figs:
                figs[p]["macs"] += macs
                figs[p]["saved"] += saved
    totals = {"params": sum(p["numel"] for p in model["params"]),
              "trainable": sum(p["numel"] for p in model["params"] if p["requires_grad"]),
              "mult_adds": total_macs}
    return model, figs, totals


def own_backward(event: dict) -> bool:
    """Whether a ``backward`` event is a backward of the call's own: some gradient reached one of
    its inputs. When none of a call's inputs needs a gradient (a model's root, a first layer, GPT-2's
    ``transformer`` fed token ids), torch still runs the module's full backward hook, at once as
    its output's gradient arrives, with every ``grad_input`` ``None`` (and warns "Full backward
    hook is firing when gradients are computed with respect to module outputs since no inputs
    require gradients"); its ``dur_ns`` then times no work of the module (its parameters'
    gradients are computed after the hook). Both backends record such calls so. (An event
    without ``grad_inputs``, made by hand, counts as its own.)"""
    grads = event.get("grad_inputs")
    return grads is None or any(g is not None for g in grads)


def module_figures(events: list[dict]) -> dict[str, dict[str, Any]]:
    """Per module path: own/total params, trainable, output shape, forward/backward ns, MACs,
    bytes saved for backward (each over the module and everything below it); ``no_backward``:
    the module's backward events in that step were none of its own (``own_backward``), so its
    ``bwd_ns`` (0, or a container's subtree span) is not a time of its own."""
    return _figures(events)[1]


def summary_totals(events: list[dict]) -> dict[str, int]:
    """The summary table's footer as numbers: ``params`` and ``trainable`` (shared parameters
    counted once) and ``mult_adds`` (one forward pass, every module's; see the module docstring)."""
    return _figures(events)[2]


def _within(path: str, ancestor: str) -> bool:
    return ancestor == "" or path == ancestor or path.startswith(ancestor + ".")


def _fmt_count(n: int) -> str:
    return f"{n:,}" if n else "--"


def _fmt_params(f: dict[str, Any]) -> str:
    """A module's own parameters; a container that owns none shows its subtree's in parentheses."""
    if f["params"] or not f["total_params"]:
        return _fmt_count(f["params"])
    return f"({f['total_params']:,})"


def _fmt_ms(ns: int) -> str:
    return f"{ns / 1e6:.3f}" if ns else "--"


def _fmt_bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def summary_table(events: list[dict], columns: Any = None) -> Table:
    """The summary's table (``views.summary``), every column (or ``columns``) however wide: a row
    per module call, type, input and output shapes, parameters (own; a container's subtree in
    parentheses; a repeated call's counted at the first), trainable, multiply-adds, forward and
    backward time (a container's: its call's span; "—": no backward of its own), bytes saved for
    backward; totals count shared parameters once."""
    from .summary import SummaryReport
    return SummaryReport(events, columns).table()


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
