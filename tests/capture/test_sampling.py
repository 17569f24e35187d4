"""Sampled observation (``capture.sampling``): full and light steps on both backends (``lib``),
the hooks really removed on light steps, the loss seen without ``log``, breakpoints on a light
step, the flags, the diff's marking and old traces."""

from __future__ import annotations

import math
import warnings

import pytest

import modscope
from modscope.capture.control import Controller
from modscope.capture.sampling import ENV_VARIABLE, BackwardWatch, DetailPolicy
from modscope.events.schema import EventError, validate
from tests.modscope.models import nested_model

warnings.filterwarnings("ignore", message="Full backward hook is firing")


def hook_count(model) -> int:
    """Every module hook the model holds (forward pre/post, full backward pre/post)."""
    return sum(len(m._forward_pre_hooks) + len(m._forward_hooks) + len(m._backward_pre_hooks)
               + len(m._backward_hooks) for m in model.modules())


def train(lib, model, tr, steps: int, *, nan_at: int | None = None, scale_at: int | None = None,
          seen: list | None = None) -> list[float]:
    """SGD steps; ``seen`` gets the hooks the model holds during each step's forward."""
    opt = lib.optim.SGD(model.parameters(), lr=0.01)
    lib.manual_seed(1)
    x = lib.randn(3, 4)
    losses = []
    for step in range(steps):
        if step == nan_at:
            with lib.no_grad():
                model.blk.b.weight[0, 0] = float("nan")
        if seen is not None:
            seen.append(hook_count(model))
        loss = model(x).pow(2).mean() * (1e6 if step == scale_at else 1.0)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def step_events(tr) -> list[dict]:
    return [e for e in tr.events if e["kind"] == "step"]


def test_full_steps_are_the_first_every_nth_and_light_ones_carry_only_their_step_event(lib):
    model = nested_model(lib)
    with modscope.trace(model, every=3, first=2) as tr:
        losses = train(lib, model, tr, 8)
    steps = step_events(tr)
    assert [e["detail"] for e in steps] == ["full", "full", "light", "full", "light", "light", "full", "light"]
    assert [e.get("why") for e in steps][:4] == ["first steps", "first steps", None, "every 3"]
    module_steps = {e["step"] for e in tr.events if e["kind"] in ("forward_pre", "forward", "backward")}
    assert module_steps == {0, 1, 3, 6}
    assert {e["step"] for e in tr.events if e["kind"] == "params"} == {0, 1, 3, 6}
    for e in steps:  # every step: the loss backward started from, its time, the global gradient norm
        validate(e)
        assert e["loss"] == pytest.approx(losses[e["step"]], rel=1e-6)
        assert e["grad_norm"] > 0 and e["nonfinite"] is False and e["dur_ns"] > 0
    assert tr.counts()["full"] == 4 and tr.counts()["light"] == 4


def test_a_light_steps_gradient_norm_is_the_global_norm_clip_grad_norm_measures(lib):
    model = nested_model(lib)
    with modscope.trace(model, every=100, first=0) as tr:
        train(lib, model, tr, 2)  # step 0 is full (0 % 100 == 0), step 1 light
        expected = math.sqrt(sum(float((p.grad * p.grad).sum()) for p in model.parameters()))
    assert step_events(tr)[1]["detail"] == "light"
    assert step_events(tr)[1]["grad_norm"] == pytest.approx(expected, rel=1e-5)


def test_a_full_steps_gradient_norm_comes_from_its_parameter_statistics_and_is_the_same(lib):
    """On a full step the global norm is summed from the ``params`` event's own passes over the
    gradients; a NaN there leaves it to the light step's search, which says so."""
    model = nested_model(lib)
    with modscope.trace(model) as tr:
        train(lib, model, tr, 1)
        expected = math.sqrt(sum(float((p.grad * p.grad).sum()) for p in model.parameters()))
        train(lib, model, tr, 2, nan_at=1)
    steps = step_events(tr)
    assert [e["detail"] for e in steps] == ["full"] * 3
    assert steps[0]["grad_norm"] == pytest.approx(expected, rel=1e-5) and steps[0]["nonfinite"] is False
    assert steps[2]["grad_norm"] is None and steps[2]["nonfinite"] is True


