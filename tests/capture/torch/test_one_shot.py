"""What the one-shot torch trace does in fewer steps, checked against the long way round:

- the backward observer's tensor hooks (``capture.torch.add_hook``) are what ``register_hook``
  makes, without a handle, and fall back to ``register_hook`` wherever that one would do more;
- the module labels of a trace's ``graph`` event, set by the observer's walk (inner calls) and by
  the graph's own walk (the top-level call), are exactly ``attribute_modules``' (one ``label_call``
  walk per call), also where the trace falls back to ``label_call`` (a tuple output holding a
  list, a top-level call returning several tensors), and the graph's labelling alone
  (``graph_event_fields(..., label=)``) is ``label_call``'s."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from torch.utils.hooks import RemovableHandle  # noqa: E402

import modscope  # noqa: E402
import modscope.capture.torch as capture_torch  # noqa: E402
from modscope.capture.attribution import CALL_KEY, MODULE_KEY, attribute_modules, label_call, walk  # noqa: E402
from modscope.capture.graph_event import model_tensors  # noqa: E402
from modscope.capture.torch.graph import graph_event_fields  # noqa: E402

nn = torch.nn
add_hook = capture_torch.add_hook


# --- add_hook ----------------------------------------------------------------------------------------

def test_add_hook_hooks_a_tensor_made_by_an_op_without_a_handle():
    x = torch.randn(3, requires_grad=True)
    y = x * 2
    seen, before = [], RemovableHandle.next_id
    assert add_hook(y, lambda g: seen.append(g.clone())) == 0
    assert RemovableHandle.next_id == before  # no handle: the tracer's hook clock does not move
    assert all(key < 0 for key in y._backward_hooks)  # below every handle id: no clash with the user's
    y.sum().backward()
    assert len(seen) == 1 and torch.equal(seen[0], torch.ones(3))
    assert torch.equal(x.grad, torch.full((3,), 2.0))


def test_add_hook_runs_after_a_hook_registered_before_it_and_sees_what_that_one_returned():
    """Appended to the tensor's own hook dict, as ``register_hook`` appends."""
    x = torch.randn(3, requires_grad=True)
    y = x * 2
    order = []
    y.register_hook(lambda g: order.append("user") or g * 10)
    add_hook(y, lambda g: order.append(("ours", g.sum().item())))
    y.sum().backward()
    assert order == ["user", ("ours", 30.0)]


def test_add_hook_hooks_the_value_the_op_made_even_after_an_in_place_update():
    x = torch.randn(3, requires_grad=True)
    y = x * 2
    seen = []
    add_hook(y, lambda g: seen.append(g.clone()))
    y.mul_(3)  # a new value (new grad_fn): the hook stays with the old one, as register_hook's would
    y.sum().backward()
    assert len(seen) == 1 and torch.equal(seen[0], torch.full((3,), 3.0))


class Tagged(torch.Tensor):
    """A tensor subclass: ``register_hook`` goes through its ``__torch_function__``."""


@pytest.mark.parametrize("kind", ["leaf", "subclass"])
def test_add_hook_falls_back_to_register_hook_for_leaves_and_subclasses(kind):
    x = torch.randn(3, requires_grad=True)
    t = x if kind == "leaf" else (x * 1).as_subclass(Tagged)
    seen, before = [], RemovableHandle.next_id
    assert add_hook(t, lambda g: seen.append(g)) == 1
    assert RemovableHandle.next_id == before + 1  # register_hook's handle, counted by the observer
    (t * 2).sum().backward()
    assert len(seen) == 1


# --- labels ------------------------------------------------------------------------------------------

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(4, 4), nn.Linear(4, 4)

    def forward(self, x):
        return self.b(self.a(x).relu()) + x


class ListInTuple(nn.Module):
    """Returns ``(tensor, [tensor, tensor])``: the observer sees two outputs, ``label_call`` three
    tensors, so the trace labels this call with ``label_call``."""

    def __init__(self):
        super().__init__()
        self.p, self.q = nn.Linear(4, 4), nn.Linear(4, 4)

    def forward(self, x):
        h = self.p(x)
        return h.tanh(), [self.q(h) * 2, h.sigmoid()]


