"""``engine.futures`` (Future, collect_all, wait_all) and ``jit.fork``/``jit.wait`` against torch's:
results, callback order, errors and their words, completion from another thread, and the
DeprecationWarnings torch 2.5+ gives for every TorchScript entry point."""

from __future__ import annotations

import threading
import time
import warnings

import pytest

import engine

torch = pytest.importorskip("torch")
LIBS = [engine, torch]
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.mark.parametrize("lib", LIBS, ids=["engine", "torch"])
def test_result_then_and_done_callbacks(lib):
    fut = lib.futures.Future()
    assert not fut.done()
    calls = []
    chained = fut.then(lambda f: f.value() + 1)
    fut.add_done_callback(lambda f: calls.append(("first", f.value())))
    fut.add_done_callback(lambda f: calls.append(("second", f.wait())))
    assert not chained.done() and calls == []
    fut.set_result(5)
    assert fut.done() and fut.wait() == 5 and fut.value() == 5
    assert chained.done() and chained.wait() == 6
    assert calls == [("first", 5), ("second", 5)]
    late = []
    fut.add_done_callback(lambda f: late.append(f.value()))  # added after completion: runs at once
    assert late == [5] and fut.then(lambda f: f.value() * 3).wait() == 15
    with pytest.raises(RuntimeError, match="Attempting to mark a completed Future as complete again. Note that a "
                                           "Future can only be marked completed once."):
        fut.set_result(6)


@pytest.mark.parametrize("lib", LIBS, ids=["engine", "torch"])
def test_errors(lib):
    fut = lib.futures.Future()
    fut.set_exception(ValueError("bad"))
    assert fut.done()
    for call in (fut.wait, fut.value, fut.wait):  # raised again on every call
        with pytest.raises(ValueError, match="^bad$"):
            call()
    with pytest.raises(RuntimeError, match="^Got the following error when running the callback: ValueError: bad"):
        fut.then(lambda f: f.value()).wait()
    ok = lib.futures.Future()
    ok.set_result(1)
    with pytest.raises(RuntimeError, match="^Got the following error when running the callback: "
                                           "ZeroDivisionError: division by zero\n\nAt:\n"):
        ok.then(lambda f: 1 / 0).wait()
    ok.add_done_callback(lambda f: 1 / 0)  # logged, not raised
    with pytest.raises(AssertionError, match="3 is of type <class 'int'>, not an Exception."):
        lib.futures.Future().set_exception(3)


def test_value_before_completion_is_an_error():
    for lib in LIBS:
        with pytest.raises(RuntimeError, match="completed\\(\\) INTERNAL ASSERT FAILED"):
            lib.futures.Future().value()


def test_done_callback_error_is_printed(capfd):
    ok = engine.futures.Future()
    ok.set_result(1)
    ok.add_done_callback(lambda f: 1 / 0)
    assert "Got the following error when running the callback: ZeroDivisionError: division by zero" in \
        capfd.readouterr().err


@pytest.mark.parametrize("lib", LIBS, ids=["engine", "torch"])
def test_wait_blocks_until_another_thread_completes(lib):
    fut = lib.futures.Future()
    worker = threading.Thread(target=lambda: (time.sleep(0.05), fut.set_result("late")))
    worker.start()
    assert fut.wait() == "late"
    worker.join()


@pytest.mark.parametrize("lib", LIBS, ids=["engine", "torch"])
def test_collect_all_and_wait_all(lib):
    a, b = lib.futures.Future(), lib.futures.Future()
    joined = lib.futures.collect_all([a, b])
    a.set_result(1)
    assert not joined.done()
    b.set_result(2)
    assert joined.done() and [f.value() for f in joined.wait()] == [1, 2]
    assert lib.futures.wait_all([a, b]) == [1, 2]
    bad, good = lib.futures.Future(), lib.futures.Future()
    bad.set_exception(KeyError("k"))
    good.set_result(0)
    failed = lib.futures.collect_all([bad, good])
    assert failed.done()
    with pytest.raises(KeyError, match="'k'"):
        failed.wait()
    with pytest.raises(KeyError, match="'k'"):
        lib.futures.wait_all([bad, good])
    with pytest.raises(TypeError, match="collect_all\\(\\): incompatible function arguments"):
        lib.futures.collect_all([1])


def test_future_devices():
    for lib in LIBS:
        assert not lib.futures.Future(devices=[]).done()
        with pytest.raises(ValueError, match="Expected devices to have indices, got cpu"):
            lib.futures.Future(devices=["cpu"])
    with pytest.raises(RuntimeError, match="'cuda'"):
        engine.futures.Future(devices=["cuda"])


@pytest.mark.parametrize("lib", LIBS, ids=["engine", "torch"])
def test_fork_runs_eagerly_and_wait_gives_the_result(lib):
    def add(x, k=1):
        return x + k

    x = lib.ones(2, requires_grad=True)
    fut = lib.jit.fork(add, x, k=3)
    assert fut.done() and not isinstance(fut, lib.futures.Future)  # torch._C.Future, not futures.Future
    y = lib.jit.wait(fut)
    assert y.tolist() == [4.0, 4.0] and type(y.grad_fn).__name__ == "AddBackward0"
    assert fut.wait() is y and fut.value() is y
    assert fut.then(lambda f: f.value().sum().item()).wait() == 8.0
    y.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]
    linear = lib.nn.Linear(2, 3)
    assert tuple(lib.jit.wait(lib.jit.fork(linear, lib.ones(2))).shape) == (3,)
    assert lib.jit.Future is lib.futures.Future


@pytest.mark.parametrize("lib", LIBS, ids=["engine", "torch"])
def test_fork_and_wait_errors(lib):
    def boom():
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):  # the function runs at the fork
        lib.jit.fork(boom)
    with pytest.raises(TypeError, match="Object of type 'int' is not an instance of 'function'"):
        lib.jit.fork(5)
    with pytest.raises(TypeError, match="wait\\(\\): incompatible function arguments"):
        lib.jit.wait(5)


CALLS = {
    "fork": lambda lib: lib.jit.fork(len, "ab"),
    "wait": lambda lib: lib.jit.wait(lib.jit.fork(len, "ab")),
    "script": lambda lib: lib.jit.script(lib.nn.Identity()),
    "trace_method": lambda lib: lib.jit.trace_module(lib.nn.Identity(), {"forward": lib.ones(1)}),
    "script_method": lambda lib: lib.jit.script_method(_twice),
}


def _twice(self, x: int) -> int:
    return x * 2


@pytest.mark.parametrize("name", sorted(CALLS))
def test_deprecation_warnings_as_torch(name):
    messages = []
    for lib in LIBS:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            CALLS[name](lib)
        messages.append([(w.category, str(w.message)) for w in caught if f"`torch.jit.{name}`" in str(w.message)])
    assert set(messages[0]) == set(messages[1]) and messages[0]  # JIT-enabled torch may warn twice (inner calls)
    assert all(category is DeprecationWarning for category, _ in messages[0])


def test_interface_warns_and_takes_classes_only():
    for lib in LIBS:
        with pytest.warns(DeprecationWarning, match="`torch.jit.interface` is deprecated. Please use `torch.compile`"):
            with pytest.raises(RuntimeError, match="interface must be applied to a class"):
                lib.jit.interface(len)
