"""engine: a NumPy re-implementation of PyTorch's Tensor, autograd and nn.Module.

Code written for torch runs after ``import engine as torch``. Map of the package:

- ``_tensor.py``          the Tensor class: storage, autograd state, in-place rules; it imports no op
- ``_ops/``               every differentiable op with its backward, grouped by kind; each imports Tensor
- ``_tensor_methods.py``  Tensor's methods that run ops (operators, reductions, shapes, ...), bound once
- ``autograd/``           graph nodes, the backward executor, grad mode, custom Function
- ``_creation.py``        factories (tensor, zeros, randn, arange, ...)
- ``utils/hooks.py``      RemovableHandle, BackwardHook (torch.utils.hooks)
- ``jit.py``, ``profiler.py``, ``hub.py``  torch.jit with TorchScript off (PYTORCH_JIT=0), a profiler of the
  public API's calls, torch.hub without the network

The top-level names are each module's own ``__all__`` (star-imported below, as torch/__init__.py
does): a name is listed once, beside its definition; only renames (``bool_`` as ``bool``) are named here.

Dependencies run one way: ``autograd.graph`` <- ``_tensor`` <- ``_ops/*`` <- ``_tensor_methods``,
``nn``, ``optim``, ... (``scripts/engine_imports.py`` measures it; tests/engine/test_structure.py
holds the limits).
"""

from __future__ import annotations

import builtins
from typing import Any

# Import order: autograd first (Tensor and every op build on its graph and grad mode, and the
# package's __init__ runs whenever one of its modules is imported), then Tensor's op methods
# (the modules below call them at import).
from . import autograd

# isort: split
from . import _tensor_methods  # noqa: F401 - binds Tensor's op methods

# isort: split
from . import (
    accelerator,
    amp,
    backends,
    compiler,
    cuda,
    distributed,
    distributions,
    fft,
    func,
    futures,
    hub,
    jit,
    linalg,
    multiprocessing,
    nn,  # noqa: E402 - after Tensor: nn builds on it
    onnx,
    optim,
    profiler,
    random,
    special,
    testing,
    version,
)
from ._creation import *  # noqa: F403
from ._dtype import *  # noqa: F403
from ._dtype import (
    bool_ as bool,  # noqa: A004 - torch.bool
)
from ._finfo import *  # noqa: F403
from ._layout import *  # noqa: F403
from ._legacy_types import *  # noqa: F403
from ._memory_format import *  # noqa: F403
from ._ops import aliases as _aliases
from ._ops.advanced_indexing import *  # noqa: F403
from ._ops.aliases import *  # noqa: F403
from ._ops.comparison import *  # noqa: F403
from ._ops.constructors import *  # noqa: F403
from ._ops.fft import *  # noqa: F403
from ._ops.gamma import *  # noqa: F403
from ._ops.indexing import *  # noqa: F403
from ._ops.integration import *  # noqa: F403
from ._ops.linalg import *  # noqa: F403
from ._ops.linalg_decompositions import *  # noqa: F403
from ._ops.linalg_decompositions import (
    cholesky_deprecated as cholesky,
)
from ._ops.linalg_decompositions import qr_torch as qr
from ._ops.linalg_decompositions import svd_torch as svd
from ._ops.namespace import *  # noqa: F403
from ._ops.norms import *  # noqa: F403
from ._ops.pointwise import *  # noqa: F403
from ._ops.pointwise_float import *  # noqa: F403
from ._ops.pointwise_integer import *  # noqa: F403
from ._ops.products import *  # noqa: F403
from ._ops.reduction import *  # noqa: F403
from ._ops.sampling import *  # noqa: F403
from ._ops.scans import *  # noqa: F403
from ._ops.scatter import *  # noqa: F403
from ._ops.sets import *  # noqa: F403
from ._ops.shape import *  # noqa: F403
from ._ops.shape_composite import *  # noqa: F403
from ._ops.shape_views import *  # noqa: F403
from ._ops.sorting import *  # noqa: F403
from ._ops.special import *  # noqa: F403
from ._ops.special_functions import *  # noqa: F403
from ._ops.statistics import *  # noqa: F403
from ._ops.statistics import mode as _mode
from ._random import *  # noqa: F403
from ._tensor import Size, Tensor, device
from ._tensor_str import *  # noqa: F403
from .autograd import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from .autograd.anomaly_mode import is_anomaly_check_nan_enabled, is_anomaly_enabled, set_anomaly_enabled
from .compiler import compile  # noqa: A004 - torch.compile
from .func import vmap
from .serialization import load, save
from .utils import checkpoint as _utils_checkpoint  # noqa: F401 - engine.utils.checkpoint as an attribute
from .utils import data as _utils_data  # noqa: F401 - makes engine.utils.data importable as an attribute

__version__ = "0.1.0"

autocast = amp.autocast
for _name in _aliases.METHOD_ALIASES:  # torch.sin_(x), torch.zero_(x), torch.detach(x), ...: x.<name>()
    globals()[_name] = _aliases.method_alias(_name)


def numel(input: Tensor) -> int:  # noqa: A002
    return input.numel()


