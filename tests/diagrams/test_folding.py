"""Folding big diagrams (``modscope.views.diagrams.fold``): what folds (repeated sibling blocks,
as torch's repr folds them), what does not (a run broken by another block, a shared module, a
block with other parameter shapes), wide fan-outs, the depth collapse, the budget, the note at
the top, and ``fold=False`` / ``--no-fold`` / ``--depth`` / ``--budget``. Models are built
with ``lib`` (engine and torch); small budgets stand in for big models (timings: the bench)."""

from __future__ import annotations

import json

import pytest

import modscope
from modscope import graph
from modscope.capture.attribution import attribute_modules
from modscope.capture.diagrams import model_event_fields
from modscope.cli import main
from modscope.cli.export import ExportError, export
from modscope.graph import build_autograd_graph
from modscope.views.diagrams import BUDGET, build_dataflow, build_module_tree_from_event, fit, model_event_in
from modscope.views.diagrams.fold import (
    FANOUT_KEEP,
    HOW_TO_EXPAND,
    collapse_to_depth,
    find_periodic,
    group_fanouts,
    module_signatures,
    repeated_runs,
)

PATTERN = "[Linear(8, 8, True) → ReLU → LayerNorm → Identity]"


def wide(lib, blocks: int = 30):
    """The issue's model, smaller: ``blocks`` x [Linear(8, 8), ReLU, LayerNorm(8), Identity]."""
    layers = []
    for _ in range(blocks):
        layers += [lib.nn.Linear(8, 8), lib.nn.ReLU(), lib.nn.LayerNorm(8), lib.nn.Identity()]
    return lib.nn.Sequential(*layers)


def tree(model, **kw):
    event = model_event_fields(model)
    return fit(build_module_tree_from_event(event), event, **kw)


def autograd(lib, model, shape=(2, 8), **kw):
    with attribute_modules(model):
        out = model(lib.randn(*shape))
    return fit(build_autograd_graph(out.sum(), model), model_event_fields(model), **kw)


def run_nodes(d):
    return [n for n in d.nodes.values() if "run" in n.data]


# --- what folds ---------------------------------------------------------------------------------

def test_the_wide_model_folds_into_its_first_block_and_one_run(lib):
    d = tree(wide(lib), budget=50)  # 121 modules
    (run,) = run_nodes(d)
    assert run.data["run"] == f"(4-119): 29 × {PATTERN} (as 0-3)"
    assert run.data["count"] == 29 and run.data["period"] == 4 and len(run.data["members"]) == 116
    assert run.lines[-1] == "116 modules folded"
    # the root, the first block's 4 modules, the run
    assert sorted(n.data.get("path", "run") for n in d.nodes.values()) == ["", "0", "1", "2", "3", "run"]
    assert {(d.nodes[e.source].data.get("path"), e.target) for e in d.edges} >= {("", run.id)}


def test_whole_runs_fold_when_the_first_block_does_not_fit(lib):
    d = tree(wide(lib), budget=3)
    (run,) = run_nodes(d)
    assert run.data["run"] == f"(0-119): 30 × {PATTERN}" and len(d.nodes) == 2


def test_autograd_run_has_edges_into_its_first_block_and_out_of_its_last(lib):
    model = wide(lib, 20)
    d = autograd(lib, model, budget=60)
    (run,) = run_nodes(d)
    ins = [e for e in d.edges if e.target == run.id]
    outs = [e for e in d.edges if e.source == run.id]
    assert len(ins) == 1 and d.nodes[ins[0].source].data["module"] == "2"  # block 0's LayerNorm
    assert len(outs) == 1 and d.nodes[outs[0].target].kind == "op"  # the final sum
    folded = set(run.data["members"])
    assert not any(n.data.get("module") in folded for n in d.nodes.values() if n is not run)
    assert not any(c.data.get("module") in folded for c in d.clusters.values())
    d.check()
    # 19 blocks of 8 nodes: Linear's weight, bias, t, addmm; relu; LayerNorm's weight, bias, op
    assert run.lines[-1] == "152 nodes folded" and run.data["folded"] == 152


