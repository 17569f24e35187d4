"""A diff of a sampled update ratio (a tensor of more than 65,536 values: its ``params`` item
says ``update_sampled``) is approximate, and every view of the diff says so with ``≈``: the
plain data (``approx_a``/``approx_b``), the first divergence's message, the report's headline,
module table and steps table, and ``modscope diff``'s output. Exact numbers stay unmarked."""

from __future__ import annotations

import json

from modscope.cli import main
from modscope.views.diff import diff
from tests.views.test_diff import clone, find, make

SAMPLED = 45_000  # the number of values an update was measured on (the item's update_sampled)


def item(events: list[dict], path: str, step: int = 0) -> dict:
    return next(i for i in find(events, "params", step=step)["items"] if i["path"] == path)


def sampled(steps: int = 2, path: str = "fc1.weight") -> list[dict]:
    """``make``'s trace with ``path``'s update ratio measured on a sample at every step."""
    events = make(steps=steps)
    for step in range(steps):
        item(events, path, step)["update_sampled"] = SAMPLED
    return events


def test_a_sampled_update_ratios_difference_is_marked_approximate():
    a = sampled()
    b = clone(a)
    item(b, "fc1.weight")["update_ratio"] *= 1.5
    d = diff(a, b)
    n = d.first.number
    assert (d.first.path, n.what, n.approx_a, n.approx_b, n.approx) == ("fc1", "fc1.weight update_ratio", True,
                                                                         True, True)
    assert d.first.message == "fc1.weight update_ratio: ≈0.01 vs ≈0.015 (rel ≈3.33e-01)"
    plain = json.loads(json.dumps(d.to_dict()))
    number = plain["steps"][0]["params"]["fc1.weight"]["update_ratio"]
    assert (number["approx_a"], number["approx_b"]) == (True, True)
    assert plain["steps"][0]["max_approx"] is True
    # the parameter's other numbers are exact: not marked
    assert not any(m.approx for k, m in d.steps[0].params["fc1.weight"].items() if k != "update_ratio")
    report = str(d)
    assert "≈3.33e-01" in report  # the Params cell of fc1 and the first difference
    assert "≈0.01 vs ≈0.015" in report


def test_an_exact_difference_beside_a_sampled_tensor_is_not_marked():
    a = sampled()
    b = clone(a)
    item(b, "fc2.bias")["update_ratio"] *= 1.5
    d = diff(a, b)
    assert d.first.message == "fc2.bias update_ratio: 0.04 vs 0.06 (rel 3.33e-01)"
    assert not d.first.number.approx and not d.steps[0].max_approx
    assert d.steps[0].params["fc1.weight"]["update_ratio"].approx  # compared, equal, still an estimate
    assert "≈" not in str(d).split("\n")[0]


def test_one_side_sampled_marks_that_side_and_the_difference():
    """A's trace from before sampling (every ratio exact), B's sampled: B's value is the estimate."""
    a = make()
    b = sampled()
    item(b, "fc1.weight")["update_ratio"] *= 1.01
    d = diff(a, b)
    n = d.first.number
    assert (n.approx_a, n.approx_b) == (False, True)
    assert d.first.message == "fc1.weight update_ratio: 0.01 vs ≈0.0101 (rel ≈9.90e-03)"


def test_the_headline_and_the_steps_table_mark_an_approximate_largest_difference():
    a = sampled(steps=3)
    b = clone(a)
    item(b, "fc1.weight", step=1)["update_ratio"] *= 1.0005  # below rtol 1e-3: the largest, no divergence
    d = diff(a, b)
    assert not d.diverged
    assert str(d).replace("\n", " ").startswith("✔ no difference beyond rtol 0.001: 3 step pairs compared; largest relative "
                             "difference ≈5.00e-04 (step 1, fc1: fc1.weight update_ratio)")
    for step in (0, 2):
        item(b, "fc1.weight", step=step)["update_ratio"] *= 2
    d = diff(a, b)
    table = str(d)[str(d).index("Steps that differ"):]
    # steps 0 and 2: the first difference's "(rel ≈5.00e-01)" and the Largest rel cell
    assert table.count("≈5.00e-01") == 4 and table.count("(rel ≈5.00e-01)") == 2


def test_modscope_diff_prints_the_marks(tmp_path, capsys):
    a = sampled()
    b = clone(a)
    item(b, "fc1.weight")["update_ratio"] *= 1.5
    for name, events in (("a.jsonl", a), ("b.jsonl", b)):
        (tmp_path / name).write_text("".join(json.dumps(e) + "\n" for e in events))
    assert main(["diff", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")]) == 1
    out = capsys.readouterr().out
    assert out.startswith("✖ diverged at step 0 in module fc1: fc1.weight update_ratio: ≈0.01 vs ≈0.015 "
                          "(rel ≈3.33e-01)")


def values_sampled(steps: int = 2, path: str = "fc1.weight") -> list[dict]:
    """``sampled``'s trace with ``path``'s norm and NaN/Inf counts taken on the sample too
    (``stats_sampled``: the default for a large tensor since issue 31)."""
    events = sampled(steps, path)
    for step in range(steps):
        item(events, path, step)["stats_sampled"] = SAMPLED
    return events


def test_a_sampled_norm_and_its_nan_count_are_marked_approximate():
    a = values_sampled()
    b = clone(a)
    item(b, "fc1.weight")["norm"] *= 1.5
    d = diff(a, b)
    n = d.first.number
    assert (n.what, n.approx_a, n.approx_b) == ("fc1.weight norm", True, True)
    assert d.first.message.startswith("fc1.weight norm: ≈") and "(rel ≈3.33e-01)" in d.first.message
    numbers = d.steps[0].params["fc1.weight"]
    assert numbers["nan"].approx and numbers["inf"].approx and not numbers["grad_norm"].approx  # gradients: exact
    assert not any(m.approx for m in d.steps[0].params["fc2.bias"].values())
    b = clone(a)
    item(b, "fc1.weight")["nan"] = 2
    d = diff(a, b)
    assert d.first.message == "fc1.weight nan: ≈0 vs ≈2 (rel ≈1.00e+00)"  # the sample's counts


def test_an_unsampled_norm_beside_a_sampled_update_stays_plain():
    """``update_sampled`` without ``stats_sampled`` (``exact_stats=True``, or a trace from before):
    the norm is exact, unmarked."""
    a = sampled()
    b = clone(a)
    item(b, "fc1.weight")["norm"] *= 1.5
    d = diff(a, b)
    assert d.first.number.what == "fc1.weight norm" and not d.first.number.approx
    assert "≈" not in d.first.message
