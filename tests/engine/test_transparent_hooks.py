"""engine.utils.hooks.transparent_hook: observer hooks do not forbid in-place output updates."""

from __future__ import annotations

import pytest

import engine
from engine.utils.hooks import transparent_hook


def _run(hooks):
    engine.manual_seed(0)
    lin = engine.nn.Linear(3, 3)
    for kind, fn in hooks:
        getattr(lin, f"register_full_backward_{kind}")(fn)
    x = engine.randn(2, 3, requires_grad=True)
    out = lin(x)
    out += 1
    out.sum().backward()
    return lin.weight.grad


def test_all_transparent_hooks_allow_inplace_and_still_fire():
    seen = []
    grad = _run([("hook", transparent_hook(lambda m, gi, go: seen.append("bwd"))),
                 ("pre_hook", transparent_hook(lambda m, go: seen.append("pre")))])
    assert seen == ["pre", "bwd"] and grad is not None


def test_one_ordinary_hook_keeps_torchs_rule():
    with pytest.raises(RuntimeError, match="Output 0 of BackwardHookFunction is a view"):
        _run([("hook", transparent_hook(lambda m, gi, go: None)), ("pre_hook", lambda m, go: None)])


def _first_layer(hook_kinds):
    lin = engine.nn.Linear(3, 3)
    for kind, fn in hook_kinds:
        getattr(lin, f"register_full_backward_{kind}")(fn)
    lin(engine.randn(2, 3)).sum().backward()  # the input needs no grad: no grad_input


def test_observers_on_a_first_layer_get_no_warning():
    import warnings

    seen = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _first_layer([("hook", transparent_hook(lambda m, gi, go: seen.append(gi)))])
    assert seen == [(None,)]


def test_an_ordinary_hook_on_a_first_layer_warns_as_in_torch():
    with pytest.warns(UserWarning, match="Full backward hook is firing when gradients are computed"):
        _first_layer([("hook", lambda m, gi, go: None), ("pre_hook", transparent_hook(lambda m, go: None))])


def test_module_backward_hooks_register_no_handles_while_running():
    # RemovableHandle.next_id moves only when someone registers a hook they can remove: a tool
    # (modscope's tracer) relies on it to know that nothing new needs wrapping.
    from engine.utils.hooks import RemovableHandle

    lin = engine.nn.Linear(3, 3)
    lin.register_full_backward_hook(lambda m, gi, go: None)
    lin.register_full_backward_pre_hook(lambda m, go: None)
    before = RemovableHandle.next_id
    for _ in range(3):
        lin(engine.randn(2, 3, requires_grad=True)).sum().backward()
    assert RemovableHandle.next_id == before


def test_a_hook_on_the_identity_node_runs_after_the_module_hooks():
    order = []
    lin = engine.nn.Linear(3, 3)
    lin.register_full_backward_pre_hook(lambda m, go: order.append("module pre"))
    out = lin(engine.randn(2, 3, requires_grad=True))
    out.grad_fn.register_hook(lambda gi, go: order.append("node hook"))  # BackwardHookFunctionBackward
    out.sum().backward()
    assert out.grad_fn.name() == "BackwardHookFunctionBackward" and order == ["module pre", "node hook"]