def test_dataflow_of_a_trace_folds_by_its_model_event(lib):
    model = wide(lib, 20)
    with modscope.trace(model, graph=False) as tr:
        model(lib.randn(2, 8))
    raw = build_dataflow(tr)
    d = fit(raw, model_event_in(tr.events), budget=30)
    (run,) = run_nodes(d)
    assert run.data["run"] == f"(4-79): 19 × {PATTERN} (as 0-3)"
    assert len(d.nodes) == 1 + 4 + 1 + 1  # input, block 0, the run, output
    assert [d.nodes[e.source].kind for e in d.edges if e.target == run.id] == ["call"]


def test_nested_runs_fold_inside_the_first_repeat(lib):
    nn = lib.nn

    def stage():
        return nn.Sequential(*[nn.Sequential(nn.Linear(4, 4), nn.Tanh()) for _ in range(3)])

    d = tree(nn.Sequential(*[stage() for _ in range(5)]), budget=12)
    assert sorted(n.data["run"] for n in run_nodes(d)) == [
        "(1-4): 4 × Sequential (as 0)", "0 (1-2): 2 × Sequential (as 0.0)"]


def test_runs_of_a_resnet_stage_skip_the_block_with_a_downsample(lib):
    nn = lib.nn

    class Block(nn.Module):
        def __init__(self, cin, cout):
            super().__init__()
            self.fc = nn.Linear(cin, cout)
            self.down = nn.Linear(cin, cout) if cin != cout else None

    model = nn.Sequential()
    model.add_module("layer1", nn.Sequential(Block(4, 8), Block(8, 8), Block(8, 8)))
    runs = repeated_runs(model_event_fields(model))
    assert [(r.parent, r.members, r.label()) for r in runs] == [
        ("layer1", ("layer1.1", "layer1.2"), "layer1 (1-2): 2 × Block")]


# --- what does not fold -------------------------------------------------------------------------

def test_a_run_broken_by_a_different_block_is_two_runs(lib):
    nn = lib.nn
    model = nn.Sequential(nn.Tanh(), nn.Tanh(), nn.Tanh(), nn.ReLU(), nn.Tanh(), nn.Tanh())
    assert [r.label() for r in repeated_runs(model_event_fields(model))] == ["(0-2): 3 × Tanh", "(4-5): 2 × Tanh"]


def test_a_shared_module_never_folds_nor_does_its_parent(lib):
    nn = lib.nn
    act = nn.Tanh()
    shared = nn.Sequential(act, act, act)  # one module under three names
    event = model_event_fields(shared)
    assert repeated_runs(event) == [] and module_signatures(event)["0"] is None
    lin = nn.Linear(2, 2)
    outer = nn.Sequential(nn.Sequential(lin), nn.Sequential(lin), nn.Sequential(nn.Linear(2, 2)))
    assert repeated_runs(model_event_fields(outer)) == []


def test_a_tied_parameter_blocks_folding(lib):
    nn = lib.nn
    a, b = nn.Linear(3, 3), nn.Linear(3, 3)
    b.weight = a.weight
    event = model_event_fields(nn.Sequential(a, b, nn.Linear(3, 3)))
    assert module_signatures(event)["0"] is None and repeated_runs(event) == []


def test_blocks_with_other_parameter_shapes_do_not_fold(lib):
    nn = lib.nn

    class Scale(nn.Module):  # no extra_repr: only the parameter's shape tells them apart
        def __init__(self, n):
            super().__init__()
            self.w = nn.Parameter(lib.ones(n))

    assert repeated_runs(model_event_fields(nn.Sequential(Scale(3), Scale(4), Scale(3)))) == []
    assert [r.label() for r in repeated_runs(model_event_fields(nn.Sequential(Scale(3), Scale(3))))] == \
        ["(0-1): 2 × Scale"]


def test_a_model_event_without_children_folds_nothing():
    event = {"model": "M", "modules": [{"path": "", "cls": "M"}, {"path": "0", "cls": "A"}, {"path": "1", "cls": "A"}]}
    assert repeated_runs(event) == []


