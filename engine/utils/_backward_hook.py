"""``BackwardHook``: a module's full backward (pre-)hooks, run on identity nodes around its call
(torch.utils.hooks.BackwardHook); the executor passes gradients through those nodes."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import engine.autograd.grad_mode as grad_mode

from .._tensor import Tensor
from ..autograd.graph import Node, edge


def _all_transparent(*hook_lists: list) -> bool:
    """Some hook in ``hook_lists``, and every one transparent (plain loops: runs per module call)."""
    found = False
    for hooks in hook_lists:
        for h in hooks:
            if not getattr(h, "_engine_transparent_hook", False):
                return False
            found = True
    return found


def _identity(tensors: list, keep_inplace: bool, owner: BackwardHook, cls: type) -> tuple:
    """What ``BackwardHookFunction.apply(*tensors)`` records, built directly: one
    ``BackwardHookFunctionBackward`` node (``cls``: on the module's inputs or its outputs) passing
    gradients through, outputs on the inputs' memory. The generic custom-Function path costs
    ~50 µs a call; a module with hooks makes two calls per forward. Outputs are refused in-place
    updates, as torch refuses them, unless every hook on the module is transparent
    (``keep_inplace``)."""
    node = cls(_pass_through, tuple([edge(t) for t in tensors]),
               tuple([(t._data.shape, t._data.dtype) for t in tensors]))
    node._backward_hook = owner  # the module's BackwardHook, run on raw arrays (see the executor)
    wrap = Tensor._wrap
    outs = []
    for nr, t in enumerate(tensors):
        out = wrap(t._data)
        out._version_counter = t._version_counter
        if t._requires_grad:
            out._requires_grad, out.grad_fn, out._output_nr = True, node, nr
            if not keep_inplace:
                out._custom_function_output = f"Output {nr} of BackwardHookFunction"
        outs.append(out)
    return tuple(outs)


def _identity_one(t: Any, keep_inplace: bool, owner: BackwardHook, cls: type) -> Any:
    """``_identity([t], ...)[0]`` for one tensor that requires grad (a module's usual input
    and output), without the loops."""
    data = t._data
    node = cls(_pass_through, (edge(t),), ((data.shape, data.dtype),))
    node._backward_hook = owner
    out = Tensor._wrap(data)
    out._version_counter, out._requires_grad, out.grad_fn = t._version_counter, True, node
    if not keep_inplace:
        out._custom_function_output = "Output 0 of BackwardHookFunction"
    return out


_FIRST = (0,)  # the tensor positions of a one-tensor argument tuple


def _pass_through(*grads: Any) -> tuple:
    """The identity node's backward (the executor inlines it: ``Node._passes_through``)."""
    return grads


_identity_classes: tuple[type, type] | None = None


def _identity_node_classes() -> tuple[type, type]:
    """The two kinds of ``BackwardHookFunctionBackward`` node (one name, as in torch): on a
    module's inputs, running its ``BackwardHook``'s ``_input_hook``, and on its outputs, running
    ``_output_hook``. Their gradients pass through unchanged, zeros for outputs that got none (as
    a custom Function's materialized grads), while the hooks see the raw ``None`` for those, as in
    torch. The executor does the passing (``_passes_through``): no Python call per node.

    Why a class per kind: the node then holds only its ``BackwardHook`` (``_backward_hook``), not a
    bound method in a tuple: two objects fewer per node, which live from forward to backward, on
    every call of every hooked module; on a 10,000-module model they are 40,000 objects a step
    that Python's garbage collector walks."""
    global _identity_classes
    if _identity_classes is None:
        def on_inputs(node: Any, grads_in: Any, grads_out: Any) -> Any:
            return node._backward_hook._input_hook(grads_in, grads_out)

        def on_outputs(node: Any, grads_in: Any, grads_out: Any) -> Any:
            return node._backward_hook._output_hook(grads_in, grads_out)

        body = {"__slots__": ("_backward_hook",), "_materialize_in_engine": False, "_passes_through": True,
                "__module__": Node.__module__}
        _identity_classes = (type("BackwardHookFunctionBackward", (Node,), {**body, "_run_backward_hook": on_inputs}),
                             type("BackwardHookFunctionBackward", (Node,), {**body, "_run_backward_hook": on_outputs}))
    return _identity_classes


_NO_INPUT_GRAD_WARNING = (
    "Full backward hook is firing when gradients are computed with respect to module outputs "
    "since no inputs require gradients. See "
    "https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html#torch.nn.Module."
    "register_full_backward_hook for more details."
)


class BackwardHook:
    """Runs a module's full backward (pre-)hooks, as ``torch.utils.hooks.BackwardHook`` does.

    The module's tensor inputs go through an identity ``BackwardHookFunction`` before forward
    and its tensor outputs through another one after. The output node's post-hook captures
    ``grad_output`` (and runs the backward pre-hooks, which may replace it); the input node's
    post-hook then sees ``grad_input`` and runs the backward hooks, which may replace it.
    Non-tensor positions are ``None`` in what the hooks receive. When no input requires grad,
    the backward hooks run from the output node, with all-``None`` ``grad_input``.
    """

    # Slots: one of these is made per call of every module with backward hooks.
    __slots__ = ("user_hooks", "user_pre_hooks", "module", "grad_outputs", "n_outputs", "output_tensors_index",
                 "n_inputs", "input_tensors_index", "transparent")

    def __init__(self, module: Any, user_hooks: list, user_pre_hooks: list) -> None:
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.module = module
        self.grad_outputs: tuple | None = None
        self.n_outputs = -1
        self.output_tensors_index: Sequence[int] | None = None
        self.n_inputs = -1
        self.input_tensors_index: Sequence[int] | None = None
        self.transparent = _all_transparent(user_hooks, user_pre_hooks)

    @staticmethod
    def _pack_with_none(indices: Sequence[int], values: tuple, size: int) -> tuple:
        if len(indices) == size:  # every position is a tensor (the usual case): nothing to pad
            return values
        res: list = [None] * size
        for idx, val in zip(indices, values, strict=True):
            res[idx] = val
        return tuple(res)

    @staticmethod
    def _unpack_none(indices: Sequence[int], values: tuple) -> tuple:
        if len(indices) == len(values):
            return values
        return tuple([values[idx] for idx in indices])

    def _input_hook(self, grad_input: tuple, _: list) -> tuple | None:
        """The input node's array hook: runs the backward hooks on ``grad_input``."""
        if self.grad_outputs is None:
            # The gradient reached the inputs without passing through the outputs (e.g. a
            # second backward through the inputs only): torch skips the hooks then.
            return None
        res = _wrap_all(grad_input)
        if len(res) != self.n_inputs:  # some inputs are not tensors: None in their places
            res = self._pack_with_none(self.input_tensors_index, res, self.n_inputs)
        replaced = False
        for user_hook in self.user_hooks:
            out = user_hook(self.module, res, self.grad_outputs)
            if out is None:
                continue
            if len(out) != len(res):
                raise RuntimeError(
                    "Backward hook returned an invalid number of grad_input, "
                    f"got {len(out)}, but expected {len(res)}"
                )
            res, replaced = out, True
        self.grad_outputs = None
        return _unwrap_all(self._unpack_none(self.input_tensors_index, res)) if replaced else None

    def _apply_on_tensors(self, cls: type, args: tuple) -> tuple[tuple, Sequence[int] | None]:
        """Route the tensors of ``args`` through a ``BackwardHookFunction`` node of class ``cls``
        (inputs or outputs: which of this object's hooks it runs); unchanged ``args`` (and
        ``None``) when nothing requires grad. (Plain loops, no generators: this runs twice per
        call of every module with backward hooks.)"""
        if not grad_mode._state.enabled:
            return args, None
        if len(args) == 1 and isinstance(args[0], Tensor):  # the usual case, without the scans
            t = args[0]
            if not t._requires_grad:
                return args, None
            return (_identity_one(t, self.transparent, self, cls),), _FIRST
        else:
            tensors_idx = [i for i, arg in enumerate(args) if isinstance(arg, Tensor)]
            tensors = [args[i] for i in tensors_idx]
        for t in tensors:
            if t._requires_grad:
                break
        else:
            return args, None
        new_tensors = _identity(tensors, self.transparent, self, cls)
        if len(tensors_idx) == len(args) and type(args) is tuple:
            return new_tensors, tensors_idx
        arg_list = list(args)
        for idx, val in zip(tensors_idx, new_tensors, strict=True):
            arg_list[idx] = val
        out = tuple(arg_list) if type(args) is tuple else type(args)(*arg_list)
        return out, tensors_idx

    def setup_input_hook(self, args: tuple) -> tuple:
        """Wrap the module's positional inputs; call before forward."""
        res, input_idx = self._apply_on_tensors(_identity_node_classes()[0], args)
        self.n_inputs = len(args)
        self.input_tensors_index = input_idx
        return res

    def setup_output_hook(self, args: Any) -> Any:
        """Wrap the module's output (a tensor or a tuple); call after the forward hooks."""
        is_tuple = isinstance(args, tuple)
        res, output_idx = self._apply_on_tensors(_identity_node_classes()[1], args if is_tuple else (args,))
        self.n_outputs = len(args) if is_tuple else 1
        self.output_tensors_index = output_idx
        return res if is_tuple else res[0]

    def _output_hook(self, _: tuple, grad_output: list) -> tuple | None:
        self.grad_outputs = _wrap_all(grad_output)
        if len(grad_output) != self.n_outputs:  # some outputs are not tensors: None in their places
            self.grad_outputs = self._pack_with_none(self.output_tensors_index, self.grad_outputs, self.n_outputs)
        replaced = False
        if self.user_pre_hooks:
            expected_len = len(self.grad_outputs)
            for user_pre_hook in self.user_pre_hooks:
                hook_grad_outputs = user_pre_hook(self.module, self.grad_outputs)
                if hook_grad_outputs is None:
                    continue
                actual_len = len(hook_grad_outputs)
                if actual_len != expected_len:
                    raise RuntimeError("Backward pre hook returned an invalid number of grad_output, "
                                       f"got {actual_len}, but expected {expected_len}")
                self.grad_outputs, replaced = hook_grad_outputs, True
        # Kept aside: the no-input case below clears ``self.grad_outputs`` but must return it.
        local_grad_outputs = self.grad_outputs
        if self.input_tensors_index is None:
            if not self.transparent:  # an observer expects no grad_input: nothing to warn about
                warnings.warn(_NO_INPUT_GRAD_WARNING, stacklevel=5)
            grad_inputs = self._pack_with_none([], (), self.n_inputs)
            for user_hook in self.user_hooks:
                res = user_hook(self.module, grad_inputs, self.grad_outputs)
                if res is not None and not (isinstance(res, tuple) and all(el is None for el in res)):
                    raise RuntimeError("Backward hook for Modules where no input requires gradient "
                                       "should always return None or None for all gradients.")
            self.grad_outputs = None
        if local_grad_outputs is None or not (replaced or _has_none(grad_output)):
            return None  # the node's outputs already are these arrays (it passes them through)
        return _unwrap_all(self._unpack_none(self.output_tensors_index, local_grad_outputs))


def _has_none(arrays: list) -> bool:
    """Some gradient missing (``None``): the node passed zeros for it, the hooks saw ``None``."""
    for a in arrays:
        if a is None:
            return True
    return False


def _wrap_all(arrays: Any) -> tuple:
    """Gradients as the hooks see them: Tensors (``None`` where no gradient arrived)."""
    wrap = Tensor._wrap
    if len(arrays) == 1:  # the usual case, without the list
        a = arrays[0]
        return (None if a is None else wrap(a),)
    return tuple([None if a is None else wrap(a) for a in arrays])


def _unwrap_all(tensors: Any) -> tuple:
    return tuple([None if t is None else t._data for t in tensors])
