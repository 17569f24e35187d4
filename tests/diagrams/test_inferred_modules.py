"""``autograd_graph(loss, model)`` after a plain forward (no ``attribute_modules``, no trace):
module clusters inferred from the parameters each op uses and the creation order
(``views.diagrams.inferred_modules``), ``depth`` honoured, the note saying it was inferred; never a
wrong module (each inferred module is the exact one, as ``attribute_modules`` labels it, or a
module around it), on both backends; and where nothing can be inferred, the drawing and a warning
say why and what to call instead. Also: a diagram over its budget that nothing folds says so, never
"N nodes drawn as N"."""

from __future__ import annotations

import warnings

import pytest

from modscope import graph
from modscope.capture.attribution import attribute_modules
from modscope.capture.diagrams import autograd_event_fields, model_event_fields
from modscope.views.diagrams import fit
from modscope.views.diagrams.inferred_modules import NOTES, infer_modules

from .helpers import laid_out


def zoo(lib):
    """Models that test the inference's limits: a residual block stack, a reused activation,
    a reused block, tied weights (registered, and by reference in forward)."""
    nn = lib.nn

    class Block(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.ln = nn.LayerNorm(d)
            self.fc1, self.fc2 = nn.Linear(d, 2 * d), nn.Linear(2 * d, d)

        def forward(self, x):
            return x + self.fc2(lib.relu(self.fc1(self.ln(x))))

    class Stack(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Linear(4, 8)
            self.layers = nn.Sequential(*[Block(8) for _ in range(3)])
            self.head = nn.Linear(8, 2)

        def forward(self, x):
            return self.head(self.layers(self.emb(x)))

    class Reused(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.out = nn.Linear(4, 4), nn.Linear(4, 4)
            self.blk = nn.Sequential(nn.Linear(4, 4), nn.Tanh())

        def forward(self, x):
            return self.out(self.blk(self.a(self.blk(x))))

    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(10, 8)
            self.h = nn.Sequential(Block(8), Block(8))
            self.lm_head = nn.Linear(8, 10, bias=False)
            self.lm_head.weight = self.wte.weight

        def forward(self, i):
            return self.lm_head(self.h(self.wte(i)))

    class TiedByReference(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(10, 8)
            self.h = nn.Sequential(Block(8), Block(8))

        def forward(self, i):
            return self.h(self.wte(i)) @ self.wte.weight.t()

    lib.manual_seed(0)
    tokens = lib.randint(0, 10, (2, 5))
    return [("stack", Stack(), lib.randn(2, 5, 4)), ("reused", Reused(), lib.randn(2, 4)),
            ("tied", Tied(), tokens), ("tied by reference", TiedByReference(), tokens)]


@pytest.mark.parametrize("which", range(4))
def test_an_inferred_module_is_the_exact_one_or_one_around_it(lib, which):
    name, model, x = zoo(lib)[which]
    with attribute_modules(model):
        loss = model(x).sum()
    event, model_event = autograd_event_fields(loss, model)
    exact = {n["id"]: n["module"] for n in event["nodes"]}
    for n in event["nodes"]:
        n["module"] = None
    tied = {p["path"] for p in model_event["params"]}
    found = infer_modules(event, tied)
    assert found, name
    wrong = {i: (m, exact[i]) for i, m in found.items()
             if exact[i] is None or not (exact[i] == m or exact[i].startswith(m + "."))}
    assert wrong == {}, name


def test_the_stack_is_mostly_placed(lib):
    _, model, x = zoo(lib)[0]
    loss = model(x).sum()
    event, _ = autograd_event_fields(loss, model)
    found = infer_modules(event)
    ops = [n for n in event["nodes"] if n["seq"] is not None]
    # all but the final sum and the ops between blocks (the trailing view and residual add)
    # belong to a module; every block's LayerNorm and Linears exactly
    assert len(found) >= 0.8 * len(ops)
    assert {m for m in found.values()} >= {f"layers.{i}.{c}" for i in range(3) for c in ("ln", "fc1", "fc2")}


def test_tied_and_reused_parameters_name_no_module(lib):
    _, model, tokens = zoo(lib)[2]
    event, model_event = autograd_event_fields(model(tokens).sum(), model)
    assert model_event["params"] == [{"path": "wte.weight", "aliases": ["lm_head.weight"]}]
    found = infer_modules(event, {"wte.weight"})
    assert "wte" not in found.values() and "lm_head" not in found.values()
    _, model, x = zoo(lib)[1]
    event, _ = autograd_event_fields(model(x).sum(), model)
    assert set(infer_modules(event).values()) == {"a", "out"}  # blk ran twice: its weight used by two ops


def test_autograd_graph_after_a_plain_forward_clusters_and_honours_depth(lib):
    _, model, x = zoo(lib)[0]
    loss = model(x).sum()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # inferred: no warning
        d = graph.build_autograd_graph(loss, model, depth=2)
        source = graph.autograd_graph(loss, model, depth=2).source
    collapsed = sorted(n.data["module"] for n in d.nodes.values() if n.kind == "collapsed")
    assert collapsed == ["layers.0", "layers.1", "layers.2"]
    assert {c.data["module"] for c in d.clusters.values()} == {"emb", "layers", "head"}
    assert d.notes == NOTES and NOTES[0] in source
    layout = laid_out(graph.build_autograd_graph(loss, model))
    assert {"layers.0 (Block)", "layers.0.fc1 (Linear)", "layers.0.ln (LayerNorm)"} <= set(layout.clusters)


def test_a_recorded_forward_draws_no_inference_note(lib):
    _, model, x = zoo(lib)[0]
    with attribute_modules(model):
        loss = model(x).sum()
    assert graph.build_autograd_graph(loss, model).notes == []


def test_a_graph_using_none_of_the_models_parameters_says_so(lib):
    _, model, _ = zoo(lib)[0]
    x = lib.randn(3, requires_grad=True)
    with pytest.warns(UserWarning, match="no op uses a parameter of the model.*depth=2 has nothing to collapse"):
        d = graph.build_autograd_graph((x * 2).sum(), model, depth=2)
    assert d.clusters == {} and d.notes[1].startswith("to cluster: run the forward under")


def test_a_diagram_nothing_folds_says_it_is_drawn_in_full(lib):
    _, model, x = zoo(lib)[0]
    loss = model(x).sum()
    with pytest.warns(UserWarning, match="no module clusters"):
        source = graph.autograd_graph(loss, depth=1, budget=20).source  # no model: no modules, no blocks
    assert "drawn as" not in source
    assert "nodes drawn in full, over the budget of 20: its nodes belong to no module" in source


def test_an_inferred_graph_over_the_budget_folds_its_blocks_and_keeps_its_note(lib):
    _, model, x = zoo(lib)[0]
    loss = model(x).sum()
    full = graph.build_autograd_graph(loss, model)
    d = graph.autograd_graph(loss, model, budget=40)
    assert "layers (1-2): 2 × Block (as layers.0)" in d.source
    assert NOTES[0] in d.source and f"{len(full.nodes)} nodes drawn as " in d.source


def test_the_parents_ops_between_folded_blocks_fold_with_them(lib):
    # inferred: the view and residual add after each block sit in ``layers`` (between two spans)
    _, model, x = zoo(lib)[0]
    loss = model(x).sum()
    d = graph.build_autograd_graph(loss, model)
    folded = fit(d, model_event_fields(model), budget=40)
    in_layers = sorted(n.lines[0] for n in folded.nodes.values() if n.cluster == "layers" and n.kind == "op")
    assert in_layers == ["AddBackward0", "ViewBackward0"]  # after block 0, before the run: not between blocks
    (run,) = [n for n in folded.nodes.values() if "run" in n.data]
    outs = [e for e in folded.edges if e.source == run.id]
    # out of the run: the last block's output (to its trailing view) and the residual stream
    assert len(outs) == 2


def test_a_parents_own_residual_adds_between_blocks_fold_with_them(lib):
    nn = lib.nn

    class Loop(nn.Module):  # the parent adds the residual itself, between its blocks' calls
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList([nn.Linear(4, 4) for _ in range(6)])

        def forward(self, x):
            for blk in self.blocks:
                x = x + lib.tanh(blk(x))
            return x

    model = Loop()
    with attribute_modules(model):
        loss = model(lib.randn(2, 4)).sum()
    folded = fit(graph.build_autograd_graph(loss, model), model_event_fields(model), budget=12)
    (run,) = [n for n in folded.nodes.values() if "run" in n.data]
    assert run.data["run"] == "blocks (1-5): 5 × Linear(4, 4, True) (as blocks.0)"
    own = sorted(n.lines[0] for n in folded.nodes.values() if n.kind == "op" and n.data.get("module") == "")
    # block 0's tanh and add, then the run, then the last block's tanh and add: 4 of the root's 12
    assert own == ["AddBackward0", "AddBackward0", "TanhBackward0", "TanhBackward0"]