def test_find_periodic_prefers_the_longest_cover_then_the_shortest_pattern():
    assert find_periodic(list("abcdefgh"), [1, 2, 1, 2, 1, 2, 3, 3]) == [(0, 2, 3), (6, 1, 2)]
    assert find_periodic(list("abcd"), [1, 1, 1, 1]) == [(0, 1, 4)]
    assert find_periodic(list("abc"), [1, None, None]) == []
    assert find_periodic(list("abcd"), [1, 2, 3, 4]) == []


# --- small models unchanged, the budget, the note -----------------------------------------------

def test_a_diagram_within_the_budget_is_drawn_unchanged(lib):
    model = wide(lib, 3)  # 13 modules, repeated blocks: still drawn whole
    event = model_event_fields(model)
    raw = build_module_tree_from_event(event)
    assert fit(raw, event) is raw and raw.notes == [] and BUDGET == 400
    assert "labelloc" not in raw.to_digraph().source


def test_the_note_says_what_was_folded_and_how_to_expand(lib):
    d = tree(wide(lib), budget=50)
    assert d.notes[0] == "121 nodes drawn as 6 to stay readable (budget 50)"
    assert d.notes[1] == f"folded 1 run of repeated blocks: (4-119): 29 × {PATTERN} (as 0-3)"
    assert d.notes[-1] == HOW_TO_EXPAND and "--depth N" in HOW_TO_EXPAND and "--no-fold" in HOW_TO_EXPAND
    source = d.to_digraph().source
    assert 'label="121 nodes drawn as 6 to stay readable (budget 50)\\lfolded 1 run' in source
    assert source.rstrip().endswith("labelloc=t labeljust=l fontsize=10\n}")
    assert 'fold_note["121 nodes drawn as 6' in d.to_mermaid()
    assert d.to_node_link()["graph"]["notes"] == d.notes


def test_fold_false_draws_everything(lib):
    model = wide(lib)
    event = model_event_fields(model)
    raw = build_module_tree_from_event(event)
    assert fit(raw, event, fold=False, budget=5) is raw and len(raw.nodes) == 121


def test_bad_budgets_are_refused(lib):
    raw = build_module_tree_from_event(model_event_fields(wide(lib, 2)))
    for bad in (0, -3, 2.5, True, "400"):
        with pytest.raises(ValueError, match="budget must be an integer >= 1"):
            fit(raw, None, budget=bad)
    with pytest.raises(ValueError, match="budget must be an integer >= 1"):
        graph.module_tree(wide(lib, 2), budget=0)


def test_public_functions_fold_by_default_and_not_with_fold_false(lib):
    model = wide(lib)
    assert "(4-119): 29 ×" in graph.module_tree(model, budget=50).source
    assert "folded" not in graph.module_tree(model, budget=50, fold=False).source
    with attribute_modules(model):
        out = model(lib.randn(2, 8))
    assert "(4-119): 29 ×" in graph.autograd_graph(out.sum(), model, budget=60).source
    assert "folded" not in graph.autograd_graph(out.sum(), model, budget=60, fold=False).source
    with modscope.trace(model, graph=False) as tr:
        model(lib.randn(2, 8))
    assert "(4-119): 29 ×" in graph.dataflow(tr, budget=30).source


# --- fan-outs and depth -------------------------------------------------------------------------

def test_a_wide_fan_out_is_grouped_into_a_more_node(lib):
    nn = lib.nn
    model = nn.Sequential(*[nn.Linear(1, k + 1) for k in range(40)])  # 40 different children
    d = tree(model, budget=20)
    (more,) = [n for n in d.nodes.values() if "fanout_of" in n.data]
    assert more.lines == ["+32 more", "32 modules folded"] and len(d.nodes) == 1 + FANOUT_KEEP + 1
    assert [n.data["path"] for n in d.nodes.values() if n.kind == "module"][1:] == [str(k) for k in range(8)]
    assert d.notes[1] == "grouped 1 wide fan-out (+N more)"


def test_no_fan_out_no_grouping(lib):
    raw = build_module_tree_from_event(model_event_fields(wide(lib, 2)))
    assert group_fanouts(raw) == (raw, 0)


