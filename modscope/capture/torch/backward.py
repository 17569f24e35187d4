"""Module backward in torch, seen without changing what the program may do.

torch's full backward hooks route every input and output of a hooked module through an identity
``BackwardHookFunction``, and torch then forbids updating those outputs in place:
``nn.ReLU(inplace=True)`` after a hooked layer, or a ResNet's ``out += identity``, raise
"Output 0 of BackwardHookFunction is a view and is being modified inplace". An observer must
not make a working program fail, so modscope does not use them on torch. It watches the same
moments through hooks that change nothing:

- ``backward_pre`` of a module call: a tensor hook on each of its outputs (torch runs it just
  before the output's node, when that output's gradient is complete); the event fires when the
  first output's gradient arrives. A tensor hook sees the gradient of the value the module
  produced even if the program later updated it in place (torch's documented rule).
- ``backward``: the call's *boundary nodes* (nodes the call created, found by walking back from
  its outputs within the sequence numbers it used, that consume one of its inputs) get a node
  post-hook; when the last has run, the gradients they sent to each input are summed, which is
  what torch's identity node would have passed to a full backward hook. A call whose inputs
  need no gradient fires ``backward`` right after ``backward_pre`` (as torch does); an output
  that is an input passed through hands its gradient straight on.

This gives torch's firing order on chains, nesting, reuse and residual blocks (tested against
torch's own hooks); in a branched graph two independent branches may interleave differently,
since torch would run an identity node at its own priority. ``grad_output`` has one entry per
output (tuple elements, or the leaves of other containers), ``grad_input`` one per positional
argument (``None`` for non-tensors), as torch's full hooks give them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch._C._autograd import _get_sequence_nr
from torch.autograd.graph import get_gradient_edge

from ..attribution import tensors_in

_Tensor = torch.Tensor


class BackwardObserver:
    """Calls ``on_pre(module, grad_output)`` and ``on_post(module, grad_input, grad_output)`` as
    each module call's backward begins and ends, for the calls ``enter``/``leave`` were told of."""

    def __init__(self, on_pre: Callable[..., Any], on_post: Callable[..., Any]) -> None:
        self.on_pre, self.on_post = on_pre, on_post
        self.closed = False

    def close(self) -> None:
        """Hooks already on a live graph stay there, silent, until the graph is freed."""
        self.closed = True

    def enter(self, args: tuple) -> tuple | None:
        """At the call's forward pre-hook: where its inputs' gradients go (``None`` without grad)."""
        if not torch.is_grad_enabled():
            return None
        edges = [(i, get_gradient_edge(a)) for i, a in enumerate(args) if isinstance(a, _Tensor) and a.requires_grad]
        return _get_sequence_nr(), len(args), edges

    def leave(self, module: Any, entered: tuple, args: tuple, output: Any) -> None:
        """At the call's forward hook: hook its outputs and its boundary nodes."""
        start, n_args, edges = entered
        outputs = _outputs(output)
        hooked = [(i, t) for i, t in enumerate(outputs) if t.requires_grad]
        if not hooked:
            return
        targets = {(id(edge.node), edge.output_nr): i for i, edge in edges}
        boundary = _boundary(hooked, targets, start, _get_sequence_nr())
        through = {}
        for i, t in hooked:
            edge = get_gradient_edge(t)
            j = targets.get((id(edge.node), edge.output_nr))
            if j is not None:
                through[i] = j
        call = _Call(self, module, len(outputs), n_args, len(boundary), through)
        for i, t in hooked:
            _first_on(t, call.output_hook(i))
        for node, hits in boundary:
            node.register_hook(call.node_hook(hits))


def _outputs(output: Any) -> list[Any]:
    """The values torch's full hooks give gradients for: a tuple's elements, a tensor alone, or
    (an extension) the tensors inside any other container."""
    if isinstance(output, _Tensor):
        return [output]
    if type(output) is tuple:
        return [o if isinstance(o, _Tensor) else _NotTensor for o in output]
    return list(tensors_in(output))


