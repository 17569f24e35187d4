"""Compare two traces, from their events alone (``diff``). The semantics:

Steps. By default the steps both traces have are compared pairwise by number (step 0 with step
0, ...), so the report names the first step, and in it the first module, where the numbers part.
``step=12`` compares step 12 of both; ``step=(12, 13)`` step 12 of A with step 13 of B (two steps
of one run: ``modscope diff run.jsonl@12 run.jsonl@13``). A step a trace lacks is an error naming
the file and the steps it has. A step one complete trace has and the other lacks is a difference
(``only_a``/``only_b``); steps missing from a truncated trace after its cut, or from a trace that
lost events while recording (its ``end`` event counts ``dropped``), are only a note, and
the step where the recording was cut is compared as far as it goes (``partial``).

Matching. Modules are matched by path; module calls by (event kind, path, call index within the
step): the second call of a reused block is compared with the second. Parameters by path.

Numbers. For every matched call, each value's statistics (mean, std, min, max, absmax, zeros,
nan, inf) of the forward inputs and outputs and the backward gradients; per parameter, its norm,
gradient norm and update ratio (the ``params`` event); per module, forward and backward time
(the step's calls summed). The relative difference of two numbers is
``|a - b| / max(|a|, |b|, scale, 1e-12)`` where ``scale`` is, for a tensor's statistics, the larger
absmax of the two tensors (a mean of 1e-9 against 3e-9 in a tensor of magnitude 1 is float noise,
not a 67 % change); for a parameter's gradient norm, a thousandth of the step's total gradient norm
(of all parameters); for its update ratio, a thousandth of the step's total update norm divided by
the parameter's norm. A bias whose gradient is zero in exact arithmetic (a convolution's, before a
BatchNorm) gets a gradient norm of 1.4e-8 from one framework and 2.8e-8 from the other and an update
ratio of 0 or 1.3e-8: float noise in a gradient of norm 1.6, not a difference. ``zeros`` (a
fraction) compares absolutely; ``nan`` and ``inf`` counts must be equal. A number whose relative
difference exceeds ``rtol`` (default 1e-3) counts as a difference. Shapes and dtypes must be equal.
Timings are always shown but never count, they are noisy, unless ``timing`` gives them a threshold
of their own.

Ranks. Two ranks of one data-parallel run (``run.jsonl#0`` and ``run.jsonl#1``: their events carry
rank fields) see different data, so their activations and module gradients differ by design;
what data parallelism keeps equal is compared instead: the structure, and after every step each
parameter (not the buffers, which ranks may keep apart), first its fingerprint (``fp``, a sum of
its bytes as 64-bit words, recorded by ranks) exactly, then its norm, gradient norm (after the all-reduce) and
update ratio. The first step and parameter whose copies part is the divergence (a rank-local
update: the classic data-parallel bug).

Order. Each step's module events, as (kind, path, call), are compared in order; the first
position where they part is reported with context (``OrderSplit``) and counts as a difference.

Graph. The autograd graphs recorded in the compared steps (modscope records the first forward's)
are compared as, per module, the multiset of op names.

The first divergence (``TraceDiff.first``): a structure change first (modules, parameters,
buffers); else the first compared step with a difference and in it the earliest in A's firing
order of: a number past the threshold, the order split, a graph change; else a step only one side
has.

Not compared, as framework noise or per-process detail: the ``session`` event (pid, versions,
framework), timestamps, ``seq`` numbers, tensor ids, hook and user-metric events, graph node ids,
edges and saved tensors, ``BackwardHookFunctionBackward`` nodes (the engine's graph holds the
module backward hooks' nodes, torch's does not show them), the leaves' ``AccumulateGrad`` nodes,
and the ``torch::autograd::`` prefix torch gives some op names.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Iterable
from typing import Any

from ...events.records import STATS_KEYS
from ..trace import load_trace
from .model import (
    Divergence,
    GraphChange,
    ModuleInfo,
    ModuleStep,
    Number,
    OrderSplit,
    Side,
    StepDiff,
    StructureChange,
    TraceDiff,
)

DEFAULT_RTOL = 1e-3
TINY = 1e-12
PARAM_FLOOR = 1e-3  # a parameter's grad norm (update) is compared relative to at least this fraction
# of the step's total grad norm (update norm): see the module docstring
IGNORED_OPS = frozenset({"BackwardHookFunctionBackward"})
OP_PREFIXES = ("torch::autograd::",)
CONTEXT = 3  # events shown either side of an order split

_VALUES = {"forward_pre": ("inputs", "input"), "forward": ("outputs", "output"),
           "backward_pre": ("grad_outputs", "grad_output"), "backward": ("grad_inputs", "grad_input")}
_COUNTS = ("nan", "inf")
_STEP_KINDS = frozenset({"forward_pre", "forward", "backward_pre", "backward", "params", "step", "graph"})


class DiffInputError(ValueError):
    """Input a diff cannot compare (a step the trace does not have); the message names the file."""


# --- the two sides -------------------------------------------------------------------------------

class _Trace:
    """One side's events, grouped by step."""

    def __init__(self, events: list[dict[str, Any]], name: str, truncated: bool) -> None:
        self.name = name
        self.truncated = truncated
        end = next((e for e in reversed(events) if e["kind"] == "end"), None)
        self.dropped = end.get("dropped", 0) if end else 0  # events the recording lost (memory bound)
        self.session = next((e for e in events if e["kind"] == "session"), None)
        # (rank, world size) of a rank of several (``events.schema``: rank fields), else None
        self.rank = (self.session["rank"], self.session.get("world_size")) \
            if self.session and "rank" in self.session else None
        self.model = next((e for e in events if e["kind"] == "model"), None)
        self.by_step: dict[int, list[dict[str, Any]]] = {}
        for e in events:
            if e["kind"] in _STEP_KINDS:
                self.by_step.setdefault(e["step"], []).append(e)
        self.steps = sorted(self.by_step)

    def side(self) -> Side:
        framework = self.session.get("framework") if self.session else None
        return Side(self.name, framework, self.model["model"] if self.model else None, self.steps, self.truncated)

    def check_step(self, step: int) -> None:
        if step not in self.by_step:
            has = f"it has steps {step_ranges(self.steps)}" if self.steps else "it has no recorded steps"
            raise DiffInputError(f"{self.name}: no step {step} in this trace ({has})")

    @property
    def cut_step(self) -> int | None:
        """The step the recording was cut in (a truncated trace's last)."""
        return self.steps[-1] if self.truncated and self.steps else None


