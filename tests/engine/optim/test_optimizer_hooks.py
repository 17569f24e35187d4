"""Optimizer step hooks: global and per-instance, pre and post, torch's firing order, argument
rewriting, removal, and user subclasses that override ``step``."""

from __future__ import annotations

import importlib

import engine
import engine.optim as eoptim
from engine.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook
from engine.utils.hooks import RemovableHandle


def opt_with_grad(lib, cls_name="SGD", **kw):
    p = lib.tensor([1.0, 2.0], requires_grad=True)
    p.grad = lib.ones(2)
    return getattr(lib.optim, cls_name)([p], lr=0.1, **kw), p


def record_order(lib):
    mod = importlib.import_module(lib.__name__ + ".optim.optimizer")
    calls = []
    opt, _ = opt_with_grad(lib)
    handles = [
        mod.register_optimizer_step_pre_hook(lambda o, a, k: calls.append(("global-pre", len(a), sorted(k)))),
        mod.register_optimizer_step_post_hook(lambda o, a, k: calls.append(("global-post", len(a), sorted(k)))),
        opt.register_step_pre_hook(lambda o, a, k: calls.append(("pre-1", a[0] is o))),
        opt.register_step_pre_hook(lambda o, a, k: calls.append(("pre-2", a[0] is o))),
        opt.register_step_post_hook(lambda o, a, k: calls.append(("post-1", a[0] is o))),
        opt.register_step_post_hook(lambda o, a, k: calls.append(("post-2", a[0] is o))),
    ]
    try:
        opt.step()
        opt.step(closure=None)
        handles[2].remove()
        handles[4].remove()
        calls.append("removed")
        opt.step()
    finally:
        for h in handles:
            h.remove()
    opt.step()  # all removed: nothing recorded
    return calls


def test_hook_order_and_removal_match_torch(torch):
    assert record_order(engine) == record_order(torch)


def test_hook_order_without_torch():
    step = [("global-pre", 1, []), ("pre-1", True), ("pre-2", True), ("post-1", True), ("post-2", True),
            ("global-post", 1, [])]
    with_kwargs = [("global-pre", 1, ["closure"]), *step[1:5], ("global-post", 1, ["closure"])]
    after_removal = [("global-pre", 1, []), ("pre-2", True), ("post-2", True), ("global-post", 1, [])]
    assert record_order(engine) == [*step, *with_kwargs, "removed", *after_removal]


def test_handles_are_removable_handles_and_work_as_context_managers():
    opt, _ = opt_with_grad(engine)
    calls = []
    with opt.register_step_pre_hook(lambda *a: calls.append("pre")) as h:
        assert isinstance(h, RemovableHandle)
        opt.step()
    opt.step()
    with register_optimizer_step_pre_hook(lambda *a: calls.append("global")):
        opt.step()
    opt.step()
    h.remove()  # removing twice is a no-op
    assert calls == ["pre", "global"]


def test_a_pre_hook_can_replace_args_and_kwargs():
    opt, p = opt_with_grad(engine)
    seen = []

    def closure():
        seen.append("closure ran")
        return engine.tensor(5.0)

    def inject(o, args, kwargs):
        return args, {"closure": closure}

    opt.register_step_pre_hook(inject)
    opt.register_step_post_hook(lambda o, a, k: seen.append(sorted(k)))
    loss = opt.step()
    assert loss.item() == 5.0 and seen == ["closure ran", ["closure"]]


def test_global_hooks_see_every_optimizer_kind():
    names = []
    handle = register_optimizer_step_post_hook(lambda o, a, k: names.append(type(o).__name__))
    try:
        for cls_name in ("SGD", "Adam", "AdamW", "RMSprop"):
            opt_with_grad(engine, cls_name)[0].step()
    finally:
        handle.remove()
    assert names == ["SGD", "Adam", "AdamW", "RMSprop"]


class HalvingSGD(eoptim.SGD):
    """A user optimizer overriding step and calling super().step()."""

    def step(self, closure=None):
        for group in self.param_groups:
            group["lr"] /= 2
        return super().step(closure)


class SignDescent(eoptim.Optimizer):
    """A user optimizer written from scratch."""

    def __init__(self, params, lr=0.1):
        super().__init__(params, {"lr": lr})

    @engine.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p -= group["lr"] * p.grad.sign()


class Plain(eoptim.SGD):
    """A subclass that does not override step."""


def test_user_subclasses_that_override_step_fire_the_hooks_exactly_once():
    for cls, moved in ((HalvingSGD, 0.05), (SignDescent, 0.2), (Plain, 0.1)):
        p = engine.tensor([1.0, -1.0], requires_grad=True)
        p.grad = engine.tensor([0.5, -0.5])
        opt = cls([p], lr=0.2)
        calls: list[str] = []
        opt.register_step_pre_hook(lambda o, a, k, calls=calls: calls.append("pre"))
        opt.register_step_post_hook(lambda o, a, k, calls=calls: calls.append("post"))
        handle = register_optimizer_step_pre_hook(lambda o, a, k, calls=calls: calls.append("global"))
        try:
            opt.step()
        finally:
            handle.remove()
        assert calls == ["global", "pre", "post"], cls.__name__
        assert p.tolist() == [engine.tensor(1 - moved).item(), -engine.tensor(1 - moved).item()]
    assert HalvingSGD.step.hooked and SignDescent.step.hooked


def test_hooks_fire_after_an_lr_scheduler_wrapped_step():
    opt, _ = opt_with_grad(engine)
    calls = []
    opt.register_step_post_hook(lambda o, a, k: calls.append(o.param_groups[0]["lr"]))
    sched = eoptim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    opt.step()
    sched.step()
    opt.step()
    assert calls == [0.1, 0.05] and opt._opt_called


def test_a_failing_step_still_resets_the_reentrancy_guard():
    class Broken(eoptim.SGD):
        def step(self, closure=None):
            raise ValueError("boom")

    opt = Broken([engine.zeros(1, requires_grad=True)], lr=0.1)
    calls = []
    opt.register_step_pre_hook(lambda *a: calls.append("pre"))
    for _ in range(2):
        try:
            opt.step()
        except ValueError:
            pass
    assert calls == ["pre", "pre"]
