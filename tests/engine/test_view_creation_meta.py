"""Views torch will not re-derive after an in-place change (its CreationMeta), against torch:

- the outputs of unbind/split/chunk made in grad mode: once their base or a sibling view is
  modified in place (in grad mode or not), using one (its grad_fn, an op on it, backward from
  it) raises "Output 0 of Unbind is a view and its base or another view of its base has been
  modified inplace...";
- views made under no_grad (or inference_mode): modifying one in place in grad mode when it,
  its base or an operand requires grad raises "A view was created in no_grad mode and is being
  modified inplace with grad mode enabled..."; using one after its base changed in grad mode
  raises the "its base or another view of its base" form;
- what torch allows stays allowed (plain views, no_grad throughout, detached tensors).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import engine
from tests.engine._outcomes import outcome, same
from tests.engine.test_multi_view_inplace import OPS

torch = pytest.importorskip("torch")


def _graph(lib: Any) -> Any:
    return lib.arange(24.0).reshape(4, 6).requires_grad_() * 1


def _check(fn: Callable[[Any], Any]) -> tuple:
    want, got = outcome(torch, fn, torch), outcome(engine, fn, torch)
    assert same(got, want), (got, want)
    return got


MULTI = [n for n in OPS if n.startswith(("unbind", "Tensor.unbind", "split", "Tensor.split", "chunk", "Tensor.chunk"))]


def _use_after_base_changed(make: Callable, use: Callable, modify_under_no_grad: bool = False) -> Callable:
    def fn(lib: Any) -> Any:
        y = _graph(lib)
        pieces = make(lib, y)
        if modify_under_no_grad:
            with lib.no_grad():
                y.mul_(2)
        else:
            y.mul_(2)
        return use(lib, pieces)
    return fn


USES = {
    "op": lambda lib, pieces: (pieces[0] * 2).sum(),
    "grad_fn": lambda lib, pieces: type(pieces[0].grad_fn).__name__,
    "backward": lambda lib, pieces: pieces[0].sum().backward(),
    "a_view_of_it": lambda lib, pieces: pieces[0][:1].sum(),
}


@pytest.mark.parametrize("use", USES)
@pytest.mark.parametrize("name", MULTI)
def test_using_an_output_after_its_base_changed(name: str, use: str) -> None:
    got = _check(_use_after_base_changed(OPS[name], USES[use]))
    assert got[0] == "err" and "its base or another view of its base has been modified inplace" in got[2]


@pytest.mark.parametrize("name", ["unbind", "split", "chunk"])
def test_using_an_output_after_its_base_changed_under_no_grad(name: str) -> None:
    got = _check(_use_after_base_changed(OPS[name], USES["op"], modify_under_no_grad=True))
    assert got[0] == "err"


def _sibling_changed(lib: Any) -> Any:
    """Another output is modified in place (allowed under no_grad); this one is then used."""
    a, b = _graph(lib).split(3, 1)
    with lib.no_grad():
        b.add_(1)
    return (a * 1).sum()


def _unused_outputs(lib: Any) -> Any:
    """Outputs never used after the base changed: no error (torch checks on use)."""
    y = _graph(lib)
    y.unbind(0)
    y.mul_(2)
    y.sum().backward()
    return "fine"


def _plain_view_then_base(lib: Any) -> Any:
    y = _graph(lib)
    v = y[:2]
    y.mul_(2)
    return (v * 1).sum()


def _nograd(make_view: Callable, inplace: Callable) -> Callable:
    def fn(lib: Any) -> Any:
        x = lib.arange(6.0).requires_grad_()
        y = x * 1
        with lib.no_grad():
            v = make_view(lib, x, y)
        return inplace(lib, v)
    return fn


NO_GRAD = {
    "view_of_graph": _nograd(lambda L, x, y: y[:3], lambda L, v: v.mul_(2)),
    "view_of_leaf": _nograd(lambda L, x, y: x[:3], lambda L, v: v.mul_(2)),
    "reshape_view": _nograd(lambda L, x, y: y.view(2, 3), lambda L, v: v.add_(1)),
    "unbind_under_no_grad": _nograd(lambda L, x, y: y.unbind(0)[0], lambda L, v: v.mul_(2)),
    "split_under_no_grad": _nograd(lambda L, x, y: y.split(2)[1], lambda L, v: v.zero_()),
    "plain_base_grad_operand": _nograd(lambda L, x, y: L.arange(6.0)[:3],
                                       lambda L, v: v.mul_(L.ones(3, requires_grad=True))),
    "base_changed_then_used": lambda L: _nograd_base_changed(L),
    "inference_view": lambda L: _inference_view(L),
    "sibling_changed": _sibling_changed,
    "view_of_no_grad_view": _nograd(lambda L, x, y: y.view(2, 3), lambda L, v: v[0].mul_(2)),
    # allowed
    "plain_base_plain_operand": _nograd(lambda L, x, y: L.arange(6.0)[:3], lambda L, v: v.mul_(2)),
    "modified_under_no_grad": lambda L: _modified_under_no_grad(L),
    "detached_view": _nograd(lambda L, x, y: y.detach()[:3], lambda L, v: v.mul_(2)),
    "grad_mode_view": lambda L: _grad_mode_view(L),
    "no_grad_view_in_an_op": lambda L: _no_grad_view_in_an_op(L),
    "unused_outputs": _unused_outputs,
    "plain_view_then_base": _plain_view_then_base,
}
REFUSED = 10  # the first ten above


def _nograd_base_changed(lib: Any) -> Any:
    y = _graph(lib)
    with lib.no_grad():
        a = y.chunk(2)[0]
    y.mul_(2)
    return (a * 1).sum()


def _inference_view(lib: Any) -> Any:
    y = _graph(lib)
    with lib.inference_mode():
        v = y[:3]
    v.mul_(2)


def _no_grad_view_in_an_op(lib: Any) -> Any:
    """A view made under no_grad requires grad through its base (torch's rule), but an op on it
    records an edge to nothing: no gradient reaches it or its base through it."""
    x = lib.arange(6.0).requires_grad_()
    y = x * 1
    with lib.no_grad():
        v = y[:3]
    w = v * 2
    (w.sum() + y.sum()).backward()
    return [v.requires_grad, v.is_leaf, v.grad_fn is None, w.requires_grad, x.grad, v.grad is None]


def _modified_under_no_grad(lib: Any) -> Any:
    y = _graph(lib)
    with lib.no_grad():
        v = y[:3]
        v.mul_(2)
    return y.detach()


def _grad_mode_view(lib: Any) -> Any:
    y = _graph(lib)
    v = y[:3]
    v.mul_(2)
    y.sum().backward()
    return v.detach()


@pytest.mark.parametrize("name", NO_GRAD)
def test_views_made_under_no_grad(name: str) -> None:
    got = _check(NO_GRAD[name])
    assert (got[0] == "err") == (list(NO_GRAD).index(name) < REFUSED)


def test_the_marked_views_still_print_and_name_as_tensors() -> None:
    y = _graph(engine)
    a, _ = y.chunk(2)
    with engine.no_grad():
        v = y[:1]
    assert type(a).__name__ == "Tensor" and isinstance(a, engine.Tensor) and "grad_fn=<SplitBackward0>" in repr(a)
    assert repr(v).startswith("tensor(") and a.grad_fn.name() == "SplitBackward0"


def _deepcopies(lib: Any) -> Any:
    """A deep copy of a marked view is a plain tensor, no view (torch's too): it can be updated
    in place from a tensor that requires grad."""
    import copy

    y = _graph(lib)
    with lib.no_grad():
        v, u = y[:1], lib.arange(3.0)[:2]
    a = y.chunk(2)[0].detach()
    cv, cu, ca = copy.deepcopy(v), copy.deepcopy(u), copy.deepcopy(a)
    cu.mul_(lib.ones(2, requires_grad=True))
    ca.add_(1)
    return [cv, cv.requires_grad, cv.is_leaf, cv._base is None, cu.detach(), ca]


def test_deep_copies_of_marked_views_are_plain_tensors() -> None:
    _check(_deepcopies)


def test_a_plain_view_is_rederived_after_its_base_changed() -> None:
    # (more cases, node names and double backward: test_view_rederive.py)
    def fn(lib: Any) -> Any:
        x = lib.arange(6.0).requires_grad_()
        y = x * 1
        v = y[:3]
        y.mul_(2)
        v.sum().backward()
        return x.grad  # torch: [2, 2, 2, 0, 0, 0] (v re-derived as AsStridedBackward0 over MulBackward0)
    _check(fn)
