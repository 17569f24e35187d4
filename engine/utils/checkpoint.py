"""``torch.utils.checkpoint``: activation checkpointing (trade compute for memory).

``checkpoint(fn, *args, use_reentrant=...)`` runs ``fn`` without keeping its intermediates for
backward and recomputes them there, with the RNG state of the forward (dropout draws the same
mask). Both of torch's variants:

- ``use_reentrant=True`` (torch's default when the argument is left out, with its warning): a
  custom ``Function`` (``CheckpointFunctionBackward``) runs ``fn`` under ``no_grad``; its backward
  re-runs ``fn`` with grad enabled and calls ``autograd.backward`` inside the backward (which is
  why ``autograd.grad`` and ``backward(inputs=...)`` are refused, as in torch).
- ``use_reentrant=False``: ``fn`` runs with grad enabled, so the graph is torch's graph (module
  backward hooks inside fire from it), but every node of the region that saved something gives
  its backward closure up (the arrays go with it). The first such node that backward reaches
  re-runs ``fn`` and takes over the closures of the recomputed nodes, which pair with the
  originals by creation order. The re-run stops as soon as the last saving node exists (torch's
  early stop), checked at every module hook, so module forward hooks fire in the recomputation
  exactly as far as they do in torch. After the backward the closures are given up again, so a
  ``retain_graph`` backward recomputes once more, as torch does.
"""

from __future__ import annotations

import contextlib
import warnings
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import engine.autograd.executor as executor
import engine.autograd.grad_mode as grad_mode
import engine.nn.modules.module as M

from .. import _random, autograd
from .._tensor import Tensor
from ..autograd.function import Function
from ..autograd.graph import AccumulateGrad, Node, check_saved_versions, current_sequence_nr
from ..nn import Sequential

__all__ = [
    "CheckpointError", "CheckpointFunction", "check_backward_validity", "checkpoint", "checkpoint_sequential",
    "detach_variable", "noop_context_fn", "set_checkpoint_debug_enabled", "set_checkpoint_early_stop",
]

_DEFAULT_DETERMINISM_MODE = "default"
_DETERMINISM_MODES = (_DEFAULT_DETERMINISM_MODE, "none")
_checkpoint_debug_enabled: bool | None = None
_enable_checkpoint_early_stop: bool | None = None

_DEBUG_TIP = """
Tip: To see a more detailed error message, either pass `debug=True` to
`torch.utils.checkpoint.checkpoint(...)` or wrap the code block
with `with torch.utils.checkpoint.set_checkpoint_debug_enabled(True):` to
enable checkpoint‑debug mode globally.
"""


class CheckpointError(RuntimeError):
    """The recomputation did not match the original forward (torch's class)."""


def noop_context_fn() -> tuple[contextlib.AbstractContextManager, contextlib.AbstractContextManager]:
    """The default ``context_fn``: no context around the forward or the recomputation."""
    return contextlib.nullcontext(), contextlib.nullcontext()


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled: bool | None) -> Iterator[None]:
    """Inside the block, ``debug`` is ``enabled`` for every non-reentrant checkpoint (``None``:
    each call's own ``debug``)."""
    global _checkpoint_debug_enabled
    prev, _checkpoint_debug_enabled = _checkpoint_debug_enabled, enabled
    try:
        yield
    finally:
        _checkpoint_debug_enabled = prev


@contextlib.contextmanager
def set_checkpoint_early_stop(enable: bool) -> Iterator[None]:
    """Inside the block, non-reentrant recomputations stop early (``True``) or run ``fn`` to its
    end (``False``), whatever ``early_stop`` says."""
    global _enable_checkpoint_early_stop
    prev, _enable_checkpoint_early_stop = _enable_checkpoint_early_stop, enable
    try:
        yield
    finally:
        _enable_checkpoint_early_stop = prev


