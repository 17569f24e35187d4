"""engine/nn/utils/prune.py against torch.nn.utils.prune: the same re-parametrisation (names of the
parameter, buffer and hook, state_dict keys), the same masks for the deterministic methods
(L1, Ln, global, custom, iterated through a PruningContainer), gradients through the mask,
``remove`` and ``is_pruned``, and torch's errors. The random methods prune the right number of
entries/channels (which ones depends on the generator, and the engine's is not torch's)."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

import engine
from tests.engine._outcomes import assert_as_torch, outcome

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
W = RNG.standard_normal((4, 6)).astype(np.float32)
W2 = RNG.standard_normal((2, 4)).astype(np.float32)
C = RNG.standard_normal((8, 3, 3, 3)).astype(np.float32)


def _prune(lib: Any) -> Any:
    return __import__(f"{lib.__name__}.nn.utils.prune", fromlist=["prune"])


def _linear(lib: Any, w: np.ndarray = W) -> Any:
    m = lib.nn.Linear(w.shape[1], w.shape[0])
    with lib.no_grad():
        m.weight.copy_(lib.tensor(w))
        m.bias.copy_(lib.arange(float(w.shape[0])) - 1.5)
    return m


def _state(m: Any) -> list:
    """What pruning leaves on a module: names, masks, the pruned tensor, the hooks' classes."""
    return [sorted(dict(m.named_parameters())), sorted(dict(m.named_buffers())), sorted(m.state_dict()),
            [b.detach() for _, b in sorted(m.named_buffers())], m.weight.detach(),
            [type(h).__name__ for h in m._forward_pre_hooks.values()]]


CASES = {
    "l1_fraction": lambda L: _state(_prune(L).l1_unstructured(_linear(L), "weight", amount=0.3)),
    "l1_count": lambda L: _state(_prune(L).l1_unstructured(_linear(L), "weight", amount=7)),
    "l1_zero": lambda L: _state(_prune(L).l1_unstructured(_linear(L), "weight", amount=0)),
    "l1_importance": lambda L: _state(_prune(L).l1_unstructured(_linear(L), "weight", amount=5,
                                                                importance_scores=L.tensor(W[::-1].copy()))),
    "l1_bias": lambda L: _state(_prune(L).l1_unstructured(_linear(L), "bias", amount=2)),
    "ln_dim0": lambda L: _state(_prune(L).ln_structured(_linear(L), "weight", amount=0.5, n=2, dim=0)),
    "ln_dim1_l1": lambda L: _state(_prune(L).ln_structured(_linear(L), "weight", amount=2, n=1, dim=1)),
    "ln_inf_neg_dim": lambda L: _state(_prune(L).ln_structured(_linear(L), "weight", amount=1, n=float("inf"), dim=-1)),
    "ln_conv": lambda L: _conv_ln(L),
    "iterated": lambda L: _iterated(L),
    "global": lambda L: _global(L),
    "custom": lambda L: _state(_prune(L).custom_from_mask(_linear(L), "weight", mask=L.tensor(W > 0))),
    "identity": lambda L: _state(_prune(L).identity(_linear(L), "weight")),
    "forward_uses_mask": lambda L: _forward(L),
    "remove": lambda L: _remove(L),
    "prune_method": lambda L: _prune(L).L1Unstructured(amount=3).prune(L.tensor(W)),
    # errors
    "amount_over_one": lambda L: _prune(L).l1_unstructured(_linear(L), "weight", amount=1.5),
    "amount_negative": lambda L: _prune(L).l1_unstructured(_linear(L), "weight", amount=-1),
    "amount_str": lambda L: _prune(L).l1_unstructured(_linear(L), "weight", amount="a"),
    "amount_too_many": lambda L: _prune(L).l1_unstructured(_linear(L), "weight", amount=25),
    "structured_1d": lambda L: _prune(L).ln_structured(_linear(L), "bias", amount=1, n=2, dim=0),
    "structured_bad_dim": lambda L: _prune(L).ln_structured(_linear(L), "weight", amount=1, n=2, dim=2),
    "remove_unpruned": lambda L: _prune(L).remove(_linear(L), "weight"),
    "global_structured": lambda L: _prune(L).global_unstructured([(_linear(L), "weight")],
                                                                 pruning_method=_prune(L).RandomStructured, amount=1),
    "global_not_iterable": lambda L: _prune(L).global_unstructured(3, pruning_method=_prune(L).L1Unstructured, amount=1),
    "global_scores_not_dict": lambda L: _prune(L).global_unstructured(
        [(_linear(L), "weight")], pruning_method=_prune(L).L1Unstructured, importance_scores=[1], amount=1),
    "importance_shape": lambda L: _prune(L).l1_unstructured(_linear(L), "bias", amount=1,
                                                            importance_scores=L.ones(3)),
    "prune_importance_shape": lambda L: _prune(L).L1Unstructured(amount=1).prune(L.tensor(W),
                                                                                  importance_scores=L.ones(3)),
    "container_other_name": lambda L: _container_other_name(L),
    "container_not_method": lambda L: _prune(L).PruningContainer(_named(L, "w")).add_pruning_method(3),
}
ERRORS = 14


def _named(lib: Any, name: str) -> Any:
    method = _prune(lib).L1Unstructured(amount=1)
    method._tensor_name = name
    return method


