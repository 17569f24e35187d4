"""``torch.vmap`` / ``torch.func.vmap``: a function of one example mapped over a batch dimension.

torch batches by running each op once on a BatchedTensor. The engine has no batched tensors: it
calls ``func`` once per example (``select(in_dim, i)`` of each mapped input, the unmapped ones
as they are) and stacks the results at ``out_dims``. Every op therefore batches, with torch's
numbers and gradients (slices and ``stack`` are differentiable, nested vmaps nest the loop), at
the cost of one Python call per example. The arguments and their errors are torch's: ``in_dims``
and ``out_dims`` as a prefix tree of the inputs/outputs, range checks, equal batch sizes,
``randomness`` ('error' refuses a random op on the default generator, 'same' replays one draw,
'different' draws per example), ``chunk_size``.

An in-place update of an unmapped input (in_dims None) would repeat once per example: it is
refused with a RuntimeError naming the function (torch makes it once, or refuses it when a mapped
value is written into it); an unmapped tensor the function reaches from a closure is not seen.
Where the loop is more lenient than torch (it cannot tell a batched tensor from an unbatched
one): ``.item()`` on an example runs here, where torch raises; an output at ``out_dims=None`` is
accepted when it is the same for every example (torch accepts it only when it does not depend on
a mapped input).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _random
from .._ops.shape import stack
from .._tensor import Tensor

__all__ = ["vmap"]

_RANDOMNESS = ("error", "different", "same")


def vmap(func: Callable, in_dims: Any = 0, out_dims: Any = 0, randomness: str = "error", *,
         chunk_size: int | None = None) -> Callable:
    """``vmap(f)(x)`` is ``stack([f(x[0]), f(x[1]), ...])``: ``in_dims`` says which dimension of
    each input is mapped (None: not mapped), ``out_dims`` where the batch dimension goes in each
    output.

    Example::

        >>> dot = engine.vmap(engine.dot, in_dims=(0, None))
        >>> dot(engine.ones(3, 4), engine.ones(4))
        tensor([4., 4., 4.])
    """
    if randomness not in _RANDOMNESS:
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")
    if chunk_size is not None and chunk_size < 1:
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        name = _name(func)
        leaves, spec = _flatten(args)
        dims = _in_dims(in_dims, args, spec, name)
        size = _batch_size(leaves, dims, in_dims, name)
        if size == 0:  # no example to call with: one call on zeros gives the outputs' shapes
            sample = [x.new_zeros(x.shape[:d % x.dim()] + x.shape[d % x.dim() + 1:]) if d is not None else x
                      for x, d in zip(leaves, dims)]
            return _unbatch([_call(func, sample, spec, kwargs, randomness)], out_dims, name, empty=True)
        state = _random.default_generator.get_state() if randomness == "same" else None
        unmapped = [x for x, d in zip(leaves, dims) if d is None and isinstance(x, Tensor)]
        versions = [x._version for x in unmapped]
        outputs = []
        for i in range(size):
            if state is not None:
                _random.default_generator.set_state(state)
            example = [x.select(d, i) if d is not None else x for x, d in zip(leaves, dims)]
            outputs.append(_call(func, example, spec, kwargs, randomness))
            if [x._version for x in unmapped] != versions:
                raise RuntimeError(
                    f"vmap({name}, ...): `{name}` modified in place an input that is not mapped over (in_dims=None). "
                    "The engine calls it once per example, so the update would repeat per example, where torch makes "
                    "it once (or refuses it): map that input, or update a clone of it")
        return _unbatch(outputs, out_dims, name)

    return wrapped


def _call(func: Callable, leaves: list, spec: Any, kwargs: dict, randomness: str) -> Any:
    args = _unflatten(iter(leaves), spec)
    if randomness != "error":
        return func(*args, **kwargs)
    generator = _random.default_generator
    rng, generator.rng = generator.rng, _RefusedRandomness()
    try:
        return func(*args, **kwargs)
    finally:
        generator.rng = rng


class _RefusedRandomness:
    """Stands for the default generator's NumPy generator while ``randomness='error'``."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError("vmap: called random operation while in randomness error mode. Please either use the "
                           "'same' or 'different' randomness flags on vmap or perform the randomness operation out "
                           "of vmap")


# --- inputs -------------------------------------------------------------------------------------

def _in_dims(in_dims: Any, args: tuple, spec: Any, name: str) -> list:
    if not isinstance(in_dims, int | tuple):
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int or a "
                         f"(potentially nested) tuple matching the structure of inputs, got: {type(in_dims)}.")
    if not args:
        raise ValueError(f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you are trying "
                         "to vmap over a function with no inputs. The latter is unsupported.")
    dims = _broadcast(in_dims, spec)
    if dims is None:
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the "
                         f"structure of `inputs`. in_dims has structure {_spec_repr(_flatten(in_dims)[1])} but "
                         f"inputs has structure {_spec_repr(spec)}.")
    return dims


