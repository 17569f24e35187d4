"""Every error path of the engine core: the same exception type and message as torch where torch
defines one (``torch.`` read as ``engine.``), and a clear message otherwise."""

from __future__ import annotations

import numpy as np
import pytest

import engine


def _fn_with_bad_grad(lib):
    class Bad(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g[:1]

    return Bad


def _fn_with_too_many_grads(lib):
    class TooMany(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g, g

    return TooMany


def _leaf(lib, *shape):
    return lib.ones(*shape, requires_grad=True)


ERRORS = {
    "backward_non_scalar": lambda t: (_leaf(t, 3) * 2).backward(),
    "backward_no_grad": lambda t: t.ones(3).sum().backward(),
    "backward_wrong_gradient_shape": lambda t: (_leaf(t, 3) * 2).backward(t.ones(4)),
    "backward_twice": lambda t: (lambda y: (y.backward(), y.backward()))((_leaf(t, 3) ** 2).sum()),
    "hook_without_grad": lambda t: t.ones(3).register_hook(lambda g: g),
    "mm_shapes": lambda t: t.ones(3, 4).mm(t.ones(5, 6)),
    "matmul_2d": lambda t: t.ones(3, 4) @ t.ones(5, 6),
    "matmul_1d": lambda t: t.ones(4) @ t.ones(5),
    "matmul_mv": lambda t: t.ones(3, 4) @ t.ones(5),
    "matmul_batch": lambda t: t.ones(2, 3, 4) @ t.ones(3, 5, 6),
    "matmul_0d": lambda t: t.ones(()) @ t.ones(3),
    "bmm_shapes": lambda t: t.ones(2, 3, 4).bmm(t.ones(2, 5, 6)),
    "dot_shapes": lambda t: t.ones(4).dot(t.ones(5)),
    "inplace_leaf": lambda t: _leaf(t, 3).add_(1),
    "inplace_leaf_iadd": lambda t: (lambda x: x.__iadd__(1))(_leaf(t, 3)),
    "inplace_leaf_zero": lambda t: _leaf(t, 3).zero_(),
    "setitem_leaf": lambda t: _leaf(t, 3).__setitem__(0, 1.0),
    "inplace_view_of_leaf": lambda t: _leaf(t, 3, 2)[0].mul_(2),
    "custom_function_bad_grad": lambda t: _fn_with_bad_grad(t).apply(_leaf(t, 3)).sum().backward(),
    "custom_function_too_many": lambda t: _fn_with_too_many_grads(t).apply(_leaf(t, 3)).sum().backward(),
    "broadcast": lambda t: t.ones(3, 4) + t.ones(5),
    "broadcast_mul": lambda t: t.ones(2, 3) * t.ones(3, 2),
    "view_size": lambda t: t.ones(3, 4).view(5),
    "view_two_minus_one": lambda t: t.ones(3, 4).view(-1, -1),
    "view_stride": lambda t: t.ones(3, 4).t().view(12),
    "reshape_size": lambda t: t.ones(3, 4).reshape(5),
    "expand_size": lambda t: t.ones(3).expand(4, 2),
    "numpy_requires_grad": lambda t: _leaf(t, 3).numpy(),
    "item_many": lambda t: t.ones(3).item(),
    "grad_unused": lambda t: t.autograd.grad((_leaf(t, 3) * 2).sum(), [_leaf(t, 2)]),
    "dim_out_of_range": lambda t: t.ones(3, 4).sum(5),
    "squeeze_dim": lambda t: t.ones(3, 4).squeeze(5),
    "softmax_dim": lambda t: t.ones(3, 4).softmax(2),
    "permute_length": lambda t: t.ones(3, 4).permute(0),
    "index_out_of_bounds": lambda t: t.ones(3, 4)[5],
    "too_many_indices": lambda t: t.ones(3)[0, 0],
    "cat_sizes": lambda t: t.cat([t.ones(3, 4), t.ones(3, 5)]),
    "cat_ndim": lambda t: t.cat([t.ones(3, 4), t.ones(3)]),
    "stack_sizes": lambda t: t.stack([t.ones(3, 4), t.ones(3, 5)]),
    "grad_assign_shape": lambda t: setattr(_leaf(t, 3), "grad", t.ones(4)),
    "requires_grad_int": lambda t: t.ones(3, dtype=t.int64).requires_grad_(),
    "requires_grad_false_non_leaf": lambda t: setattr(_leaf(t, 3) * 2, "requires_grad", False),
    "retain_grad_no_grad": lambda t: t.ones(3).retain_grad(),
    "mean_of_int": lambda t: t.ones(3, dtype=t.int64).mean(),
    "bool_ambiguous": lambda t: bool(t.ones(3)),
    "len_0d": lambda t: len(t.tensor(1.0)),
    "t_of_3d": lambda t: t.ones(2, 3, 4).t(),
    "split_sizes_sum": lambda t: t.ones(5).split([2, 2]),
    "masked_fill_non_bool": lambda t: t.ones(3).masked_fill(t.ones(3), 0.0),
    "masked_fill_value_dim": lambda t: t.ones(3).masked_fill(t.ones(3) > 0, t.ones(2)),
    "where_non_bool": lambda t: t.where(t.ones(3), t.ones(3), t.zeros(3)),
    "clamp_no_bounds": lambda t: t.ones(3).clamp(),
    "gather_ndim": lambda t: t.ones(3, 4).gather(1, t.zeros(3, dtype=t.int64)),
    "float_index": lambda t: t.ones(3)[t.tensor([0.5])],
    "mask_shape": lambda t: t.ones(3, 4)[t.ones(4, dtype=t.bool)],
    "int_into_float_inplace": lambda t: t.ones(3, dtype=t.int64).add_(1.5),
    "unsqueeze_dim": lambda t: t.ones(3).unsqueeze(3),
    "flatten_args": lambda t: t.ones(2, 3, 4).flatten(2, 1),
}

# Messages the engine words differently on purpose (names its own types) or that torch words
# through internal op names; the exception type must still match and the substance is checked.
SUBSTANCE = {
    "custom_function_too_many": "incorrect number of gradients (expected 1, got 2)",
    "inplace_view_of_leaf": "a view of a leaf Variable that requires grad",
    "masked_fill_value_dim": "0-dimensional value tensor",
    "where_non_bool": "boolean",
    "clamp_no_bounds": "At least one of 'min' or 'max' must not be None",
    "gather_ndim": "Index tensor must have the same number of dimensions as input tensor",
    "float_index": "tensors used as indices must be long, int, byte or bool tensors",
    "mask_shape": "The shape of the mask [4] at index 0 does not match the shape of the indexed tensor [3, 4]",
    "int_into_float_inplace": "can't be cast to the desired output type Long",
    "too_many_indices": "too many indices for tensor of dimension 1",
    "cat_ndim": "Tensors must have same number of dimensions: got 2 and 1",
    "split_sizes_sum": "split_with_sizes expects split_sizes to sum exactly to 5",
    "matmul_0d": "both arguments to matmul need to be at least 1D",
    "softmax_dim": "Dimension out of range (expected to be in range of [-2, 1], but got 2)",
    "mean_of_int": "mean(): could not infer output dtype",
    "t_of_3d": "t() expects a tensor with <= 2 dimensions, but self is 3D",
    "view_two_minus_one": "only one dimension can be inferred",
    "flatten_args": "flatten() has invalid args: start_dim cannot come after end_dim",
    "unsqueeze_dim": "Dimension out of range (expected to be in range of [-2, 1], but got 3)",
    "requires_grad_int": "only Tensors of floating point and complex dtype can require gradients",
}


def raised(lib, fn):
    with pytest.raises(Exception) as info:  # noqa: B017, PT011 - the exception is the subject
        fn(lib)
    return info.type, str(info.value).split(" Hint:")[0]


@pytest.mark.parametrize("name", list(ERRORS))
def test_error_matches_torch(torch, name):
    e_type, e_msg = raised(engine, ERRORS[name])
    t_type, t_msg = raised(torch, ERRORS[name])
    assert e_type.__name__ == t_type.__name__, (e_msg, t_msg)
    if name in SUBSTANCE:
        assert SUBSTANCE[name] in e_msg
    else:
        assert e_msg == t_msg.replace("torch.", "engine.")


@pytest.mark.parametrize("name", list(ERRORS))
def test_error_raised_without_torch(name):
    """The same paths raise without the oracle installed (and the substance is there)."""
    e_type, e_msg = raised(engine, ERRORS[name])
    assert issubclass(e_type, RuntimeError | IndexError | TypeError | ValueError) and e_msg
    if name in SUBSTANCE:
        assert SUBSTANCE[name] in e_msg


def test_create_graph_through_an_op_without_double_backward_is_reported():
    x = engine.ones(2, 2, requires_grad=True)
    y = engine.cumsum(x, 0).sum()
    with pytest.raises(NotImplementedError, match=r"^double backward through CumsumBackward0 is not supported"):
        engine.autograd.grad(y, [x], create_graph=True)


def test_no_cuda_device():
    with pytest.raises(RuntimeError, match="no CUDA device"):
        engine.ones(2).cuda()
    with pytest.raises(RuntimeError, match="only the 'cpu' device"):
        engine.ones(2).to("cuda")
    assert not engine.cuda.is_available()


def test_unsupported_numpy_dtype_names_it():
    # complex128 is supported since engine.fft; long double (float128) is not, in torch either
    with pytest.raises(TypeError, match=f"can't convert np.ndarray of type {np.dtype(np.longdouble)}"):
        engine.from_numpy(np.zeros(2, dtype=np.longdouble))


def test_tensors_refuse_pickle():
    import pickle

    with pytest.raises(TypeError, match="engine.save"):
        pickle.dumps(engine.ones(2))


def test_hook_changing_gradient_size_is_refused():
    x = engine.ones(3, requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: g[:2])
    with pytest.raises(RuntimeError, match=r"hook '.*' has changed the size of value"):
        y.sum().backward()


def test_pad_unknown_mode_is_reported():
    # reflect/replicate/circular exist now (tests/engine/nn/test_functional_activations_resampling.py); torch's words otherwise
    with pytest.raises(NotImplementedError, match="Unrecognised padding mode foo"):
        engine.nn.functional.pad(engine.ones(1, 3), (1, 1), mode="foo")


def test_inplace_on_an_expanded_view_says_so(torch):
    for lib in (engine, torch):
        with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
            lib.ones(3).expand(2, 3).add_(1)
