"""MultiheadAttention and F.scaled_dot_product_attention against torch: outputs, attention
weights and every gradient for each projection layout and mask kind; reprs, parameter names;
every error path."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import engine

from .rnn_helpers import check_parity, outcome, rand

L, S, N, E, HEADS = 5, 4, 3, 8, 2


def mha(**kw):
    return lambda lib: lib.nn.MultiheadAttention(E, HEADS, **kw)


def self_attn(**call_kw):
    def call(m, t):
        masks = {k: t[k] for k in ("key_padding_mask", "attn_mask") if k in t}
        return m(t["x"], t["x"], t["x"], **masks, **call_kw)

    return call


def qkv(**call_kw):
    def call(m, t):
        masks = {k: t[k] for k in ("key_padding_mask", "attn_mask") if k in t}
        return m(t["q"], t["k"], t["v"], **masks, **call_kw)

    return call


def cross(**call_kw):
    """key is value, query another tensor: torch's packed encoder-decoder projection."""
    def call(m, t):
        return m(t["q"], t["kv"], t["kv"], **call_kw)

    return call


KPM = np.zeros((N, S), bool)
KPM[0, 2:] = True
KPM[2, 3] = True
KPM_SELF = np.zeros((N, L), bool)
KPM_SELF[1, 3:] = True
CAUSAL_FLOAT = np.triu(np.full((L, L), -np.inf, np.float32), 1)
CAUSAL_BOOL = np.triu(np.ones((L, L), bool), 1)

CASES = {
    "self": (mha(), {"x": rand(L, N, E)}, self_attn()),
    "self_batch_first": (mha(batch_first=True), {"x": rand(N, L, E)}, self_attn()),
    "self_no_weights": (mha(batch_first=True), {"x": rand(N, L, E)}, self_attn(need_weights=False)),
    "per_head_weights": (mha(), {"x": rand(L, N, E)}, self_attn(average_attn_weights=False)),
    "cross_packed": (mha(), {"q": rand(L, N, E), "kv": rand(S, N, E, seed=1)}, cross()),
    "cross_packed_batch_first": (mha(batch_first=True), {"q": rand(N, L, E), "kv": rand(N, S, E, seed=1)}, cross()),
    "distinct_qkv": (mha(), {"q": rand(L, N, E), "k": rand(S, N, E, seed=1), "v": rand(S, N, E, seed=2)}, qkv()),
    "distinct_qkv_batch_first": (mha(batch_first=True), {"q": rand(N, L, E), "k": rand(N, S, E, seed=1),
                                                         "v": rand(N, S, E, seed=2)}, qkv(need_weights=False)),
    "kdim_vdim": (mha(kdim=6, vdim=5), {"q": rand(L, N, E), "k": rand(S, N, 6, seed=1), "v": rand(S, N, 5, seed=2)},
                  qkv()),
    "kdim_vdim_no_bias": (mha(kdim=6, vdim=5, bias=False),
                          {"q": rand(L, N, E), "k": rand(S, N, 6, seed=1), "v": rand(S, N, 5, seed=2)}, qkv()),
    "no_bias": (mha(bias=False), {"x": rand(L, N, E)}, self_attn()),
    "bias_kv_zero_attn": (mha(add_bias_kv=True, add_zero_attn=True),
                          {"x": rand(L, N, E), "key_padding_mask": KPM_SELF, "attn_mask": CAUSAL_FLOAT}, self_attn()),
    "bias_kv_no_weights": (mha(add_bias_kv=True), {"x": rand(L, N, E), "attn_mask": CAUSAL_BOOL},
                           self_attn(need_weights=False)),
    "unbatched": (mha(), {"x": rand(L, E)}, self_attn()),
    "unbatched_masks": (mha(), {"x": rand(L, E), "key_padding_mask": KPM_SELF[1], "attn_mask": CAUSAL_FLOAT},
                        self_attn()),
    "unbatched_3d_mask": (mha(), {"x": rand(L, E), "attn_mask": rand(HEADS, L, L, seed=3)}, self_attn()),
    "unbatched_no_weights": (mha(batch_first=True), {"x": rand(L, E), "key_padding_mask": KPM_SELF[1]},
                             self_attn(need_weights=False)),
    "kpm_bool": (mha(), {"q": rand(L, N, E), "k": rand(S, N, E, seed=1), "v": rand(S, N, E, seed=2),
                         "key_padding_mask": KPM}, qkv()),
    "kpm_float": (mha(), {"q": rand(L, N, E), "k": rand(S, N, E, seed=1), "v": rand(S, N, E, seed=2),
                          "key_padding_mask": np.where(KPM, -1e4, 0.5).astype(np.float32)}, qkv()),
    "kpm_no_weights": (mha(batch_first=True), {"x": rand(N, L, E), "key_padding_mask": KPM_SELF},
                       self_attn(need_weights=False)),
    "attn_mask_float": (mha(), {"x": rand(L, N, E), "attn_mask": CAUSAL_FLOAT}, self_attn()),
    "attn_mask_bool": (mha(), {"x": rand(L, N, E), "attn_mask": CAUSAL_BOOL}, self_attn()),
    "attn_mask_additive": (mha(), {"x": rand(L, N, E), "attn_mask": rand(L, L, seed=4)}, self_attn()),
    "attn_mask_3d": (mha(), {"x": rand(L, N, E), "attn_mask": rand(N * HEADS, L, L, seed=4)}, self_attn()),
    "attn_mask_3d_no_weights": (mha(batch_first=True), {"x": rand(N, L, E), "attn_mask": rand(N * HEADS, L, L)},
                                self_attn(need_weights=False)),
    "both_masks_bool": (mha(), {"x": rand(L, N, E), "attn_mask": CAUSAL_BOOL, "key_padding_mask": KPM_SELF},
                        self_attn()),
    "both_masks_no_weights": (mha(), {"x": rand(L, N, E), "attn_mask": CAUSAL_BOOL, "key_padding_mask": KPM_SELF},
                              self_attn(need_weights=False)),
    "causal_hint": (mha(batch_first=True), {"x": rand(N, L, E), "attn_mask": CAUSAL_FLOAT},
                    self_attn(need_weights=False, is_causal=True)),
    "causal_hint_with_weights": (mha(), {"x": rand(L, N, E), "attn_mask": CAUSAL_BOOL}, self_attn(is_causal=True)),
    "causal_hint_with_kpm": (mha(), {"x": rand(L, N, E), "attn_mask": CAUSAL_BOOL, "key_padding_mask": KPM_SELF},
                             self_attn(need_weights=False, is_causal=True)),
    "fully_masked_row_no_weights": (mha(), {"x": rand(L, N, E),
                                            "key_padding_mask": np.ones((N, L), bool) & (np.arange(N) == 0)[:, None]},
                                    self_attn(need_weights=False)),
}


