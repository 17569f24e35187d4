"""The autograd graph without the identity nodes of module backward hooks (``without_hook_nodes``):
what the TUI's graph view and the HTML report draw. Apart from the TUI's widgets, so the report
does not import textual to draw its graph."""

from __future__ import annotations

from typing import Any

HOOK_OPS = frozenset({"BackwardHookFunctionBackward"})  # identity nodes of module backward hooks


def without_hook_nodes(event: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """``event`` (a ``graph`` event) without its ``HOOK_OPS`` identity nodes, each edge through
    them joined to what they pass on, and how many were taken out. The event itself is not
    changed; one without such nodes is returned as is. A hook node that passes nothing on
    (no inputs) stays when it is an output, as does every node of a graph made only of them."""
    nodes = event.get("nodes") or []
    leaves = _leaf_ids(event)  # (once: per node it was quadratic, a minute on a 10,000-module graph)
    hooks = {n["id"]: n for n in nodes if n.get("op") in HOOK_OPS and n.get("id") not in leaves}
    if not hooks:
        return event, 0
    resolved: dict[Any, list] = {}

    def through(nid: Any) -> list:
        """What ``nid`` stands for once hook nodes are gone (itself, unless it is one)."""
        if nid not in hooks:
            return [nid]
        if nid not in resolved:
            resolved[nid] = []  # (a cycle cannot occur in a backward graph; this guards anyway)
            out: list = []
            for j in hooks[nid]["inputs"]:
                for k in ([None] if j is None else through(j)):
                    if k is None or k not in out:
                        out.append(k)
            resolved[nid] = out
        return resolved[nid]

    keep = set()
    outputs = event.get("outputs")
    new_outputs = None
    if outputs is not None:
        new_outputs = []
        for o in outputs:
            targets = [k for k in through(o["id"]) if k is not None]
            if not targets:
                keep.add(o["id"])
                targets = [o["id"]]
            new_outputs.append(dict(o, id=targets[0]))
    elif nodes and nodes[0]["id"] in hooks:  # an old event: the first node is the output
        targets = [k for k in through(nodes[0]["id"]) if k is not None]
        if not targets:
            keep.add(nodes[0]["id"])
    new_nodes = []
    for n in nodes:
        if n["id"] in hooks and n["id"] not in keep:
            continue
        inputs: list = []
        for j in n["inputs"]:
            for k in ([None] if j is None else (through(j) if j not in keep else [j])):
                if k is None or k not in inputs:
                    inputs.append(k)
        new_nodes.append(dict(n, inputs=inputs) if inputs != n["inputs"] else n)
    if not new_nodes:
        return event, 0
    if outputs is None and nodes[0]["id"] in hooks and nodes[0]["id"] not in keep:
        first = next(k for k in through(nodes[0]["id"]) if k is not None)  # keep it first
        new_nodes.sort(key=lambda n: n["id"] != first)
    ids = {n["id"] for n in new_nodes}
    new = dict(event, nodes=new_nodes)
    if new_outputs is not None:
        new["outputs"] = new_outputs
    if "edges" in event:
        new["edges"] = [[j, n["id"]] for n in new_nodes for j in n["inputs"] if j is not None and j in ids]
    return new, len(nodes) - len(new_nodes)


def _leaf_ids(event: dict[str, Any]) -> set:
    return {leaf["id"] for leaf in event.get("leaves") or ()}
