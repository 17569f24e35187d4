"""Running a realistic torch training script under the engine, and under torch with the same weights.

Every script in ``tests/realcode/scripts/`` is plain torch code (``import torch``, ``import torch.nn
as nn``, ``from torch.utils.data import DataLoader``, ...) with three functions:

- ``get_data()``              NumPy arrays from a fixed NumPy seed (the same data for both libraries)
- ``build()``                 the model (one ``nn.Module``; several models live in one container)
- ``train(model, data, steps)`` the training loop: it makes its own optimizer/scheduler and returns
                              the loss of every step, as floats

``load(name, "engine")`` rewrites the script's torch import statements to name the engine (``import
torch`` -> ``import engine as torch``, ``from torch.nn import X`` -> ``from engine.nn import X``) and
executes it as a fresh module; nothing else in the source changes. ``load(name, "torch")`` runs it as
written.

Same numbers under both libraries: ``compare(name, steps)`` builds the model under torch, copies its
``state_dict()`` into the engine's model through NumPy, and trains both. Randomness inside training
is made the same for both ("twinned"): the script's ``DROPOUT`` is set to 0 (the only randomness the
harness cannot share), and ``torch.randn``/``randn_like``/``rand``/``rand_like``/``randperm``/``randint``, the
shuffling of a ``DataLoader(shuffle=True)``, ``random_split`` and the draws of
``distributions.Categorical``/``Normal`` come from one NumPy stream with the same seed in both runs,
so the scripts keep calling them exactly as written.
"""

from __future__ import annotations

import importlib
import math
import re
import sys
import types
from pathlib import Path

import numpy as np

import engine

SCRIPTS = Path(__file__).resolve().parent / "scripts"
NAMES = sorted(p.stem for p in SCRIPTS.glob("*.py") if not p.stem.startswith("_"))

# `import torch` alone needs an alias; `import torch.nn as nn` and `from torch... import` only the name.
_IMPORT_BARE = re.compile(r"^([ \t]*)import torch[ \t]*$", re.MULTILINE)
_IMPORT_DOTTED = re.compile(r"^(\s*)import torch\.", re.MULTILINE)
_IMPORT_SUBMODULE = re.compile(r"^([ \t]*)import torch\.([\w.]+)[ \t]*$", re.MULTILINE)
_FROM = re.compile(r"^(\s*)from torch(?=[\s.])", re.MULTILINE)


def to_engine(source: str) -> str:
    """``source`` with its torch import statements naming the engine."""
    # `import torch.utils.data` (no alias) binds the name torch: it becomes the engine's too
    source = _IMPORT_SUBMODULE.sub(r"\1import engine.\2; import engine as torch", source)
    source = _IMPORT_BARE.sub(r"\1import engine as torch", source)
    source = _IMPORT_DOTTED.sub(r"\1import engine.", source)
    return _FROM.sub(r"\1from engine", source)


def load(name: str, backend: str, twin_seed: int | None = None) -> types.ModuleType:
    """Execute script ``name`` as a new module under ``backend`` ("engine" or "torch").

    With ``twin_seed``, the module is set up for a compared run: ``DROPOUT = 0`` and its random
    draws come from a NumPy generator seeded with ``twin_seed`` (see the module docstring)."""
    path = SCRIPTS / f"{name}.py"
    source = path.read_text(encoding="utf-8")
    if backend == "engine":
        source = to_engine(source)
    elif backend != "torch":
        raise ValueError(f"unknown backend {backend!r}")
    modname = f"realcode_{name}__{backend}"
    module = types.ModuleType(modname)
    module.__file__ = str(path)
    sys.modules[modname] = module
    exec(compile(source, str(path), "exec"), module.__dict__)  # noqa: S102 - the test's own script
    if twin_seed is not None:
        _twin(module, importlib.import_module(backend), np.random.default_rng(twin_seed))
    return module


class _TwinnedTorch(types.ModuleType):
    """The library module with its random factories drawing from a shared NumPy generator."""

    def __init__(self, lib: types.ModuleType, rng: np.random.Generator) -> None:
        super().__init__(lib.__name__)
        self._lib, self._rng = lib, rng

    def __getattr__(self, name: str):
        return getattr(self._lib, name)

    def _make(self, values: np.ndarray, dtype=None, like=None, requires_grad=False):
        dtype = dtype if dtype is not None else like.dtype if like is not None else self._lib.float32
        return self._lib.tensor(values, dtype=dtype, requires_grad=requires_grad)

    def randn(self, *size, dtype=None, requires_grad=False, **_):
        return self._make(self._rng.standard_normal(_size(size)), dtype, None, requires_grad)

    def rand(self, *size, dtype=None, requires_grad=False, **_):
        return self._make(self._rng.random(_size(size)), dtype, None, requires_grad)

    def randn_like(self, t, dtype=None, requires_grad=False, **_):
        return self._make(self._rng.standard_normal(tuple(t.shape)), dtype, t, requires_grad)

    def rand_like(self, t, dtype=None, requires_grad=False, **_):
        return self._make(self._rng.random(tuple(t.shape)), dtype, t, requires_grad)

    def randperm(self, n, **_):
        return self._lib.tensor(self._rng.permutation(n), dtype=self._lib.int64)

    def randint(self, *args, size=None, dtype=None, **_):
        args = list(args)
        if size is None:
            size = args.pop()
        low, high = (0, args[0]) if len(args) == 1 else args
        return self._lib.tensor(self._rng.integers(low, high, _size((size,))),
                                dtype=dtype if dtype is not None else self._lib.int64)

    @property
    def distributions(self):
        return types.SimpleNamespace(**{**vars(self._lib.distributions),
                                        **_twinned_distributions(self._lib, self._rng)})