def _as_trace(obj: Any) -> _Trace:
    """A path, a loaded or live trace (anything with ``events``), or a list of events."""
    if isinstance(obj, str | os.PathLike):
        loaded = load_trace(obj)
        return _Trace(loaded.events, str(obj), loaded.truncated)
    if hasattr(obj, "events"):
        path = getattr(obj, "path", None)
        return _Trace(list(obj.events), str(path) if path is not None else "trace",
                      bool(getattr(obj, "truncated", False)))
    if isinstance(obj, list):
        return _Trace(obj, "events", False)
    raise TypeError(f"diff compares trace files, traces or lists of events, not {type(obj).__name__}")


def step_ranges(steps: Iterable[int]) -> str:
    """``0-4, 7, 9-10``: a sorted list of step numbers, compactly."""
    out: list[str] = []
    run: list[int] = []
    for s in steps:
        if run and s == run[-1] + 1:
            run.append(s)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [s]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ", ".join(out)


# --- numbers -------------------------------------------------------------------------------------

def rel_diff(a: float | None, b: float | None, scale: float = 0.0) -> float:
    """``|a - b| / max(|a|, |b|, scale, 1e-12)``; 0 when both are ``None`` (not finite on both
    sides: the nan/inf counts compare those), ``inf`` when only one is."""
    if a is None or b is None:
        return 0.0 if a is None and b is None else math.inf
    if a == b:
        return 0.0
    return abs(a - b) / max(abs(a), abs(b), scale, TINY)


