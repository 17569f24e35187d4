"""TransformerDecoderLayer, TransformerDecoder and Transformer against torch: torch's state_dict
copied into the engine module, then outputs and gradients (input and every parameter) compared
with dropout 0, in training and evaluation mode, pre- and post-norm, batch-first or not,
unbatched, with causal/float/bool masks and key padding masks."""

from __future__ import annotations

import numpy as np
import pytest

import engine
import engine.nn as enn
import engine.nn.functional as EF

from .conftest import close

D, H, FF = 8, 2, 16

# torch and the engine both warn about these (float attn mask with bool padding mask; an encoder
# that is not batch-first cannot take torch's nested-tensor path)
pytestmark = [pytest.mark.filterwarnings("ignore:Support for mismatched key_padding_mask"),
              pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")]


def rnd(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _load(e_mod, t_mod) -> None:
    """torch's state_dict into the engine module (same keys, strictly)."""
    state = {k: engine.tensor(v.detach().numpy().copy()) for k, v in t_mod.state_dict().items()}
    e_mod.load_state_dict(state)
    assert list(e_mod.state_dict()) == list(t_mod.state_dict())


def _compare(torch, e_mod, t_mod, e_args, t_args, kwargs_pair, atol=2e-5):
    e_out = e_mod(*e_args, **kwargs_pair[0])
    t_out = t_mod(*t_args, **kwargs_pair[1])
    close(e_out, t_out, atol=atol, rtol=1e-4)
    g = rnd(*t_out.shape, seed=9)
    e_out.backward(engine.tensor(g))
    t_out.backward(torch.tensor(g))
    for e, t in zip(e_args, t_args):
        close(e.grad, t.grad, atol=atol, rtol=1e-4)
    for (en, ep), (tn, tp) in zip(e_mod.named_parameters(), t_mod.named_parameters(), strict=True):
        assert en == tn
        close(ep.grad, tp.grad, atol=atol, rtol=1e-4)


def _inputs(torch, batch_first: bool, unbatched: bool = False, t_len: int = 4, s_len: int = 5, n: int = 3):
    if unbatched:
        shapes = ((t_len, D), (s_len, D))
    elif batch_first:
        shapes = ((n, t_len, D), (n, s_len, D))
    else:
        shapes = ((t_len, n, D), (s_len, n, D))
    arrays = [rnd(*shapes[0], seed=1), rnd(*shapes[1], seed=2)]
    return ([engine.tensor(a, requires_grad=True) for a in arrays],
            [torch.tensor(a, requires_grad=True) for a in arrays])


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("training", [True, False])
def test_decoder_layer_parity(torch, norm_first, batch_first, training):
    torch.manual_seed(0)
    t_mod = torch.nn.TransformerDecoderLayer(D, H, FF, dropout=0.0, batch_first=batch_first, norm_first=norm_first)
    e_mod = enn.TransformerDecoderLayer(D, H, FF, dropout=0.0, batch_first=batch_first, norm_first=norm_first)
    _load(e_mod, t_mod)
    assert repr(e_mod) == repr(t_mod)
    e_mod.train(training)
    t_mod.train(training)
    e_in, t_in = _inputs(torch, batch_first)
    _compare(torch, e_mod, t_mod, e_in, t_in, ({}, {}))


def test_decoder_layer_masks(torch):
    torch.manual_seed(1)
    t_mod = torch.nn.TransformerDecoderLayer(D, H, FF, dropout=0.0, batch_first=True, activation="gelu")
    e_mod = enn.TransformerDecoderLayer(D, H, FF, dropout=0.0, batch_first=True, activation="gelu")
    _load(e_mod, t_mod)
    causal = rnd(4, 4)  # any float mask; the causal one below
    mem_mask = np.zeros((4, 5), bool)
    mem_mask[:, 3] = True
    tgt_pad = np.zeros((3, 4), bool)
    tgt_pad[1, 3] = True
    mem_pad = np.zeros((3, 5), bool)
    mem_pad[2, 4] = True
    for tgt_mask in (causal, None):
        kw_t = {"tgt_mask": torch.tensor(tgt_mask) if tgt_mask is not None else
                torch.nn.Transformer.generate_square_subsequent_mask(4),
                "memory_mask": torch.tensor(mem_mask), "tgt_key_padding_mask": torch.tensor(tgt_pad),
                "memory_key_padding_mask": torch.tensor(mem_pad)}
        kw_e = {"tgt_mask": engine.tensor(tgt_mask) if tgt_mask is not None else
                enn.Transformer.generate_square_subsequent_mask(4),
                "memory_mask": engine.tensor(mem_mask), "tgt_key_padding_mask": engine.tensor(tgt_pad),
                "memory_key_padding_mask": engine.tensor(mem_pad)}
        if tgt_mask is None:
            kw_t["tgt_is_causal"] = kw_e["tgt_is_causal"] = True
        e_mod.zero_grad()
        t_mod.zero_grad()
        e_in, t_in = _inputs(torch, True)
        _compare(torch, e_mod, t_mod, e_in, t_in, (kw_e, kw_t))


def test_decoder_layer_unbatched_and_callable_activation(torch):
    torch.manual_seed(2)
    t_mod = torch.nn.TransformerDecoderLayer(D, H, FF, dropout=0.0, activation=torch.nn.functional.silu,
                                             norm_first=True, bias=False)
    e_mod = enn.TransformerDecoderLayer(D, H, FF, dropout=0.0, activation=EF.silu, norm_first=True, bias=False)
    _load(e_mod, t_mod)
    e_in, t_in = _inputs(torch, False, unbatched=True)
    _compare(torch, e_mod, t_mod, e_in, t_in, ({}, {}))


def test_decoder_stack_parity(torch):
    torch.manual_seed(3)
    t_layer = torch.nn.TransformerDecoderLayer(D, H, FF, dropout=0.0)
    t_mod = torch.nn.TransformerDecoder(t_layer, 2, norm=torch.nn.LayerNorm(D))
    e_mod = enn.TransformerDecoder(enn.TransformerDecoderLayer(D, H, FF, dropout=0.0), 2, norm=enn.LayerNorm(D))
    _load(e_mod, t_mod)
    assert repr(e_mod) == repr(t_mod)
    e_in, t_in = _inputs(torch, False)
    kw = ({"tgt_mask": enn.Transformer.generate_square_subsequent_mask(4)},
          {"tgt_mask": torch.nn.Transformer.generate_square_subsequent_mask(4)})
    _compare(torch, e_mod, t_mod, e_in, t_in, kw)


def test_transformer_parity(torch):
    torch.manual_seed(4)
    kw = {"d_model": D, "nhead": H, "num_encoder_layers": 2, "num_decoder_layers": 1, "dim_feedforward": FF,
          "dropout": 0.0, "batch_first": True}
    t_mod = torch.nn.Transformer(**kw)
    e_mod = enn.Transformer(**kw)
    _load(e_mod, t_mod)
    assert repr(e_mod) == repr(t_mod)
    src = rnd(3, 5, D, seed=5)
    tgt = rnd(3, 4, D, seed=6)
    e_args = [engine.tensor(src, requires_grad=True), engine.tensor(tgt, requires_grad=True)]
    t_args = [torch.tensor(src, requires_grad=True), torch.tensor(tgt, requires_grad=True)]
    masks = ({"tgt_mask": enn.Transformer.generate_square_subsequent_mask(4)},
             {"tgt_mask": torch.nn.Transformer.generate_square_subsequent_mask(4)})
    _compare(torch, e_mod, t_mod, e_args, t_args, masks, atol=5e-5)


def test_transformer_init_is_xavier():
    """Weight matrices start Xavier-uniform: within ±sqrt(6 / (fan_in + fan_out))."""
    engine.manual_seed(0)
    model = enn.Transformer(d_model=D, nhead=H, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=FF)
    for name, p in model.named_parameters():
        if p.dim() > 1:
            bound = np.sqrt(6.0 / (p.shape[0] + p.shape[1]))
            values = p.detach().numpy()
            assert np.abs(values).max() <= bound, name
            assert np.abs(values).max() > 0.5 * bound, name  # spread over the range, not left at a default
        elif name.endswith("norm1.weight"):
            assert np.all(p.detach().numpy() == 1)


def test_square_subsequent_mask(torch):
    close(enn.Transformer.generate_square_subsequent_mask(5), torch.nn.Transformer.generate_square_subsequent_mask(5))
    close(enn.Transformer.generate_square_subsequent_mask(3, dtype=engine.float64),
          torch.nn.Transformer.generate_square_subsequent_mask(3, dtype=torch.float64))


def _same_error(torch, efn, tfn):
    with pytest.raises(Exception) as t_err:
        tfn()
    with pytest.raises(type(t_err.value)) as e_err:
        efn()
    assert str(e_err.value) == str(t_err.value)


def test_errors(torch):
    _same_error(torch, lambda: enn.TransformerDecoderLayer(D, H, activation="tanh"),
                lambda: torch.nn.TransformerDecoderLayer(D, H, activation="tanh"))
    kw = {"d_model": D, "nhead": H, "num_encoder_layers": 1, "num_decoder_layers": 1, "dim_feedforward": FF}
    e_mod, t_mod = enn.Transformer(**kw), torch.nn.Transformer(**kw)
    _same_error(torch, lambda: e_mod(engine.randn(5, 3, D), engine.randn(4, 2, D)),
                lambda: t_mod(torch.randn(5, 3, D), torch.randn(4, 2, D)))
    _same_error(torch, lambda: e_mod(engine.randn(5, 3, D), engine.randn(4, 3, D + 1)),
                lambda: t_mod(torch.randn(5, 3, D), torch.randn(4, 3, D + 1)))
