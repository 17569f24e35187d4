"""``axis=``/``keepdims=`` for ``dim=``/``keepdim=``: accepted where torch's argument parser accepts
them (its native functions and Tensor methods), refused where torch refuses them, compared with torch."""

from __future__ import annotations

import inspect
import types

import numpy as np
import pytest

import engine
from engine._ops import numpy_names
from tests.engine._outcomes import outcome, same

X = np.arange(12, dtype=np.float32).reshape(3, 4) % 5 - 1.5
IDX = np.array([[0, 1, 2, 0], [2, 0, 1, 1], [1, 1, 0, 2]])


def t(lib):
    return lib.tensor(X)


def i(lib):
    return lib.tensor(IDX)


CASES = {
    "Tensor.argmax": lambda L: t(L).argmax(axis=1),
    "Tensor.argmin keepdims": lambda L: t(L).argmin(axis=0, keepdims=True),
    "Tensor.sum": lambda L: t(L).sum(axis=1, keepdims=True),
    "torch.sum": lambda L: L.sum(t(L), axis=0),
    "Tensor.mean": lambda L: t(L).mean(axis=0),
    "torch.mean keepdims": lambda L: L.mean(t(L), axis=1, keepdims=True),
    "Tensor.std": lambda L: t(L).std(axis=1),
    "torch.var": lambda L: L.var(t(L), axis=0, keepdims=True),
    "torch.std_mean": lambda L: L.std_mean(t(L), axis=1),
    "torch.var_mean": lambda L: L.var_mean(t(L), axis=0),
    "Tensor.prod": lambda L: t(L).prod(axis=1),
    "Tensor.max": lambda L: t(L).max(axis=1),
    "torch.min": lambda L: L.min(t(L), axis=0, keepdims=True),
    "Tensor.amax": lambda L: t(L).amax(axis=1),
    "torch.amin": lambda L: L.amin(t(L), axis=(0, 1)),
    "Tensor.aminmax": lambda L: t(L).aminmax(axis=0),
    "Tensor.all": lambda L: (t(L) > -1).all(axis=1),
    "torch.any": lambda L: L.any(t(L) > 2, axis=0),
    "Tensor.logsumexp": lambda L: t(L).logsumexp(axis=1),
    "Tensor.cumsum": lambda L: t(L).cumsum(axis=1),
    "torch.cumprod": lambda L: L.cumprod(t(L), axis=0),
    "Tensor.cumsum_": lambda L: t(L).clone().cumsum_(axis=0),
    "Tensor.cummax": lambda L: t(L).cummax(axis=1),
    "torch.cummin": lambda L: L.cummin(t(L), axis=0),
    "Tensor.logcumsumexp": lambda L: t(L).logcumsumexp(axis=1),
    "Tensor.softmax": lambda L: t(L).softmax(axis=0),
    "torch.log_softmax": lambda L: L.log_softmax(t(L), axis=1),
    "Tensor.median": lambda L: t(L).median(axis=1),
    "torch.nanmedian": lambda L: L.nanmedian(t(L), axis=0),
    "Tensor.nansum": lambda L: t(L).nansum(axis=1),
    "Tensor.nanmean": lambda L: t(L).nanmean(axis=0, keepdims=True),
    "Tensor.count_nonzero": lambda L: t(L).count_nonzero(axis=1),
    "Tensor.kthvalue": lambda L: t(L).kthvalue(2, axis=1),
    "Tensor.mode": lambda L: t(L).mode(axis=0),
    "Tensor.quantile": lambda L: t(L).quantile(0.25, axis=1),
    "torch.nanquantile": lambda L: L.nanquantile(t(L), 0.5, axis=0, keepdims=True),
    "Tensor.sort": lambda L: t(L).sort(axis=1, descending=True),
    "torch.argsort": lambda L: L.argsort(t(L), axis=0),
    "Tensor.topk": lambda L: t(L).topk(2, axis=0),
    "Tensor.squeeze": lambda L: t(L)[:1].squeeze(axis=0),
    "torch.unsqueeze": lambda L: L.unsqueeze(t(L), axis=1),
    "Tensor.unsqueeze_": lambda L: t(L).clone().unsqueeze_(axis=2),
    "torch.cat": lambda L: L.cat([t(L), t(L)], axis=1),
    "torch.concat": lambda L: L.concat([t(L), t(L)], axis=0),
    "torch.concatenate": lambda L: L.concatenate([t(L), t(L)], axis=1),
    "torch.stack": lambda L: L.stack([t(L), t(L)], axis=2),
    "Tensor.chunk": lambda L: t(L).chunk(2, axis=1),
    "torch.tensor_split": lambda L: L.tensor_split(t(L), 3, axis=1),
    "Tensor.split_with_sizes": lambda L: t(L).split_with_sizes([1, 3], axis=1),
    "Tensor.unbind": lambda L: t(L).unbind(axis=1),
    "Tensor.narrow": lambda L: t(L).narrow(axis=1, start=1, length=2),
    "Tensor.select": lambda L: t(L).select(axis=1, index=2),
    "Tensor.index_select": lambda L: t(L).index_select(axis=1, index=L.tensor([3, 0])),
    "Tensor.gather": lambda L: t(L).gather(axis=1, index=i(L)),
    "torch.take_along_dim": lambda L: L.take_along_dim(t(L), i(L), axis=1),
    "Tensor.scatter_add": lambda L: t(L).scatter_add(axis=1, index=i(L), src=t(L)),
    "Tensor.scatter_reduce": lambda L: t(L).scatter_reduce(0, i(L)[:, :3] % 3, t(L), "amax"),
    "Tensor.index_add": lambda L: t(L).index_add(axis=0, index=L.tensor([0, 2]), source=t(L)[:2]),
    "Tensor.index_fill": lambda L: t(L).index_fill(axis=1, index=L.tensor([1]), value=9.0),
    "Tensor.repeat_interleave": lambda L: t(L).repeat_interleave(2, axis=0),
    "Tensor.diff": lambda L: t(L).diff(axis=1),
    "Tensor.cross": lambda L: t(L)[:, :3].cross(t(L)[:, 1:], axis=1),
    "Tensor.renorm": lambda L: t(L).renorm(2, axis=0, maxnorm=1.0),
    "torch.cosine_similarity": lambda L: L.cosine_similarity(t(L), t(L) + 1, axis=0),
    "torch.pairwise_distance": lambda L: L.pairwise_distance(t(L), t(L) * 2, keepdims=True),
    "torch.trapezoid": lambda L: L.trapezoid(t(L), axis=0),
    "torch.cumulative_trapezoid": lambda L: L.cumulative_trapezoid(t(L), axis=1),
    "torch.unflatten": lambda L: L.unflatten(t(L), axis=1, sizes=(2, 2)),
    # both spellings of one argument: torch refuses the NumPy one by name
    "dim and axis": lambda L: t(L).sum(dim=1, axis=1),
    "keepdim and keepdims": lambda L: L.mean(t(L), 1, keepdim=True, keepdims=True),
    # torch's Python-defined functions have no NumPy names: refused by both
    "Tensor.split refuses axis": lambda L: t(L).split(2, axis=1),
    "torch.unique refuses axis": lambda L: L.unique(t(L), axis=0),
    "Tensor.norm refuses axis": lambda L: t(L).norm(axis=1),
}


