"""``skip_init`` (torch.nn.utils.skip_init)."""

from __future__ import annotations

import inspect
from typing import Any

from ..modules.module import Module

__all__ = ["skip_init"]


def skip_init(module_cls: type, *args: Any, **kwargs: Any) -> Any:
    """``module_cls(*args, **kwargs)`` with uninitialised parameters and buffers (``to_empty``),
    for code that fills them itself. The class must take a ``device`` argument, as torch
    demands. torch builds on the ``meta`` device to skip the initialisation work; the engine
    has no meta device, so the initialisation runs and its values are then discarded."""
    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    final_device = kwargs.pop("device", "cpu")
    return module_cls(*args, device=final_device, **kwargs).to_empty(device=final_device)
