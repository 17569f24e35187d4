"""Lazy modules: layers whose input size is inferred from the first batch (torch's
``LazyModuleMixin``, ``LazyLinear``, ``LazyConv*``, ``LazyConvTranspose*``, ``LazyBatchNorm*``,
``LazyInstanceNorm*``).

A lazy module starts with ``UninitializedParameter``/``UninitializedBuffer`` placeholders. Its
first forward pre-hook, registered in ``__init__`` (so user pre-hooks registered later fire
after it, and global ones before it, as in torch), calls ``initialize_parameters(*args)``: the
placeholders are materialised with the inferred shapes and re-drawn by ``reset_parameters``,
the hook removes itself, and the module's class becomes ``cls_to_become`` (``LazyLinear`` is a
``Linear`` from then on). Build optimizers after that dry run.
"""

from __future__ import annotations

import itertools
from typing import Any

import engine.autograd.grad_mode as grad_mode

from ..._creation import tensor
from ..._dtype import long
from ..parameter import UninitializedBuffer, UninitializedParameter, is_lazy
from .batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d, _BatchNorm, _NormBase
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .linear import Linear
from .normalization import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d, _InstanceNorm

__all__ = [
    "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyConv1d", "LazyConv2d", "LazyConv3d",
    "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d",
    "LazyInstanceNorm3d", "LazyLinear", "LazyModuleMixin",
]