@pytest.mark.parametrize("name", CASES)
def test_mha_matches_torch(torch, name):
    make, inputs, call = CASES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_parity(torch, make, inputs, call)


@pytest.mark.parametrize("name", ["self_batch_first", "self_no_weights", "kpm_no_weights", "attn_mask_3d_no_weights",
                                  "both_masks_bool", "unbatched"])
def test_mha_without_autograd_matches_torchs_fast_path(torch, name):
    make, inputs, call = CASES[name]
    check_parity(torch, make, inputs, call, backward=False)


def test_fully_masked_row_gives_nan_weights_as_torch(torch):
    kpm = np.zeros((N, L), bool)
    kpm[0] = True
    with np.errstate(invalid="ignore"):
        check_parity(torch, mha(), {"x": rand(L, N, E), "key_padding_mask": kpm}, self_attn(), backward=False)


@pytest.mark.parametrize("need_weights", [True, False])
def test_attention_dropout_in_training(torch, need_weights):
    # p = 1 drops every attention weight on both libraries: a deterministic training-mode check.
    check_parity(torch, mha(dropout=1.0), {"x": rand(L, N, E)}, self_attn(need_weights=need_weights), train=True)


def test_attention_dropout_is_random_in_training_and_off_in_eval():
    engine.manual_seed(0)
    m = engine.nn.MultiheadAttention(E, HEADS, dropout=0.5)
    x = engine.tensor(rand(L, N, E))
    a, b = m(x, x, x)[1].detach().numpy(), m(x, x, x)[1].detach().numpy()
    assert not np.allclose(a, b)
    m.eval()
    np.testing.assert_array_equal(m(x, x, x)[1].detach().numpy(), m(x, x, x)[1].detach().numpy())