class _Collector:
    """The numbers of one step pair, per module, with the first past the threshold in A's order."""

    def __init__(self, rtol: float, timing: float | None) -> None:
        self.rtol = rtol
        self.timing = timing
        self.modules: dict[str, ModuleStep] = {}
        self.first: tuple[int, Number] | None = None
        self.max: Number | None = None

    def add(self, order: int, number: Number) -> None:
        m = self.modules.get(number.path)
        if m is None:
            m = self.modules[number.path] = ModuleStep(number.path)
        worst = m.worst.get(number.category)
        if worst is None or number.rel > worst.rel or (number.diverged and not worst.diverged):
            m.worst[number.category] = number
        if number.category not in ("fwd_time", "bwd_time") and (self.max is None or number.rel > self.max.rel):
            self.max = number
        if number.diverged:
            m.diverged += 1
            if m.first is None:
                m.first = number
            if self.first is None or order < self.first[0]:
                self.first = (order, number)

    def compare(self, order: int, path: str, category: str, what: str, a: Any, b: Any, *,
                scale: float = 0.0, exact: bool = False, threshold: float | None = None,
                seqs: tuple[int | None, int | None] = (None, None),
                approx: tuple[bool, bool] = (False, False)) -> Number:
        rel = rel_diff(a, b, scale)
        if exact:
            diverged = a != b
        else:
            limit = self.rtol if threshold is None else threshold
            diverged = rel > limit
        number = Number(path, category, what, a, b, rel, diverged, *seqs, *approx)
        self.add(order, number)
        return number

    def one_sided(self, order: int, path: str, category: str, what: str, a: Any, b: Any,
                  seqs: tuple[int | None, int | None]) -> None:
        self.add(order, Number(path, category, what, a, b, math.inf, True, *seqs))


def _summary_text(s: dict | None) -> str:
    return "not a tensor" if s is None else f"{s['shape']} {s['dtype']}"


def _compare_values(col: _Collector, order: int, ea: dict, eb: dict) -> None:
    """The tensors of two matched module events: shapes and dtypes, then statistics."""
    field, category = _VALUES[ea["kind"]]
    va, vb = ea[field], eb[field]
    phase = "forward" if ea["kind"].startswith("forward") else "backward"
    call = f"{phase} call {ea['call']} " if ea["call"] else f"{phase} "
    seqs = (ea["seq"], eb["seq"])
    for i in range(max(len(va), len(vb))):
        sa = va[i] if i < len(va) else None
        sb = vb[i] if i < len(vb) else None
        label = f"{call}{category}[{i}]"
        if i >= len(va) or i >= len(vb) or (sa is None) != (sb is None) or (
                sa is not None and (sa["shape"] != sb["shape"] or sa["dtype"] != sb["dtype"])):
            a_text = _summary_text(sa) if i < len(va) else "absent"
            b_text = _summary_text(sb) if i < len(vb) else "absent"
            col.one_sided(order, ea["path"], "shape", f"{label} shape", a_text, b_text, seqs)
            continue
        if sa is None or "mean" not in sa or "mean" not in sb:
            continue  # no statistics recorded (stats=False): shapes are all there is to compare
        scale = max(abs(sa.get("absmax") or 0.0), abs(sb.get("absmax") or 0.0))
        for key in STATS_KEYS:
            a, b = sa.get(key), sb.get(key)
            if key in _COUNTS:
                col.compare(order, ea["path"], category, f"{label} {key}", a, b, exact=True, seqs=seqs)
            elif key == "zeros":
                diverged = a != b and (a is None or b is None or abs(a - b) > col.rtol)
                rel = abs(a - b) if a is not None and b is not None else (0.0 if a == b else math.inf)
                col.add(order, Number(ea["path"], category, f"{label} zeros", a, b, rel, diverged, *seqs))
            else:
                col.compare(order, ea["path"], category, f"{label} {key}", a, b, scale=scale, seqs=seqs)


def _module_events(events: list[dict]) -> list[dict]:
    return [e for e in events if e["kind"] in _VALUES]


def _key(e: dict) -> tuple[str, str, int]:
    return (e["kind"], e["path"], e["call"])


def _compare_calls(col: _Collector, ea_list: list[dict], eb_list: list[dict]) -> None:
    """Module events matched by (kind, path, call), ordered by their position in A's order (a
    call B alone made comes after all of A's)."""
    order = {_key(e): i for i, e in enumerate(ea_list)}
    b_by_key = {_key(e): e for e in eb_list}
    for i, e in enumerate(ea_list):
        other = b_by_key.get(_key(e))
        if other is not None:
            _compare_values(col, i, e, other)
        elif e["kind"] in ("forward", "backward"):
            col.one_sided(i, e["path"], "calls", f"{e['kind']} call {e['call']}", "called", "not called",
                          (e["seq"], None))
    base = len(ea_list)
    a_keys = set(order)
    for j, e in enumerate(eb_list):
        if _key(e) not in a_keys and e["kind"] in ("forward", "backward"):
            col.one_sided(base + j, e["path"], "calls", f"{e['kind']} call {e['call']}", "not called", "called",
                          (None, e["seq"]))


