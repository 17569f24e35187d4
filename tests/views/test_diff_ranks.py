"""``modscope.diff`` of two ranks of one run: only what data parallelism keeps equal counts (the
structure and each step's parameters, fingerprints first); activations, module gradients and
buffers, which ranks keep apart by design, do not."""

from __future__ import annotations

import pytest

import modscope
from modscope.events.schema import make


def _rank(rank: int, *, bias_fp: dict[int, int] | None = None, norm_noise: float = 0.0, with_fp: bool = True,
          output: float = 0.0) -> list[dict]:
    """Three steps of a two-parameter model as rank ``rank`` of 2 records them. ``bias_fp``:
    step -> the bias fingerprint (a part from step on); ``output``: this rank's forward output
    mean (its own data); the running-mean buffer differs per rank."""
    origin = {"rank": rank, "local_rank": rank, "world_size": 2, "restart": 0}
    seq = iter(range(10_000))
    events = [make("session", next(seq), 0, 0, schema=1, engine_version="2", modscope_version="0", pid=1,
                   started="x", argv=[], framework="torch", **origin),
              make("model", next(seq), 0, 0, model="M", modules=[
                  {"path": "", "cls": "M", "extra_repr": "", "training": True, "children": ["fc"], "aliases": []},
                  {"path": "fc", "cls": "Linear", "extra_repr": "", "training": True, "children": [], "aliases": []}],
                   params=[{"path": "fc.weight", "shape": [2, 2], "dtype": "float32", "numel": 4, "requires_grad": True},
                           {"path": "fc.bias", "shape": [2], "dtype": "float32", "numel": 2, "requires_grad": True}],
                   buffers=[{"path": "fc.running", "shape": [2], "dtype": "float32", "numel": 2, "persistent": True}],
                   **origin)]
    for step in range(3):
        summary = {"shape": [4, 2], "dtype": "float32", "mean": output, "std": 1.0, "min": -1.0, "max": 1.0,
                   "absmax": 1.0, "zeros": 0.0, "nan": 0, "inf": 0}
        events.append(make("forward_pre", next(seq), 0, step, path="fc", call=0, inputs=[], **origin))
        events.append(make("forward", next(seq), 0, step, path="fc", call=0, outputs=[summary], dur_ns=1, **origin))
        items = []
        for path, norm, fp in (("fc.weight", 1.5, 11 + step), ("fc.bias", 0.5 + norm_noise * step, 22 + step)):
            if path == "fc.bias" and bias_fp and step in bias_fp:
                fp = bias_fp[step]
            item = {"path": path, "norm": norm, "grad_norm": 0.1, "update_ratio": 0.01, "mean": 0.0, "std": 1.0,
                    "nan": 0, "inf": 0}
            if with_fp:
                item["fp"] = fp
            items.append(item)
        items.append({"path": "fc.running", "norm": 1.0 + rank, "grad_norm": None, "update_ratio": None,
                      "mean": 0.0, "std": 1.0, "nan": 0, "inf": 0})
        events.append(make("params", next(seq), 0, step, items=items, **origin))
    events.append(make("end", next(seq), 0, 2, status="ok", dropped=0, **origin))
    return events


def test_healthy_ranks_have_no_difference_though_their_data_differs():
    result = modscope.diff(_rank(0, output=0.3), _rank(1, output=-0.2))
    assert result.first is None and result.exit_code == 0
    assert any("ranks 0 and 1 of one run" in note for note in result.notes)
    # the same events compared as two runs: the outputs (each rank's own data) and the buffer differ
    assert modscope.diff(_rank(0, output=0.3), _rank(1, output=-0.2), ranks=False).first is not None


def test_the_first_step_and_parameter_whose_fingerprints_part_is_named():
    result = modscope.diff(_rank(0), _rank(1, bias_fp={1: 99, 2: 98}, norm_noise=1e-7))
    first = result.first
    assert (first.step_a, first.path) == (1, "fc")
    assert first.message.startswith("fc.bias is not the same on both ranks (fingerprints 0000000000000017 vs 0000000000000063; "
                                    "norms differ by rel ")
    assert result.exit_code == 1


def test_without_fingerprints_ranks_are_compared_by_their_statistics():
    assert modscope.diff(_rank(0, with_fp=False), _rank(1, with_fp=False, norm_noise=1e-7)).first is None
    parted = modscope.diff(_rank(0, with_fp=False), _rank(1, with_fp=False, norm_noise=0.1)).first
    assert (parted.step_a, parted.message.split(":")[0]) == (1, "fc.bias norm")


@pytest.mark.parametrize("other", [0, None])
def test_the_rank_mode_is_chosen_only_for_different_ranks_of_one_world(other):
    b = _rank(0, output=-0.2) if other == 0 else [{k: v for k, v in e.items() if k != "rank"} for e in _rank(1)]
    result = modscope.diff(_rank(0, output=0.3), b)
    assert not any("of one run" in note for note in result.notes)