class LazyModuleMixin:
    """Mix in before a module class whose parameters are placeholders until the first call.

    Subclasses define ``initialize_parameters(*args, **kwargs)`` and ``cls_to_become``. State
    dicts of an uninitialized module hold the placeholders; loading real tensors into one
    materialises it with their shapes (it still becomes ``cls_to_become`` on its first call).
    """

    cls_to_become: type | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._load_hook = self._register_load_state_dict_pre_hook(self._lazy_load_hook)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters, with_kwargs=True)

    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        # placeholders are saved as they are (they cannot be detached)
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if is_lazy(param) or keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if is_lazy(buf) or keep_vars else buf.detach()

    def _lazy_load_hook(self, state_dict: dict, prefix: str, local_metadata: dict, strict: bool,
                        missing_keys: list, unexpected_keys: list, error_msgs: list) -> None:
        """Before loading: a placeholder given a real tensor takes its shape."""
        for name, param in itertools.chain(self._parameters.items(), self._buffers.items()):
            key = prefix + name
            if key in state_dict and param is not None and is_lazy(param) and not is_lazy(state_dict[key]):
                with grad_mode.no_grad():
                    param.materialize(state_dict[key].shape)

    def _load_one(self, name: str, key: str, param: Any, input_param: Any, assign: bool, error_msgs: list) -> None:
        # a placeholder loaded from a placeholder stays one (torch copies nothing there)
        if is_lazy(param) and is_lazy(input_param):
            return
        super()._load_one(name, key, param, input_param, assign, error_msgs)

    def initialize_parameters(self, *args: Any, **kwargs: Any) -> None:
        """Materialise the placeholders from the first input; subclasses implement it."""
        raise NotImplementedError(f"initialize_parameters is not implemented for {self.__class__.__name__}")

    def has_uninitialized_params(self) -> bool:
        """Whether a parameter or buffer of this module (not its children) is still a placeholder."""
        return any(is_lazy(t) for t in itertools.chain(self._parameters.values(), self._buffers.values()))

    def _infer_parameters(self, module: Any, args: tuple, kwargs: dict | None = None) -> None:
        """The forward pre-hook: initialise, remove the hooks, become ``cls_to_become``.

        Raises ``RuntimeError`` when ``initialize_parameters`` left a placeholder."""
        module.initialize_parameters(*args, **(kwargs or {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {self._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        module._load_hook.remove()
        delattr(module, "_initialize_hook")
        delattr(module, "_load_hook")
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become

    def _replicate_for_data_parallel(self) -> None:
        raise RuntimeError("Modules with uninitialized parameters can't be used with `DataParallel`. "
                           "Run a dummy forward pass to correctly initialize the modules")


class LazyLinear(LazyModuleMixin, Linear):
    """A ``Linear`` whose ``in_features`` is the last dimension of its first input."""

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__(0, 0, False)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Any) -> None:  # noqa: A002
        if self.has_uninitialized_params():
            with grad_mode.no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()


class _LazyConvXdMixin(LazyModuleMixin):
    _nd: int

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Any, *args: Any, **kwargs: Any) -> None:  # noqa: A002
        if self.has_uninitialized_params():
            self.in_channels = self._get_in_channels(input)
            if self.in_channels % self.groups != 0:
                raise ValueError("in_channels must be divisible by groups")
            if self.transposed:
                self.weight.materialize((self.in_channels, self.out_channels // self.groups, *self.kernel_size))
            else:
                self.weight.materialize((self.out_channels, self.in_channels // self.groups, *self.kernel_size))
            if self.bias is not None:
                self.bias.materialize((self.out_channels,))
            self.reset_parameters()

    def _get_in_channels(self, input: Any) -> int:  # noqa: A002
        no_batch = self._nd + 1
        if input.dim() not in (no_batch, no_batch + 1):
            raise RuntimeError(f"Expected {no_batch}D (unbatched) or {no_batch + 1}D (batched) input to "
                               f"{self.__class__.__name__}, but got input of size: {input.shape}")
        return input.shape[1] if input.dim() == no_batch + 1 else input.shape[0]


def _lazy_conv(conv: type, name: str) -> type:
    """``LazyConv{n}d``: ``conv``'s arguments without ``in_channels``."""
    def __init__(self: Any, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device: Any = None, dtype: Any = None) -> None:
        conv_init = super(cls, self).__init__
        conv_init(0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode, device=device,
                  dtype=dtype)
        _lazy_weights(self, out_channels, bias, device, dtype)

    cls = type(name, (_LazyConvXdMixin, conv), {"cls_to_become": conv, "__init__": __init__, "__module__": __name__,
                                                "__doc__": f"A ``{conv.__name__}`` whose ``in_channels`` is "
                                                           "inferred from its first input."})
    return cls


def _lazy_conv_transpose(conv: type, name: str) -> type:
    """``LazyConvTranspose{n}d``: ``conv``'s arguments without ``in_channels``."""
    def __init__(self: Any, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 output_padding: Any = 0, groups: int = 1, bias: bool = True, dilation: Any = 1,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        conv_init = super(cls, self).__init__
        conv_init(0, 0, kernel_size, stride, padding, output_padding, groups, False, dilation, padding_mode,
                  device=device, dtype=dtype)
        _lazy_weights(self, out_channels, bias, device, dtype)

    cls = type(name, (_LazyConvXdMixin, conv), {"cls_to_become": conv, "__init__": __init__, "__module__": __name__,
                                                "__doc__": f"A ``{conv.__name__}`` whose ``in_channels`` is "
                                                           "inferred from its first input."})
    return cls


def _lazy_weights(module: Any, out_channels: int, bias: bool, device: Any, dtype: Any) -> None:
    module.weight = UninitializedParameter(device=device, dtype=dtype)
    module.out_channels = out_channels
    if bias:
        module.bias = UninitializedParameter(device=device, dtype=dtype)


LazyConv1d = _lazy_conv(Conv1d, "LazyConv1d")
LazyConv2d = _lazy_conv(Conv2d, "LazyConv2d")
LazyConv3d = _lazy_conv(Conv3d, "LazyConv3d")
LazyConvTranspose1d = _lazy_conv_transpose(ConvTranspose1d, "LazyConvTranspose1d")
LazyConvTranspose2d = _lazy_conv_transpose(ConvTranspose2d, "LazyConvTranspose2d")
LazyConvTranspose3d = _lazy_conv_transpose(ConvTranspose3d, "LazyConvTranspose3d")


class _LazyNormBase(LazyModuleMixin, _NormBase):
    """torch's defaults for every lazy norm, the instance norms included: ``affine=True``,
    ``track_running_stats=True`` (unlike ``InstanceNorm*``'s own)."""

    def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device: Any = None, dtype: Any = None, *,
                 bias: bool = True) -> None:
        # affine, bias and the running stats start off so no tensor is made only to be replaced
        super().__init__(0, eps, momentum, False, False, device=device, dtype=dtype, bias=False)
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = tensor(0, dtype=long)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Any) -> None:  # noqa: A002
        if self.has_uninitialized_params():
            self.num_features = input.shape[1]
            if self.affine:
                self.weight.materialize((self.num_features,))
                if self.bias is not None:
                    self.bias.materialize((self.num_features,))
            if self.track_running_stats:
                self.running_mean.materialize((self.num_features,))
                self.running_var.materialize((self.num_features,))
            self.reset_parameters()


def _lazy_norm(base: type, norm: type, name: str) -> type:
    return type(name, (_LazyNormBase, base), {
        "cls_to_become": norm, "_dims": getattr(norm, "_dims", ()), "_expected": getattr(norm, "_expected", ""),
        "_no_batch_dim": getattr(norm, "_no_batch_dim", 2), "__module__": __name__,
        "__doc__": f"A ``{norm.__name__}`` whose ``num_features`` is ``input.size(1)`` of its first input.",
    })


LazyBatchNorm1d = _lazy_norm(_BatchNorm, BatchNorm1d, "LazyBatchNorm1d")
LazyBatchNorm2d = _lazy_norm(_BatchNorm, BatchNorm2d, "LazyBatchNorm2d")
LazyBatchNorm3d = _lazy_norm(_BatchNorm, BatchNorm3d, "LazyBatchNorm3d")
LazyInstanceNorm1d = _lazy_norm(_InstanceNorm, InstanceNorm1d, "LazyInstanceNorm1d")
LazyInstanceNorm2d = _lazy_norm(_InstanceNorm, InstanceNorm2d, "LazyInstanceNorm2d")
LazyInstanceNorm3d = _lazy_norm(_InstanceNorm, InstanceNorm3d, "LazyInstanceNorm3d")
