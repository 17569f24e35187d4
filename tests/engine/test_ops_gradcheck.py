"""Finite-difference gradient checks (float64, no torch) for the ops of issue 19: every
differentiable input of every op, including the paths torch's parity tests cannot reach (a
``scatter`` src larger than its index, products over groups with zeros, einsum letters that
only one operand has)."""

from __future__ import annotations

import numpy as np
import pytest

import engine
from tests.gradcheck import gradcheck, rand


def idx(data) -> engine.Tensor:
    return engine.tensor(np.array(data))


def with_zeros(*shape: int, seed: int = 0) -> engine.Tensor:
    x = rand(*shape, seed=seed, requires_grad=False).numpy()
    x[np.random.default_rng(seed).random(shape) < 0.3] = 0.0
    return engine.tensor(x, dtype=engine.float64, requires_grad=True)


I24 = [[0, 1, 2, 0], [1, 0, 2, 2]]

CASES = {
    "tril": (lambda a: a.tril(-1), [(3, 4)]), "triu": (lambda a: engine.triu(a, 1), [(2, 3, 4)]),
    "tril_": (lambda a: (a * 1).tril_(1), [(4, 4)]),
    "roll": (lambda a: a.roll((1, -2), (0, 1)), [(3, 4)]), "roll_flat": (lambda a: a.roll(5), [(3, 4)]),
    "diagonal": (lambda a: a.diagonal(1) * 3, [(3, 4)]), "diagonal_dims": (lambda a: a.diagonal(-1, 2, 0), [(3, 2, 4)]),
    "diag_vec": (lambda a: engine.diag(a, 1), [(3,)]), "diag_mat": (lambda a: engine.diag(a, -1), [(4, 3)]),
    "einsum_mm": (lambda a, b: engine.einsum("ij,jk->ik", a, b), [(3, 4), (4, 2)]),
    "einsum_diag": (lambda a: engine.einsum("ii->i", a), [(3, 3)]),
    "einsum_trace_bcast": (lambda a, b: engine.einsum("ii,...i->...", a, b), [(3, 3), (2, 3)]),
    "einsum_ell_bcast": (lambda a, b: engine.einsum("...ij,...jk->...ik", a, b), [(1, 2, 3), (4, 3, 2)]),
    "einsum_three": (lambda a, b, c: engine.einsum("ij,jk,kl->li", a, b, c), [(2, 3), (3, 4), (4, 2)]),
    "einsum_own_letter": (lambda a, b: engine.einsum("ij,k->k", a, b), [(2, 3), (4,)]),
    "einsum_implicit": (lambda a, b: engine.einsum("bj,ja", a, b), [(2, 3), (3, 4)]),
    "sort": (lambda a: a.sort(dim=0, descending=True).values, [(4, 3)]),
    "topk": (lambda a: a.topk(2, largest=False).values, [(3, 5)]),
    "ri_int": (lambda a: a.repeat_interleave(3, dim=1), [(2, 3)]),
    "ri_tensor": (lambda a: a.repeat_interleave(idx([2, 0, 1]), dim=0), [(3, 2)]),
    # scatter with distinct targets: with duplicates the last write wins and the overwritten src
    # elements get torch's gathered gradient all the same (not the finite difference, 0)
    "scatter_src": (lambda a, s: a.scatter(0, idx([[0, 1, 2, 0], [1, 0, 1, 2]]), s), [(3, 4), (2, 4)]),
    "scatter_src_bigger": (lambda a, s: a.scatter(1, idx([[3], [0]]), s), [(2, 4), (3, 2)]),
    "scatter_value": (lambda a: a.scatter(1, idx([[0, 3], [1, 1]]), 2.0), [(2, 4)]),
    "scatter_add": (lambda a, s: engine.scatter_add(a, 0, idx(I24), s), [(3, 4), (2, 5)]),
    "index_add": (lambda a, s: a.index_add(1, idx([2, 2, 0]), s, alpha=0.5), [(2, 4), (2, 3)]),
    "gather": (lambda a: a.gather(1, idx([[0, 0, 3], [2, 1, 1]])), [(2, 4)]),
    "take_along_dim": (lambda a: engine.take_along_dim(a, idx([[[1], [0], [2]]]), 2), [(2, 3, 4)]),
    "index_select": (lambda a: a.index_select(0, idx([2, 0, 2])), [(3, 2)]),
    "masked_select": (lambda a, m: a.masked_select(m > 0), [(3, 4), (4,)]),
    "outer": (lambda a, b: engine.outer(a, b), [(3,), (4,)]),
    "cross": (lambda a, b: engine.cross(a, b, dim=0), [(3, 4), (3, 1)]),
    "cdist": (lambda a, b: engine.cdist(a, b), [(4, 3), (5, 3)]),
    "cdist_p1": (lambda a, b: engine.cdist(a, b, p=1), [(4, 3), (2, 5, 3)]),
    "cdist_p3": (lambda a, b: engine.cdist(a, b, p=3), [(2, 4, 3), (5, 3)]),
    "cdist_pinf": (lambda a, b: engine.cdist(a, b, p=float("inf")), [(4, 3), (5, 3)]),
    "linalg_norm_2": (lambda a: engine.linalg.norm(a, 2), [(3, 4)]),
    "linalg_norm_m2_keep": (lambda a: engine.linalg.matrix_norm(a, -2, dim=(0, 2), keepdim=True), [(3, 2, 4)]),
    "linalg_norm_nuc": (lambda a: engine.linalg.norm(a, "nuc"), [(3, 4)]),
    "linalg_norm_inf": (lambda a: engine.linalg.norm(a, float("inf"), dim=(1, 0)), [(3, 4)]),
    "linalg_norm_1": (lambda a: engine.linalg.matrix_norm(a, 1), [(2, 3, 4)]),
    "vector_norm": (lambda a: engine.linalg.vector_norm(a, 3, dim=1), [(3, 4)]),
    "svdvals": (lambda a: engine.linalg.svdvals(a), [(2, 3, 4)]),
    "meshgrid": (lambda a, b: engine.meshgrid(a, b, indexing="xy"), [(3,), (2,)]),
    "tensor_split": (lambda a: a.tensor_split(3, dim=1), [(2, 5)]),
    "narrow": (lambda a: a.narrow(1, -3, 2), [(2, 5)]),
    "flip": (lambda a: a.flip(0, 2), [(2, 3, 4)]),
    "broadcast_to": (lambda a: a.broadcast_to(2, 3, 4), [(3, 1)]),
    "logsumexp": (lambda a: a.logsumexp((0, 1)), [(2, 3, 4)]),
    "where_scalar": (lambda a: engine.where(a > 0, a, 0.5), [(3, 4)]),
    "where_method": (lambda a, b: a.where(a < 0, b), [(3, 4), (4,)]),
    "clamp_tensors": (lambda a, lo: a.clamp(min=lo, max=lo + 0.5), [(3, 4), (4,)]),
}
REDUCTIONS = [(r, s) for r in ("sum", "prod", "mean", "amax", "amin") for s in (True, False)]


