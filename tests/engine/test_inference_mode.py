"""``inference_mode`` with torch's semantics: the mode flags, inference tensors, and torch's
errors when they meet autograd outside the mode."""

from __future__ import annotations

import pytest

import engine

SAVED_ERROR = ("Inference tensors cannot be saved for backward. Please do not use Tensors created in inference "
               "mode in computation tracked by autograd. To work around this, you can make a clone to get a "
               "normal tensor and use it in autograd, or use `engine.no_grad()` instead of "
               "`engine.inference_mode()`.")
INPLACE_ERROR = ("Inplace update to inference tensor outside InferenceMode is not allowed.You can make a clone "
                 "to get a normal tensor before doing inplace update.See https://github.com/pytorch/rfcs/pull/17 "
                 "for more details.")
REQUIRES_GRAD_ERROR = "Setting requires_grad=True on inference tensor outside InferenceMode is not allowed."


def message(exc: BaseException) -> str:
    return str(exc).replace("torch.", "engine.")


def flags(lib):
    """What the mode and its tensors look like, on either library."""
    w = lib.ones(3, requires_grad=True)
    out = []
    with lib.inference_mode():
        x = lib.ones(3) * 2
        y = w * 2
        out += [lib.is_inference_mode_enabled(), lib.is_grad_enabled(), x.is_inference(), y.requires_grad,
                y.is_inference(), w.is_inference(), w.view(3).is_inference(), x.view(3).is_inference()]
        with lib.inference_mode(False):
            z = w * 2
            out += [lib.is_inference_mode_enabled(), lib.is_grad_enabled(), z.requires_grad, z.is_inference()]
        with lib.no_grad():
            out += [lib.is_inference_mode_enabled(), (w * 2).is_inference()]
        with lib.enable_grad():
            out += [lib.is_inference_mode_enabled(), lib.is_grad_enabled()]
    out += [lib.is_inference_mode_enabled(), lib.is_grad_enabled(), x.is_inference(), lib.is_inference(x),
            x.detach().is_inference(), x.clone().is_inference(), x[1:].is_inference()]
    with lib.no_grad():
        out += [lib.is_inference_mode_enabled(), (w * 2).is_inference()]
    return out


def test_mode_flags_and_inference_tensors_match_torch(torch):
    assert flags(engine) == flags(torch)


def test_expected_flags():
    got = flags(engine)
    assert got[:8] == [True, False, True, False, True, False, False, True]
    assert got[-9:] == [False, True, True, True, True, False, True, False, False]


@pytest.mark.parametrize("name", ["engine", "torch"])
def test_decorator_with_and_without_parentheses(name):
    lib = engine if name == "engine" else pytest.importorskip("torch")

    @lib.inference_mode()
    def f(a):
        return a * 2, lib.is_inference_mode_enabled()

    @lib.inference_mode
    def g(a):
        return a * 2

    @lib.inference_mode(False)
    def h(a):
        return lib.is_inference_mode_enabled()

    w = lib.ones(2, requires_grad=True)
    out, enabled = f(w)
    assert enabled and out.is_inference() and not out.requires_grad
    assert g(w).is_inference()
    with lib.inference_mode():
        assert h(w) is False
    assert not lib.is_inference_mode_enabled() and lib.is_grad_enabled()


def test_mode_is_restored_when_the_body_raises():
    with pytest.raises(ValueError, match="boom"):
        with engine.inference_mode():
            raise ValueError("boom")
    assert not engine.is_inference_mode_enabled() and engine.is_grad_enabled()
    assert engine.autograd.is_inference_mode_enabled is engine.is_inference_mode_enabled


def test_clone_of_the_context_manager():
    ctx = engine.inference_mode(False).clone()
    assert isinstance(ctx, engine.inference_mode) and ctx.mode is False


def cases(lib):
    w = lib.ones(3, requires_grad=True)
    with lib.inference_mode():
        x = lib.ones(3) * 2
    return {
        "mul saves x": lambda: w * x,
        "matmul saves x": lambda: w @ x,
        "add_ in place": lambda: x.add_(1),
        "zero_ of a view": lambda: x[1:].zero_(),
        "setitem": lambda: x.__setitem__(0, 1.0),
        "requires_grad_": lambda: x.requires_grad_(),
        "requires_grad =": lambda: setattr(x, "requires_grad", True),
    }


@pytest.mark.parametrize("case", list(cases(engine)))
def test_errors_outside_the_mode_match_torch(torch, case):
    with pytest.raises(RuntimeError) as want:
        cases(torch)[case]()
    with pytest.raises(RuntimeError) as got:
        cases(engine)[case]()
    assert message(got.value) == message(want.value)


def test_error_messages():
    c = cases(engine)
    with pytest.raises(RuntimeError) as e:
        c["mul saves x"]()
    assert str(e.value) == SAVED_ERROR
    with pytest.raises(RuntimeError) as e:
        c["add_ in place"]()
    assert str(e.value) == INPLACE_ERROR
    with pytest.raises(RuntimeError) as e:
        c["requires_grad_"]()
    assert str(e.value) == REQUIRES_GRAD_ERROR


def test_what_stays_allowed(torch):
    """Ops that save no inference tensor, clones, in-place updates inside the mode, and an
    inference tensor added into a normal one, all work on both sides with the same numbers."""
    for lib in (engine, torch):
        w = lib.ones(3, requires_grad=True)
        with lib.inference_mode():
            x = lib.ones(3) * 2
            x.add_(1)  # inside the mode: allowed
        y = w + x  # add saves nothing
        z = (w * x.clone()).sum()  # a clone is a normal tensor
        z.backward()
        assert y.requires_grad and w.grad.tolist() == [3.0, 3.0, 3.0]
        n = lib.ones(3)
        n.add_(x)
        assert n.tolist() == [4.0, 4.0, 4.0]
        assert x.requires_grad_(False) is x
        with lib.no_grad():
            (w * x).sum()  # no graph: nothing is saved


def test_custom_function_refuses_to_save_an_inference_tensor():
    class Mul(engine.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a * b

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            return g * b, g * a

    w = engine.ones(3, requires_grad=True)
    with engine.inference_mode():
        x = engine.ones(3)
    with pytest.raises(RuntimeError) as e:
        Mul.apply(w, x)
    assert str(e.value) == SAVED_ERROR


def test_model_forward_in_inference_mode(torch):
    """The typical use: evaluation of a module; outputs are inference tensors without a graph,
    and the same module trains afterwards."""
    lin = engine.nn.Linear(4, 2)
    x = engine.randn(5, 4)
    with engine.inference_mode():
        y = lin(x)
    assert y.is_inference() and y.grad_fn is None and not y.requires_grad
    loss = lin(x).sum()
    loss.backward()
    assert lin.weight.grad is not None and not lin.weight.is_inference()
