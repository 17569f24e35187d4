"""``engine.utils.checkpoint`` against torch 2.13: gradients, RNG replay, warnings and errors,
the order module hooks fire in (the recomputation runs forward hooks inside backward), and
``modscope.trace``'s firing order of a checkpointed model under both frameworks."""

from __future__ import annotations

import gc
import importlib
import warnings
import weakref

import numpy as np
import pytest

import engine
import engine.utils.checkpoint as eck
import modscope

MODES = [True, False]


def ck(lib):
    return importlib.import_module(lib.__name__ + ".utils.checkpoint")


def copy_weights(src, dst) -> None:
    """torch's weights into the engine twin (or back), by state_dict key."""
    import torch

    sd = src.state_dict()
    conv = (lambda t: engine.tensor(t.detach().numpy())) if isinstance(next(iter(sd.values())), torch.Tensor) \
        else (lambda t: torch.tensor(t.detach().numpy()))
    dst.load_state_dict({k: conv(v) for k, v in sd.items()})


def mlp_block(lib):
    nn = lib.nn

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b = nn.Linear(6, 8), nn.Linear(8, 6)

        def forward(self, x):
            return x + self.b(lib.tanh(self.a(x)))

    return Block()


def attention_block(lib, p=0.0):
    """A transformer-ish block: pre-norm self-attention by hand, then an MLP, both residual."""
    nn = lib.nn

    class Attn(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(8), nn.LayerNorm(8)
            self.qkv, self.proj = nn.Linear(8, 24), nn.Linear(8, 8)
            self.mlp = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 8), nn.Dropout(p))

        def forward(self, x):
            q, k, v = self.qkv(self.ln1(x)).split(8, dim=-1)
            att = (q @ k.transpose(-2, -1) / 8 ** 0.5).softmax(-1)
            x = x + self.proj(att @ v)
            return x + self.mlp(self.ln2(x))

    return Attn()


class Net:
    """A model with a checkpointed block between two plain layers."""

    @staticmethod
    def build(lib, block, reentrant, **ck_kw):
        nn = lib.nn
        checkpoint = ck(lib).checkpoint

        class Model(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.pre, self.blk, self.post = nn.Linear(6 if block is mlp_block else 8, block_width(block)), \
                    block(lib), nn.Linear(block_width(block), 1)

            def forward(self, x):
                return self.post(checkpoint(self.blk, self.pre(x), use_reentrant=reentrant, **ck_kw))

        return Model()


def block_width(block) -> int:
    return 6 if block is mlp_block else 8


def inputs(shape, lib, seed=0):
    return lib.tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32), requires_grad=True)


def run_twins(torch, block, reentrant, shape):
    """Loss, input grad and parameter grads of the engine model and its torch twin."""
    out = {}
    em = Net.build(engine, block, reentrant)
    tm = Net.build(torch, block, reentrant)
    copy_weights(tm, em)
    for lib, m in ((engine, em), (torch, tm)):
        x = inputs(shape, lib)
        loss = (m(x) ** 2).mean()
        loss.backward()
        out[lib.__name__] = (loss.item(), x.grad.numpy(), {k: p.grad.numpy() for k, p in m.named_parameters()})
    return out["engine"], out["torch"]


def assert_same_grads(e, t, tol=1e-5) -> None:
    assert e[0] == pytest.approx(t[0], rel=tol, abs=tol)
    np.testing.assert_allclose(e[1], t[1], rtol=tol, atol=tol)
    assert e[2].keys() == t[2].keys()
    for k in e[2]:
        np.testing.assert_allclose(e[2][k], t[2][k], rtol=tol, atol=tol, err_msg=k)


# ---- gradients ---------------------------------------------------------------------------

@pytest.mark.parametrize("reentrant", MODES)
def test_mlp_block_gradients_match_torch(torch, reentrant):
    assert_same_grads(*run_twins(torch, mlp_block, reentrant, (4, 6)))


@pytest.mark.parametrize("reentrant", MODES)
def test_attention_block_gradients_match_torch(torch, reentrant):
    assert_same_grads(*run_twins(torch, attention_block, reentrant, (2, 5, 8)))


