"""Tensor methods of engine/_ops/pointwise_float.py, pointwise_integer.py, shape_views.py, sets.py
and fills.py (and their in-place forms in engine/_tensor_methods.py) against torch 2.13: values, dtypes, gradients, grad_fn names, version
counters and torch's errors; the random fills by their support and statistics."""

from __future__ import annotations

import numpy as np
import pytest

import engine
from tests.engine._outcomes import outcome, same

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


F = [-1.5, 0.0, 2.25, -0.0, 3.0]
M = [[1.0, -2.0, 3.0], [0.5, 0.0, -4.0]]
NAN = float("nan")

CASES = {
    "is_cpu": lambda L: L.tensor(F).is_cpu,
    "get_device": lambda L: L.tensor(F).get_device(),
    "byte": lambda L: L.tensor([1.5, -2.7, 300.0]).byte(),
    "char": lambda L: L.tensor([1.5, -2.7, 300.0]).char(),
    "short": lambda L: L.tensor([1.5, -2.7, 300.0]).short(),
    "new_sizes": lambda L: L.tensor([1.0]).new(2, 3).shape,
    "new_size_obj": lambda L: L.tensor([1.0]).new(L.Size([2, 3])).shape,
    "new_list": lambda L: L.tensor([1]).new([1.5, 2.0]),
    "new_tuple_is_data": lambda L: L.tensor([1.0]).new((2, 3)),
    "new_empty": lambda L: L.tensor([1.0]).new(),
    "new_tensor_same_dtype": lambda L: L.tensor([1.0]).new(L.tensor([2.0, 3.0])),
    "equal": lambda L: L.tensor(M).equal(L.tensor(M)),
    "equal_dtypes": lambda L: L.equal(L.tensor([1.0, 2.0]), L.tensor([1, 2])),
    "equal_nan": lambda L: L.equal(L.tensor([1.0, NAN]), L.tensor([1.0, NAN])),
    "equal_shapes": lambda L: L.tensor([1.0, 2.0]).equal(L.tensor([[1.0, 2.0]])),
    "is_nonzero": lambda L: (L.tensor([3.0]).is_nonzero(), L.tensor(0).is_nonzero()),
    "is_nonzero_many": lambda L: L.tensor([1.0, 2.0]).is_nonzero(),
    "is_nonzero_empty": lambda L: L.tensor([]).is_nonzero(),
    "ndimension": lambda L: L.zeros(2, 3, 4).ndimension(),
    "is_signed": lambda L: [L.zeros(1, dtype=d).is_signed() for d in (L.uint8, L.int8, L.bool, L.float32, L.int64)],
    "positive": lambda L: L.tensor([-1, 0, 3]).positive(),
    "positive_bool": lambda L: L.tensor([True]).positive(),
    "sgn": lambda L: L.tensor(F).sgn(),
    "sgn_int": lambda L: L.tensor([-3, 0, 2]).sgn(),
    "absolute": lambda L: L.tensor(F).absolute(),
    "fix": lambda L: L.tensor([-1.5, 2.7, 3.0]).fix(),
    "greater": lambda L: (L.tensor(F).greater(0), L.greater(L.tensor(F), 0.5)),
    "greater_equal": lambda L: L.tensor(F).greater_equal(L.tensor(F).flip(0)),
    "less": lambda L: (L.tensor(F).less(0), L.less(L.tensor(F), 0)),
    "less_equal": lambda L: L.less_equal(L.tensor(F), 0),
    "not_equal": lambda L: (L.tensor(F).not_equal(0), L.not_equal(L.tensor([1, 2]), 2)),
    "eq_": lambda L: L.tensor([1.0, 2.0]).eq_(L.tensor([1.0, 3.0])),
    "lt_int": lambda L: L.tensor([1, 2]).lt_(1.5),
    "ne_": lambda L: L.tensor([1.0, 2.0]).ne_(1),
    "le_ge_gt": lambda L: (L.tensor(F).le_(0), L.tensor(F).ge_(0), L.tensor(F).gt_(0)),
    "greater_": lambda L: L.tensor([1.0, 2.0]).greater_(L.tensor([0.0, 3.0])),
    "less_equal_": lambda L: L.tensor([1.0, 2.0]).less_equal_(1),
    "clip_": lambda L: L.tensor([1.0, 2.0]).clip_(1.5),
    "clip_none": lambda L: L.tensor([1.0, 2.0]).clip_(),
    "sin_int": lambda L: L.tensor([1, 2]).sin_(),
    "cumsum_": lambda L: L.tensor([[1.0, 2.0], [3.0, 4.0]]).cumsum_(dim=1),
    "cumsum_int": lambda L: L.tensor([1, 2]).cumsum_(0),
    "cumsum_dtype": lambda L: L.tensor([1, 2]).cumsum_(0, dtype=L.float32),
    "cumprod_": lambda L: L.tensor([[1.0, 2.0], [3.0, 4.0]]).cumprod_(0),
    "negative_": lambda L: L.tensor([1, 2]).negative_(),
    "absolute_": lambda L: L.tensor(F).absolute_(),
    "fix_": lambda L: L.tensor([-1.5, 2.5]).fix_(),
    "sgn_": lambda L: L.tensor([-1.5, 2.5]).sgn_(),
    "copysign_": lambda L: L.tensor([-1.5, 2.5]).copysign_(-1),
    "gcd_": lambda L: L.tensor([12, 18]).gcd_(L.tensor([8, 4])),
    "lcm_": lambda L: L.tensor([12, 18]).lcm_(L.tensor([8, 4])),
    "ldexp_": lambda L: L.tensor([1.0, 2.0]).ldexp_(L.tensor([1, 2])),
    "ldexp_int": lambda L: L.tensor([1, 2]).ldexp_(L.tensor([1, 2])),
    "heaviside_": lambda L: L.tensor([1.0, 0.0, -2.0]).heaviside_(L.tensor([7.0])),
    "nextafter_": lambda L: L.tensor([1.0, 2.0]).nextafter_(L.tensor([3.0, 0.0])) - L.tensor([1.0, 2.0]),
    "hypot_": lambda L: L.tensor([1.0, 2.0]).hypot_(L.tensor([3.0, 4.0])),
    "xlogy_": lambda L: L.tensor([0.0, 2.0]).xlogy_(L.tensor([0.0, 4.0])),
    "float_power_": lambda L: L.tensor([1.0, 2.0], dtype=L.float64).float_power_(2),
    "float_power_f32": lambda L: L.tensor([1.0, 2.0]).float_power_(2),
    "float_power_int": lambda L: L.tensor([1, 2]).float_power_(2),
    "true_divide_int": lambda L: L.tensor([1, 2]).true_divide_(2),
    "true_divide_": lambda L: L.tensor([1.0, 3.0]).true_divide_(2),
    "multiply_": lambda L: L.tensor([1.0, 3.0]).multiply_(L.tensor([2.0, 2.0])),
    "subtract_": lambda L: L.tensor([1.0, 3.0]).subtract_(1, alpha=2),
    "divide_floor": lambda L: L.tensor([-7.0, 7.0]).divide_(2, rounding_mode="floor"),
    "divide_trunc": lambda L: L.tensor([-7.0, 7.0]).divide_(2, rounding_mode="trunc"),
    "unary_inplace": lambda L: [getattr(L.tensor([0.1, 0.5, 0.9]), n)() for n in (
        "sin_", "cos_", "tan_", "asin_", "acos_", "atan_", "sinh_", "cosh_", "asinh_", "atanh_", "arcsin_",
        "arccos_", "arctan_", "arcsinh_", "arctanh_", "log10_", "log1p_", "log2_", "expm1_", "exp2_", "rsqrt_",
        "reciprocal_", "erfc_", "deg2rad_", "rad2deg_", "sinc_")],
    "acosh_": lambda L: (L.tensor([1.5, 3.0]).acosh_(), L.tensor([1.5, 3.0]).arccosh_()),
    "heaviside": lambda L: L.heaviside(L.tensor(F), L.tensor(0.5)),
    "heaviside_int": lambda L: L.tensor([-1, 0, 2]).heaviside(L.tensor([7])),
    "heaviside_dtypes": lambda L: L.heaviside(L.tensor([-1, 0, 2]), L.tensor([7.0])),
    "heaviside_number": lambda L: L.heaviside(L.tensor(F), 0.5),
    "copysign": lambda L: (L.copysign(L.tensor(F), L.tensor([1.0, -1, -1, 1, -1])), L.tensor(F).copysign(-2)),
    "copysign_int": lambda L: (L.copysign(L.tensor([1, 2]), -1), L.copysign(L.tensor([1, 2]), L.tensor([-1, 1]))),
    "gcd": lambda L: L.gcd(L.tensor([12, -18, 0]), L.tensor([8, 12, 0])),
    "lcm": lambda L: L.tensor([12, -18, 0]).lcm(L.tensor([8, 12, 5])),
    "gcd_float": lambda L: L.gcd(L.tensor([12.0]), L.tensor([8.0])),
    "gcd_number": lambda L: L.gcd(L.tensor([12]), 4),
    "ldexp": lambda L: (L.ldexp(L.tensor([1.0, 2.0]), L.tensor([2, 3])), L.ldexp(L.tensor([1, 2]), L.tensor([2, 3]))),
    "frexp": lambda L: L.frexp(L.tensor([8.0, 0.3, -5.0, 0.0])),
    "frexp_f64": lambda L: L.tensor([8.0, 1e-3], dtype=L.float64).frexp(),
    "frexp_int": lambda L: L.frexp(L.tensor([8, 3])),
    "nextafter": lambda L: L.nextafter(L.tensor([1.0, 2.0]), L.tensor([2.0, 1.0])) - L.tensor([1.0, 2.0]),
    "nextafter_int": lambda L: L.nextafter(L.tensor([1, 2]), L.tensor([2, 1])),
    "vdot": lambda L: L.vdot(L.tensor([1.0, 2.0]), L.tensor([3.0, 4.0])),
    "vdot_dtypes": lambda L: L.tensor([1.0, 2.0]).vdot(L.tensor([3, 4])),
    "vdot_2d": lambda L: L.vdot(L.ones(2, 2), L.ones(2, 2)),
    "vdot_sizes": lambda L: L.vdot(L.ones(2), L.ones(3)),
    "unique_consecutive": lambda L: L.unique_consecutive(L.tensor([1, 1, 2, 2, 3, 1, 1, 2])),
    "unique_consecutive_all": lambda L: L.unique_consecutive(L.tensor([1, 1, 2, 2, 3, 1, 1, 2]), return_inverse=True,
                                                             return_counts=True),
    "unique_consecutive_counts": lambda L: L.tensor([1, 1, 2, 2, 3]).unique_consecutive(return_counts=True),
    "unique_consecutive_dim0": lambda L: L.unique_consecutive(L.tensor([[1, 2], [1, 2], [3, 4], [1, 2]]), dim=0,
                                                              return_inverse=True, return_counts=True),
    "unique_consecutive_dim1": lambda L: L.unique_consecutive(L.tensor([[1, 1, 2], [3, 3, 4]]), dim=1,
                                                              return_inverse=True, return_counts=True),
    "unique_consecutive_2d_flat": lambda L: L.unique_consecutive(L.tensor([[1, 1], [2, 2]]), return_inverse=True),
    "unique_consecutive_empty": lambda L: L.unique_consecutive(L.tensor([]), return_inverse=True, return_counts=True),
    "nanmedian": lambda L: L.tensor([[1.0, NAN, 3.0, 2.0], [5.0, 4.0, NAN, NAN]]).nanmedian(),
    "nanmedian_dim": lambda L: L.tensor([[1.0, NAN, 3.0, 2.0], [5.0, 4.0, NAN, NAN]]).nanmedian(1),
    "nanmedian_keepdim": lambda L: L.nanmedian(L.tensor([[1.0, NAN, 3.0, 2.0], [5.0, 4.0, NAN, 0.0]]), dim=1,
                                               keepdim=True),
    "nanmedian_all_nan": lambda L: L.tensor([NAN]).nanmedian(),
    "nanmedian_int": lambda L: (L.tensor([1, 3, 2]).nanmedian(), L.tensor([1, 3, 2, 4]).nanmedian(0)),
    "nanmedian_empty_dim": lambda L: L.zeros(0, 3).nanmedian(0),
    "nanmedian_empty_other_dim": lambda L: L.zeros(0, 3).nanmedian(1),
    "nanmedian_bool": lambda L: L.tensor([True]).nanmedian(),
    "hsplit": lambda L: L.arange(24.0).view(2, 3, 4).hsplit(3),
    "hsplit_indices": lambda L: L.hsplit(L.arange(24.0).view(2, 3, 4), [1, 2]),
    "hsplit_1d": lambda L: L.hsplit(L.arange(4.0), 2),
    "hsplit_uneven": lambda L: L.hsplit(L.arange(24.0).view(2, 3, 4), 2),
    "hsplit_0d": lambda L: L.hsplit(L.tensor(1.0), 2),
    "vsplit": lambda L: L.vsplit(L.arange(24.0).view(2, 3, 4), 2),
    "vsplit_1d": lambda L: L.vsplit(L.arange(4.0), 2),
    "dsplit": lambda L: L.arange(24.0).view(2, 3, 4).dsplit([1, 3]),
    "dsplit_uneven": lambda L: L.dsplit(L.arange(24.0).view(2, 3, 4), 3),
    "dsplit_2d": lambda L: L.dsplit(L.ones(2, 2), 2),
    "H": lambda L: L.tensor(M).H,
    "H_3d": lambda L: L.ones(2, 3, 4).H,
    "H_1d": lambda L: L.ones(3).H,
    "mH": lambda L: L.arange(24.0).view(2, 3, 4).mH,
    "mH_1d": lambda L: L.ones(3).mH,
    "mT": lambda L: L.arange(24.0).view(2, 3, 4).mT,
    "sum_to_size": lambda L: (L.tensor(M).sum_to_size(1, 3), L.tensor(M).sum_to_size((3,)),
                              L.tensor(M).sum_to_size(2, 1), L.tensor(M).sum_to_size(2, 3)),
    "sum_to_size_bad": lambda L: L.tensor(M).sum_to_size(4),
    "sum_to_size_longer": lambda L: L.tensor(M).sum_to_size(1, 2, 3),
    "split_with_sizes": lambda L: L.tensor(M).split_with_sizes([1, 2], 1),
    "split_with_sizes_bad": lambda L: L.tensor(M).split_with_sizes([1, 1], 1),
    "split_with_sizes_ns": lambda L: L.split_with_sizes(L.tensor(M), [1, 1]),
    "index_put_acc": lambda L: L.zeros(5).index_put_((L.tensor([0, 0, 2]),), L.tensor([1.0, 2.0, 3.0]),
                                                     accumulate=True),
    "index_put_ns": lambda L: L.index_put_(L.zeros(5), (L.tensor([0, 0, 2]),), L.tensor(1.0), True),
    "index_put_oop": lambda L: L.index_put(L.zeros(5), (L.tensor([0, 0, 2]),), L.tensor(1.0), True),
    "index_put_2d_acc": lambda L: L.zeros(2, 3).index_put((L.tensor([0, 0, 1]), L.tensor([2, 2, 0])),
                                                          L.tensor([1.0, 2.0, 3.0]), accumulate=True),
    "index_put_oob": lambda L: L.zeros(5).index_put_([L.tensor([0, 9])], L.tensor(1.0)),
    "index_put_not_tuple": lambda L: L.zeros(5).index_put_(L.tensor([0, 1]), L.tensor(1.0)),
    "fill_diagonal_": lambda L: L.zeros(3, 4).fill_diagonal_(5),
    "fill_diagonal_wrap": lambda L: L.zeros(7, 3).fill_diagonal_(5, wrap=True),
    "fill_diagonal_nowrap": lambda L: L.zeros(7, 3).fill_diagonal_(5),
    "fill_diagonal_3d": lambda L: L.zeros(3, 3, 3).fill_diagonal_(5),
    "fill_diagonal_3d_unequal": lambda L: L.zeros(3, 3, 2).fill_diagonal_(5),
    "fill_diagonal_1d": lambda L: L.zeros(3).fill_diagonal_(5),
    "storage_offset": lambda L: (L.arange(12.0).view(3, 4)[1:, 1:].storage_offset(),
                                 L.arange(12.0).view(3, 4).t().storage_offset(),
                                 L.arange(12.0).view(3, 4)[:, 2].storage_offset()),
    "apply_": lambda L: L.tensor([1.0, 2.0]).apply_(lambda v: v * 10),
    "apply_int": lambda L: L.tensor([1, 2]).apply_(lambda v: v * 10.7),
    "apply_grad": lambda L: L.tensor([1.0, 2.0], requires_grad=True).apply_(lambda v: v),
    "apply_str": lambda L: L.tensor([1.0, 2.0]).apply_(lambda v: "a"),
    "map_": lambda L: L.tensor([1.0, 2.0]).map_(L.tensor([3.0, 4.0]), lambda a, b: a + b),
    "map_broadcast": lambda L: L.tensor([1.0, 2.0]).map_(L.tensor(3.0), lambda a, b: a * b),
    "map_bad_shape": lambda L: L.tensor([[1.0, 2.0]]).map_(L.tensor([3.0, 4.0, 5.0]), lambda a, b: a + b),
    "random_bad_range": lambda L: L.empty(5).random_(10, 3),
    "exponential_bad": lambda L: (L.empty(5).exponential_(0)),
    "exponential_neg": lambda L: (L.empty(5).exponential_(-1)),
    "exponential_int": lambda L: L.empty(5, dtype=L.int64).exponential_(),
    "log_normal_bad": lambda L: L.empty(5).log_normal_(1, 0),
    "cauchy_bad": lambda L: L.empty(5).cauchy_(0, 0),
    "geometric_bad": lambda L: (L.empty(5).geometric_(0)),
    "geometric_one": lambda L: (L.empty(5).geometric_(1)),
    "t_leaf": lambda L: L.zeros(2, 3, requires_grad=True).t_(),
    "t_": lambda L: L.arange(6.0).view(2, 3).t_(),
    "transpose_": lambda L: L.arange(24.0).view(2, 3, 4).transpose_(0, 2),
    "swapdims_": lambda L: L.arange(6.0).view(2, 3).swapdims_(0, 1),
    "swapaxes_": lambda L: L.arange(6.0).view(2, 3).swapaxes_(1, 0),
    "squeeze_": lambda L: (L.zeros(2, 1, 3, 1).squeeze_().shape, L.zeros(2, 1, 3, 1).squeeze_(1).shape),
    "unsqueeze_": lambda L: L.zeros(2, 3).unsqueeze_(-1).shape,
    "lshift": lambda L: (L.tensor([1, 2, -8]).bitwise_left_shift(2), L.tensor([1, 2, -8]) << L.tensor([1, 2, 70]),
                         L.tensor([1, 2, 200], dtype=L.uint8) << 7, L.bitwise_left_shift(2, L.tensor([1, 2])),
                         2 << L.tensor([3])),
    "rshift": lambda L: (L.tensor([1, 2, -8]) >> 1, L.tensor([1, 2, -8]).bitwise_right_shift(L.tensor([1, 2, 70])),
                         L.bitwise_right_shift(L.tensor([64], dtype=L.int8), 9), 256 >> L.tensor([2])),
    "shift_float": lambda L: L.tensor([1.0, 2.0]).bitwise_left_shift(1),
    "shift_float_other": lambda L: L.tensor([1, 2]).bitwise_right_shift(1.5),
    "shift_inplace": lambda L: (L.tensor([1, 2]).bitwise_left_shift_(3), L.tensor([16, -16]).bitwise_right_shift_(2)),
    "shift_ioperators": lambda L: _ishift(L),
    "isreal": lambda L: (L.tensor([1.0, 2.0]).isreal(), L.isreal(L.tensor([1, 2])),
                         L.isreal(L.complex(L.tensor([1.0, 2.0]), L.tensor([0.0, 1.0])))),
    "is_same_size": lambda L: (L.zeros(2, 3).is_same_size(L.ones(2, 3)), L.is_same_size(L.zeros(2, 3), L.zeros(3, 2))),
    "dim_order": lambda L: (L.zeros(2, 3, 4).dim_order(), L.zeros(2, 3, 4).permute(2, 0, 1).dim_order()),
    "adjoint": lambda L: (L.tensor(M).adjoint(), L.adjoint(L.arange(24.0).view(2, 3, 4))),
    "adjoint_1d": lambda L: L.zeros(3).adjoint(),
    "narrow_copy": lambda L: (L.tensor(M).narrow_copy(1, 1, 2), L.tensor(M).narrow_copy(1, 1, 2).is_contiguous()),
    "unsafe_split": lambda L: (L.tensor(M).unsafe_chunk(3, 1), L.unsafe_split(L.tensor(M), 2, 1),
                               L.tensor(M).unsafe_split_with_sizes([2, 1], 1)),
    "flags": lambda L: (L.tensor([1.0]).is_conj(), L.is_neg(L.tensor([1.0])), L.tensor([1.0]).is_pinned(),
                        L.tensor([1.0]).is_meta, L.tensor([1.0]).is_sparse, L.tensor([1.0]).is_quantized,
                        L.tensor([1.0]).is_mkldnn, L.tensor([1.0]).is_nested),
    "resolve": lambda L: (L.tensor(M).resolve_conj(), L.resolve_neg(L.tensor(M)), L.tensor(M).conj_physical(),
                          L.conj_physical(L.tensor(M)), L.tensor(M).conj_physical_()),
    "hardshrink_prelu": lambda L: (L.tensor(F).hardshrink(0.5), L.tensor(M).prelu(L.tensor([0.25]))),
    "addmm": lambda L: L.ones(2, 3).addmm(L.tensor([[1.0, 2.0], [3.0, 4.0]]), L.ones(2, 3), beta=2, alpha=0.5),
    "histogram_method": lambda L: L.tensor([1.0, 2.0, 1.0, 4.0]).histogram(3),
    "resize_same_numel": lambda L: L.arange(6.0).resize_(2, 3),
    "resize_shrink": lambda L: L.arange(6.0).resize_(2, 2),
    "resize_grow_shape": lambda L: (L.arange(6.0).resize_(3, 3)[:2], L.arange(6.0).resize_(3, 3).shape),
    "resize_grad": lambda L: L.zeros(2, 3, requires_grad=True).resize_(6),
    "resize_as_": lambda L: L.arange(6.0).resize_as_(L.zeros(3, 2)),
}


