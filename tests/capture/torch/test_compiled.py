"""``torch.compile`` and tracing (``capture/compiled.py``): a model the program calls through its
compiled wrapper records no module call, and the trace says so at once (a ``CompiledModel``
error event and a warning at the script's line, naming the module and ``--eager``);
``modscope.trace(model, eager=True)`` runs the compiled code eagerly while it traces and leaves
it compiled afterwards; ``modscope run``/``record --eager`` give the script dynamo's off switches.

Real ``torch.compile`` with ``backend="eager"`` (dynamo traces and guards as always; only
inductor's C++ code generation is left out, which would take minutes of a loaded machine per test:
inductor itself runs in ``bench/bench_compile.py``)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import warnings

import pytest

import modscope
from modscope.capture.compiled import (
    EAGER_ENVIRONMENT,
    ETYPE,
    add_eager_flag,
    apply_eager_flag,
    compiled_note,
)

torch = pytest.importorskip("torch")
nn = torch.nn


def small():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))


def train(call, model, steps=2):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(4, 8)
    for _ in range(steps):
        call(x).sum().backward()
        opt.step()
        opt.zero_grad()


def compiled_events(tr):
    return [e for e in tr.events if e["kind"] == "error" and e["etype"] == ETYPE]


def test_tracing_a_model_called_through_its_compiled_wrapper_says_so_at_once():
    model = small()
    compiled = torch.compile(model, backend="eager")
    train(compiled, model, 1)  # compiled before the trace: the usual script
    with pytest.warns(UserWarning, match=r"the traced model \(Sequential\) is wrapped by torch.compile") as seen:
        tr = modscope.trace(model).start()
    assert seen[0].filename == __file__  # at the line that started the trace
    (event,) = compiled_events(tr)  # already there, before any step
    assert "skips the module hooks" in event["message"] and "--eager" in event["message"]
    assert "modscope.trace(model, eager=True)" in event["message"]
    train(compiled, model)
    tr.stop()
    assert tr.firing_order() == []  # what the issue saw: no module call at all, now with its reason


def test_eager_true_traces_the_compiled_calls_and_leaves_them_compiled():
    from torch._dynamo import eval_frame
    from torch._dynamo.utils import counters

    model = small()
    compiled = torch.compile(model, backend="eager")
    train(compiled, model, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # eager: nothing to warn about
        with modscope.trace(model, eager=True) as tr:
            train(compiled, model)
    assert compiled_events(tr) == []
    assert tr.firing_order()[:3] == [("forward_pre", ""), ("forward_pre", "0"), ("forward", "0")]
    assert eval_frame._stance.stance == "default"  # restored
    captured = dict(counters["stats"])
    train(compiled, model, 1)
    assert dict(counters["stats"]) == captured  # compiled code reused: no new capture, no recompile


def test_a_model_compiled_in_place_is_named():
    model = small()
    model.compile(backend="eager")
    note = compiled_note(model, "net")
    assert note.startswith("net (Sequential) was compiled in place (model.compile())")


def test_compiled_submodules_are_named_by_path():
    model = small()
    model.add_module("tail", torch.compile(nn.Linear(2, 2), backend="eager"))
    note = compiled_note(model, "net")
    assert note.startswith("compiled submodules: net.tail") and "--eager" in note


def test_an_uncompiled_model_says_nothing(lib):
    model = lib.nn.Sequential(lib.nn.Linear(2, 2))
    assert compiled_note(model, "m") is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with modscope.trace(model) as tr:
            model(lib.randn(1, 2))
    assert compiled_events(tr) == []


def test_without_dynamo_loaded_eager_makes_torch_compile_return_the_module():
    # A fresh process: dynamo not yet imported, so force_eager sets TORCHDYNAMO_DISABLE, which
    # torch.compile reads at each call, and the undo puts the environment back.
    code = """
