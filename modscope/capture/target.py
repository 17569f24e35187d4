"""Loading a model from a command-line TARGET: ``path/to/file.py:ClassOrFactory`` or the name
of a bundled example (``EXAMPLES``).

Every failure is a ``TargetError`` whose message is one line saying what was wrong (bad form,
missing file, failing import, missing or unusable name), so the CLI can print it as is.
"""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..examples import EXAMPLES_DIR
from .backends import framework_of


@dataclass(frozen=True)
class Example:
    """A bundled example model: where it is defined and a default input for it. ``dtype`` is
    ``"float32"`` (standard normal input) or ``"int64"`` (token ids in ``[0, high)``)."""

    file: str
    attr: str
    input_shape: tuple[int, ...]
    dtype: str = "float32"
    high: int = 0


# Example name -> model. (modscope/examples/mlp_mnist.py has no model class: it is a training script.)
EXAMPLES: dict[str, Example] = {
    "net": Example("mnist_net.py", "Net", (1, 1, 28, 28)),
    "simple": Example("simple_net.py", "SimpleNet", (1, 1, 28, 28)),
    "rnn": Example("rnn.py", "RNNClassifier", (1, 28, 28)),
    "resnet": Example("resnet_tiny.py", "ResNetTiny", (1, 1, 28, 28)),
    "transformer": Example("transformer_tiny.py", "TransformerTiny", (1, 28, 28)),
}


class TargetError(Exception):
    """A TARGET that cannot be turned into a model; the message is one line."""


@dataclass
class Target:
    """A loaded model and the input shape to run it with (``None``: the caller must give one)."""

    model: Any
    name: str
    input_shape: tuple[int, ...] | None
    dtype: str = "float32"
    high: int = 0

    @property
    def framework(self) -> Any:
        """The model's framework module: ``engine`` or ``torch``."""
        return importlib.import_module(framework_of(self.model))

    def example_input(self, shape: tuple[int, ...] | None = None) -> Any:
        """An input tensor of ``shape`` (default: the target's own) with the target's dtype,
        made by the model's framework."""
        shape = shape or self.input_shape
        if shape is None:
            raise TargetError(f"no input shape for {self.name}: give one with --input, e.g. --input 1,3,32,32")
        if self.dtype == "int64":
            return self.framework.randint(0, self.high, shape)
        return self.framework.randn(*shape)

    def no_grad(self) -> Any:
        """The framework's ``no_grad`` context."""
        return self.framework.no_grad()


def load_target(spec: str, examples: dict[str, Example] | None = None,
                examples_dir: Path | None = None) -> Target:
    """The model ``spec`` names: ``FILE.py:NAME`` (``NAME`` a Module class or a factory called
    with no arguments) or an example name. Raises ``TargetError``."""
    examples = EXAMPLES if examples is None else examples
    examples_dir = EXAMPLES_DIR if examples_dir is None else examples_dir
    if ":" not in spec:
        example = examples.get(spec)
        if example is None:
            raise TargetError(f"unknown target {spec!r}: give FILE.py:CLASS_OR_FACTORY or an example name "
                              f"({', '.join(examples)})")
        model = _build(examples_dir / example.file, example.attr, spec)
        return Target(model, spec, example.input_shape, example.dtype, example.high)
    file, _, attr = spec.rpartition(":")
    if not file or not attr or not attr.isidentifier():
        raise TargetError(f"bad target {spec!r}: expected FILE.py:CLASS_OR_FACTORY, e.g. models.py:Net")
    return Target(_build(Path(file), attr, spec), spec, None)


def _build(path: Path, attr: str, spec: str) -> Any:
    """Import ``path`` and call ``attr`` in it; the result must be a Module."""
    if not path.is_file():
        raise TargetError(f"{spec}: file not found: {path}")
    module = _import_file(path)
    factory = getattr(module, attr, None)
    if factory is None:
        raise TargetError(f"{spec}: {path} defines no class or factory named {attr!r}")
    if not callable(factory):
        raise TargetError(f"{spec}: {attr!r} in {path} is a {type(factory).__name__}, not a class or factory")
    try:
        model = factory()
    except Exception as exc:  # noqa: BLE001 - any failure of user code becomes one line
        raise TargetError(f"{spec}: {attr}() failed: {_one_line(exc)}") from exc
    if framework_of(model) is None or not hasattr(model, "named_modules"):
        raise TargetError(f"{spec}: {attr}() returned a {type(model).__name__}, not an nn.Module of the engine "
                          "or of torch")
    return model


def _import_file(path: Path) -> Any:
    """Import a Python file as a fresh module; its own folder is importable meanwhile (examples
    import their siblings, e.g. ``_mnist``)."""
    name = f"_modscope_target_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise TargetError(f"cannot import {path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    folder = str(path.resolve().parent)
    sys.path.insert(0, folder)
    sys.modules[name] = module  # dataclasses and pickling look classes up here
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001
        sys.modules.pop(name, None)
        raise TargetError(f"cannot import {path}: {_one_line(exc)}") from exc
    finally:
        if folder in sys.path:
            sys.path.remove(folder)
    return module


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def parse_shape(text: str) -> tuple[int, ...]:
    """``"64,1,28,28"`` (or with ``x``/spaces) -> ``(64, 1, 28, 28)``; ``TargetError`` if it is
    not a list of positive integers."""
    parts = [p for p in text.replace("x", ",").replace(" ", ",").split(",") if p]
    try:
        shape = tuple(int(p) for p in parts)
    except ValueError:
        shape = ()
    if not shape or any(d <= 0 for d in shape):
        raise TargetError(f"bad input shape {text!r}: expected positive integers separated by commas, e.g. 1,1,28,28")
    return shape
