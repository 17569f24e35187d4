"""Version counters count as torch's do, and a tensor saved for backward that was modified in
place makes backward raise torch's error (with the versions it names)."""

from __future__ import annotations

import pytest

import engine


def version(t) -> int:
    """``t._version``: an int in both (the engine's shared cell is ``_version_counter``)."""
    assert type(t._version) is int
    return t._version


def bumps(lib) -> list[int]:
    x = lib.ones(4)
    seen = [version(x)]
    x.add_(1)
    seen.append(version(x))
    x[0] = 2.0
    seen.append(version(x))
    x.view(4).mul_(2)  # a view shares its base's counter
    seen.append(version(x))
    x.data.mul_(2)  # .data does not
    seen.append(version(x))
    x.detach().add_(1)  # detach() does
    seen.append(version(x))
    y = x[1:]
    y += 1
    seen += [version(x), version(y)]
    x.zero_()
    x.fill_(3.0)
    x.copy_(lib.ones(4))
    seen.append(version(x))
    z = x + 1  # a new tensor starts at 0
    seen.append(version(z))
    return seen


def test_in_place_ops_bump_like_torch(torch):
    assert bumps(engine) == bumps(torch)
    assert bumps(engine) == [0, 1, 2, 3, 3, 4, 5, 5, 8, 0]


def test_optimizer_step_bumps_parameters_once(torch):
    for lib in (engine, torch):
        p = lib.ones(3, requires_grad=True)
        p.grad = lib.ones(3)
        before = version(p)
        lib.optim.SGD([p], lr=0.1).step()
        assert version(p) == before + 1


def failures(lib) -> dict:
    def saved_output():
        a = lib.ones(3, requires_grad=True)
        b = a.sigmoid()
        b.mul_(2)
        b.sum().backward()

    def saved_input():
        a = lib.ones(3, requires_grad=True)
        x = lib.ones(3)
        y = a * x
        x.add_(1)
        y.sum().backward()

    def saved_input_twice_through_views():
        a = lib.ones(2, 3, requires_grad=True)
        x = lib.ones(2, 3)
        y = a * x
        x[0].zero_()
        x[1, 1] = 5.0
        y.sum().backward()

    def tanh_output():
        a = lib.ones(3, requires_grad=True)
        c = (a * 2).tanh()
        c.add_(1)
        c.sum().backward()

    def matmul_input():
        a = lib.ones(2, 2, requires_grad=True)
        x = lib.ones(2, 2)
        y = a @ x
        x.mul_(3)
        y.sum().backward()

    return {f.__name__: f for f in (saved_output, saved_input, saved_input_twice_through_views, tanh_output,
                                    matmul_input)}


@pytest.mark.parametrize("case", list(failures(engine)))
def test_modified_saved_tensor_raises_torch_error(torch, case):
    with pytest.raises(RuntimeError) as want:
        failures(torch)[case]()
    with pytest.raises(RuntimeError) as got:
        failures(engine)[case]()
    assert str(got.value) == str(want.value).replace("torch.", "engine.")
    assert "is at version" in str(got.value)


def test_message_names_the_versions():
    with pytest.raises(RuntimeError) as e:
        failures(engine)["saved_input_twice_through_views"]()
    assert str(e.value).startswith(
        "one of the variables needed for gradient computation has been modified by an inplace operation: "
        "[engine.FloatTensor [2, 3]] is at version 2; expected version 0 instead. Hint: ")


def test_changes_that_autograd_does_not_need_are_fine(torch):
    for lib in (engine, torch):
        a = lib.ones(3, requires_grad=True)
        b = a * 2
        c = b.exp()  # saves its output, not b
        b.add_(1)
        x = lib.ones(3)
        d = a + x  # add saves nothing
        x.add_(1)
        e = a.pow(2)
        a.data.add_(1)  # invisible to autograd
        (c.sum() + d.sum() + e.sum()).backward()
        assert a.grad is not None


@pytest.mark.parametrize("lib_name", ["engine", "torch"])
def test_saved_version_is_a_snapshot(lib_name):
    """A value read from ``_version`` stays what it was when read (torch returns an int), while
    aliases keep sharing the counter."""
    lib = engine if lib_name == "engine" else pytest.importorskip("torch")
    x = lib.zeros(3)
    saved = x._version
    view = x[1:]
    view.add_(1)
    assert type(saved) is int and saved == 0
    assert x._version == view._version == 1
