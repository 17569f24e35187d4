"""The size arguments of view, reshape and unflatten are validated in torch's order (infer_size:
left to right, a second -1 or a negative size raised where met, then the element count, then an
ambiguous -1 among zeros) with torch's messages."""

from __future__ import annotations

from typing import Any

import pytest

import engine
from tests.engine._outcomes import outcome, same

torch = pytest.importorskip("torch")

SIZES = [
    (-2, -3), (-1, -2), (-2, -1), (2, -5), (-3,), (2, 3, -2), (-5, 0), (0, -5), (-1, -5),  # negative sizes
    (-1, -1), (-1, 4, -1), (-1, -1, 6),  # a second -1
    (5, 5), (25,), (0, 0), (0, 3), (5, -1), (-1, 5), (-1, 0), (0, -1), (3, 0, -1),  # wrong element count
    (-1, 6), (2, 3, -1), (24,), (-1,), (24, -1), (3, 8),  # valid
]

# name -> fn(lib, x, sizes), x a 4 x 6 tensor
FORMS: dict[str, Any] = {
    "view": lambda lib, x, s: x.view(*s),
    "view_tuple": lambda lib, x, s: x.view(s),
    "view_noncontiguous": lambda lib, x, s: x.t().view(*s),
    "reshape": lambda lib, x, s: x.reshape(*s),
    "reshape_noncontiguous": lambda lib, x, s: x.t().reshape(s),
    "torch.reshape": lambda lib, x, s: lib.reshape(x, s),
}


def _check(fn: Any) -> tuple:
    want, got = outcome(torch, fn, torch), outcome(engine, fn, torch)
    assert same(got, want), (got, want)
    return got


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("sizes", SIZES, ids=str)
def test_view_and_reshape_sizes_match_torch(form: str, sizes: tuple[int, ...]) -> None:
    _check(lambda lib: FORMS[form](lib, lib.arange(24.0).reshape(4, 6), sizes))


def test_negative_size_is_named_before_the_stride_check() -> None:
    """The reported case: view(-2, -3) on a tensor view() cannot reshape was the stride message."""
    with pytest.raises(RuntimeError, match=r"^invalid shape dimension -2 at index 0 of shape \[-2, -3\]$"):
        engine.arange(24.0).reshape(4, 6).t().view(-2, -3)


@pytest.mark.parametrize("sizes", [(-1,), (0, -1), (-1, 0), (3, -1), (-1, 3), (2, -1, 0), (-2, 0), (0,), (1,)],
                         ids=str)
@pytest.mark.parametrize("form", ["view", "reshape"])
def test_sizes_of_an_empty_tensor_match_torch(form: str, sizes: tuple[int, ...]) -> None:
    _check(lambda lib: getattr(lib.zeros(0, 3), form)(*sizes))


@pytest.mark.parametrize("args", [(1, (4, 2)), (-1, (2, 3)), (1, (-1, 4)), (0, (3,)), (1, (0, -1)), (1, [2, -1]),
                                  (1, ())], ids=str)
def test_unflatten_sizes_match_torch(args: tuple) -> None:
    _check(lambda lib: lib.arange(24.0).reshape(4, 6).unflatten(*args))


@pytest.mark.parametrize("sizes", [(-2, 3), (-1, -1), (2, -3), (-1, -5)], ids=str)
def test_unflatten_invalid_size_matches_torch_first_lines(sizes: tuple[int, ...]) -> None:
    """torch wraps infer_size's error with its C++ backtrace: the engine gives the first two lines."""
    def lines(lib: Any) -> list[str]:
        with pytest.raises(RuntimeError) as info:
            lib.arange(24.0).reshape(4, 6).unflatten(1, sizes)
        return str(info.value).splitlines()[:2]

    got, want = lines(engine), lines(torch)
    assert want[0] == "unflatten got an unexpected error:"
    assert got == want
