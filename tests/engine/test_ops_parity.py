"""The tensor ops real training scripts reach for (issue 19), against PyTorch on the same code:
values, result dtypes, ``grad_fn`` names, gradients, named-tuple results, error types and
messages, and the in-place variants' autograd rules.

Each case is a function of ``(lib, **tensors)`` that runs unchanged on ``engine`` and ``torch``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import engine

INF = float("inf")


def make_inputs(lib):
    rng = np.random.default_rng(0)
    out = {}
    for name, shape in dict(a=(3, 4), b=(3, 4), m=(4, 5), v=(4,), w=(3,), sq=(4, 4), B=(2, 3, 4),
                            C=(2, 4, 5), x3=(5, 3), y3=(5, 3), P=(2, 5, 3), R=(2, 6, 3)).items():
        out[name] = lib.tensor(rng.standard_normal(shape).astype(np.float32), requires_grad=True)
    out["p"] = lib.tensor(np.abs(rng.standard_normal((3, 4))).astype(np.float32) + 0.5, requires_grad=True)
    # ties for stable sorting, and integer data
    out["ties"] = lib.tensor(rng.integers(0, 3, (3, 6)).astype(np.float32), requires_grad=True)
    out["idx"] = lib.tensor(np.array([[0, 1, 2, 0], [1, 0, 2, 2]]))
    out["ints"] = lib.tensor(np.array([3, 1, 0, 3, 3, 5, 1]))
    out["edges"] = lib.tensor(np.array([-1.0, -0.2, 0.3, 1.0], np.float32))
    return out


def _name(node) -> str | None:
    """The node's name without torch's C++ namespace (``torch::autograd::CopySlices``)."""
    return None if node is None else node.name().replace("torch::autograd::", "")


def _flat(y):
    return list(y) if isinstance(y, tuple | list) else [y]


def _version(x) -> int:
    return x._version


def run_case(lib, fn, grads: bool = True):
    ts = make_inputs(lib)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            y = fn(lib, **ts)
        except Exception as e:  # noqa: BLE001 - the exception is the result being compared
            return ("raised", type(e).__name__, str(e).split("\n")[0]), None
    outs = _flat(y)
    summary = []
    loss = None
    rng = np.random.default_rng(1)
    for o in outs:
        if not isinstance(o, lib.Tensor):
            summary.append(("py", o))
            continue
        summary.append((o.detach().numpy().copy(), str(o.dtype).split(".")[-1], _name(o.grad_fn)))
        if grads and o.requires_grad and o.dtype.is_floating_point:
            w = lib.tensor(rng.standard_normal(tuple(o.shape)).astype(np.float32)).to(o.dtype)
            loss = (o * w).sum() if loss is None else loss + (o * w).sum()
    if loss is not None:
        try:
            loss.backward()
        except RuntimeError as e:  # compared like a forward error
            return ("raised in backward", type(e).__name__, str(e).split("\n")[0].replace("engine", "torch")), None
    g = {k: t.grad.numpy().copy() for k, t in ts.items() if t.grad is not None}
    return (type(y).__name__ if isinstance(y, tuple) else "single", summary), g


def one(t, x):
    """A non-leaf copy, for in-place ops."""
    return x * 1


CASES = {
    # triangles, roll, diagonals
    "tril": lambda t, a, **_: a.tril(), "tril_k1": lambda t, a, **_: t.tril(a, 1),
    "tril_neg": lambda t, a, **_: a.tril(diagonal=-1), "triu": lambda t, a, **_: t.triu(a),
    "triu_batched": lambda t, B, **_: B.triu(2), "tril_": lambda t, a, **_: one(t, a).tril_(-1),
    "triu_": lambda t, sq, **_: one(t, sq).triu_(1),
    "roll": lambda t, a, **_: a.roll(1, 0), "roll_tuple": lambda t, a, **_: t.roll(a, (1, -2), (0, 1)),
    "roll_none": lambda t, a, **_: a.roll(5), "roll_negdim": lambda t, B, **_: B.roll(shifts=2, dims=-1),
    "diagonal": lambda t, a, **_: a.diagonal(), "diagonal_off": lambda t, a, **_: t.diagonal(a, 1),
    "diagonal_neg": lambda t, a, **_: a.diagonal(-1), "diagonal_dims": lambda t, B, **_: B.diagonal(0, 0, 2),
    "diagonal_then_mul": lambda t, sq, **_: sq.diagonal() * 2,
    "diag_vec": lambda t, v, **_: t.diag(v), "diag_vec_off": lambda t, v, **_: t.diag(v, -1),
    "diag_mat": lambda t, a, **_: t.diag(a), "diag_mat_off": lambda t, a, **_: a.diag(2),
    # einsum (grad_fn compared separately: torch records its own decomposition)
    "einsum_mm": lambda t, a, m, **_: t.einsum("ij,jk->ik", a, m),
    "einsum_T": lambda t, a, **_: t.einsum("ij->ji", a), "einsum_outer": lambda t, v, w, **_: t.einsum("i,j->ij", v, w),
    "einsum_sum": lambda t, a, **_: t.einsum("ij->", a), "einsum_bmm": lambda t, B, C, **_: t.einsum("bij,bjk->bik", B, C),
    "einsum_ell": lambda t, B, m, **_: t.einsum("...ij,jk->...ik", B, m),
    "einsum_ell_bcast": lambda t, a, C, **_: t.einsum("...ij,...jk->...ik", a.reshape(1, 3, 4), C),
    "einsum_diag": lambda t, sq, **_: t.einsum("ii->i", sq), "einsum_trace": lambda t, sq, **_: t.einsum("ii", sq),
    "einsum_rowdot": lambda t, a, b, **_: t.einsum("ij,ij->i", a, b),
    "einsum_implicit": lambda t, a, m, **_: t.einsum("ij,jk", a, m),
    "einsum_three": lambda t, a, sq, m, **_: t.einsum("ij,jk,kl->il", a, sq, m),
    "einsum_list": lambda t, a, m, **_: t.einsum("ij,jk->ik", [a, m]),
    "einsum_spaces": lambda t, a, b, **_: t.einsum("i j , i j -> j", a, b),
    "einsum_only_self": lambda t, a, w, **_: t.einsum("ij,i->i", a, w),
    "einsum_attention": lambda t, B, **_: t.einsum("bqd,bkd->bqk", B, B),
    # sorting and selection
    "topk": lambda t, a, **_: a.topk(2), "topk_small": lambda t, a, **_: t.topk(a, 3, dim=0, largest=False),
    "topk_kw": lambda t, a, **_: a.topk(k=1, dim=-1, largest=True, sorted=True),
    "sort": lambda t, a, **_: a.sort(), "sort_desc": lambda t, a, **_: t.sort(a, dim=0, descending=True),
    "sort_stable": lambda t, ties, **_: ties.sort(stable=True),
    "sort_stable_desc": lambda t, ties, **_: t.sort(ties, dim=1, descending=True, stable=True),
    "argsort": lambda t, a, **_: a.argsort(), "argsort_desc": lambda t, a, **_: t.argsort(a, 0, True),
    "argsort_stable": lambda t, ties, **_: t.argsort(ties, dim=-1, stable=True),
    "argmax_keep": lambda t, a, **_: a.argmax(1, keepdim=True), "argmin_keep": lambda t, a, **_: a.argmin(0, keepdim=True),
    "argmax_all_keep": lambda t, a, **_: a.argmax(keepdim=True),
    "unique": lambda t, ints, **_: t.unique(ints),
    "unique_all": lambda t, ints, **_: ints.unique(sorted=True, return_inverse=True, return_counts=True),
    "unique_inv_2d": lambda t, idx, **_: t.unique(idx, return_inverse=True),
    "unique_dim": lambda t, **_: t.unique(t.tensor([[1, 2], [1, 2], [0, 1]]), dim=0, return_counts=True),
    "searchsorted": lambda t, edges, a, **_: t.searchsorted(edges, a.detach()),
    "searchsorted_right": lambda t, edges, **_: t.searchsorted(edges, t.tensor([-0.2, 0.0, 1.0]), right=True),
    "searchsorted_side": lambda t, edges, **_: t.searchsorted(edges, t.tensor([-0.2, 0.3]), side="right"),
    "searchsorted_int32": lambda t, edges, **_: t.searchsorted(edges, t.tensor([0.5]), out_int32=True),
    "searchsorted_scalar": lambda t, edges, **_: t.searchsorted(edges, 0.5),
    "searchsorted_rows": lambda t, a, **_: t.searchsorted(a.detach().sort().values, t.tensor([[0.0], [0.5], [-9.0]])),
    "searchsorted_sorter": lambda t, v, **_: t.searchsorted(v.detach(), t.tensor([0.0, -5.0, 1.0]), sorter=v.detach().argsort()),
    "bucketize": lambda t, edges, a, **_: t.bucketize(a.detach(), edges),
    "bucketize_right": lambda t, edges, **_: t.bucketize(t.tensor([-0.2, 0.3, 2.0]), edges, right=True),
    "bincount": lambda t, ints, **_: t.bincount(ints), "bincount_min": lambda t, ints, **_: ints.bincount(minlength=9),
    "bincount_w": lambda t, ints, **_: t.bincount(ints, weights=t.arange(7.0)),
    "bincount_wd": lambda t, ints, **_: t.bincount(ints, t.arange(7, dtype=t.float64)),
    # comparisons
    "isclose": lambda t, a, **_: t.isclose(a, a + 1e-6), "isclose_tol": lambda t, a, b, **_: a.isclose(b, rtol=0.5, atol=0.5),
    "isclose_nan": lambda t, **_: t.isclose(t.tensor([1.0, float("nan"), INF]), t.tensor([1.0, float("nan"), INF])),
    "isclose_equal_nan": lambda t, **_: t.isclose(t.tensor([float("nan"), -INF]), t.tensor([float("nan"), INF]), equal_nan=True),
    "isclose_bcast": lambda t, a, v, **_: t.isclose(a, v),
    "isclose_int": lambda t, ints, **_: t.isclose(ints, ints + 1, atol=1),
    "allclose": lambda t, a, **_: t.allclose(a, a + 1e-6), "allclose_no": lambda t, a, b, **_: a.allclose(b),
    # where / masked_fill / clamp
    "where_scalar": lambda t, a, **_: t.where(a > 0, a, 0.0), "where_scalar_first": lambda t, a, **_: t.where(a > 0, 1.0, a),
    "where_two_floats": lambda t, a, **_: t.where(a > 0, 1.0, 0.0), "where_two_ints": lambda t, a, **_: t.where(a > 0, 1, 0),
    "where_int_float": lambda t, a, **_: t.where(a > 0, 1, 0.5), "where_bools": lambda t, a, **_: t.where(a > 0, True, False),
    "where_method": lambda t, a, b, **_: a.where(a > 0, b), "where_method_scalar": lambda t, a, **_: a.where(a > 0, -1.0),
    "where_cond_only": lambda t, a, **_: t.where(a > 0),
    "masked_fill_t": lambda t, a, w, **_: a.masked_fill(a > 0, w[0]),
    "clamp_t": lambda t, a, v, **_: a.clamp(min=v), "clamp_tt": lambda t, a, v, **_: t.clamp(a, min=v, max=v.abs() + 0.1),
    # repeat_interleave
    "ri_int": lambda t, a, **_: a.repeat_interleave(2, dim=0), "ri_int_dim1": lambda t, a, **_: t.repeat_interleave(a, 3, 1),
    "ri_int_flat": lambda t, a, **_: a.repeat_interleave(2), "ri_negdim": lambda t, B, **_: B.repeat_interleave(2, dim=-1),
    "ri_tensor": lambda t, a, **_: a.repeat_interleave(t.tensor([1, 2, 0]), dim=0),
    "ri_tensor1": lambda t, a, **_: a.repeat_interleave(t.tensor([2]), dim=1),
    "ri_output_size": lambda t, a, **_: a.repeat_interleave(t.tensor([1, 2, 0]), dim=0, output_size=3),
    "ri_counts_only": lambda t, **_: t.repeat_interleave(t.tensor([1, 2, 0, 3])),
    # scatter / gather / index ops
    "scatter_src": lambda t, a, b, idx, **_: a.scatter(0, idx, b[:2]),
    "scatter_value": lambda t, a, idx, **_: t.scatter(a, 0, idx, 1.5),
    "scatter_dim1": lambda t, a, b, **_: a.scatter(1, t.tensor([[3], [0], [1]]), b[:, :1]),
    "scatter_value_kw": lambda t, a, idx, **_: a.scatter(0, idx, value=2.0),
    "scatter_add": lambda t, a, b, idx, **_: a.scatter_add(0, idx, b[:2]),
    "scatter_add_fn": lambda t, a, B, idx, **_: t.scatter_add(a, 0, idx, B[0, :2]),
    "scatter_reduce_add": lambda t, a, b, idx, **_: a.detach().scatter(0, idx, b.detach(), reduce="add"),
    "scatter_reduce_mul": lambda t, a, b, idx, **_: a.detach().scatter(0, idx, 2.0, reduce="multiply"),
    "gather": lambda t, a, idx, **_: a.gather(0, idx), "gather_dim1": lambda t, a, **_: t.gather(a, 1, t.tensor([[0, 0], [3, 1], [2, 2]])),
    "take_along_dim": lambda t, a, **_: t.take_along_dim(a, a.argsort(1), 1),
    "take_along_dim_none": lambda t, a, **_: t.take_along_dim(a, t.tensor([11, 0, 5])),
    "take_along_dim_bcast": lambda t, B, **_: t.take_along_dim(B, t.tensor([[[0], [3], [1]]]), dim=2),
    "take_along_dim_method": lambda t, a, **_: a.take_along_dim(a.argmax(0, keepdim=True), 0),
    "index_add": lambda t, a, b, **_: a.index_add(0, t.tensor([0, 2, 0]), b),
    "index_add_alpha": lambda t, a, m, **_: t.index_add(a, 1, t.tensor([1, 3, 1, 0, 2]), m[:3], alpha=-2.0),
    "index_select": lambda t, a, **_: a.index_select(1, t.tensor([3, 0, 3])),
    "index_select_0d": lambda t, a, **_: t.index_select(a, 0, t.tensor(2)),
    "masked_select": lambda t, a, **_: a.masked_select(a > 0), "masked_select_bcast": lambda t, a, v, **_: t.masked_select(a, v > 0),
    "masked_select_fn": lambda t, v, a, **_: t.masked_select(v, a > 0),
    "nonzero": lambda t, a, **_: (a > 0).nonzero(), "nonzero_fn": lambda t, B, **_: t.nonzero(B > 0),
    "nonzero_tuple": lambda t, a, **_: a.nonzero(as_tuple=True), "nonzero_tuple_fn": lambda t, B, **_: t.nonzero(B > 0, as_tuple=True),
    # shape ops
    "flip": lambda t, a, **_: a.flip(0), "flip_many": lambda t, B, **_: t.flip(B, (0, -1)),
    "flip_varargs": lambda t, B, **_: B.flip(2, 0), "flip_kw": lambda t, B, **_: t.flip(B, dims=[1]),
    "cumsum": lambda t, a, **_: a.cumsum(1), "cumprod": lambda t, a, **_: t.cumprod(a, 0),
    "meshgrid_ij": lambda t, v, w, **_: t.meshgrid(v, w, indexing="ij"),
    "meshgrid_xy": lambda t, v, w, **_: t.meshgrid(v, w, indexing="xy"),
    "meshgrid_three": lambda t, v, w, **_: t.meshgrid(w, v, w[:2], indexing="xy"),
    "meshgrid_list": lambda t, v, w, **_: t.meshgrid([v, w], indexing="ij"),
    "broadcast_to": lambda t, v, **_: v.broadcast_to(3, 4), "broadcast_to_fn": lambda t, v, **_: t.broadcast_to(v, (2, 3, 4)),
    "expand_as": lambda t, v, a, **_: v.expand_as(a),
    "narrow": lambda t, a, **_: a.narrow(1, 1, 2), "narrow_neg": lambda t, a, **_: t.narrow(a, 1, -2, 2),
    "narrow_empty": lambda t, a, **_: a.narrow(0, 3, 0),
    "chunk": lambda t, a, **_: a.chunk(2, dim=1), "chunk_uneven": lambda t, m, **_: t.chunk(m, 3, dim=1),
    "split": lambda t, a, **_: a.split([1, 3], dim=1), "split_int": lambda t, m, **_: m.split(2, 1),
    "tensor_split": lambda t, a, **_: a.tensor_split(2), "tensor_split_n": lambda t, m, **_: t.tensor_split(m, 3, dim=1),
    "tensor_split_idx": lambda t, a, **_: a.tensor_split([1, 3], dim=1),
    "tensor_split_neg": lambda t, m, **_: m.tensor_split((1, -1), dim=1),
    "tensor_split_t": lambda t, m, **_: m.tensor_split(t.tensor(2), dim=1),
    "tensor_split_tidx": lambda t, m, **_: m.tensor_split(t.tensor([2, 2]), dim=1),
    "unbind": lambda t, a, **_: a.unbind(1), "unbind_fn": lambda t, B, **_: t.unbind(B),
    # products and distances
    "outer": lambda t, v, w, **_: t.outer(v, w), "outer_method": lambda t, v, w, **_: w.outer(v), "ger": lambda t, v, w, **_: t.ger(v, w),
    "cross": lambda t, x3, y3, **_: t.cross(x3, y3, dim=1), "cross_method": lambda t, x3, y3, **_: x3.cross(y3, dim=-1),
    "cross_default": lambda t, x3, y3, **_: t.cross(x3.T, y3.T), "linalg_cross": lambda t, x3, y3, **_: t.linalg.cross(x3, y3[:1]),
    "cdist": lambda t, x3, y3, **_: t.cdist(x3, y3[:4]), "cdist_p1": lambda t, x3, y3, **_: t.cdist(x3, y3, p=1),
    "cdist_p3": lambda t, x3, y3, **_: t.cdist(x3, y3, p=3), "cdist_inf": lambda t, x3, y3, **_: t.cdist(x3, y3, p=INF),
    "cdist_p0": lambda t, x3, y3, **_: t.cdist(x3, y3, p=0), "cdist_batched": lambda t, P, R, **_: t.cdist(P, R),
    "cdist_bcast": lambda t, x3, R, **_: t.cdist(x3, R, p=1.5),
    # reductions and norms
    "logsumexp": lambda t, a, **_: a.logsumexp(1), "logsumexp_keep": lambda t, B, **_: t.logsumexp(B, (0, 2), keepdim=True),
    "norm": lambda t, a, **_: a.norm(), "norm_p1_dim": lambda t, a, **_: a.norm(1, dim=1), "norm_inf": lambda t, a, **_: t.norm(a, INF),
    "norm_fro_dim": lambda t, B, **_: B.norm("fro", dim=(1, 2)), "norm_3_keep": lambda t, a, **_: a.norm(3, 0, keepdim=True),
    "linalg_norm": lambda t, a, **_: t.linalg.norm(a), "linalg_norm_dim": lambda t, a, **_: t.linalg.norm(a, dim=1),
    "linalg_norm_ord3": lambda t, a, **_: t.linalg.norm(a, 3, dim=-1, keepdim=True),
    "linalg_norm_vec_ord": lambda t, v, **_: t.linalg.norm(v, ord=1),
    "linalg_norm_fro": lambda t, a, **_: t.linalg.norm(a, "fro"), "linalg_norm_nuc": lambda t, a, **_: t.linalg.norm(a, "nuc"),
    "linalg_norm_1": lambda t, a, **_: t.linalg.norm(a, 1), "linalg_norm_m1": lambda t, a, **_: t.linalg.norm(a, -1),
    "linalg_norm_inf": lambda t, a, **_: t.linalg.norm(a, INF), "linalg_norm_minf": lambda t, a, **_: t.linalg.norm(a, -INF),
    "linalg_norm_2": lambda t, a, **_: t.linalg.norm(a, 2), "linalg_norm_m2": lambda t, a, **_: t.linalg.norm(a, -2),
    "linalg_norm_dims": lambda t, B, **_: t.linalg.norm(B, 1, dim=(2, 0)),
    "linalg_norm_dims_keep": lambda t, B, **_: t.linalg.norm(B, INF, dim=(0, 2), keepdim=True),
    "matrix_norm": lambda t, B, **_: t.linalg.matrix_norm(B), "matrix_norm_2": lambda t, B, **_: t.linalg.matrix_norm(B, 2),
    "matrix_norm_2_dims": lambda t, B, **_: t.linalg.matrix_norm(B, 2, dim=(0, 2)),
    "matrix_norm_2_keep": lambda t, B, **_: t.linalg.matrix_norm(B, -2, keepdim=True),
    "vector_norm": lambda t, B, **_: t.linalg.vector_norm(B, 2.5, dim=(0, 1)),
    "vector_norm_inf": lambda t, a, **_: t.linalg.vector_norm(a, INF), "svdvals": lambda t, a, **_: t.linalg.svdvals(a),
    # in place, on non-leaves (version bumps and graph rewriting as in torch)
    "scatter_": lambda t, a, b, idx, **_: one(t, a).scatter_(0, idx, b[1:]),
    "scatter_value_": lambda t, a, idx, **_: one(t, a).scatter_(1, idx[:, :2], -1.0),
    "scatter_add_": lambda t, a, b, idx, **_: one(t, a).scatter_add_(0, idx, b[:2]),
    "index_add_": lambda t, a, b, **_: one(t, a).index_add_(0, t.tensor([2, 2, 1]), b, alpha=3),
    "scatter_reduce_": lambda t, a, b, idx, **_: one(t, a).scatter_reduce_(0, idx, b[:2], "amax"),
    "inplace_on_view": lambda t, a, b, **_: (lambda x: (x[1:].scatter_add_(0, t.tensor([[0, 1, 1, 0], [1, 0, 0, 1]]), b[:2]), x)[1])(one(t, a)),
    "tril_then_use": lambda t, sq, **_: (lambda x: x.tril_() * x)(sq * 2),
    "inplace_after_save": lambda t, sq, **_: (lambda x: x.tril_() * x)(sq.exp()),  # both raise in backward
}

# scatter_reduce with every reduction and both include_self settings; ties in amax/amin exercise
# torch's even split of the gradient
for _red in ("sum", "prod", "mean", "amax", "amin"):
    for _inc in (True, False):
        CASES[f"scatter_reduce_{_red}_{_inc}"] = (
            lambda t, a, b, idx, r=_red, i=_inc, **_: a.scatter_reduce(0, idx, b[:2], r, include_self=i))
CASES["scatter_reduce_ties"] = lambda t, ties, **_: ties.scatter_reduce(
    0, t.tensor([[0, 0, 1, 1, 2, 2], [0, 0, 1, 1, 2, 2]]), ties[:2] * 1, "amax")
CASES["scatter_reduce_zeros"] = lambda t, a, **_: t.where(a > 0.3, a, 0.0).scatter_reduce(
    1, t.tensor([[0, 0, 0, 0], [1, 1, 1, 1], [0, 1, 0, 1]]), t.where(a < -0.5, 0.0, a), "prod")

# the cases where torch raises (the engine must raise the same)
RAISING = {"inplace_after_save"}

# torch decomposes einsum (grad_fn = its last view/permute/mul/sum/bmm), the engine records one node
_OWN_GRAD_FN = {k for k in CASES if k.startswith("einsum")}


@pytest.mark.parametrize("name", list(CASES))
def test_matches_torch(torch, name):
    e_out, e_grads = run_case(engine, CASES[name])
    t_out, t_grads = run_case(torch, CASES[name])
    assert t_out[0].startswith("raised") == (name in RAISING)  # no case fails by accident
    if t_out[0].startswith("raised") or e_out[0].startswith("raised"):
        assert e_out == t_out
        return
    assert e_out[0] == t_out[0]  # tuple kind (the named tuple's name) or "single"
    assert len(e_out[1]) == len(t_out[1])
    for (ev, *e_rest), (tv, *t_rest) in zip(e_out[1], t_out[1]):
        if isinstance(tv, np.ndarray):
            assert ev.shape == tv.shape
            np.testing.assert_allclose(ev, tv, rtol=1e-5, atol=1e-5)
            assert e_rest[0] == t_rest[0], "dtype"
            if name not in _OWN_GRAD_FN:
                assert e_rest[1] == t_rest[1], "grad_fn"
        else:
            assert ev == tv
    assert e_grads.keys() == t_grads.keys()
    for k in e_grads:
        np.testing.assert_allclose(e_grads[k], t_grads[k], rtol=1e-4, atol=1e-5, err_msg=k)


def test_einsum_records_one_node():
    x = engine.ones(2, 3, requires_grad=True)
    assert engine.einsum("ij->j", x).grad_fn.name() == "EinsumBackward0"


def test_named_tuples_unpack_and_name_fields(torch):
    for lib in (engine, torch):
        x = lib.tensor([[3.0, 1.0, 2.0]])
        values, indices = x.topk(2)
        assert x.topk(2).values.tolist() == values.tolist() == [[3.0, 2.0]]
        assert x.sort().indices.tolist() == [[1, 2, 0]] and x.sort()[0].tolist() == [[1.0, 2.0, 3.0]]
        assert x.sort(descending=True).indices.tolist() == [[0, 2, 1]]
        assert type(x.topk(1)).__name__ == "topk" and type(x.sort()).__name__ == "sort"
        assert indices.dtype == lib.int64


def test_scatter_with_reduce_is_not_differentiable_like_torch(torch):
    for lib in (engine, torch):
        a = lib.zeros(3, 4, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y = (a * 1).scatter(0, lib.tensor([[0, 1, 2, 0]]), lib.ones(1, 4), reduce="add")
        assert y.grad_fn.name().endswith("NotImplemented")
        with pytest.raises(RuntimeError, match="derivative for aten::scatter is not implemented"):
            y.sum().backward()


ERRORS = {
    "tril_1d": lambda t: t.tril(t.ones(3)), "triu_1d": lambda t: t.ones(3).triu(),
    "roll_mismatch": lambda t: t.ones(3, 4).roll((1, 2), (0,)), "roll_baddim": lambda t: t.ones(3, 4).roll(1, 5),
    "roll_none_two": lambda t: t.ones(3, 4).roll((1, 2)),
    "diagonal_same": lambda t: t.ones(3, 4).diagonal(0, 1, 1), "diag_3d": lambda t: t.diag(t.ones(2, 2, 2)),
    "topk_k": lambda t: t.ones(3, 4).topk(5), "topk_dim": lambda t: t.ones(3, 4).topk(1, dim=2),
    "sort_dim": lambda t: t.ones(3, 4).sort(dim=3),
    "isclose_dtype": lambda t: t.isclose(t.ones(2), t.ones(2, dtype=t.float64)),
    "isclose_shape": lambda t: t.isclose(t.ones(3, 4), t.ones(5)),
    "isclose_rtol": lambda t: t.isclose(t.ones(2), t.ones(2), rtol=-1.0),
    "allclose_shape": lambda t: t.allclose(t.ones(2), t.ones(3)),
    "ri_negative": lambda t: t.ones(3).repeat_interleave(-1),
    "ri_size": lambda t: t.ones(3, 4).repeat_interleave(t.tensor([1, 2]), dim=0),
    "ri_neg_tensor": lambda t: t.ones(3, 4).repeat_interleave(t.tensor([1, -2, 1]), dim=0),
    "ri_2d": lambda t: t.ones(3, 4).repeat_interleave(t.tensor([[1, 2, 0]]), dim=0),
    "ri_output_size": lambda t: t.ones(3, 4).repeat_interleave(t.tensor([1, 2, 0]), dim=0, output_size=4),
    "scatter_float_index": lambda t: t.zeros(3, 4).scatter(0, t.zeros(2, 4), 1.0),
    "scatter_index_ndim": lambda t: t.zeros(3, 4).scatter(0, t.tensor([0, 1]), 1.0),
    "scatter_oob": lambda t: t.zeros(3, 4).scatter(0, t.tensor([[5, 0]]), 1.0),
    "scatter_negative": lambda t: t.zeros(3, 4).scatter(0, t.tensor([[-1, 0]]), 1.0),
    "scatter_src_small": lambda t: t.zeros(3, 4).scatter(0, t.zeros(2, 4, dtype=t.long), t.ones(1, 4)),
    "scatter_self_small": lambda t: t.zeros(3, 4).scatter(1, t.zeros(4, 4, dtype=t.long), t.ones(4, 4)),
    "scatter_dtype": lambda t: t.zeros(3, 4).scatter(0, t.zeros(2, 4, dtype=t.long), t.ones(2, 4, dtype=t.float64)),
    "scatter_reduce_name": lambda t: t.zeros(3, 4).scatter(0, t.zeros(2, 4, dtype=t.long), 1.0, reduce="sum"),
    "scatter_src_ndim": lambda t: t.zeros(3, 4).scatter(0, t.zeros(1, 4, dtype=t.long), t.ones(4)),
    "scatter_add_scalar": lambda t: t.zeros(3, 4).scatter_add(0, t.zeros(1, 4, dtype=t.long), 1.0),
    "scatter_add_oob": lambda t: t.zeros(3, 4).scatter_add(0, t.full((1, 4), 3), t.ones(1, 4)),
    "scatter_reduce_bad": lambda t: t.zeros(3, 4).scatter_reduce(0, t.zeros(1, 4, dtype=t.long), t.ones(1, 4), "foo"),
    "scatter_reduce_dtype": lambda t: t.zeros(3, 4).scatter_reduce(0, t.zeros(1, 4, dtype=t.long), t.ones(1, 4).double(), "sum"),
    "gather_oob": lambda t: t.zeros(3, 4).gather(0, t.tensor([[0, 3]])),
    "gather_negative": lambda t: t.zeros(3, 4).gather(0, t.tensor([[0, -5]])),
    "gather_ndim": lambda t: t.zeros(3, 4).gather(0, t.tensor([0])),
    "index_add_count": lambda t: t.zeros(3, 4).index_add(0, t.tensor([0, 2]), t.ones(3, 4)),
    "index_add_shape": lambda t: t.zeros(3, 4).index_add(0, t.tensor([0, 2]), t.ones(2, 5)),
    "index_add_oob": lambda t: t.zeros(3, 4).index_add(0, t.tensor([0, 5]), t.ones(2, 4)),
    "index_add_float": lambda t: t.zeros(3, 4).index_add(0, t.tensor([0.0, 2.0]), t.ones(2, 4)),
    "index_add_2d": lambda t: t.zeros(3, 4).index_add(0, t.tensor([[0, 2]]), t.ones(2, 4)),
    "index_add_dtype": lambda t: t.zeros(3, 4).index_add(0, t.tensor([0, 2]), t.ones(2, 4, dtype=t.float64)),
    "index_select_oob": lambda t: t.zeros(3, 4).index_select(0, t.tensor([0, 5])),
    "index_select_float": lambda t: t.zeros(3, 4).index_select(0, t.tensor([0.0, 1.0])),
    "index_select_2d": lambda t: t.zeros(3, 4).index_select(0, t.tensor([[0, 1]])),
    "masked_select_shape": lambda t: t.zeros(3, 4).masked_select(t.ones(5, dtype=t.bool)),
    "masked_select_dtype": lambda t: t.zeros(3, 4).masked_select(t.ones(4)),
    "bincount_negative": lambda t: t.bincount(t.tensor([1, -1])), "bincount_2d": lambda t: t.bincount(t.tensor([[1, 1]])),
    "bincount_float": lambda t: t.bincount(t.tensor([1.0, 1.0])),
    "bincount_weights": lambda t: t.bincount(t.tensor([1, 1]), weights=t.tensor([1.0, 2.0, 3.0])),
    "bincount_minlength": lambda t: t.bincount(t.tensor([1, 1]), minlength=-1),
    "searchsorted_shape": lambda t: t.searchsorted(t.tensor([[1.0, 2.0, 3.0]]), t.tensor([2.5])),
    "searchsorted_side": lambda t: t.searchsorted(t.tensor([1.0, 2.0]), t.tensor([1.5]), side="foo"),
    "searchsorted_opposite": lambda t: t.searchsorted(t.tensor([1.0, 2.0]), t.tensor([1.5]), side="left", right=True),
    "bucketize_2d": lambda t: t.bucketize(t.tensor([2.5]), t.tensor([[1.0, 2.0, 3.0]])),
    "outer_2d": lambda t: t.outer(t.ones(2, 2), t.ones(2)), "outer_vec2": lambda t: t.outer(t.ones(2), t.ones(2, 2)),
    "cross_len": lambda t: t.cross(t.ones(3, 4), t.ones(3, 4), dim=1),
    "cross_bcast": lambda t: t.linalg.cross(t.ones(3, 3), t.ones(2, 3)),
    "cross_none": lambda t: t.cross(t.ones(2, 4), t.ones(2, 4)),
    "cross_dtype": lambda t: t.cross(t.ones(3), t.ones(3, dtype=t.float64), dim=0),
    "cdist_dtype": lambda t: t.cdist(t.ones(2, 2), t.ones(2, 2, dtype=t.float64)),
    "einsum_dtype": lambda t: t.einsum("ij,jk->ik", t.ones(2, 2), t.ones(2, 2, dtype=t.float64)),
    "cdist_cols": lambda t: t.cdist(t.ones(3, 4), t.ones(2, 3)), "cdist_1d": lambda t: t.cdist(t.ones(4), t.ones(3, 4)),
    "cdist_1d_x2": lambda t: t.cdist(t.ones(3, 4), t.ones(4)),
    "cdist_p": lambda t: t.cdist(t.ones(3, 4), t.ones(3, 4), p=-1),
    "meshgrid_indexing": lambda t: t.meshgrid(t.ones(2), t.ones(3), indexing="foo"),
    "broadcast_to": lambda t: t.ones(3, 4).broadcast_to(2, 5),
    "narrow_overflow": lambda t: t.ones(3, 4).narrow(1, 3, 2), "narrow_start": lambda t: t.ones(3, 4).narrow(1, 5, 0),
    "narrow_length": lambda t: t.ones(3, 4).narrow(1, 1, -1),
    "take_along_dim_dtype": lambda t: t.take_along_dim(t.ones(3, 4), t.zeros(3, 4), 0),
    "take_along_dim_ndim": lambda t: t.take_along_dim(t.ones(3, 4), t.tensor([0]), 0),
    "tensor_split_zero": lambda t: t.ones(3, 4).tensor_split(0),
    "tensor_split_float": lambda t: t.ones(3, 4).tensor_split(t.tensor([1.0])),
    "tensor_split_2d": lambda t: t.ones(3, 4).tensor_split(t.tensor([[1]])),
    "flip_twice": lambda t: t.ones(3, 4).flip((0, 0)),
    "multinomial_n": lambda t: t.multinomial(t.tensor([0.2, 0.8]), 3),
    "multinomial_neg": lambda t: t.multinomial(t.tensor([-1.0, 1.0]), 1),
    "multinomial_nan": lambda t: t.multinomial(t.tensor([float("nan"), 1.0]), 1),
    "multinomial_zero_sum": lambda t: t.multinomial(t.tensor([0.0, 0.0]), 1),
    "multinomial_3d": lambda t: t.multinomial(t.ones(2, 2, 2), 1),
    "multinomial_zero_samples": lambda t: t.multinomial(t.ones(2), 0),
    "multinomial_int": lambda t: t.multinomial(t.tensor([1, 2]), 1),
    "linalg_norm_3d_ord": lambda t: t.linalg.norm(t.ones(2, 2, 2), ord=2),
    "linalg_norm_str_dim": lambda t: t.linalg.norm(t.ones(3, 4), ord="fro", dim=1),
    "matrix_norm_1d": lambda t: t.linalg.matrix_norm(t.ones(3)),
    "matrix_norm_ord": lambda t: t.linalg.norm(t.ones(3, 4), ord=3),
    "linalg_norm_int": lambda t: t.linalg.norm(t.ones(3, 4, dtype=t.long)),
    "matrix_norm_int": lambda t: t.linalg.matrix_norm(t.ones(3, 4, dtype=t.long)),
    "einsum_few": lambda t: t.einsum("ij,jk->ik", t.ones(3, 3)),
    "einsum_many": lambda t: t.einsum("ij->ij", t.ones(3, 3), t.ones(3, 3)),
    "einsum_size": lambda t: t.einsum("ij,jk->ik", t.ones(3, 3), t.ones(4, 2)),
    "einsum_out": lambda t: t.einsum("ij->ik", t.ones(3, 3)),
    "einsum_ndim": lambda t: t.einsum("ijk->ij", t.ones(3, 3)),
    "einsum_ndim_ell": lambda t: t.einsum("...ijk->ij", t.ones(3, 3)),
    "einsum_out_twice": lambda t: t.einsum("ij->ii", t.ones(3, 3)),
    "einsum_bad_char": lambda t: t.einsum("i1->i", t.ones(3, 3)),
    "where_int_cond": lambda t: t.where(t.tensor([1, 0]), 1.0, 0.0),
    "clamp_t_shape": lambda t: t.ones(3, 4).clamp(min=t.zeros(5)),
    "argmax_empty": lambda t: t.ones(0).argmax(),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors_match_torch(torch, name):
    results = []
    for lib in (engine, torch):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(Exception) as info:  # noqa: B017 - the type is compared below
                ERRORS[name](lib)
        results.append((info.type.__name__, str(info.value).split("\n")[0]))
    assert results[0] == results[1]


@pytest.mark.parametrize("name,dim", [("_unique2", None), ("unique_dim", 0)])
def test_unique_of_a_tensor_that_requires_grad_is_not_differentiable_like_torch(torch, name, dim):
    for lib in (engine, torch):
        values, inverse, counts = lib.unique(lib.tensor([2.0, 1.0, 2.0], requires_grad=True), dim=dim,
                                             return_inverse=True, return_counts=True)
        assert values.requires_grad and not inverse.requires_grad and not counts.requires_grad
        with pytest.raises(RuntimeError, match=f"the derivative for '{name}' is not implemented."):
            values.sum().backward()


def _user_warnings(call) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return [str(w.message).split(" (Triggered")[0] for w in caught if w.category is UserWarning]


def test_cross_without_dim_warns_deprecated():
    # torch's text (torch warns once per process, so it is not re-triggered here)
    assert _user_warnings(lambda: engine.cross(engine.ones(3), engine.ones(3))) == [
        "Using torch.cross without specifying the dim arg is deprecated.\nPlease either pass the dim explicitly "
        "or simply use torch.linalg.cross.\nThe default value of dim will change to agree with that of "
        "linalg.cross in a future release."]
    assert _user_warnings(lambda: engine.cross(engine.ones(3), engine.ones(3), dim=0)) == []


def test_meshgrid_without_indexing_warns_like_torch(torch):
    got = _user_warnings(lambda: engine.meshgrid(engine.ones(2), engine.ones(3)))
    assert got == _user_warnings(lambda: torch.meshgrid(torch.ones(2), torch.ones(3))) and len(got) == 1


def test_scatter_reduce_argument_with_tensor_src_warns_deprecated():
    # torch's text (torch warns once per process, so it is not re-triggered here)
    assert _user_warnings(lambda: engine.zeros(3).scatter(0, engine.tensor([0]), engine.ones(1), reduce="add")) == [
        "The reduce argument of torch.scatter with Tensor src is deprecated and will be removed in a future "
        "PyTorch release. Use torch.scatter_reduce instead for more reduction options."]
    assert _user_warnings(lambda: engine.zeros(3).scatter(0, engine.tensor([0]), 1.0, reduce="add")) == []


def test_meshgrid_rejects_2d_inputs_like_torch(torch):
    for lib in (engine, torch):
        with pytest.raises(RuntimeError, match="torch.meshgrid: Expected 0D or 1D tensor in the tensor list"):
            lib.meshgrid(lib.ones(2, 2), lib.ones(2), indexing="ij")


INPLACE = {
    "tril_": lambda x, t: x.tril_(), "triu_": lambda x, t: x.triu_(1),
    "scatter_": lambda x, t: x.scatter_(0, t.tensor([[0, 1]]), t.ones(1, 2)),
    "scatter_value_": lambda x, t: x.scatter_(0, t.tensor([[0, 1]]), 2.0),
    "scatter_add_": lambda x, t: x.scatter_add_(0, t.tensor([[0, 1]]), t.ones(1, 2)),
    "scatter_reduce_": lambda x, t: x.scatter_reduce_(0, t.tensor([[0, 1]]), t.ones(1, 2), "sum"),
    "index_add_": lambda x, t: x.index_add_(0, t.tensor([1]), t.ones(1, 2)),
}


@pytest.mark.parametrize("name", list(INPLACE))
def test_inplace_on_leaf_that_requires_grad_is_refused(torch, name):
    for lib in (engine, torch):
        x = lib.ones(2, 2, requires_grad=True)
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation."):
            INPLACE[name](x, lib)


@pytest.mark.parametrize("name", list(INPLACE))
def test_inplace_bumps_version_and_returns_self(torch, name):
    for lib in (engine, torch):
        x = lib.ones(2, 2)
        v0 = _version(x)
        assert INPLACE[name](x, lib) is x
        assert _version(x) == v0 + 1


@pytest.mark.parametrize("name", list(INPLACE))
def test_inplace_values_match_torch(torch, name):
    vals = []
    for lib in (engine, torch):
        x = lib.tensor([[1.0, 2.0], [3.0, 4.0]])
        vals.append(INPLACE[name](x, lib).numpy().copy())
    np.testing.assert_allclose(vals[0], vals[1])


def test_inplace_after_save_is_caught_in_backward(torch):
    for lib in (engine, torch):
        x = lib.ones(3, 3, requires_grad=True)
        y = x.exp()
        z = y.sin()  # saves y
        y.tril_()
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            z.sum().backward()


def test_diagonal_is_a_writable_view(torch):
    for lib in (engine, torch):
        x = lib.zeros(3, 3)
        x.diagonal().fill_(1.0)
        assert x.tolist() == lib.eye(3).tolist()
        d = x.diagonal(1)
        d += 2
        assert x[0, 1].item() == 2.0 and _version(x) == _version(d) == 2


# --- multinomial: the engine's random stream, so compare distributions, shapes, dtypes ------------


def test_multinomial_with_replacement_follows_the_probabilities():
    engine.manual_seed(0)
    probs = engine.tensor([[0.1, 0.0, 0.6, 0.3], [1.0, 1.0, 0.0, 2.0]])
    s = engine.multinomial(probs, 20000, replacement=True)
    assert s.shape == (2, 20000) and s.dtype == engine.int64
    freq = np.stack([np.bincount(r, minlength=4) / 20000 for r in s.numpy()])
    expected = probs.numpy() / probs.numpy().sum(1, keepdims=True)
    np.testing.assert_allclose(freq, expected, atol=0.015)
    assert (freq[:, [1, 2]][[0, 1], [0, 1]] == 0).all()  # zero-probability categories never drawn


def test_multinomial_without_replacement_draws_each_category_once_in_probability_order():
    engine.manual_seed(1)
    probs = engine.tensor([0.05, 0.0, 0.7, 0.25])
    draws = np.stack([probs.multinomial(3).numpy() for _ in range(3000)])
    assert all(len(set(r)) == 3 and 1 not in r for r in draws.tolist())
    first = np.bincount(draws[:, 0], minlength=4) / 3000
    np.testing.assert_allclose(first, [0.05, 0.0, 0.7, 0.25], atol=0.03)
    # the second draw follows the renormalised rest: P(second = 3 | first = 2) = 0.25 / 0.3
    second = draws[draws[:, 0] == 2, 1]
    assert abs((second == 3).mean() - 0.25 / 0.3) < 0.04


def test_multinomial_generator_and_seed_reproduce(torch):
    g = engine.Generator().manual_seed(7)
    a = engine.multinomial(engine.ones(5), 5, generator=g)
    g.manual_seed(7)
    assert engine.multinomial(engine.ones(5), 5, generator=g).tolist() == a.tolist()
    engine.manual_seed(3)
    b = engine.ones(2, 5).multinomial(4, replacement=True)
    engine.manual_seed(3)
    assert engine.ones(2, 5).multinomial(4, replacement=True).tolist() == b.tolist()
    t = torch.multinomial(torch.ones(2, 5), 4, replacement=True)
    assert b.shape == tuple(t.shape) and str(b.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    assert engine.multinomial(engine.ones(3), 1).shape == tuple(torch.multinomial(torch.ones(3), 1).shape)
