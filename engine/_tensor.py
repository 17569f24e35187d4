"""``engine.Tensor``: a NumPy array plus autograd bookkeeping, with torch's names and rules.

Where to look:
- ops and their backward formulas: ``engine/_ops/*`` (bound as methods at the bottom);
- the graph and hooks: ``engine/autograd/graph.py``; running it backwards: ``executor.py``;
- in-place updates (version counters, leaf checks, ``CopySlices`` for views): ``_inplace``.
"""

from __future__ import annotations

import math
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from . import _dtype, _layout, _memory_format
from ._ops import (
    _core,
    comparison,
    gamma,
    indexing,
    linalg,
    linalg_more,
    misc,
    pointwise,
    reduction,
    sampling,
    scatter,
    shape_composite,
    sorting,
    special,
    special_more,
    tensor_more,
)
from ._ops import namespace as _namespace
from ._ops import shape as shape_ops
from ._tensor_str import tensor_repr
from .autograd import grad_mode
from .autograd.graph import AccumulateGrad, check_saved_versions, node_class
from .utils import hooks as _hooks
from .utils.hooks import RemovableHandle


class Size(tuple):
    """A tensor's shape: a tuple that prints as ``engine.Size([2, 3])``."""

    def __repr__(self) -> str:
        return f"engine.Size({list(self)})"

    def __getitem__(self, key):  # type: ignore[override]
        out = tuple.__getitem__(self, key)
        return Size(out) if isinstance(key, slice) else out

    def numel(self) -> int:
        return math.prod(self)


class device:  # noqa: N801 - torch's spelling
    """The only device a NumPy engine has: ``device(type='cpu')``."""

    def __init__(self, type: str = "cpu", index: int | None = None) -> None:  # noqa: A002
        if isinstance(type, device):
            type = type.type  # noqa: A001
        kind = str(type).split(":")[0]
        if kind != "cpu":
            raise RuntimeError(f"engine runs on NumPy and has only the 'cpu' device, not '{type}'")
        self.type, self.index = "cpu", index

    def __repr__(self) -> str:
        return "device(type='cpu')"

    def __str__(self) -> str:
        return "cpu"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, device) or other == "cpu"

    def __hash__(self) -> int:
        return hash("cpu")


_CPU = device("cpu")


