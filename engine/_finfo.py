"""``torch.finfo`` / ``torch.iinfo``: machine limits of a dtype (``masked_fill(mask,
torch.finfo(x.dtype).min)``, ``eps`` for numerical guards), as Python numbers like torch's."""

from __future__ import annotations

import numpy as np

from . import _dtype

# The names this module adds to torch's top-level namespace (engine/__init__.py star-imports
# them: this list is the one place they are named).
__all__ = ["finfo", "iinfo"]


class finfo:  # noqa: N801 - torch's name
    """Limits of a floating dtype (the default dtype when none is given)."""

    def __init__(self, type: _dtype.dtype | None = None) -> None:  # noqa: A002 - torch's name
        if type is None:
            type = _dtype.get_default_dtype()  # noqa: A001
        if not isinstance(type, _dtype.dtype):
            raise TypeError(f"finfo(): argument 'type' (position 1) must be torch.dtype, not {_type_name(type)}")
        if not type.is_floating_point:
            raise TypeError("torch.finfo() requires a floating point input type. Use torch.iinfo to handle "
                            "'torch.finfo'")
        if isinstance(type, _dtype._TensorlessDtype):  # bfloat16: no NumPy type to ask
            limits = type.finfo
            self.bits, self.eps, self.resolution = limits["bits"], limits["eps"], limits["resolution"]
            self.max, self.min = limits["max"], -limits["max"]
            self.tiny = self.smallest_normal = limits["smallest_normal"]
            self.dtype = type.name
            return
        info = np.finfo(type.np)
        self.bits = int(info.bits)
        self.eps, self.max, self.min = float(info.eps), float(info.max), float(info.min)
        self.tiny = self.smallest_normal = float(info.smallest_normal)
        self.resolution = 10.0 ** -int(info.precision)  # exactly 1e-06 for float32, as torch
        self.dtype = type.name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, finfo) and other.dtype == self.dtype

    def __hash__(self) -> int:
        return hash(("finfo", self.dtype))

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:  # noqa: N801 - torch's name
    """Limits of an integer dtype."""

    def __init__(self, type: _dtype.dtype) -> None:  # noqa: A002 - torch's name
        if not isinstance(type, _dtype.dtype):
            raise TypeError(f"iinfo(): argument 'type' (position 1) must be torch.dtype, not {_type_name(type)}")
        if type.np.kind == "b":
            raise TypeError("torch.bool is not supported by torch.iinfo")
        if type.is_floating_point:
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to handle "
                            "'torch.iinfo'")
        info = np.iinfo(type.np)
        self.bits, self.max, self.min = int(info.bits), int(info.max), int(info.min)
        self.dtype = type.name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, iinfo) and other.dtype == self.dtype

    def __hash__(self) -> int:
        return hash(("iinfo", self.dtype))

    def __repr__(self) -> str:
        return f"iinfo(min={float(self.min):g}, max={float(self.max):g}, dtype={self.dtype})"


def _type_name(obj: object) -> str:
    return type(obj).__name__
