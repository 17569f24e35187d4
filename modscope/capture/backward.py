"""Module backward, seen without changing what the program may do: torch's backend.

torch's full backward hooks route every input and output of a hooked module through an identity
``BackwardHookFunction``, and torch then forbids updating those outputs in place:
``nn.ReLU(inplace=True)`` after a hooked layer, or a ResNet's ``out += identity``, raise
"Output 0 of BackwardHookFunction is a view and is being modified inplace". An observer must
not make a working program fail, so modscope does not use them on torch. It watches the same
moments through hooks that change nothing, written against torch's autograd API (``Autograd``
below), which the engine provides under the same names: the observer runs on both, and records
the same firing order on both (``tests/capture/engine/test_backward_observer.py``), though the
engine's backend keeps its own full backward hooks, which are cheaper there and exact (see
``capture/engine``):

- ``backward_pre`` of a module call: a tensor hook on each of its outputs (torch runs it just
  before the output's node, when that output's gradient is complete); the backward begins when
  the first output's gradient arrives, and the event, which carries every output's gradient as
  torch's would, is sent once the others have arrived too, or before anything else is sent, or
  when the backward ends (an output that gets no gradient: ``None``). A tensor hook sees the
  gradient of the value the module produced even if the program later updated it in place
  (torch's documented rule); a tensor updated in place gets its hooks anew on its new value.
- ``backward``: the call's *boundary nodes* (nodes the call created, found by walking back from
  its outputs within the sequence numbers it used, that consume one of its inputs) get a node
  post-hook; when the last has run, the gradients they sent to each input are summed, which is
  what torch's identity node would have passed to a full backward hook. A call whose inputs
  need no gradient fires ``backward`` right after ``backward_pre`` (as torch does); an output
  that is an input passed through hands its gradient straight on, and the calls around it that
  received that input wait for it. A call none of whose inputs this backward reaches
  (``backward(inputs=...)``) fires no ``backward``, as torch's identity node would not run.

This gives torch's firing order on chains, nesting, reuse and residual blocks (tested against
torch's own hooks, ``tests/capture/torch/test_trace_torch.py``); in a branched graph two
independent branches may interleave differently, since torch would run an identity node at its
own priority (a branch behind a ``detach`` runs after the call's ``backward`` here).
``grad_output`` has one entry per output (tuple elements, or the leaves of other containers),
``grad_input`` one per positional argument (``None`` for non-tensors), as torch's full hooks give
them; where no tensor hook can tell uses apart they differ: an output that is an input passed
through (or that the module itself uses again) gets the gradient of all the tensor's uses, and a
tensor passed as several arguments gets its whole gradient at the last of them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from .attribution import CALL_KEY, MODULE_KEY
from .values import container_values, tensors_in


class Autograd(NamedTuple):
    """The pieces of a framework's autograd the observer uses, by torch's names: torch's own
    (``capture/torch``) or the engine's (``capture/engine``)."""

    Tensor: type  # torch.Tensor
    is_grad_enabled: Callable[[], bool]  # torch.is_grad_enabled
    sequence_nr: Callable[[], int]  # torch._C._autograd._get_sequence_nr: the next node's number
    gradient_edge: Callable[[Any], Any]  # torch.autograd.graph.get_gradient_edge
    queue_callback: Callable[[Callable[[], None]], None]  # Variable._execution_engine.queue_callback
    current_node: Callable[[], Any]  # torch._C._current_autograd_node
    will_run: Callable[[Any], bool]  # torch._C._will_engine_execute_node
    # ``add_hook(t, fn)``: what ``t.register_hook(fn)`` does, without the handle the observer
    # would never use (it leaves its hooks on the graph); returns the handles it made, which
    # ``RemovableHandle.next_id`` counted. ``None``: ``register_hook`` itself (one handle).
    add_hook: Callable[[Any, Callable[[Any], None]], int] | None = None