def _ishift(L):
    a = L.tensor([1, 2])
    a <<= 2
    b = L.tensor([64, -64])
    b >>= 3
    return a, b


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_torch(name):
    fn = CASES[name]
    e, t = outcome(engine, fn, torch), outcome(torch, fn, torch)
    assert same(e, t), f"{name}:\nengine {e}\ntorch  {t}"


# --- gradients and grad_fn names ---------------------------------------------------------------------

GRAD_CASES = {
    "copysign": lambda L, x: L.copysign(x, L.tensor([1.0, -1.0, -1.0, 1.0, -1.0])),
    "copysign_number": lambda L, x: x.copysign(-1.0),
    # non-negative exponents: torch's backward computes 2 ** other in integers (2 ** -1 -> 0)
    "ldexp": lambda L, x: L.ldexp(x, L.tensor([2, 3, 0, 1, 2])),
    "nextafter": lambda L, x: L.nextafter(x, L.zeros(5)),
    "vdot": lambda L, x: L.vdot(x, L.arange(5.0)),
    "sgn": lambda L, x: x.sgn() * x,
    "fix": lambda L, x: x.fix() + x,
    "absolute": lambda L, x: x.absolute(),
    "positive": lambda L, x: x.positive() * 2,
    "nanmedian": lambda L, x: x.nanmedian(),
    "nanmedian_dim": lambda L, x: x.view(1, 5).nanmedian(1).values,
    "hsplit": lambda L, x: x.view(1, 5).hsplit([2])[1] * 3,
    "split_with_sizes": lambda L, x: x.split_with_sizes([2, 3])[0] * 2,
    "sum_to_size": lambda L, x: (x.view(5, 1) * x.view(1, 5)).sum_to_size(1, 5),
    "H": lambda L, x: x.view(1, 5).H * L.arange(5.0).view(5, 1),
    "mH": lambda L, x: x.view(1, 5).mH * L.arange(5.0).view(5, 1),
    "sin_": lambda L, x: (x * 1).sin_(),
    "log1p_": lambda L, x: (x * x).log1p_(),
    "reciprocal_": lambda L, x: (x + 10).reciprocal_(),
    "sinc_": lambda L, x: (x * 1).sinc_(),
    "hypot_": lambda L, x: (x * 1).hypot_(L.ones(5)),
    "xlogy_": lambda L, x: (x * 1).xlogy_(L.full((5,), 2.0)),
    "copysign_": lambda L, x: (x * 1).copysign_(L.tensor([1.0, -1.0, 1.0, -1.0, 1.0])),
    "eq_": lambda L, x: (x * 1).eq_(0) + x,
    "cumsum_": lambda L, x: (x * x).cumsum_(0),
    "cumprod_": lambda L, x: (x * 1).cumprod_(0),
    "clip_": lambda L, x: (x * 1).clip_(-1, 1),
    "t_": lambda L, x: (x.view(1, 5) * 1).t_() * L.arange(5.0).view(5, 1),
    "transpose_": lambda L, x: (x.view(1, 5) * 1).transpose_(0, 1) * L.arange(5.0).view(5, 1),
    "unsqueeze_": lambda L, x: (x * 1).unsqueeze_(0) * L.arange(5.0),
    "squeeze_": lambda L, x: (x.view(1, 5) * 1).squeeze_(0) * L.arange(5.0),
    "fill_diagonal_": lambda L, x: (x.view(5, 1) * x.view(1, 5)).fill_diagonal_(0.5),
    "float_power_": lambda L, x: (x.double() * 1).float_power_(2),
    "divide_": lambda L, x: (x * 1).divide_(L.full((5,), 4.0)),
}