def _compare_times(col: _Collector, ea_list: list[dict], eb_list: list[dict]) -> None:
    def totals(events: list[dict]) -> dict[tuple[str, str], int]:
        out: dict[tuple[str, str], int] = {}
        for e in events:
            if e["kind"] in ("forward", "backward") and "dur_ns" in e:
                key = (e["path"], "fwd_time" if e["kind"] == "forward" else "bwd_time")
                out[key] = out.get(key, 0) + e["dur_ns"]
        return out

    ta, tb = totals(ea_list), totals(eb_list)
    for (path, category), a in ta.items():
        if (path, category) not in tb:
            continue
        b = tb[(path, category)]
        rel = rel_diff(a, b)
        diverged = col.timing is not None and rel > col.timing
        # timings are last in a step's order: they never come before a number that parts
        col.add(1 << 30, Number(path, category, f"{category.replace('_', ' ')} (ns)", a, b, rel, diverged))


def _param_module(path: str) -> str:
    return path.rsplit(".", 1)[0] if "." in path else ""


def _param_scales(items: dict[str, tuple[dict, int]]) -> tuple[float, float]:
    """The step's total gradient norm and total update norm (``||all updates||``, each
    parameter's update being ``update_ratio * norm``) of one side's parameters."""
    grad2 = upd2 = 0.0
    for item, _ in items.values():
        norm, grad, ratio = item.get("norm"), item.get("grad_norm"), item.get("update_ratio")
        grad2 += (grad or 0.0) ** 2
        upd2 += ((ratio or 0.0) * (norm or 0.0)) ** 2
    return math.sqrt(grad2), math.sqrt(upd2)


def _compare_params(col: _Collector, a_events: list[dict], b_events: list[dict],
                    order: int, only: set[str] | None = None) -> dict[str, dict[str, Number]]:
    """Each parameter's (and buffer's) numbers, matched by path: ``{path: {key: Number}}``.
    ``only``: these paths alone (ranks: the parameters, not the buffers). Where both sides
    carry a fingerprint (``fp``: ranks of one run) it is compared first, exactly."""
    def items(events: list[dict]) -> dict[str, tuple[dict, int]]:
        return {item["path"]: (item, e["seq"]) for e in events if e["kind"] == "params" for item in e["items"]
                if only is None or item["path"] in only}

    ia, ib = items(a_events), items(b_events)
    (ga, ua), (gb, ub) = _param_scales(ia), _param_scales(ib)
    grad_floor, update_floor = PARAM_FLOOR * max(ga, gb), PARAM_FLOOR * max(ua, ub)
    out: dict[str, dict[str, Number]] = {}
    for path, (a, seq_a) in ia.items():
        module = _param_module(path)
        if path not in ib:
            col.one_sided(order, module, "params", f"{path} statistics", "recorded", "absent", (seq_a, None))
            continue
        b, seq_b = ib[path]
        norm = max(a.get("norm") or 0.0, b.get("norm") or 0.0)
        # an update ratio's floor: a thousandth of the whole update, relative to this parameter
        scales = {"norm": 0.0, "grad_norm": grad_floor, "update_ratio": update_floor / norm if norm else 0.0}
        mine = out[path] = {}
        if "fp" in a and "fp" in b:  # bitwise equality of the values, where only that is right
            # (its size: the norms' relative difference; a fingerprint's own numbers mean nothing)
            rel = rel_diff(a.get("norm"), b.get("norm")) if a["fp"] != b["fp"] else 0.0
            number = mine["fp"] = Number(module, "norm", f"{path} fingerprint", f"{a['fp']:016x}", f"{b['fp']:016x}",
                                         rel, a["fp"] != b["fp"], seq_a, seq_b)
            col.add(order, number)
        # a sampled update ratio (``update_sampled``) is an estimate: its difference is marked;
        # so are a sampled tensor's norm and its NaN/Inf counts (the sample's: ``stats_sampled``)
        sampled = ("update_sampled" in a, "update_sampled" in b)
        values_sampled = ("stats_sampled" in a, "stats_sampled" in b)
        approx = {"update_ratio": sampled, "norm": values_sampled}
        for key, scale in scales.items():
            mine[key] = col.compare(order, module, key, f"{path} {key}", a.get(key), b.get(key), scale=scale,
                                    seqs=(seq_a, seq_b), approx=approx.get(key, (False, False)))
        for key in _COUNTS:
            mine[key] = col.compare(order, module, "norm", f"{path} {key}", a.get(key), b.get(key), exact=True,
                                    seqs=(seq_a, seq_b), approx=values_sampled)
    for path, (_, seq_b) in ib.items():
        if path not in ia:
            col.one_sided(order, _param_module(path), "params", f"{path} statistics", "absent", "recorded",
                          (None, seq_b))
    return out