class BackwardObserver:
    """Calls ``on_pre(module, grad_output)`` and ``on_post(module, grad_input, grad_output)`` as
    each module call's backward begins and ends, for the calls ``enter``/``leave`` were told of."""

    def __init__(self, on_pre: Callable[..., Any], on_post: Callable[..., Any], autograd: Autograd) -> None:
        self.on_pre, self.on_post = on_pre, on_post
        self.autograd = autograd
        self.closed = False
        # Hook handles this observer made (tensor and node hooks): torch counts every handle in
        # ``RemovableHandle.next_id``, which the recorder reads to tell that the *user* added a
        # hook; it subtracts these.
        self.handles = 0
        self._waiting: list[_Call] = []  # calls whose backward has begun, their backward_pre not yet sent
        self._open: list[_Frame] = []  # the calls in forward, outermost first

    def close(self) -> None:
        """Hooks already on a live graph stay there, silent, until the graph is freed."""
        self.closed = True
        self._waiting.clear()

    def wait(self, call: _Call) -> None:
        """``call``'s first output gradient has arrived: its ``backward_pre`` waits for the others
        (torch's full hooks get every output's gradient), but no longer than until this observer
        sends anything else, or until the backward ends (when an output gets no gradient)."""
        if not self._waiting:
            try:
                self.autograd.queue_callback(self.flush)
            except RuntimeError:  # not inside torch's engine (nothing would flush): send it now
                self._waiting.append(call)
                self.flush()
                return
        self._waiting.append(call)

    def flush(self) -> None:
        """Send the waiting ``backward_pre`` events, in the order their calls' backward began."""
        while self._waiting and not self.closed:
            self._waiting.pop(0).begin()

    def enter(self, args: tuple) -> tuple | None:
        """At the call's forward pre-hook: where its inputs' gradients go (``None`` without grad)."""
        api = self.autograd
        if not api.is_grad_enabled():
            return None
        tensor = api.Tensor
        # (loops, not comprehensions: each is a function call before Python 3.12, and this runs
        # at every module call)
        edges, targets = [], {}  # ``edges`` keeps the nodes alive
        for i, a in enumerate(args):
            if isinstance(a, tensor) and a.requires_grad:
                node, nr = edge = self._edge(a)
                edges.append((i, edge))
                targets[(id(node), nr)] = i
        frame = _Frame(targets)
        self._open.append(frame)
        return api.sequence_nr(), len(args), edges, frame, len(self._open) - 1

    def leave(self, module: Any, entered: tuple, args: tuple, output: Any,
              label: tuple[str, int] | None = None) -> bool:
        """At the call's forward hook: hook its outputs and its boundary nodes. With ``label``
        (``(path, call)``), also label the nodes the call created as ``attribution.label_call``
        would, in the same walk; returns whether it did (else the caller labels them)."""
        start, n_args, _, frame, depth = entered
        del self._open[depth:]
        outputs = self._outputs(output)
        hooked = []
        for i, t in enumerate(outputs):
            if t.requires_grad:
                hooked.append((i, t))
        # The walk sets ``label_call``'s labels only where it starts from the same tensors: a
        # tuple holding containers has tensors ``label_call`` reaches and the observer does not.
        if label is not None and type(output) is tuple and any(container_values(o) is not None for o in output):
            label = None
        if not hooked:
            return label is not None  # nothing requires grad: no node to label either
        targets = frame.targets
        through, passed = {}, []
        boundary = _walk(hooked, targets, start, self.autograd.sequence_nr(), label) if targets or label else []
        for i, t in hooked if targets else ():  # no input needs grad (a model's first layer): none passes
            node, nr = self._edge(t)
            key = (id(node), nr)
            j = targets.get(key)
            if j is not None:
                through[i] = j
                passed.append(key)
        # An inner call that returns one of this call's inputs as it is sees its gradient only
        # when that input's gradient is complete, after this call's own nodes: torch's identity
        # nodes would still run its backward inside this call's, so this call waits for it.
        waits = frame.passing
        call = _Call(self, module, len(outputs), len(hooked), n_args, len(boundary) + len(waits), through)
        for c, _ in waits:
            c.parents.append(call)
        if self._open:  # the call around this one waits for those that pass one of its own inputs
            outer = self._open[-1]
            outer.passing += [(c, key) for c, key in waits + [(call, key) for key in passed] if key in outer.targets]
        add_hook = self.autograd.add_hook
        for i, t in hooked:
            _first_on(t, call, i, add_hook)
        for node, hits in boundary:
            node.register_hook(call.node_hook(hits))
        self.handles += len(boundary)
        return label is not None

    def _edge(self, t: Any) -> tuple[Any, int]:
        """Where ``t``'s gradient goes: ``(node, output_nr)``, read directly for a tensor made by an
        op (``gradient_edge``, a Python function in torch, only for a leaf's ``AccumulateGrad``)."""
        node = t.grad_fn
        if node is None:
            edge = self.autograd.gradient_edge(t)
            return edge.node, edge.output_nr
        return node, t.output_nr

    def _outputs(self, output: Any) -> list[Any]:
        """The values torch's full hooks give gradients for: a tuple's elements, a tensor alone,
        or (an extension) the tensors inside any other container."""
        tensor = self.autograd.Tensor
        if isinstance(output, tensor):
            return [output]
        if type(output) is tuple:
            return [o if isinstance(o, tensor) else _NotTensor for o in output]
        return list(tensors_in(output))

    def input_runs(self, pos: int) -> bool:
        """In a node post-hook: whether this backward runs the node behind the hooked node's
        input ``pos`` (not when ``backward(inputs=...)`` or ``autograd.grad`` leave it out)."""
        api = self.autograd
        node = api.current_node()
        nxt = node.next_functions[pos][0] if node is not None else None
        if nxt is None:
            return False
        try:
            return api.will_run(nxt)
        except RuntimeError:  # a leaf under torch's autograd.grad: torch cannot tell
            return True


