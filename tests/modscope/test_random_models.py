"""Parity with torch on random module trees (``random_models``): the order module hooks fire in,
the order a trace records, and the gradients of the input and of every parameter."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import engine
import modscope
from modscope.testing import assert_firing_order, assert_no_hooks
from tests.modscope.random_models import (
    build,
    copy_weights,
    random_spec,
    record_all_hooks,
    record_event_shapes,
    record_hook_values,
    record_hooks,
    record_random_hooks,
    without_in_place,
)

SEEDS = range(400)


def run(lib, model, x: np.ndarray, grad_input: bool, caught: list | None = None):
    """Forward and backward; the input, and the error raised: a tree without parameters on an
    input without grad has nothing to differentiate, and an output of a module with backward
    hooks may not be updated in place: both libraries refuse them. ``caught`` receives the
    warnings' categories and messages."""
    inp = lib.tensor(x, requires_grad=grad_input)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            model(inp).sum().backward()
        except RuntimeError as exc:
            return inp, str(exc)
        finally:
            if caught is not None:
                caught += [(w.category.__name__, str(w.message)) for w in seen]
    return inp, None


def pair(torch, seed: int):
    spec = random_spec(seed)
    torch.manual_seed(seed)
    theirs = build(torch, spec)
    ours = build(engine, spec)
    copy_weights(theirs, ours, engine)
    x = np.random.default_rng(seed).standard_normal((3, 4)).astype(np.float32)
    return spec, theirs, ours, x


@pytest.mark.parametrize("seed", SEEDS)
def test_hooks_fire_in_torch_order_with_torch_gradients(torch, seed):
    spec, theirs, ours, x = pair(torch, seed)
    grad_input = seed % 4 != 0
    expected, actual = record_hooks(theirs), record_hooks(ours)
    t_warnings, e_warnings = [], []
    t_in, t_err = run(torch, theirs, x, grad_input, t_warnings)
    e_in, e_err = run(engine, ours, x, grad_input, e_warnings)
    assert actual == expected, f"spec {spec}"
    assert e_warnings == t_warnings, f"spec {spec}"
    assert e_err == t_err, f"spec {spec}"
    if t_err is not None:
        return  # refused alike, and nothing was differentiated
    assert_same_gradients(t_in, e_in, theirs, ours, grad_input, spec)


@pytest.mark.parametrize("seed", SEEDS[::2])
def test_hooks_receive_what_torch_hooks_receive(torch, seed):
    """Shapes of the arguments, outputs and gradients each hook sees, ``None`` in the same
    positions (a non-tensor argument, a gradient that did not arrive)."""
    spec, theirs, ours, x = pair(torch, seed)
    grad_input = seed % 4 != 0
    expected, actual = record_hook_values(theirs), record_hook_values(ours)
    run(torch, theirs, x, grad_input)
    run(engine, ours, x, grad_input)
    assert actual == expected, f"spec {spec}"


@pytest.mark.parametrize("seed", SEEDS[::2])
def test_hooks_that_replace_values_give_torch_results(torch, seed):
    """Hooks drawn at random (prepended, with keyword arguments, ``always_call``, replacing
    inputs, outputs and gradients): the same order, errors and gradients as torch's."""
    spec, theirs, ours, x = pair(torch, seed)
    grad_input = seed % 4 != 0
    expected, actual = record_random_hooks(torch, theirs, seed), record_random_hooks(engine, ours, seed)
    t_in, t_err = run(torch, theirs, x, grad_input)
    e_in, e_err = run(engine, ours, x, grad_input)
    assert actual == expected, f"spec {spec}"
    assert e_err == t_err, f"spec {spec}"
    if t_err is None:
        assert_same_gradients(t_in, e_in, theirs, ours, grad_input, spec)


