"""``DataParallel`` with no accelerator: torch stores the module, sets ``device_ids = []`` and
its forward calls the module directly (so ``state_dict`` keys gain the ``module.`` prefix, as
there). ``data_parallel`` (the function) needs a device type and raises without one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..modules.module import Module


class DataParallel(Module):
    """Runs ``module`` unchanged: the engine has one device, the CPU, and torch's DataParallel
    does no splitting there.

    Example::

        >>> model = engine.nn.DataParallel(engine.nn.Linear(2, 1))
        >>> list(model.state_dict())
        ['module.weight', 'module.bias']
    """

    def __init__(self, module: Module, device_ids: Sequence[Any] | None = None, output_device: Any = None,
                 dim: int = 0) -> None:
        super().__init__()
        self.module = module
        self.device_ids: list[int] = []  # torch returns here, before setting dim/output_device

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        return self.module(*inputs, **kwargs)


def data_parallel(module: Module, inputs: Any, device_ids: Sequence[Any] | None = None, output_device: Any = None,
                  dim: int = 0, module_kwargs: Any = None) -> Any:
    """torch's functional form needs an accelerator's device type."""
    raise RuntimeError("device type could not be determined")
