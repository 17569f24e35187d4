"""engine.nn.utils.rnn (pad_sequence, pack_padded_sequence, pad_packed_sequence, pack_sequence,
PackedSequence) and RNN/LSTM/GRU over packed input, against torch with torch's weights copied in:
outputs, final states (each sequence's own last step), input and parameter gradients, sorted and
unsorted lengths; errors; finite-difference gradient checks without torch."""

from __future__ import annotations

import numpy as np
import pytest

import engine
from tests.gradcheck import gradcheck

ER = engine.nn.utils.rnn


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def rnd(*shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def close(e, t, atol=1e-5):
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), atol=atol, rtol=1e-4)


def _copy(em, tm):
    em.load_state_dict({k: engine.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("lengths", [[5, 3, 3, 1], [3, 5, 1, 3], "tensor"])
def test_pack_pad_roundtrip(torch, batch_first, lengths):
    lens = [2, 5, 4, 1] if lengths == "tensor" else lengths
    x = rnd(4, 5, 3) if batch_first else rnd(5, 4, 3)
    sorted_ = lens == sorted(lens, reverse=True)
    res = {}
    for lib, R in ((engine, ER), (torch, torch.nn.utils.rnn)):
        xt = lib.tensor(x, requires_grad=True)
        ln = lib.tensor(lens) if lengths == "tensor" else lens
        p = R.pack_padded_sequence(xt, ln, batch_first=batch_first, enforce_sorted=sorted_)
        pad, out_lens = R.pad_packed_sequence(p, batch_first=batch_first, padding_value=-2.0, total_length=7)
        pad.backward(lib.tensor(rnd(*pad.shape, seed=3)))
        res[lib.__name__] = (p, pad, out_lens, xt.grad)
    (ep, epad, el, eg), (tp, tpad, tl, tg) = res["engine"], res["torch"]
    close(ep.data, tp.data)
    for a, b in zip(ep[1:], tp[1:]):
        assert (a is None and b is None) or a.tolist() == b.tolist()
    assert ep.data.grad_fn.name() == tp.data.grad_fn.name() == "PackPaddedSequenceBackward0"
    assert type(epad.grad_fn).__name__ == type(tpad.grad_fn).__name__
    close(epad, tpad)
    assert el.tolist() == tl.tolist() and el.dtype == engine.int64
    close(eg, tg)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("side", ["right", "left"])
def test_pad_sequence(torch, batch_first, side):
    arrays = [rnd(2, 3), rnd(4, 3, seed=1), rnd(1, 3, seed=2)]
    outs = []
    for lib, R in ((engine, ER), (torch, torch.nn.utils.rnn)):
        seqs = [lib.tensor(a, requires_grad=True) for a in arrays]
        out = R.pad_sequence(seqs, batch_first=batch_first, padding_value=0.5, padding_side=side)
        out.backward(lib.tensor(rnd(*out.shape, seed=4)))
        outs.append((out, [s.grad for s in seqs]))
    (eo, eg), (to, tg) = outs
    close(eo, to)
    assert type(eo.grad_fn).__name__ == type(to.grad_fn).__name__ == "CopySlices"
    for a, b in zip(eg, tg):
        close(a, b)


def test_pack_sequence_and_unpack(torch):
    arrays = [rnd(2, 3), rnd(4, 3, seed=1), rnd(3, 3, seed=2)]
    ep = ER.pack_sequence([engine.tensor(a) for a in arrays], enforce_sorted=False)
    tp = torch.nn.utils.rnn.pack_sequence([torch.tensor(a) for a in arrays], enforce_sorted=False)
    close(ep.data, tp.data)
    assert ep.batch_sizes.tolist() == tp.batch_sizes.tolist()
    assert ep.sorted_indices.tolist() == tp.sorted_indices.tolist()
    assert ep.unsorted_indices.tolist() == tp.unsorted_indices.tolist()
    for a, b in zip(ER.unpack_sequence(ep), arrays):
        np.testing.assert_array_equal(a.numpy(), b)
    assert type(ep).__name__ == "PackedSequence" and ep._fields == tp._fields
    assert ep.double().data.dtype == engine.float64 and ep.to(engine.float64).data.dtype == engine.float64
    assert ep.to(engine.float32) is ep and ep.is_cuda is False
    rebuilt = ER.PackedSequence(ep.data, ep.batch_sizes, ep.sorted_indices)
    assert rebuilt.unsorted_indices.tolist() == tp.unsorted_indices.tolist()


def test_sort_is_stable_on_ties(torch):
    lens = [2, 3, 2, 3, 1]
    x = rnd(3, 5, 2)
    ep = ER.pack_padded_sequence(engine.tensor(x), lens, enforce_sorted=False)
    tp = torch.nn.utils.rnn.pack_padded_sequence(torch.tensor(x), lens, enforce_sorted=False)
    assert ep.sorted_indices.tolist() == tp.sorted_indices.tolist()
    close(ep.data, tp.data)


CONFIGS = [
    ("LSTM", dict(num_layers=2)), ("LSTM", dict(bidirectional=True, batch_first=True)),
    ("LSTM", dict(num_layers=2, bidirectional=True, proj_size=2)),
    ("GRU", dict(num_layers=2, bidirectional=True)), ("GRU", dict(batch_first=True)),
    ("RNN", dict(nonlinearity="relu", bidirectional=True)), ("RNN", dict(num_layers=2, batch_first=True)),
]


@pytest.mark.parametrize("mode,kw", CONFIGS)
@pytest.mark.parametrize("lens", [[5, 3, 3, 1], [3, 5, 1, 3]])
@pytest.mark.parametrize("with_hx", [False, True])
def test_rnn_packed_parity(torch, mode, kw, lens, with_hx):
    tm = getattr(torch.nn, mode)(3, 4, **kw)
    em = getattr(engine.nn, mode)(3, 4, **kw)
    _copy(em, tm)
    bf = kw.get("batch_first", False)
    x = rnd(4, 5, 3) if bf else rnd(5, 4, 3)
    nd = 2 if kw.get("bidirectional") else 1
    h_shape = (kw.get("num_layers", 1) * nd, 4, kw.get("proj_size") or 4)
    c_shape = h_shape[:2] + (4,)
    sorted_ = lens == sorted(lens, reverse=True)
    res = {}
    for lib, m, R in ((engine, em, ER), (torch, tm, torch.nn.utils.rnn)):
        xt = lib.tensor(x, requires_grad=True)
        hx = None
        if with_hx:
            h0 = lib.tensor(rnd(*h_shape, seed=7), requires_grad=True)
            hx = (h0, lib.tensor(rnd(*c_shape, seed=8), requires_grad=True)) if mode == "LSTM" else h0
        out, hn = m(R.pack_padded_sequence(xt, lens, batch_first=bf, enforce_sorted=sorted_), hx)
        assert isinstance(out, R.PackedSequence)
        pad, _ = R.pad_packed_sequence(out, batch_first=bf)
        hs = hn if isinstance(hn, tuple) else (hn,)
        loss = (pad * lib.tensor(rnd(*pad.shape, seed=5))).sum()
        for k, h in enumerate(hs):
            loss = loss + (h * lib.tensor(rnd(*h.shape, seed=10 + k))).sum()
        loss.backward()
        h0s = () if hx is None else (hx if isinstance(hx, tuple) else (hx,))
        res[lib.__name__] = (out, hs, xt.grad, [h.grad for h in h0s], m)
    (eo, eh, eg, eh0, _), (to, th, tg, th0, _) = res["engine"], res["torch"]
    close(eo.data, to.data)
    assert eo.batch_sizes.tolist() == to.batch_sizes.tolist()
    assert eo.data.grad_fn.name() == to.data.grad_fn.name()
    for a, b in zip(eh, th):
        close(a, b)
        assert a.grad_fn.name() == b.grad_fn.name()
    close(eg, tg, atol=1e-4)
    for a, b in zip(eh0, th0):
        close(a, b, atol=1e-4)
    for name, p in tm.named_parameters():
        close(em.get_parameter(name).grad, p.grad, atol=1e-4)


def test_final_state_is_each_sequences_last_step():
    engine.manual_seed(0)
    gru = engine.nn.GRU(2, 3)
    seqs = [engine.randn(4, 2), engine.randn(2, 2)]
    _, h = gru(ER.pack_sequence(seqs))
    for k, s in enumerate(seqs):
        _, hk = gru(s.unsqueeze(1))
        np.testing.assert_allclose(h[0, k].detach().numpy(), hk[0, 0].detach().numpy(), atol=1e-6)


def _error(lib, fn):
    try:
        fn(lib)
    except Exception as err:  # noqa: BLE001 - the test compares type and message
        return type(err).__name__, str(err)
    raise AssertionError("no error")


@pytest.mark.parametrize("case", [
    lambda L: L.nn.utils.rnn.pack_padded_sequence(L.zeros(4, 3, 2), [2, 4, 1]),
    lambda L: L.nn.utils.rnn.pack_padded_sequence(L.zeros(4, 3, 2), [2, 0, 1], enforce_sorted=False),
    lambda L: L.nn.utils.rnn.pack_padded_sequence(L.zeros(4, 3, 2), [4, 1]),
    lambda L: L.nn.utils.rnn.pad_packed_sequence(
        L.nn.utils.rnn.pack_padded_sequence(L.zeros(4, 3, 2), [4, 2, 1]), total_length=2),
    lambda L: L.nn.utils.rnn.pad_sequence([L.zeros(2, 3), L.zeros(4, 3)], padding_side="up"),
    lambda L: L.nn.utils.rnn.pad_sequence([L.zeros(2, 3), L.zeros(4, 2)]),
    lambda L: L.nn.utils.rnn.pad_sequence([]),
    lambda L: L.nn.GRU(2, 4)(L.nn.utils.rnn.pack_padded_sequence(L.zeros(4, 3, 2), [4, 2, 1]), L.zeros(1, 2, 4)),
])
def test_errors(torch, case):
    assert _error(engine, case) == _error(torch, case)


def test_packed_size_errors_name_the_mismatch():
    # torch reaches its kernels here ("got an incorrect number of RNN parameters", "mat1 and mat2
    # shapes cannot be multiplied"); the engine checks the sizes first, as for padded input
    packed = ER.pack_padded_sequence(engine.zeros(4, 3, 2), [4, 2, 1])
    with pytest.raises(RuntimeError, match=r"Expected hidden\[1\] size \(1, 3, 4\), got \[1, 3, 5\]"):
        engine.nn.LSTM(2, 4)(packed, (engine.zeros(1, 3, 4), engine.zeros(1, 3, 5)))
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size. Expected 3, got 2"):
        engine.nn.LSTM(3, 4)(packed)


def test_length_beyond_padding_is_refused():
    with pytest.raises(RuntimeError, match=r"a length \(5\) exceeds the padded sequence length \(4\)"):
        ER.pack_padded_sequence(engine.zeros(4, 3, 2), [5, 4, 1])


def test_gradcheck_pack_pad_and_lstm():
    x = engine.tensor(rnd(4, 3, 2, dtype=np.float64), requires_grad=True)
    lens = [2, 4, 1]
    gradcheck(lambda a: ER.pad_packed_sequence(ER.pack_padded_sequence(a, lens, enforce_sorted=False),
                                               total_length=5)[0], x)
    gradcheck(lambda a, b: ER.pad_sequence([a, b], batch_first=True, padding_side="left"),
              engine.tensor(rnd(2, 3, dtype=np.float64), requires_grad=True),
              engine.tensor(rnd(4, 3, seed=1, dtype=np.float64), requires_grad=True))
    lstm = engine.nn.LSTM(2, 3, bidirectional=True).double()

    def run(a):
        out, (h, c) = lstm(ER.pack_padded_sequence(a, lens, enforce_sorted=False))
        return out.data, h, c

    gradcheck(run, x)