@pytest.mark.parametrize("kw", [{}, {"bias": False}, {"kdim": 6, "vdim": 5}, {"add_bias_kv": True},
                                {"batch_first": True, "dropout": 0.1}])
def test_repr_and_parameters_match_torch(torch, kw):
    e, t = engine.nn.MultiheadAttention(E, HEADS, **kw), torch.nn.MultiheadAttention(E, HEADS, **kw)
    assert repr(e) == repr(t)
    assert [(n, tuple(p.shape)) for n, p in e.named_parameters()] == \
        [(n, tuple(p.shape)) for n, p in t.named_parameters()]
    assert list(e.state_dict()) == list(t.state_dict())
    assert type(e.out_proj).__name__ == "NonDynamicallyQuantizableLinear"
    for attr in ("embed_dim", "kdim", "vdim", "_qkv_same_embed_dim", "num_heads", "dropout", "batch_first",
                 "head_dim", "add_zero_attn"):
        assert getattr(e, attr) == getattr(t, attr)
    assert (e.bias_k is None) == (t.bias_k is None)


def test_default_init_xavier_weights_zero_biases():
    engine.manual_seed(0)
    m = engine.nn.MultiheadAttention(E, HEADS)
    bound = (6 / (E + 3 * E)) ** 0.5  # xavier_uniform_ on the (3E, E) packed weight
    w = m.in_proj_weight.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert not m.in_proj_bias.detach().numpy().any() and not m.out_proj.bias.detach().numpy().any()


def test_merge_masks_matches_torch(torch):
    x = rand(N, L, E)
    results = []
    for lib in (torch, engine):
        m = lib.nn.MultiheadAttention(E, HEADS, batch_first=True)
        kpm = lib.tensor(np.where(KPM_SELF, -np.inf, 0).astype(np.float32))
        mask2d = lib.tensor(CAUSAL_FLOAT)
        mask3d = lib.tensor(rand(N * HEADS, L, L))
        cases = [m.merge_masks(None, None, lib.tensor(x)), m.merge_masks(None, kpm, lib.tensor(x)),
                 m.merge_masks(mask2d, None, lib.tensor(x)), m.merge_masks(mask2d, kpm, lib.tensor(x)),
                 m.merge_masks(mask3d, kpm, lib.tensor(x))]
        results.append([(None if t is None else t.numpy(), kind) for t, kind in cases])
    for (te, tk), (ee, ek) in zip(*results):
        assert tk == ek
        assert (te is None and ee is None) or np.array_equal(te, ee)


def test_mixed_mask_types_warn_as_torch(torch):
    messages = []
    for lib in (torch, engine):
        m = lib.nn.MultiheadAttention(E, HEADS)
        x = lib.tensor(rand(L, N, E))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            m(x, x, x, key_padding_mask=lib.tensor(KPM_SELF), attn_mask=lib.tensor(CAUSAL_FLOAT))
        messages.append(sorted({str(w.message) for w in caught if "mismatched" in str(w.message)}))
    assert messages[0] == messages[1] and messages[0]


def test_graph_records_bmm_and_addmm_for_modscope():
    m = engine.nn.MultiheadAttention(E, HEADS)
    x = engine.tensor(rand(L, N, E), requires_grad=True)
    for need_weights in (True, False):
        out, _ = m(x, x, x, need_weights=need_weights)
        names, seen, stack = [], set(), [out.grad_fn]
        while stack:
            node = stack.pop()
            if node is not None and node not in seen:
                seen.add(node)
                names.append(node.name())
                stack.extend(n for n, _ in node.next_functions)
        assert names.count("BmmBackward0") == 2 and names.count("AddmmBackward0") == 2


# --- scaled_dot_product_attention ---------------------------------------------------------------

class SDPA:
    """A module-less case for check_parity: calls F.scaled_dot_product_attention."""

    def __init__(self, lib, **kw):
        self.lib, self.kw = lib, kw

    def named_parameters(self):
        return iter(())

    def train(self, mode):
        return self


