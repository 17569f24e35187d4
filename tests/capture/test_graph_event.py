"""``capture.graph_event``: the ``model`` event's parameter and buffer tables (``model_tensors``)
against ``named_parameters``/``named_buffers``, and what the tracer's start leaves for the first
forward to do (a hook the user registers after ``start`` still becomes ``hook`` events), on both
backends."""

from __future__ import annotations

import modscope
from modscope.capture.graph_event import model_tensors
from modscope.events.records import dtype_name


def tangled(lib):
    """Tied weights, a module under two names, a parameter slot set to ``None``, buffers
    persistent and not, an int buffer."""
    nn = lib.nn

    class Tangled(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(4, 4)
            self.b = nn.Linear(4, 4, bias=False)
            self.b.weight = self.a.weight
            self.norm = nn.BatchNorm1d(4)
            self.again = self.norm
            self.register_buffer("scratch", lib.zeros(2), persistent=False)
            self.register_buffer("steps", lib.zeros(1, dtype=lib.int64))
            self.norm.register_buffer("cache", lib.ones(3), persistent=False)

        def forward(self, x):
            return self.again(self.b(self.a(x)))

    return Tangled()


def expected(model, prefix=""):
    params = [{"path": p, "shape": list(t.shape), "dtype": dtype_name(t.dtype), "numel": t.numel(),
               "requires_grad": t.requires_grad} for p, t in model.named_parameters(prefix=prefix)]
    transient = {f"{path}.{name}" if path else name
                 for path, mod in model.named_modules(prefix=prefix) for name in mod._non_persistent_buffers_set}
    buffers = [{"path": p, "shape": list(t.shape), "dtype": dtype_name(t.dtype), "numel": t.numel(),
                "persistent": p not in transient} for p, t in model.named_buffers(prefix=prefix)]
    return params, buffers


def test_model_tensors_list_what_named_parameters_and_named_buffers_give(lib):
    model = tangled(lib)
    model.a.weight.requires_grad_(False)
    for prefix in ("", "Tangled2"):
        params, buffers = model_tensors(list(model.named_modules(prefix=prefix)))
        assert (params, buffers) == expected(model, prefix)
    params, buffers = model_tensors(list(model.named_modules()))
    assert [p["path"] for p in params] == ["a.weight", "a.bias", "norm.weight", "norm.bias"]
    assert params[0]["requires_grad"] is False
    assert [(b["path"], b["persistent"]) for b in buffers] == [
        ("scratch", False), ("steps", True), ("norm.running_mean", True), ("norm.running_var", True),
        ("norm.num_batches_tracked", True), ("norm.cache", False)]
    assert buffers[1]["dtype"] == "int64"


def test_the_model_event_carries_them(lib):
    model = tangled(lib)
    with modscope.trace(model) as tr:
        model(lib.randn(3, 4))
    event = next(e for e in tr.events if e["kind"] == "model")
    assert (event["params"], event["buffers"]) == expected(model)


def test_a_hook_registered_after_start_is_still_seen(lib):
    """``start`` marks every module's hooks as looked at; a hook the user adds before the first
    forward moves the hook clock, so that forward wraps it."""
    model = lib.nn.Sequential(lib.nn.Linear(4, 2), lib.nn.ReLU())
    tr = modscope.trace(model).start()
    seen = []
    model[0].register_forward_hook(lambda mod, args, out: seen.append(out.shape))
    try:
        model(lib.randn(3, 4))
    finally:
        tr.stop()
    hooks = [e for e in tr.events if e["kind"] == "hook"]
    assert seen and [(h["target"], h["hook_kind"]) for h in hooks] == [("0", "forward")]