class Nested(nn.Module):
    def __init__(self):
        super().__init__()
        self.blk, self.split, self.head = Block(), ListInTuple(), nn.Linear(4, 2)

    def forward(self, x):
        first, (second, third) = self.split(self.blk(self.blk(x)))
        return self.head(first + second * third).log_softmax(-1)


class TwoOutputs(Nested):
    """A top-level call returning two tensors: labelled by the observer's walk, not the graph's."""

    def forward(self, x):
        out = super().forward(x)
        return out, (out * 3).exp()


MODELS = {"tensor output": Nested, "two outputs": TwoOutputs}


def _labels(fields):
    return [(n["op"], n["module"], n["call"]) for n in fields["nodes"]]


def _traced_graph(model, x):
    with modscope.trace(model) as tr:
        model(x)
    return next(e for e in tr.events if e["kind"] == "graph")


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("history", [False, True], ids=["fresh input", "input with history"])
def test_a_traces_graph_event_labels_what_attribute_modules_labels(name, history):
    torch.manual_seed(0)
    model = MODELS[name]()
    params = dict(model.named_parameters())
    x = torch.randn(3, 4, requires_grad=history)

    def batch():
        return (x * 2).sin() if history else x  # history: nodes made before the model's call

    graph = _traced_graph(model, batch())
    with attribute_modules(model):
        out = model(batch())
    out = out if isinstance(out, torch.Tensor) else out[0]  # the trace's graph: the first output's
    expected = _labels(graph_event_fields(out, params))
    assert _labels(graph) == expected
    assert {m for _, m, _ in expected} >= {"", "blk.a", "blk.b", "blk", "split.p", "split.q", "split", "head"}
    assert ("AddmmBackward0", "blk.a", 1) in expected  # the second call of a reused module
    if history:  # made before the call: no module
        assert ("SinBackward0", None, None) in expected


def test_graph_event_fields_labels_the_calls_nodes_as_label_call_does():
    """Two forwards of one model: one graph labelled by ``label_call``, the other by the graph's
    own walk; nodes made before the call (the input's history) and leaves stay unlabelled."""
    torch.manual_seed(0)
    model, x = Nested(), torch.randn(3, 4, requires_grad=True)
    graphs = []
    for how in ("label_call", "graph"):
        h = (x * 2).sin()
        start = torch._C._autograd._get_sequence_nr()
        out = model(h)
        if how == "label_call":
            label_call("root", start, out, 7)
            fields = graph_event_fields(out, {})
        else:
            fields = graph_event_fields(out, {}, label=("root", 7, start))
        graphs.append(fields)
        assert all(MODULE_KEY not in n.metadata for n in walk(h.grad_fn))  # the input's history
    assert _labels(graphs[0]) == _labels(graphs[1])
    labelled = [n for n in graphs[1]["nodes"] if n["module"] == "root"]
    assert len(labelled) == sum(1 for n in graphs[1]["nodes"] if n["seq"] is not None) - 2  # sin, mul
    assert all(n["call"] == 7 for n in labelled)
    assert CALL_KEY == "module_call"


def test_a_label_already_set_by_an_inner_call_is_kept():
    torch.manual_seed(0)
    model, x = Nested(), torch.randn(3, 4)
    start = torch._C._autograd._get_sequence_nr()
    out = model(x)
    inner = out.grad_fn.next_functions[0][0]  # the head's addmm
    inner.metadata[MODULE_KEY], inner.metadata[CALL_KEY] = "head", 0
    fields = graph_event_fields(out, {}, label=("", 0, start))
    assert fields["nodes"][1]["op"] == "AddmmBackward0" and fields["nodes"][1]["module"] == "head"
    assert fields["nodes"][0]["module"] == ""


# --- model event ---------------------------------------------------------------------------------------

def test_model_tensors_count_elements_from_shapes_also_for_scalars_and_empty_tensors():
    model = nn.Module()
    model.scale = nn.Parameter(torch.tensor(2.0))
    model.register_buffer("none_yet", torch.zeros(0, 3))
    params, buffers = model_tensors([("", model)])
    assert [(p["shape"], p["numel"]) for p in params] == [([], 1)]
    assert [(b["shape"], b["numel"]) for b in buffers] == [([0, 3], 0)]
