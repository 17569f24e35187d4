"""The backward observer (``capture/backward.py``, torch's backend) run on the engine: on the same
random module trees it records the same events in the same order as it does on torch.

The engine's backend does not use the observer (its full backward hooks are cheaper there and
give torch's order exactly, see ``capture/engine``); this runs it anyway, through a copy of the
engine backend, because it checks two things at once: the observer's logic does not depend on
anything torch-only, and the engine's autograd API it relies on (sequence numbers, tensor and node
hooks, ``queue_callback``, the running node, ``will_engine_execute_node``) behaves as torch's."""

from __future__ import annotations

import warnings
from functools import partial
from types import SimpleNamespace

import numpy as np
import pytest

import engine
import modscope
import modscope.capture.engine as engine_capture
from modscope.capture.backward import BackwardObserver
from modscope.testing import assert_no_hooks
from tests.modscope.random_models import build, copy_weights, random_spec

SEEDS = range(150)
VALUES = {"forward_pre": "inputs", "forward": "outputs", "backward_pre": "grad_outputs", "backward": "grad_inputs"}


@pytest.fixture
def observed_engine(monkeypatch):
    """The engine's backend with module backward seen by the observer, as on torch."""
    observed = SimpleNamespace(**{**vars(engine_capture.BACKEND), "full_backward_hooks": False,
                                  "backward_observer": partial(BackwardObserver, autograd=engine_capture.AUTOGRAD)})
    monkeypatch.setattr(engine_capture, "BACKEND", observed)


def _run(lib, model, x: np.ndarray, grad: bool) -> str | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            model(lib.tensor(x, requires_grad=grad)).sum().backward()
        except RuntimeError as exc:
            return str(exc)
    return None


def _traced(lib, model, x: np.ndarray, grad: bool, stats: bool):
    with modscope.trace(model, stats=stats) as tr:
        err = _run(lib, model, x, grad)
    assert_no_hooks(model)
    return tr, err


def _values(tr) -> list[tuple[str, str, list]]:
    return [(e["kind"], e["path"], [s and (s["shape"], s.get("mean")) for s in e[VALUES[e["kind"]]]])
            for e in tr.events if e["kind"] in VALUES]


@pytest.mark.parametrize("seed", SEEDS)
def test_the_observer_records_the_same_events_on_the_engine_as_on_torch(torch, observed_engine, seed):
    spec = random_spec(seed)
    torch.manual_seed(seed)
    theirs, ours = build(torch, spec), build(engine, spec)
    copy_weights(theirs, ours, engine)
    x = np.random.default_rng(seed).standard_normal((3, 4)).astype(np.float32)
    grad = seed % 4 != 0
    stats = seed % 5 == 0
    t_tr, t_err = _traced(torch, theirs, x, grad, stats)
    e_tr, e_err = _traced(engine, ours, x, grad, stats)
    assert (e_err is None) == (t_err is None), f"spec {spec}: {e_err!r} / {t_err!r}"
    assert e_tr.firing_order() == t_tr.firing_order(), f"spec {spec}"
    assert not [e for e in e_tr.events if e["kind"] == "error"], f"spec {spec}"
    for (kind, path, got), (_, _, want) in zip(_values(e_tr), _values(t_tr), strict=True):
        assert [g and g[0] for g in got] == [w and w[0] for w in want], f"spec {spec}: {kind} {path}"
        for g, w in zip(got, want):
            if g and g[1] is not None:
                assert g[1] == pytest.approx(w[1], rel=1e-4, abs=1e-5), f"spec {spec}: {kind} {path}"


def test_the_observed_engine_lets_a_traced_program_update_module_outputs_in_place(observed_engine):
    model = engine.nn.Sequential(engine.nn.Linear(4, 4), engine.nn.ReLU(inplace=True), engine.nn.Linear(4, 1))
    with modscope.trace(model) as tr:
        model(engine.randn(3, 4)).sum().backward()
    order = [e for e in tr.firing_order() if e[0].startswith("backward")]
    assert order == [("backward_pre", ""), ("backward", ""), ("backward_pre", "2"), ("backward", "2"),
                     ("backward_pre", "1"), ("backward", "1"), ("backward_pre", "0"), ("backward", "0")]
    assert not [n for n in _graph_names(tr) if "BackwardHook" in n]  # no identity nodes in the graph


def _graph_names(tr) -> list[str]:
    graph = next(e for e in tr.events if e["kind"] == "graph")
    return [n["op"] for n in graph["nodes"]]