def assert_same_gradients(t_in, e_in, theirs, ours, grad_input: bool, spec) -> None:
    """The input's and every parameter's gradient as torch's, to float32 rounding: hooks that
    scale values compound through reused modules, and an entry near zero that is a difference
    of large ones differs by a few ulps of the large ones (hence the absolute tolerance scaled
    by the array's largest entry; seed 2130, by hand: torch 1.9e-5 and the engine 3.6e-5 from
    the float64 result on a scale of 1.6)."""
    pairs = [("input", e_in.grad, t_in.grad)] if grad_input else []
    t_grads = {n: p.grad for n, p in theirs.named_parameters()}
    pairs += [(name, p.grad, t_grads[name]) for name, p in ours.named_parameters()]
    for name, ours_g, theirs_g in pairs:
        if theirs_g is None:
            assert ours_g is None, f"{name} got a gradient torch does not give; spec {spec}"
            continue
        want = theirs_g.numpy()
        np.testing.assert_allclose(ours_g.numpy(), want, rtol=1e-4, atol=5e-5 * max(1.0, float(np.abs(want).max())),
                                   err_msg=f"{name}; spec {spec}")


@pytest.mark.parametrize("seed", SEEDS[::4])
def test_global_and_tensor_hooks_interleave_as_in_torch(torch, seed):
    spec, theirs, ours, x = pair(torch, seed)
    grad_input = seed % 8 != 0
    expected, t_err = run_under_all_hooks(torch, theirs, x, grad_input)
    actual, e_err = run_under_all_hooks(engine, ours, x, grad_input)
    assert e_err == (t_err and t_err.replace("torch.", "engine.")), f"spec {spec}"
    assert actual == expected, f"spec {spec}"


def run_under_all_hooks(lib, model, x: np.ndarray, grad_input: bool):
    """``run`` under ``record_all_hooks``: what fired, and the error; the global hooks removed."""
    order, handles = record_all_hooks(lib, model)
    try:
        _, err = run(lib, model, x, grad_input)
    finally:
        for h in handles:
            h.remove()
    return order, err


@pytest.mark.parametrize("seed", SEEDS)
def test_a_trace_records_torch_firing_order_and_leaves_no_hooks(torch, seed):
    spec, theirs, ours, x = pair(torch, seed)
    grad_input = seed % 4 != 0
    # torch refuses in-place updates of outputs under full backward hooks; a trace's hooks are
    # transparent (``engine.utils.hooks.transparent_hook``), so the traced program runs as it
    # would untraced: it fails where torch fails without hooks (an update of a value saved for
    # backward), and otherwise fires in torch's order for it with those updates made copies.
    _, plain_err = run(torch, theirs, x, grad_input)  # no hooks on it
    theirs = build(torch, without_in_place(spec))
    expected = record_hooks(theirs)
    _, t_err = run(torch, theirs, x, grad_input)
    with modscope.trace(ours) as tr:
        _, e_err = run(engine, ours, x, grad_input)
    if plain_err is not None:
        assert e_err == plain_err.replace("torch.", "engine."), f"spec {spec}"
        return
    assert e_err == t_err, f"spec {spec}"
    assert_firing_order(tr, expected)
    assert_no_hooks(ours)
    assert not [e for e in tr.events if e["kind"] == "error"], f"spec {spec}"



_VALUES = {"forward_pre": "inputs", "forward": "outputs", "backward_pre": "grad_outputs", "backward": "grad_inputs"}


@pytest.mark.parametrize("seed", SEEDS[::2])
def test_a_traces_summaries_have_the_shapes_torch_hooks_see(torch, seed):
    spec = without_in_place(random_spec(seed))  # torch refuses those under its plain hooks
    torch.manual_seed(seed)
    theirs, ours = build(torch, spec), build(engine, spec)
    x = np.random.default_rng(seed).standard_normal((3, 4)).astype(np.float32)
    grad_input = seed % 4 != 0
    expected = record_event_shapes(torch, theirs)
    run(torch, theirs, x, grad_input)
    with modscope.trace(ours) as tr:
        run(engine, ours, x, grad_input)
    actual = [(e["kind"], e["path"], [s and s["shape"] for s in e[_VALUES[e["kind"]]]])
              for e in tr.events if e["kind"] in _VALUES]
    assert actual == expected, f"spec {spec}"
