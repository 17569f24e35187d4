"""engine.profiler: the calls made inside ``profile`` and its ``record_function`` ranges, timed and
nested; the table has torch's columns; nothing stays wrapped after the block."""

from __future__ import annotations

import json

import pytest

import engine
from engine.profiler import ProfilerActivity, profile, record_function


def _run():
    x = engine.randn(20, 20)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        with record_function("block"):
            y = (x @ x).relu()
            engine.nn.functional.linear(y, x).sum()
        prof.step()
    return prof


def test_records_calls_and_ranges_nested():
    prof = _run()
    rows = {r.key: r for r in prof.key_averages()}
    assert {"block", "matmul", "relu", "linear", "sum"} <= set(rows)
    assert all(rows[k].count == 1 for k in ("block", "matmul", "relu", "linear"))
    block = rows["block"]
    inner = sum(rows[k].cpu_time_total for k in ("matmul", "relu", "linear", "sum"))
    assert block.cpu_time_total >= inner > 0  # the range holds the calls made inside it
    assert block.self_cpu_time_total == pytest.approx(block.cpu_time_total - inner, rel=1e-6, abs=1e-3)
    assert prof.step_num == 1


def test_table_has_torchs_columns_sorted():
    table = _run().key_averages().table(sort_by="cpu_time_total", row_limit=3)
    lines = table.splitlines()
    assert lines[1].split() == ["Name", "Self", "CPU", "%", "Self", "CPU", "CPU", "total", "%", "CPU", "total",
                                "CPU", "time", "avg", "#", "of", "Calls"]
    assert lines[3].split()[0] == "block" and len(lines) == 3 + 3 + 2  # head, 3 rows, rule + total
    assert lines[-1].startswith("Self CPU time total: ")
    with pytest.raises(NotImplementedError, match="sort_by='cuda_time_total'"):
        _run().key_averages().table(sort_by="cuda_time_total")


def test_chrome_trace(tmp_path):
    path = tmp_path / "trace.json"
    _run().export_chrome_trace(str(path))
    events = json.loads(path.read_text())["traceEvents"]
    assert events[0]["name"] == "block" and all(e["ph"] == "X" and e["dur"] >= 0 for e in events)


def test_nothing_stays_wrapped_and_no_profile_records_nothing():
    before = (engine.Tensor.__matmul__, engine.matmul, engine.nn.functional.linear)
    _run()
    assert (engine.Tensor.__matmul__, engine.matmul, engine.nn.functional.linear) == before
    with record_function("alone"):  # no profile open: nothing to record into, as in torch
        engine.ones(2).sum()


@pytest.mark.parametrize("kwargs, named", [({"record_shapes": True}, "record_shapes"),
                                           ({"profile_memory": True}, "profile_memory"),
                                           ({"with_stack": True}, "with_stack"),
                                           ({"schedule": lambda step: None}, "schedule"),
                                           ({"activities": [ProfilerActivity.CUDA]}, "activities")])
def test_parts_not_built_are_refused_by_name(kwargs, named):
    with pytest.raises(NotImplementedError, match=named):
        profile(**kwargs)


def test_schedule_and_tensorboard_handler_refused():
    with pytest.raises(NotImplementedError, match="schedule"):
        engine.profiler.schedule(wait=1, warmup=1, active=1)
    with pytest.raises(NotImplementedError, match="tensorboard_trace_handler"):
        engine.profiler.tensorboard_trace_handler("logs")
