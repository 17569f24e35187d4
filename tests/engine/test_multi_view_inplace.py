"""In-place updates of the outputs of a multi-view op (unbind, split, split_with_sizes, chunk)
are refused as torch refuses them (CreationMeta::MULTI_OUTPUT_NODE), with torch's message; the
ops torch composes of single views (tensor_split, hsplit, ...) and the ``unsafe_`` ones are not."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest

import engine
from tests.engine._outcomes import outcome, same

torch = pytest.importorskip("torch")


def _graph(lib: Any, shape: tuple[int, ...] = (4, 6)) -> Any:
    """A non-leaf tensor in a graph (leaf * 1), fixed values."""
    x = lib.arange(float(math.prod(shape))).reshape(shape).requires_grad_()
    return x * 1


def _update(pieces: Any, i: int = 0) -> Any:
    """Add 1 to piece ``i`` in place; return all pieces (the value compared when it is allowed)."""
    pieces[i].add_(1)
    return [p.detach() for p in pieces]


# op name -> fn(lib, y) making the pieces of y (4 x 6)
OPS: dict[str, Callable[[Any, Any], Any]] = {
    "unbind": lambda lib, y: lib.unbind(y),
    "unbind_dim1": lambda lib, y: lib.unbind(y, 1),
    "Tensor.unbind": lambda lib, y: y.unbind(-1),
    "split": lambda lib, y: lib.split(y, 2),
    "split_one_piece": lambda lib, y: lib.split(y, 4),
    "split_sections": lambda lib, y: lib.split(y, [1, 3]),
    "Tensor.split": lambda lib, y: y.split(3, 1),
    "split_with_sizes": lambda lib, y: lib.split_with_sizes(y, [1, 3]),
    "Tensor.split_with_sizes": lambda lib, y: y.split_with_sizes([2, 4], 1),
    "chunk": lambda lib, y: lib.chunk(y, 2),
    "chunk_one": lambda lib, y: lib.chunk(y, 1),
    "Tensor.chunk": lambda lib, y: y.chunk(3, 1),
    # composed of single views (slices) in torch: allowed
    "tensor_split": lambda lib, y: lib.tensor_split(y, 2),
    "tensor_split_indices": lambda lib, y: lib.tensor_split(y, [1, 3]),
    "Tensor.tensor_split": lambda lib, y: y.tensor_split(3, 1),
    "hsplit": lambda lib, y: lib.hsplit(y, 2),
    "vsplit": lambda lib, y: lib.vsplit(y, 2),
    "dsplit": lambda lib, y: lib.dsplit(y.reshape(2, 2, 6), 2),
    # not views at all: allowed
    "unsafe_split": lambda lib, y: lib.unsafe_split(y, 2),
    "unsafe_chunk": lambda lib, y: lib.unsafe_chunk(y, 2),
    "unsafe_split_with_sizes": lambda lib, y: lib.unsafe_split_with_sizes(y, [1, 3]),
    "Tensor.unsafe_split_with_sizes": lambda lib, y: y.unsafe_split_with_sizes([1, 3]),
}


def _check(fn: Callable[[Any], Any]) -> tuple:
    want, got = outcome(torch, fn, torch), outcome(engine, fn, torch)
    assert same(got, want), (got, want)
    return got


@pytest.mark.parametrize("name", OPS)
def test_inplace_on_an_output_in_grad_mode(name: str) -> None:
    got = _check(lambda lib: _update(OPS[name](lib, _graph(lib))))
    refused = not (name.startswith(("unsafe", "Tensor.unsafe", "tensor_split", "Tensor.tensor_split"))
                   or name in ("hsplit", "vsplit", "dsplit"))
    assert (got[0] == "err") == refused  # the comparison above is not vacuous: both refuse or both allow
    if refused:
        assert "This view is the output of a function that returns multiple views." in got[2]


@pytest.mark.parametrize("name", OPS)
def test_inplace_on_an_output_under_no_grad_is_allowed(name: str) -> None:
    def fn(lib: Any) -> Any:
        y = _graph(lib)
        with lib.no_grad():
            return _update(OPS[name](lib, y))

    assert _check(fn)[0] == "ok"


CASES: dict[str, Callable[[Any], Any]] = {
    # the output number and the node are the updated tensor's
    "fourth_output": lambda lib: _update(lib.unbind(_graph(lib), 1), 3),
    "second_split_copy_": lambda lib: lib.split(_graph(lib), 2)[1].copy_(lib.ones(2, 6)),
    "mul_": lambda lib: lib.unbind(_graph(lib))[0].mul_(2),
    "zero_": lambda lib: lib.chunk(_graph(lib), 2)[1].zero_(),
    "iadd": lambda lib: lib.unbind(_graph(lib)).__getitem__(0).__iadd__(1),
    "setitem": lambda lib: lib.unbind(_graph(lib))[2].__setitem__(0, 5.0),
    "transpose_": lambda lib: lib.split(_graph(lib), 2)[1].t_(),
    # a view of an output inherits the rule; its own node is named
    "slice_of_output": lambda lib: lib.unbind(_graph(lib))[0][1:].add_(1),
    "view_of_output": lambda lib: lib.split(_graph(lib), 2)[1].view(12).add_(1),
    # the leaf's rule comes after this one in torch
    "output_of_leaf": lambda lib: lib.unbind(lib.ones(3, 2, requires_grad=True))[0].add_(1),
    # outside the graph, updated from a tensor that requires grad, or made to require grad
    "operand_requires_grad": lambda lib: lib.unbind(lib.ones(4, 6))[1].add_(lib.ones(6, requires_grad=True)),
    "output_requires_grad_": lambda lib: lib.unbind(lib.ones(4, 6))[0].requires_grad_().add_(1),
    # allowed: nothing requires grad, detached outputs, out-of-place ops
    "no_grad_anywhere": lambda lib: _update(lib.unbind(lib.ones(4, 6))),
    "detached_output": lambda lib: lib.unbind(_graph(lib))[0].detach().add_(1),
    "out_of_place": lambda lib: lib.unbind(_graph(lib))[0].add(1),
}


@pytest.mark.parametrize("name", CASES)
def test_inplace_case_matches_torch(name: str) -> None:
    _check(CASES[name])


def test_refused_update_leaves_the_values() -> None:
    y = _graph(engine)
    pieces = engine.unbind(y)
    with pytest.raises(RuntimeError, match="^Output 1 of Unbind is a view and is being modified inplace"):
        pieces[1].add_(1)
    assert pieces[1].tolist() == [6.0, 7.0, 8.0, 9.0, 10.0, 11.0]


def test_views_made_under_enable_grad_inside_no_grad_are_refused() -> None:
    def fn(lib: Any) -> Any:
        y = _graph(lib)
        with lib.no_grad(), lib.enable_grad():
            return _update(lib.unbind(y))

    assert _check(fn)[0] == "err"


def test_updates_inside_inference_mode_are_allowed() -> None:
    def fn(lib: Any) -> Any:
        pieces = lib.split(_graph(lib), 2)
        with lib.inference_mode():
            return _update(pieces)

    assert _check(fn)[0] == "ok"


def test_outputs_made_in_inference_mode_are_allowed_updates() -> None:
    def fn(lib: Any) -> Any:
        with lib.inference_mode():
            return _update(lib.unbind(lib.ones(4, 6)))

    assert _check(fn)[0] == "ok"
