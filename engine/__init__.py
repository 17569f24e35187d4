"""engine: a NumPy re-implementation of PyTorch's Tensor, autograd and nn.Module.

Code written for torch runs after ``import engine as torch``. Map of the package:

- ``_tensor.py``          the Tensor class: storage, autograd state, in-place rules; it imports no op
- ``_ops/``               every differentiable op with its backward, grouped by kind; each imports Tensor
- ``_tensor_methods.py``  Tensor's methods that run ops (operators, reductions, shapes, ...), bound once
- ``autograd/``           graph nodes, the backward executor, grad mode, custom Function
- ``_creation.py``        factories (tensor, zeros, randn, arange, ...)
- ``utils/hooks.py``      RemovableHandle, BackwardHook (torch.utils.hooks)

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
    cuda,
    distributed,
    distributions,
    fft,
    func,
    linalg,
    multiprocessing,
    nn,  # noqa: E402 - after Tensor: nn builds on it
    onnx,
    optim,
    random,
    special,
    testing,
    version,
)
from ._creation import (
    arange,
    as_tensor,
    bernoulli,
    empty,
    empty_like,
    eye,
    from_numpy,
    full,
    full_like,
    linspace,
    normal,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randn,
    randn_like,
    randperm,
    tensor,
    zeros,
    zeros_like,
)
from ._dtype import (
    bool_ as bool,  # noqa: A004 - torch.bool
)
from ._dtype import (
    cdouble,
    cfloat,
    complex64,
    complex128,
    double,
    dtype,
    float,
    float16,
    float32,
    float64,
    get_default_dtype,
    half,
    int,
    int8,
    int16,
    int32,
    int64,
    long,
    set_default_dtype,
    short,
    uint8,
)
from ._finfo import finfo, iinfo
from ._layout import layout, strided
from ._legacy_types import (
    BoolTensor,
    ByteTensor,
    CharTensor,
    DoubleTensor,
    FloatTensor,
    HalfTensor,
    IntTensor,
    LongTensor,
    ShortTensor,
)
from ._memory_format import channels_last, channels_last_3d, contiguous_format, memory_format, preserve_format
from ._ops import aliases as _aliases
from ._ops.advanced_indexing import (
    argwhere,
    index_copy,
    index_fill,
    index_put,
    masked_scatter,
    put,
    take,
)
from ._ops.aliases import (
    adaptive_avg_pool1d,
    adaptive_max_pool1d,
    alpha_dropout,
    alpha_dropout_,
    avg_pool1d,
    batch_norm,
    bilinear,
    binary_cross_entropy_with_logits,
    celu,
    celu_,
    channel_shuffle,
    conv1d,
    conv2d,
    conv3d,
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
    cosine_embedding_loss,
    cosine_similarity,
    ctc_loss,
    dropout,
    dropout_,
    embedding,
    feature_alpha_dropout,
    feature_alpha_dropout_,
    fill,
    group_norm,
    hardshrink,
    hinge_embedding_loss,
    instance_norm,
    kl_div,
    layer_norm,
    margin_ranking_loss,
    max_pool1d,
    max_pool2d,
    max_pool3d,
    pairwise_distance,
    pdist,
    pixel_shuffle,
    pixel_unshuffle,
    poisson_nll_loss,
    prelu,
    relu_,
    rms_norm,
    rrelu,
    rrelu_,
    selu,
    selu_,
    threshold,
    threshold_,
    triplet_margin_loss,
)
from ._ops.comparison import allclose, isclose
from ._ops.constructors import (
    block_diag,
    cartesian_prod,
    combinations,
    diag_embed,
    diagflat,
    tril_indices,
    triu_indices,
    vander,
)
from ._ops.fft import angle, complex, conj, imag, real, view_as_complex, view_as_real  # noqa: A004
from ._ops.gamma import digamma, lgamma, mvlgamma, polygamma
from ._ops.indexing import gather, index_select, masked_select, nonzero, select, take_along_dim, where
from ._ops.integration import (
    cumulative_trapezoid,
    trapezoid,
    trapz,
)
from ._ops.linalg import addmm, bmm, cdist, cross, dot, einsum, matmul, mm, mv, outer
from ._ops.linalg_decompositions import (
    cholesky_deprecated as cholesky,
)
from ._ops.linalg_decompositions import (
    cholesky_inverse,
    cholesky_solve,
    det,
    inverse,
    logdet,
    matrix_exp,
    matrix_power,
    pinverse,
    slogdet,
)
from ._ops.linalg_decompositions import qr_torch as qr
from ._ops.linalg_decompositions import svd_torch as svd
from ._ops.namespace import (
    asarray,
    bartlett_window,
    binomial,
    blackman_window,
    can_cast,
    dstack,
    get_default_device,
    hamming_window,
    hann_window,
    histogram,
    kaiser_window,
    logspace,
    poisson,
    promote_types,
    randint_like,
    result_type,
    scalar_tensor,
    set_default_device,
    unravel_index,
)
from ._ops.norms import (
    dist,
    renorm,
)
from ._ops.pointwise import (
    abs,
    add,
    atan2,
    bitwise_and,
    bitwise_not,
    bitwise_or,
    bitwise_xor,
    ceil,
    clamp,
    clamp_max,
    clamp_min,
    cos,
    div,
    eq,
    exp,
    expm1,
    floor,
    floor_divide,
    fmod,
    frac,
    ge,
    gt,
    le,
    log,
    log1p,
    log2,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    lt,
    masked_fill,
    maximum,
    minimum,
    mul,
    ne,
    neg,
    pow,
    reciprocal,
    relu,
    remainder,
    round,
    rsqrt,
    sigmoid,
    sign,
    sin,
    sqrt,
    square,
    sub,
    tan,
    tanh,
    trunc,
)
from ._ops.pointwise_float import (
    copysign,
    float_power,
    fmax,
    fmin,
    frexp,
    heaviside,
    isneginf,
    isposinf,
    isreal,
    ldexp,
    logaddexp2,
    nextafter,
    positive,
    sgn,
)
from ._ops.pointwise_integer import (
    bitwise_left_shift,
    bitwise_right_shift,
    gcd,
    lcm,
)
from ._ops.products import (
    addbmm,
    addmv,
    addr,
    baddbmm,
    inner,
    kron,
    tensordot,
    trace,
    vdot,
)
from ._ops.reduction import (
    all,
    amax,
    amin,
    aminmax,
    any,
    argmax,
    argmin,
    count_nonzero,
    cumprod,
    cumsum,
    log_softmax,
    logsumexp,
    max,
    mean,
    median,
    min,
    nansum,
    norm,
    prod,
    softmax,
    std,
    std_mean,
    sum,
    var,
    var_mean,
)
from ._ops.sampling import multinomial
from ._ops.scans import (
    cummax,
    cummin,
    diff,
    logcumsumexp,
)
from ._ops.scatter import index_add, scatter, scatter_add, scatter_reduce
from ._ops.sets import (
    isin,
    unique_consecutive,
)
from ._ops.shape import (
    broadcast_to,
    cat,
    chunk,
    clone,
    diag,
    diagonal,
    flatten,
    flip,
    meshgrid,
    narrow,
    permute,
    repeat,
    repeat_interleave,
    reshape,
    roll,
    split,
    squeeze,
    stack,
    t,
    tensor_split,
    transpose,
    tril,
    triu,
    unbind,
    unflatten,
    unsqueeze,
)
from ._ops.shape_composite import (
    atleast_1d,
    atleast_2d,
    atleast_3d,
    broadcast_shapes,
    broadcast_tensors,
    column_stack,
    hstack,
    movedim,
    tile,
    vstack,
)
from ._ops.shape_views import (
    dsplit,
    fliplr,
    flipud,
    hsplit,
    ravel,
    rot90,
    split_with_sizes,
    swapdims,
    vsplit,
)
from ._ops.sorting import (
    argsort,
    bincount,
    bucketize,
    msort,
    searchsorted,
    sort,
    topk,
    unique,
)
from ._ops.special import (
    acos,
    acosh,
    addcdiv,
    addcmul,
    asin,
    asinh,
    atan,
    atanh,
    cosh,
    deg2rad,
    erf,
    erfc,
    erfinv,
    exp2,
    hypot,
    lerp,
    log10,
    logaddexp,
    logit,
    nan_to_num,
    rad2deg,
    signbit,
    sinc,
    sinh,
    xlogy,
)
from ._ops.special_functions import i0
from ._ops.statistics import (
    corrcoef,
    cov,
    histc,
    kthvalue,
    nanmean,
    nanmedian,
    nanquantile,
    quantile,
)
from ._ops.statistics import mode as _mode
from ._random import Generator, get_rng_state, initial_seed, manual_seed, seed, set_rng_state
from ._tensor import Size, Tensor, device
from ._tensor_str import set_printoptions
from .autograd import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from .autograd.anomaly_mode import is_anomaly_check_nan_enabled, is_anomaly_enabled, set_anomaly_enabled
from .serialization import load, save
from .utils import checkpoint as _utils_checkpoint  # noqa: F401 - engine.utils.checkpoint as an attribute
from .utils import data as _utils_data  # noqa: F401 - makes engine.utils.data importable as an attribute

__version__ = "0.1.0"

clip = clamp
arcsin, arccos, arctan, arcsinh, arccosh, arctanh = asin, acos, atan, asinh, acosh, atanh
moveaxis = movedim
autocast = amp.autocast
concat = concatenate = cat
multiply, subtract, divide, true_divide, negative = mul, sub, div, div, neg
greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne
fix, absolute = trunc, abs
arctan2, row_stack = atan2, vstack
for _name in _aliases.METHOD_ALIASES:  # torch.sin_(x), torch.zero_(x), torch.detach(x), ...: x.<name>()
    globals()[_name] = _aliases.method_alias(_name)
ger = outer
swapaxes = transpose


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


def equal(a: Tensor, b: Tensor) -> bool:
    return a.shape == b.shape and builtins.bool((a._data == b._data).all())


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