def detach_variable(inputs: tuple[Any, ...]) -> tuple[Any, ...]:
    """Each tensor of ``inputs`` detached with its ``requires_grad`` kept; other values as they are."""

    if not isinstance(inputs, tuple):
        raise RuntimeError(
            f"Only tuple of tensors is supported. Got Unsupported input type: {type(inputs).__name__}"
        )
    return tuple(x.detach().requires_grad_(x.requires_grad) if isinstance(x, Tensor) else x for x in inputs)


def check_backward_validity(inputs: Iterable[Any]) -> None:
    """torch's warning when no tensor input requires grad (reentrant checkpoint)."""

    if not any(x.requires_grad for x in inputs if isinstance(x, Tensor)):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2)


class CheckpointFunction(Function):
    """The reentrant variant: forward without a graph, backward recomputes and back-propagates."""

    @staticmethod
    def forward(ctx: Any, run_function: Callable, preserve_rng_state: bool, *args: Any) -> Any:

        check_backward_validity(args)
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        if preserve_rng_state:
            ctx.fwd_cpu_state = _random.get_rng_state()
        ctx.inputs = [None if isinstance(a, Tensor) else a for a in args]
        ctx.tensor_indices = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        ctx.save_for_backward(*[a for a in args if isinstance(a, Tensor)])
        return run_function(*args)  # Function.apply runs forward under no_grad already

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> tuple:

        if not _is_checkpoint_valid():
            raise RuntimeError(
                "When use_reentrant=True, torch.utils.checkpoint is incompatible"
                " with .grad() or passing an `inputs` parameter to .backward()."
                " To resolve this error, you can either set use_reentrant=False,"
                " or call .backward() without passing the `inputs` argument."
            )
        inputs = list(ctx.inputs)
        for i, t in zip(ctx.tensor_indices, ctx.saved_tensors):
            inputs[i] = t
        with _rng_of_forward(ctx.fwd_cpu_state if ctx.preserve_rng_state else None):
            detached = detach_variable(tuple(inputs))
            with grad_mode.enable_grad():
                outputs = ctx.run_function(*detached)
        if isinstance(outputs, Tensor):
            outputs = (outputs,)
        with_grad = [(o, g) for o, g in zip(outputs, grads) if isinstance(o, Tensor) and o.requires_grad]
        if not with_grad:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
        autograd.backward([o for o, _ in with_grad], [g for _, g in with_grad])
        return (None, None, *(x.grad if isinstance(x, Tensor) else None for x in detached))


def _is_checkpoint_valid() -> bool:
    """False inside ``autograd.grad``/``backward(inputs=...)``: a reentrant backward could not
    deliver its gradients there (torch's ``_is_checkpoint_valid``)."""
    return not executor._tasks or executor._tasks[-1].needed is None


@contextlib.contextmanager
def _rng_of_forward(state: Any) -> Iterator[None]:
    """Run the block with the global RNG at ``state`` (None: untouched), the surrounding state
    restored afterwards."""
    if state is None:
        yield
        return

    outer = _random.get_rng_state()
    _random.set_rng_state(state)
    try:
        yield
    finally:
        _random.set_rng_state(outer)


def checkpoint(function: Callable, *args: Any, use_reentrant: bool | None = None,
               context_fn: Callable[[], tuple[Any, Any]] = noop_context_fn,
               determinism_check: str = _DEFAULT_DETERMINISM_MODE, debug: bool = False,
               early_stop: bool = True, **kwargs: Any) -> Any:
    """``function(*args, **kwargs)`` whose intermediates are recomputed in backward instead of
    kept. ``preserve_rng_state=True`` (a keyword) replays the forward's RNG state in the
    recomputation. Warns as torch when ``use_reentrant`` is left out (and then uses the
    reentrant variant); ``kwargs``, ``context_fn`` and ``debug`` need ``use_reentrant=False``.

    Raises:
        ValueError: keyword arguments, ``context_fn`` or ``debug`` with the reentrant variant; an
            unknown ``determinism_check``; ``debug=True`` with a ``context_fn``.
        CheckpointError: (in backward) the recomputation created a different graph.
    """
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be "
            "passed explicitly. Starting in PyTorch 2.9, calling checkpoint "
            "without use_reentrant will raise an exception. use_reentrant=False is "
            "recommended, but if you need to preserve the current default "
            "behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants.",
            stacklevel=2,
        )
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
        return CheckpointFunction.apply(function, preserve, *args)
    return _checkpoint_without_reentrant(function, preserve, context_fn, determinism_check, debug,
                                         early_stop, args, kwargs)