SDPA_CASES = {
    "plain": {},
    "causal": {"is_causal": True},
    "bool_mask": {"attn_mask": np.tril(np.ones((L, S), bool))},
    "float_mask": {"attn_mask": rand(L, S, seed=5)},
    "scale": {"scale": 0.3},
    "fully_masked_row": {"attn_mask": np.tril(np.ones((L, S), bool), -1)},
}


@pytest.mark.parametrize("name", SDPA_CASES)
def test_sdpa_matches_torch(torch, name):
    kw = dict(SDPA_CASES[name])
    mask = kw.pop("attn_mask", None)
    inputs = {"q": rand(N, HEADS, L, 4), "k": rand(N, HEADS, S, 4, seed=1), "v": rand(N, HEADS, S, 4, seed=2)}
    if mask is not None:
        inputs["attn_mask"] = mask

    def call(m, t):
        return m.lib.nn.functional.scaled_dot_product_attention(t["q"], t["k"], t["v"], t.get("attn_mask"), **kw)

    check_parity(torch, lambda lib: SDPA(lib), inputs, call)


# --- errors ---------------------------------------------------------------------------------------

def z(lib, *shape, dtype="float32"):
    return lib.zeros(*shape, dtype=getattr(lib, dtype))


def _m(lib, **kw):
    return lib.nn.MultiheadAttention(E, HEADS, **kw)


MODULE_ERRORS = {
    "embed_dim_zero": lambda lib: lib.nn.MultiheadAttention(0, 2),
    "heads_zero": lambda lib: lib.nn.MultiheadAttention(8, 0),
    "not_divisible": lambda lib: lib.nn.MultiheadAttention(8, 3),
    "query_4d": lambda lib: _m(lib)(z(lib, 1, L, N, E), z(lib, S, N, E), z(lib, S, N, E)),
    "batched_key_2d": lambda lib: _m(lib)(z(lib, L, N, E), z(lib, S, E), z(lib, S, N, E)),
    "batched_kpm_3d": lambda lib: _m(lib)(z(lib, L, N, E), z(lib, S, N, E), z(lib, S, N, E),
                                          key_padding_mask=z(lib, N, S, 1, dtype="bool")),
    "batched_mask_4d": lambda lib: _m(lib)(z(lib, L, N, E), z(lib, S, N, E), z(lib, S, N, E),
                                           attn_mask=z(lib, 1, 1, L, S)),
    "unbatched_value_3d": lambda lib: _m(lib)(z(lib, L, E), z(lib, S, E), z(lib, S, N, E)),
    "unbatched_kpm_2d": lambda lib: _m(lib)(z(lib, L, E), z(lib, S, E), z(lib, S, E),
                                            key_padding_mask=z(lib, 1, S, dtype="bool")),
    "unbatched_mask_1d": lambda lib: _m(lib)(z(lib, L, E), z(lib, S, E), z(lib, S, E), attn_mask=z(lib, S)),
    "unbatched_mask_3d_shape": lambda lib: _m(lib)(z(lib, L, E), z(lib, S, E), z(lib, S, E),
                                                   attn_mask=z(lib, HEADS + 1, L, S)),
    "kpm_int": lambda lib: _m(lib)(z(lib, L, N, E), z(lib, S, N, E), z(lib, S, N, E),
                                   key_padding_mask=z(lib, N, S, dtype="int64")),
    "mask_int": lambda lib: _m(lib)(z(lib, L, N, E), z(lib, S, N, E), z(lib, S, N, E),
                                    attn_mask=z(lib, L, S, dtype="int64")),
    "mask_not_tensor": lambda lib: _m(lib)(z(lib, L, N, E), z(lib, S, N, E), z(lib, S, N, E),
                                           key_padding_mask=z(lib, N, S, dtype="bool"), attn_mask=[[0.0]]),
    "kpm_not_tensor": lambda lib: _m(lib)(z(lib, L, N, E), z(lib, S, N, E), z(lib, S, N, E),
                                          key_padding_mask=[[0.0]]),
    "causal_without_mask": lambda lib: _m(lib)(z(lib, L, N, E), z(lib, S, N, E), z(lib, S, N, E), is_causal=True),
    "mask_2d_shape": lambda lib: _m(lib)(z(lib, L, N, E), z(lib, S, N, E), z(lib, S, N, E), attn_mask=z(lib, L, L)),
    "mask_3d_shape": lambda lib: _m(lib)(z(lib, L, N, E), z(lib, S, N, E), z(lib, S, N, E),
                                         attn_mask=z(lib, N, L, S)),
    "kpm_batch": lambda lib: _m(lib)(z(lib, L, N, E), z(lib, S, N, E), z(lib, S, N, E),
                                     key_padding_mask=z(lib, N + 1, S, dtype="bool")),
    "kpm_length": lambda lib: _m(lib)(z(lib, L, N, E), z(lib, S, N, E), z(lib, S, N, E),
                                      key_padding_mask=z(lib, N, S + 1, dtype="bool")),
    "key_value_shapes": lambda lib: _m(lib)(z(lib, L, N, E), z(lib, S, N, E), z(lib, S + 1, N, E)),
    "separate_key_value_lengths": lambda lib: _m(lib, kdim=6, vdim=5)(z(lib, L, N, E), z(lib, S, N, 6),
                                                                      z(lib, S + 1, N, 5)),
    "separate_key_width": lambda lib: _m(lib, kdim=6, vdim=5)(z(lib, L, N, E), z(lib, S, N, 7), z(lib, S, N, 5)),
    "separate_value_width": lambda lib: _m(lib, kdim=6, vdim=5)(z(lib, L, N, E), z(lib, S, N, 6), z(lib, S, N, 4)),
}