class Tensor:
    """A multi-dimensional array that records the operations applied to it.

    ``requires_grad=True`` on a leaf makes every op on it record a node (``grad_fn``);
    ``backward()`` then fills ``.grad`` of the leaves. Float32 by default.

    Example::

        >>> x = engine.tensor([1.0, 2.0], requires_grad=True)
        >>> (x * x).sum().backward()
        >>> x.grad
        tensor([2., 4.])
    """

    __slots__ = (
        "_data", "_requires_grad", "grad_fn", "_output_nr", "_grad", "_version_counter", "_base",
        "_view_fn", "_backward_hooks", "_post_accumulate_grad_hooks", "_accumulator",
        "_retains_grad", "__weakref__", "__dict__",
    )
    __array_priority__ = 1000  # ``ndarray * tensor`` defers to Tensor.__rmul__
    _inference = False  # set (in the instance) on tensors created inside inference_mode()

    def __init__(self, *args: Any, dtype: _dtype.dtype | None = None) -> None:
        """``Tensor(2, 3)`` makes an uninitialised float tensor of that shape (torch's legacy
        constructor); ``Tensor([1, 2])`` copies data as floats. Prefer ``engine.tensor``."""
        npdt = (dtype or _dtype._default_float).np
        if len(args) == 1 and not isinstance(args[0], int):
            data = np.array(_plain(args[0]), dtype=npdt)
        else:
            data = np.empty(shape_ops._sizes(args), dtype=npdt)
        _init_slots(self, data)

    @classmethod
    def _wrap(cls, data: np.ndarray) -> Tensor:
        """The fast internal constructor: no copy, no checks."""
        t = object.__new__(cls)
        _init_slots(t, data)
        return t

    # --- basic attributes ---------------------------------------------------------------------

    @property
    def shape(self) -> Size:
        return Size(self._data.shape)

    def size(self, dim: int | None = None):
        """The shape (``engine.Size``), or the length of dimension ``dim``."""
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[_core.wrap_dim(dim, self._data.ndim)]

    def dim(self) -> int:
        return self._data.ndim

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def numel(self) -> int:
        return self._data.size

    nelement = numel

    @property
    def dtype(self) -> _dtype.dtype:
        return _dtype.from_numpy_dtype(self._data.dtype)

    @property
    def device(self) -> device:
        return _CPU

    @property
    def is_cuda(self) -> bool:
        return False

    @property
    def layout(self) -> _layout.layout:
        """``engine.strided``: every engine tensor is a dense array."""
        return _layout.strided

    def is_floating_point(self) -> bool:
        return self._data.dtype.kind == "f"

    def is_complex(self) -> bool:
        return self._data.dtype.kind == "c"

    @property
    def real(self) -> Tensor:
        """The real part (``self`` for a real tensor); a copy, not a view, for a complex one."""
        from ._ops import fft as fft_ops
        return fft_ops.real(self)

    @property
    def imag(self) -> Tensor:
        """The imaginary part of a complex tensor (a copy, not a view)."""
        from ._ops import fft as fft_ops
        return fft_ops.imag(self)

    def conj(self) -> Tensor:
        from ._ops import fft as fft_ops
        return fft_ops.conj(self)

    def angle(self) -> Tensor:
        from ._ops import fft as fft_ops
        return fft_ops.angle(self)

    def element_size(self) -> int:
        return self._data.itemsize

    @property
    def itemsize(self) -> int:
        return self._data.itemsize

    @property
    def nbytes(self) -> int:
        return self._data.nbytes

    def stride(self, dim: int | None = None):
        strides = tuple(s // self._data.itemsize for s in self._data.strides)
        return strides if dim is None else strides[_core.wrap_dim(dim, self.ndim)]

    def is_contiguous(self, memory_format: Any = _memory_format.contiguous_format) -> bool:
        """C contiguity, or torch's contiguity in ``memory_format`` (see ``_memory_format``)."""
        if memory_format is _memory_format.contiguous_format:
            return bool(self._data.flags.c_contiguous)
        _memory_format.check(memory_format, "is_contiguous")
        return _memory_format.is_laid_out_as(self._data, memory_format)

    def data_ptr(self) -> int:
        return int(self._data.__array_interface__["data"][0])

    @property
    def T(self) -> Tensor:  # noqa: N802
        return shape_ops.T(self)

    @property
    def mT(self) -> Tensor:  # noqa: N802
        return shape_ops.mT(self)

    def item(self) -> float | int | bool:
        if self._data.size != 1:
            raise RuntimeError(
                f"a Tensor with {self._data.size} elements cannot be converted to Scalar"
            )
        return self._data.reshape(()).item()

    def tolist(self) -> Any:
        return self._data.tolist()

    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The underlying array (shared memory, as in torch)."""
        if self._requires_grad and not force:
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                "instead."
            )
        return self._data

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        arr = self.numpy()
        return arr if dtype is None else arr.astype(dtype)

    # --- autograd attributes ------------------------------------------------------------------

    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Set ``requires_grad`` on a leaf in place; returns ``self``."""
        if self.grad_fn is not None:
            if not requires_grad:
                raise RuntimeError(
                    "you can only change requires_grad flags of leaf variables. If you want to "
                    "use a computed variable in a subgraph that doesn't require differentiation "
                    "use var_no_grad = var.detach()."
                )
            return self
        if requires_grad and self._data.dtype.kind not in "fc":
            raise RuntimeError(
                "only Tensors of floating point and complex dtype can require gradients"
            )
        if requires_grad and not grad_mode._state.inference and self.is_inference():
            raise RuntimeError("Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.")
        self._requires_grad = bool(requires_grad)
        return self

    @property
    def is_leaf(self) -> bool:
        """True for tensors created by the user (not by an op that recorded a node)."""
        return self.grad_fn is None

    @property
    def grad(self) -> Tensor | None:
        """The gradient accumulated by ``backward()``; set on leaves, and on non-leaves after
        ``retain_grad()``."""
        if self.grad_fn is not None and not self._retains_grad and self._grad is None:
            warnings.warn(
                "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its "
                ".grad attribute won't be populated during autograd.backward(). If you indeed "
                "want the .grad field to be populated for a non-leaf Tensor, use .retain_grad() "
                "on the non-leaf Tensor.",
                UserWarning,
                stacklevel=2,
            )
        return self._grad

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of "
                                f"type {type(value).__name__}")
            if value.shape != self.shape:
                raise RuntimeError(
                    f"attempting to assign a gradient of size '{list(value.shape)}' to a tensor "
                    f"of size '{list(self.shape)}'. Please ensure that the gradient and the "
                    "tensor are the same size"
                )
            if value._data.dtype != self._data.dtype:
                raise RuntimeError("attempting to assign a gradient with dtype "
                                   f"'{value.dtype}' to a tensor with dtype '{self.dtype}'. "
                                   "Please ensure that the gradient and the tensor have the same "
                                   "dtype")
        self._grad = value

    @grad.deleter
    def grad(self) -> None:
        self._grad = None

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    @property
    def output_nr(self) -> int:
        return self._output_nr

    @property
    def _version(self) -> int:
        """How many in-place changes this tensor's memory has seen (an int, as torch's; the
        counter itself, ``_version_counter``, is one list cell shared by every alias)."""
        return self._version_counter[0]

    _version_value = _version

    @property
    def data(self) -> Tensor:
        """The same memory without autograd (and without a shared version counter: changes made
        through ``.data`` are invisible to autograd, as in torch)."""
        return Tensor._wrap(self._data)

    @data.setter
    def data(self, value: Tensor) -> None:
        if not isinstance(value, Tensor):
            raise TypeError(f"data must be a Tensor, got {type(value).__name__}")
        self._data = value._data

    def _grad_accumulator(self, create: bool = True) -> AccumulateGrad | None:
        acc = self._accumulator() if self._accumulator is not None else None
        if acc is None and create:
            acc = AccumulateGrad(self)
            self._accumulator = weakref.ref(acc)
        return acc

    def detach(self) -> Tensor:
        """A new tensor on the same memory, out of the graph. In-place changes to either are
        seen by autograd's version checks of the other."""
        out = Tensor._wrap(self._data)
        out._version_counter = self._version_counter
        if self.is_inference():
            out._inference = True
        return out

    def is_inference(self) -> bool:
        """True for a tensor created inside ``inference_mode()`` (a view is one when its base is,
        as in torch)."""
        base = self._base
        return (base if base is not None else self)._inference

    def detach_(self) -> Tensor:
        if self._base is not None:
            raise RuntimeError("Can't detach views in-place. Use detach() instead.")
        self.grad_fn, self._output_nr, self._requires_grad = None, 0, False
        return self

    def retain_grad(self) -> None:
        """Make ``backward()`` fill ``.grad`` of this non-leaf tensor too."""
        if self.grad_fn is None:
            if not self._requires_grad:
                raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
            return
        if self._retains_grad:
            return
        self._retains_grad = True
        self._install_retain_hook()

    def _install_retain_hook(self) -> None:
        ref = weakref.ref(self)

        def retain(g: np.ndarray) -> None:
            t = ref()
            if t is not None:
                t._grad = Tensor._wrap(g.copy() if t._grad is None else t._grad._data + g)

        node = self.grad_fn
        if node._retains_grad_hooks is None:
            node._retains_grad_hooks = {}
        node._retains_grad_hooks[self._output_nr] = retain

    def register_hook(self, hook: Callable[[Tensor], Tensor | None]) -> RemovableHandle:
        """Call ``hook(grad)`` whenever the gradient for this tensor is computed; a tensor it
        returns replaces the gradient.

        Example::

            >>> h = x.register_hook(lambda g: g * 2)   # doubles x's gradient
            >>> h.remove()
        """
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            return self.grad_fn._register_tensor_pre_hook(self._output_nr, hook)
        if self._backward_hooks is None:
            self._backward_hooks = OrderedDict()
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        return handle

    def register_post_accumulate_grad_hook(self, hook: Callable[[Tensor], None]) -> RemovableHandle:
        """Call ``hook(tensor)`` on a leaf after its ``.grad`` was updated by backward."""
        if self.grad_fn is not None:
            raise RuntimeError(
                "post accumulate grad hooks cannot be registered on non-leaf tensors"
            )
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self._post_accumulate_grad_hooks is None:
            self._post_accumulate_grad_hooks = OrderedDict()
        handle = RemovableHandle(self._post_accumulate_grad_hooks)
        self._post_accumulate_grad_hooks[handle.id] = hook
        return handle

    def backward(
        self,
        gradient: Tensor | None = None,
        retain_graph: bool | None = None,
        create_graph: bool = False,
        inputs: list[Tensor] | None = None,
    ) -> None:
        """Accumulate d(self)/d(leaf) into every leaf's ``.grad``.

        ``gradient`` is required unless ``self`` has one element. Without ``retain_graph=True``
        the graph's saved values are freed, and a second backward through them raises.
        """
        from .autograd import backward

        backward([self], None if gradient is None else [gradient], retain_graph,
                 create_graph, inputs=inputs)

    # --- in-place machinery -------------------------------------------------------------------

    def _check_inplace(self) -> None:
        if not grad_mode._state.inference and self.is_inference():
            raise RuntimeError(
                "Inplace update to inference tensor outside InferenceMode is not allowed.You can make a clone to "
                "get a normal tensor before doing inplace update.See https://github.com/pytorch/rfcs/pull/17 for "
                "more details."
            )
        if not grad_mode._state.enabled:
            return
        if self.grad_fn is None and self._requires_grad and self._base is None:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
        base = self._base
        if base is not None and base.grad_fn is None and base._requires_grad:
            raise RuntimeError(
                "a view of a leaf Variable that requires grad is being used in an in-place "
                "operation."
            )
        # An input a custom Function returned as-is (e.g. a module output behind backward hooks)
        # is a view whose in-place update would bypass the Function's backward: torch forbids it.
        origin = (base if base is not None else self).__dict__.get("_custom_function_output")
        if origin is not None and self._requires_grad:
            raise RuntimeError(
                f"{origin} is a view and is being modified inplace. This view was created inside a "
                "custom Function (or because an input was returned as-is) and the autograd logic to "
                "handle view+inplace would override the custom backward associated with the custom "
                "Function, leading to incorrect gradients. This behavior is forbidden. You can fix "
                "this by cloning the output of the custom Function."
            )

    def _inplace(self, compute: Callable[[Tensor], Tensor], fast: Callable[[], Any] | None,
                 *others: Any) -> Tensor:
        """Apply ``compute`` (an out-of-place op) to ``self`` in place.

        Without a graph to record, ``fast()`` updates the array directly. Otherwise the op runs
        on a copy of the old value (so its backward reads the value before the update), the
        result is written into ``self``'s memory, and ``self``'s ``grad_fn`` moves to the new
        node. On a view of a tensor in a graph, the base's graph is rewritten (``CopySlices``).
        """
        self._check_inplace()
        recording = grad_mode._state.enabled and (
            self._requires_grad
            or any(isinstance(o, Tensor) and o._requires_grad for o in others)
            or (self._base is not None and self._base._requires_grad)
        )
        if not recording and fast is not None:
            fast()
            self._version_counter[0] += 1
            return self
        src = Tensor._wrap(self._data.copy())
        src._requires_grad, src.grad_fn, src._output_nr = (
            self._requires_grad, self.grad_fn, self._output_nr)
        out = compute(src)
        _write(self._data, out._data)
        self._version_counter[0] += 1
        if recording:
            if self._base is not None and (self._base._requires_grad or out._requires_grad):
                _rewrite_base(self, out.grad_fn)
            elif out._requires_grad:
                self._set_history(out.grad_fn, out._output_nr)
        return self

    def _set_history(self, node, output_nr: int) -> None:
        old = self.grad_fn
        self.grad_fn, self._output_nr, self._requires_grad = node, output_nr, True
        if self._retains_grad and old is not None and old is not node:
            old._retains_grad_hooks.pop(self._output_nr, None)
            self._install_retain_hook()

    def copy_(self, src: Any, non_blocking: bool = False) -> Tensor:
        """Copy ``src`` (broadcast, cast to this dtype) into ``self``."""
        src_t = _core.to_tensor(src)
        target = self.shape

        def compute(old):
            try:
                data = np.broadcast_to(src_t._data, target).astype(old._data.dtype)
            except ValueError:
                raise _core.broadcast_error(target, src_t.shape) from None
            sshape = src_t.shape
            return _core.result(data, "CopyBackwards", (old, src_t),
                                lambda g: (np.zeros_like(g), _core.unbroadcast(g, sshape)))

        def fast():
            try:
                np.copyto(self._data, src_t._data, casting="unsafe")
            except ValueError:
                raise _core.broadcast_error(target, src_t.shape) from None

        return self._inplace(compute, fast, src_t)

    def fill_(self, value: Any) -> Tensor:
        v = value._data if isinstance(value, Tensor) else value

        def compute(old):
            data = np.full(old.shape, v, dtype=old._data.dtype)
            return _core.result(data, "FillBackward0", (old,), lambda g: (np.zeros_like(g),))

        return self._inplace(compute, lambda: self._data.fill(v))

    def zero_(self) -> Tensor:
        return self.fill_(0)

    def uniform_(self, a: float = 0.0, b: float = 1.0, *, generator=None) -> Tensor:
        from ._random import uniform_array
        return self.copy_(Tensor._wrap(uniform_array(self.shape, a, b, self._data.dtype, generator)))

    def normal_(self, mean: float = 0.0, std: float = 1.0, *, generator=None) -> Tensor:
        from ._random import normal_array
        return self.copy_(Tensor._wrap(normal_array(self.shape, mean, std, self._data.dtype, generator)))

    def bernoulli_(self, p: float = 0.5, *, generator=None) -> Tensor:
        from ._random import uniform_array
        draws = uniform_array(self.shape, 0, 1, np.float64, generator) < p
        return self.copy_(Tensor._wrap(draws))

    def _inplace_binary(self, op: Callable, ufunc: np.ufunc, other: Any, **kw: Any) -> Tensor:
        y = other._data if isinstance(other, Tensor) else other
        alpha = kw.get("alpha", 1)
        if self._data.dtype.kind != "f" or alpha.__class__ is bool:
            # torch's checks and integer wrap-around: through the out-of-place op
            return self._inplace(lambda old: op(old, other, **kw), None, other)

        def fast():
            if not self._data.flags.writeable:
                raise RuntimeError(
                    "unsupported operation: more than one element of the written-to tensor refers to a "
                    "single memory location (it is an expanded view). Please clone() the tensor before "
                    "performing the operation.")
            try:
                ufunc(self._data, y if alpha == 1 else y * alpha, out=self._data,
                      casting="same_kind")
            except ValueError:
                raise _core.broadcast_error(self.shape, np.shape(y)) from None
            except TypeError as e:  # e.g. float result into an int tensor
                raise RuntimeError(
                    f"result type {_result_name(self._data, y)} can't be cast to the desired "
                    f"output type {_dtype.scalar_type_name(self._data.dtype)}"
                ) from e

        return self._inplace(lambda old: op(old, other, **kw), fast, other)

    def add_(self, other: Any, *, alpha: float = 1) -> Tensor:
        return self._inplace_binary(pointwise.add, np.add, other, alpha=alpha)

    def sub_(self, other: Any, *, alpha: float = 1) -> Tensor:
        if other.__class__ is bool or isinstance(other, Tensor) and other._data.dtype.kind == "b":
            return self._inplace(lambda old: pointwise.sub(old, other, alpha=alpha), None, other)
        return self._inplace_binary(pointwise.sub, np.subtract, other, alpha=alpha)

    def mul_(self, other: Any) -> Tensor:
        return self._inplace_binary(pointwise.mul, np.multiply, other)

    def div_(self, other: Any) -> Tensor:
        return self._inplace_binary(pointwise.div, np.true_divide, other)

    def pow_(self, exponent: Any) -> Tensor:
        return self._inplace_binary(pointwise.pow, np.power, exponent)

    __iadd__ = add_
    __isub__ = sub_
    __imul__ = mul_
    __itruediv__ = div_

    def _inplace_unary(self, op: Callable, *args: Any, **kw: Any) -> Tensor:
        return self._inplace(lambda old: op(old, *args, **kw), None, *args)

    def clamp_(self, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
        return self._inplace_unary(pointwise.clamp, min, max)

    def masked_fill_(self, mask: Any, value: Any) -> Tensor:
        return self._inplace_unary(pointwise.masked_fill, mask, value)

    def relu_(self) -> Tensor:
        return self._inplace_unary(pointwise.relu)

    def sigmoid_(self) -> Tensor:
        return self._inplace_unary(pointwise.sigmoid)

    def tanh_(self) -> Tensor:
        return self._inplace_unary(pointwise.tanh)

    def exp_(self) -> Tensor:
        return self._inplace_unary(pointwise.exp)

    def sqrt_(self) -> Tensor:
        return self._inplace_unary(pointwise.sqrt)

    def neg_(self) -> Tensor:
        return self._inplace_unary(pointwise.neg)

    def abs_(self) -> Tensor:
        return self._inplace_unary(pointwise.abs)

    # in place through the out-of-place op (result cast back to this tensor's dtype)
    def atan2_(self, other): return self._inplace_unary(pointwise.atan2, other)  # noqa: E704
    def fmod_(self, other): return self._inplace_unary(pointwise.fmod, other)  # noqa: E704
    def remainder_(self, other): return self._inplace_unary(pointwise.remainder, other)  # noqa: E704
    def floor_divide_(self, other): return self._inplace_unary(pointwise.floor_divide, other)  # noqa: E704
    def frac_(self): return self._inplace_unary(pointwise.frac)  # noqa: E704
    def sign_(self): return self._inplace_unary(pointwise.sign)  # noqa: E704
    def erf_(self): return self._inplace_unary(special.erf)  # noqa: E704
    def log_(self): return self._inplace_unary(pointwise.log)  # noqa: E704
    def square_(self): return self._inplace_unary(pointwise.square)  # noqa: E704
    def clamp_min_(self, min): return self._inplace_unary(pointwise.clamp, min, None)  # noqa: A002, E704
    def clamp_max_(self, max): return self._inplace_unary(pointwise.clamp, None, max)  # noqa: A002, E704
    def erfinv_(self): return self._inplace_unary(special.erfinv)  # noqa: E704
    def logit_(self, eps=None): return self._inplace_unary(special.logit, eps)  # noqa: E704
    def lgamma_(self): return self._inplace_unary(gamma.lgamma)  # noqa: E704
    def digamma_(self): return self._inplace_unary(gamma.digamma)  # noqa: E704
    def polygamma_(self, n): return self._inplace_unary(lambda t: gamma.polygamma(n, t))  # noqa: E704
    def mvlgamma_(self, p): return self._inplace_unary(gamma.mvlgamma, p)  # noqa: E704
    def i0_(self): return self._inplace_unary(special_more.i0)  # noqa: E704
    def polygamma(self, n): return gamma.polygamma(n, self)  # noqa: E704
    def nan_to_num_(self, nan=0.0, posinf=None, neginf=None):  # noqa: E704
        return self._inplace_unary(special.nan_to_num, nan, posinf, neginf)
    def lerp_(self, end, weight): return self._inplace_unary(special.lerp, end, weight)  # noqa: E704
    def addcmul_(self, tensor1, tensor2, *, value=1):  # noqa: E704
        return self._inplace_unary(special.addcmul, tensor1, tensor2, value=value)
    def addcdiv_(self, tensor1, tensor2, *, value=1):  # noqa: E704
        return self._inplace_unary(special.addcdiv, tensor1, tensor2, value=value)
    def floor_(self): return self._inplace_unary(pointwise.floor)  # noqa: E704
    def ceil_(self): return self._inplace_unary(pointwise.ceil)  # noqa: E704
    def round_(self): return self._inplace_unary(pointwise.round)  # noqa: E704
    def trunc_(self): return self._inplace_unary(pointwise.trunc)  # noqa: E704
    def logical_not_(self): return self._inplace_unary(pointwise.logical_not)  # noqa: E704
    def logical_and_(self, other): return self._inplace_unary(pointwise.logical_and, other)  # noqa: E704
    def logical_or_(self, other): return self._inplace_unary(pointwise.logical_or, other)  # noqa: E704
    def logical_xor_(self, other): return self._inplace_unary(pointwise.logical_xor, other)  # noqa: E704
    def bitwise_not_(self): return self._inplace_unary(pointwise.bitwise_not)  # noqa: E704
    def bitwise_and_(self, other): return self._inplace_unary(pointwise.bitwise_and, other)  # noqa: E704
    def bitwise_or_(self, other): return self._inplace_unary(pointwise.bitwise_or, other)  # noqa: E704
    def bitwise_xor_(self, other): return self._inplace_unary(pointwise.bitwise_xor, other)  # noqa: E704
    arctan2, arctan2_ = pointwise.atan2, atan2_
    __imod__, __ifloordiv__ = remainder_, floor_divide_
    __iand__, __ior__, __ixor__ = bitwise_and_, bitwise_or_, bitwise_xor_

    def __setitem__(self, key: Any, value: Any) -> None:
        """``x[key] = value``, recorded for autograd as torch records it: basic keys update a
        view (``CopySlices`` on ``x``), advanced keys go through ``index_put``."""
        value_t = value if isinstance(value, Tensor) else None
        if not grad_mode._state.enabled or not (
            self._requires_grad or (value_t is not None and value_t._requires_grad)
            or (self._base is not None and self._base._requires_grad)
        ):
            self._check_inplace()
            v = value._data if value_t is not None else value
            try:
                self._data[indexing._normalise_key(key)] = v
            except ValueError:
                raise RuntimeError(
                    f"shape mismatch: value tensor of shape {list(np.shape(v))} cannot be "
                    "broadcast to indexing result"
                ) from None
            except IndexError as e:
                raise IndexError(indexing._torch_index_message(str(e))) from None
            self._version_counter[0] += 1
            return
        if _is_basic_key(key):
            target = indexing.getitem(self, key)
            if target._base is None or target is self:
                target = shape_ops.view_op(self, self._data, "AliasBackward0", lambda g: (g,),
                                       lambda arr: arr)
            target.copy_(value)
        else:
            self._inplace(lambda old: indexing.index_put(old, key, value), None, value)

    # --- conversions --------------------------------------------------------------------------

    def to(self, *args: Any, **kwargs: Any) -> Tensor:
        """``to(dtype)``, ``to('cpu')``, ``to(other)``, ``memory_format=``; a copy only when the
        dtype changes or the tensor is not laid out as ``memory_format`` asks."""
        fmt = kwargs.get("memory_format")
        if fmt is not None and fmt is not _memory_format.preserve_format:
            return self._to_format(args, kwargs, fmt)
        dtype = kwargs.get("dtype")
        copy = kwargs.get("copy", False)
        for a in args:
            if isinstance(a, _dtype.dtype):
                dtype = a
            elif isinstance(a, Tensor):
                dtype = a.dtype
            elif isinstance(a, str | device):
                device(a)
        if "device" in kwargs and kwargs["device"] is not None:
            device(kwargs["device"])
        if dtype is None or (dtype.np == self._data.dtype and not copy):
            return self
        return _to_copy(self, dtype.np)

    def _to_format(self, args: tuple, kwargs: dict, fmt: Any) -> Tensor:
        _memory_format.check(fmt, "to")
        cast = self.to(*args, **{k: v for k, v in kwargs.items() if k != "memory_format"})
        if cast is self and _memory_format.suggested(self._data) is fmt:
            return self
        return _to_copy(self, cast._data.dtype, _memory_format.copy_as(self._data, fmt, cast._data.dtype))

    def type(self, dtype: Any = None) -> Any:
        if dtype is None:
            return f"engine.{_legacy_name(self._data.dtype)}"
        if isinstance(dtype, str):
            dtype = _LEGACY_TO_DTYPE[dtype.split(".")[-1]]
        if isinstance(dtype, type):  # a legacy type: engine.LongTensor
            dtype = dtype.dtype
        return self.to(dtype)

    def type_as(self, other: Tensor) -> Tensor:
        return self.to(other.dtype)

    def float(self) -> Tensor:
        return self.to(_dtype.float32)

    def double(self) -> Tensor:
        return self.to(_dtype.float64)

    def half(self) -> Tensor:
        return self.to(_dtype.float16)

    def long(self) -> Tensor:
        return self.to(_dtype.int64)

    def int(self) -> Tensor:
        return self.to(_dtype.int32)

    def bool(self) -> Tensor:
        return self.to(_dtype.bool_)

    def cpu(self) -> Tensor:
        return self

    def cuda(self, *args: Any, **kwargs: Any) -> Tensor:
        raise RuntimeError("engine runs on NumPy and has no CUDA device; use .cpu() (a no-op)")

    def new_tensor(self, data: Any, dtype=None, requires_grad: bool = False) -> Tensor:
        from ._creation import tensor
        return tensor(data, dtype=dtype or self.dtype, requires_grad=requires_grad)

    def _new(self, fill: Callable, size: tuple, dtype, requires_grad: bool) -> Tensor:
        npdt = dtype.np if dtype is not None else self._data.dtype
        out = Tensor._wrap(fill(shape_ops._sizes(size), npdt))
        return out.requires_grad_(requires_grad) if requires_grad else out

    def new_zeros(self, *size: Any, dtype=None, requires_grad: bool = False) -> Tensor:
        return self._new(np.zeros, size, dtype, requires_grad)

    def new_ones(self, *size: Any, dtype=None, requires_grad: bool = False) -> Tensor:
        return self._new(np.ones, size, dtype, requires_grad)

    def new_empty(self, *size: Any, dtype=None, requires_grad: bool = False) -> Tensor:
        return self._new(np.empty, size, dtype, requires_grad)

    def new_full(self, size: Any, fill_value: Any, dtype=None, requires_grad: bool = False) -> Tensor:
        return self._new(lambda s, d: np.full(s, fill_value, d), (size,), dtype, requires_grad)

    # --- Python protocol ----------------------------------------------------------------------

    def __repr__(self) -> str:
        return tensor_repr(self)

    def __format__(self, spec: str) -> str:
        # f"{loss:.4f}" on a 0-d tensor formats its number, as torch's does
        if self._data.ndim == 0:
            return self.item().__format__(spec)
        return object.__format__(self, spec)

    def __contains__(self, element: Any) -> bool:
        if not isinstance(element, Tensor | int | float | bool):
            raise RuntimeError("Tensor.__contains__ only supports Tensor or scalar, but you passed in a "
                               f"{type(element)}.")
        other = element._data if isinstance(element, Tensor) else element
        return bool((self._data == other).any())

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(shape_ops.unbind(self, 0))

    def __bool__(self) -> bool:
        if self._data.size != 1:
            raise RuntimeError(
                "Boolean value of Tensor with more than one value is ambiguous"
            )
        return bool(self._data.reshape(()))

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self._data.dtype.kind not in "iub" or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    __hash__ = object.__hash__

    def __deepcopy__(self, memo: dict) -> Tensor:
        if not self.is_leaf:
            raise RuntimeError(
                "Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
                "protocol at the moment.  If you were attempting to deepcopy a module, this may be "
                "because of a torch.nn.utils.weight_norm usage, see "
                "https://github.com/pytorch/pytorch/pull/103001"
            )
        if id(self) in memo:
            return memo[id(self)]
        new = type(self)._wrap(self._data.copy())
        new._requires_grad = self._requires_grad
        if self._grad is not None:
            new._grad = self._grad.__deepcopy__(memo)
        new.__dict__.update(_deepcopy_dict(self.__dict__, memo))
        memo[id(self)] = new
        return new

    def __reduce_ex__(self, protocol: int):
        raise TypeError(
            "engine tensors are not picklable: use engine.save / engine.load (NumPy-based, no "
            "pickle) for state_dicts"
        )

    # operators
    def __add__(self, o): return pointwise.add(self, o)  # noqa: E704
    def __radd__(self, o): return pointwise.add(self, o)  # noqa: E704
    def __sub__(self, o): return pointwise.sub(self, o)  # noqa: E704
    def __rsub__(self, o): return pointwise.rsub(self, o)  # noqa: E704
    def __mul__(self, o): return pointwise.mul(self, o)  # noqa: E704
    def __rmul__(self, o): return pointwise.mul(self, o)  # noqa: E704
    def __truediv__(self, o): return pointwise.div(self, o)  # noqa: E704
    def __rtruediv__(self, o): return pointwise.rdiv(self, o)  # noqa: E704
    def __floordiv__(self, o): return pointwise.floor_divide(self, o)  # noqa: E704
    def __rfloordiv__(self, o): return pointwise.floor_divide(o, self)  # noqa: E704
    def __mod__(self, o): return pointwise.remainder(self, o)  # noqa: E704
    def __rmod__(self, o): return pointwise.remainder(o, self)  # noqa: E704
    def __pow__(self, o): return pointwise.pow(self, o)  # noqa: E704
    def __rpow__(self, o): return pointwise.rpow(self, o)  # noqa: E704
    def __matmul__(self, o): return linalg.matmul(self, o)  # noqa: E704
    def __rmatmul__(self, o): return linalg.matmul(_core.to_tensor(o), self)  # noqa: E704
    def __neg__(self): return pointwise.neg(self)  # noqa: E704
    def __pos__(self): return self  # noqa: E704
    def __abs__(self): return pointwise.abs(self)  # noqa: E704
    def __invert__(self): return pointwise.invert(self)  # noqa: E704
    def __and__(self, o): return pointwise.bitwise_and(self, o)  # noqa: E704
    def __or__(self, o): return pointwise.bitwise_or(self, o)  # noqa: E704
    def __xor__(self, o): return pointwise.bitwise_xor(self, o)  # noqa: E704
    def __rand__(self, o): return pointwise.bitwise_and(o, self)  # noqa: E704
    def __ror__(self, o): return pointwise.bitwise_or(o, self)  # noqa: E704
    def __rxor__(self, o): return pointwise.bitwise_xor(o, self)  # noqa: E704
    def __eq__(self, o): return pointwise.eq(self, o)  # type: ignore[override]  # noqa: E704
    def __ne__(self, o): return pointwise.ne(self, o)  # type: ignore[override]  # noqa: E704
    def __lt__(self, o): return pointwise.lt(self, o)  # noqa: E704
    def __le__(self, o): return pointwise.le(self, o)  # noqa: E704
    def __gt__(self, o): return pointwise.gt(self, o)  # noqa: E704
    def __ge__(self, o): return pointwise.ge(self, o)  # noqa: E704
    def __getitem__(self, key): return indexing.getitem(self, key)  # noqa: E704

    # ops as methods (each documented where it is defined)
    add, sub, mul, div, pow = pointwise.add, pointwise.sub, pointwise.mul, pointwise.div, pointwise.pow
    subtract, multiply, divide, true_divide = sub, mul, div, div
    remainder, floor_divide = pointwise.remainder, pointwise.floor_divide
    neg, negative, abs, square = pointwise.neg, pointwise.neg, pointwise.abs, pointwise.square
    exp, log, log2, log1p, expm1 = (pointwise.exp, pointwise.log, pointwise.log2, pointwise.log1p,
                                    pointwise.expm1)
    sqrt, rsqrt, reciprocal = pointwise.sqrt, pointwise.rsqrt, pointwise.reciprocal
    sin, cos, tan, tanh, sigmoid, relu = (pointwise.sin, pointwise.cos, pointwise.tan,
                                          pointwise.tanh, pointwise.sigmoid, pointwise.relu)
    sign, floor, ceil, round, trunc = (pointwise.sign, pointwise.floor, pointwise.ceil,
                                       pointwise.round, pointwise.trunc)
    clamp, clip, clamp_min, clamp_max = (pointwise.clamp, pointwise.clamp, pointwise.clamp_min,
                                         pointwise.clamp_max)
    maximum, minimum, masked_fill = pointwise.maximum, pointwise.minimum, pointwise.masked_fill
    erf, erfc, erfinv, logit, nan_to_num = (special.erf, special.erfc, special.erfinv, special.logit,
                                            special.nan_to_num)
    lerp, addcmul, addcdiv = special.lerp, special.addcmul, special.addcdiv
    tile, movedim = shape_composite.tile, shape_composite.movedim
    moveaxis = movedim
    exp2, log10, sinh, cosh, sinc = special.exp2, special.log10, special.sinh, special.cosh, special.sinc
    asin, acos, atan, asinh, acosh, atanh = (special.asin, special.acos, special.atan, special.asinh,
                                             special.acosh, special.atanh)
    arcsin, arccos, arctan, arcsinh, arccosh, arctanh = asin, acos, atan, asinh, acosh, atanh
    deg2rad, rad2deg, hypot, logaddexp, xlogy, signbit = (special.deg2rad, special.rad2deg, special.hypot,
                                                          special.logaddexp, special.xlogy, special.signbit)
    lgamma, digamma, mvlgamma, i0 = gamma.lgamma, gamma.digamma, gamma.mvlgamma, special_more.i0
    eq, ne, lt, le, gt, ge = (pointwise.eq, pointwise.ne, pointwise.lt, pointwise.le,
                              pointwise.gt, pointwise.ge)
    logical_and, logical_or, logical_xor = (pointwise.logical_and, pointwise.logical_or,
                                            pointwise.logical_xor)
    logical_not, atan2, fmod, frac = pointwise.logical_not, pointwise.atan2, pointwise.fmod, pointwise.frac
    bitwise_and, bitwise_or, bitwise_xor, bitwise_not = (pointwise.bitwise_and, pointwise.bitwise_or,
                                                         pointwise.bitwise_xor, pointwise.bitwise_not)
    sum, mean, var, std, prod = (reduction.sum, reduction.mean, reduction.var, reduction.std,
                                 reduction.prod)
    max, min, amax, amin = reduction.max, reduction.min, reduction.amax, reduction.amin
    argmax, argmin, logsumexp, norm = (reduction.argmax, reduction.argmin, reduction.logsumexp,
                                       reduction.norm)
    softmax, log_softmax = reduction.softmax, reduction.log_softmax
    all, any = reduction.all, reduction.any
    cumsum, cumprod, median, nansum = reduction.cumsum, reduction.cumprod, reduction.median, reduction.nansum
    count_nonzero, aminmax = reduction.count_nonzero, reduction.aminmax
    matmul, mm, bmm, mv, dot = linalg.matmul, linalg.mm, linalg.bmm, linalg.mv, linalg.dot
    view, reshape, flatten, unflatten = shape_ops.view, shape_ops.reshape, shape_ops.flatten, shape_ops.unflatten
    squeeze, unsqueeze, expand, expand_as = (shape_ops.squeeze, shape_ops.unsqueeze, shape_ops.expand,
                                             shape_ops.expand_as)
    permute, transpose, t, clone, contiguous = (shape_ops.permute, shape_ops.transpose, shape_ops.t,
                                                shape_ops.clone, shape_ops.contiguous)
    swapaxes = transpose
    split, chunk, unbind, narrow, repeat, flip = (shape_ops.split, shape_ops.chunk, shape_ops.unbind,
                                                  shape_ops.narrow, shape_ops.repeat, shape_ops.flip)
    gather, index_select, select = indexing.gather, indexing.index_select, indexing.select

    def view_as(self, other: Tensor) -> Tensor:
        return shape_ops.view(self, other.shape)

    def reshape_as(self, other: Tensor) -> Tensor:
        return shape_ops.reshape(self, other.shape)

    def isnan(self) -> Tensor:
        return Tensor._wrap(np.isnan(self._data))

    def isinf(self) -> Tensor:
        return Tensor._wrap(np.isinf(self._data))

    def isfinite(self) -> Tensor:
        return Tensor._wrap(np.isfinite(self._data))

    nonzero, masked_select, take_along_dim = indexing.nonzero, indexing.masked_select, indexing.take_along_dim
    tril, triu, roll, diagonal, diag = (shape_ops.tril, shape_ops.triu, shape_ops.roll, shape_ops.diagonal,
                                        shape_ops.diag)
    repeat_interleave, broadcast_to, tensor_split = (shape_ops.repeat_interleave, shape_ops.broadcast_to,
                                                     shape_ops.tensor_split)
    sort, argsort, topk, unique, bincount = (sorting.sort, sorting.argsort, sorting.topk, sorting.unique,
                                             sorting.bincount)
    isclose, allclose, multinomial = comparison.isclose, comparison.allclose, sampling.multinomial
    scatter, scatter_add, scatter_reduce, index_add = (scatter.scatter, scatter.scatter_add,
                                                       scatter.scatter_reduce, scatter.index_add)
    outer, ger, cross = linalg.outer, linalg.outer, linalg.cross
    kron, diff, cov, corrcoef, trace, histc = misc.kron, misc.diff, misc.cov, misc.corrcoef, misc.trace, misc.histc
    quantile, nanquantile, kthvalue, mode, nanmean = (misc.quantile, misc.nanquantile, misc.kthvalue, misc.mode,
                                                      misc.nanmean)
    cummax, cummin, logcumsumexp, renorm = misc.cummax, misc.cummin, misc.logcumsumexp, misc.renorm
    unfold, rot90, fliplr, flipud, take, put = misc.unfold, misc.rot90, misc.fliplr, misc.flipud, misc.take, misc.put
    index_fill, index_copy, masked_scatter, index_put = (misc.index_fill, misc.index_copy, misc.masked_scatter,
                                                         misc.index_put)
    baddbmm, addbmm, addmv, addr = misc.baddbmm, misc.addbmm, misc.addmv, misc.addr
    det, slogdet, logdet, inverse = linalg_more.det, linalg_more.slogdet, linalg_more.logdet, linalg_more.inverse
    svd, pinverse, matrix_power = linalg_more.svd_torch, linalg_more.pinverse, linalg_more.matrix_power
    matrix_exp = linalg_more.matrix_exp
    qr, cholesky_solve = linalg_more.qr_torch, linalg_more.cholesky_solve
    cholesky_inverse = linalg_more.cholesky_inverse
    inner, dist, diag_embed, diagflat, ravel, msort = (misc.inner, misc.dist, misc.diag_embed, misc.diagflat,
                                                       misc.ravel, misc.msort)
    fmax, fmin, logaddexp2, float_power = misc.fmax, misc.fmin, misc.logaddexp2, misc.float_power
    swapdims = misc.swapdims
    isposinf, isneginf, argwhere = misc.isposinf, misc.isneginf, misc.argwhere
    cholesky = linalg_more.cholesky_deprecated

    def where(self, condition: Any, other: Any) -> Tensor:
        return indexing.where(condition, self, other)

    # in place through the out-of-place op (the leaf and version rules of ``_inplace``)
    def tril_(self, diagonal=0): return self._inplace_unary(shape_ops.tril, diagonal)  # noqa: E704
    def triu_(self, diagonal=0): return self._inplace_unary(shape_ops.triu, diagonal)  # noqa: E704

    def scatter_(self, dim, index, src=None, *, value=None, reduce=None) -> Tensor:
        return self._inplace_unary(scatter.scatter, dim, index, src, value=value, reduce=reduce)

    def scatter_add_(self, dim, index, src) -> Tensor:
        return self._inplace_unary(scatter.scatter_add, dim, index, src)

    def scatter_reduce_(self, dim, index, src, reduce, *, include_self=True) -> Tensor:
        return self._inplace_unary(scatter.scatter_reduce, dim, index, src, reduce,
                                   include_self=include_self)

    def index_add_(self, dim, index, source, *, alpha=1) -> Tensor:
        return self._inplace_unary(scatter.index_add, dim, index, source, alpha=alpha)

    def index_fill_(self, dim, index, value) -> Tensor:
        return self._inplace_unary(misc.index_fill, dim, index, value)

    def index_copy_(self, dim, index, source) -> Tensor:
        return self._inplace_unary(misc.index_copy, dim, index, source)

    def masked_scatter_(self, mask, source) -> Tensor:
        return self._inplace_unary(misc.masked_scatter, mask, source)

    def put_(self, index, source, accumulate=False) -> Tensor:
        return self._inplace_unary(misc.put, index, source, accumulate)

    def index_put_(self, indices, values, accumulate=False) -> Tensor:
        if isinstance(indices, Tensor):
            raise TypeError("index_put_(): argument 'indices' (position 1) must be tuple of Tensors, not Tensor")
        return self._inplace_unary(misc.index_put, indices, values, accumulate)

    def addmm_(self, mat1, mat2, *, beta=1, alpha=1) -> Tensor:
        return self._inplace_unary(linalg.addmm, mat1, mat2, beta=beta, alpha=alpha)

    def renorm_(self, p, dim, maxnorm) -> Tensor:
        return self._inplace_unary(misc.renorm, p, dim, maxnorm)

    def baddbmm_(self, batch1, batch2, *, beta=1, alpha=1) -> Tensor:
        return self._inplace_unary(misc.baddbmm, batch1, batch2, beta=beta, alpha=alpha)

    def addbmm_(self, batch1, batch2, *, beta=1, alpha=1) -> Tensor:
        return self._inplace_unary(misc.addbmm, batch1, batch2, beta=beta, alpha=alpha)

    def addmv_(self, mat, vec, *, beta=1, alpha=1) -> Tensor:
        return self._inplace_unary(misc.addmv, mat, vec, beta=beta, alpha=alpha)

    def addr_(self, vec1, vec2, *, beta=1, alpha=1) -> Tensor:
        return self._inplace_unary(misc.addr, vec1, vec2, beta=beta, alpha=alpha)

    # --- round 3a: the rest of torch's Tensor methods real code reaches for ----------------------
    # (ops in ``_ops/tensor_more.py``; in-place forms through ``_inplace``'s leaf and version rules)

    @property
    def is_cpu(self) -> bool:
        return True

    def get_device(self) -> int:
        """-1: the CPU's device index, as torch answers for CPU tensors."""
        return -1

    def byte(self) -> Tensor:
        return self.to(_dtype.uint8)

    def char(self) -> Tensor:
        return self.to(_dtype.int8)

    def short(self) -> Tensor:
        return self.to(_dtype.int16)

    def ndimension(self) -> int:
        return self._data.ndim

    def is_signed(self) -> bool:
        """False for uint8 and bool, True for every other dtype."""
        return self._data.dtype.kind not in "ub"

    def is_nonzero(self) -> bool:
        """The truth value of a one-element tensor (torch's errors for other sizes)."""
        if self._data.size == 0:
            raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
        return bool(self)

    def equal(self, other: Tensor) -> bool:
        """Same shape and equal values (NaN never equals NaN; dtypes may differ)."""
        return self.shape == other.shape and bool((self._data == other._data).all())

    def new(self, *args: Any) -> Tensor:
        """torch's legacy constructor on an instance: ``new()`` (empty), ``new(2, 3)`` or
        ``new(Size)`` (uninitialised, this dtype), ``new(data)`` (a copy in this dtype),
        ``new(tensor)`` (that tensor's memory; its dtype must be this one)."""
        dt = self._data.dtype
        if len(args) == 1 and isinstance(args[0], Tensor):
            other = args[0]
            if other._data.dtype != dt:
                raise TypeError(f"expected TensorOptions(dtype={_c_type(dt)}, device=cpu) (got "
                                f"TensorOptions(dtype={_c_type(other._data.dtype)}, device=cpu))")
            return Tensor._wrap(other._data)
        if len(args) == 1 and not isinstance(args[0], int | Size):
            return Tensor._wrap(np.array(_plain(args[0])).astype(dt))
        return Tensor._wrap(np.empty(shape_ops._sizes(args) if args else (0,), dt))

    @property
    def H(self) -> Tensor:  # noqa: N802
        return tensor_more.hermitian_t(self)

    @property
    def mH(self) -> Tensor:  # noqa: N802
        return tensor_more.hermitian_mt(self)

    def storage_offset(self) -> int:
        """Elements between the start of the memory this tensor views and its first element."""
        root = self._data
        while isinstance(root.base, np.ndarray):
            root = root.base
        start = self._data.__array_interface__["data"][0] - root.__array_interface__["data"][0]
        return int(start // self._data.itemsize)

    positive, sgn, absolute, fix = tensor_more.positive, tensor_more.sgn, pointwise.abs, pointwise.trunc
    greater, greater_equal, less, less_equal, not_equal = (pointwise.gt, pointwise.ge, pointwise.lt,
                                                           pointwise.le, pointwise.ne)
    heaviside, copysign, gcd, lcm = tensor_more.heaviside, tensor_more.copysign, tensor_more.gcd, tensor_more.lcm
    ldexp, frexp, nextafter, vdot = tensor_more.ldexp, tensor_more.frexp, tensor_more.nextafter, tensor_more.vdot
    unique_consecutive, nanmedian = tensor_more.unique_consecutive, tensor_more.nanmedian
    hsplit, vsplit, dsplit = tensor_more.hsplit, tensor_more.vsplit, tensor_more.dsplit
    split_with_sizes, sum_to_size = tensor_more.split_with_sizes, tensor_more.sum_to_size

    def bernoulli(self, p: Any = None, *, generator=None) -> Tensor:
        """Draws of 0/1 (this dtype) with probabilities ``self`` (or ``p``)."""
        from ._creation import bernoulli
        return bernoulli(self if p is None else Tensor._wrap(np.full(self.shape, p, self._data.dtype)),
                         generator=generator)

    # in place through the out-of-place op (result written back in this tensor's dtype)
    def sin_(self): return self._inplace_unary(pointwise.sin)  # noqa: E704
    def cos_(self): return self._inplace_unary(pointwise.cos)  # noqa: E704
    def tan_(self): return self._inplace_unary(pointwise.tan)  # noqa: E704
    def asin_(self): return self._inplace_unary(special.asin)  # noqa: E704
    def acos_(self): return self._inplace_unary(special.acos)  # noqa: E704
    def atan_(self): return self._inplace_unary(special.atan)  # noqa: E704
    def sinh_(self): return self._inplace_unary(special.sinh)  # noqa: E704
    def cosh_(self): return self._inplace_unary(special.cosh)  # noqa: E704
    def asinh_(self): return self._inplace_unary(special.asinh)  # noqa: E704
    def acosh_(self): return self._inplace_unary(special.acosh)  # noqa: E704
    def atanh_(self): return self._inplace_unary(special.atanh)  # noqa: E704
    arcsin_, arccos_, arctan_, arcsinh_, arccosh_, arctanh_ = asin_, acos_, atan_, asinh_, acosh_, atanh_
    def log10_(self): return self._inplace_unary(special.log10)  # noqa: E704
    def log1p_(self): return self._inplace_unary(pointwise.log1p)  # noqa: E704
    def log2_(self): return self._inplace_unary(pointwise.log2)  # noqa: E704
    def expm1_(self): return self._inplace_unary(pointwise.expm1)  # noqa: E704
    def exp2_(self): return self._inplace_unary(special.exp2)  # noqa: E704
    def rsqrt_(self): return self._inplace_unary(pointwise.rsqrt)  # noqa: E704
    def reciprocal_(self): return self._inplace_unary(pointwise.reciprocal)  # noqa: E704
    def erfc_(self): return self._inplace_unary(special.erfc)  # noqa: E704
    def deg2rad_(self): return self._inplace_unary(special.deg2rad)  # noqa: E704
    def rad2deg_(self): return self._inplace_unary(special.rad2deg)  # noqa: E704
    def sinc_(self): return self._inplace_unary(special.sinc)  # noqa: E704
    def sgn_(self): return self._inplace_unary(tensor_more.sgn)  # noqa: E704
    def hypot_(self, other): return self._inplace_unary(special.hypot, other)  # noqa: E704
    def xlogy_(self, other): return self._inplace_unary(special.xlogy, other)  # noqa: E704
    def copysign_(self, other): return self._inplace_unary(tensor_more.copysign, other)  # noqa: E704
    def gcd_(self, other): return self._inplace_unary(tensor_more.gcd, other)  # noqa: E704
    def lcm_(self, other): return self._inplace_unary(tensor_more.lcm, other)  # noqa: E704
    def heaviside_(self, values): return self._inplace_unary(tensor_more.heaviside, values)  # noqa: E704
    def nextafter_(self, other): return self._inplace_unary(tensor_more.nextafter, other)  # noqa: E704
    absolute_, fix_, negative_, clip_ = abs_, trunc_, neg_, clamp_
    multiply_, subtract_, true_divide_ = mul_, sub_, div_

    def ldexp_(self, other: Tensor) -> Tensor:
        if self._data.dtype.kind != "f":
            raise RuntimeError(f"ldexp can't be cast to the desired output type "
                               f"{_dtype.scalar_type_name(self._data.dtype)}")
        return self._inplace_unary(tensor_more.ldexp, other)

    def divide_(self, other: Any, *, rounding_mode: str | None = None) -> Tensor:
        if rounding_mode is None:
            return self.div_(other)
        return self._inplace_unary(pointwise.div, other, rounding_mode=rounding_mode)

    def float_power_(self, exponent: Any) -> Tensor:
        """``float_power`` in place: only a float64 tensor can hold its (double) result."""
        if self._data.dtype != np.float64:
            raise RuntimeError(f"the base given to float_power_ has dtype "
                               f"{_dtype.scalar_type_name(self._data.dtype)} but the operation's result "
                               "requires dtype Double")
        return self._inplace_unary(misc.float_power, exponent)

    def _inplace_compare(self, op: Callable, name: str, other: Any) -> Tensor:
        """``eq_`` and friends: the comparison's 0/1 in this dtype; zero gradient (torch's)."""
        def compute(old):
            data = op(old, other)._data.astype(old._data.dtype)
            return _core.result(data, name, (old,), lambda g: (np.zeros_like(g),))
        return self._inplace(compute, None, other)

    def eq_(self, other): return self._inplace_compare(pointwise.eq, "EqBackward0", other)  # noqa: E704
    def ne_(self, other): return self._inplace_compare(pointwise.ne, "NeBackward0", other)  # noqa: E704
    def lt_(self, other): return self._inplace_compare(pointwise.lt, "LtBackward0", other)  # noqa: E704
    def le_(self, other): return self._inplace_compare(pointwise.le, "LeBackward0", other)  # noqa: E704
    def gt_(self, other): return self._inplace_compare(pointwise.gt, "GtBackward0", other)  # noqa: E704
    def ge_(self, other): return self._inplace_compare(pointwise.ge, "GeBackward0", other)  # noqa: E704
    greater_, greater_equal_, less_, less_equal_, not_equal_ = gt_, ge_, lt_, le_, ne_

    def _scan_(self, op: Callable, dim: int, dtype: Any) -> Tensor:
        if dtype is not None and dtype.np != self._data.dtype:
            raise RuntimeError(f"Bad in-place call: input tensor dtype {_c_type(self._data.dtype)} and output "
                               f"tensor dtype {_c_type(dtype.np)} should match")
        return self._inplace_unary(op, dim)

    def cumsum_(self, dim: int, dtype=None) -> Tensor:
        return self._scan_(reduction.cumsum, dim, dtype)

    def cumprod_(self, dim: int, dtype=None) -> Tensor:
        return self._scan_(reduction.cumprod, dim, dtype)

    def _inplace_view(self, view: Callable[[Tensor], Tensor]) -> Tensor:
        """``t_``/``squeeze_``/...: ``self`` becomes the view ``view(self)`` of its own memory,
        its ``grad_fn`` the view's node (torch's ``*Backward1`` names), version bumped."""
        self._check_inplace()
        out = view(self)
        self._data = out._data
        if out.grad_fn is not None:
            self._set_history(out.grad_fn, 0)
        if self._base is not None:
            self._view_fn = out._view_fn
        self._version_counter[0] += 1
        return self

    def t_(self) -> Tensor:
        return self._inplace_view(lambda s: _renamed(shape_ops.t(s), "TBackward1"))

    def transpose_(self, dim0: int, dim1: int) -> Tensor:
        return self._inplace_view(lambda s: _renamed(shape_ops.transpose(s, dim0, dim1), "TransposeBackward1"))

    swapdims_ = swapaxes_ = transpose_

    def squeeze_(self, dim: Any = None) -> Tensor:
        name = "SqueezeBackward3" if dim is None else "SqueezeBackward4" if isinstance(dim, int) else \
            "SqueezeBackward5"
        return self._inplace_view(lambda s: shape_ops.squeeze(s, dim, node_name=name))

    def unsqueeze_(self, dim: int) -> Tensor:
        return self._inplace_view(lambda s: _renamed(shape_ops.unsqueeze(s, dim), "UnsqueezeBackward1"))

    def fill_diagonal_(self, fill_value: Any, wrap: bool = False) -> Tensor:
        """Set the main diagonal (all dims equal when more than 2; ``wrap``: restart below a tall
        matrix's square, as torch does)."""
        def compute(old):
            data = tensor_more.fill_diagonal_values(old._data, fill_value, wrap)
            mask = tensor_more.fill_diagonal_values(np.ones(old.shape, bool), False, wrap)
            return _core.result(data, "FillBackward2", (old,), lambda g: (g * mask,))
        return self._inplace(compute, None)

    def _random_fill(self, draw: Callable[[np.random.Generator], np.ndarray], generator) -> Tensor:
        from ._random import _rng
        return self.copy_(Tensor._wrap(np.asarray(draw(_rng(generator)))))

    def random_(self, from_: Any = 0, to: Any = None, *, generator=None, **kw: Any) -> Tensor:
        """Integers drawn uniformly from [from, to) (``random_(to)``: [0, to); ``random_()``:
        [0, 2**mantissa] for floats, the non-negative range for integers), in this dtype."""
        lo, hi = tensor_more.random_bounds(self._data.dtype, kw.pop("from", from_), kw.pop("to", to))
        return self._random_fill(lambda rng: rng.integers(lo, hi, size=self.shape, dtype=np.int64), generator)

    def exponential_(self, lambd: float = 1, *, generator=None) -> Tensor:
        tensor_more.check_float_fill("exponential_", self._data.dtype, "Exponential")
        if not lambd > 0:
            raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
        return self._random_fill(lambda rng: rng.exponential(1.0 / lambd, size=self.shape), generator)

    def log_normal_(self, mean: float = 1, std: float = 2, *, generator=None) -> Tensor:
        tensor_more.check_float_fill("log_normal_", self._data.dtype, "LogNormal")
        if not std > 0:
            raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
        return self._random_fill(lambda rng: rng.lognormal(mean, std, size=self.shape), generator)

    def cauchy_(self, median: float = 0, sigma: float = 1, *, generator=None) -> Tensor:
        tensor_more.check_float_fill("cauchy_", self._data.dtype, "Cauchy")
        if not sigma > 0:
            raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
        return self._random_fill(lambda rng: median + sigma * rng.standard_cauchy(size=self.shape), generator)

    def geometric_(self, p: float, *, generator=None) -> Tensor:
        """Trials up to the first success (1, 2, ...), success probability ``p`` in (0, 1)."""
        if not 0 < p < 1:
            raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
        return self._random_fill(lambda rng: rng.geometric(p, size=self.shape), generator)

    addmm, histogram = linalg.addmm, _namespace.histogram
    adjoint, isreal, dim_order, narrow_copy = (tensor_more.adjoint, tensor_more.isreal, tensor_more.dim_order,
                                               tensor_more.narrow_copy)
    bitwise_left_shift, bitwise_right_shift = tensor_more.bitwise_left_shift, tensor_more.bitwise_right_shift
    __lshift__, __rshift__ = bitwise_left_shift, bitwise_right_shift
    def __rlshift__(self, o): return tensor_more.bitwise_left_shift(o, self)  # noqa: E704
    def __rrshift__(self, o): return tensor_more.bitwise_right_shift(o, self)  # noqa: E704
    def bitwise_left_shift_(self, other): return self._inplace_unary(tensor_more.bitwise_left_shift, other)  # noqa: E704
    def bitwise_right_shift_(self, other): return self._inplace_unary(tensor_more.bitwise_right_shift, other)  # noqa: E704
    __ilshift__, __irshift__ = bitwise_left_shift_, bitwise_right_shift_
    unsafe_chunk, unsafe_split, unsafe_split_with_sizes = shape_ops.chunk, shape_ops.split, tensor_more.split_with_sizes

    def is_same_size(self, other: Tensor) -> bool:
        return self.shape == other.shape

    # the engine has no lazy conjugate/negative bits, pinned, shared, distributed, sparse,
    # quantized or meta tensors, and its only device is the CPU
    def is_conj(self) -> bool: return False  # noqa: E704
    def is_neg(self) -> bool: return False  # noqa: E704
    def is_pinned(self) -> bool: return False  # noqa: E704
    def is_shared(self) -> bool: return False  # noqa: E704
    def is_distributed(self) -> bool: return False  # noqa: E704
    def resolve_conj(self) -> Tensor: return self  # noqa: E704
    def resolve_neg(self) -> Tensor: return self  # noqa: E704
    is_meta = is_sparse = is_sparse_csr = is_quantized = is_mkldnn = is_nested = property(lambda self: False)
    is_mps = is_xpu = is_xla = is_ipu = is_mtia = is_maia = is_vulkan = property(lambda self: False)

    def is_coalesced(self) -> bool:
        """Only sparse COO tensors have the notion; torch raises for dense ones."""
        raise RuntimeError("is_coalesced expected sparse coordinate tensor layout but got Strided")

    def is_set_to(self, tensor: Tensor) -> bool:
        """Whether both are the same view of the same memory (start, sizes, strides and dtype)."""
        if not isinstance(tensor, Tensor):
            raise TypeError(f"is_set_to(): argument 'tensor' (position 1) must be Tensor, not {type(tensor).__name__}")
        a, b = self._data, tensor._data
        return (a.__array_interface__["data"][0] == b.__array_interface__["data"][0] and a.shape == b.shape
                and a.strides == b.strides and a.dtype == b.dtype)

    def conj_physical(self) -> Tensor:
        """The conjugate as a new tensor (a copy of a real tensor)."""
        return self.conj() if self.is_complex() else shape_ops.clone(self)

    def conj_physical_(self) -> Tensor:
        if self.is_complex():
            return self.copy_(self.conj())
        return self

    def hardshrink(self, lambd: float = 0.5) -> Tensor:
        from .nn import functional as F  # noqa: N812 - torch's spelling; nn builds on Tensor
        return F.hardshrink(self, lambd)

    def prelu(self, weight: Tensor) -> Tensor:
        from .nn import functional as F  # noqa: N812
        return F.prelu(self, weight)

    def resize_(self, *sizes: Any, memory_format: Any = None) -> Tensor:
        """Give this tensor shape ``sizes``: its values in order, reinterpreted; growing appends
        uninitialised (here: zero) elements, as torch's storage growth does."""
        if self._requires_grad:
            raise RuntimeError("cannot resize variables that require grad")
        self._check_inplace()
        shape = shape_ops._sizes(sizes)
        flat = np.ascontiguousarray(self._data).reshape(-1)
        n = math.prod(shape)
        if n <= flat.size:
            self._data = flat[:n].reshape(shape)
        else:
            grown = np.zeros(n, self._data.dtype)
            grown[:flat.size] = flat
            self._data = grown.reshape(shape)
        self._version_counter[0] += 1
        return self

    def resize_as_(self, other: Tensor, memory_format: Any = None) -> Tensor:
        return self.resize_(other.shape)

    def apply_(self, callable: Callable[[Any], Any]) -> Tensor:  # noqa: A002
        """Replace each element by ``callable(element)`` (a Python loop, as torch's own: CPU
        only, no autograd)."""
        if self._requires_grad:
            raise RuntimeError("Can't call apply_() on Variable that requires grad. Use var.detach().apply_() "
                               "instead.")
        conv = _element_caster(self._data.dtype)
        values = [conv(callable(v)) for v in self._data.reshape(-1).tolist()]
        self._check_inplace()
        self._data[...] = np.array(values, self._data.dtype).reshape(self.shape)
        self._version_counter[0] += 1
        return self

    def map_(self, tensor: Tensor, callable: Callable[[Any, Any], Any]) -> Tensor:  # noqa: A002
        """Replace each element by ``callable(element, other)``, ``tensor`` broadcast to this
        shape (a Python loop, as torch's own)."""
        if self._requires_grad or tensor._requires_grad:
            raise RuntimeError("Can't call map_() on Variable that requires grad. Use var.detach().map_() "
                               "instead.")
        other = shape_ops.expand(tensor, self.shape)._data.reshape(-1).tolist()
        conv = _element_caster(self._data.dtype)
        values = [conv(callable(a, b)) for a, b in zip(self._data.reshape(-1).tolist(), other)]
        self._check_inplace()
        self._data[...] = np.array(values, self._data.dtype).reshape(self.shape)
        self._version_counter[0] += 1
        return self


# --- helpers ----------------------------------------------------------------------------------

_C_TYPES = {"float32": "float", "float64": "double", "float16": "c10::Half", "int64": "long int",
            "int32": "int", "int16": "short int", "int8": "signed char", "uint8": "unsigned char", "bool": "bool"}


def _c_type(npdt: np.dtype) -> str:
    """The C++ type name torch's dtype-mismatch messages use (``long int`` for int64)."""
    return _C_TYPES.get(np.dtype(npdt).name, np.dtype(npdt).name)


def _renamed(t: Tensor, name: str) -> Tensor:
    """``t`` with its node's class renamed (the in-place view ops' ``*Backward1`` names)."""
    if t.grad_fn is not None:
        t.grad_fn.__class__ = node_class(name)
    return t


def _element_caster(npdt: np.dtype) -> Callable[[Any], Any]:
    """What ``apply_``/``map_`` do with a callable's value: a real number (torch's TypeError
    otherwise), converted as the tensor's dtype converts it."""
    import numbers

    kind = np.dtype(npdt).kind

    def conv(v: Any) -> Any:
        if not isinstance(v, numbers.Real):
            raise TypeError(f"must be real number, not {type(v).__name__}")
        return float(v) if kind == "f" else bool(v) if kind == "b" else int(v)

    return conv


def _init_slots(t: Tensor, data: np.ndarray) -> None:
    # NumPy ufuncs return scalars (np.float32), not 0-d arrays, for 0-d inputs; in-place ops
    # need an array to write into.
    t._data = data if isinstance(data, np.ndarray) else np.asarray(data)
    t._requires_grad = False
    t.grad_fn = None
    t._output_nr = 0
    t._grad = None
    t._version_counter = [0]
    t._base = None
    t._view_fn = None
    t._backward_hooks = None
    t._post_accumulate_grad_hooks = None
    t._accumulator = None
    t._retains_grad = False
    if grad_mode._state.inference:
        t._inference = True


def _plain(data: Any) -> Any:
    if isinstance(data, Tensor):
        return data._data
    if isinstance(data, list | tuple):
        return [_plain(d) for d in data]
    return data


def _write(dst: np.ndarray, src: np.ndarray) -> None:
    try:
        np.copyto(dst, src, casting="same_kind")
    except TypeError:
        raise RuntimeError(
            f"result type {_dtype.scalar_type_name(src.dtype)} can't be cast to "
            f"the desired output type {_dtype.scalar_type_name(dst.dtype)}"
        ) from None


def _result_name(x: np.ndarray, y: Any) -> str:
    return _dtype.scalar_type_name(_dtype.result_type(x, y))


def _is_basic_key(key: Any) -> bool:
    keys = key if isinstance(key, tuple) else (key,)
    return all(k is None or k is Ellipsis or isinstance(k, int | slice) and not isinstance(k, bool)
               or (isinstance(k, Tensor) and k.ndim == 0 and k._data.dtype.kind in "iu")
               for k in keys)


def _rewrite_base(view: Tensor, node) -> None:
    """After an in-place op on ``view`` (its new value computed by ``node``, whose first edge is
    the view's old value), make the base's graph say so: the base gets a ``CopySlices`` node
    that routes the gradient of the written region through ``node``, and the view becomes a
    fresh view of the new base (``AsStridedBackward0``)."""
    base, view_fn = view._base, view._view_fn
    base_meta = ((base._data.shape, base._data.dtype),)
    rest = node.next_functions[1:] if node is not None else ()

    def copy_slices(g):
        gb = g.copy()
        region = view_fn(gb)
        if node is None:
            region[...] = 0
            return (gb,)
        check_saved_versions(node)
        if node._fn is None:
            from .autograd.graph import FREED_GRAPH_ERROR
            raise RuntimeError(FREED_GRAPH_ERROR)
        res = node._fn(region.copy())
        region[...] = 0 if res[0] is None else res[0]
        return (gb, *res[1:])

    saved = node._saved if node is not None else ()
    new_base_fn = node_class("CopySlices")(copy_slices, (_core.edge(base), *rest), base_meta, saved)
    base._set_history(new_base_fn, 0)

    def as_strided(g):
        gb = np.zeros(*base_meta[0])
        view_fn(gb)[...] = g
        return (gb,)

    view_node = node_class("AsStridedBackward0")(
        as_strided, ((new_base_fn, 0),), ((view._data.shape, view._data.dtype),))
    view._set_history(view_node, 0)


def _to_copy(t: Tensor, npdt: np.dtype, out: np.ndarray | None = None) -> Tensor:
    """``t`` as ``npdt`` (``out`` when the caller already made that copy), a ToCopyBackward0 node."""
    src_dtype = t._data.dtype
    out = t._data.astype(npdt) if out is None else out
    if npdt.kind != "f":
        return Tensor._wrap(out)
    return _core.result(out, "ToCopyBackward0", (t,), lambda g: (g.astype(src_dtype),))


def _deepcopy_dict(d: dict, memo: dict) -> dict:
    import copy
    return {k: copy.deepcopy(v, memo) for k, v in d.items()}


_LEGACY = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
           "int64": "LongTensor", "int32": "IntTensor", "int16": "ShortTensor",
           "int8": "CharTensor", "uint8": "ByteTensor", "bool": "BoolTensor"}
_LEGACY_TO_DTYPE = {v: _dtype._by_name(k) for k, v in _LEGACY.items()}


def _legacy_name(npdt: np.dtype) -> str:
    return _LEGACY[np.dtype(npdt).name]


_core._Tensor = Tensor
_hooks._Tensor, _hooks._grad_mode, _hooks._edge = Tensor, grad_mode, _core.edge
