"""The backward observer's walk skips the nodes of the calls that ended inside the one it walks
(``capture/backward.py``: ``_walk``'s regions): the boundary it finds must be the one a full walk
finds, for every call of random module trees (nesting, reuse, unused outputs whose nodes are
freed, in-place updates, detach, tuples and dicts) and of a deep plain stack."""

from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")

import modscope  # noqa: E402
from modscope.capture import backward  # noqa: E402
from tests.modscope.random_models import build, random_spec  # noqa: E402


def _boundary(found: list) -> list[tuple[int, list]]:
    return sorted((id(node), sorted(hits)) for node, hits in found)


@pytest.fixture
def checked_walks(monkeypatch):
    """Every walk also made without the regions; records (with regions, without, regions used)."""
    walk = backward._walk
    seen: list[tuple[list, list, bool]] = []

    def both(hooked, targets, start, end, label, regions=None):
        found, region = walk(hooked, targets, start, end, label, regions)
        plain, plain_region = walk(hooked, targets, start, end, label, None)
        assert (region is None) == (plain_region is None)
        if region is not None:
            assert region.seen == plain_region.seen
        seen.append((_boundary(found), _boundary(plain), bool(regions) and label is None))
        return found, region

    monkeypatch.setattr(backward, "_walk", both)
    return seen


def _step(model, x) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            model(x).sum().backward()
        except RuntimeError:  # an in-place update of a value saved for backward: fails untraced too
            pass


@pytest.mark.parametrize("seed", range(300))
def test_a_walk_that_skips_inner_calls_finds_the_boundary_a_full_walk_finds(checked_walks, seed):
    torch.manual_seed(seed)
    model = build(torch, random_spec(seed))
    with modscope.trace(model) as tr:
        for _ in range(2):  # the second step has no graph to label: the regions are used
            _step(model, torch.randn(3, 4, requires_grad=seed % 4 != 0))
    assert not [e for e in tr.events if e["kind"] == "error"]
    for found, plain, _ in checked_walks:
        assert found == plain, f"spec {random_spec(seed)}"


def test_a_deep_stack_skips_the_inner_calls_and_finds_the_same_boundary(checked_walks):
    layer: torch.nn.Module = torch.nn.Linear(4, 4)
    for _ in range(6):
        layer = torch.nn.Sequential(torch.nn.Identity(), layer, torch.nn.ReLU())
    with modscope.trace(layer):
        for _ in range(2):
            _step(layer, torch.randn(3, 4, requires_grad=True))
    assert checked_walks and all(found == plain for found, plain, _ in checked_walks)
    assert sum(used for _, _, used in checked_walks) >= 6  # each Sequential skipped the calls inside it


def test_the_regions_are_dropped_when_the_top_level_call_ends():
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU()))
    with modscope.trace(model) as tr:
        model(torch.randn(2, 4, requires_grad=True)).sum().backward()
        assert tr._backward._regions == {}  # (they hold graph nodes: not beyond the forward)
