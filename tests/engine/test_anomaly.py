"""Anomaly detection (``engine.autograd.detect_anomaly``/``set_detect_anomaly``): the switches,
the forward stacks kept on nodes, the warning naming the failing node, the NaN check and the
in-place error's hint, against torch's where torch is importable."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import engine

TORCH_SUFFIX = " (Triggered internally at"  # torch's C++ warnings end with where they were raised


@pytest.fixture(autouse=True)
def anomaly_off():
    """Every test starts and ends with anomaly detection off (it is process-wide)."""
    engine.set_anomaly_enabled(False)
    yield
    engine.set_anomaly_enabled(False)


def backward_outcome(lib, build, anomaly: bool | None, check_nan: bool = True):
    """Build a graph (inside the anomaly context when ``anomaly`` is True, before it when None)
    and run backward under anomaly detection (unless ``anomaly`` is False): the error message
    and the warnings' messages, torch's C++ suffix cut off."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        if anomaly is None:
            loss = build(lib)
        ctx = lib.autograd.set_detect_anomaly(anomaly is not False, check_nan=check_nan)
        with ctx:
            if anomaly is not None:
                loss = build(lib)
            try:
                loss.backward()
                error = None
            except RuntimeError as exc:
                error = str(exc).replace("torch.", "engine.")
    messages = [str(w.message).split(TORCH_SUFFIX)[0] for w in seen if "invalid value encountered" not in str(w.message)]
    return error, messages


def negative_sqrt(lib):
    x = lib.tensor([-1.0, 4.0], requires_grad=True)
    return x.sqrt().sum()  # the line the forward stack must end at


def modified_tanh(lib):
    x = lib.tensor([0.5, -0.5, 1.0], requires_grad=True)
    y = x.tanh()
    y.mul_(2.0)
    return y.sum()


def test_switches_and_context_managers_restore_what_was_set():
    assert not engine.is_anomaly_enabled() and engine.is_anomaly_check_nan_enabled()
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        ctx = engine.autograd.detect_anomaly(check_nan=False)
    assert not engine.is_anomaly_enabled()  # only on entering
    with ctx:
        assert engine.is_anomaly_enabled() and not engine.is_anomaly_check_nan_enabled()
    assert not engine.is_anomaly_enabled() and engine.is_anomaly_check_nan_enabled()
    engine.autograd.set_detect_anomaly(True)  # as a function: on for good
    assert engine.is_anomaly_enabled()
    with engine.autograd.set_detect_anomaly(False):
        assert not engine.is_anomaly_enabled()
    assert engine.is_anomaly_enabled()


def test_nodes_keep_their_forward_stack_only_under_anomaly_detection():
    x = engine.randn(2, requires_grad=True)
    assert x.exp().grad_fn._metadata is None
    with engine.autograd.set_detect_anomaly(True):
        y = x.exp()
    stack = y.grad_fn.metadata["traceback_"]
    assert "y = x.exp()" in stack[-1] and "test_anomaly.py" in stack[-1]  # no engine frames after it


def test_a_nan_gradient_names_its_node_and_where_forward_made_it():
    error, messages = backward_outcome(engine, negative_sqrt, anomaly=True)
    assert error == "Function 'SqrtBackward0' returned nan values in its 0th output."
    assert len(messages) == 1
    assert messages[0].startswith("Error detected in SqrtBackward0. Traceback of forward call that caused the error:\n")
    assert messages[0].rstrip().endswith("return x.sqrt().sum()  # the line the forward stack must end at")


def test_without_the_nan_check_or_outside_anomaly_detection_nan_passes():
    assert backward_outcome(engine, negative_sqrt, anomaly=True, check_nan=False) == (None, [])
    assert backward_outcome(engine, negative_sqrt, anomaly=False) == (None, [])


def test_a_node_made_before_detection_was_on_has_no_forward_stack_to_show():
    error, messages = backward_outcome(engine, negative_sqrt, anomaly=None)
    assert error == "Function 'SqrtBackward0' returned nan values in its 0th output."
    assert messages == ["Error detected in SqrtBackward0. No forward pass information available. Enable detect "
                        "anomaly during forward pass for more information."]


def test_the_in_place_error_hint_depends_on_the_mode():
    off, _ = backward_outcome(engine, modified_tanh, anomaly=False)
    assert off.endswith("Hint: enable anomaly detection to find the operation that failed to compute its "
                        "gradient, with engine.autograd.set_detect_anomaly(True, check_nan=False).")
    on, messages = backward_outcome(engine, modified_tanh, anomaly=True)
    assert on.endswith("Hint: the backtrace further above shows the operation that failed to compute its "
                       "gradient. The variable in question was changed in there or anywhere later. Good luck!")
    assert messages[0].startswith("Error detected in TanhBackward0.")


def test_an_error_in_a_custom_backward_is_shown_with_its_forward_and_propagates():
    class Fails(engine.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            raise ValueError("custom backward failed")

    x = engine.randn(3, requires_grad=True)
    with warnings.catch_warnings(record=True) as seen, engine.autograd.set_detect_anomaly(True):
        warnings.simplefilter("always")
        y = Fails.apply(x).sum()
        with pytest.raises(ValueError, match="custom backward failed"):
            y.backward()
    assert [str(w.message).splitlines()[0] for w in seen] == [
        "Error detected in FailsBackward. Traceback of forward call that caused the error:"]


def test_a_nan_from_a_tensor_hook_is_caught_at_the_next_node():
    x = engine.tensor([1.0, 2.0], requires_grad=True)
    with warnings.catch_warnings(), engine.autograd.set_detect_anomaly(True):
        warnings.simplefilter("ignore")
        y = x * 2
        y.register_hook(lambda g: g * float("nan"))
        with pytest.raises(RuntimeError, match="Function 'MulBackward0' returned nan values in its 0th output."):
            y.sum().backward()


@pytest.mark.parametrize("case", [negative_sqrt, modified_tanh], ids=["nan", "in_place"])
@pytest.mark.parametrize("anomaly", [True, False, None], ids=["inside", "off", "before"])
def test_errors_and_warnings_match_torch(torch, case, anomaly):
    ours = backward_outcome(engine, case, anomaly)
    theirs = backward_outcome(torch, case, anomaly)
    assert ours[0] == theirs[0]
    # the messages' first lines, and the last line of each forward stack (where the op was called)
    assert [m.splitlines()[0] for m in ours[1]] == [m.splitlines()[0] for m in theirs[1]]
    assert [m.rstrip().splitlines()[-1] for m in ours[1]] == [m.rstrip().splitlines()[-1] for m in theirs[1]]


def test_anomaly_detection_changes_no_gradient():
    x = engine.tensor(np.linspace(0.1, 2.0, 6, dtype=np.float32).reshape(2, 3), requires_grad=True)
    (x.sqrt() * x.exp()).sum().backward()
    plain = x.grad.numpy().copy()
    x.grad = None
    with engine.autograd.set_detect_anomaly(True):
        (x.sqrt() * x.exp()).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), plain)