def _first_on(t: Any, call: _Call, i: int, add_hook: Callable[[Any, Callable[[Any], None]], int] | None) -> None:
    """Have ``call.on_output(i, grad)`` run on ``t``'s gradient before the calls this observer
    put there earlier.

    Nested modules often return the same tensor object (a ``Sequential``'s last layer's output is
    the ``Sequential``'s); the outer call's forward hook runs after the inner one's, but torch
    fires the outer module's ``backward_pre`` first. So one tensor hook per tensor runs a list
    that each later call joins at the front.

    The list belongs to the tensor's current value: a tensor updated in place since (``relu_``,
    ``out += x``) has a new ``grad_fn``, and a tensor hook registered before the update sees the
    gradient of the old value, so the call gets a new list on the new value. A tensor that
    outlives a forward (an input batch used again, a parameter a module returns) keeps its list:
    the calls of earlier forwards whose backward has ended (or whose trace has) are dropped from
    it, or they would fire again at every later backward."""
    node = t.grad_fn
    value = None if node is None else node._sequence_nr()
    held = t.__dict__.get(_HOOKS)
    if held is None or held[0] != value:
        calls: list[tuple[_Call, int]] = []
        t.__dict__[_HOOKS] = (value, calls)
        if add_hook is None:
            t.register_hook(_run_all(calls))
            call.observer.handles += 1
        else:
            call.observer.handles += add_hook(t, _run_all(calls))
    else:
        calls = held[1]
        calls[:] = [entry for entry in calls if not entry[0].stale]
    calls.insert(0, (call, i))


_HOOKS = "_modscope_backward_hooks"


def _run_all(calls: list[tuple[_Call, int]]) -> Callable[[Any], None]:
    def run(grad: Any) -> None:
        for call, i in list(calls):
            call.on_output(i, grad)
    return run


class _NotTensorType:
    requires_grad = False


_NotTensor = _NotTensorType()


def _walk(hooked: list[tuple[int, Any]], targets: dict[tuple[int, int], int], start: int, end: int,
          label: tuple[str, int] | None) -> list[tuple[Any, list[tuple[int, int]]]]:
    """The call's *boundary*: the nodes it created (sequence numbers in ``[start, end)``)
    reachable from its outputs that feed one of its inputs, as ``(node, [(position in
    next_functions, input index)])``. With ``label`` (``(path, call)``), every node of the walk
    without a module gets it (``attribution.label_call``'s labels: its walk is this one; the
    inputs' nodes were made before ``start``, and an ``AccumulateGrad`` ranks above ``end``)."""
    stack = []
    for _, t in hooked:
        node = t.grad_fn
        if node is not None and start <= node._sequence_nr() < end:
            stack.append(node)
    # The inputs' edges by node, then output number: most edges lead to no input, and this tells
    # so without building a key tuple per edge (this loop runs over every node of every call).
    by_node: dict[int, dict[int, int]] = {}
    for (key, nr), j in targets.items():
        by_node.setdefault(key, {})[nr] = j
    seen: set[int] = set()
    found = []
    push, pop, mark = stack.append, stack.pop, seen.add
    while stack:
        node = pop()
        key = id(node)
        if key in seen:
            continue
        mark(key)
        if label is not None:
            meta = node.metadata
            if MODULE_KEY not in meta:
                meta[MODULE_KEY], meta[CALL_KEY] = label
        hits = None
        pos = -1
        for nxt, nr in node.next_functions:
            pos += 1
            if nxt is None:
                continue
            key = id(nxt)
            nrs = by_node.get(key)
            j = None if nrs is None else nrs.get(nr)
            if j is not None:
                if hits is None:
                    hits = [(pos, j)]
                else:
                    hits.append((pos, j))
            elif key not in seen and start <= nxt._sequence_nr() < end:  # AccumulateGrad ranks above
                push(nxt)
        if hits is not None:
            found.append((node, hits))
    return found