X = [0.3, -1.2, 2.0, 0.7, -0.4]


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_gradients_match_torch(name):
    fn = GRAD_CASES[name]
    names, grads, values = [], [], []
    for lib in (engine, torch):
        x = lib.tensor(X, requires_grad=True)
        out = fn(lib, x)
        names.append(type(out.grad_fn).__name__)
        values.append(out.detach().double().numpy())
        out.sum().backward()
        grads.append(x.grad.numpy())
    # torch fills the diagonal through a view (CopySlices); the engine's node is its own
    assert names[0] == (names[1] if name != "fill_diagonal_" else "FillBackward2")
    np.testing.assert_allclose(values[0], values[1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-5, atol=1e-6)


def test_heaviside_backward_raises_as_torch():
    for lib in (engine, torch):
        x = lib.tensor(X, requires_grad=True)
        out = lib.heaviside(x, lib.tensor(0.5))
        assert type(out.grad_fn).__name__ == "NotImplemented"
        with pytest.raises(RuntimeError, match="derivative for aten::heaviside is not implemented"):
            out.sum().backward()


def test_inplace_bumps_version_and_refuses_leaves():
    x = engine.randn(3, requires_grad=True)
    for op in ("sin_", "log1p_", "sgn_", "fix_", "absolute_"):
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
            getattr(x, op)()
    y = engine.randn(2, 3)
    for call in (lambda t: t.cos_(), lambda t: t.eq_(0), lambda t: t.t_(), lambda t: t.unsqueeze_(0),
                 lambda t: t.squeeze_(0), lambda t: t.cumsum_(0), lambda t: t.fill_diagonal_(1.0)):
        before = y._version_value
        assert call(y) is y
        assert y._version_value == before + 1


def test_inplace_on_view_rewrites_base():
    for lib in (engine, torch):
        base = lib.tensor([[0.1, 0.2], [0.3, 0.4]], requires_grad=True)
        b = base * 1
        b[0].sin_()
        b.sum().backward()
        if lib is engine:
            eg = base.grad.numpy()
        else:
            np.testing.assert_allclose(eg, base.grad.numpy(), rtol=1e-6)


def test_inplace_view_op_keeps_memory():
    a = engine.arange(6.0).view(2, 3)
    data_ptr = a.data_ptr()
    a.t_()
    assert a.shape == (3, 2) and a.data_ptr() == data_ptr and a.stride() == (1, 3)
    a[0, 1] = 100.0
    assert a.t()[1, 0].item() == 100.0


# --- random fills ----------------------------------------------------------------------------------

def test_random_fills_support_and_statistics():
    engine.manual_seed(0)
    n = 20000
    r = engine.empty(n).random_(3, 10)
    assert set(np.unique(r.numpy()).tolist()) == set(range(3, 10))
    r = engine.empty(n).random_(5)
    assert set(np.unique(r.numpy()).tolist()) == set(range(5))
    assert engine.empty(n, dtype=engine.uint8).random_().numpy().max() > 200
    assert engine.empty(n).random_().numpy().max() <= 2 ** 24
    b = engine.empty(n, dtype=engine.bool).random_()
    assert 0.45 < b.numpy().mean() < 0.55
    e = engine.empty(n).exponential_(2.0)
    assert e.dtype == engine.float32 and e.numpy().min() >= 0 and abs(e.numpy().mean() - 0.5) < 0.02
    ln = engine.empty(n, dtype=engine.float64).log_normal_(0.5, 0.25)
    assert abs(np.log(ln.numpy()).mean() - 0.5) < 0.01 and abs(np.log(ln.numpy()).std() - 0.25) < 0.01
    c = engine.empty(n).cauchy_(1.0, 2.0)
    assert abs(np.median(c.numpy()) - 1.0) < 0.1
    g = engine.empty(n, dtype=engine.int64).geometric_(0.25)
    assert g.dtype == engine.int64 and g.numpy().min() >= 1 and abs(g.numpy().mean() - 4.0) < 0.15
    p = engine.full((n,), 0.3).bernoulli()
    assert set(np.unique(p.numpy()).tolist()) <= {0.0, 1.0} and abs(p.numpy().mean() - 0.3) < 0.02
    p = engine.full((n,), 0.3).bernoulli(0.8)
    assert abs(p.numpy().mean() - 0.8) < 0.02


def test_random_fills_are_seeded_and_take_a_generator():
    g = engine.Generator().manual_seed(3)
    a = engine.empty(8).exponential_(generator=g)
    g.manual_seed(3)
    b = engine.empty(8).exponential_(generator=g)
    assert a.equal(b)
    engine.manual_seed(1)
    a = engine.empty(8).random_(100)
    engine.manual_seed(1)
    assert a.equal(engine.empty(8).random_(100))


def test_random_fill_refuses_leaf_requiring_grad():
    x = engine.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        x.exponential_()


def test_new_with_other_dtype_tensor_is_a_type_error():
    with pytest.raises(TypeError, match=r"expected TensorOptions\(dtype=long int"):
        engine.tensor([1]).new(engine.tensor([1.5]))