@pytest.mark.parametrize("reentrant", MODES)
def test_checkpointed_equals_plain_run(reentrant):
    def grads(use_ck):
        engine.manual_seed(0)
        m = attention_block(engine)
        x = inputs((2, 5, 8), engine)
        y = eck.checkpoint(m, x, use_reentrant=reentrant) if use_ck else m(x)
        y.sum().backward()
        return [x.grad.numpy()] + [p.grad.numpy() for p in m.parameters()]

    for a, b in zip(grads(True), grads(False)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def test_reentrant_output_node_is_torchs(torch):
    for lib in (engine, torch):
        x = lib.ones(2, requires_grad=True)
        y = ck(lib).checkpoint(lambda t: t * 2, x, use_reentrant=True)
        assert type(y.grad_fn).__name__ == "CheckpointFunctionBackward"


@pytest.mark.parametrize("reentrant", MODES)
def test_forward_keeps_no_intermediates(reentrant):
    """The block's activations are freed after forward; without checkpoint the graph keeps them."""
    def intermediate_alive(use_ck):
        kept = []

        def fn(x):
            h = (x * 3).tanh()
            kept.append(weakref.ref(h))
            return (h * h).sum()

        x = engine.ones(50, requires_grad=True)
        y = eck.checkpoint(fn, x, use_reentrant=reentrant) if use_ck else fn(x)
        gc.collect()
        alive = kept[0]() is not None
        y.backward()
        return alive, x.grad

    alive_ck, grad_ck = intermediate_alive(True)
    alive_plain, grad_plain = intermediate_alive(False)
    assert not alive_ck and alive_plain
    np.testing.assert_allclose(grad_ck.numpy(), grad_plain.numpy(), rtol=1e-6)


def test_nested_non_reentrant_checkpoints_match_torch(torch):
    res = {}
    for lib in (torch, engine):
        checkpoint = ck(lib).checkpoint
        x = inputs((3, 4), lib)
        w = lib.tensor(np.linspace(-1, 1, 16, dtype=np.float32).reshape(4, 4), requires_grad=True)

        def inner(h, w=w, lib=lib):
            return lib.sigmoid(h @ w)

        def outer(h, checkpoint=checkpoint, inner=inner):
            return checkpoint(inner, h.exp(), use_reentrant=False) * h

        checkpoint(outer, x, use_reentrant=False).pow(2).sum().backward()
        res[lib.__name__] = (x.grad.numpy(), w.grad.numpy())
    for a, b in zip(res["engine"], res["torch"]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_retain_graph_recomputes_each_backward_as_torch(torch):
    """A second backward through a retained graph recomputes again (the forward pre-hook fires
    twice more); without retain_graph the second backward fails as torch's does."""
    for lib in (torch, engine):
        lin, calls = lib.nn.Linear(3, 3), []
        lin.register_forward_pre_hook(lambda *a, calls=calls: calls.append(1))
        x = inputs((2, 3), lib)
        y = ck(lib).checkpoint(lin, x, use_reentrant=False).sum()
        y.backward(retain_graph=True)
        first = x.grad.numpy().copy()
        y.backward()
        np.testing.assert_allclose(x.grad.numpy(), 2 * first, rtol=1e-6)
        assert len(calls) == 3, lib.__name__
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            y.backward()


@pytest.mark.parametrize("what", ["input", "output"])
def test_in_place_change_before_backward_as_torch(torch, what):
    """Non-reentrant: an input of the region modified in place before backward is refused with
    torch's error (the recomputation would read the new value); the region's output modified in
    place is allowed (it is recomputed, not read), with torch's gradients."""
    blocks = {torch: mlp_block(torch), engine: mlp_block(engine)}
    copy_weights(blocks[torch], blocks[engine])
    got = {}
    for lib, block in blocks.items():
        a = inputs((2, 6), lib)
        x = a * 2
        y = ck(lib).checkpoint(block, x, use_reentrant=False)
        (x if what == "input" else y).mul_(3)
        try:
            y.pow(2).sum().backward()
            got[lib] = a.grad.numpy()
        except RuntimeError as e:
            got[lib] = str(e).replace(f"{lib.__name__}.", "LIB.")
    if what == "input":
        assert got[engine] == got[torch]
        assert "modified by an inplace operation" in got[engine]
    else:
        np.testing.assert_allclose(got[engine], got[torch], rtol=1e-5, atol=1e-6)


# ---- RNG ---------------------------------------------------------------------------------

@pytest.mark.parametrize("reentrant", MODES)
def test_dropout_mask_replayed_in_recomputation(reentrant):
    """Same seed, with and without checkpoint: same loss and gradients (the recomputation draws
    the forward's mask), and the RNG stream after backward is the one without checkpoint."""
    def run(use_ck):
        engine.manual_seed(3)
        m = attention_block(engine, p=0.5)
        x = inputs((2, 5, 8), engine)
        y = eck.checkpoint(m, x, use_reentrant=reentrant) if use_ck else m(x)
        loss = (y ** 2).mean()
        loss.backward()
        return [loss.detach().numpy(), x.grad.numpy()] + [p.grad.numpy() for p in m.parameters()] \
            + [engine.rand(3).numpy()]

    for a, b in zip(run(True), run(False)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("reentrant", MODES)
def test_without_preserve_rng_state_the_mask_changes(reentrant, torch):
    """``preserve_rng_state=False`` recomputes with a fresh mask: the gradient no longer
    matches the forward's mask (in torch too)."""
    for lib in (engine, torch):
        lib.manual_seed(0)
        x = lib.ones(200, requires_grad=True)
        y = ck(lib).checkpoint(lambda t, lib=lib: lib.nn.functional.dropout(t, 0.5), x,
                               use_reentrant=reentrant, preserve_rng_state=False)
        y.sum().backward()
        assert not np.array_equal((y.detach().numpy() != 0), (x.grad.numpy() != 0)), lib.__name__


# ---- warnings and errors as torch's ------------------------------------------------------

def _messages(record) -> list[str]:
    return [str(w.message) for w in record]


def test_use_reentrant_not_passed_warns_as_torch(torch):
    msgs = {}
    for lib in (engine, torch):
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            y = ck(lib).checkpoint(lambda t: t * 2, lib.ones(2, requires_grad=True))
            seq = ck(lib).checkpoint_sequential([lib.nn.Linear(2, 2), lib.nn.Linear(2, 2)], 2,
                                                lib.ones(1, 2, requires_grad=True))
        msgs[lib.__name__] = _messages(rec)
        assert type(y.grad_fn).__name__ == "CheckpointFunctionBackward"  # the reentrant default
        assert seq.shape == (1, 2)
    assert msgs["engine"] == msgs["torch"] and len(msgs["engine"]) == 2


def test_reentrant_without_input_requiring_grad_warns_as_torch(torch):
    for lib in (engine, torch):
        lin = lib.nn.Linear(2, 2)
        with pytest.warns(UserWarning, match=r"^None of the inputs have requires_grad=True. Gradients will be None$"):
            y = ck(lib).checkpoint(lin, lib.ones(1, 2), use_reentrant=True)
        assert not y.requires_grad, lib.__name__


@pytest.mark.parametrize("reentrant", MODES)
def test_autograd_grad(torch, reentrant):
    """Non-reentrant works with ``autograd.grad`` (same values as torch); reentrant refuses it."""
    res = {}
    for lib in (engine, torch):
        x = inputs((3, 2), lib)
        y = ck(lib).checkpoint(lambda t, lib=lib: lib.sin(t) * t, x, use_reentrant=reentrant).sum()
        if reentrant:
            with pytest.raises(RuntimeError, match="When use_reentrant=True, torch.utils.checkpoint is "
                                                   r"incompatible with .grad\(\) or passing an `inputs`"):
                lib.autograd.grad(y, x)
            with pytest.raises(RuntimeError, match="incompatible with .grad"):
                y.backward(inputs=[x])
            continue
        res[lib.__name__] = lib.autograd.grad(y, x)[0].numpy()
    if not reentrant:
        np.testing.assert_allclose(res["engine"], res["torch"], rtol=1e-6)


def test_kwargs_non_reentrant_and_reentrant_refusal(torch):
    res = {}
    for lib in (engine, torch):
        x = inputs((2, 2), lib)

        def fn(t, *, scale):
            return t * scale

        y = ck(lib).checkpoint(fn, x, scale=3.0, use_reentrant=False)
        y.sum().backward()
        res[lib.__name__] = x.grad.numpy()
        with pytest.raises(ValueError, match="^Unexpected keyword arguments: scale,bias$"):
            ck(lib).checkpoint(fn, x, scale=3.0, bias=1, use_reentrant=True)
        with pytest.raises(ValueError, match="^Unexpected keyword arguments: extra$"):
            ck(lib).checkpoint_sequential([fn], 1, x, use_reentrant=False, extra=1)
    np.testing.assert_array_equal(res["engine"], res["torch"])


@pytest.mark.parametrize("kw, message", [
    (dict(use_reentrant=True, debug=True), "Passing `context_fn` or `debug` is only supported when use_reentrant=False."),
    (dict(use_reentrant=True, context_fn=lambda: (None, None)),
     "Passing `context_fn` or `debug` is only supported when use_reentrant=False."),
    (dict(use_reentrant=False, determinism_check="strict"),
     "determinism_check should be one of ['default', 'none'], but got strict"),
    (dict(use_reentrant=False, debug=True, context_fn=eck.noop_context_fn.__call__),
     "debug=True is incompatible with non-default context_fn"),
])
def test_bad_options_raise_torchs_value_errors(torch, kw, message):
    for lib in (engine, torch):
        with pytest.raises(ValueError) as info:
            ck(lib).checkpoint(lambda t: t, lib.ones(1, requires_grad=True), **kw)
        assert str(info.value) == message, lib.__name__


def test_context_fn_runs_around_forward_and_recomputation(torch):
    import contextlib

    for lib in (engine, torch):
        seen = []

        @contextlib.contextmanager
        def tag(name, seen=seen):
            seen.append(name)
            yield

        x = lib.ones(2, requires_grad=True)
        y = ck(lib).checkpoint(lambda t, lib=lib: lib.exp(t), x, use_reentrant=False,
                               context_fn=lambda tag=tag: (tag("fwd"), tag("recompute")))
        y.sum().backward()
        assert seen == ["fwd", "recompute"], lib.__name__


def test_context_fn_swallowing_the_error_raises(torch):
    for lib in (engine, torch):
        def boom(t):
            raise KeyError("inside")

        with pytest.raises(RuntimeError, match="the forward context provided by context_fn suppressed an exception"):
            ck(lib).checkpoint(boom, lib.ones(1, requires_grad=True), use_reentrant=False,
                               context_fn=lambda: (contextlib_suppress(), eck.noop_context_fn()[1]))


def contextlib_suppress():
    import contextlib

    return contextlib.suppress(KeyError)


def test_nondeterministic_recomputation_raises_checkpoint_error(torch):
    """A function whose recomputation saves fewer tensors (torch's case 2) or tensors of other
    shapes (case 3) fails in backward with ``CheckpointError``, as in torch."""
    for lib in (engine, torch):
        calls = []

        def fewer(t, calls=calls, lib=lib):
            calls.append(1)
            return lib.exp(lib.sin(t)) if len(calls) == 1 else t * 2

        y = ck(lib).checkpoint(fewer, lib.ones(3, requires_grad=True), use_reentrant=False)
        with pytest.raises(ck(lib).CheckpointError, match="A different number of tensors was saved during the "
                                                          "original forward and recomputation"):
            y.sum().backward()

        shapes, other = [], lib.ones(2, requires_grad=True)

        def reshaped(t, shapes=shapes, lib=lib, other=other):
            shapes.append(1)
            return lib.exp(t if len(shapes) == 1 else other).sum()

        y = ck(lib).checkpoint(reshaped, lib.ones(3, requires_grad=True), use_reentrant=False)
        with pytest.raises(ck(lib).CheckpointError, match="Recomputed values for the following tensors have "
                                                          "different metadata"):
            y.backward()
        shapes.clear()
        y = ck(lib).checkpoint(reshaped, lib.ones(3, requires_grad=True), use_reentrant=False,
                               determinism_check="none")
        with pytest.raises(Exception) as info:  # unchecked: the op's backward meets the shapes
            y.backward()                         # (torch: RuntimeError, engine: NumPy's ValueError)
        assert not isinstance(info.value, ck(lib).CheckpointError)
        assert "3" in str(info.value) and "2" in str(info.value)


def test_debug_lists_the_operations_in_the_error():
    calls = []

    def fewer(t):
        calls.append(1)
        return engine.exp(engine.sin(t)) if len(calls) == 1 else t * 2

    y = eck.checkpoint(fewer, engine.ones(3, requires_grad=True), use_reentrant=False, debug=True)
    with pytest.raises(eck.CheckpointError, match="(?s)original forward:.*SinBackward0.*ExpBackward0.*"
                                                  "recomputation:.*MulBackward0"):
        y.sum().backward()


def test_reentrant_backward_with_no_output_requiring_grad_raises(torch):
    """Recomputation under a function that detaches: torch's 'checkpoint() is not necessary'."""
    for lib in (engine, torch):
        state = {"n": 0}

        def fn(t, state=state):
            state["n"] += 1
            return t * 2 if state["n"] == 1 else (t * 2).detach()

        x = lib.ones(2, requires_grad=True)
        y = ck(lib).checkpoint(fn, x, use_reentrant=True)
        with pytest.raises(RuntimeError, match="^none of output has requires_grad=True, this checkpoint"
                                               r"\(\) is not necessary$"):
            y.sum().backward()


def test_detach_variable_refuses_non_tuples(torch):
    for lib in (engine, torch):
        with pytest.raises(RuntimeError, match="^Only tuple of tensors is supported. Got Unsupported input type: list$"):
            ck(lib).detach_variable([lib.ones(1)])


@pytest.mark.parametrize("reentrant", MODES)
def test_checkpoint_sequential_matches_torch(torch, reentrant):
    res = {}
    tm = torch.nn.Sequential(*[m for _ in range(3) for m in (torch.nn.Linear(5, 5), torch.nn.Tanh())])
    em = engine.nn.Sequential(*[m for _ in range(3) for m in (engine.nn.Linear(5, 5), engine.nn.Tanh())])
    copy_weights(tm, em)
    for lib, m in ((engine, em), (torch, tm)):
        x = inputs((4, 5), lib)
        ck(lib).checkpoint_sequential(m, 3, x, use_reentrant=reentrant).sum().backward()
        res[lib.__name__] = [x.grad.numpy()] + [p.grad.numpy() for p in m.parameters()]
    for a, b in zip(res["engine"], res["torch"]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_import_styles():
    import engine.utils.checkpoint
    from engine.utils.checkpoint import checkpoint, checkpoint_sequential

    assert engine.utils.checkpoint.checkpoint is checkpoint is eck.checkpoint
    assert checkpoint_sequential is eck.checkpoint_sequential
    assert issubclass(eck.CheckpointError, RuntimeError)


def test_early_stop_off_runs_the_whole_recomputation(torch):
    """With ``set_checkpoint_early_stop(False)`` the recomputation runs ``fn`` to its end, so
    the block's forward hook fires in backward too (torch's behaviour)."""
    for lib in (engine, torch):
        for stop, expected in ((True, 1), (False, 2)):
            blk, calls = mlp_block(lib), []
            blk.register_forward_hook(lambda *a, calls=calls: calls.append(1))
            with ck(lib).set_checkpoint_early_stop(stop):
                y = ck(lib).checkpoint(blk, inputs((2, 6), lib), use_reentrant=False)
            y.sum().backward()
            assert len(calls) == expected, (lib.__name__, stop)


# ---- hook order: engine == torch ---------------------------------------------------------

def hook_log(lib, block, reentrant, shape):
    model = Net.build(lib, block, reentrant)
    log = []
    for name, mod in model.named_modules():
        name = name or "root"
        mod.register_forward_pre_hook(lambda m, a, n=name: log.append(("forward_pre", n)))
        mod.register_forward_hook(lambda m, a, o, n=name: log.append(("forward", n)))
        mod.register_full_backward_pre_hook(lambda m, g, n=name: log.append(("backward_pre", n)))
        mod.register_full_backward_hook(lambda m, gi, go, n=name: log.append(("backward", n)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # full backward hooks on modules whose inputs need no grad
        model(inputs(shape, lib)).sum().backward()
    return log


@pytest.mark.parametrize("reentrant", MODES)
@pytest.mark.parametrize("block, shape", [(mlp_block, (2, 6)), (attention_block, (2, 3, 8))], ids=["mlp", "attn"])
def test_hook_firing_order_matches_torch(torch, reentrant, block, shape):
    expected = hook_log(torch, block, reentrant, shape)
    got = hook_log(engine, block, reentrant, shape)
    assert got == expected
    recomputed = [e for e in got[got.index(("backward_pre", "root")):] if e[0].startswith("forward")]
    assert recomputed  # the recomputation's forward hooks fire inside backward


def traced_order(lib, reentrant, graph):
    model = Net.build(lib, mlp_block, reentrant)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with modscope.trace(model, graph=graph) as tr:
            model(inputs((2, 6), lib)).sum().backward()
    return tr.firing_order()


@pytest.mark.parametrize("reentrant, graph", [(True, True), (True, False), (False, False)])
def test_modscope_trace_firing_order_matches_torch_twin(torch, reentrant, graph):
    assert traced_order(engine, reentrant, graph) == traced_order(torch, reentrant, graph)


def test_modscope_trace_with_graph_non_reentrant_matches_torch_twin(torch):
    """Reading the graph (saved tensors included) re-runs no checkpointed block."""
    assert traced_order(engine, False, True) == traced_order(torch, False, True)


# ---- more call shapes --------------------------------------------------------------------

def _edge_run(lib, case, reentrant):
    checkpoint = ck(lib).checkpoint
    x = lib.tensor(np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3), requires_grad=True)
    w = lib.tensor(np.linspace(0.5, 1.5, 9, dtype=np.float32).reshape(3, 3), requires_grad=True)
    if case == "gradient_penalty":  # create_graph through the recomputed closures
        y = checkpoint(lambda t: lib.tanh(t @ w), x, use_reentrant=reentrant)
        (g,) = lib.autograd.grad(y.sum(), x, create_graph=True)
        (g ** 2).sum().backward()
    elif case == "tuple_output":  # one output unused
        a, _ = checkpoint(lambda t: (lib.sin(t @ w), lib.cos(t)), x, use_reentrant=reentrant)
        a.sum().backward()
    elif case == "non_tensor_args":
        y = checkpoint(lambda t, k, s: lib.sin(t @ w) * k + (s == "a"), x, 3.0, "a", use_reentrant=reentrant)
        y.sum().backward()
    elif case == "identity":
        (checkpoint(lambda t: t, x, use_reentrant=reentrant) * 2).sum().backward()
        return [x.grad.numpy()]
    return [x.grad.numpy(), w.grad.numpy()]


@pytest.mark.parametrize("case, reentrant", [
    ("gradient_penalty", False), ("tuple_output", True), ("tuple_output", False), ("non_tensor_args", True),
    ("non_tensor_args", False), ("identity", True), ("identity", False)])
def test_call_shapes_match_torch(torch, case, reentrant):
    for a, b in zip(_edge_run(engine, case, reentrant), _edge_run(torch, case, reentrant)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_under_no_grad_no_graph_is_made(torch):
    for lib in (engine, torch):
        for reentrant in MODES:
            with lib.no_grad():
                y = ck(lib).checkpoint(lambda t, lib=lib: lib.sin(t), lib.ones(2, requires_grad=True),
                                       use_reentrant=reentrant)
            assert not y.requires_grad and y.grad_fn is None