@pytest.mark.parametrize("name", MODULE_ERRORS)
def test_module_error_same_as_torch(torch, name):
    case = MODULE_ERRORS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = outcome(lambda: case(torch))
        got = outcome(lambda: case(engine))
    assert expected is not None
    assert got == expected


@pytest.mark.parametrize(("batch_first", "shape", "expected"), [
    (False, (L, N, E + 1), "(L, N, 8) or (L, 8)"),
    (True, (N, L, E + 1), "(N, L, 8) or (L, 8)"),
    (False, (L, E + 1), "(L, N, 8) or (L, 8)"),
])
def test_embed_dim_error_is_torchs_extended_with_layer_and_shapes(torch, batch_first, shape, expected):
    def case(lib):
        x = z(lib, *shape)
        return lib.nn.MultiheadAttention(E, HEADS, batch_first=batch_first)(x, x, x)

    kind, message = outcome(lambda: case(torch))
    layer = repr(engine.nn.MultiheadAttention(E, HEADS))
    assert outcome(lambda: case(engine)) == (
        kind, f"{message}: {layer} expects query of shape {expected} but got query of shape {list(shape)}")


def _mhaf(lib, **kw):
    """F.multi_head_attention_forward on zeros, with keyword overrides."""
    args = {"query": z(lib, L, N, E), "key": z(lib, S, N, E), "value": z(lib, S, N, E), "embed_dim_to_check": E,
            "num_heads": HEADS, "in_proj_weight": z(lib, 3 * E, E), "in_proj_bias": z(lib, 3 * E), "bias_k": None,
            "bias_v": None, "add_zero_attn": False, "dropout_p": 0.0, "out_proj_weight": z(lib, E, E),
            "out_proj_bias": z(lib, E)}
    args.update({k: (v(lib) if callable(v) else v) for k, v in kw.items()})
    return lib.nn.functional.multi_head_attention_forward(**args)


