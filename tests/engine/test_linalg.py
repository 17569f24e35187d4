"""engine.linalg's decompositions and solvers (engine/_ops/linalg_decompositions.py) against torch:
values, gradients, grad_fn names and errors; finite-difference gradchecks without torch.

Eigen- and singular vectors are only defined up to sign, so the cases compare (and
differentiate) sign-free functions of them: their absolute values or products that cancel
the sign."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import engine
from tests.gradcheck import gradcheck

RNG = np.random.default_rng(3)
M = RNG.standard_normal((3, 3)) + 3 * np.eye(3)
MB = RNG.standard_normal((2, 3, 3)) + 3 * np.eye(3)
NEG = M.copy()
NEG[0] *= -1  # a negative determinant
TALL = RNG.standard_normal((4, 3))
WIDE = RNG.standard_normal((3, 4))
RHS = RNG.standard_normal((3, 2))
RHS4 = RNG.standard_normal((4, 2))
VEC = RNG.standard_normal((3,))
SINGULAR = np.array([[1.0, 2.0, 0.5], [2.0, 4.0, 1.0], [0.3, -1.0, 2.0]])  # rank 2
RANK1 = np.outer([1.0, -2.0, 0.5], [0.3, 1.0, 2.0])


def spd(lib, a):
    return a @ a.mT + lib.eye(a.shape[-1], dtype=a.dtype)


def sym(a):
    return a + a.mT


# name: (call(lib, *tensors) -> tensor or tuple of tensors, inputs, grad_fn name of the first output)
CASES = {
    "det": (lambda lib, m: lib.linalg.det(m), [M], "LinalgDetBackward0"),
    "det_batched": (lambda lib, m: lib.det(m), [MB], "LinalgDetBackward0"),
    "det_method": (lambda lib, m: m.det(), [NEG], "LinalgDetBackward0"),
    "det_singular": (lambda lib, m: lib.linalg.det(m), [SINGULAR], "LinalgDetBackward0"),
    "det_rank_deficient": (lambda lib, m: lib.linalg.det(m), [RANK1], "LinalgDetBackward0"),
    "slogdet": (lambda lib, m: lib.linalg.slogdet(m).logabsdet, [NEG], "LinalgSlogdetBackward0"),
    "slogdet_top": (lambda lib, m: lib.slogdet(m)[1], [MB], "LinalgSlogdetBackward0"),
    "logdet": (lambda lib, m: lib.logdet(m), [M], "WhereBackward0"),
    "logdet_method": (lambda lib, m: m.logdet(), [MB], "WhereBackward0"),
    "inv": (lambda lib, m: lib.linalg.inv(m), [M], "LinalgInvExBackward0"),
    "inverse": (lambda lib, m: lib.inverse(m), [MB], "LinalgInvExBackward0"),
    "inverse_method": (lambda lib, m: m.inverse(), [M], "LinalgInvExBackward0"),
    "solve": (lambda lib, m, b: lib.linalg.solve(m, b), [M, RHS], "LinalgSolveExBackward0"),
    "solve_vector": (lambda lib, m, v: lib.linalg.solve(m, v), [M, VEC], "LinalgSolveExBackward0"),
    "solve_right": (lambda lib, m, b: lib.linalg.solve(m, b.mT, left=False), [M, RHS], "LinalgSolveExBackward0"),
    "solve_broadcast": (lambda lib, m, b: lib.linalg.solve(m, b), [MB, RHS], "LinalgSolveExBackward0"),
    "cholesky": (lambda lib, a: lib.linalg.cholesky(spd(lib, a)), [M], "LinalgCholeskyExBackward0"),
    "cholesky_upper": (lambda lib, a: lib.linalg.cholesky(spd(lib, a), upper=True), [MB],
                       "LinalgCholeskyExBackward0"),
    "qr": (lambda lib, a: lib.linalg.qr(a), [TALL], "LinalgQrBackward0"),
    "qr_square": (lambda lib, a: lib.linalg.qr(a), [MB], "LinalgQrBackward0"),
    "qr_R_only": (lambda lib, a: lib.linalg.qr(a).R, [TALL], "LinalgQrBackward0"),
    "eigh": (lambda lib, a: (lambda r: (r.eigenvalues, r.eigenvectors.abs()))(lib.linalg.eigh(sym(a))), [M],
             "LinalgEighBackward0"),
    "eigh_upper": (lambda lib, a: (lambda r: (r[0], r[1].abs()))(lib.linalg.eigh(sym(a), UPLO="U")), [MB],
                   "LinalgEighBackward0"),
    "eigh_values_only": (lambda lib, a: lib.linalg.eigh(sym(a))[0], [M], "LinalgEighBackward0"),
    "eigvalsh": (lambda lib, a: lib.linalg.eigvalsh(sym(a)), [MB], "LinalgEighBackward0"),
    "svd": (lambda lib, a: (lambda r: (r.U.abs(), r.S, r.Vh.abs()))(lib.linalg.svd(a, full_matrices=False)),
            [TALL], "AbsBackward0"),
    "svd_wide": (lambda lib, a: (lambda r: (r.S, r.U.abs(), r.Vh.abs()))(lib.linalg.svd(a, full_matrices=False)),
                 [WIDE], "LinalgSvdBackward0"),
    "svd_full": (lambda lib, a: (lambda r: (r.S, r.U[:, :3].abs(), r.Vh.abs()))(lib.linalg.svd(a)), [TALL],
                 "LinalgSvdBackward0"),
    "svd_batched": (lambda lib, a: (lambda r: (r.S, r.U @ r.Vh))(lib.linalg.svd(a)), [MB], "LinalgSvdBackward0"),
    "svd_torch": (lambda lib, a: (lambda r: (r.S, r.U.abs(), r.V.abs()))(lib.svd(a)), [TALL], "LinalgSvdBackward0"),
    "svd_torch_full": (lambda lib, a: (lambda r: (r.S, r.U.abs(), r.V[:, :3].abs()))(a.svd(some=False)), [WIDE],
                       "LinalgSvdBackward0"),
    "pinv_tall": (lambda lib, a: lib.linalg.pinv(a), [TALL], "LinalgPinvBackward0"),
    "pinv_wide": (lambda lib, a: lib.linalg.pinv(a), [WIDE], "LinalgPinvBackward0"),
    "pinverse": (lambda lib, a: lib.pinverse(a), [MB], "LinalgPinvBackward0"),
    "lstsq": (lambda lib, a, b: lib.linalg.lstsq(a, b).solution, [TALL, RHS4], "LinalgLstsqBackward0"),
    "lstsq_square": (lambda lib, a, b: lib.linalg.lstsq(a, b)[0], [M, RHS], "LinalgLstsqBackward0"),
    "matrix_power_3": (lambda lib, a: lib.linalg.matrix_power(a, 3), [M], "MmBackward0"),
    "matrix_power_neg": (lambda lib, a: lib.linalg.matrix_power(a, -2), [M], "MmBackward0"),
    "matrix_power_1": (lambda lib, a: a.matrix_power(1), [M], "CloneBackward0"),
    "matrix_power_batched": (lambda lib, a: lib.linalg.matrix_power(a, 5), [MB], None),
    "multi_dot": (lambda lib, v, a, m, t: lib.linalg.multi_dot([v, m, a, t]), [VEC, TALL.T.copy(), M, RHS4], None),
    "multi_dot_mats": (lambda lib, t, m, w: lib.linalg.multi_dot([t, m, w]), [TALL, M, WIDE], None),
    "vecdot": (lambda lib, a, b: lib.linalg.vecdot(a, b), [M, MB], "SumBackward1"),
    "solve_triangular": (lambda lib, a, b: lib.linalg.solve_triangular(a, b, upper=True), [M, RHS],
                         "LinalgSolveTriangularBackward0"),
    "solve_triangular_lower_unit": (lambda lib, a, b: lib.linalg.solve_triangular(a, b, upper=False,
                                                                                 unitriangular=True),
                                    [MB, RHS], "LinalgSolveTriangularBackward0"),
    "solve_triangular_right": (lambda lib, a, b: lib.linalg.solve_triangular(a, b.mT, upper=False, left=False),
                               [M, RHS], "LinalgSolveTriangularBackward0"),
    "matrix_exp": (lambda lib, a: lib.linalg.matrix_exp(a), [M], "LinalgMatrixExpBackward0"),
    "matrix_exp_batched": (lambda lib, a: lib.matrix_exp(a * 0.1), [MB], "LinalgMatrixExpBackward0"),
    "matrix_exp_method": (lambda lib, a: a.matrix_exp(), [TALL[:3]], "LinalgMatrixExpBackward0"),
    "inv_ex": (lambda lib, a: lib.linalg.inv_ex(a).inverse, [MB], "LinalgInvExBackward0"),
    "cholesky_ex": (lambda lib, a: lib.linalg.cholesky_ex(spd(lib, a))[0], [M], "LinalgCholeskyExBackward0"),
    "cholesky_solve": (lambda lib, a, b: lib.cholesky_solve(b, lib.linalg.cholesky(spd(lib, a))), [M, RHS], None),
    "cholesky_solve_upper": (lambda lib, a, b: b.cholesky_solve(lib.linalg.cholesky(spd(lib, a), upper=True),
                                                                upper=True), [MB, RHS], None),
    "cholesky_inverse": (lambda lib, a: lib.cholesky_inverse(lib.linalg.cholesky(spd(lib, a))), [M], None),
    "qr_torch": (lambda lib, a: lib.qr(a), [TALL], "LinalgQrBackward0"),
    "qr_torch_method": (lambda lib, a: a.qr(some=True)[1], [M], "LinalgQrBackward0"),
    "linalg_vander": (lambda lib, v: lib.linalg.vander(v, N=4), [VEC], "CatBackward0"),
    "linalg_vander_batched": (lambda lib, a: lib.linalg.vander(a), [TALL], "CatBackward0"),
}


def _outputs(out):
    return list(out) if isinstance(out, tuple) else [out]


def _run(lib, name, dtype):
    call, inputs, _ = CASES[name]
    ts = [lib.tensor(x, dtype=dtype, requires_grad=True) for x in inputs]
    outs = _outputs(call(lib, *ts))
    loss = 0
    for k, o in enumerate(outs):
        w = np.cos(np.arange(o.numel()) + k).reshape(tuple(o.shape))
        loss = loss + (o * lib.tensor(w, dtype=o.dtype)).sum()
    loss.backward()
    return outs, [t.grad for t in ts]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_parity(name, dtype):
    torch = pytest.importorskip("torch")
    e_outs, e_grads = _run(engine, name, getattr(engine, dtype))
    t_outs, t_grads = _run(torch, name, getattr(torch, dtype))
    tol = dict(rtol=1e-9, atol=1e-9) if dtype == "float64" else dict(rtol=2e-4, atol=2e-4)
    for e, t in zip(e_outs, t_outs, strict=True):
        assert tuple(e.shape) == tuple(t.shape)
        assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), **tol)
    for e, t in zip(e_grads, t_grads, strict=True):
        np.testing.assert_allclose(e.numpy(), t.numpy(), **tol)
    if CASES[name][2] is not None:
        assert e_outs[0].grad_fn.name() == t_outs[0].grad_fn.name() == CASES[name][2]


# torch's (and so the engine's) gradient of det is 0 where det is exactly 0, not the cofactors
# finite differences see
NO_GRADCHECK = {"det_singular", "det_rank_deficient"}


@pytest.mark.parametrize("name", sorted(set(CASES) - NO_GRADCHECK))
def test_gradcheck(name):
    call, inputs, _ = CASES[name]
    gradcheck(lambda *xs: call(engine, *xs), *[engine.tensor(x, dtype=engine.float64, requires_grad=True)
                                               for x in inputs])


def test_import_engine_linalg_as_a_module():
    mod = importlib.import_module("engine.linalg")
    assert mod is engine.linalg
    from engine.linalg import LinAlgError, norm, solve  # noqa: F401
    assert issubclass(LinAlgError, RuntimeError)


def test_reconstructions():
    a = engine.tensor(TALL)
    q, r = engine.linalg.qr(a)
    np.testing.assert_allclose((q @ r).numpy(), TALL, atol=1e-12)
    u, s, vh = engine.linalg.svd(a)
    assert tuple(u.shape) == (4, 4) and tuple(vh.shape) == (3, 3)
    np.testing.assert_allclose((u[:, :3] * s) @ vh, TALL, atol=1e-12)
    u, s, v = engine.svd(a)
    np.testing.assert_allclose(((u * s) @ v.mT).numpy(), TALL, atol=1e-12)
    lam, vec = engine.linalg.eigh(engine.tensor(M + M.T))
    np.testing.assert_allclose(((vec * lam) @ vec.mT).numpy(), M + M.T, atol=1e-12)
    low = engine.linalg.cholesky(engine.tensor(M @ M.T))
    np.testing.assert_allclose((low @ low.mT).numpy(), M @ M.T, atol=1e-10)
    assert engine.linalg.matrix_power(engine.tensor(M, requires_grad=True), 0).grad_fn.name() == \
        "torch::autograd::CopyBackwards"


def test_non_differentiable_results_match_torch():
    torch = pytest.importorskip("torch")
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    cases = [
        lambda lib: lib.linalg.matrix_rank(lib.tensor(TALL)),
        lambda lib: lib.linalg.matrix_rank(lib.tensor(singular)),
        lambda lib: lib.linalg.matrix_rank(lib.tensor(MB), atol=3.0),
        lambda lib: lib.linalg.matrix_rank(lib.tensor(MB), rtol=0.5),
        lambda lib: lib.linalg.slogdet(lib.tensor(NEG)).sign,
        lambda lib: lib.logdet(lib.tensor(NEG)),
        lambda lib: lib.linalg.lstsq(lib.tensor(TALL), lib.tensor(RHS4)).rank,
        lambda lib: lib.linalg.lstsq(lib.tensor(TALL), lib.tensor(RHS4)).residuals,
        lambda lib: lib.linalg.qr(lib.tensor(TALL), mode="complete").Q.abs(),
        lambda lib: lib.linalg.qr(lib.tensor(TALL), mode="r").R.abs(),
        lambda lib: lib.linalg.qr(lib.tensor(TALL), mode="r").Q,
        lambda lib: lib.svd(lib.tensor(TALL), compute_uv=False).U,
        lambda lib: lib.linalg.pinv(lib.tensor(singular)),
        lambda lib: lib.linalg.pinv(lib.tensor(M), atol=3.0),
        lambda lib: lib.linalg.diagonal(lib.tensor(MB)),
        lambda lib: lib.linalg.matmul(lib.tensor(M), lib.tensor(VEC)),
        lambda lib: lib.linalg.inv_ex(lib.stack([lib.eye(2), lib.tensor([[1.0, 2], [2, 4]])])).info,
        lambda lib: lib.linalg.inv_ex(lib.eye(2)).info,
        lambda lib: lib.linalg.cholesky_ex(lib.stack([lib.eye(3), lib.tensor(np.diag([1.0, 2.0, -1.0]))])).info,
        lambda lib: lib.linalg.cholesky_ex(lib.stack([lib.eye(3), lib.tensor(np.diag([1.0, 2.0, -1.0]))])).L[0],
        lambda lib: lib.linalg.matrix_exp(lib.tensor(M * 4)),
        lambda lib: lib.linalg.vander(lib.tensor([1, 2, 3]), N=3),
        lambda lib: lib.linalg.solve_triangular(lib.tensor(np.triu(M)), lib.tensor(RHS), upper=True),
    ]
    for case in cases:
        e, t = case(engine), case(torch)
        assert tuple(e.shape) == tuple(t.shape), case
        assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], case
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-9, atol=1e-9)


def test_deprecated_cholesky_warns_as_torch():
    x = engine.tensor(M @ M.T, requires_grad=True)
    with pytest.warns(UserWarning, match="torch.cholesky is deprecated in favor of torch.linalg.cholesky"):
        low = engine.cholesky(x)
    assert low.grad_fn.name() == "CholeskyBackward0"
    np.testing.assert_allclose(low.detach().numpy(), np.linalg.cholesky(M @ M.T))


# torch 2.13's texts (it warns once per process, so a test cannot always catch torch's own)
QR_DEPRECATED = ("torch.qr is deprecated in favor of torch.linalg.qr and will be removed in a future PyTorch "
                 "release.\nThe boolean parameter 'some' has been replaced with a string parameter 'mode'.\n"
                 "Q, R = torch.qr(A, some)\nshould be replaced with\n"
                 "Q, R = torch.linalg.qr(A, 'reduced' if some else 'complete')")
CHOLESKY_DEPRECATED = ("torch.cholesky is deprecated in favor of torch.linalg.cholesky and will be removed in a "
                       "future PyTorch release.\nL = torch.cholesky(A)\nshould be replaced with\n"
                       "L = torch.linalg.cholesky(A)\nand\nU = torch.cholesky(A, upper=True)\nshould be replaced "
                       "with\nU = torch.linalg.cholesky(A).mH\nThis transform will produce equivalent results for "
                       "all valid (symmetric positive definite) inputs.")


def test_deprecated_qr_and_cholesky_warn_with_torchs_text():
    for call, text in ((lambda: engine.qr(engine.tensor(TALL)), QR_DEPRECATED),
                       (lambda: engine.cholesky(engine.tensor(M @ M.T)), CHOLESKY_DEPRECATED)):
        with pytest.warns(UserWarning) as record:
            call()
        assert [str(w.message) for w in record] == [text]


def test_qr_r_mode_is_not_differentiable():
    x = engine.tensor(TALL, requires_grad=True)
    with pytest.raises(RuntimeError, match="The derivative of linalg.qr depends on Q, which is not computed when "
                                           "mode='r'"):
        engine.linalg.qr(x, mode="r").R.sum().backward()
    torch = pytest.importorskip("torch")
    t = torch.tensor(TALL, requires_grad=True)
    with pytest.raises(RuntimeError, match="The derivative of linalg.qr depends on Q, which is not computed when "
                                           "mode='r'"):
        torch.linalg.qr(t, mode="r").R.sum().backward()


def test_det_gradient_near_singular_is_the_cofactor_matrix():
    eps = 1e-9
    a = np.diag([1.0, eps, 2.0])
    x = engine.tensor(a, requires_grad=True)
    engine.linalg.det(x).backward()
    np.testing.assert_allclose(x.grad.numpy(), np.diag([2 * eps, 2.0, eps]), rtol=1e-6, atol=1e-15)
    x = engine.tensor(np.diag([1.0, 0.0, 2.0]), requires_grad=True)
    engine.linalg.det(x).backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros((3, 3)))


def test_svd_gradient_through_singular_values_only_survives_repeated_values():
    x = engine.eye(3, dtype=engine.float64).requires_grad_()
    engine.linalg.svd(x).S.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.eye(3))


ERRORS = [
    (lambda lib: lib.linalg.inv(lib.zeros(3, 3)), "LinAlgError",
     "linalg.inv: The diagonal element 1 is zero, the inversion could not be completed because the input matrix is "
     "singular."),
    (lambda lib: lib.linalg.inv(lib.tensor([[1.0, 2], [2, 4]])), "LinAlgError",
     "linalg.inv: The diagonal element 2 is zero, the inversion could not be completed because the input matrix is "
     "singular."),
    (lambda lib: lib.inverse(lib.stack([lib.eye(2), lib.tensor([[1.0, 2], [2, 4]])])), "LinAlgError",
     "linalg.inv: (Batch element 1): The diagonal element 2 is zero, the inversion could not be completed because "
     "the input matrix is singular."),
    (lambda lib: lib.linalg.inv(lib.zeros(2, 3)), RuntimeError,
     "linalg.inv: A must be batches of square matrices, but they are 2 by 3 matrices"),
    (lambda lib: lib.linalg.inv(lib.zeros(3)), RuntimeError,
     "linalg.inv: The input tensor A must have at least 2 dimensions."),
    (lambda lib: lib.linalg.inv(lib.ones(2, 2, dtype=lib.long)), RuntimeError,
     "linalg.inv: Expected a floating point or complex tensor as input. Got Long"),
    (lambda lib: lib.linalg.det(lib.zeros(2, 3)), RuntimeError,
     "linalg.det: A must be batches of square matrices, but they are 2 by 3 matrices"),
    (lambda lib: lib.linalg.slogdet(lib.zeros(2, 3)), RuntimeError,
     "linalg.slogdet: A must be batches of square matrices, but they are 2 by 3 matrices"),
    (lambda lib: lib.linalg.solve(lib.tensor([[1.0, 2], [2, 4]]), lib.zeros(2)), "LinAlgError",
     "torch.linalg.solve: The solver failed because the input matrix is singular."),
    (lambda lib: lib.linalg.solve(lib.eye(2), lib.zeros(3)), RuntimeError,
     "linalg.solve: Incompatible shapes of A and B for the equation AX = B (2x2 and 3x1)"),
    (lambda lib: lib.linalg.cholesky(-lib.eye(2)), "LinAlgError",
     "linalg.cholesky: The factorization could not be completed because the input is not positive-definite (the "
     "leading minor of order 1 is not positive-definite)."),
    (lambda lib: lib.linalg.cholesky(lib.tensor([[1.0, 2], [2, 1]])), "LinAlgError",
     "linalg.cholesky: The factorization could not be completed because the input is not positive-definite (the "
     "leading minor of order 2 is not positive-definite)."),
    (lambda lib: lib.linalg.cholesky(lib.stack([lib.eye(2), -lib.eye(2)])), "LinAlgError",
     "linalg.cholesky: (Batch element 1): The factorization could not be completed because the input is not "
     "positive-definite (the leading minor of order 1 is not positive-definite)."),
    (lambda lib: lib.linalg.cholesky(lib.zeros(2, 3)), RuntimeError,
     "linalg.cholesky: A must be batches of square matrices, but they are 2 by 3 matrices"),
    (lambda lib: lib.linalg.qr(lib.zeros(3, 3), mode="x"), RuntimeError,
     "qr received unrecognized mode 'x' but expected one of 'reduced' (default), 'r', or 'complete'"),
    (lambda lib: lib.linalg.qr(lib.zeros(3)), RuntimeError,
     "linalg.qr: The input tensor A must have at least 2 dimensions."),
    (lambda lib: lib.linalg.eigh(lib.zeros(3, 3), UPLO="X"), RuntimeError,
     "Expected UPLO argument to be 'L' or 'U', but got X"),
    (lambda lib: lib.linalg.eigh(lib.zeros(2, 3)), RuntimeError,
     "linalg.eigh: A must be batches of square matrices, but they are 2 by 3 matrices"),
    (lambda lib: lib.linalg.matrix_power(lib.zeros(2, 3), 2), RuntimeError,
     "linalg.matrix_power: A must be batches of square matrices, but they are 2 by 3 matrices"),
    (lambda lib: lib.linalg.multi_dot([lib.zeros(2, 2)]), RuntimeError,
     "multi_dot(): expected at least 2 tensors but got 1"),
    (lambda lib: lib.linalg.multi_dot([lib.zeros(2, 3), lib.zeros(4, 2)]), RuntimeError,
     "multi_dot(): tensors 0 and 1 with shapes [2, 3] and [4, 2] cannot be multiplied"),
    (lambda lib: lib.linalg.lstsq(lib.zeros(3, 2), lib.zeros(4, 2)), RuntimeError,
     "torch.linalg.lstsq: input.size(-2) should match other.size(-2)"),
    (lambda lib: lib.linalg.svd(lib.zeros(3)), RuntimeError,
     "linalg.svd: The input tensor A must have at least 2 dimensions."),
    (lambda lib: lib.linalg.pinv(lib.zeros(3)), RuntimeError,
     "linalg.pinv(Float{[3]}): expected a tensor with 2 or more dimensions of float, double, cfloat or cdouble types"),
    (lambda lib: lib.linalg.inv_ex(lib.zeros(2, 2), check_errors=True), "LinAlgError",
     "linalg.inv_ex: The diagonal element 1 is zero, the inversion could not be completed because the input matrix "
     "is singular."),
    (lambda lib: lib.linalg.cholesky_ex(-lib.eye(2), check_errors=True), "LinAlgError",
     "linalg.cholesky_ex: The factorization could not be completed because the input is not positive-definite (the "
     "leading minor of order 1 is not positive-definite)."),
    (lambda lib: lib.linalg.solve_triangular(lib.eye(3), lib.zeros(4, 2), upper=True), RuntimeError,
     "linalg.solve_triangular: Incompatible shapes of A and B for the equation AX = B (3x3 and 4x2)"),
    (lambda lib: lib.linalg.solve_triangular(lib.eye(2), lib.zeros(2, 3), upper=False, left=False), RuntimeError,
     "linalg.solve_triangular: Incompatible shapes of A and B for the equation XA = B (2x2 and 2x3)"),
    (lambda lib: lib.linalg.matrix_exp(lib.zeros(2, 3)), RuntimeError,
     "linalg.matrix_exp: A must be batches of square matrices, but they are 2 by 3 matrices"),
    (lambda lib: lib.linalg.vander(lib.tensor([1.0, 2.0]), N=1), RuntimeError, "N must be greater than 1."),
    (lambda lib: lib.linalg.matrix_rank(lib.zeros(3)), RuntimeError,
     "torch.linalg.matrix_rank: The input tensor input must have at least 2 dimensions."),
]


@pytest.mark.parametrize("k", range(len(ERRORS)))
def test_errors_match_torch(k):
    call, exc, message = ERRORS[k]
    e_exc = engine.linalg.LinAlgError if exc == "LinAlgError" else exc
    with pytest.raises(e_exc) as info:
        call(engine)
    assert str(info.value) == message
    torch = pytest.importorskip("torch")
    t_exc = torch.linalg.LinAlgError if exc == "LinAlgError" else exc
    with pytest.raises(t_exc) as t_info:
        call(torch)
    assert str(t_info.value).split("\n")[0] == message