def _batch_size(leaves: list, dims: list, in_dims: Any, name: str) -> int:
    sizes = []
    for x, d in zip(leaves, dims):
        if d is None:
            continue
        where = f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for "
        if not isinstance(d, int):
            raise ValueError(where + "an input but in_dim must be either an integer dimension or None.")
        if not isinstance(x, Tensor):
            raise ValueError(where + f"an input but the input is of type {type(x)}. We cannot vmap over non-Tensor "
                             "arguments, please use None as the respective in_dim")
        n = x.dim()
        if not -n <= d < n:
            raise ValueError(where + f"some input, but that input is a Tensor of dimensionality {n} so expected "
                             f"in_dim to satisfy -{n} <= in_dim < {n}.")
        sizes.append(x.shape[d])
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if len(set(sizes)) > 1:
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                         f"{sizes} for the mapped dimension")
    return sizes[0]


# --- outputs ------------------------------------------------------------------------------------

def _unbatch(outputs: list, out_dims: Any, name: str, empty: bool = False) -> Any:
    _check_out_dims(out_dims, name)
    first = outputs[0]
    leaves, spec = _flatten(first)
    if isinstance(first, Tensor):  # torch's edge case: a lone Tensor takes 0, (0,) or None
        dims = [out_dims[0]] if isinstance(out_dims, tuple) and len(out_dims) == 1 else (
            [out_dims] if out_dims is None or isinstance(out_dims, int) else None)
    else:
        dims = _broadcast(out_dims, spec)
    if dims is None:
        raise ValueError(f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible with the "
                         f"structure of `outputs`. out_dims has structure {_spec_repr(_flatten(out_dims)[1])} but "
                         f"outputs has structure {_spec_repr(spec)}.")
    per_example = [leaves] + [_flatten(out)[0] for out in outputs[1:]]
    results = []
    for j, d in enumerate(dims):
        column = [leaves_i[j] for leaves_i in per_example]
        if d is None:
            results.append(_unmapped(column, name))
            continue
        if not isinstance(column[0], Tensor):
            raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(column[0])}. "
                             "Did you mean to set out_dims= to None for output?")
        out = stack(column, dim=d)
        results.append(out.narrow(d, 0, 0) if empty else out)
    return _unflatten(iter(results), spec)


def _unmapped(column: list, name: str) -> Any:
    """An output at ``out_dims=None``: it must not vary with the example."""
    first = column[0]
    if isinstance(first, Tensor) and any(
            x is not first and not (isinstance(x, Tensor) and x.shape == first.shape
                                    and np.array_equal(x._data, first._data, equal_nan=True)) for x in column[1:]):
        raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor when out_dim is None")
    return first


def _check_out_dims(out_dims: Any, name: str) -> None:
    for d in _flatten(out_dims)[0]:
        if d is not None and not isinstance(d, int):
            raise ValueError(f"vmap({name}, ..., out_dims={out_dims}): `out_dims` must be an int, None or a python "
                             "collection of ints representing where in the outputs the vmapped dimension should "
                             "appear.")


# --- a small pytree: tuples, lists and dicts of leaves --------------------------------------------

_LEAF = None


def _flatten(tree: Any) -> tuple[list, Any]:
    """The leaves in order, and a spec to rebuild the tree: None for a leaf, else
    ``(type, keys, child specs)``."""
    if isinstance(tree, tuple | list):
        pairs = [_flatten(x) for x in tree]
        return [v for p in pairs for v in p[0]], (type(tree), None, [p[1] for p in pairs])
    if isinstance(tree, dict):
        pairs = [_flatten(x) for x in tree.values()]
        return [v for p in pairs for v in p[0]], (dict, list(tree), [p[1] for p in pairs])
    return [tree], _LEAF


def _unflatten(leaves: Any, spec: Any) -> Any:
    if spec is _LEAF:
        return next(leaves)
    kind, keys, children = spec
    values = [_unflatten(leaves, c) for c in children]
    if kind is dict:
        return dict(zip(keys, values))
    return kind(*values) if hasattr(kind, "_fields") else kind(values)  # a namedtuple takes fields


def _count(spec: Any) -> int:
    return 1 if spec is _LEAF else sum(_count(c) for c in spec[2])


def _broadcast(dims: Any, spec: Any) -> list | None:
    """``dims`` as a prefix of the tree ``spec`` (a number stands for every leaf below it), one per
    leaf; None when the structures differ."""
    if not isinstance(dims, tuple | list | dict):
        return [dims] * _count(spec)
    if spec is _LEAF:
        return None
    kind, keys, children = spec
    if type(dims) is not kind and not (isinstance(dims, tuple) and issubclass(kind, tuple)):
        return None
    if isinstance(dims, dict):
        if sorted(dims) != sorted(keys):
            return None
        dims = [dims[k] for k in keys]
    if len(dims) != len(children):
        return None
    out: list = []
    for d, c in zip(dims, children):
        part = _broadcast(d, c)
        if part is None:
            return None
        out += part
    return out


def _spec_repr(spec: Any, indent: int = 0) -> str:
    """torch's ``TreeSpec`` spelling, ``TreeSpec(tuple, None, [*,\\n  *])``."""
    if spec is _LEAF:
        return "*"
    kind, keys, children = spec
    indent += 2
    inner = ""
    if children:
        inner = _spec_repr(children[0], indent) + ("," if len(children) > 1 else "")
        inner += ",".join("\n" + " " * indent + _spec_repr(c, indent) for c in children[1:])
    return f"TreeSpec({kind.__name__}, {keys}, [{inner}])"


def _name(func: Callable) -> str:
    if hasattr(func, "__name__"):
        return func.__name__
    if isinstance(func, functools.partial):
        return f"functools.partial({_name(func.func)}, ...)"
    return repr(func)
