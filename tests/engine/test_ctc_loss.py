"""F.ctc_loss / nn.CTCLoss against torch: values and gradients (random shapes, padded and
concatenated targets, every reduction, impossible alignments, zero_infinity), the graph's last
node, and torch's errors for bad lengths, shapes and blank."""

from __future__ import annotations

import numpy as np
import pytest

import engine
import engine.nn.functional as F

torch = pytest.importorskip("torch")  # the oracle: these tests compare with it


def _case(seed: int, T: int = 12, N: int = 4, C: int = 6, max_s: int = 4, dtype=np.float64):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(T, N, C)).astype(dtype)
    tg_lens = rng.integers(0, max_s + 1, N)
    in_lens = rng.integers(np.maximum(2 * tg_lens, 1), T + 1)
    targets = rng.integers(1, C, (N, max_s))
    return logits, targets, in_lens, tg_lens


def _both(logits, targets, in_lens, tg_lens, *, log_softmax=True, lens_as_tensors=False, **kwargs):
    """(engine loss, engine grad, torch loss, torch grad) for the same inputs."""
    out = []
    for lib in (engine, torch):
        x = lib.tensor(logits, requires_grad=True)
        lp = x.log_softmax(2) if log_softmax else x
        il, tl = ((lib.tensor(in_lens), lib.tensor(tg_lens)) if lens_as_tensors
                  else ([int(v) for v in in_lens], [int(v) for v in tg_lens]))
        loss = lib.nn.functional.ctc_loss(lp, lib.tensor(targets), il, tl, **kwargs)
        (loss * lib.tensor(np.arange(1, loss.numel() + 1, dtype=logits.dtype)).reshape(loss.shape)).sum().backward()
        out += [loss.detach().numpy(), x.grad.numpy()]
    return out


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("seed", range(4))
def test_values_and_gradients_match_torch(seed, reduction):
    logits, targets, in_lens, tg_lens = _case(seed, T=8 + seed * 3, N=2 + seed, C=4 + seed)
    el, eg, tl, tg = _both(logits, targets, in_lens, tg_lens, reduction=reduction)
    np.testing.assert_allclose(el, tl, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(eg, tg, rtol=1e-9, atol=1e-12)


def test_repeated_labels_and_blank_not_zero():
    """Repeats need a blank between them (no skip transition); blank may be any class."""
    logits = np.random.default_rng(5).normal(size=(10, 3, 5))
    targets = np.array([[1, 1, 2, 2], [3, 3, 3, 0], [2, 4, 2, 4]])
    for blank in (0, 4):
        tg = np.where(targets == blank, (blank + 1) % 5, targets)
        el, eg, tl, tg_ = _both(logits, tg, np.array([10, 9, 8]), np.array([4, 3, 4]), blank=blank,
                                reduction="none")
        np.testing.assert_allclose(el, tl, rtol=1e-10)
        np.testing.assert_allclose(eg, tg_, rtol=1e-9, atol=1e-12)


def test_raw_log_probs_gradient_is_torchs():
    """Without a log_softmax in front, torch's backward is not d(nll)/d(log_probs) but its
    kernel's ``exp(lp) - occupancy``: the engine gives the same numbers."""
    logits, targets, in_lens, tg_lens = _case(7)
    el, eg, tl, tg = _both(logits, targets, in_lens, tg_lens, log_softmax=False, reduction="sum")
    np.testing.assert_allclose(el, tl, rtol=1e-10)
    np.testing.assert_allclose(eg, tg, rtol=1e-9, atol=1e-12)


def test_gradient_through_log_softmax_matches_finite_differences():
    logits, targets, in_lens, tg_lens = _case(3, T=7, N=2, C=4, max_s=2)

    def f(arr):
        x = engine.tensor(arr)
        return float(F.ctc_loss(x.log_softmax(2), engine.tensor(targets), list(map(int, in_lens)),
                                list(map(int, tg_lens)), reduction="sum"))

    x = engine.tensor(logits, requires_grad=True)
    F.ctc_loss(x.log_softmax(2), engine.tensor(targets), list(map(int, in_lens)), list(map(int, tg_lens)),
               reduction="sum").backward()
    eps, num = 1e-6, np.zeros_like(logits)
    for idx in np.ndindex(logits.shape):
        hi, lo = logits.copy(), logits.copy()
        hi[idx] += eps
        lo[idx] -= eps
        num[idx] = (f(hi) - f(lo)) / (2 * eps)
    np.testing.assert_allclose(x.grad.numpy(), num, rtol=1e-5, atol=1e-7)


def test_concatenated_targets_equal_padded_and_torch():
    logits, targets, in_lens, tg_lens = _case(11)
    flat = np.concatenate([targets[b, :n] for b, n in enumerate(tg_lens)])
    el, eg, tl, tg = _both(logits, flat, in_lens, tg_lens, reduction="none", lens_as_tensors=True)
    pl, pg, _, _ = _both(logits, targets, in_lens, tg_lens, reduction="none")
    np.testing.assert_allclose(el, tl, rtol=1e-10)
    np.testing.assert_allclose(eg, tg, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(el, pl, rtol=1e-12)
    np.testing.assert_allclose(eg, pg, rtol=1e-12, atol=1e-15)


def test_float32_matches_torch():
    logits, targets, in_lens, tg_lens = _case(2, T=30, N=5, C=10, max_s=8, dtype=np.float32)
    el, eg, tl, tg = _both(logits, targets, in_lens, tg_lens)
    assert el.dtype == np.float32 and eg.dtype == np.float32
    np.testing.assert_allclose(el, tl, rtol=1e-5)
    np.testing.assert_allclose(eg, tg, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("zero_infinity", [False, True])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_impossible_alignments(zero_infinity, reduction):
    """A target needing more frames than the input has (3 labels with a repeat: 4 frames):
    inf and NaN gradients in torch, both zero with zero_infinity; other items unaffected."""
    logits = np.random.default_rng(4).normal(size=(6, 3, 5))
    targets = np.array([[1, 2, 2], [3, 1, 0], [1, 1, 4]])
    in_lens, tg_lens = np.array([3, 5, 0]), np.array([3, 2, 0])
    el, eg, tl, tg = _both(logits, targets, in_lens, tg_lens, reduction=reduction, zero_infinity=zero_infinity)
    np.testing.assert_allclose(el, tl, rtol=1e-10)
    np.testing.assert_allclose(eg, tg, rtol=1e-9, atol=1e-12)  # NaN where torch has NaN
    if reduction == "none":
        assert (el[0] == 0.0) if zero_infinity else np.isinf(el[0])
        assert el[2] == 0.0  # empty input, empty target: probability 1
    assert np.isnan(eg).any() != zero_infinity


def test_empty_input_with_labels_is_inf():
    logits = np.zeros((4, 2, 3))
    el, _, tl, _ = _both(logits, np.array([[1], [2]]), np.array([0, 4]), np.array([1, 1]), reduction="none")
    assert np.isinf(el[0]) and np.isinf(tl[0])
    np.testing.assert_allclose(el[1], tl[1])


@pytest.mark.parametrize("padded", [False, True])
def test_unbatched_input(padded):
    """(T, C) log_probs; 1-D targets are read as concatenated (all ``target_length`` labels), a
    (1, S) row as padded, as in torch."""
    logits, targets, in_lens, tg_lens = _case(9, N=1)
    targets = targets if padded else targets[0, :tg_lens[0]]
    for reduction in ("none", "mean"):
        out = []
        for lib in (engine, torch):
            x = lib.tensor(logits[:, 0], requires_grad=True)
            loss = lib.nn.functional.ctc_loss(x.log_softmax(1), lib.tensor(targets), lib.tensor(in_lens[0]),
                                              lib.tensor(tg_lens[0]), reduction=reduction)
            loss.backward()
            out += [loss.detach().numpy(), x.grad.numpy(), type(loss.grad_fn).__name__]
        assert out[0].shape == out[3].shape == ()
        np.testing.assert_allclose(out[0], out[3], rtol=1e-10)
        np.testing.assert_allclose(out[1], out[4], rtol=1e-9, atol=1e-12)
        assert out[2] == out[5]


@pytest.mark.parametrize(("reduction", "zero_infinity", "node"), [
    ("none", False, "CtcLossBackward0"), ("none", True, "WhereBackward0"),
    ("mean", False, "MeanBackward0"), ("sum", True, "SumBackward0"),
])
def test_graph_ends_in_torchs_node(reduction, zero_infinity, node):
    logits, targets, in_lens, tg_lens = _case(1)
    x = engine.tensor(logits, requires_grad=True)
    loss = F.ctc_loss(x, engine.tensor(targets), engine.tensor(in_lens), engine.tensor(tg_lens),
                      reduction=reduction, zero_infinity=zero_infinity)
    assert type(loss.grad_fn).__name__ == node


def test_module_matches_functional_and_torch():
    logits, targets, in_lens, tg_lens = _case(6)
    mod = engine.nn.CTCLoss(blank=0, reduction="sum", zero_infinity=True)
    tmod = torch.nn.CTCLoss(blank=0, reduction="sum", zero_infinity=True)
    assert repr(mod) == repr(tmod) == "CTCLoss()"
    e = mod(engine.tensor(logits).log_softmax(2), engine.tensor(targets), engine.tensor(in_lens),
            engine.tensor(tg_lens))
    t = tmod(torch.tensor(logits).log_softmax(2), torch.tensor(targets), torch.tensor(in_lens),
             torch.tensor(tg_lens))
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-10)
    assert (mod.blank, mod.reduction, mod.zero_infinity) == (0, "sum", True)


def _errors(lib, case):
    lp = lib.tensor(np.random.default_rng(0).normal(size=(6, 3, 5))).log_softmax(2)
    tg = lib.tensor(np.array([[1, 2, 2], [3, 0, 0], [1, 1, 4]]))
    calls = {
        "float lengths": lambda: lib.nn.functional.ctc_loss(lp, tg, lib.tensor([6.0, 5, 4]), lib.tensor([3, 1, 3])),
        "float target lengths": lambda: lib.nn.functional.ctc_loss(lp, tg, lib.tensor([6, 5, 4]),
                                                                   lib.tensor([3.0, 1, 3])),
        "blank": lambda: lib.nn.functional.ctc_loss(lp, tg, [6, 5, 4], [3, 1, 3], blank=5),
        "negative blank": lambda: lib.nn.functional.ctc_loss(lp, tg, [6, 5, 4], [3, 1, 3], blank=-1),
        "input lengths size": lambda: lib.nn.functional.ctc_loss(lp, tg, [6, 5], [3, 1, 3]),
        "target lengths size": lambda: lib.nn.functional.ctc_loss(lp, tg, [6, 5, 4], [3, 1]),
        "negative target length": lambda: lib.nn.functional.ctc_loss(lp, tg, [6, 5, 4], [3, -1, 3]),
        "negative input length": lambda: lib.nn.functional.ctc_loss(lp, tg, [6, -5, 4], [3, 1, 3]),
        "input length too long": lambda: lib.nn.functional.ctc_loss(lp, tg, [7, 5, 4], [3, 1, 3]),
        "target length too long": lambda: lib.nn.functional.ctc_loss(lp, tg, [6, 5, 4], [4, 1, 3]),
        "concatenated size": lambda: lib.nn.functional.ctc_loss(lp, lib.tensor([1, 2, 2, 3, 1, 1]), [6, 5, 4],
                                                                [3, 1, 3]),
        "targets batch": lambda: lib.nn.functional.ctc_loss(lp, tg[:2], [6, 5, 4], [3, 1, 3]),
        "4-d log_probs": lambda: lib.nn.functional.ctc_loss(lp[None], tg, [6, 5, 4], [3, 1, 3]),
        "3-d targets": lambda: lib.nn.functional.ctc_loss(lp, tg[None], [6, 5, 4], [3, 1, 3]),
        "reduction": lambda: lib.nn.functional.ctc_loss(lp, tg, [6, 5, 4], [3, 1, 3], reduction="avg"),
        "integer log_probs": lambda: lib.nn.functional.ctc_loss((lp * 10).long(), tg, [6, 5, 4], [3, 1, 3]),
        "int lengths": lambda: lib.nn.functional.ctc_loss(lp[:, 0], tg[0], 6, 3),
    }
    return calls[case]


@pytest.mark.parametrize("case", [
    "float lengths", "float target lengths", "blank", "negative blank", "input lengths size", "target lengths size",
    "negative target length", "negative input length", "input length too long", "target length too long",
    "concatenated size", "targets batch", "4-d log_probs", "3-d targets", "reduction", "integer log_probs",
])
def test_errors_as_torch(case):
    with pytest.raises(Exception) as t_err:
        _errors(torch, case)()
    with pytest.raises(type(t_err.value)) as e_err:
        _errors(engine, case)()
    assert str(e_err.value) == str(t_err.value)


def test_int_lengths_are_refused_with_a_type_error():
    with pytest.raises(TypeError):
        _errors(torch, "int lengths")()
    with pytest.raises(TypeError, match="input_lengths must be a Tensor or a tuple of ints, not int"):
        _errors(engine, "int lengths")()


def test_label_out_of_range_names_it():
    lp = engine.zeros(6, 2, 5).log_softmax(2)
    with pytest.raises(IndexError, match=r"target label 7 of sequence 1 \(position 0\) is out of range .* 5 classes"):
        F.ctc_loss(lp, engine.tensor([[1, 2], [7, 0]]), [6, 6], [2, 1])
    # labels past a sequence's target length are padding and never read
    F.ctc_loss(lp, engine.tensor([[1, 2], [3, 9]]), [6, 6], [2, 1])