def is_tensor(obj: object) -> bool:
    return isinstance(obj, Tensor)


def is_inference(input: Tensor) -> bool:  # noqa: A002
    """``input.is_inference()``: whether it was created inside ``inference_mode()``."""
    return input.is_inference()


def is_floating_point(input: Tensor) -> bool:  # noqa: A002
    return input.is_floating_point()


def is_complex(input: Tensor) -> bool:  # noqa: A002
    return input.is_complex()


def isnan(input: Tensor) -> Tensor:  # noqa: A002
    return input.isnan()


def isinf(input: Tensor) -> Tensor:  # noqa: A002
    return input.isinf()


def isfinite(input: Tensor) -> Tensor:  # noqa: A002
    return input.isfinite()


def equal(input: Tensor, other: Tensor) -> bool:  # noqa: A002 - torch's names
    return input.shape == other.shape and builtins.bool((input._data == other._data).all())


def is_nonzero(input: Tensor) -> builtins.bool:  # noqa: A002
    return input.is_nonzero()


def is_signed(input: Tensor) -> builtins.bool:  # noqa: A002
    return input.is_signed()


def index_put_(input: Tensor, indices: Any, values: Tensor, accumulate: builtins.bool = False) -> Tensor:  # noqa: A002
    """``input.index_put_(indices, values, accumulate)``."""
    return input.index_put_(indices, values, accumulate)


_MATMUL_PRECISION = ["highest"]
_DETERMINISTIC = [False, False]  # mode, warn_only


def set_float32_matmul_precision(precision: str) -> None:
    """Kept as set. The engine always multiplies float32 in full float32 ("highest"), which
    every setting permits (lower settings allow faster, less precise kernels; none requires one)."""
    import warnings
    if precision not in ("highest", "high", "medium"):
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current"
                      "setFloat32MatmulPrecision call has no effect.", UserWarning, stacklevel=2)
        return
    _MATMUL_PRECISION[0] = precision


def get_float32_matmul_precision() -> str:
    return _MATMUL_PRECISION[0]


_NUM_THREADS = {"intra": None, "interop": None}


def _thread_count(name: str, n: Any) -> builtins.int:
    if not isinstance(n, builtins.int) or isinstance(n, builtins.bool):
        raise RuntimeError(f"{name} expects an int, but got {type(n).__name__}")
    if n <= 0:
        raise RuntimeError(f"{name} expects a positive integer")
    return n


def set_num_threads(n: builtins.int) -> None:
    """Kept as set and read back by ``get_num_threads``. The engine's kernels are NumPy's, whose
    BLAS thread pool is sized at start-up (OMP_NUM_THREADS / OPENBLAS_NUM_THREADS), not by this."""
    _NUM_THREADS["intra"] = _thread_count("set_num_threads", n)


def get_num_threads() -> builtins.int:
    """The last ``set_num_threads`` value, else torch's default: OMP_NUM_THREADS when set, else
    the CPUs this process may use."""
    import os
    if _NUM_THREADS["intra"] is not None:
        return _NUM_THREADS["intra"]
    omp = os.environ.get("OMP_NUM_THREADS", "")
    if omp.isdigit() and builtins.int(omp) > 0:
        return builtins.int(omp)
    if hasattr(os, "sched_getaffinity"):
        return builtins.len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def set_num_interop_threads(n: builtins.int) -> None:
    _NUM_THREADS["interop"] = _thread_count("set_num_interop_threads", n)


def get_num_interop_threads() -> builtins.int:
    """The last ``set_num_interop_threads`` value, else the CPUs this process may use."""
    import os
    if _NUM_THREADS["interop"] is not None:
        return _NUM_THREADS["interop"]
    return builtins.len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def use_deterministic_algorithms(mode: builtins.bool, *, warn_only: builtins.bool = False) -> None:
    """Kept as set; the engine's ops are deterministic anyway (NumPy on one CPU)."""
    _DETERMINISTIC[:] = [builtins.bool(mode), builtins.bool(warn_only)]


def are_deterministic_algorithms_enabled() -> builtins.bool:
    return _DETERMINISTIC[0]


def is_deterministic_algorithms_warn_only_enabled() -> builtins.bool:
    return _DETERMINISTIC[1]


mode = _mode  # torch.mode (bound here: use_deterministic_algorithms has a parameter named mode)


def _install_numpy_names() -> None:
    import engine._ops.numpy_names as numpy_names  # run last, on the finished namespace
    numpy_names.install(Tensor, globals())


_install_numpy_names()


def _silence_numpy_warnings() -> None:
    """Every public entry (Tensor methods and operators, the namespaces' functions) computes with
    NumPy's floating-point warnings off, as torch is silent on log(0), 0/0, sqrt(-1)."""
    import sys

    from . import _errstate  # run last, on the finished namespace

    _errstate.silence_class(Tensor)
    for name in ("engine", "engine.nn.functional", "engine.nn.init", "engine.special", "engine.linalg",
                 "engine.fft", "engine.autograd", "engine.autograd.functional", "engine.func"):
        _errstate.silence_namespace(vars(sys.modules[name]), name)


_silence_numpy_warnings()
