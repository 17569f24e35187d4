"""Keeping big diagrams readable: fold repeated blocks, group wide fan-outs, collapse to a depth.

One pass over a built ``Diagram`` (module tree, autograd graph or dataflow alike), driven by the
module path each node and cluster carries (``data["module"]`` or ``data["path"]``):

1. **Repeated blocks.** Consecutive sibling modules with the same structure signature (class,
   ``extra_repr``, own parameter and buffer shapes, children's names and signatures,
   recursively) form a run when they are entries rather than roles: the children of a container
   (``Sequential``, ``ModuleList``, ``ModuleDict``) under any names (torchvision ViT's
   ``encoder_layer_0`` ... ``encoder_layer_11``, a ``ModuleDict`` of layers), and elsewhere
   children numbered in order (``0``, ``1``, ...; ``block1``, ``block2``, ...). Named attributes of
   other modules (``q_proj``/``k_proj``/``v_proj``, ``fc``/``downsample``) have roles of their
   own even when they look alike, and never fold. Runs are found with a period of up to ``MAX_PERIOD`` modules (2,500 x
   ``[Linear, ReLU, LayerNorm, Identity]`` in one ``Sequential`` is one run of period 4). Every
   node of a run's modules becomes one node labelled as torch's repr folds them
   (``layer3 (1-5): 5 × Bottleneck``); edges into the run go into it, edges out of the run
   leave it, edges inside it disappear. In an autograd graph the ops an enclosing module made
   between the run's blocks (residual adds) fold with it. A module that is shared (registered
   twice) or holds a tied parameter never folds, nor does its parent.
2. **Wide fan-outs.** A node with more than ``FANOUT`` out-edges of one kind keeps the first
   ``FANOUT_KEEP`` targets; the others (those reached from that node alone), with what hangs
   only below them, become one ``+N more`` node.
3. **Depth.** A diagram still over the budget is collapsed to the deepest module depth at which
   it fits (each module at that depth one node holding everything below it).

``fold=True`` (the default everywhere) does this only for a diagram over its node ``budget``
(``BUDGET``): a small model's diagram is drawn unchanged, every block visible, since someone
debugging a small model wants to see each block. The result carries ``notes``: what was folded
and how to see it all (``--depth N``, ``--no-fold``); the writers put them at the top.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .diagram import Diagram, Edge, Node, check_depth, gc_paused, path_depth, shorten

BUDGET = 400  # nodes: dot lays out a few hundred nodes in well under a second
FANOUT = 24  # a node with more out-edges of one kind than this has them grouped
FANOUT_KEEP = 8  # targets drawn before the "+N more" node
MAX_PERIOD = 8  # longest repeated pattern of sibling modules looked for
NOUNS = {"module_tree": "modules", "autograd": "nodes", "dataflow": "calls"}
HOW_TO_EXPAND = "expand: --depth N (more detail), --no-fold (everything; slow to lay out)"


@dataclass(frozen=True)
class Run:
    """``count`` consecutive repeats of ``period`` sibling modules under ``parent``; ``members``
    are the module paths in order; ``block`` describes one repeat (``Bottleneck``,
    ``[Linear(8, 8, True) → ReLU]``)."""

    parent: str
    members: tuple[str, ...]
    period: int
    count: int
    block: str

    def label(self, keep_first: bool = False) -> str:
        """torch's repr fold: ``layer1 (0-2): 3 × Bottleneck``; with ``keep_first`` the first
        repeat is drawn apart, so ``layer1 (1-2): 2 × Bottleneck (as layer1.0)``."""
        members = self.members[self.period:] if keep_first else self.members
        first, last = (m.rpartition(".")[2] for m in (members[0], members[-1]))
        span = first if first == last else f"{first}-{_short_last(first, last)}"
        text = f"{self.parent + ' ' if self.parent else ''}({span}): {self.count - keep_first} × {self.block}"
        if keep_first:
            text += f" (as {self.members[0]})" if self.period == 1 else \
                f" (as {self.members[0]}-{self.members[self.period - 1].rpartition('.')[2]})"
        return text


def _short_last(first: str, last: str) -> str:
    """``last`` as a span's end after ``first``: its number alone when both are numbered under
    one stem (``encoder_layer_0-11``, ``0-5``), else whole (``a-d``)."""
    a, b = _NUMBERED.fullmatch(first), _NUMBERED.fullmatch(last)
    return b[2] if a is not None and b is not None and a[1] == b[1] else last


def check_budget(budget: int) -> None:
    """``budget`` must be an ``int >= 1``; say so in a ``ValueError`` otherwise."""
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise ValueError(f"budget must be an integer >= 1 (nodes), got {budget!r}")


def fit(diagram: Diagram, model_event: dict[str, Any] | None = None, *, fold: bool = True,
        budget: int = BUDGET, depth: int | None = None, auto_depth: bool = True) -> Diagram:
    """``diagram`` made to fit ``budget`` nodes (see the module docstring); the diagram itself
    when ``fold`` is false or it already fits, else a new one with ``notes``.

    ``model_event`` (a ``model`` event's fields: ``modules`` with ``path``, ``cls``,
    ``extra_repr``, ``children``, ``aliases``; ``params``/``buffers`` with ``path``, ``shape``)
    is what repeated blocks are recognised by; without it no block folds. ``depth`` is the
    depth the diagram was built at (``None``: all), said in the note; ``auto_depth=False``
    skips step 3 (the TUI picks its own depth). Raises ``ValueError`` for a bad ``budget``."""
    check_budget(budget)
    check_depth(depth)
    if not fold or len(diagram.nodes) <= budget:
        return diagram
    with gc_paused():
        return _Fitter(diagram, model_event, budget, depth, auto_depth).run()


class _Fitter:
    def __init__(self, diagram: Diagram, model_event: dict[str, Any] | None, budget: int,
                 depth: int | None, auto_depth: bool) -> None:
        self.diagram, self.budget, self.depth, self.auto_depth = diagram, budget, depth, auto_depth
        self.model_event = model_event
        self.classes = {m["path"]: m["cls"] for m in (model_event or {}).get("modules", ())}
        self.notes: list[str] = []

    def run(self) -> Diagram:
        before = len(self.diagram.nodes)
        d = self.diagram
        runs = repeated_runs(self.model_event) if self.model_event is not None else []
        if runs:
            # First keep each run's first repeat drawn in full (what one block looks like);
            # fold whole runs only if that is still over the budget.
            d = fold_runs(self.diagram, runs, keep_first=True)
            if len(d.nodes) > self.budget:
                d = fold_runs(self.diagram, runs, keep_first=False)
            shown = [n.data["run"] for n in d.nodes.values() if "run" in n.data]
            if shown:
                self.notes.append(f"folded {len(shown)} run{'s' if len(shown) > 1 else ''} of repeated "
                                  f"blocks: " + "; ".join(shorten(s, 80) for s in shown[:4])
                                  + (f"; +{len(shown) - 4} more" if len(shown) > 4 else ""))
        if len(d.nodes) > self.budget:
            d, grouped = group_fanouts(d)
            if grouped:
                self.notes.append(f"grouped {grouped} wide fan-out{'s' if grouped > 1 else ''} (+N more)")
        if len(d.nodes) > self.budget and self.auto_depth:
            d, level = self._fit_depth(d)
            if level is not None:
                self.notes.append(f"collapsed to depth {level} (modules deeper than that drawn as one node)")
        own = list(self.diagram.notes)  # what the builder said (e.g. how modules were found)
        if len(d.nodes) >= before:
            # Nothing folded (no repeated blocks known, no modules to collapse by): say so, never a
            # fold that did not happen.
            d = collapse(self.diagram, {})
            d.notes = [*own, f"{before:,} nodes drawn in full, over the budget of {self.budget}: "
                             f"{self._why_unfolded()}"]
            return d
        d.notes = [*own, f"{before:,} nodes drawn as {len(d.nodes):,} to stay readable (budget {self.budget})",
                   *self.notes, HOW_TO_EXPAND]
        return d

    def _why_unfolded(self) -> str:
        if not _modules_of(self.diagram):
            return "its nodes belong to no module, so there are no blocks or depths to fold them by"
        if self.model_event is None:
            return "no model given to recognise repeated blocks by, and no depth collapse fits"
        return "no repeated blocks or wide fan-outs, and no depth collapse fits"

    def _fit_depth(self, d: Diagram) -> tuple[Diagram, int | None]:
        """The deepest collapse of ``d`` that fits the budget (depth 0 if none does)."""
        deepest = max((path_depth(m) for m in _modules_of(d) if m), default=0)
        if self.depth is not None:
            deepest = min(deepest, self.depth)
        collapsed = d
        for level in range(deepest - 1, -1, -1):
            collapsed = collapse_to_depth(d, level, self.classes)
            if len(collapsed.nodes) <= self.budget:
                return collapsed, level
        return collapsed, (0 if collapsed is not d else None)


def model_event_in(events: Iterable[dict[str, Any]]) -> dict[str, Any] | None:
    """The last ``model`` event among ``events`` (what a trace's blocks are recognised by), or
    ``None``."""
    found = None
    for e in events:
        if e.get("kind") == "model":
            found = e
    return found


# --- signatures and runs ------------------------------------------------------------------------

def module_signatures(model_event: dict[str, Any]) -> dict[str, int | None]:
    """Module path -> structure signature (equal ints: identical structure); ``None`` for a
    module that must not fold: shared (it has ``aliases``), holding a tied parameter or a
    shared child, or containing such a module."""
    modules = model_event["modules"]
    known = {m["path"] for m in modules}
    own: dict[str, list[tuple]] = {}
    blocked: set[str] = set()
    for kind in ("params", "buffers"):
        for p in model_event.get(kind) or ():
            owner, _, name = p["path"].rpartition(".")
            own.setdefault(owner, []).append((kind, name, tuple(p.get("shape") or ())))
            if p.get("aliases"):
                blocked.add(owner)
    interned: dict[tuple, int] = {}
    sigs: dict[str, int | None] = {}
    for m in reversed(modules):  # named_modules lists parents first: children are done before
        path = m["path"]
        kids = [(name, _join(path, name)) for name in m.get("children", ())]
        if m.get("aliases") or path in blocked or any(k not in known or sigs.get(k) is None for _, k in kids):
            sigs[path] = None
            continue
        key = (m["cls"], m.get("extra_repr", ""), tuple(own.get(path, ())),
               tuple((name, sigs[k]) for name, k in kids))
        sigs[path] = interned.setdefault(key, len(interned))
    return sigs


def repeated_runs(model_event: dict[str, Any]) -> list[Run]:
    """Every run of repeated sibling blocks in the model (see the module docstring), parents
    before children; a run inside another run's modules is listed too (the outer one wins).
    None for a model event whose modules do not list their ``children`` (only classes)."""
    if not all("children" in m and "cls" in m for m in model_event.get("modules") or ()):
        return []  # a model event without the module structure (only classes): nothing is known
    sigs = module_signatures(model_event)
    info = {m["path"]: m for m in model_event["modules"]}
    runs = []
    for m in model_event["modules"]:
        for kids in _sibling_stretches(m["path"], m["cls"], m.get("children", ()), sigs):
            for start, period, count in find_periodic(kids, [sigs[k] for k in kids]):
                members = tuple(kids[start:start + period * count])
                items = [_describe(info[k]) for k in members[:period]]
                block = items[0] if period == 1 else "[" + " → ".join(items) + "]"
                runs.append(Run(m["path"], members, period, count, block))
    return runs


CONTAINERS = frozenset({"Sequential", "ModuleList", "ModuleDict"})  # children are entries, not roles
_NUMBERED = re.compile(r"(.*?)(\d+)")


def _sibling_stretches(parent: str, cls: str, names: Iterable[str], sigs: dict) -> list[list[str]]:
    """The child paths of ``parent`` (of class ``cls``) in stretches that may fold: all of a
    container's children in registration order, whatever their names; of any other module, its
    children numbered in order under one stem (``0, 1, 2``; ``block1, block2``). A name breaks a
    stretch where it is not a module of the event."""
    container = cls in CONTAINERS
    out: list[list[str]] = []
    last: tuple[str, int] | None = None
    for name in names:
        path = _join(parent, name)
        numbered = _NUMBERED.fullmatch(name)
        if path not in sigs or not container and numbered is None:
            last = None
            continue
        key = (numbered[1], int(numbered[2])) if numbered is not None else None
        follows = last is not None and (container or key == (last[0], last[1] + 1))
        if not follows:
            out.append([])
        out[-1].append(path)
        last = key if key is not None else ("", -2)
    return out


def find_periodic(keys: list[str], sigs: list[int | None]) -> list[tuple[int, int, int]]:
    """``(start, period, count)`` for each maximal stretch of ``sigs`` that repeats one pattern of
    at most ``MAX_PERIOD`` entries at least twice (``None`` never matches), left to right; of
    patterns covering the same stretch the shortest wins."""
    out, i, n = [], 0, len(sigs)
    while i < n:
        best = (0, 0, 0)  # (covered, period, count)
        for p in range(1, min(MAX_PERIOD, (n - i) // 2) + 1):
            pattern = sigs[i:i + p]
            if None in pattern:
                break
            count = 1
            while sigs[i + count * p:i + (count + 1) * p] == pattern:
                count += 1
            if count >= 2 and count * p > best[0]:
                best = (count * p, p, count)
        if best[0]:
            out.append((i, best[1], best[2]))
            i += best[0]
        else:
            i += 1
    return out


def _describe(m: dict) -> str:
    """``Linear(8, 8, True)``: the class with its ``extra_repr`` values when they are short."""
    extra = re.sub(r"\b[A-Za-z_]\w*=", "", m.get("extra_repr") or "")
    return f"{m['cls']}({extra})" if extra and len(extra) <= 20 else m["cls"]


def _join(parent: str, name: str) -> str:
    return f"{parent}.{name}" if parent else name


# --- the one collapse -----------------------------------------------------------------------

def node_module(node: Node, cluster_modules: dict[str, str | None]) -> str | None:
    """The module a node belongs to: its ``module`` (an op's maker, a leaf's owner), else its
    ``path`` (a tree node, a dataflow call), else the module of the cluster holding it."""
    data = node.data
    if "module" in data:
        return data["module"]
    if "path" in data and node.kind in ("module", "call", "collapsed"):
        return data["path"]
    return cluster_modules.get(node.cluster) if node.cluster is not None else None


def _cluster_modules(diagram: Diagram) -> dict[str, str | None]:
    return {cid: c.data.get("module", c.data.get("path")) for cid, c in diagram.clusters.items()}


def _modules_of(diagram: Diagram) -> set[str]:
    cm = _cluster_modules(diagram)
    return {m for n in diagram.nodes.values() if (m := node_module(n, cm)) is not None}


@dataclass
class _Group:
    """What a set of nodes becomes: one node with ``lines``, ``kind`` and ``data``."""

    key: str
    lines: list[str]
    kind: str
    data: dict[str, Any]
    members: int = 0


def collapse(diagram: Diagram, group_of: dict[str, _Group], noun: str | None = None) -> Diagram:
    """A new diagram where every node ``group_of`` maps (node id -> group) is replaced by its
    group's node, placed where the group's first node was, in the innermost cluster of that
    node that survives; clusters whose module lies inside a group are dropped. Edges are
    redirected, each (source, target) pair drawn once, edges within a group dropped; an edge
    that merged differently labelled edges loses its label. Each group node ends with a line
    counting what it holds (``noun``, default from the diagram kind)."""
    noun = noun or NOUNS.get(diagram.kind, "nodes")
    out = Diagram(diagram.kind, diagram.name)
    out.notes = list(getattr(diagram, "notes", []))
    gone = _dropped_clusters(diagram, group_of)
    for cid, c in diagram.clusters.items():
        if cid not in gone:
            out.clusters[cid] = c
    ids: dict[str, str] = {}
    for n in diagram.nodes.values():
        g = group_of.get(n.id)
        if g is None:
            out.nodes[n.id] = n if n.cluster not in gone else _moved(n, _surviving(diagram, n.cluster, gone))
            ids[n.id] = n.id
            continue
        g.members += 1
        gid = f"g_{g.key}"
        ids[n.id] = gid
        if gid not in out.nodes:
            out.nodes[gid] = Node(gid, g.lines, g.kind, _surviving(diagram, n.cluster, gone), g.data)
    for g in {id(g): g for g in group_of.values()}.values():
        node = out.nodes[f"g_{g.key}"]
        node.lines = [*node.lines, f"{g.members:,} {noun} folded"]
        node.data = {**node.data, "folded": g.members}
    _redirect_edges(diagram.edges, ids, out)
    return out


def _dropped_clusters(diagram: Diagram, group_of: dict[str, _Group]) -> set[str]:
    """Clusters holding nothing once the grouped nodes are gone (nor any surviving cluster)."""
    keep: set[str] = set()
    for n in diagram.nodes.values():
        if n.id not in group_of and n.cluster is not None:
            keep.add(n.cluster)
    # a cluster survives if it holds a kept node or a kept cluster: walk up from each kept one
    for cid in list(keep):
        parent = diagram.clusters[cid].parent
        while parent is not None and parent not in keep:
            keep.add(parent)
            parent = diagram.clusters[parent].parent
    return set(diagram.clusters) - keep


def _surviving(diagram: Diagram, cid: str | None, gone: set[str]) -> str | None:
    while cid is not None and cid in gone:
        cid = diagram.clusters[cid].parent
    return cid


def _moved(node: Node, cluster: str | None) -> Node:
    return Node(node.id, node.lines, node.kind, cluster, node.data)


def _redirect_edges(edges: Iterable[Edge], ids: dict[str, str], out: Diagram) -> None:
    index: dict[tuple[str, str, str], Edge] = {}
    for e in edges:
        s, t = ids[e.source], ids[e.target]
        if s == t:
            continue
        key = (s, t, e.kind)
        seen = index.get(key)
        if seen is None:
            index[key] = new = Edge(s, t, e.label, e.kind) if (s, t) != (e.source, e.target) else e
            out.edges.append(new)
        elif seen.label != e.label and seen.label is not None:
            merged = Edge(s, t, None, e.kind)
            out.edges[out.edges.index(seen)] = merged
            index[key] = merged


def fold_runs(diagram: Diagram, runs: list[Run], keep_first: bool = False) -> Diagram:
    """``diagram`` with every node of each run's modules (and everything below them) folded
    into one node per run; an outer run wins over runs inside it. ``keep_first`` leaves each
    run's first repeat as it is (runs inside it still fold)."""
    owner: dict[str, _Group] = {}
    parents: dict[int, str] = {}  # id(group) -> the run's parent module
    for r in runs:
        members = r.members[r.period:] if keep_first else r.members
        label = r.label(keep_first)
        g = _Group(f"run{len(owner)}", [label], "collapsed",
                   {"module": members[0], "run": label, "members": list(members), "count": r.count - keep_first,
                    "period": r.period})
        parents[id(g)] = r.parent
        for m in members:
            owner.setdefault(m, g)
    group_of = _assign(diagram, owner)
    _absorb_glue(diagram, group_of, parents)
    return collapse(diagram, group_of)


def _absorb_glue(diagram: Diagram, group_of: dict[str, _Group], parents: dict[int, str]) -> None:
    """In an autograd graph (op nodes carry ``seq``), the ops of the run's parent (or of a module
    around it) made between a run's blocks (a residual add between two layers; with inferred
    modules, the ops between two blocks' parameter uses) fold with the run: what the forward did
    while it went through the run is one node, not a fan of glue around it. Ops before the run's
    first block or after its last stay."""
    spans: dict[int, list[int]] = {}
    for node_id, g in group_of.items():
        seq = diagram.nodes[node_id].data.get("seq")
        if seq is not None:
            span = spans.setdefault(id(g), [seq, seq])
            span[0], span[1] = min(span[0], seq), max(span[1], seq)
    if not spans:
        return
    cm = _cluster_modules(diagram)
    groups = [g for g in {id(g): g for g in group_of.values()}.values() if id(g) in spans]
    for n in diagram.nodes.values():
        seq = n.data.get("seq")
        if seq is None or n.id in group_of or n.kind != "op":
            continue
        module = node_module(n, cm)
        if module is None:
            continue
        for g in groups:  # the run's parent, or a module around it (a ModuleList's owner loops over it)
            parent = parents[id(g)]
            if (module == parent or not module or parent.startswith(module + ".")) \
                    and spans[id(g)][0] < seq < spans[id(g)][1]:
                group_of[n.id] = g
                break


def collapse_to_depth(diagram: Diagram, depth: int, classes: dict[str, str]) -> Diagram:
    """``diagram`` with each module at ``depth`` (the root at 0) drawn as one node holding its
    nodes and everything below it; a node already standing for that module keeps its label."""
    cm = _cluster_modules(diagram)
    groups: dict[str, _Group] = {}
    group_of: dict[str, _Group] = {}
    for n in diagram.nodes.values():
        m = node_module(n, cm)
        if m is None or path_depth(m) < depth or n.data.get("run") is not None and path_depth(m) == depth:
            continue
        top = ".".join(m.split(".")[:depth]) if depth else ""
        g = groups.get(top)
        if g is None:
            cls = classes.get(top)
            g = groups[top] = _Group(f"d{len(groups)}", [top or "(model)"] + ([cls] if cls else []), "collapsed",
                                     {"module": top, "cls": cls})
        if n.kind in ("module", "call") and n.data.get("path") == top:
            g.lines, g.data = list(n.lines), {**n.data, "module": top}
        group_of[n.id] = g
    # A group of one node that stands for its module changes nothing: leave it as it is.
    for top, g in groups.items():
        held = [k for k, v in group_of.items() if v is g]
        if len(held) == 1 and diagram.nodes[held[0]].data.get("path") == top:
            del group_of[held[0]]
    return collapse(diagram, group_of) if group_of else diagram


def _assign(diagram: Diagram, owner: dict[str, _Group]) -> dict[str, _Group]:
    """Node id -> the group of the outermost module in ``owner`` that holds the node's module."""
    cm = _cluster_modules(diagram)
    group_of: dict[str, _Group] = {}
    memo: dict[str, _Group | None] = {}
    for n in diagram.nodes.values():
        m = node_module(n, cm)
        if m is None:
            continue
        if m not in memo:
            parts = m.split(".")
            memo[m] = next((owner[p] for p in (".".join(parts[:k]) for k in range(1, len(parts) + 1))
                            if p in owner), None)
        if memo[m] is not None:
            group_of[n.id] = memo[m]
    return group_of


# --- fan-outs -----------------------------------------------------------------------------------

def group_fanouts(diagram: Diagram) -> tuple[Diagram, int]:
    """``diagram`` with each wide fan-out grouped (see the module docstring), and how many
    fan-outs were grouped."""
    ins: dict[str, set[str]] = {}
    outs: dict[tuple[str, str], list[str]] = {}
    for e in diagram.edges:
        ins.setdefault(e.target, set()).add(e.source)
        targets = outs.setdefault((e.source, e.kind), [])
        if e.target not in targets:
            targets.append(e.target)
    group_of: dict[str, _Group] = {}
    grouped = 0
    for (source, _), targets in outs.items():
        if len(targets) <= FANOUT or source in group_of:
            continue
        hidden = [t for t in targets[FANOUT_KEEP:] if ins.get(t) == {source} and t not in group_of]
        if len(hidden) < 2:
            continue
        g = _Group(f"fan{grouped}", [f"+{len(hidden):,} more"], "collapsed", {"module": None, "fanout_of": source})
        for node_id in _below(hidden, diagram, ins, group_of):
            group_of[node_id] = g
        grouped += 1
    if not grouped:
        return diagram, 0
    return collapse(diagram, group_of), grouped


def _below(starts: list[str], diagram: Diagram, ins: dict[str, set[str]], taken: dict) -> set[str]:
    """``starts`` and every node reached only from them (all of its in-edges from the set)."""
    succ: dict[str, list[str]] = {}
    for e in diagram.edges:
        succ.setdefault(e.source, []).append(e.target)
    found = set(starts)
    stack = list(starts)
    while stack:
        for t in succ.get(stack.pop(), ()):
            if t not in found and t not in taken and ins.get(t, set()) <= found:
                found.add(t)
                stack.append(t)
    return found