def test_light_steps_remove_the_module_hooks_and_full_steps_put_them_back(lib):
    model = nested_model(lib)
    seen: list[int] = []
    with modscope.trace(model, every=2, first=1) as tr:
        train(lib, model, tr, 5, seen=seen)
    assert seen[1] == seen[3] == 0  # light: no hook at all (removed, not returning early)
    assert seen[0] > 0 and seen[2] == seen[0] and seen[4] == seen[0]
    assert hook_count(model) == 0  # and none left after the trace


def test_a_light_step_under_a_global_trace_leaves_no_global_module_hook(lib):
    hooks = lib.nn.modules.module
    names = ("_global_forward_pre_hooks", "_global_forward_hooks")
    before = [len(getattr(hooks, n)) for n in names]
    model = nested_model(lib)
    counts = []
    with modscope.trace(every=2, first=1, backend=lib.__name__) as tr:
        opt = lib.optim.SGD(model.parameters(), lr=0.01)
        for _ in range(3):
            counts.append([len(getattr(hooks, n)) for n in names])
            model(lib.randn(3, 4)).sum().backward()
            opt.step()
    assert counts[0] == [b + 1 for b in before] and counts[1] == before and counts[2] == counts[0]
    assert [e["detail"] for e in step_events(tr)] == ["full", "light", "full"]
    assert [len(getattr(hooks, n)) for n in names] == before


def test_the_loss_is_the_scalar_backward_was_called_on_and_backward_is_restored(lib):
    original, method = lib.autograd.backward, lib.Tensor.backward
    model = nested_model(lib)
    with modscope.trace(model) as tr:  # every step full: the loss is there too
        assert lib.autograd.backward is not original and lib.Tensor.backward is not method
        losses = train(lib, model, tr, 2)
        lib.autograd.backward(model(lib.randn(3, 4)).sum())  # the function, called directly: one call
        assert tr._backward_calls == 1
    assert lib.autograd.backward is original and lib.Tensor.backward is method
    assert [e["loss"] for e in step_events(tr)] == pytest.approx(losses, rel=1e-6)
    assert not any(e["kind"] == "metric" for e in tr.events)  # no modscope.log was called


def test_a_backward_with_an_explicit_gradient_is_no_loss(lib):
    model = nested_model(lib)
    opt = lib.optim.SGD(model.parameters(), lr=0.01)
    with modscope.trace(model, every=5) as tr:
        out = model(lib.randn(3, 4))
        out.backward(lib.ones_like(out))
        opt.step()
    assert step_events(tr)[0]["loss"] is None


def test_two_traces_share_the_backward_watch_and_either_may_stop_first(lib):
    original = lib.autograd.backward
    a, b = modscope.trace(nested_model(lib)).start(), modscope.trace(nested_model(lib)).start()
    a.stop()
    assert lib.autograd.backward is not original
    b.stop()
    assert lib.autograd.backward is original
    assert not BackwardWatch._active


def test_a_nan_in_a_light_step_turns_full_detail_on_and_the_full_step_names_the_module(lib):
    model = nested_model(lib)
    paused: list[str] = []

    class Recording(Controller):
        def _pause(self, reason: str) -> None:
            paused.append(reason)

    controller = Recording()
    controller.break_nan = True
    tr = modscope.trace(model, every=50, first=1, observer=controller)  # no stats asked for
    controller.trace = tr
    with tr:
        train(lib, model, tr, 5, nan_at=2)
    steps = step_events(tr)
    assert [e["detail"] for e in steps] == ["full", "light", "light", "full", "light"]
    assert steps[2]["nonfinite"] is True and steps[2]["grad_norm"] is None
    assert steps[3]["why"].startswith("breakpoint: NaN/Inf in the gradients of step 2")
    errors = [e for e in tr.events if e["kind"] == "error"]
    assert errors[0]["step"] == 2 and errors[0]["module"] is None and "light step" in errors[0]["message"]
    located = [e for e in errors if e["step"] == 3]
    assert located and located[0]["module"] in {path for path, _ in model.named_modules()}
    assert paused[0].startswith("breakpoint: NaN/Inf in the gradients of step 2")
    assert any(f"module {located[0]['module']!r}" in r for r in paused[1:])


