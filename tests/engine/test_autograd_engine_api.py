"""The autograd engine's API that tools build on, against torch: ``get_gradient_edge``,
``Variable._execution_engine.queue_callback``, the node running now and whether a node will run
(``torch._C._current_autograd_node``, ``torch._C._will_engine_execute_node``)."""

from __future__ import annotations

import pytest

import engine
from engine.autograd import Variable
from engine.autograd.executor import current_node, will_engine_execute_node
from engine.autograd.graph import GradientEdge, get_gradient_edge


def _api(lib):
    """(queue_callback, current_node, will_run, get_gradient_edge) of ``lib``."""
    if lib is engine:
        return Variable._execution_engine.queue_callback, current_node, will_engine_execute_node, get_gradient_edge
    from torch.autograd.graph import get_gradient_edge as torch_edge
    return (lib.autograd.Variable._execution_engine.queue_callback, lib._C._current_autograd_node,
            lib._C._will_engine_execute_node, torch_edge)


def _name(node) -> str:
    return type(node).__name__


@pytest.fixture(params=["engine", "torch"])
def fw(request, torch):
    return engine if request.param == "engine" else torch


def test_gradient_edge_of_a_leaf_is_its_accumulator_and_of_a_result_its_grad_fn(fw):
    *_, edge = _api(fw)
    w = fw.ones(3, requires_grad=True)
    y = (w * 2).unbind(0)[1]
    leaf = edge(w)
    assert _name(leaf.node) == "AccumulateGrad" and leaf.output_nr == 0
    assert edge(w).node is leaf.node  # the leaf's one accumulator
    assert edge(y).node is y.grad_fn and edge(y).output_nr == 1
    if fw is engine:
        assert isinstance(leaf, GradientEdge)


def test_gradient_edge_of_a_tensor_without_grad_is_an_error(fw):
    *_, edge = _api(fw)
    with pytest.raises(RuntimeError, match="does not require gradients"):
        edge(fw.ones(3))


def test_callbacks_run_once_the_backward_has_run_every_node_in_the_order_queued(fw):
    queue, *_ = _api(fw)
    x = fw.ones(2, requires_grad=True)
    seen = []

    def hook(grad):
        seen.append("hook")
        queue(lambda: seen.append(("first", x.grad is not None)))
        queue(lambda: (seen.append("second"), queue(lambda: seen.append("queued by a callback"))))

    y = x * 3
    y.register_hook(hook)
    (y * y).sum().backward()
    assert seen == ["hook", ("first", True), "second", "queued by a callback"]


def test_queue_callback_outside_a_backward_is_an_error(fw):
    queue, *_ = _api(fw)
    with pytest.raises(RuntimeError, match="Final callbacks can only be installed during backward pass"):
        queue(lambda: None)


def test_the_current_node_is_the_one_whose_hooks_run_and_none_outside(fw):
    _, current, *_ = _api(fw)
    x = fw.ones(2, requires_grad=True)
    y = x.exp()
    z = y.sin()
    seen = []
    y.register_hook(lambda g: seen.append(("tensor hook of y", _name(current()))))
    z.grad_fn.register_hook(lambda gi, go: seen.append(("post hook of z", _name(current()))))
    z.grad_fn.register_prehook(lambda go: seen.append(("pre hook of z", _name(current()))))
    z.sum().backward()
    assert seen == [("pre hook of z", "SinBackward0"), ("post hook of z", "SinBackward0"),
                    ("tensor hook of y", "ExpBackward0")]
    assert current() is None


def test_will_run_is_every_reached_node_and_only_the_needed_ones_under_grad(fw):
    _, _, will_run, edge = _api(fw)
    a, b = fw.ones(2, requires_grad=True), fw.ones(2, requires_grad=True)
    ya, yb = a.exp(), b.exp()
    out = (ya * yb).sum()
    seen = {}

    def look(grad):
        seen["ya"], seen["yb"] = will_run(ya.grad_fn), will_run(yb.grad_fn)

    out.grad_fn.register_prehook(lambda go: look(None))
    out.backward(retain_graph=True)
    assert seen == {"ya": True, "yb": True}
    fw.autograd.grad(out, [ya])  # only the path to ya runs: yb's node is left out
    assert seen == {"ya": True, "yb": False}
    with pytest.raises(RuntimeError, match="should only be called during the backward pass"):
        will_run(ya.grad_fn)
    assert edge(a).node is not None


def test_will_run_of_something_that_is_no_node_is_an_error():
    x = engine.ones(2, requires_grad=True)
    seen = []

    def hook(grad):
        try:
            will_engine_execute_node("exp")
        except TypeError as exc:
            seen.append(str(exc))

    y = x.exp()
    y.register_hook(hook)
    y.sum().backward()
    assert seen == ["_will_engine_execute_node expects a grad_fn, got str"]


def test_a_backward_inside_a_hook_has_its_own_callbacks_and_current_node(fw):
    queue, current, *_ = _api(fw)
    x = fw.ones(2, requires_grad=True)
    seen = []

    def inner_hook(grad):
        seen.append(("inner", _name(current())))
        queue(lambda: seen.append("inner callback"))

    def hook(grad):
        w = fw.ones(2, requires_grad=True)
        with fw.enable_grad():  # hooks run without grad mode
            inner = w.cos()
            inner.register_hook(inner_hook)
            inner.sum().backward()
        seen.append(("outer again", _name(current())))
        queue(lambda: seen.append("outer callback"))

    y = x.exp()
    y.register_hook(hook)
    y.sum().backward()
    assert seen == [("inner", "CosBackward0"), "inner callback", ("outer again", "ExpBackward0"), "outer callback"]


@pytest.mark.parametrize("create_graph", [False, True])
def test_a_tensor_hook_that_returns_no_tensor_is_an_error(fw, create_graph):
    x = fw.ones(2, requires_grad=True)
    y = x.exp()
    y.register_hook(lambda g: (1.0, 2.0))
    with pytest.raises(TypeError, match="expected Variable, but hook returned 'tuple'"):
        # autograd.grad: torch warns once per process about backward(create_graph=True)
        fw.autograd.grad(y.sum(), x, create_graph=create_graph)