def test_over_budget_without_repeats_collapses_to_the_deepest_depth_that_fits(lib):
    nn = lib.nn
    model = nn.Sequential(*[nn.Sequential(nn.Linear(k + 1, 2), nn.Sequential(nn.Tanh(), nn.Linear(2, k + 1)))
                            for k in range(6)])  # 6 different blocks, 31 modules
    d = tree(model, budget=20)  # depth 2 has 19 nodes
    assert d.notes[1] == "collapsed to depth 2 (modules deeper than that drawn as one node)"
    assert len(d.nodes) == 1 + 6 + 12 and max(n.data["depth"] for n in d.nodes.values()) == 2
    kept = [n for n in d.nodes.values() if n.data["path"] == "0.1"]
    assert kept[0].lines[-1] == "3 modules folded"  # 0.1 and its two children
    assert len(tree(model, budget=18).nodes) == 7 and tree(model, budget=18).notes[1].startswith("collapsed to depth 1")


def test_collapse_to_depth_of_the_autograd_graph(lib):
    nn = lib.nn
    model = nn.Sequential(nn.Sequential(nn.Linear(8, 8), nn.Tanh()), nn.Sequential(nn.Linear(8, 4), nn.ReLU()))
    with attribute_modules(model):
        out = model(lib.randn(2, 8))
    raw = build_autograd_graph(out.sum(), model)
    d = collapse_to_depth(raw, 1, {"0": "Sequential", "1": "Sequential"})
    blocks = [n for n in d.nodes.values() if n.kind == "collapsed"]
    assert [(n.lines[0], n.data["module"]) for n in blocks] == [("0", "0"), ("1", "1")]
    assert d.clusters == {} and len(d.nodes) == 4  # two blocks, the sum, the output
    d.check()


def test_user_depth_is_kept_and_folding_still_applies(lib):
    model = wide(lib)
    event = model_event_fields(model)
    d = fit(build_module_tree_from_event(event, depth=1), event, budget=50, depth=1)
    assert len(run_nodes(d)) == 1


# --- the CLI ------------------------------------------------------------------------------------

@pytest.fixture
def wide_file(tmp_path, lib):
    path = tmp_path / "wide_model.py"
    path.write_text(f"import {lib.__name__} as torch\n\n\ndef wide():\n    layers = []\n"
                    "    for _ in range(120):\n"
                    "        layers += [torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.LayerNorm(8), "
                    "torch.nn.Identity()]\n"
                    "    return torch.nn.Sequential(*layers)\n")
    return path


@pytest.mark.parametrize("what", ["tree", "autograd", "dataflow"])
def test_export_folds_by_default_and_no_fold_draws_all(wide_file, tmp_path, what):
    out = tmp_path / "d.json"
    assert main(["export", f"{wide_file}:wide", "--what", what, "--input", "2,8", "-o", str(out)]) == 0
    data = json.loads(out.read_text())
    assert any("(4-479): 119 ×" in n for n in data["graph"]["notes"])
    assert main(["export", f"{wide_file}:wide", "--what", what, "--input", "2,8", "--no-fold", "-o", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["graph"]["notes"] == [] and len(data["nodes"]) > BUDGET


def test_export_budget_and_depth(wide_file, tmp_path):
    out = tmp_path / "d.dot"
    assert main(["export", f"{wide_file}:wide", "--budget", "3", "-o", str(out)]) == 0
    assert "(0-479): 120 ×" in out.read_text()
    assert main(["export", f"{wide_file}:wide", "--depth", "0", "-o", str(out)]) == 0
    assert "folded" not in out.read_text()  # one node: within the budget


def test_export_refuses_a_bad_budget(wide_file, tmp_path, capsys):
    with pytest.raises(ExportError, match=r"--budget: budget must be an integer >= 1 \(nodes\), got 0"):
        export(f"{wide_file}:wide", "tree", tmp_path / "d.dot", budget=0)
    with pytest.raises(SystemExit):
        main(["export", f"{wide_file}:wide", "--budget", "0", "-o", str(tmp_path / "d.dot")])
    assert "expected an integer >= 1" in capsys.readouterr().err
