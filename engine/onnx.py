"""``torch.onnx``: importable so that scripts with an optional export path load; exporting is
not implemented. ONNX export traces a model into an ONNX graph (torch uses its exporter and the
``onnx`` package); the engine has no such tracer or writer."""

from __future__ import annotations

from typing import Any

__all__ = ["export", "is_in_onnx_export", "OnnxExporterError"]


class OnnxExporterError(RuntimeError):
    """Raised by torch when an export fails."""


def export(model: Any, args: Any = (), f: Any = None, **kwargs: Any) -> None:
    """Raises NotImplementedError: the engine cannot write ONNX."""
    raise NotImplementedError(
        "engine.onnx.export: the engine cannot export to ONNX (it has no graph tracer or ONNX writer); "
        "save the weights with engine.save(model.state_dict(), path) and export from torch")


def is_in_onnx_export() -> bool:
    """False: no export is ever running."""
    return False