import os, sys, torch
from modscope.capture.compiled import force_eager
assert "torch._dynamo.eval_frame" not in sys.modules
m = torch.nn.Linear(2, 2)
undo = force_eager()
assert torch.compile(m) is m
undo()
assert "TORCHDYNAMO_DISABLE" not in os.environ
assert type(torch.compile(m, backend="eager")).__name__ == "OptimizedModule"
print("ok")
"""
    env = {k: v for k, v in os.environ.items() if k not in EAGER_ENVIRONMENT}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.stdout == "ok\n", done.stderr


def test_the_eager_flag_puts_dynamos_off_switches_in_the_environment():
    parser = argparse.ArgumentParser()
    add_eager_flag(parser)
    env: dict[str, str] = {}
    apply_eager_flag(parser.parse_args([]), env)
    assert env == {}
    apply_eager_flag(parser.parse_args(["--eager"]), env)
    assert env == {"TORCHDYNAMO_DISABLE": "1", "TORCH_COMPILE_DISABLE": "1"}


def test_a_global_trace_names_a_compiled_wrapper_when_it_first_runs():
    # modscope run/record trace every module that runs: the wrapper itself is the new root
    model = small()
    compiled = torch.compile(model, backend="eager")
    train(compiled, model, 1)
    with pytest.warns(UserWarning, match="the traced model is torch.compile's wrapper of a Sequential"):
        with modscope.trace(backend="torch") as tr:
            train(compiled, model, 1)
    (event,) = compiled_events(tr)
    assert event["module"] == "" and "--eager" in event["message"]


def test_a_global_trace_does_not_search_for_a_wrapper_of_a_model_it_saw_called(monkeypatch):
    # The program called the root itself (a wrapper would have been the root): the garbage
    # collector's referrers (hundreds of ms in a large program, inside the loop) are not asked.
    import modscope.capture.compiled as compiled_mod

    model = small()
    compiled = torch.compile(model, backend="eager")  # dynamo loaded, and a wrapper exists
    asked = []
    monkeypatch.setattr(compiled_mod, "_wrapped", lambda module: asked.append(module) or True)
    with modscope.trace(backend="torch") as tr:
        train(model, model, 1)
    assert asked == [] and compiled_events(tr) == []
    assert compiled_note(model, "m") is not None and asked == [model]  # trace(model) still asks
    del compiled


def test_eager_full_runs_full_steps_eagerly_and_light_steps_compiled():
    from torch._dynamo import eval_frame

    model = small()
    compiled = torch.compile(model, backend="eager")
    train(compiled, model, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    stances = []
    opt.register_step_pre_hook(lambda *_: stances.append(eval_frame._stance.stance))
    x = torch.randn(4, 8)
    with modscope.trace(model, eager="full", every=3, first=1) as tr:
        for _ in range(4):
            compiled(x).sum().backward()
            opt.step()
            opt.zero_grad()
    # steps 0 and 3 full (first=1, every 3rd), 1 and 2 light
    assert stances == ["force_eager", "default", "default", "force_eager"]
    details = [e.get("detail", "full") for e in tr.events if e["kind"] == "step"]
    assert details == ["full", "light", "light", "full"]
    calls = {e["step"] for e in tr.events if e["kind"] == "forward_pre"}
    assert calls == {0, 3}  # the full steps' module calls, traced; the light ones ran compiled
    assert eval_frame._stance.stance == "default"


# --- finding a wrapper without the garbage collector's referrers (issue 31: the first step) -----

def _count_referrer_searches(monkeypatch):
    import modscope.capture.compiled as compiled_mod

    asked = []
    real = compiled_mod._wrapped
    monkeypatch.setattr(compiled_mod, "_wrapped", lambda module: asked.append(module) or real(module))
    return asked


class _Trainer:
    def __init__(self, net):
        self.net = net


def test_a_wrapper_the_script_holds_is_found_at_start_without_the_referrers(monkeypatch):
    model = small()
    trainer = _Trainer(torch.compile(model, backend="eager"))  # trainer.net: one attribute down
    train(trainer.net, model, 1)
    asked = _count_referrer_searches(monkeypatch)
    with pytest.warns(UserWarning, match=r"the traced model \(Sequential\) is wrapped by torch.compile"):
        tr = modscope.trace(model).start()
    tr.stop()
    assert asked == [] and len(compiled_events(tr)) == 1


def test_a_wrapper_out_of_the_stacks_reach_is_named_after_a_full_step_where_no_hook_fired(monkeypatch):
    model = small()
    box = {"deep": [torch.compile(model, backend="eager")]}  # two levels down: the stack search misses it
    train(box["deep"][0], model, 1)
    asked = _count_referrer_searches(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing said at the start
        tr = modscope.trace(model).start()
    assert compiled_events(tr) == [] and asked == []
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(4, 8)
    with pytest.warns(UserWarning, match=r"the traced model \(Sequential\) is wrapped by torch.compile") as seen:
        box["deep"][0](x).sum().backward()
        opt.step()  # the step ends: none of the model's hooks fired in it
    assert seen[0].filename == __file__ and asked == [model]
    (event,) = compiled_events(tr)
    assert event["step"] == 0 and "--eager" in event["message"]
    box["deep"][0](x).sum().backward()
    opt.step()
    tr.stop()
    assert asked == [model] and len(compiled_events(tr)) == 1  # searched once


def test_a_model_called_itself_never_has_its_referrers_searched(monkeypatch):
    model = small()
    hidden = {"deep": [torch.compile(model, backend="eager")]}  # dynamo loaded, a wrapper exists
    asked = _count_referrer_searches(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with modscope.trace(model) as tr:
            train(model, model, 2)
    assert asked == [] and compiled_events(tr) == []
    assert tr.firing_order()[:2] == [("forward_pre", ""), ("forward_pre", "0")]
    del hidden


def test_the_stack_search_looks_one_level_into_objects_and_containers_and_no_further():
    from modscope.capture.compiled import wrapped_in_stack

    model = small()
    wrapper = torch.compile(model, backend="eager")

    def holding(value):
        return wrapped_in_stack(model)  # ``value`` is a local of this frame

    assert holding(wrapper) and holding([wrapper]) and holding({"k": wrapper}) and holding(_Trainer(wrapper))
    del wrapper
    assert not wrapped_in_stack(torch.nn.Linear(2, 2))
    deep = [[torch.compile(model, backend="eager")]]
    assert not holding(deep)


def test_a_model_compiled_after_the_trace_started_is_traced_and_dynamo_skips_the_tracer():
    # dynamo would trace modscope's hooks into the compiled graph (graph breaks, recompiles up to
    # its limit: seconds for a 3-layer model); with modscope on its skip list each hook is a
    # graph break that runs eagerly, so the compiled calls are recorded.
    from torch._dynamo import trace_rules
    from torch._dynamo.utils import counters

    import modscope.capture.recorder as recorder_mod

    torch._dynamo.reset()  # code compiled by earlier tests, hooks off, would be reused (no hook guards)
    model = small()
    before = counters["stats"]["unique_graphs"]
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with modscope.trace(model) as tr:
            compiled = torch.compile(model, backend="eager")
            train(compiled, model, 3)
    # (without the skip list: "Dynamo does not know how to trace the builtin time.monotonic_ns")
    assert [str(w.message) for w in seen if "does not know how to trace" in str(w.message)] == []
    assert trace_rules.check_file(recorder_mod.__file__).skipped
    order = tr.firing_order()
    assert order.count(("forward_pre", "0")) == 3 and order.count(("backward", "2")) == 3
    assert compiled_events(tr) == []
    assert counters["stats"]["unique_graphs"] - before <= 3  # one graph per piece between hooks, no recompiles


def test_dynamo_imported_after_the_trace_started_skips_modscope_from_its_first_compile():
    code = """