# --- firing order --------------------------------------------------------------------------------

def order_split(ea_list: list[dict], eb_list: list[dict]) -> OrderSplit | None:
    """The first position where two lists of module events part (``None``: same order)."""
    ka = [_key(e) for e in ea_list]
    kb = [_key(e) for e in eb_list]
    if ka == kb:
        return None
    pos = next((i for i, (x, y) in enumerate(zip(ka, kb)) if x != y), min(len(ka), len(kb)))
    ka, kb = [list(k) for k in ka], [list(k) for k in kb]
    start = max(pos - CONTEXT, 0)
    return OrderSplit(pos, ka[pos] if pos < len(ka) else None, kb[pos] if pos < len(kb) else None,
                      ea_list[pos]["seq"] if pos < len(ea_list) else None,
                      eb_list[pos]["seq"] if pos < len(eb_list) else None,
                      start, ka[start:pos + CONTEXT + 1], kb[start:pos + CONTEXT + 1])


def _event_text(key: list | None) -> str:
    if key is None:
        return "(the order ends)"
    kind, path, call = key
    return f"{kind} {path or '(root)'}" + (f" call {call}" if call else "")


# --- graph ---------------------------------------------------------------------------------------

def _op_name(op: str) -> str:
    for prefix in OP_PREFIXES:
        op = op.removeprefix(prefix)
    return op


def graph_ops(events: list[dict]) -> dict[str | None, Counter]:
    """Per module path, the multiset of op names of the step's graph events (noise left out)."""
    out: dict[str | None, Counter] = {}
    for e in events:
        if e["kind"] != "graph":
            continue
        for node in e["nodes"]:
            op = _op_name(node["op"])
            if op in IGNORED_OPS or (op == "AccumulateGrad" and node["module"] is None):
                continue
            out.setdefault(node["module"], Counter())[op] += 1
    return out


def _compare_graphs(a_events: list[dict], b_events: list[dict], sa: int, sb: int) -> list[GraphChange]:
    ga, gb = graph_ops(a_events), graph_ops(b_events)
    if not ga or not gb:
        return []  # a graph on one side only is a recording choice (graph=False), not the model's
    changes = []
    for path in list(ga) + [p for p in gb if p not in ga]:
        ca, cb = ga.get(path, Counter()), gb.get(path, Counter())
        added, removed = dict(cb - ca), dict(ca - cb)
        if added or removed:
            changes.append(GraphChange(path, sa, sb, dict(sorted(added.items())), dict(sorted(removed.items()))))
    return changes


# --- structure -----------------------------------------------------------------------------------

def _describe_module(m: dict) -> str:
    return f"{m['cls']}({m['extra_repr']})"


def _describe_tensor(p: dict) -> str:
    grad = "" if p.get("requires_grad", True) else ", no grad"
    return f"{p['shape']} {p['dtype']}{grad}"


