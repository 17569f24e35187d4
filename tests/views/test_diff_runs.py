"""``modscope.diff`` on real recordings: two runs with one changed layer, two steps of one run, and
the engine against torch (same weights, same data): no divergence beyond 1e-4, and a changed
weight on one side is named as the first divergent module."""

from __future__ import annotations

import numpy as np
import pytest

import modscope
from modscope.cli import main
from modscope.testing import assert_close_traces, assert_same_firing_order
from tests.modscope.models import nested_model


def _run(lib, model, inputs, path=None, lr=0.1):
    """SGD steps of ``model`` on ``inputs`` (NumPy arrays) traced with statistics; saved to
    ``path`` when given (the diff then reads the file)."""
    opt = lib.optim.SGD(model.parameters(), lr=lr)
    with modscope.trace(model, stats=True) as tr:
        for x in inputs:
            model(lib.tensor(x)).square().mean().backward()
            opt.step()
            opt.zero_grad()
            tr.step()
    if path is not None:
        tr.save(path)
        return path
    return tr


def _inputs(steps=3, shape=(3, 4), seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(np.float32) for _ in range(steps)]


def _bump(lib, model, name, amount=0.05):
    """Scale parameter ``name`` by ``1 + amount`` (in place, without autograd)."""
    with lib.no_grad():
        dict(model.named_parameters())[name].mul_(1.0 + amount)


def test_two_runs_with_one_changed_layer(lib):
    xs = _inputs()
    a = _run(lib, nested_model(lib), xs)
    same = _run(lib, nested_model(lib), xs)
    assert not modscope.diff(a, same).diverged
    changed = nested_model(lib)
    _bump(lib, changed, "blk.b.weight")
    d = modscope.diff(a, _run(lib, changed, xs))
    assert d.diverged and (d.first.path, d.first.step_a) == ("blk.b", 0)
    assert d.first.number.category == "output"  # blk.b's first call's output, before anything else
    assert d.steps[0].modules["blk.a"].first is not None  # its second call sees blk.b's output
    assert d.steps[0].modules["blk.a"].first.what.startswith("forward call 1")
    assert_same_firing_order(a, same)


def test_two_steps_of_one_run(lib, tmp_path):
    path = _run(lib, nested_model(lib), _inputs(), tmp_path / "run.jsonl")
    d = modscope.diff(path, path, step=(1, 2))
    assert d.diverged and [(s.step_a, s.step_b) for s in d.steps] == [(1, 2)]
    assert d.first.path == "" and d.first.number.what == "forward input[0] mean"  # new data each step
    assert not d.structure and not d.graph and d.steps[0].order is None
    assert not modscope.diff(path, path, step=2).diverged


def _engine_copy(engine, build, state):
    """An engine model built by ``build`` holding torch's initial weights (``state``: NumPy arrays)."""
    em = build(engine)
    em.load_state_dict({k: engine.tensor(v.copy()) for k, v in state.items()})
    return em


def _conv_net(lib):
    nn = lib.nn
    return nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 3))


@pytest.mark.parametrize("build, shape, changed", [
    (nested_model, (3, 4), "blk.b"),
    (_conv_net, (5, 1, 8, 8), "4"),
], ids=["nested", "conv_bn"])
def test_the_engine_against_torch(torch, tmp_path, capsys, build, shape, changed):
    import engine

    xs = _inputs(shape=shape)
    tm = build(torch)
    state = {k: v.detach().numpy().copy() for k, v in tm.state_dict().items()}
    ta = _run(torch, tm, xs, tmp_path / "torch.jsonl")
    ea = _run(engine, _engine_copy(engine, build, state), xs, tmp_path / "engine.jsonl")
    assert_close_traces(ea, ta, rtol=1e-4)
    assert main(["diff", str(ea), str(ta), "--rtol", "1e-4"]) == 0
    assert capsys.readouterr().out.startswith("✔ no difference beyond rtol 0.0001: 3 step pairs compared")
    d = modscope.diff(ea, ta, rtol=1e-4)
    assert (d.a.framework, d.b.framework) == ("engine", "torch")
    assert not d.structure and not d.graph and all(s.order is None for s in d.steps)
    assert 0 < max(s.max_rel for s in d.steps) < 1e-4  # float noise, not exact equality

    em2 = _engine_copy(engine, build, state)
    _bump(engine, em2, f"{changed}.weight", 1e-2)
    d = modscope.diff(_run(engine, em2, xs, tmp_path / "engine2.jsonl"), ta, rtol=1e-4)
    assert d.diverged and (d.first.kind, d.first.path, d.first.step_a) == ("number", changed, 0)
    with pytest.raises(AssertionError, match=rf"at step 0 in module '{changed}'"):
        assert_close_traces(tmp_path / "engine2.jsonl", ta, rtol=1e-4)
    assert main(["diff", str(tmp_path / "engine2.jsonl"), str(ta), "--rtol", "1e-4"]) == 1
    assert capsys.readouterr().out.startswith(f"✖ diverged at step 0 in module {changed}: ")
