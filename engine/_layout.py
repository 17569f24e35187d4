"""``torch.layout`` and ``torch.strided``: how a tensor's elements are stored. The engine's
tensors are all strided (dense NumPy arrays), so ``strided`` is the one layout there is; a
factory's ``layout=`` takes it (or None) and refuses anything that is not a layout, as torch's
argument parser does."""

from __future__ import annotations

# The names this module adds to torch's top-level namespace (engine/__init__.py star-imports
# them: this list is the one place they are named).
__all__ = ["layout", "strided"]


class layout:  # noqa: N801 - torch's name
    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"engine.{self._name}"

    def __reduce__(self) -> str:
        return self._name  # pickled by name: engine._layout.strided


strided = layout("strided")


def check(value: object, fname: str) -> None:
    """A factory's ``layout=``: None or ``strided``."""
    if value is None or value is strided:
        return
    if not isinstance(value, layout):
        raise TypeError(f"{fname}(): argument 'layout' must be engine.layout, not {type(value).__name__}")
    raise NotImplementedError(f"{fname}(): the engine has strided tensors only, not {value!r}")  # pragma: no cover
