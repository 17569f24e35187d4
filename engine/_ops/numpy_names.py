"""torch's NumPy spellings of two argument names: ``axis`` for ``dim`` and ``keepdims`` for
``keepdim`` (``x.argmax(axis=1)``, ``torch.sum(x, axis=0, keepdims=True)``, as d2l and NumPy-minded
code write them).

torch's argument parser accepts them for its native functions only, so the lists below are the
engine's ops whose torch counterparts are native (torch's Python-defined ``split``, ``norm``,
``unique``, ``unique_consecutive`` and ``Tensor.unflatten`` reject ``axis``, and so does the engine).
``size``/``stride`` are left out: they are on every hot path and nobody spells them with ``axis``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

_COMMON = (
    "all", "amax", "amin", "aminmax", "any", "argmax", "argmin", "argsort", "chunk", "count_nonzero",
    "cross", "cummax", "cummin", "cumprod", "cumsum", "diff", "gather", "index_add", "index_copy",
    "index_fill", "index_select", "kthvalue", "log_softmax", "logcumsumexp", "logsumexp", "max",
    "mean", "median", "min", "mode", "nanmean", "nanmedian", "nanquantile", "nansum", "narrow",
    "prod", "quantile", "renorm", "repeat_interleave", "scatter", "scatter_add", "scatter_reduce",
    "select", "softmax", "sort", "split_with_sizes", "squeeze", "std", "sum", "take_along_dim",
    "tensor_split", "topk", "unbind", "unsqueeze", "var",
)
TENSOR_METHODS = _COMMON + (
    "cumprod_", "cumsum_", "index_add_", "index_copy_", "index_fill_", "narrow_copy", "renorm_",
    "scatter_", "scatter_add_", "scatter_reduce_", "squeeze_", "unsafe_chunk", "unsafe_split",
    "unsafe_split_with_sizes", "unsqueeze_",
)
FUNCTIONS = _COMMON + (
    "cat", "concat", "concatenate", "cosine_similarity", "cumulative_trapezoid", "pairwise_distance",
    "stack", "std_mean", "trapezoid", "trapz", "unflatten", "var_mean",
)
_ALIASES = (("axis", "dim"), ("keepdims", "keepdim"))


def accepting_numpy_names(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` also called with ``axis=``/``keepdims=``, renamed to ``dim=``/``keepdim=``. Naming
    both spellings of one argument is a TypeError naming the NumPy one, as torch raises it."""

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        if kwargs:  # the common call passes dims positionally: one dict test and nothing more
            for numpy_name, torch_name in _ALIASES:
                if numpy_name in kwargs:
                    if torch_name in kwargs:
                        raise TypeError(f"{fn.__name__}() got an unexpected keyword argument "
                                        f"'{numpy_name}'")
                    kwargs[torch_name] = kwargs.pop(numpy_name)
        return fn(*args, **kwargs)

    call.__wrapped_numpy_names__ = True  # type: ignore[attr-defined]
    return call


def install(tensor_cls: type, namespace: dict[str, Any]) -> None:
    """Wrap the listed Tensor methods and ``engine.*`` functions in place (once)."""
    for name in TENSOR_METHODS:
        method = vars(tensor_cls).get(name)
        if method is not None and not hasattr(method, "__wrapped_numpy_names__"):
            setattr(tensor_cls, name, accepting_numpy_names(method))
    for name in FUNCTIONS:
        fn = namespace.get(name)
        if fn is not None and not hasattr(fn, "__wrapped_numpy_names__"):
            namespace[name] = accepting_numpy_names(fn)
