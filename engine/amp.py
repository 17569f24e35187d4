"""``torch.amp``: loss scaling (``GradScaler``) and ``autocast``, as a CPU-only build of torch has them.

``GradScaler('cpu')`` really scales: the loss is multiplied by the scale, ``unscale_`` divides the
gradients back and looks for inf/NaN, ``step`` skips the optimizer step when it found some, and
``update`` backs the scale off or grows it every ``growth_interval`` clean steps. A CUDA scaler
(the default device, and ``torch.cuda.amp.GradScaler``) warns that CUDA is not available and
disables itself, as torch does there; disabled, every method passes through. ``autocast`` for
CUDA likewise warns and does nothing; enabled CPU autocast (bfloat16/float16 compute) is not
implemented and raises.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

import engine.autograd.grad_mode as grad_mode

from ._tensor import Tensor


class GradScaler:
    def __init__(self, device: str = "cuda", init_scale: float = 2.0**16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True) -> None:
        self._device = device
        if enabled and device == "cuda":
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                          UserWarning, stacklevel=2)
            enabled = False
        self._enabled = enabled
        if enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
        self._scale = float(init_scale)
        self._growth_factor, self._backoff_factor = float(growth_factor), float(backoff_factor)
        self._growth_interval = int(growth_interval)
        self._growth_tracker = 0
        self._found_inf: dict[int, bool] = {}  # per optimizer (id), this iteration

    def is_enabled(self) -> bool:
        return self._enabled

    def get_scale(self) -> float:
        return self._scale if self._enabled else 1.0

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def scale(self, outputs: Any) -> Any:
        """``outputs`` (a tensor or nested lists/tuples of them) times the current scale."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            return outputs * self._scale
        if isinstance(outputs, list | tuple):
            return type(outputs)(self.scale(o) for o in outputs)
        raise ValueError("outputs must be a Tensor or an iterable of Tensors")

    def unscale_(self, optimizer: Any) -> None:
        """Divide the gradients of ``optimizer``'s parameters by the scale (once per step)."""
        if not self._enabled:
            return
        if id(optimizer) in self._found_inf:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        inv = 1.0 / self._scale
        found = False
        with grad_mode.no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    p.grad.mul_(inv)
                    found = found or not bool(np.isfinite(p.grad._data).all())
        self._found_inf[id(optimizer)] = found

    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        """``optimizer.step()`` unless the unscaled gradients hold inf/NaN (then it is skipped)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        if id(optimizer) not in self._found_inf:
            self.unscale_(optimizer)
        if self._found_inf[id(optimizer)]:
            return None
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale: float | Tensor | None = None) -> None:
        """Back off the scale after a step with inf/NaN, grow it after ``growth_interval`` clean ones."""
        if not self._enabled:
            return
        if new_scale is not None:
            self._scale = float(new_scale)
        elif any(self._found_inf.values()):
            self._scale *= self._backoff_factor
            self._growth_tracker = 0
        else:
            self._growth_tracker += 1
            if self._growth_tracker == self._growth_interval:
                grown = self._scale * self._growth_factor
                self._scale = grown if math.isfinite(grown) else self._scale
                self._growth_tracker = 0
        self._found_inf = {}

    def state_dict(self) -> dict:
        if not self._enabled:
            return {}
        return {"scale": self._scale, "growth_factor": self._growth_factor, "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval, "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state_dict: dict) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        self._scale = float(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._growth_tracker = int(state_dict["_growth_tracker"])


class autocast:  # noqa: N801 - torch's name
    """Mixed-precision regions. CUDA ones warn and run at full precision (no CUDA here, as on a
    CPU build of torch); disabled ones do nothing; enabled CPU autocast raises."""

    def __init__(self, device_type: str, dtype: Any = None, enabled: bool = True,
                 cache_enabled: bool | None = None) -> None:
        if enabled and device_type == "cuda":
            warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.", UserWarning,
                          stacklevel=2)
            enabled = False
        if enabled:
            raise NotImplementedError(
                f"engine has no autocast for '{device_type}': it computes every op in its inputs' own dtype "
                "(no bfloat16); pass enabled=False or leave autocast out")
        self.device, self.fast_dtype, self._enabled = device_type, dtype, enabled

    def __enter__(self) -> autocast:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def __call__(self, fn: Any) -> Any:
        return fn


class _CudaAmp:
    """``torch.cuda.amp``: the deprecated spellings, with torch's FutureWarning."""

    @staticmethod
    def GradScaler(*args: Any, **kwargs: Any) -> GradScaler:  # noqa: N802 - torch's name
        warnings.warn("`torch.cuda.amp.GradScaler(args...)` is deprecated. Please use "
                      "`torch.amp.GradScaler('cuda', args...)` instead.", FutureWarning, stacklevel=2)
        return GradScaler("cuda", *args, **kwargs)

    @staticmethod
    def autocast(enabled: bool = True, dtype: Any = None, cache_enabled: bool = True) -> autocast:
        warnings.warn("`torch.cuda.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cuda', args...)` instead.", FutureWarning, stacklevel=2)
        return autocast("cuda", dtype=dtype, enabled=enabled)


cuda_amp = _CudaAmp()