class _Frame:
    """A call in forward: its inputs' gradient edges (``(id(node), output_nr) -> argument``) and
    the calls inside it that returned one of those inputs as it is, with its edge."""

    __slots__ = ("passing", "targets")

    def __init__(self, targets: dict[tuple[int, int], int]) -> None:
        self.targets = targets
        self.passing: list[tuple[_Call, tuple[int, int]]] = []


class _Call:
    """One module call's backward in progress: the gradients seen so far."""

    __slots__ = ("arrived", "begun", "done", "grad_in", "grad_out", "module", "n_boundary", "n_hooked", "n_in",
                 "n_out", "observer", "parents", "reached", "remaining", "through")

    def __init__(self, observer: BackwardObserver, module: Any, n_out: int, n_hooked: int, n_in: int,
                 n_boundary: int, through: dict[int, int]) -> None:
        self.observer, self.module = observer, module
        self.n_out, self.n_hooked, self.n_in = n_out, n_hooked, n_in
        self.n_boundary, self.through = n_boundary, through
        self.done = False
        self.parents: list[_Call] = []  # calls that wait for this one to end (see ``leave``)
        self._reset()

    def _reset(self) -> None:
        self.grad_out: list[Any] = [None] * self.n_out
        self.grad_in: list[Any] = [None] * self.n_in
        self.arrived = 0  # output gradients seen
        self.reached = False  # a gradient reached an input (or will: its node runs)
        self.begun = False  # backward_pre sent
        self.remaining = self.n_boundary

    @property
    def stale(self) -> bool:
        """Its backward has run (a later forward's call replaces it) or its trace has ended."""
        return self.done or self.observer.closed

    def on_output(self, i: int, grad: Any) -> None:
        """Output ``i``'s gradient (``None``: torch ran its node without one)."""
        if self.observer.closed:
            return
        self.grad_out[i] = grad
        j = self.through.get(i)
        if j is not None:
            self.reached = True
            if grad is not None:
                self.grad_in[j] = grad if self.grad_in[j] is None else self.grad_in[j] + grad
        self.arrived += 1
        if self.begun:
            return
        if self.arrived == 1:
            self.observer.wait(self)
        if self.arrived >= self.n_hooked:
            self.observer.flush()

    def begin(self) -> None:
        """Send ``backward_pre`` (``flush`` calls this); and ``backward`` at once if nothing is left."""
        self.begun = True
        self.observer.on_pre(self.module, tuple(self.grad_out))
        if self.remaining == 0:
            self._finish()

    def node_hook(self, hits: list[tuple[int, int]]) -> Callable[..., None]:
        def hook(grad_inputs: tuple, grad_outputs: tuple) -> None:
            if self.observer.closed:
                return
            for pos, j in hits:
                g = grad_inputs[pos]
                if g is not None:
                    self.grad_in[j] = g if self.grad_in[j] is None else self.grad_in[j] + g
                    self.reached = True
                elif not self.reached:
                    self.reached = self.observer.input_runs(pos)
            self._done_one()
        return hook

    def _done_one(self, reached: bool = False) -> None:
        """A boundary node has run, or an inner call this one waits for has ended (``reached``:
        its gradient reached the input they share)."""
        self.reached = self.reached or reached
        self.remaining -= 1
        if self.remaining == 0:
            if self.begun:
                self._finish()
            elif self.arrived:
                self.observer.flush()  # sends this call's backward_pre, then its backward

    def _finish(self) -> None:
        self.observer.flush()  # calls whose backward began before this one ends
        grad_in, grad_out = tuple(self.grad_in), tuple(self.grad_out)
        reached = self.reached or not self.n_boundary
        self.done = True
        self._reset()  # a second backward through a retained graph starts afresh
        if reached:  # else torch's identity node on the inputs would not run (``backward(inputs=...)``)
            self.observer.on_post(self.module, grad_in, grad_out)
        for parent in self.parents:  # innermost first
            parent._done_one(reached)
