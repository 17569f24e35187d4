"""The ``graph`` event of a model with an activation-checkpointed block, on both backends: the
nodes inside the region keep nothing for backward (their tensors are recomputed), those outside
keep theirs, and reading the graph never re-runs the block (torch unpacks a checkpointed saved
tensor by recomputing it)."""

from __future__ import annotations

import importlib
import warnings

import numpy as np
import pytest

import modscope


def capture(lib):
    return importlib.import_module(f"modscope.capture.{lib.__name__}.graph")


def model_and_calls(lib, reentrant):
    """``first`` → a checkpointed ``block`` (Linear, tanh, Linear) → ``head``; ``calls`` counts
    the block's forward calls."""
    nn, checkpoint = lib.nn, importlib.import_module(lib.__name__ + ".utils.checkpoint").checkpoint

    class WithCheckpoint(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.first, self.head = nn.Linear(4, 6), nn.Linear(6, 2)
            self.block = nn.Sequential(nn.Linear(6, 6), nn.Tanh(), nn.Linear(6, 6))

        def forward(self, x):
            return self.head(checkpoint(self.block, self.first(x), use_reentrant=reentrant))

    model, calls = WithCheckpoint(), []
    model.block.register_forward_pre_hook(lambda *a: calls.append(1))
    return model, calls


def inputs(lib):
    return lib.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))


@pytest.mark.parametrize("reentrant", [False, True], ids=["non-reentrant", "reentrant"])
def test_the_region_keeps_nothing_and_reading_the_graph_recomputes_nothing(lib, reentrant):
    model, calls = model_and_calls(lib, reentrant)
    out = model(inputs(lib))
    fields = capture(lib).graph_event_fields(out, dict(model.named_parameters()))
    assert len(calls) == 1  # the forward only: reading saved tensors did not recompute
    addmms = sorted((n for n in fields["nodes"] if n["op"] == "AddmmBackward0"), key=lambda n: n["seq"])
    keeps = [bool(n["saved"]) for n in addmms]
    if reentrant:  # first, head: one CheckpointFunctionBackward node stands for the block
        assert keeps == [True, True]
    else:  # first, block.0, block.2, head: the block's keep nothing until backward recomputes them
        assert keeps == [True, False, False, True]
    assert all(n["saved_bytes"] == 0 for n in addmms if not n["saved"])
    out.sum().backward()
    assert len(calls) == 2  # the recomputation, in backward


def test_a_trace_with_the_graph_records_the_recomputation_once(lib):
    model, calls = model_and_calls(lib, False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with modscope.trace(model) as tr:
            model(inputs(lib)).sum().backward()
    block_forwards = [e for e in tr.firing_order() if e == ("forward_pre", "block")]
    assert len(calls) == 2 and len(block_forwards) == 2
