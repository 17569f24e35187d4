"""A view whose memory changed in place since its ``grad_fn`` was recorded (its base, or another
view of the same base, modified in place) re-derives that node from its base, as torch does
(``AsStridedBackward0`` over the base's current node), so its gradient follows the base's new
history. Compared with torch: gradients, the node names along the ``next_functions`` chain,
hooks, ``retain_grad`` and double backward. Views torch refuses to re-derive (unbind/split
outputs, views made under no_grad) are tested in test_view_creation_meta.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import engine
from tests.engine._outcomes import outcome, same

torch = pytest.importorskip("torch")


def _check(fn: Callable[[Any], Any]) -> tuple:
    want, got = outcome(torch, fn, torch), outcome(engine, fn, torch)
    assert same(got, want), (got, want)
    return got


def _chain(node: Any, depth: int = 4) -> list[str]:
    """The node names along the first edges from ``node``."""
    names = []
    while node is not None and len(names) < depth:
        names.append(type(node).__name__)
        nxt = [f for f, _ in node.next_functions if f is not None]
        node = nxt[0] if nxt else None
    return names


# name -> a view of the graph tensor ``y`` of shape (2, 6)
VIEWS: dict[str, Callable[[Any], Any]] = {
    "slice": lambda y: y[:, 1:4],
    "select": lambda y: y[1],
    "view": lambda y: y.view(3, 4),
    "transpose": lambda y: y.t(),
    "permute": lambda y: y.permute(1, 0),
    "unsqueeze": lambda y: y.unsqueeze(0),
    "expand": lambda y: y[:1].expand(3, 6),
    "diagonal": lambda y: y.diagonal(),
    "narrow": lambda y: y.narrow(1, 2, 3),
    "view_of_view": lambda y: y.view(3, 4)[1:, ::2].t(),
}


def _graph(lib: Any) -> tuple[Any, Any]:
    x = lib.arange(12.0).reshape(2, 6).requires_grad_()
    return x, x * 1


@pytest.mark.parametrize("name", VIEWS)
def test_a_view_used_after_its_base_changed_in_place_follows_the_new_history(name: str) -> None:
    def fn(lib: Any) -> Any:
        x, y = _graph(lib)
        v = VIEWS[name](y)
        y.mul_(x)
        w = lib.arange(float(v.numel())).reshape(v.shape)
        (v * w).sum().backward()
        return x.grad, _chain(v.grad_fn)
    got = _check(fn)
    assert got[1][1] == ["AsStridedBackward0", "MulBackward0", "MulBackward0", "AccumulateGrad"]


@pytest.mark.parametrize("name", VIEWS)
def test_another_view_changed_in_place_re_derives_its_siblings_and_the_base(name: str) -> None:
    def fn(lib: Any) -> Any:
        x, y = _graph(lib)
        v = VIEWS[name](y)
        u = y[:, 4:]
        u.mul_(lib.full((2, 2), 3.0))
        w = lib.arange(float(v.numel())).reshape(v.shape)
        ((v * w).sum() + (u * 5).sum() + (y * 7).sum()).backward()
        return x.grad, _chain(v.grad_fn), _chain(u.grad_fn), _chain(y.grad_fn)
    _check(fn)


def test_a_view_of_a_leaf_changed_under_no_grad_is_re_derived() -> None:
    def fn(lib: Any) -> Any:
        x = lib.arange(6.0).requires_grad_()
        v = x[1:4]
        with lib.no_grad():
            x.mul_(2)
        (v * v).sum().backward()
        return x.grad, _chain(v.grad_fn)
    _check(fn)


def test_the_re_derived_node_is_made_once_per_change() -> None:
    def fn(lib: Any) -> Any:
        x, y = _graph(lib)
        v = y[0]
        old = v.grad_fn
        y.add_(1)
        first = v.grad_fn
        same_node = first is v.grad_fn
        y.add_(1)
        return old is first, same_node, first is v.grad_fn
    assert _check(fn) == ("ok", [False, True, False])


def test_an_in_place_view_op_on_a_view_keeps_its_own_node() -> None:
    def fn(lib: Any) -> Any:
        x, y = _graph(lib)
        v = y.view(3, 4).t()
        v.t_()
        v.unsqueeze_(0)
        (v * lib.arange(12.0).reshape(1, 3, 4)).sum().backward()
        return v._version, _chain(v.grad_fn), x.grad
    _check(fn)


def test_hooks_stay_on_the_old_node_and_retain_grad_moves() -> None:
    def fn(lib: Any) -> Any:
        calls = []
        x, y = _graph(lib)
        v = y[0]
        v.retain_grad()
        v.register_hook(lambda g: calls.append("old"))
        y.mul_(2)
        (v * v).sum().backward()
        return calls, v.grad, x.grad
    assert _check(fn)[1][0] == []


def test_a_hook_registered_after_the_change_is_on_the_new_node() -> None:
    # engine only: torch 2.13 itself crashes (segmentation fault) on this sequence
    calls = []
    x, y = _graph(engine)
    v = y[0]
    y.mul_(2)
    v.register_hook(lambda g: calls.append(g.tolist()))
    (v * v).sum().backward()
    assert calls == [[0.0, 4.0, 8.0, 12.0, 16.0, 20.0]]
    assert x.grad.tolist() == [[0.0, 8.0, 16.0, 24.0, 32.0, 40.0], [0.0] * 6]


def test_a_view_used_after_its_base_changed_does_not_fail_on_a_view_of_something_not_requiring_grad() -> None:
    def fn(lib: Any) -> Any:
        y = lib.arange(6.0)
        v = y[:3]
        y.mul_(2)
        return v.grad_fn, v.requires_grad, v
    _check(fn)


def test_double_backward_through_a_re_derived_view() -> None:
    def fn(lib: Any) -> Any:
        x = lib.arange(6.0).requires_grad_()
        y = x * 1
        v = y[1:4]
        y.mul_(x)
        (gx,) = lib.autograd.grad((v ** 3).sum(), x, create_graph=True)
        (gx * lib.arange(6.0)).sum().backward()
        return gx, x.grad
    _check(fn)


@pytest.mark.parametrize("allow_unused", [False, True])
def test_grad_with_respect_to_a_view_whose_node_was_re_derived(allow_unused: bool) -> None:
    def fn(lib: Any) -> Any:
        x, y = _graph(lib)
        v = y[0]
        z = v * 2  # recorded on v's old node
        y.mul_(2)
        return lib.autograd.grad(z.sum(), v, allow_unused=allow_unused)  # v's node is the new one
    _check(fn)