@pytest.mark.parametrize("name", list(CASES))
def test_gradients(name):
    fn, shapes = CASES[name]
    gradcheck(fn, *[rand(*s, seed=i) for i, s in enumerate(shapes)])


@pytest.mark.parametrize("reduce,include_self", REDUCTIONS)
def test_scatter_reduce_gradients(reduce, include_self):
    def fn(a, s):
        return a.scatter_reduce(0, idx(I24), s, reduce, include_self=include_self)
    gradcheck(fn, rand(3, 4, seed=0), rand(2, 5, seed=1))


def test_scatter_reduce_prod_gradient_with_zeros_in_groups():
    # groups with no zero, exactly one zero and two zeros (one from self, one from src)
    a = engine.tensor([[0.0, 2.0, 0.5, 3.0], [1.5, 0.0, 0.7, 0.0]], dtype=engine.float64, requires_grad=True)
    s = engine.tensor([[0.0, 1.5, 2.0, 0.0], [4.0, 0.3, 0.0, 2.0]], dtype=engine.float64, requires_grad=True)
    gradcheck(lambda a, s: a.scatter_reduce(0, idx([[0, 1, 0, 1], [1, 1, 0, 0]]), s, "prod"), a, s)
    gradcheck(lambda a, s: a.scatter_reduce(1, idx([[0, 0, 1, 1], [3, 3, 2, 2]]), s, "prod",
                                            include_self=False), a, s)


def test_cumprod_gradient_with_zeros():
    gradcheck(lambda a: a.cumprod(1), with_zeros(3, 5))


def test_inplace_scatter_and_index_add_gradients_through_the_graph():
    def fn(a, s):
        y = a * 2
        y.scatter_add_(0, idx(I24), s)
        y.index_add_(1, idx([0, 0]), s[:, :2] * 3)
        return y.scatter_(1, idx([[1], [2], [0]]), s[:, :1])

    gradcheck(fn, rand(3, 4, seed=0), rand(3, 4, seed=1))


def test_scatter_add_accumulates_duplicates_and_index_add_alpha():
    a = engine.zeros(2, 3)
    out = a.scatter_add(1, idx([[0, 0, 2], [1, 1, 1]]), engine.ones(2, 3))
    assert out.tolist() == [[2.0, 0.0, 1.0], [0.0, 3.0, 0.0]]
    assert a.index_add(1, idx([2, 2]), engine.ones(2, 2), alpha=2).tolist() == [[0, 0, 4.0], [0, 0, 4.0]]


def test_einsum_matches_numpy_on_many_equations():
    rng = np.random.default_rng(0)
    x, y, z = (rng.standard_normal(s) for s in ((2, 3, 4), (4, 5), (2, 3, 4)))
    for eq, ops in [("bij,jk->bik", (x, y)), ("bij,bij->b", (x, z)), ("bij->jb", (x,)), ("...j,jk", (x, y)),
                    ("bij,bij", (x, z)), ("ijk->", (x,))]:
        got = engine.einsum(eq, *[engine.tensor(o) for o in ops]).numpy()
        np.testing.assert_allclose(got, np.einsum(eq, *ops), rtol=1e-12, atol=1e-12)
