"""``engine.linalg`` (``torch.linalg``): norms, products, decompositions and solvers.

A real submodule, so ``import engine.linalg`` and ``from engine.linalg import solve`` work as
they do for torch. The ops live in ``engine._ops.linalg_api`` (norms, cross, svdvals) and
``engine._ops.linalg_decompositions`` (det, inv, solve, cholesky, qr, eigh, svd, pinv, lstsq, ...).
"""

from ._ops.linalg import matmul
from ._ops.linalg_api import cross, matrix_norm, norm, svdvals, vector_norm
from ._ops.linalg_decompositions import (
    LinAlgError,
    cholesky,
    cholesky_ex,
    det,
    eigh,
    eigvalsh,
    inv,
    inv_ex,
    lstsq,
    matrix_exp,
    matrix_power,
    matrix_rank,
    multi_dot,
    pinv,
    qr,
    slogdet,
    solve,
    solve_triangular,
    svd,
    vander,
    vecdot,
)
from ._ops.shape import diagonal as _diagonal


def diagonal(A, *, offset: int = 0, dim1: int = -2, dim2: int = -1):  # noqa: N803 - torch's names
    """The diagonals of the matrices in ``A`` (a view), by default of the last two dims."""
    return _diagonal(A, offset, dim1, dim2)


__all__ = ["LinAlgError", "cholesky", "cholesky_ex", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "inv_ex",
           "lstsq", "matmul", "matrix_exp", "matrix_norm", "matrix_power", "matrix_rank", "multi_dot", "norm", "pinv",
           "qr", "slogdet", "solve", "solve_triangular", "svd", "svdvals", "vander", "vecdot", "vector_norm"]