def checkpoint_sequential(functions: Any, segments: int, input: Any,  # noqa: A002 - torch's name
                          use_reentrant: bool | None = None, **kwargs: Any) -> Any:
    """Run ``functions`` (a ``Sequential`` or a list of callables) in order on ``input``, every
    segment but the last under ``checkpoint``; ``len(functions) // segments`` per segment."""

    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant "
            "parameter should be passed explicitly. "
            "In version 2.9 we will raise an exception if use_reentrant "
            "is not passed. use_reentrant=False is "
            "recommended, but if you need to preserve the current default "
            "behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants.",
            stacklevel=2,
        )
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if isinstance(functions, Sequential):
        functions = list(functions.children())
    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(_run_segment(functions, start, end), input, use_reentrant=use_reentrant,
                           preserve_rng_state=preserve)
    return _run_segment(functions, end + 1, len(functions) - 1)(input)


def _run_segment(functions: list, start: int, end: int) -> Callable[[Any], Any]:
    def forward(x: Any) -> Any:
        for j in range(start, end + 1):
            x = functions[j](x)
        return x
    return forward


# ---- the non-reentrant variant ------------------------------------------------------------

class _StopRecomputation(Exception):  # noqa: N818 - torch's private name is _StopRecomputationError
    """Raised at the first module hook after the recomputation made the last node needed."""