def _twinned_distributions(lib: types.ModuleType, rng: np.random.Generator) -> dict:
    """Categorical and Normal whose draws come from the shared stream: Categorical by inverse
    CDF of a shared uniform, Normal as loc + shared standard normal * scale."""
    dist = importlib.import_module(f"{lib.__name__}.distributions")

    class Categorical(dist.Categorical):
        def sample(self, sample_shape=()):
            cdf = np.cumsum(self.probs.detach().numpy().astype(np.float64), -1)
            u = rng.random(tuple(sample_shape) + tuple(self.batch_shape) + (1,)) * cdf[..., -1:]
            return lib.tensor(np.minimum((cdf < u).sum(-1), cdf.shape[-1] - 1), dtype=lib.int64)

    class Normal(dist.Normal):
        def rsample(self, sample_shape=()):
            shape = tuple(sample_shape) + tuple(self.batch_shape)
            return self.loc + lib.tensor(rng.standard_normal(shape), dtype=self.loc.dtype) * self.scale

        def sample(self, sample_shape=()):
            with lib.no_grad():
                return self.rsample(sample_shape)

    return {"Categorical": Categorical, "Normal": Normal}


def _size(size: tuple) -> tuple:
    return tuple(size[0]) if len(size) == 1 and isinstance(size[0], tuple | list) else tuple(size)


class _TwinSampler:
    """A fresh shared-stream permutation each epoch: ``DataLoader(shuffle=True)`` twinned."""

    def __init__(self, n: int, rng: np.random.Generator) -> None:
        self.n, self.rng = n, rng

    def __iter__(self):
        return iter(self.rng.permutation(self.n).tolist())

    def __len__(self) -> int:
        return self.n


def _twin(module: types.ModuleType, lib: types.ModuleType, rng: np.random.Generator) -> None:
    if hasattr(module, "DROPOUT"):
        module.DROPOUT = 0.0
    dist = importlib.import_module(f"{lib.__name__}.distributions")
    for key, cls in _twinned_distributions(lib, rng).items():
        if vars(module).get(key) is getattr(dist, key):
            setattr(module, key, cls)
    for key, value in list(vars(module).items()):
        if value is lib:
            setattr(module, key, _TwinnedTorch(lib, rng))
    data = lib.utils.data
    if "DataLoader" in vars(module):
        def twinned_loader(dataset, batch_size=1, shuffle=False, **kwargs):
            sampler = _TwinSampler(len(dataset), rng) if shuffle else None
            return data.DataLoader(dataset, batch_size=batch_size, sampler=sampler, **kwargs)
        module.DataLoader = twinned_loader
    if "random_split" in vars(module):
        def twinned_split(dataset, lengths, generator=None):
            order = rng.permutation(len(dataset)).tolist()
            bounds = np.cumsum([0, *lengths]).tolist()
            return [data.Subset(dataset, order[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]
        module.random_split = twinned_split


def copy_state(src, dst) -> None:
    """Load torch module ``src``'s state_dict into engine module ``dst`` (through NumPy)."""
    state = {k: engine.tensor(v.detach().cpu().numpy()) for k, v in src.state_dict().items()}
    dst.load_state_dict(state)


def run_engine(name: str, steps: int) -> list[float]:
    """The script as a user would run it on the engine (dropout on, the engine's own randomness)."""
    module = load(name, "engine")
    engine.manual_seed(0)
    losses = module.train(module.build(), module.get_data(), steps)
    assert len(losses) >= steps and all(isinstance(v, float) for v in losses), losses
    return losses


def compare(name: str, steps: int, seed: int = 0) -> tuple[list[float], list[float]]:
    """(engine losses, torch losses) of ``steps`` training steps from the same weights and data."""
    import torch

    t_mod = load(name, "torch", twin_seed=seed)
    e_mod = load(name, "engine", twin_seed=seed)
    data = t_mod.get_data()
    torch.manual_seed(seed)
    t_model = t_mod.build()
    engine.manual_seed(seed)
    e_model = e_mod.build()
    copy_state(t_model, e_model)
    t_losses = t_mod.train(t_model, data, steps)
    e_losses = e_mod.train(e_model, data, steps)
    return e_losses, t_losses


def max_rel_diff(a: list[float], b: list[float]) -> float:
    """Largest |a - b| / max(1, |b|): absolute for small losses, relative for large ones."""
    assert len(a) == len(b), (len(a), len(b))
    return max(abs(x - y) / max(1.0, abs(y)) for x, y in zip(a, b))


def finite(values: list[float]) -> bool:
    return all(math.isfinite(v) for v in values)