def _compare_structure(ma: dict | None, mb: dict | None) -> list[StructureChange]:
    if ma is None or mb is None:
        return []
    out = []
    if ma["model"] != mb["model"]:
        out.append(StructureChange("", "model", "", "changed", ma["model"], mb["model"]))
    for what, key, describe in (("module", "modules", _describe_module), ("parameter", "params", _describe_tensor),
                                ("buffer", "buffers", _describe_tensor)):
        da = {x["path"]: x for x in ma[key]}
        db = {x["path"]: x for x in mb[key]}
        owner = (lambda p: p) if what == "module" else _param_module
        for name, x in da.items():
            if name not in db:
                out.append(StructureChange(owner(name), what, name, "removed", describe(x), None))
            elif describe(x) != describe(db[name]):
                out.append(StructureChange(owner(name), what, name, "changed", describe(x), describe(db[name])))
        for name, y in db.items():
            if name not in da:
                out.append(StructureChange(owner(name), what, name, "added", None, describe(y)))
    return out


def _module_tree(a: _Trace, b: _Trace) -> list[ModuleInfo]:
    """Both trees merged in tree order: A's order, B's extra modules after the module before them
    in B (module paths seen in events stand in for a missing ``model`` event)."""
    def listing(t: _Trace) -> list[tuple[str, str | None]]:
        if t.model is not None:
            return [(m["path"], m["cls"]) for m in t.model["modules"]]
        seen: dict[str, None] = {}
        for events in t.by_step.values():
            for e in events:
                if e["kind"] in _VALUES:
                    seen.setdefault(e["path"], None)
        return [(p, None) for p in sorted(seen)]

    la, lb = listing(a), listing(b)
    cls_b = dict(lb)
    order = [p for p, _ in la]
    placed = set(order)
    after = None
    for p, _ in lb:
        if p in placed:
            after = p
            continue
        pos = order.index(after) + 1 if after is not None else 0
        # after the previous module's whole subtree
        while pos < len(order) and after is not None and order[pos].startswith(after + ".") and after:
            pos += 1
        order.insert(pos, p)
        placed.add(p)
        after = p
    cls_a = dict(la)
    return [ModuleInfo(p, cls_a.get(p) if p in cls_a else None, cls_b.get(p) if p in cls_b else None)
            for p in order]


# --- the diff ------------------------------------------------------------------------------------

def step_detail(events: list[dict]) -> str:
    """How a step was watched, from its ``step`` event (``capture.sampling``): ``"full"``,
    ``"light"`` (no module events, no ``params``), or ``""`` when the trace does not say."""
    return next((e.get("detail", "") for e in events if e["kind"] == "step"), "")


def _compare_light(col: _Collector, a_events: list[dict], b_events: list[dict], ranks: bool) -> None:
    """What a light step holds: its loss and global gradient norm (the root's row). Ranks of one
    data-parallel run compute their losses on their own data (they differ by design), and their
    gradients after the all-reduce (the same): only the norm is compared there."""
    sa = next((e for e in a_events if e["kind"] == "step"), {})
    sb = next((e for e in b_events if e["kind"] == "step"), {})
    figures = (("grad_norm", "global grad norm"),) if ranks else (("loss", "loss"), ("grad_norm", "global grad norm"))
    for key, what in figures:
        if sa.get(key) is not None and sb.get(key) is not None:
            col.compare(0, "", "grad_norm", what, sa[key], sb[key], seqs=(sa.get("seq"), sb.get("seq")))


