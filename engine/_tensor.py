"""``engine.Tensor``: a NumPy array plus autograd bookkeeping, with torch's names and rules.

This file imports no op: every op module imports ``Tensor`` from here, and the methods that run
ops (arithmetic, reductions, shapes, indexing, conversions) are written in ``_tensor_methods.py``
and bound onto the class once, so dependencies run one way.

Where to look:
- ops and their backward formulas: ``engine/_ops/*``; the methods calling them: ``_tensor_methods.py``;
- the graph and hooks: ``engine/autograd/graph.py``; running it backwards: ``executor.py``;
- in-place updates (version counters, leaf checks, ``CopySlices`` for views): ``_inplace``.
"""

from __future__ import annotations

import math
import re
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np

import engine.autograd.grad_mode as grad_mode

from . import _dtype, _layout, _memory_format
from ._random import _rng, normal_array, uniform_array
from ._size import Size, broadcast_error, wrap_dim  # noqa: F401 - engine._tensor.Size, as before
from ._size import sizes as _sizes
from ._tensor_str import tensor_repr
from .autograd.graph import FREED_GRAPH_ERROR, AccumulateGrad, check_saved_versions, edge, node_class
from .utils._removable_handle import RemovableHandle


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
# float(t) of a tensor that requires grad: torch's warning, given the first time in a process only
_warned_scalar_of_grad: list[bool] = []


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
        "_retains_grad", "_fn_version", "__weakref__", "__dict__",
    )
    __array_priority__ = 1000  # ``ndarray * tensor`` defers to Tensor.__rmul__
    _inference = False  # set (in the instance) on tensors created inside inference_mode()
    # how a view that torch will not re-derive came to be (its CreationMeta, set with
    # ``mark_creation``): "multi" (an output of unbind/split/chunk made in grad mode, or a view of
    # one: MULTI_OUTPUT_NODE), "no_grad" or "inference" (made with grad mode off, or a view of such
    # a view); None for plain views and non-views
    _creation_meta: str | None = None

    def __init__(self, *args: Any, dtype: _dtype.dtype | None = None) -> None:
        """``Tensor(2, 3)`` makes an uninitialised float tensor of that shape (torch's legacy
        constructor); ``Tensor([1, 2])`` copies data as floats. Prefer ``engine.tensor``."""
        npdt = (dtype or _dtype._default_float).np
        if len(args) == 1 and not isinstance(args[0], int):
            data = np.array(_plain(args[0]), dtype=npdt)
        else:
            data = np.empty(_sizes(args), dtype=npdt)
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
        return self._data.shape[wrap_dim(dim, self._data.ndim)]

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
        return strides if dim is None else strides[wrap_dim(dim, self.ndim)]

    def is_contiguous(self, memory_format: Any = _memory_format.contiguous_format) -> bool:
        """C contiguity, or torch's contiguity in ``memory_format`` (see ``_memory_format``)."""
        if memory_format is _memory_format.contiguous_format:
            return bool(self._data.flags.c_contiguous)
        _memory_format.check(memory_format, "is_contiguous")
        return _memory_format.is_laid_out_as(self._data, memory_format)

    def data_ptr(self) -> int:
        return int(self._data.__array_interface__["data"][0])

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

    def _check_inplace(self, *others: Any) -> None:
        if not grad_mode._state.inference and self.is_inference():
            raise RuntimeError(
                "Inplace update to inference tensor outside InferenceMode is not allowed.You can make a clone to "
                "get a normal tensor before doing inplace update.See https://github.com/pytorch/rfcs/pull/17 for "
                "more details."
            )
        if not grad_mode._state.enabled:
            return
        # torch checks this first (handle_view_on_rebase) when ``self`` (or its base) or an operand
        # requires grad: an in-place update of one output cannot be recorded on a node that made
        # several views, nor on a view whose history was not recorded (made under no_grad)
        if self._creation_meta is not None and (
                self._requires_grad or (self._base is not None and self._base._requires_grad)
                or any(isinstance(o, Tensor) and o._requires_grad for o in others)):
            raise RuntimeError(_view_error(self, _GRAD_FN_SLOT.__get__(self), indirect=False))
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
        self._check_inplace(*others)
        recording = grad_mode._state.enabled and (
            self._requires_grad
            or any(isinstance(o, Tensor) and o._requires_grad for o in others)
            or (self._base is not None and self._base._requires_grad)
        )
        if not recording:  # (an optimizer's update under no_grad): nothing reads the old value later
            if fast is not None:
                fast()
            else:
                _write(self._data, compute(self)._data)
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
        old = _GRAD_FN_SLOT.__get__(self)  # the slot: a _View's property would re-derive it first
        self.grad_fn, self._output_nr, self._requires_grad = node, output_nr, True
        if self._retains_grad and old is not None and old is not node:
            old._retains_grad_hooks.pop(self._output_nr, None)
            self._install_retain_hook()

    def zero_(self) -> Tensor:
        return self.fill_(0)

    def uniform_(self, a: float = 0.0, b: float = 1.0, *, generator=None) -> Tensor:
        return self.copy_(Tensor._wrap(uniform_array(self.shape, a, b, self._data.dtype, generator)))

    def normal_(self, mean: float = 0.0, std: float = 1.0, *, generator=None) -> Tensor:
        return self.copy_(Tensor._wrap(normal_array(self.shape, mean, std, self._data.dtype, generator)))

    def bernoulli_(self, p: float = 0.5, *, generator=None) -> Tensor:
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
                raise broadcast_error(self.shape, np.shape(y)) from None
            except TypeError as e:  # e.g. float result into an int tensor
                raise RuntimeError(
                    f"result type {_result_name(self._data, y)} can't be cast to the desired "
                    f"output type {_dtype.scalar_type_name(self._data.dtype)}"
                ) from e

        return self._inplace(lambda old: op(old, other, **kw), fast, other)

    def _inplace_unary(self, op: Callable, *args: Any, **kw: Any) -> Tensor:
        return self._inplace(lambda old: op(old, *args, **kw), None, *args)

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

    def bfloat16(self) -> Tensor:
        """``self.to(bfloat16)``: a TypeError naming bfloat16 (the engine has no such tensors)."""
        return self.to(_dtype.bfloat16)

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

    def _new(self, fill: Callable, size: tuple, dtype, requires_grad: bool) -> Tensor:
        npdt = dtype.np if dtype is not None else self._data.dtype
        out = Tensor._wrap(fill(_sizes(size), npdt))
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

    def __bool__(self) -> bool:
        if self._data.size != 1:
            raise RuntimeError(
                "Boolean value of Tensor with more than one value is ambiguous"
            )
        return bool(self._data.reshape(()))

    def __float__(self) -> float:
        if self._requires_grad and not _warned_scalar_of_grad:  # torch warns once per process (TORCH_WARN_ONCE)
            _warned_scalar_of_grad.append(True)
            warnings.warn("Converting a tensor with requires_grad=True to a scalar may lead to unexpected behavior.\n"
                          "Consider using tensor.detach() first.", UserWarning, stacklevel=2)
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
        # a copy is no view: a plain Tensor for a marked view, without its creation meta
        new = (Tensor if isinstance(self, _View | _CheckedView) else type(self))._wrap(self._data.copy())
        new._requires_grad = self._requires_grad
        if self._grad is not None:
            new._grad = self._grad.__deepcopy__(memo)
        new.__dict__.update(_deepcopy_dict({k: v for k, v in self.__dict__.items() if k not in _VIEW_MARKS}, memo))
        memo[id(self)] = new
        return new

    def __reduce_ex__(self, protocol: int):
        raise TypeError(
            "engine tensors are not picklable: use engine.save / engine.load (NumPy-based, no "
            "pickle) for state_dicts"
        )

    # operators
    def __pos__(self): return self  # noqa: E704
    def isnan(self) -> Tensor:
        return Tensor._wrap(np.isnan(self._data))

    def isinf(self) -> Tensor:
        return Tensor._wrap(np.isinf(self._data))

    def isfinite(self) -> Tensor:
        return Tensor._wrap(np.isfinite(self._data))

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
        return Tensor._wrap(np.empty(_sizes(args) if args else (0,), dt))

    def storage_offset(self) -> int:
        """Elements between the start of the memory this tensor views and its first element."""
        root = self._data
        while isinstance(root.base, np.ndarray):
            root = root.base
        start = self._data.__array_interface__["data"][0] - root.__array_interface__["data"][0]
        return int(start // self._data.itemsize)

    def _scan_(self, op: Callable, dim: int, dtype: Any) -> Tensor:
        if dtype is not None and dtype.np != self._data.dtype:
            raise RuntimeError(f"Bad in-place call: input tensor dtype {_c_type(self._data.dtype)} and output "
                               f"tensor dtype {_c_type(dtype.np)} should match")
        return self._inplace_unary(op, dim)

    def _inplace_view(self, view: Callable[[Tensor], Tensor]) -> Tensor:
        """``t_``/``squeeze_``/...: ``self`` becomes the view ``view(self)`` of its own memory,
        its ``grad_fn`` the view's node (torch's ``*Backward1`` names), version bumped."""
        self._check_inplace()
        out = view(self)
        node = out.grad_fn
        self._data = out._data
        self._version_counter[0] += 1  # first: a _View's new history is stamped with the new version
        if node is not None:
            self._set_history(node, 0)
        if self._base is not None:
            self._view_fn = out._view_fn
        return self

    def _random_fill(self, draw: Callable[[np.random.Generator], np.ndarray], generator) -> Tensor:
        return self.copy_(Tensor._wrap(np.asarray(draw(_rng(generator)))))

    def geometric_(self, p: float, *, generator=None) -> Tensor:
        """Trials up to the first success (1, 2, ...), success probability ``p`` in (0, 1)."""
        if not 0 < p < 1:
            raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
        return self._random_fill(lambda rng: rng.geometric(p, size=self.shape), generator)

    def is_same_size(self, other: Tensor) -> bool:
        return self.shape == other.shape

    # the engine has no lazy conjugate/negative bits, pinned, shared, distributed, sparse,
    # quantized or meta tensors, and its only device is the CPU
    def is_conj(self) -> bool: return False  # noqa: E704
    def is_neg(self) -> bool: return False  # noqa: E704
    def is_pinned(self) -> bool: return False  # noqa: E704
    def pin_memory(self, device: Any = None) -> Tensor:  # noqa: E301 - torch's CPU build has nothing to pin for
        if device is not None:
            warnings.warn("The argument 'device' of Tensor.pin_memory() is deprecated. Please do not pass this "
                          "argument.", DeprecationWarning, stacklevel=2)
            if str(device).split(":")[0] == "cpu":
                raise RuntimeError("CPU device type not an accelerator.")
        raise RuntimeError("Cannot access accelerator device when none is available.")
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

    def conj_physical_(self) -> Tensor:
        if self.is_complex():
            return self.copy_(self.conj())
        return self

    def resize_(self, *sizes: Any, memory_format: Any = None) -> Tensor:
        """Give this tensor shape ``sizes``: its values in order, reinterpreted; growing appends
        uninitialised (here: zero) elements, as torch's storage growth does."""
        if self._requires_grad:
            raise RuntimeError("cannot resize variables that require grad")
        self._check_inplace()
        shape = _sizes(sizes)
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



# --- helpers ----------------------------------------------------------------------------------

# the slots themselves, read past _CheckedView's properties
_GRAD_FN_SLOT, _REQUIRES_GRAD_SLOT = Tensor.__dict__["grad_fn"], Tensor.__dict__["_requires_grad"]


class _View(Tensor):
    """A view made in grad mode of a tensor that requires grad. Its ``grad_fn`` is re-derived from
    its base when the shared version counter moved since it was recorded (its base, or another
    view of the base, changed in place): torch's ``AsStridedBackward0`` over the base's current
    node, so its gradient reaches the base's new history. The check runs where the ``grad_fn`` is
    read (an op recording its edges, backward, user code); other tensors keep the plain slot."""

    __slots__ = ()
    _node = _GRAD_FN_SLOT  # the grad_fn slot under a name the property does not hide (a fast read)

    @property
    def grad_fn(self):
        if self._fn_version != self._version_counter[0]:
            _rederive(self)
        return self._node

    @grad_fn.setter
    def grad_fn(self, node) -> None:
        self._node = node
        self._fn_version = self._version_counter[0]  # its history is current again


_View.__name__ = _View.__qualname__ = "Tensor"  # what messages, reprs and type(t).__name__ name


def mark_view_history(out: Tensor) -> None:
    """Make ``out``, a new view whose op recorded a node, re-derive that node after in-place
    changes of its memory (``_View``)."""
    out.__class__ = _View
    out._fn_version = out._version_counter[0]


def _rederive(view: Tensor) -> None:
    """torch's ``VariableHooks::grad_fn`` for a view whose memory changed in place since its node
    was made: a new ``AsStridedBackward0`` over the base's current edge (hooks registered on the
    old node stay there; a ``retain_grad`` moves)."""
    base = view._base
    if _GRAD_FN_SLOT.__get__(view) is None and not base._requires_grad:
        view._fn_version = view._version_counter[0]
        return
    view._set_history(_as_strided_node(view, edge(base)), 0)


def _as_strided_node(view: Tensor, base_edge: tuple):
    """``AsStridedBackward0`` of ``view`` over ``base_edge``: the gradient of the view written
    into zeros of its base's shape (``view_fn``, the view replayed on the base's array)."""
    view_fn, base_meta = view._view_fn, ((view._base._data.shape, view._base._data.dtype),)

    def as_strided(g):
        return (view_adjoint(view_fn, g, *base_meta[0]),)

    return node_class("AsStridedBackward0")(as_strided, (base_edge,), ((view._data.shape, view._data.dtype),))


def view_adjoint(view_fn: Callable[[np.ndarray], np.ndarray], g: np.ndarray, shape: tuple, dtype: np.dtype
                 ) -> np.ndarray:
    """The gradient for a base of ``shape`` of its view ``view_fn(base)`` given the view's ``g``:
    ``g`` written into zeros where the view lies, summed where the view repeats an element
    (``expand``: NumPy gives a read-only view then), as torch's ``as_strided_backward`` does."""
    gb = np.zeros(shape, dtype)
    region = view_fn(gb)
    if region.flags.writeable:
        region[...] = g
    else:
        where = view_fn(np.arange(gb.size).reshape(shape))
        np.add.at(gb.reshape(-1), np.broadcast_to(where, g.shape).reshape(-1), g.reshape(-1))
    return gb


class _CheckedView(Tensor):
    """A view torch refuses to re-derive once its memory changed in place: an output of
    unbind/split/chunk (or a view of one), a view made under no_grad or inference_mode. Reading
    its ``grad_fn`` after an in-place change of its base, a sibling view or itself (unrecorded)
    raises torch's error. Only these views pay for the check (plain ones keep the slot)."""

    __slots__ = ()

    @property
    def grad_fn(self):
        node = _GRAD_FN_SLOT.__get__(self)
        version = self.__dict__.get("_view_version")
        if version is not None and version != self._version_counter[0] and (
                node is not None or (self._base is not None and self._base._requires_grad)):
            raise RuntimeError(_view_error(self, node, indirect=True))
        return node

    @grad_fn.setter
    def grad_fn(self, node) -> None:
        _GRAD_FN_SLOT.__set__(self, node)
        self.__dict__["_view_version"] = self._version_counter[0]  # its history is current again

    @property
    def _requires_grad(self) -> bool:
        """A view requires grad when its base does, also one made under no_grad (torch's rule)."""
        return _REQUIRES_GRAD_SLOT.__get__(self) or (self._base is not None and self._base._requires_grad)

    @_requires_grad.setter
    def _requires_grad(self, value: bool) -> None:
        _REQUIRES_GRAD_SLOT.__set__(self, value)

    def _grad_accumulator(self, create: bool = True) -> AccumulateGrad | None:
        """None for a view that requires grad only through its base (made under no_grad): as in
        torch, ops on it record an edge to nothing, and no gradient reaches it or its base."""
        if not _REQUIRES_GRAD_SLOT.__get__(self):
            return None
        return Tensor._grad_accumulator(self, create)


_CheckedView.__name__ = _CheckedView.__qualname__ = "Tensor"  # what messages and reprs name
_VIEW_MARKS = ("_creation_meta", "_view_version")  # instance attributes of a marked view


def mark_creation(out: Tensor, base: Tensor | None, meta: str | None = None) -> None:
    """Give the new view ``out`` (its ``_base`` set) torch's creation meta: ``meta`` ("multi"
    for the outputs of unbind/split), else "inference"/"no_grad" when made with grad mode off,
    else its base's (torch's propagate_creation_meta). Views of inference tensors are inference
    tensors, not marked views. Only a view that requires grad, itself or through its base,
    becomes a _CheckedView: for the others the in-place check reads the meta alone."""
    if meta is None:
        state = grad_mode._state
        if not state.enabled:
            if base is not None and base.is_inference():
                return
            meta = "inference" if state.inference else "no_grad"
        else:
            meta = base._creation_meta if base is not None else None
            if meta is None:
                return
    elif meta == "multi" and out._creation_meta == "inference":
        return
    out._creation_meta = meta
    root = out._base
    if _REQUIRES_GRAD_SLOT.__get__(out) or (root is not None and root._requires_grad):
        out.__class__ = _CheckedView
        out.__dict__["_view_version"] = out._version_counter[0]


def _view_error(view: Tensor, node: Any, indirect: bool) -> str:
    """torch's message (handle_view_on_rebase) for an in-place change of a marked view
    (``indirect``: of its base or a sibling view), its node named without the ``Backward0``
    suffix, as torch 2.13 names it."""
    meta = view._creation_meta
    modified = "its base or another view of its base has been" if indirect else "is being"
    name = re.sub(r"Backward\d*$", "", node.name()) if node is not None else ""
    if meta != "multi" or node is None:
        prefix = (f"Output {view._output_nr} of {name} is a view of a view which was created in" if node is not None
                  else "A view was created in")
        if meta == "inference":
            head = f"{prefix} inference mode and {modified} modified inplace in normal mode."
        else:
            head = f"{prefix} no_grad mode and {modified} modified inplace with grad mode enabled."
    else:
        head = f"Output {view._output_nr} of {name} is a view and {modified} modified inplace."
    if meta == "multi":
        return (head + " This view is the output of a function that returns multiple views. Such functions do not "
                "allow the output views to be modified inplace. You should replace the inplace operation by an "
                "out-of-place one.")
    block = "inference_mode" if meta == "inference" else "no_grad"
    return (head + " Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your "
            f"code by moving both the view and the inplace either both inside the {block} block (if you don't want "
            "the inplace to be tracked) or both outside (if you want the inplace to be tracked).")


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
            raise RuntimeError(FREED_GRAPH_ERROR)
        res = node._fn(region.copy())
        region[...] = 0 if res[0] is None else res[0]
        return (gb, *res[1:])

    saved = node._saved if node is not None else ()
    new_base_fn = node_class("CopySlices")(copy_slices, (edge(base), *rest), base_meta, saved)
    base._set_history(new_base_fn, 0)
    view._set_history(_as_strided_node(view, (new_base_fn, 0)), 0)


def _deepcopy_dict(d: dict, memo: dict) -> dict:
    import copy
    return {k: copy.deepcopy(v, memo) for k, v in d.items()}


_LEGACY = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
           "int64": "LongTensor", "int32": "IntTensor", "int16": "ShortTensor",
           "int8": "CharTensor", "uint8": "ByteTensor", "bool": "BoolTensor"}
_LEGACY_TO_DTYPE = {v: _dtype._by_name(k) for k, v in _LEGACY.items()}


def _legacy_name(npdt: np.dtype) -> str:
    return _LEGACY[np.dtype(npdt).name]