def _first_on(t: torch.Tensor, hook: Callable[[torch.Tensor], None]) -> None:
    """Run ``hook`` on ``t``'s gradient before the hooks this observer put there earlier.

    Nested modules often return the same tensor object (a ``Sequential``'s last layer's output is
    the ``Sequential``'s); the outer call's forward hook runs after the inner one's, but torch
    fires the outer module's ``backward_pre`` first. So one tensor hook per tensor runs a list
    that each later call joins at the front."""
    hooks = t.__dict__.get(_HOOKS)
    if hooks is None:
        hooks = t.__dict__[_HOOKS] = []
        t.register_hook(_run_all(hooks))
    hooks.insert(0, hook)


_HOOKS = "_modscope_backward_hooks"


def _run_all(hooks: list[Callable[[torch.Tensor], None]]) -> Callable[[torch.Tensor], None]:
    def run(grad: torch.Tensor) -> None:
        for hook in list(hooks):
            hook(grad)
    return run


class _NotTensorType:
    requires_grad = False


_NotTensor = _NotTensorType()


def _boundary(hooked: list[tuple[int, torch.Tensor]], targets: dict[tuple[int, int], int], start: int,
              end: int) -> list[tuple[Any, list[tuple[int, int]]]]:
    """The nodes the call created (sequence numbers in ``[start, end)``) reachable from its
    outputs that feed one of its inputs: ``(node, [(position in next_functions, input index)])``."""
    stack = [t.grad_fn for _, t in hooked if t.grad_fn is not None and start <= t.grad_fn._sequence_nr() < end]
    seen: set[int] = set()
    found = []
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        hits = []
        for pos, (nxt, nr) in enumerate(node.next_functions):
            if nxt is None:
                continue
            j = targets.get((id(nxt), nr))
            if j is not None:
                hits.append((pos, j))
            elif id(nxt) not in seen and start <= nxt._sequence_nr() < end:  # AccumulateGrad ranks above
                stack.append(nxt)
        if hits:
            found.append((node, hits))
    return found


class _Call:
    """One module call's backward in progress: the gradients seen so far."""

    def __init__(self, observer: BackwardObserver, module: Any, n_out: int, n_in: int, n_boundary: int,
                 through: dict[int, int]) -> None:
        self.observer, self.module = observer, module
        self.n_out, self.n_in, self.n_boundary, self.through = n_out, n_in, n_boundary, through
        self._reset()

    def _reset(self) -> None:
        self.grad_out: list[Any] = [None] * self.n_out
        self.grad_in: list[Any] = [None] * self.n_in
        self.begun = False
        self.remaining = self.n_boundary

    def output_hook(self, i: int) -> Callable[[torch.Tensor], None]:
        def hook(grad: torch.Tensor) -> None:
            if self.observer.closed:
                return
            self.grad_out[i] = grad
            j = self.through.get(i)
            if j is not None:
                self.grad_in[j] = grad if self.grad_in[j] is None else self.grad_in[j] + grad
            if not self.begun:
                self.begun = True
                self.observer.on_pre(self.module, tuple(self.grad_out))
                if self.remaining == 0:
                    self._finish()
        return hook

    def node_hook(self, hits: list[tuple[int, int]]) -> Callable[..., None]:
        def hook(grad_inputs: tuple, grad_outputs: tuple) -> None:
            if self.observer.closed:
                return
            for pos, j in hits:
                g = grad_inputs[pos]
                if g is not None:
                    self.grad_in[j] = g if self.grad_in[j] is None else self.grad_in[j] + g
            self.remaining -= 1
            if self.remaining == 0 and self.begun:
                self._finish()
        return hook

    def _finish(self) -> None:
        grad_in, grad_out = tuple(self.grad_in), tuple(self.grad_out)
        self._reset()  # a second backward through a retained graph starts afresh
        self.observer.on_post(self.module, grad_in, grad_out)