@pytest.mark.parametrize("case", list(CASES))
def test_numpy_names_match_torch(case):
    torch = pytest.importorskip("torch")
    fn = CASES[case]
    e, r = outcome(engine, fn, torch), outcome(torch, fn, torch)
    if "refuses" in case:  # torch's message names its Python helper (_return_output, Tensor.norm)
        assert e[:2] == r[:2] == ("err", "TypeError") and "'axis'" in e[2] and "'axis'" in r[2], (e, r)
    else:
        assert same(e, r), (e, r)


@pytest.mark.parametrize("case", ["dim and axis", "keepdim and keepdims", "Tensor.split refuses axis"])
def test_the_refusals_are_errors(case):
    with pytest.raises(TypeError, match="axis|keepdims"):
        CASES[case](engine)


def test_the_lists_name_engine_ops_with_a_dim_argument():
    """The renamed argument exists on every wrapped op (else the alias would turn into a TypeError)."""
    owners = [(engine.Tensor, numpy_names.TENSOR_METHODS), (engine, numpy_names.FUNCTIONS)]
    for owner, names in owners:
        for name in names:
            params = inspect.signature(getattr(owner, name)).parameters
            assert "dim" in params or "keepdim" in params or any(
                p.kind is p.VAR_KEYWORD for p in params.values()), (owner, name)


def test_the_lists_are_torch_native_functions():
    """torch accepts the NumPy names on native functions only: each listed one is native in torch."""
    torch = pytest.importorskip("torch")
    native = (types.BuiltinFunctionType, types.MethodDescriptorType, types.WrapperDescriptorType)
    for owner, names in [(torch.Tensor, numpy_names.TENSOR_METHODS), (torch, numpy_names.FUNCTIONS)]:
        for name in names:
            assert isinstance(getattr(owner, name), native), (owner, name)