def _compare_step(a: _Trace, b: _Trace, sa: int, sb: int, rtol: float,
                  timing: float | None, ranks: bool = False) -> tuple[StepDiff, list[GraphChange]]:
    a_events, b_events = a.by_step[sa], b.by_step[sb]
    ma, mb = _module_events(a_events), _module_events(b_events)
    col = _Collector(rtol, timing)
    details = step_detail(a_events), step_detail(b_events)
    if "light" in details:  # a light step has no module events to compare: its figures are compared
        ma = mb = []
        _compare_light(col, a_events, b_events, ranks)
    if not ranks:  # ranks see different data: their activations and module gradients differ by design
        _compare_calls(col, ma, mb)
    params_at = next((i for i, e in enumerate(a_events) if e["kind"] == "params"), None)
    # the params event comes after the step's module events: order it after them
    only = {p["path"] for p in a.model["params"]} if ranks and a.model else None
    light_only = "light" in details and not all(any(e["kind"] == "params" for e in ev) for ev in (a_events, b_events))
    params = {} if light_only else _compare_params(col, a_events, b_events, len(ma) + (params_at or 0), only)
    split, graph = None, []
    if not ranks and "light" not in details:
        _compare_times(col, ma, mb)
        split = order_split(ma, mb)
        graph = _compare_graphs(a_events, b_events, sa, sb)
    step = StepDiff(sa, sb, col.modules, split, partial=sa == a.cut_step or sb == b.cut_step, params=params,
                    detail_a=details[0], detail_b=details[1])
    if col.max is not None:
        step.max_rel = col.max.rel
        step.max_where = f"{col.max.path or '(root)'}: {col.max.what}"
        step.max_approx = col.max.approx

    candidates: list[tuple[int, Divergence]] = []
    if col.first is not None:
        pos, n = col.first
        message = f"{n.what}: {_fmt_value(n.a, n.approx_a)} vs {_fmt_value(n.b, n.approx_b)}"
        if n.what.endswith(" fingerprint"):  # ranks: a parameter no longer equal on both
            name = n.what.removesuffix(" fingerprint")
            message = (f"{name} is not the same on both ranks (fingerprints {n.a} vs {n.b}; norms differ by "
                       f"rel {_fmt_rel(n.rel)})")
        elif n.category not in ("shape", "calls", "params"):
            message += f" (rel {_fmt_rel(n.rel, n.approx)})"
        candidates.append((pos, Divergence("number", n.path, sa, sb, message, n)))
    if split is not None:
        path = (split.a or split.b)[1]
        candidates.append((split.position, Divergence(
            "order", path, sa, sb, f"firing order parts at event {split.position}: "
                                   f"{_event_text(split.a)} vs {_event_text(split.b)}")))
    if graph:
        g = graph[0]
        graph_pos = next((i for i, e in enumerate(a_events) if e["kind"] == "graph"), 0)
        # a graph event is recorded when the forward ends: before the backward events
        pos = sum(1 for e in a_events[:graph_pos] if e["kind"] in _VALUES)
        candidates.append((pos, Divergence("graph", g.path, sa, sb, f"autograd ops differ: {_ops_text(g)}")))
    if candidates:
        step.first = min(candidates, key=lambda c: c[0])[1]
    return step, graph


def _ops_text(g: GraphChange) -> str:
    parts = [f"+{op}" + (f" x{n}" if n > 1 else "") for op, n in g.added.items()]
    parts += [f"-{op}" + (f" x{n}" if n > 1 else "") for op, n in g.removed.items()]
    return ", ".join(parts)


def _fmt_value(v: Any, approx: bool = False) -> str:
    """A compared value; ``approx``: an estimate or a sample's count (a sampled update ratio,
    norm, NaN/Inf count), shown ``≈``."""
    if isinstance(v, float):
        return f"≈{v:.6g}" if approx else f"{v:.6g}"
    if approx and isinstance(v, int) and not isinstance(v, bool):
        return f"≈{v}"
    return "null" if v is None else str(v)


def _fmt_rel(r: float, approx: bool = False) -> str:
    """A relative difference; ``approx``: one of an estimate's (a sampled figure), ``≈``."""
    if not math.isfinite(r):
        return "inf"
    return f"≈{r:.2e}" if approx else f"{r:.2e}"


def _steps_to_compare(a: _Trace, b: _Trace, step: Any) -> list[tuple[int, int]]:
    if step is None:
        common = sorted(set(a.steps) & set(b.steps))
        return [(s, s) for s in common]
    if isinstance(step, int) and not isinstance(step, bool):
        sa = sb = step
    elif isinstance(step, tuple | list) and len(step) == 2:
        sa, sb = step
        if sa is None:
            sa = sb
        if sb is None:
            sb = sa
        if sa is None:
            return _steps_to_compare(a, b, None)
    else:
        raise TypeError(f"step must be an int or a pair of ints (step of A, step of B), not {step!r}")
    a.check_step(sa)
    b.check_step(sb)
    return [(sa, sb)]