FUNCTIONAL_ERRORS = {
    "embed_dim_check": {"embed_dim_to_check": E + 1},
    "heads_not_dividing": {"num_heads": 3},
    "no_in_proj_weight": {"in_proj_weight": None},
    "no_q_proj_weight": {"use_separate_proj_weight": True, "k_proj_weight": lambda lib: z(lib, E, E),
                         "v_proj_weight": lambda lib: z(lib, E, E)},
    "no_k_proj_weight": {"use_separate_proj_weight": True, "q_proj_weight": lambda lib: z(lib, E, E),
                         "v_proj_weight": lambda lib: z(lib, E, E)},
    "no_v_proj_weight": {"use_separate_proj_weight": True, "q_proj_weight": lambda lib: z(lib, E, E),
                         "k_proj_weight": lambda lib: z(lib, E, E)},
    "q_proj_shape": {"use_separate_proj_weight": True, "q_proj_weight": lambda lib: z(lib, E, E + 1),
                     "k_proj_weight": lambda lib: z(lib, E, E), "v_proj_weight": lambda lib: z(lib, E, E)},
    "q_bias_shape": {"use_separate_proj_weight": True, "q_proj_weight": lambda lib: z(lib, E, E),
                     "k_proj_weight": lambda lib: z(lib, E, E), "v_proj_weight": lambda lib: z(lib, E, E),
                     "in_proj_bias": lambda lib: z(lib, 3 * E + 3)},
    "bias_k_without_v": {"bias_k": lambda lib: z(lib, 1, 1, E)},
    "bias_v_without_k": {"bias_v": lambda lib: z(lib, 1, 1, E)},
    "bias_with_static_k": {"bias_k": lambda lib: z(lib, 1, 1, E), "bias_v": lambda lib: z(lib, 1, 1, E),
                           "static_k": lambda lib: z(lib, N * HEADS, S, E // HEADS)},
    "bias_with_static_v": {"bias_k": lambda lib: z(lib, 1, 1, E), "bias_v": lambda lib: z(lib, 1, 1, E),
                           "static_v": lambda lib: z(lib, N * HEADS, S, E // HEADS)},
    "static_k_batch": {"static_k": lambda lib: z(lib, N * HEADS + 1, S, E // HEADS)},
    "static_k_head_dim": {"static_k": lambda lib: z(lib, N * HEADS, S, E // HEADS + 1)},
    "static_v_batch": {"static_v": lambda lib: z(lib, N, S, E // HEADS)},
    "static_v_head_dim": {"static_v": lambda lib: z(lib, N * HEADS, S, 1)},
}


@pytest.mark.parametrize("name", FUNCTIONAL_ERRORS)
def test_functional_error_same_as_torch(torch, name):
    kw = FUNCTIONAL_ERRORS[name]
    expected = outcome(lambda: _mhaf(torch, **kw))
    assert expected is not None
    assert outcome(lambda: _mhaf(engine, **kw)) == expected


def test_functional_static_kv_and_separate_weights_match_torch(torch):
    rng = np.random.default_rng(3)
    arrays = {"query": rand(L, N, E), "key": rand(S, N, 6, seed=1), "value": rand(S, N, 5, seed=2),
              "q_proj_weight": rand(E, E, seed=3), "k_proj_weight": rand(E, 6, seed=4),
              "v_proj_weight": rand(E, 5, seed=5), "in_proj_bias": rand(3 * E, seed=6),
              "out_proj_weight": rand(E, E, seed=7), "out_proj_bias": rand(E, seed=8),
              "static_k": rng.standard_normal((N * HEADS, S + 1, E // HEADS)).astype(np.float32),
              "static_v": rng.standard_normal((N * HEADS, S + 1, E // HEADS)).astype(np.float32)}
    outs = []
    for lib in (torch, engine):
        t = {k: lib.tensor(v) for k, v in arrays.items()}
        out, w = lib.nn.functional.multi_head_attention_forward(
            t["query"], t["key"], t["value"], E, HEADS, None, t["in_proj_bias"], None, None, False, 0.0,
            t["out_proj_weight"], t["out_proj_bias"], training=False, use_separate_proj_weight=True,
            q_proj_weight=t["q_proj_weight"], k_proj_weight=t["k_proj_weight"], v_proj_weight=t["v_proj_weight"],
            static_k=t["static_k"], static_v=t["static_v"])
        outs.append((out.numpy(), w.numpy()))
    for e, t in zip(outs[1], outs[0]):
        np.testing.assert_allclose(e, t, atol=1e-5, rtol=1e-4)


def test_sdpa_errors(torch):
    def causal_and_mask(lib):
        q = z(lib, N, L, 4)
        return lib.nn.functional.scaled_dot_product_attention(q, q, q, attn_mask=z(lib, L, L), is_causal=True)

    assert outcome(lambda: causal_and_mask(engine)) == outcome(lambda: causal_and_mask(torch))
    q = z(engine, N, L, 4)
    with pytest.raises(NotImplementedError, match="enable_gqa"):
        engine.nn.functional.scaled_dot_product_attention(q, q, q, enable_gqa=True)