def test_a_light_steps_grad_norm_over_the_threshold_turns_full_detail_on_and_says_so(lib):
    model = nested_model(lib)
    paused: list[str] = []

    class Recording(Controller):
        def _pause(self, reason: str) -> None:
            paused.append(reason)

    controller = Recording()
    controller.break_grad_norm = 1e3
    tr = modscope.trace(model, every=50, first=1, observer=controller)
    controller.trace = tr
    with tr:
        train(lib, model, tr, 4, scale_at=1)
    steps = step_events(tr)
    assert [e["detail"] for e in steps] == ["full", "light", "full", "light"]
    assert steps[2]["why"].startswith("breakpoint: grad norm")
    status = [e for e in tr.events if e["kind"] == "status"]
    assert status and status[0]["step"] == 1 and "watching step 2 in full" in status[0]["reason"]


def test_full_detail_asked_for_from_the_viewer_watches_the_next_step_to_begin_in_full(lib):
    """Asked while step 1 runs: step 2 is full. (Asked between two steps, the next was set up
    at the previous one's end already: the one after it is full.)"""
    model = nested_model(lib)
    controller = Controller()
    tr = modscope.trace(model, every=50, first=1, observer=controller)
    controller.trace = tr
    asked = []

    def ask_once(module, args):
        if len(step_events(tr)) == 1 and not asked:  # during step 1
            asked.append(True)
            controller.handle(b'{"cmd": "full"}')

    from modscope.capture.backends import backend_for

    hooks = backend_for(model).optimizer_hooks  # the framework's optim.optimizer module
    with tr:
        handle = hooks.register_optimizer_step_pre_hook(lambda opt, a, k: ask_once(None, None))
        try:
            train(lib, model, tr, 4)
        finally:
            handle.remove()
    steps = step_events(tr)
    assert asked and [e["detail"] for e in steps] == ["full", "light", "full", "light"]
    assert steps[2]["why"] == "asked for from the viewer"


def test_bad_sampling_arguments_are_refused_with_what_is_wrong():
    with pytest.raises(ValueError, match="every must be a positive int"):
        modscope.trace(every=0)
    with pytest.raises(ValueError, match="first must be an int >= 0"):
        modscope.trace(every=5, first=-1)
    with pytest.raises(ValueError, match=ENV_VARIABLE):
        DetailPolicy.from_env("every=ten")
    assert DetailPolicy.from_env("full").every is None
    policy = DetailPolicy.from_env(DetailPolicy(7, 3).to_env())
    assert (policy.every, policy.first) == (7, 3)


def test_the_step_events_optional_fields_are_checked_when_present_and_old_step_events_load():
    old = {"v": 1, "kind": "step", "seq": 0, "t": 0, "step": 0, "optimizer": "SGD", "index": 0, "lrs": [0.1]}
    assert validate(old) is old  # a trace written before sampling
    with pytest.raises(EventError, match="'detail' must be one of full, light"):
        validate({**old, "detail": "half"})
    with pytest.raises(EventError, match="'nonfinite' must be bool"):
        validate({**old, "detail": "light", "nonfinite": 1})


def test_diff_marks_light_steps_and_compares_their_loss(lib, tmp_path):
    def run(every, seed):
        model = nested_model(lib, seed=seed)
        with modscope.trace(model, every=every, first=1) as tr:
            train(lib, model, tr, 3)
        return tr.events

    same = modscope.diff(run(2, 0), run(None, 0))
    assert same.first is None
    assert [(s.detail_a, s.detail_b) for s in same.steps] == [("full", "full"), ("light", "full"), ("full", "full")]
    other = modscope.diff(run(2, 0), run(2, 1))
    light = other.steps[1]
    assert light.detail_a == light.detail_b == "light" and light.first is not None
    assert light.first.message.startswith("loss:") or "grad norm" in light.first.message
    assert "(light)" in str(other)
