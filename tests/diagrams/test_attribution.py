"""``attribute_modules`` / ``label_call``: each autograd node is labelled with the innermost
module whose call created it; reused modules, raising forwards and hook removal. On engine models
and on torch models (``lib``, ``net``, ``res``: see ``conftest.py``)."""

from __future__ import annotations

import pytest

import engine
from modscope.capture.attribution import MODULE_KEY
from modscope.capture.backends import load
from modscope.capture.values import tensors_in
from modscope.graph import attribute_modules, label_call

from .helpers import models


def _modules_by_op(root):
    """[(op name, module label)] for every op node behind ``root``, creation order."""
    seen, stack, out = set(), [root.grad_fn], []
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen or type(node).__name__ == "AccumulateGrad":
            continue
        seen.add(id(node))
        out.append((node._sequence_nr(), node.name(), node.metadata.get("module")))
        stack.extend(n for n, _ in node.next_functions)
    return [(name, module) for _, name, module in sorted(out)]


def test_innermost_module_wins(lib, net):
    with attribute_modules(net):
        out = net(lib.randn(2, 8))
    loss = out.sum()
    assert _modules_by_op(loss) == [
        ("TBackward0", "inp"), ("AddmmBackward0", "inp"),
        ("TBackward0", "blocks.0.fc1"), ("AddmmBackward0", "blocks.0.fc1"), ("ReluBackward0", "blocks.0"),
        ("TBackward0", "blocks.0.fc2"), ("AddmmBackward0", "blocks.0.fc2"),
        ("AddBackward0", "blocks.0"), ("ReluBackward0", "blocks.0"),
        ("TBackward0", "blocks.1.fc1"), ("AddmmBackward0", "blocks.1.fc1"), ("ReluBackward0", "blocks.1"),
        ("TBackward0", "blocks.1.fc2"), ("AddmmBackward0", "blocks.1.fc2"),
        ("AddBackward0", "blocks.1"), ("ReluBackward0", "blocks.1"),
        ("TBackward0", "head"), ("AddmmBackward0", "head"),
        ("SumBackward0", None),  # made after the model returned
    ]


def test_reused_module_labels_every_call(lib, res):
    with attribute_modules(res):
        out = res(lib.randn(3, 4))
    labels = _modules_by_op(out)
    assert [m for name, m in labels if name == "ReluBackward0"] == ["act", "act"]
    assert ("AddBackward0", "merge") in labels
    relus = [n for n in _nodes(out) if n.name() == "ReluBackward0"]
    assert sorted(n.metadata["module_call"] for n in relus) == [0, 1]


def _nodes(root):
    seen, stack = set(), [root.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        yield node
        stack.extend(n for n, _ in node.next_functions)


def test_nodes_made_by_the_root_forward_belong_to_the_root(lib):
    class Root(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = lib.nn.Linear(3, 3)

        def forward(self, x):
            return self.fc(x).exp() * 2

    model = Root()
    with attribute_modules(model):
        out = model(lib.randn(2, 3))
    assert _modules_by_op(out)[-2:] == [("ExpBackward0", ""), ("MulBackward0", "")]


def test_nodes_older_than_the_call_keep_no_label(lib, net):
    x = lib.randn(2, 8, requires_grad=True)
    pre = (x * 3).tanh()  # two nodes made before the model runs
    with attribute_modules(net):
        out = net(pre)
    assert _modules_by_op(out)[:3] == [("MulBackward0", None), ("TanhBackward0", None), ("TBackward0", "inp")]


def test_nodes_older_than_the_call_are_never_visited():
    # engine only: its nodes create their metadata on first visit (``_metadata``); torch's cannot tell
    engine.manual_seed(0)
    net = models.Net()
    x = engine.randn(2, 8, requires_grad=True)
    pre = (x * 3).tanh()
    with attribute_modules(net):
        net(pre)
    older = [pre.grad_fn, pre.grad_fn.next_functions[0][0]]
    assert all(node._metadata is None for node in older)


def test_hooks_are_removed_on_exit_and_when_the_block_raises(lib, net):
    before = [(len(m._forward_pre_hooks), len(m._forward_hooks)) for m in net.modules()]
    with attribute_modules(net):
        assert all(len(m._forward_pre_hooks) == 1 for m in net.modules())
    assert [(len(m._forward_pre_hooks), len(m._forward_hooks)) for m in net.modules()] == before
    with pytest.raises(KeyError), attribute_modules(net):
        raise KeyError("user code failed")
    assert [(len(m._forward_pre_hooks), len(m._forward_hooks)) for m in net.modules()] == before
    net(lib.randn(2, 8))  # and the model runs without them


def test_a_forward_that_raises_leaves_no_stale_call_behind(lib):
    class Flaky(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = lib.nn.Linear(2, 2)
            self.fail = True

        def forward(self, x):
            y = self.fc(x)
            if self.fail:
                raise RuntimeError("first call fails")
            return y.exp()

    model = Flaky()
    with attribute_modules(model):
        with pytest.raises(RuntimeError, match="first call fails"):
            model(lib.randn(1, 2))
        model.fail = False
        out = model(lib.randn(1, 2))
    assert _modules_by_op(out) == [("TBackward0", "fc"), ("AddmmBackward0", "fc"), ("ExpBackward0", "")]


def test_label_call_labels_nested_outputs_and_counts(lib):
    x = lib.randn(2, 3, requires_grad=True)
    a = x.exp()
    start = load(lib.__name__).current_sequence_nr()
    b, c = a * 2, a.sin()
    d = b + c
    assert label_call("mine", start, {"k": [d, (c,)], "other": 3}) == 3
    assert "module_call" not in d.grad_fn.metadata  # only when the caller says which call
    assert [b.grad_fn.metadata["module"], c.grad_fn.metadata["module"], d.grad_fn.metadata["module"]] == ["mine"] * 3
    assert MODULE_KEY not in a.grad_fn.metadata
    # Already-labelled nodes keep their label (an outer call comes later).
    assert label_call("outer", start, d) == 0 and d.grad_fn.metadata["module"] == "mine"


def test_identity_module_labels_nothing(lib):
    model = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.Identity())
    with attribute_modules(model):
        out = model(lib.randn(1, 2))
    assert out.grad_fn.metadata["module"] == "0"


def test_tensors_in_keeps_order_through_nesting(lib):
    a, b, c = lib.ones(1), lib.zeros(1), lib.ones(2)
    assert [id(t) for t in tensors_in((a, [b, {"x": c, "y": None}], 5))] == [id(a), id(b), id(c)]
    assert list(tensors_in(models)) == []