import sys, torch, modscope
from modscope.capture import compiled
m = torch.nn.Linear(2, 2)
with modscope.trace(m) as tr:
    assert "torch._dynamo" not in sys.modules
    assert any(isinstance(f, compiled._AfterImport) for f in sys.meta_path)
    c = torch.compile(m, backend="eager")  # imports dynamo: the finder puts modscope on its skip list
    c(torch.randn(3, 2)).sum().backward()
from torch._dynamo import trace_rules
assert trace_rules.check_file(compiled.__file__).skipped
assert not any(isinstance(f, compiled._AfterImport) for f in sys.meta_path)
assert ("forward", "") in tr.firing_order()
print("ok")
"""
    env = {k: v for k, v in os.environ.items() if k not in EAGER_ENVIRONMENT}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.stdout == "ok\n", done.stderr


# --- --eager-full: eager on full steps, compiled on light ones, from the command line ---------------

def test_the_eager_full_flag_sets_the_traces_variable_and_not_dynamos_switches():
    from modscope.capture.compiled import EAGER_VARIABLE, eager_from_env

    parser = argparse.ArgumentParser()
    add_eager_flag(parser)
    env: dict[str, str] = {}
    apply_eager_flag(parser.parse_args(["--eager-full"]), env)
    assert env == {EAGER_VARIABLE: "full"}
    assert eager_from_env(env) == "full" and env == {}  # taken out: the script does not see it
    assert eager_from_env(env) is False
    with pytest.raises(SystemExit):  # one or the other
        parser.parse_args(["--eager", "--eager-full"])
    with pytest.raises(ValueError, match=r"\$MODSCOPE_EAGER='sometimes': expected 'full'"):
        eager_from_env({EAGER_VARIABLE: "sometimes"})


def test_record_refuses_a_bad_eager_variable(tmp_path):
    (tmp_path / "train.py").write_text("print('never runs')\n")
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE")}
    done = subprocess.run([sys.executable, "-m", "modscope", "record", "--trace-file", "t.jsonl", "train.py"],
                          capture_output=True, text=True, cwd=tmp_path, env={**env, "MODSCOPE_EAGER": "yes"},
                          timeout=120)
    assert done.returncode == 2 and "$MODSCOPE_EAGER='yes'" in done.stderr and "never runs" not in done.stdout


EAGER_FULL_SCRIPT = '''
import sys, torch
from torch._dynamo import eval_frame
from torch._dynamo.utils import counters
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
compiled = torch.compile(model, backend="eager")  # dynamo imported now, after the trace started
opt = torch.optim.SGD(model.parameters(), lr=0.1)
stances = []
opt.register_step_pre_hook(lambda *_: stances.append(eval_frame._stance.stance))
for _ in range(4):
    compiled(torch.randn(4, 8)).sum().backward()
    opt.step(); opt.zero_grad()
print("stances", stances, "graphs", counters["stats"]["unique_graphs"], flush=True)
'''


def test_record_eager_full_runs_full_steps_eagerly_and_compiles_on_a_light_step(tmp_path):
    # dynamo is imported by the script, after the trace started: the switch waits for it
    env = {k: v for k, v in os.environ.items()
           if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "TORCHDYNAMO_DISABLE", "TORCH_COMPILE_DISABLE")}
    (tmp_path / "train.py").write_text(EAGER_FULL_SCRIPT)
    done = subprocess.run([sys.executable, "-m", "modscope", "record", "--eager-full", "--every", "3", "--trace-file",
                           "run.jsonl", "train.py"], capture_output=True, text=True, cwd=tmp_path,
                          env={**env, "OMP_NUM_THREADS": "1"}, timeout=300)
    assert done.returncode == 0, done.stderr
    # steps 0, 1 (the first 2) and 3 (every 3rd) full and eager; step 2 light, compiled (one graph,
    # made with no module hook on)
    assert "stances ['force_eager', 'force_eager', 'default', 'force_eager'] graphs 1" in done.stdout
    tr = modscope.load_trace(tmp_path / "run.jsonl")
    assert [e for e in tr.events if e["kind"] == "error"] == []
    assert [e.get("detail") for e in tr.events if e["kind"] == "step"] == ["full", "full", "light", "full"]
    assert {e["step"] for e in tr.events if e["kind"] == "forward_pre"} == {0, 1, 3}


def test_after_import_runs_once_the_module_ran_and_not_on_a_find_spec_alone(tmp_path, monkeypatch):
    # transformers and others ask importlib.util.find_spec whether a module exists: nothing runs
    import importlib.util

    from modscope.capture.compiled import _AfterImport, after_import

    (tmp_path / "modscope_probe_mod.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    ran = []
    after_import("modscope_probe_mod", lambda: ran.append(sys.modules["modscope_probe_mod"].VALUE))
    after_import("modscope_probe_mod", lambda: ran.append("second"))  # another callback: the same finder
    assert importlib.util.find_spec("modscope_probe_mod") is not None
    assert ran == [] and sum(isinstance(f, _AfterImport) and f.name == "modscope_probe_mod" for f in sys.meta_path) == 1
    import modscope_probe_mod  # noqa: F401
    assert ran == [1, "second"]
    assert not any(isinstance(f, _AfterImport) and f.name == "modscope_probe_mod" for f in sys.meta_path)
    sys.modules.pop("modscope_probe_mod", None)
