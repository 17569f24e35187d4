"""Identical sibling blocks registered under names fold as digit-named ``Sequential`` entries do:
by structure, in every diagram that folds (module tree, dataflow, autograd graph). What counts
as a sibling run: a container's children (``Sequential``, ``ModuleList``, ``ModuleDict``) under any
names, and elsewhere children numbered in order under one stem; roles (``q``/``k``, ``fc``/
``down``) never fold. Hand-built models on both backends (torchvision's ViT names its encoder
layers ``encoder_layer_0`` ... ``encoder_layer_11`` inside an ``nn.Sequential(OrderedDict)``)."""

from __future__ import annotations

from collections import OrderedDict

import modscope
from modscope.capture.attribution import attribute_modules
from modscope.capture.diagrams import model_event_fields
from modscope.graph import build_autograd_graph
from modscope.views.diagrams import build_dataflow, build_module_tree_from_event, fit, model_event_in
from modscope.views.diagrams.fold import repeated_runs


def vit_like(lib, layers: int = 12):
    """An embedding, ``layers`` named encoder blocks in a ``Sequential(OrderedDict)`` as
    torchvision's ViT registers them, and a head."""
    nn = lib.nn

    class EncoderBlock(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.ln_1 = nn.LayerNorm(d)
            self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

        def forward(self, x):
            return x + self.mlp(self.ln_1(x))

    class Encoder(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.layers = nn.Sequential(OrderedDict(
                (f"encoder_layer_{i}", EncoderBlock(d)) for i in range(layers)))
            self.ln = nn.LayerNorm(d)

        def forward(self, x):
            return self.ln(self.layers(x))

    class ViT(nn.Module):
        def __init__(self, d=8):
            super().__init__()
            self.embed = nn.Linear(4, d)
            self.encoder = Encoder(d)
            self.heads = nn.Linear(d, 3)

        def forward(self, x):
            return self.heads(self.encoder(self.embed(x)))

    lib.manual_seed(0)
    return ViT()


def labels(model):
    return [r.label() for r in repeated_runs(model_event_fields(model))]


def run_nodes(d):
    return [n.data["run"] for n in d.nodes.values() if "run" in n.data]


RUN = "encoder.layers (encoder_layer_1-11): 11 × EncoderBlock (as encoder.layers.encoder_layer_0)"


def test_named_encoder_layers_are_one_run(lib):
    # (each block's mlp is a Sequential of digit-named entries, no run: Linear, GELU, Linear differ)
    assert labels(vit_like(lib)) == ["encoder.layers (encoder_layer_0-11): 12 × EncoderBlock"]


def test_named_encoder_layers_fold_in_the_module_tree(lib):
    event = model_event_fields(vit_like(lib))
    d = fit(build_module_tree_from_event(event), event, budget=40)
    assert run_nodes(d) == [RUN]
    assert d.notes[1].startswith("folded 1 run of repeated blocks: encoder.layers (encoder_layer_1-11): 11 × ")


def test_named_encoder_layers_fold_in_the_autograd_graph(lib):
    model = vit_like(lib)
    with attribute_modules(model):
        out = model(lib.randn(2, 5, 4))
    raw = build_autograd_graph(out.sum(), model)
    d = fit(raw, model_event_fields(model), budget=100)
    assert run_nodes(d) == [RUN]
    assert len(d.nodes) < len(raw.nodes) and d.notes[0].startswith(f"{len(raw.nodes):,} nodes drawn as ")
    d.check()


def test_named_encoder_layers_fold_in_the_dataflow(lib):
    model = vit_like(lib)
    with modscope.trace(model, graph=False) as tr:
        model(lib.randn(2, 5, 4))
    d = fit(build_dataflow(tr), model_event_in(tr.events), budget=30)
    assert run_nodes(d) == [RUN]


def test_a_module_dict_of_layers_folds_whatever_the_keys(lib):
    nn = lib.nn
    model = nn.Module()
    model.blocks = nn.ModuleDict({k: nn.Sequential(nn.Linear(4, 4), nn.Tanh()) for k in ("first", "mid", "last")})
    assert labels(model) == ["blocks (first-last): 3 × Sequential"]


def test_numbered_attributes_of_a_plain_module_fold_in_order(lib):
    nn = lib.nn
    model = nn.Module()
    for name in ("block1", "block2", "block3", "stem5", "stem7"):  # stem5, stem7: not consecutive
        setattr(model, name, nn.Linear(3, 3))
    assert labels(model) == ["(block1-3): 3 × Linear(3, 3, True)"]


def test_roles_of_a_plain_module_never_fold_even_when_alike(lib):
    nn = lib.nn
    attn = nn.Module()
    attn.q_proj, attn.k_proj, attn.v_proj = nn.Linear(4, 4), nn.Linear(4, 4), nn.Linear(4, 4)
    assert labels(attn) == []


def test_a_container_run_stops_at_a_different_block(lib):
    nn = lib.nn
    model = nn.Sequential(OrderedDict([("a", nn.Tanh()), ("b", nn.Tanh()), ("c", nn.ReLU()), ("d", nn.Tanh())]))
    assert labels(model) == ["(a-b): 2 × Tanh"]


def test_named_blocks_of_other_shapes_do_not_fold(lib):
    nn = lib.nn
    model = nn.ModuleDict({"small": nn.Linear(2, 2), "big": nn.Linear(3, 3)})
    assert labels(model) == []