def _tensors_in(value: Any) -> Iterator[Any]:
    """Every tensor in ``value`` (nested tuples, lists and dicts)."""

    if isinstance(value, Tensor):
        yield value
    elif isinstance(value, tuple | list):
        for v in value:
            yield from _tensors_in(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _tensors_in(v)


class _Region:
    """The graph nodes a run of ``fn`` created, found from the tensors its module hooks saw and
    from its outputs: nodes created since ``start``, AccumulateGrad sinks left out."""

    def __init__(self, start: int) -> None:
        self.start = start
        self.seen: set[Node] = set()

    def add(self, value: Any) -> None:
        stack = [t.grad_fn for t in _tensors_in(value) if t.grad_fn is not None]
        while stack:
            node = stack.pop()
            if node in self.seen or isinstance(node, AccumulateGrad) or node._seq < self.start:
                continue
            self.seen.add(node)
            stack.extend(n for n, _ in node.next_functions if n is not None and n not in self.seen)

    def nodes(self) -> list[Node]:
        return sorted(self.seen, key=lambda n: n._seq)


@contextlib.contextmanager
def _watching_modules(on_hook: Callable[[Any], None]) -> Iterator[None]:
    """Call ``on_hook(tensors)`` at every module forward pre-hook (its inputs) and forward hook
    (its output) while the block runs, before any other global hook."""

    pre = M.register_module_forward_pre_hook(lambda mod, args: on_hook(args))
    post = M.register_module_forward_hook(lambda mod, args, out: on_hook(out))
    M._global_forward_pre_hooks.move_to_end(pre.id, last=False)
    M._global_forward_hooks.move_to_end(post.id, last=False)
    try:
        yield
    finally:
        pre.remove()
        post.remove()


def _version_checks(saved: tuple, inputs: tuple) -> tuple:
    """The entries of a node's ``_saved`` that hold one of the checkpoint's inputs (kept: the
    frame holds them anyway). The recomputation reads their current values, so torch refuses if
    they were modified in place since the forward. Tensors made inside the region are
    recomputed, and their twins check themselves; the op's own output (``None``) is recomputed
    too, so modifying the region's output in place is allowed, as in torch."""
    return tuple((counter, version, tensor) for counter, version, tensor in saved
                 if tensor is not None and any(tensor is a for a in inputs))


def _check_versions(node: Node, checks: tuple) -> None:
    """torch's error if a tensor in ``checks`` was modified in place since the forward saved it
    (torch raises when the node unpacks it; here, when the region is recomputed)."""
    if any(counter[0] != version for counter, version, _ in checks):
        kept, node._saved = node._saved, checks
        try:
            check_saved_versions(node)
        finally:
            node._saved = kept


class _Frame:
    """One non-reentrant checkpoint call: its inputs, its RNG state, and the nodes whose backward
    closures it gave up (held weakly: the graph owns them)."""

    def __init__(self, fn: Callable, args: tuple, kwargs: dict, rng_state: Any, recompute_context: Any,
                 early_stop: bool, check: bool, debug: bool) -> None:
        self.fn, self.args, self.kwargs = fn, args, kwargs
        self.rng_state, self.recompute_context = rng_state, recompute_context
        self.early_stop, self.check, self.debug = early_stop, check, debug
        self.names: list[str] = []
        self.metas: list[tuple] = []
        # (rank, node, the version checks of what it saved: see _version_checks)
        self.stubbed: list[tuple[int, weakref.ref, tuple]] = []

    def give_up_closures(self, nodes: list[Node]) -> None:
        """Replace the backward of every node that saved something with one that recomputes;
        such a node keeps nothing saved (``_saved`` is empty) until the recomputation."""
        self.names = [type(n).__name__ for n in nodes]
        self.metas = [n._out_meta for n in nodes]
        for rank, node in enumerate(nodes):
            if node._saved:
                self.stubbed.append((rank, weakref.ref(node), _version_checks(node._saved, self.args)))
                self._stub(node)

    def _stub(self, node: Node) -> None:
        # The stub holds the frame (and so the inputs) for as long as the graph holds the node;
        # the frame holds the node only weakly, so no reference cycle delays freeing either.
        def recompute_then(*grads: Any) -> Any:
            self.recompute()
            return node_ref()._fn(*grads)

        def recompute_then_tensors(*grads: Any) -> Any:
            self.recompute()
            return executor._tensor_backward(node_ref())(*grads)

        node_ref = weakref.ref(node)
        node._fn, node._tbw, node._saved = recompute_then, recompute_then_tensors, ()

    def recompute(self) -> None:
        """Re-run ``fn`` with grad enabled and the forward's RNG state, and give each stubbed node
        the backward of its recomputed twin; queue giving them up again after this backward."""

        region = _Region(current_sequence_nr())
        last = max(rank for rank, _, _ in self.stubbed)

        def on_hook(value: Any) -> None:
            region.add(value)
            if self.early_stop and len(region.seen) > last:
                raise _StopRecomputation

        args = tuple(a.detach().requires_grad_(a.requires_grad) if isinstance(a, Tensor) else a
                     for a in self.args)
        try:
            with _rng_of_forward(self.rng_state), grad_mode.enable_grad(), self.recompute_context, \
                    _watching_modules(on_hook):
                region.add(self.fn(*args, **self.kwargs))
        except _StopRecomputation:
            pass
        self._take_closures(region.nodes())
        executor.queue_callback(self._give_up_again)

    def _take_closures(self, twins: list[Node]) -> None:
        self._check_twins(twins)
        for rank, ref, checks in self.stubbed:
            node, twin = ref(), twins[rank]
            if node is None:
                continue
            _check_versions(node, checks)
            node._fn, node._saved = twin._fn, twin._saved
            node._tbw = getattr(twin, "_tbw", None) or _tensor_backward_of(twin)

    def _check_twins(self, twins: list[Node]) -> None:
        saved_fwd = len(self.stubbed)
        saved_rec = sum(1 for rank, _, _ in self.stubbed if rank < len(twins) and twins[rank]._saved)
        names = [type(n).__name__ for n in twins]
        if saved_rec != saved_fwd or names[: len(self.names)] != self.names[: len(names)]:
            raise CheckpointError(
                "torch.utils.checkpoint: A different number of tensors was saved "
                "during the original forward and recomputation.\n"
                f"Number of tensors saved during forward: {saved_fwd}\n"
                f"Number of tensors saved during recomputation: {saved_rec}.\n"
                + self._debug_lists(names) + _DEBUG_TIP
            )
        if not self.check:
            return
        different = "".join(
            f"tensor at position {rank}:\nsaved metadata: {_meta(self.metas[rank])}\n"
            f"recomputed metadata: {_meta(twins[rank]._out_meta)}\n"
            for rank, _, _ in self.stubbed if twins[rank]._out_meta != self.metas[rank])
        if different:
            raise CheckpointError(
                "torch.utils.checkpoint: Recomputed values for the following tensors "
                f"have different metadata than during the forward pass.\n{different}.\n"
                + self._debug_lists(names) + _DEBUG_TIP
            )

    def _debug_lists(self, recomputed: list[str]) -> str:
        if not self.debug:
            return ""
        return ("Operations recorded during the original forward:\n  " + "\n  ".join(self.names)
                + "\nOperations recorded during the recomputation:\n  " + "\n  ".join(recomputed) + "\n")

    def _give_up_again(self) -> None:
        """After the backward: nodes the graph still holds (``retain_graph``) drop the
        recomputed closures, so the next backward recomputes (torch's behaviour)."""
        for _, ref, _checks in self.stubbed:
            node = ref()
            if node is not None and not node._released:
                self._stub(node)


def _tensor_backward_of(node: Node) -> Callable[..., Any]:
    return lambda *grads: executor._tensor_backward(node)(*grads)


def _meta(out_meta: tuple) -> str:
    return ", ".join(f"{{'shape': {list(shape)}, 'dtype': {dtype}}}" for shape, dtype in out_meta)


def _checkpoint_without_reentrant(function: Callable, preserve: bool, context_fn: Callable,
                                  determinism_check: str, debug: bool, early_stop: bool,
                                  args: tuple, kwargs: dict) -> Any:

    debug = _checkpoint_debug_enabled if _checkpoint_debug_enabled is not None else debug
    if debug and context_fn is not noop_context_fn:
        raise ValueError("debug=True is incompatible with non-default context_fn")
    if determinism_check not in _DETERMINISM_MODES:
        raise ValueError(
            f"determinism_check should be one of {list(_DETERMINISM_MODES)}, but got {determinism_check}"
        )
    forward_context, recompute_context = context_fn()
    stop = _enable_checkpoint_early_stop if _enable_checkpoint_early_stop is not None else early_stop
    frame = _Frame(function, args, kwargs, _random.get_rng_state() if preserve else None, recompute_context,
                   stop, determinism_check == _DEFAULT_DETERMINISM_MODE, debug)
    region = _Region(current_sequence_nr())
    suppressed = True
    with forward_context:
        with _watching_modules(region.add):
            out = function(*args, **kwargs)
        suppressed = False
    if suppressed:  # the context swallowed fn's exception: there is no output to return
        raise RuntimeError(
            "torch.utils.checkpoint: the forward context provided by "
            "context_fn suppressed an exception raised during the "
            "checkpointed forward. This is not supported because checkpoint "
            "cannot return a value for a failed forward."
        )
    region.add(out)
    nodes = region.nodes()
    if nodes:
        frame.give_up_closures(nodes)
    return out