def diff(trace_a: Any, trace_b: Any, step: Any = None, *, rtol: float = DEFAULT_RTOL,
         timing: float | None = None, ranks: bool | None = None) -> TraceDiff:
    """Compare two traces (paths, loaded or live traces, or lists of events) module by module.

    ``step``: ``None`` compares every step both have, pairwise; an int that step of both; a pair
    ``(step_a, step_b)`` those two (e.g. two steps of one run). ``rtol``: the threshold on
    relative differences; ``timing``: a threshold that makes timings count (``None``: shown
    only). ``ranks``: the two sides are ranks of one data-parallel run (``None``: when both
    carry rank fields, with different ranks of one world size), so only what data parallelism
    keeps equal is compared: the structure and, per step, each parameter's fingerprint (exactly),
    norm, gradient norm and update ratio; "no difference" then means the ranks' parameters
    stayed equal. Raises ``TraceFileError`` (an unreadable file) or ``DiffInputError`` (a step a
    trace does not have), both naming the file. See the module docstring for the semantics."""
    if not rtol >= 0:
        raise ValueError(f"rtol must be >= 0, got {rtol}")
    a = _as_trace(trace_a)
    same_file = isinstance(trace_a, str | os.PathLike) and isinstance(trace_b, str | os.PathLike) and \
        os.fspath(trace_a) == os.fspath(trace_b)
    b = a if same_file else _as_trace(trace_b)  # two steps of one file: read it once
    pairs = _steps_to_compare(a, b, step)
    if ranks is None:
        ranks = a.rank is not None and b.rank is not None and a.rank[0] != b.rank[0] and a.rank[1] == b.rank[1]
    notes = []
    if ranks:
        which = f"ranks {a.rank[0]} and {b.rank[0]}" if a.rank and b.rank else "ranks"
        notes.append(f"A and B are {which} of one run: compared what data parallelism keeps equal (structure, "
                     "and each parameter's fingerprint, norm, gradient norm and update ratio after every step); "
                     "activations and per-module gradients differ by design (each rank has its own data)")
    for t, label in ((a, "A"), (b, "B")):
        if t.truncated:
            notes.append(f"{label} ({t.name}) was cut off (no end of recording): compared as far as it goes"
                         + (f"; its step {t.cut_step} is incomplete" if t.cut_step is not None else ""))
        if t.dropped:
            notes.append(f"{label} ({t.name}) lost {t.dropped} events while recording (the recorder's memory "
                         f"bound): it holds steps {step_ranges(t.steps)}")
        if t.model is None:
            notes.append(f"{label} ({t.name}) has no model event: its structure is not compared")
    if not pairs and step is None:
        notes.append("the traces have no step in common: no numbers compared")

    structure = _compare_structure(a.model, b.model)
    steps: list[StepDiff] = []
    graph: list[GraphChange] = []
    for sa, sb in pairs:
        s, g = _compare_step(a, b, sa, sb, rtol, timing, ranks)
        steps.append(s)
        graph += g

    only_a: list[int] = []
    only_b: list[int] = []
    if step is None:
        only_a = [s for s in a.steps if s not in b.by_step]
        only_b = [s for s in b.steps if s not in a.by_step]
        for label, only, other in (("A", only_a, b), ("B", only_b, a)):
            if only:
                why = f" ({other.name} was cut off)" if other.truncated else \
                      f" ({other.name} lost events)" if other.dropped else ""
                notes.append(f"steps {step_ranges(only)} only in {label}{why}")

    # steps missing from a trace that was cut off or lost events are not the run's difference
    first = _first(structure, steps, [] if b.truncated or b.dropped else only_a,
                   [] if a.truncated or a.dropped else only_b)
    return TraceDiff(a.side(), b.side(), rtol, timing, _module_tree(a, b), structure, graph, steps,
                     only_a, only_b, notes, first)


def _first(structure: list[StructureChange], steps: list[StepDiff], only_a: list[int],
           only_b: list[int]) -> Divergence | None:
    if structure:
        c = structure[0]
        text = {"added": f"{c.what} {c.name or '(root)'} only in B ({c.b})",
                "removed": f"{c.what} {c.name or '(root)'} only in A ({c.a})",
                "changed": f"{c.what} {c.name or '(root)'} is {c.a} in A, {c.b} in B"}[c.change]
        return Divergence("structure", c.path, None, None, text)
    for s in steps:
        if s.first is not None:
            return s.first
    if only_a or only_b:
        parts = ([f"steps {step_ranges(only_a)} only in A"] if only_a else []) + \
                ([f"steps {step_ranges(only_b)} only in B"] if only_b else [])
        first = min(only_a + only_b)
        return Divergence("steps", None, first if first in only_a else None, first if first in only_b else None,
                          "; ".join(parts))
    return None
