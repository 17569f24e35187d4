"""Module clusters for an autograd graph recorded without module labels, inferred from the
parameters its ops use and the order the forward created them.

A forward run outside ``attribute_modules`` (or the tracer) leaves no trace of which module made
each op: torch's and the engine's ``grad_fn`` nodes keep none. What the graph does keep is sound
enough to recover most of it:

1. **Parameter use.** An op that uses a parameter (the parameter's leaf is its input, or a node
   computed from that parameter alone, like the ``TBackward0`` of a ``Linear``'s weight) ran in the
   call of the module owning the parameter. A parameter that names no one call names no module:
   one registered under several paths (tied weights: GPT-2's ``lm_head`` and ``wte``), or used by
   several ops (a module called twice, or a weight used outside its module as in
   ``x @ self.wte.weight.t()``); nor does an op using the parameters of two modules.
2. **Creation order.** Sequence numbers count the ops as the forward created them. A module called
   once made every op numbered between its first and its last parameter use (the ops of its
   children included), so an op without a parameter of its own (an activation, a residual add, a
   reshape) belongs to the innermost module whose span holds its number. Spans of modules called
   once nest; two that overlap without nesting (something ran that the parameters do not tell)
   are both dropped.

What it cannot know it leaves out: ops before a module's first parameter use or after its last
(the residual add ending a block) are drawn in the enclosing module; modules without parameters
get no cluster. A module whose parameter another module's code uses directly (``MultiheadAttention``
uses ``out_proj.weight`` without calling ``out_proj``) is drawn as if it had been called. The
drawing says what was inferred (``NOTES``).
"""

from __future__ import annotations

from typing import Any

NOTES = ["modules inferred from the parameters each op uses (the forward ran outside attribute_modules):",
         "an op without parameters is drawn in the innermost module whose parameter uses surround it;",
         "modules without parameters get no cluster. Exact clusters: run the forward under",
         "`with modscope.graph.attribute_modules(model):`"]


def has_labels(nodes: list[dict[str, Any]]) -> bool:
    """Does any node of a ``graph`` event carry the module that created it?"""
    return any(node.get("module") is not None for node in nodes)


def infer_modules(event: dict[str, Any], tied: set[str] = frozenset()) -> dict[int, str]:
    """Node id -> module path for the op nodes of ``event`` (a ``graph`` event's fields, its leaves
    named by parameter path) whose module can be told (see the module docstring); ``tied``: the
    parameter paths registered under other paths too. Empty when no op uses a named parameter
    or the nodes carry no ``seq``."""
    nodes = event["nodes"]
    consumers: dict[int, int] = {}
    for node in nodes:
        for j in set(node["inputs"]):
            if j is not None:
                consumers[j] = consumers.get(j, 0) + 1
    owner_of_leaf: dict[int, str | None] = {}
    for leaf in event["leaves"]:
        path = leaf.get("path")
        # a parameter used by several ops: a module called twice, or a weight used outside its
        # module (``x @ self.wte.weight.t()``): which call or module, nothing says
        usable = path is not None and path not in tied and consumers.get(leaf["id"], 0) == 1
        owner_of_leaf[leaf["id"]] = path.rpartition(".")[0] if usable else None
    if not any(owner_of_leaf.values()) or any(n.get("seq") is None and n["id"] not in owner_of_leaf for n in nodes):
        return {}
    direct = _parameter_users(nodes, owner_of_leaf, consumers)
    by_id = {node["id"]: node for node in nodes}
    spans = _spans(direct, by_id)
    found = dict(direct)
    for node in nodes:
        if node["id"] in found or node["id"] in owner_of_leaf:
            continue
        module = _innermost(spans, node["seq"])
        if module is not None:
            found[node["id"]] = module
    return found


def _parameter_users(nodes: list[dict], owner_of_leaf: dict[int, str | None], consumers: dict[int, int],
                     ) -> dict[int, str]:
    """The ops using one module's parameters: node id -> module. A node computed from one
    module's parameters alone (``W.t()``, no batch among its inputs) and used by one op stands
    for them: that op uses the module's parameters too."""
    param_only: dict[int, str] = {}
    direct: dict[int, str] = {}
    for node in sorted(nodes, key=lambda n: -1 if n.get("seq") is None else n["seq"]):  # inputs first
        if node["id"] in owner_of_leaf:
            continue
        owners, other = set(), False
        for j in node["inputs"]:
            if j is None:  # an input needing no grad (the batch): not computed from parameters alone
                other = True
            elif j in owner_of_leaf:
                owners.add(owner_of_leaf[j])
            elif j in param_only:
                owners.add(param_only[j])
            else:
                other = True
        if len(owners) != 1 or None in owners or "" in owners:  # none, tied, several, the root's own
            continue
        module = next(iter(owners))
        direct[node["id"]] = module
        if not other and consumers.get(node["id"], 0) == 1:
            param_only[node["id"]] = module
    return direct


def _spans(direct: dict[int, str], by_id: dict[int, dict]) -> dict[str, tuple[int, int]]:
    """Module -> (first, last) sequence number of the ops using parameters of it or of the modules
    below it, for the modules whose spans nest (see ``_nested``)."""
    spans: dict[str, list[int]] = {}
    for node_id, module in direct.items():
        seq = by_id[node_id]["seq"]
        parts = module.split(".")
        for k in range(1, len(parts) + 1):
            span = spans.setdefault(".".join(parts[:k]), [seq, seq])
            span[0], span[1] = min(span[0], seq), max(span[1], seq)
    return _nested({m: (s[0], s[1]) for m, s in spans.items()})


def _nested(spans: dict[str, tuple[int, int]]) -> dict[str, tuple[int, int]]:
    """``spans`` without those that overlap a span that is neither inside nor around them (two
    modules called once each cannot interleave: something ran that the parameters do not tell)."""
    bad: set[str] = set()
    stack: list[str] = []
    for module in sorted(spans, key=lambda m: (spans[m][0], -spans[m][1], m.count("."))):
        first, last = spans[module]
        while stack and spans[stack[-1]][1] < first:
            stack.pop()
        if stack:
            outer = stack[-1]
            if last > spans[outer][1] or not module.startswith(outer + "."):
                bad.update((module, outer))
        stack.append(module)
    return {m: s for m, s in spans.items() if m not in bad}


def _innermost(spans: dict[str, tuple[int, int]], seq: int) -> str | None:
    best = None
    for module, (first, last) in spans.items():
        if first <= seq <= last and (best is None or module.count(".") > best.count(".")):
            best = module
    return best