def _container_other_name(lib: Any) -> Any:
    """The error message names the container by its repr: compared without its address."""
    container = _prune(lib).PruningContainer(_named(lib, "w"))
    try:
        container.add_pruning_method(_named(lib, "v"))
    except ValueError as error:
        raise ValueError(re.sub(r" at 0x[0-9a-f]+", "", str(error))) from None


def _conv_ln(lib: Any) -> Any:
    conv = lib.nn.Conv2d(3, 8, 3)
    with lib.no_grad():
        conv.weight.copy_(lib.tensor(C))
    _prune(lib).ln_structured(conv, "weight", amount=3, n=2, dim=0)
    return conv.weight_mask.sum(dim=(1, 2, 3)), conv.weight.detach()


def _iterated(lib: Any) -> Any:
    """Unstructured then structured then unstructured again: one PruningContainer hook."""
    prune, m = _prune(lib), _linear(lib)
    prune.l1_unstructured(m, "weight", amount=5)
    prune.ln_structured(m, "weight", amount=1, n=2, dim=0)
    prune.l1_unstructured(m, "weight", amount=0.25)
    (hook,) = m._forward_pre_hooks.values()
    return _state(m) + [[type(x).__name__ for x in hook], len(hook)]


def _global(lib: Any) -> Any:
    prune, a, b = _prune(lib), _linear(lib), _linear(lib, W2)
    prune.l1_unstructured(a, "weight", amount=3)  # a mask already there is respected
    prune.global_unstructured([(a, "weight"), (b, "weight")], pruning_method=prune.L1Unstructured, amount=0.4)
    return _state(a) + _state(b)


def _forward(lib: Any) -> Any:
    """The pre-hook recomputes weight from weight_orig before each forward; gradients reach
    weight_orig through the mask."""
    m = _linear(lib)
    _prune(lib).l1_unstructured(m, "weight", amount=10)
    with lib.no_grad():
        m.weight_orig.mul_(2)
    y = m(lib.ones(3, 6))
    y.pow(2).sum().backward()
    return y.detach(), m.weight_orig.grad, m.weight.detach()


def _remove(lib: Any) -> Any:
    prune, m = _prune(lib), _linear(lib)
    prune.ln_structured(m, "weight", amount=2, n=1, dim=0)
    before = prune.is_pruned(lib.nn.Sequential(m))
    prune.remove(m, "weight")
    return [before, prune.is_pruned(lib.nn.Sequential(m)), type(m.weight).__name__] + _state(m)


@pytest.mark.parametrize("name", CASES)
def test_prune_matches_torch(name):
    assert_as_torch(name, CASES[name], torch)


def test_the_error_cases_are_errors_in_torch():
    assert sum(outcome(torch, fn, torch)[0] == "err" for fn in CASES.values()) == ERRORS


def test_the_hook_is_the_method_object_as_in_torch():
    """modscope observes forward pre-hooks: pruning registers the method itself, one per tensor."""
    prune = engine.nn.utils.prune
    m = _linear(engine)
    method = prune.L1Unstructured.apply(m, "weight", amount=2)
    assert list(m._forward_pre_hooks.values()) == [method] and method._tensor_name == "weight"
    prune.random_unstructured(m, "bias", amount=1)
    assert [h._tensor_name for h in m._forward_pre_hooks.values()] == ["weight", "bias"]
    prune.remove(m, "weight")
    assert [h._tensor_name for h in m._forward_pre_hooks.values()] == ["bias"]


def test_a_failed_pruning_leaves_the_module_as_it_was():
    for lib in (engine, torch):
        m = _linear(lib)
        with pytest.raises(ValueError, match="should be smaller than"):
            _prune(lib).l1_unstructured(m, "weight", amount=99)
        assert sorted(dict(m.named_parameters())) == ["bias", "weight"] and not m._forward_pre_hooks


@pytest.mark.parametrize("amount, kept", [(0.5, 12), (5, 19), (0, 24)])
def test_random_unstructured_prunes_amount_entries(amount, kept):
    m = _linear(engine)
    engine.nn.utils.prune.random_unstructured(m, "weight", amount=amount)
    assert int(m.weight_mask.sum().item()) == kept
    np.testing.assert_array_equal(m.weight.detach().numpy(), W * m.weight_mask.numpy())


def test_random_structured_prunes_whole_channels():
    conv = engine.nn.Conv2d(3, 8, 3)
    engine.nn.utils.prune.random_structured(conv, "weight", amount=0.5, dim=0)
    per_channel = conv.weight_mask.sum(dim=(1, 2, 3)).numpy()
    assert sorted(per_channel.tolist()) == [0.0] * 4 + [27.0] * 4


def test_pruned_module_state_dict_loads_into_torch():
    """The state_dict keys are torch's, so a pruned engine model's checkpoint loads into a pruned
    torch model."""
    em, tm = _linear(engine), torch.nn.Linear(6, 4)
    engine.nn.utils.prune.l1_unstructured(em, "weight", amount=9)
    torch.nn.utils.prune.identity(tm, "weight")
    tm.load_state_dict({k: torch.tensor(v.numpy()) for k, v in em.state_dict().items()})
    np.testing.assert_array_equal(tm.weight_mask.numpy(), em.weight_mask.numpy())
    np.testing.assert_allclose(tm(torch.ones(1, 6)).detach().numpy(), em(engine.ones(1, 6)).detach().numpy(),
                               rtol=1e-6, atol=1e-6)
