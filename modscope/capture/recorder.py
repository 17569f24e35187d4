"""``modscope.trace``: turn a framework's hook firings into events (engine or torch alike).

Where things happen:
- ``_attach``: which hooks are registered (per module with a model, global without one);
- ``_on_forward_pre`` / ``_on_forward`` / ``_on_backward_pre`` / ``_on_backward``: one event each
  (on torch, backward arrives through ``capture/backward.py``);
- ``UserHook`` (``user_hooks.py``): the user's own hooks, whose firing becomes ``hook`` events;
- ``ParamEvents`` (``params.py``): the optimizer hooks: ``step`` and ``params`` events, step advance;
- ``Delivery`` (``delivery.py``): the only place events are created and handed to sinks.

The framework-specific half (registering hooks, summarising tensors, parameter statistics, the
autograd graph) is the ``Backend`` of the traced model (``capture/backends.py``); this file and
the three above are the shared half, written once. Every hook body catches its exceptions: a
failure inside the tracer becomes an ``error`` event and never reaches the user's training.
"""

from __future__ import annotations

import fnmatch
import math
import os
import sys
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from .. import __version__
from .._gc import gc_paused
from ..events.files import save_lines
from ..events.log import EventLog
from ..events.records import STATS_KEYS, event_line, record_line
from ..events.schema import SCHEMA_VERSION, finite_or_none
from ..events.sinks import JsonlSink, Sink, TeeSink
from ..events.trace import EventSource
from .attribution import label_call
from .backends import Backend, UntraceableError, backend_for, global_backend, load
from .compiled import ETYPE as COMPILED
from .compiled import EagerSwitch, WrapperSearch, compiled_note, user_stacklevel, watch_dynamo_import
from .delivery import Delivery
from .graph_event import model_tensors
from .hook_handles import HookHandles
from .params import ParamEvents
from .ranks import stamp_rank
from .sampling import DEFAULT_FIRST, BackwardWatch, DetailPolicy, scalar_of
from .user_hooks import UserHook
from .values import tensors_in

DEFAULT_MEMORY_WITH_SINK = 10_000  # events kept in memory beside a sink (which gets them all)
# The default bounds of a trace's memory without a sink: the last 64 steps, and at most 200,000
# events (~66 MB of records at ~330 bytes each; 5 steps of a 10,000-module model), oldest steps
# evicted whole and counted (``dropped``, ``dropped_steps``). Unbounded: keep_steps=max_events=None.
DEFAULT_KEEP_STEPS = 64
DEFAULT_MAX_EVENTS = 200_000
AUTO: Literal["auto"] = "auto"  # max_events: DEFAULT_MEMORY_WITH_SINK with a sink, else DEFAULT_MAX_EVENTS
_NAN, _INF = STATS_KEYS.index("nan"), STATS_KEYS.index("inf")
  # recorded module events delivered at the latest after this many (a step without an optimizer)



def metric_value(name: str, value: Any) -> float | None:
    """A logged metric as a plain float. A tensor is detached first: ``float()`` of one that
    requires grad makes torch (and the engine, as torch) warn about converting it."""
    detach = getattr(value, "detach", None)
    try:
        return finite_or_none(float(detach() if callable(detach) else value))
    except (TypeError, ValueError, RuntimeError) as error:  # a string, a list, a tensor of many values
        raise TypeError(f"modscope.log: metric {name!r} must be a number or a one-element tensor, "
                        f"not {type(value).__name__} ({error})") from None

class Recorder(Delivery, ParamEvents, EventSource):
    """Records what a model does while it runs: module calls, hooks, optimizer steps, metrics.

    ``modscope.trace`` returns a ``modscope.Trace``: this class joined to the reports of
    ``views.trace.EventTrace`` (summary, tree, timeline), so that capture reads nothing from views.

    Use as a context manager (or ``start()``/``stop()``). On exit every hook it added is removed
    and the user's own hooks are exactly as before, also when the traced code raises.
    """

    def __init__(self, model: Any = None, *, stats: bool = False,
                 include: Iterable[str] | str | None = None, exclude: Iterable[str] | str | None = None,
                 sink: Sink | None = None, max_events: int | Literal["auto"] | None = AUTO, graph: bool = True,
                 observer: Callable[[dict[str, Any]], None] | None = None, backend: str | None = None,
                 keep_steps: int | None = DEFAULT_KEEP_STEPS, spill: str | os.PathLike | None = None,
                 every: int | None = None, first: int = DEFAULT_FIRST, eager: bool | Literal["full"] = False,
                 exact_stats: bool = False) -> None:
        # torch.compile'd code run eagerly while tracing, so its hooks fire (``capture.compiled``)
        self._eager, self._undo_eager = eager, None
        self.exact_stats = exact_stats  # the params event's values' figures over every value (``params``)
        # Which steps are watched in full (per-module hooks attached), which are light
        # (``capture.sampling``); ValueError for a bad ``every``/``first`` before anything starts.
        self._policy = DetailPolicy(every, first)
        self.model = model
        # The framework's half of capture: the model's, else the one asked for; a trace without
        # either picks at ``start`` among the frameworks the program has imported by then.
        self._backend: Backend | None = None
        self._backend_name = backend
        if model is not None:
            self._use_backend(model)
        elif backend is not None:
            self._backend = load(backend)
        # Called with each event, in the traced thread (may block: pause). An observer with a true
        # ``idle`` attribute is skipped: nothing it could see would make it act (see Controller).
        self.observer = observer
        self.stats = stats
        self._stats_asked = stats  # ``stats`` is turned on for a step a breakpoint asked for in full
        self.include = _patterns(include)
        self.exclude = _patterns(exclude)
        self._filtering = bool(self.include or self.exclude)
        if spill is not None:  # every event to the file: what memory evicts is there too
            spilled = JsonlSink(spill)
            self.spill_path: Path | None = spilled.path
            sink = spilled if sink is None else TeeSink(sink, spilled)
        else:
            self.spill_path = None
        if max_events == AUTO:
            max_events = DEFAULT_MAX_EVENTS if sink is None else DEFAULT_MEMORY_WITH_SINK
        self._memory = EventLog(max_events, keep_steps)
        self._sinks: list[Sink] = [self._memory] + ([sink] if sink is not None else [])
        self._extra_sinks: list[Sink] = self._sinks[1:]  # the hot path never slices
        self._want_graph = graph
        self._seq = 0
        self._step = 0
        # An optimizer step ended step ``_step``; the next begins at its first module event (see
        # ``_advance``), so what the program does in between (a metric, an error) is this step's.
        self._step_over = False
        self._events_in_step = 0
        self._running = False
        self._handles = HookHandles()  # the hooks this trace keeps for its whole run (optimizer, global)
        self._module_handles = HookHandles()  # the per-module (or global module) hooks: full steps only
        self._full = True  # the current step is watched in full (its module hooks are attached)
        self._full_why = "every step"  # why (``sampling.DetailPolicy.detail``)
        self._modules_attached = False
        self._steps_by_detail = {"full": 0, "light": 0}  # steps ended, by detail
        self._loss: Any = None  # the scalar the step's last backward started from (``_on_backward_call``)
        self._backward_calls = 0  # in this step
        self._step_t0: int | None = None  # monotonic ns the step began (the previous one's end)
        self._watching_backward = False
        self._skipped: set[str] = set()  # modules whose backward cannot be traced (said once)
        self._light_nonfinite = False  # a light step saw a NaN/Inf in the gradients (said once)
        self._paths: dict[int, str] = {}  # id(module) -> path
        self._roots: list[Any] = []
        self._calls: dict[str, int] = {}
        self._bcalls: dict[str, int] = {}
        # (path, call, t0, observer ns at t0, start seq, backward observer's entry)
        self._fstack: list[tuple] = []
        self._bstart: dict[str, list[tuple[int, int]]] = {}  # path -> [(t0, observer ns at t0)]
        # ns the observer held the traced thread (a pause at a breakpoint): a call's duration
        # leaves out what accrued between its start and its end (see Delivery._observe).
        self._observer_ns = 0
        self._batch_rest = 0  # events of the delivery in progress still to observe (see _deliver_pending)
        self._wrapped: list[tuple[dict, int, Callable]] = []
        self._reported_nonfinite: set[str] = set()
        # optimizer id (or "step"/"buffers") -> (StatsPlan, paths); paths None: another model's optimizer
        self._plans: dict[Any, tuple[Any, list[str] | None]] = {}
        self._snapshotted: set[int] = set()  # optimizers between their pre and post step hooks
        self._opt_steps: dict[int, int] = {}
        self._graph_pending = graph
        self._errors = 0
        self._observing = False
        self._roots_of_step: list[weakref.ref] = []
        # RemovableHandle.next_id when a module's hooks (or the graph's tensor hooks) were last
        # wrapped: unchanged means nobody registered a hook since, so there is nothing to wrap.
        self._hooks_seen: dict[int, int] = {}
        self._tensor_hooks_seen = -1
        self._modules: list[tuple[str, Any]] = []  # (path, module), every root
        # Module events recorded as tuples, made into dicts at the step's end (see _record).
        self._pending: list[tuple | dict[str, Any]] = []
        self._pending_header = False  # a header event (session, model, end) is among them
        self.immediate = False  # True: every event is delivered as it happens (breakpoints)
        self._thread: int | None = None
        self._fingerprints = False  # parameter fingerprints in ``params`` events (a rank of several)
        self._backward = None  # the backend's backward observer (torch), made at ``_attach``
        # (root, path) of models given to the trace whose compiled wrapper, if any, is still to
        # be looked for at the end of a full step where none of their hooks fired
        self._silent_check: list[tuple[weakref.ref, str]] = []

    def _use_backend(self, model: Any) -> None:
        backend = backend_for(model)
        if self._backend_name is not None and backend.name != self._backend_name:
            raise UntraceableError(f"backend={self._backend_name!r} cannot trace {type(model).__name__}, "
                                   f"a {backend.name} model")
        backend.check_traceable(model)
        if self._backend is not None and self._backend is not backend:
            raise UntraceableError(f"this trace follows {self._backend.name} models; {type(model).__name__} "
                                   f"is a {backend.name} model: trace it with a trace of its own")
        self._backend = backend

    # --- lifecycle ----------------------------------------------------------------------------

    def start(self) -> Recorder:
        """Attach the hooks and emit the ``session`` (and ``model``) events."""
        if self._running:
            raise RuntimeError("this trace is already running")
        self._running = True
        self._thread = threading.get_ident()  # the traced thread: the only one that delivers
        if self._backend is None:
            self._backend = global_backend()
        if self._backend.name == "torch":
            watch_dynamo_import()  # a model compiled while the hooks are on: dynamo skips them (capture.compiled)
        if self._seq == 0:
            origin = stamp_rank()  # one rank of several (torchrun): every event says which
            self._fingerprints = origin is not None and origin["world_size"] > 1
            self._emit("session", schema=SCHEMA_VERSION, engine_version=self._backend.version,
                       framework=self._backend.name, modscope_version=__version__, pid=os.getpid(),
                       started=datetime.now(UTC).isoformat(), argv=list(sys.argv))
        self._full, self._full_why = self._policy.detail(self._step)
        self._step_t0 = time.monotonic_ns()
        if self._eager:  # compiled code runs eagerly: always, or (``"full"``) on full steps only
            full_only = self._eager == "full"
            # (``"full"`` before dynamo is imported: the stance is set once it is, ``EagerSwitch``)
            switch = EagerSwitch(wait_for_dynamo=full_only)
            switch.set(self._full if full_only else True)
            self._undo_eager = switch
        with gc_paused():  # 10,001 modules: 40,000 hook handles; the collector's rescans were 3/4 of it
            if self.model is not None:
                self._add_root(self.model, prefix="")
            self._attach()
        return self

    def stop(self) -> Recorder:
        """Remove every hook the trace added, restore the user's hooks, flush the sinks."""
        if not self._running:
            return self
        self._running = False
        if self._undo_eager is not None:
            self._undo_eager.close()
            self._undo_eager = None
        self.observer = None  # nothing may pause or interrupt the shutdown itself
        self._handles.remove_all()
        self._module_handles.remove_all()
        self._modules_attached = False
        if self._watching_backward:
            BackwardWatch.remove(self._backend.autograd, self._on_backward_call)
            self._watching_backward = False
        if self._backward is not None:
            self._backward.close()
        for hooks, key, original in self._wrapped:
            if key in hooks and isinstance(hooks[key], UserHook):
                hooks[key] = original
        self._wrapped.clear()
        self._deliver_pending()
        # What the stream lost: with sinks, what they dropped (the in-memory log is then a
        # window, and what it evicted still reached them); alone, what the log evicted.
        extra = self._sinks[1:]
        dropped = sum(s.dropped for s in extra) if extra else self._memory.dropped
        # (additive fields: how many whole steps the in-memory trace no longer holds)
        self._emit("end", status="error" if self._errors else "ok", dropped=dropped,
                   dropped_steps=0 if extra else self._memory.dropped_steps)
        for sink in self._sinks:
            self._safely(sink.flush)
        return self

    def close(self) -> None:
        """Stop and close the sinks (a file sink is complete after this)."""
        self.stop()
        for sink in self._sinks:
            self._safely(sink.close)

    def __enter__(self) -> Recorder:
        return self.start()

    def __exit__(self, etype: Any, exc: BaseException | None, tb: Any) -> None:
        if exc is not None:
            self._emit_error(exc, where="traced code", module=self._current_path())
        self.close() if len(self._sinks) > 1 else self.stop()

    # --- public API ---------------------------------------------------------------------------

    @property
    def events(self) -> list[dict[str, Any]]:
        """The events kept in memory, in order (bounded by ``keep_steps`` and ``max_events``), as
        one list of dicts, kept for later reads: for small traces. A big one is better read with
        ``iter_events`` (one dict at a time). Read from another thread while the traced one runs,
        it holds what was delivered so far (module events are delivered at each step's end)."""
        if threading.get_ident() == self._thread:
            self._deliver_pending()
            self._memory.materialize()
        return self._memory.events

    def iter_events(self) -> Iterator[dict[str, Any]]:
        """The events kept in memory, in order, each made a dict only when reached and not kept
        (memory stays flat however long the trace); ``save``, ``firing_order`` and the summaries
        read the trace this way."""
        if threading.get_ident() == self._thread:
            self._deliver_pending()
        return self._memory.iter_events()

    @property
    def dropped(self) -> int:
        """Events the in-memory trace evicted (see ``keep_steps`` and ``max_events``); with a
        ``sink`` or ``spill`` file they are still there."""
        return self._memory.dropped

    def counts(self) -> dict[str, int]:
        """What the trace has recorded so far, for a closing line: ``steps`` (training steps
        begun), ``modules`` (traced), ``events`` (emitted), ``dropped`` (lost by its sinks, or
        evicted from memory without one), ``full`` and ``light``: the steps ended so far watched
        in full and light (``capture.sampling``; a step still running is in neither)."""
        extra = self._sinks[1:]
        began = self._step or self._step_over or self._calls or self._bcalls or self._backward_calls
        return {"steps": self._step + 1 if began else 0,
                "modules": len(self._modules), "events": self._seq,
                "dropped": sum(s.dropped for s in extra) if extra else self._memory.dropped,
                **self._steps_by_detail}

    @property
    def dropped_steps(self) -> int:
        """Training steps the in-memory trace evicted entirely (see ``keep_steps``)."""
        return self._memory.dropped_steps

    def save(self, path: str | os.PathLike) -> None:
        """Write the events kept in memory to a JSON Lines file (gzip when ``path`` ends in
        ``.gz``), streamed: the records are encoded as they are (``records.record_line``), a
        batch at a time, never the whole file nor every event dict at once. When the trace
        evicted older steps, the file's ``end`` event says what it lacks (``_end_for_file``).
        Saved before ``stop``, the file has no ``end`` event: it loads as ``truncated``."""
        if threading.get_ident() == self._thread:
            self._deliver_pending()
        save_lines(map(self._line_for_file, self._memory.iter_items()), path)

    def _line_for_file(self, item: tuple | dict[str, Any]) -> bytes:
        if type(item) is tuple:
            return record_line(item)
        return event_line(self._end_for_file(item) if item["kind"] == "end" else item)

    def _end_for_file(self, end: dict[str, Any]) -> dict[str, Any]:
        """The ``end`` event ``save`` writes: its ``dropped`` counts the events the file lacks
        (those the in-memory trace evicted; with a sink they reached it, so the live ``end``
        leaves them out), ``dropped_steps`` the steps missing whole, and ``first_step`` the
        oldest step the file holds. Nothing evicted: the ``end`` event as it is."""
        memory = self._memory  # it received every event: what the file lacks is what it evicted
        if not memory.dropped:
            return end
        return {**end, "dropped": memory.dropped, "dropped_steps": memory.dropped_steps,
                "first_step": memory.first_step}

    def watch(self, model: Any) -> Recorder:
        """Narrow a running global trace (``model=None``) to ``model``, or start tracing it.
        Events keep their sequence: one session, one stream."""
        if self.model is model:
            return self
        self._use_backend(model)
        was_running = self._running
        if was_running:
            self._handles.remove_all()
            self._module_handles.remove_all()
            self._modules_attached = False
        self.model = model
        if id(model) not in self._paths or self._paths[id(model)] != "":
            self._paths.clear()
            self._roots.clear()
            self._modules.clear()
            self._add_root(model, prefix="")
        if was_running:
            self._attach()
        else:
            self.start()
        return self

    def log(self, **metrics: float) -> None:
        """Record user metrics for the current step: ``trace.log(loss=loss.item())``."""
        self._emit("metric", values={name: metric_value(name, v) for name, v in metrics.items()})

    def step(self) -> None:
        """End the current training step (optimizer steps do this by themselves): the events
        after this call are the next step's."""
        self._deliver_pending()
        if self._step_over:  # an optimizer step ended it already: the next one begins now
            self._begin_step()
        elif self._events_in_step or self._backward_calls:
            if self._policy.sampling:  # the step's detail, loss and gradient norm (no optimizer: none of its own)
                self._emit_step_event("", self._step, [], list(self._param_paths().values()))
            if self._full or self._fingerprints:
                self._emit_params(None)
            self._advance()
            self._begin_step()

    def set_detail_policy(self, every: int | None = None, first: int = DEFAULT_FIRST) -> None:
        """Choose again which steps are watched in full (``modscope.watch(model, every=...)`` in a
        script under ``modscope run``); from the next step on."""
        self._policy = DetailPolicy(every, first)

    def full_detail(self, why: str) -> None:
        """Watch the next step in full detail (``why`` says who asked: the viewer, a breakpoint);
        safe to call from any thread (the traced one acts on it when the current step ends)."""
        self._policy.requested = why

    @property
    def detail(self) -> str:
        """``"full"`` or ``"light"``: how the current step is watched (``capture.sampling``)."""
        return "full" if self._full else "light"

    def record_graph(self, output: Any, label: tuple[str, int, int] | None = None) -> None:
        """Emit a ``graph`` event for the autograd graph behind ``output`` now. ``label``
        (``(path, call, start_seq)``, backends with ``graph_labels``): the call that returned
        ``output`` has its nodes labelled in the graph's walk first, as ``label_call`` would."""
        if label is None:
            self._emit("graph", **self._backend.graph_event_fields(output, self._param_paths()))
        else:
            self._emit("graph", **self._backend.graph_event_fields(output, self._param_paths(), label))

    def _advance(self) -> None:
        """End step ``_step``. The next begins at its first module (or module hook) event
        (``_begin_step``): an event's step is the iteration of the training loop it happened in,
        so a metric logged or an error raised after ``optimizer.step()`` in iteration 30 is step
        30's (0-based, like the loop's own counter), as is a pause at the step's end."""
        self._deliver_pending()
        if self._silent_check and self._full and self._modules_attached:
            self._check_silent_roots()  # (before the step's calls are forgotten)
        self._backend.forget_arrays()  # this step's activations need no names any more
        self._step_over = True
        self._events_in_step = 0
        self._backward_calls = 0
        self._loss = None
        self._calls.clear()
        self._bcalls.clear()
        self._steps_by_detail["full" if self._full else "light"] += 1
        self._step_t0 = time.monotonic_ns()
        if self._policy.sampling and self._running:
            self._set_detail(*self._policy.detail(self._step + 1))
        for sink in self._sinks:
            self._safely(sink.flush)

    def _begin_step(self) -> None:
        self._step_over = False
        self._step += 1

    def _set_detail(self, full: bool, why: str) -> None:
        """Watch the coming step in full (attach the per-module hooks) or light (remove them).
        A step a breakpoint asked for also takes tensor statistics, so that the first NaN/Inf
        is reported at the module where it appears."""
        self._full, self._full_why = full, why
        if self._eager == "full" and self._undo_eager is not None:
            self._undo_eager.set(full)  # light steps run compiled (no module hooks to fire anyway)
        self.stats = self._stats_asked or why.startswith("breakpoint")
        if self.stats and not self._stats_asked:
            self._reported_nonfinite.clear()  # report it again, now at its module
        if full and not self._modules_attached:
            with gc_paused():
                self._attach_modules()
        elif not full and self._modules_attached:
            self._module_handles.remove_all()
            self._modules_attached = False
            self._fstack.clear()
            self._bstart.clear()

    def _on_backward_call(self, tensors: Any, grad_tensors: Any) -> None:
        """The framework's ``autograd.backward`` is called (``loss.backward()``): the loss is the
        scalar it starts from; on a light step, this is where the step is seen to begin."""
        try:
            if threading.get_ident() != self._thread:
                return  # another thread's backward (a data loader's, a viewer's): not this training loop's
            if self._step_over:
                self._begin_step()
            self._backward_calls += 1
            loss = scalar_of(tensors, grad_tensors, self._backend.Tensor)
            if loss is not None:
                self._loss = loss
        except Exception as exc:  # noqa: BLE001 - the tracer never breaks training
            self._emit_error(exc, where="backward call")

    def _emit_step_event(self, optimizer: str, index: int, lrs: list[float | None], params: list[Any],
                         grad_sq: float | None = None, **fields: Any) -> None:
        """The ``step`` event: the optimizer's figures, and what every step records, full or
        light (``capture.sampling``): its detail, loss, time, global gradient norm, NaN/Inf.
        ``grad_sq``: the sum of the squared gradients of ``params``, when the step's parameter
        statistics have it (finite); else a pass over the gradients measures it."""
        loss = None
        if self._loss is not None:
            loss = finite_or_none(float(self._loss.item()))
        if grad_sq is not None:
            norm, nonfinite = math.sqrt(grad_sq), False
        else:
            norm, nonfinite = self._backend.grad_norm(params)
        t0 = self._step_t0
        self._emit("step", optimizer=optimizer, index=index, lrs=lrs, **fields, detail=self.detail,
                   **({"why": self._full_why} if self._full else {}), loss=loss,
                   grad_norm=None if norm is None else finite_or_none(norm), nonfinite=nonfinite,
                   dur_ns=time.monotonic_ns() - t0 if t0 is not None else 0)
        if nonfinite and not self._full and not self._light_nonfinite:
            # No module hooks saw it: the next step is watched in full, with statistics, and
            # the first NaN/Inf is reported again there, at its module (a NaN breakpoint stops
            # here first: this error event says so).
            self._light_nonfinite = True
            step = self._step
            self.full_detail(f"breakpoint: NaN/Inf in the gradients of step {step}")
            self._errors += 1
            self._emit("error", etype="NonFiniteValue", where="gradient (light step)", module=None, traceback="",
                       message=f"NaN/Inf in the gradients of step {step}, a light step (no module hooks): "
                               f"step {step + 1} is watched in full to find the module")

    # --- attaching ----------------------------------------------------------------------------

    def _traced(self, path: str) -> bool:
        if not self._filtering:
            return True
        if self.include and not any(fnmatch.fnmatchcase(path, p) for p in self.include):
            return False
        return not any(fnmatch.fnmatchcase(path, p) for p in self.exclude)

    def _add_root(self, root: Any, prefix: str, called: bool = False) -> None:
        """Map every module of ``root`` to its path and emit the ``model`` event. ``called``: the
        root was found by its own call (global mode), so the program calls it and not a compiled
        wrapper of it (that wrapper would have been the root)."""
        self._roots.append(root)
        modules, aliases, first = [], {}, []
        # One walk: a module's first path is the one named_modules() gives it (a shared module's
        # whole subtree comes first under its first name), the later ones are its aliases.
        for path, mod in root.named_modules(remove_duplicate=False, prefix=prefix):
            paths = aliases.get(id(mod))
            if paths is None:
                aliases[id(mod)] = [path]
                first.append((path, mod))
            else:
                paths.append(path)
        for path, mod in first:
            self._paths[id(mod)] = path
            self._modules.append((path, mod))
            # Wrap the user's hooks now: a module snapshots its hook dicts before calling them.
            self._wrap_user_hooks(mod, path)
            modules.append({"path": path, "cls": type(mod).__name__, "extra_repr": mod.extra_repr(),
                            "training": mod.training,
                            # every child name, also a second name for a shared module
                            "children": [name for name, child in mod._modules.items() if child is not None],
                            "aliases": aliases[id(mod)][1:]})
        params, buffers = model_tensors(first)
        self._emit("model", model=prefix or type(root).__name__, modules=modules, params=params,
                   buffers=buffers)
        if not self._eager:
            # A root found by its own call is called itself; another is looked for among what
            # the running frames hold, and, if a full step then passes with none of its hooks
            # firing, among its referrers (``_check_silent_roots``).
            said = self._say_compiled(root, prefix or "the traced model", prefix, "none" if called else "stack")
            if not called and not said:
                self._silent_check.append((weakref.ref(root), prefix))

    def _say_compiled(self, root: Any, name: str, path: str, search: WrapperSearch) -> bool:
        """A model run through compiled code records no module calls: say so at once, in an
        ``error`` event (the TUI shows it) and a warning (``capture.compiled``). True when said."""
        try:
            note = compiled_note(root, name, search)
        except Exception as exc:  # noqa: BLE001 - the tracer never breaks training
            self._emit_error(exc, where="compiled-model check")
            return True  # (not searched again)
        if note is not None:
            self._emit("error", etype=COMPILED, where="model", module=path, message=note, traceback="")
            warnings.warn(note, UserWarning, stacklevel=user_stacklevel())
        return note is not None

    def _check_silent_roots(self) -> None:
        """A full step ended: a traced model none of whose hooks fired in it runs elsewhere (a
        ``torch.compile`` wrapper the stack search missed, or one made after the trace started)
        or not at all: its referrers are searched for the wrapper once, now (``capture.compiled``:
        a few hundred ms, paid only by such a run). A step in which any module call was seen
        ends the check."""
        roots, self._silent_check = self._silent_check, []
        if self._calls:
            return
        for ref, path in roots:
            root = ref()
            if root is not None:
                self._say_compiled(root, path or "the traced model", path, "referrers")

    def _attach(self) -> None:
        """The hooks kept for the whole trace (optimizer steps, the user's global hooks, the
        ``backward`` call), and the per-module ones when the step is full."""
        optimizer_mod = self._backend.optimizer_hooks
        add = self._handles.add
        add(optimizer_mod.register_optimizer_step_pre_hook(self._on_optimizer_pre))
        add(optimizer_mod.register_optimizer_step_post_hook(self._on_optimizer_post))
        if not self._watching_backward:
            BackwardWatch.add(self._backend.Tensor, self._backend.autograd, self._on_backward_call)
            self._watching_backward = True
        self._wrap_global_hooks()
        if self._full:
            self._attach_modules()
        # The handles just made moved the hook clock; the user's hooks were wrapped by _add_root,
        # so the first forward need not look at every module's hooks again.
        clock = self._hook_clock()
        self._hooks_seen.update((id(mod), clock) for _, mod in self._modules)

    def _attach_modules(self) -> None:
        """The per-module hooks (global module hooks without a model): attached for full steps,
        removed for light ones (``_set_detail``)."""
        backend = self._backend
        module_mod = backend.module_hooks
        add = self._module_handles.add
        self._modules_attached = True
        seen = self._hook_clock()
        # One bound method per hook, shared by every module: 10,000 modules register the same
        # object, not 10,000 method objects the garbage collector would walk.
        forward_pre, forward = self._on_forward_pre, self._on_forward
        backward_pre, backward = self._on_backward_pre, self._on_backward
        if not backend.full_backward_hooks:  # torch: backward seen through tensor and node hooks
            self._backward = self._backward or backend.backward_observer(self._on_backward_pre, self._on_backward)
        else:  # the engine: its full backward hooks, marked as observers (in-place updates stay allowed)
            backend.transparent_hook(_unwrap_bound(self._on_backward_pre))
            backend.transparent_hook(_unwrap_bound(self._on_backward))
        full = backend.full_backward_hooks
        if self.model is not None:
            for path, mod in self._modules:  # the model's named_modules(), found by _add_root
                if not self._traced(path):
                    continue
                add(mod.register_forward_pre_hook(forward_pre, prepend=True))
                add(mod.register_forward_hook(forward, always_call=True))
                if not full:
                    continue
                if mod._is_full_backward_hook is False:
                    if path in self._skipped:
                        continue
                    self._skipped.add(path)
                    self._emit("error", etype="TracingSkipped", where=f"module {path!r}", module=path,
                               message="module has a deprecated register_backward_hook hook; torch forbids "
                                       "mixing it with full backward hooks, so backward is not traced here",
                               traceback="")
                    continue
                add(mod.register_full_backward_pre_hook(backward_pre, prepend=True))
                add(mod.register_full_backward_hook(backward))
        else:
            add(module_mod.register_module_forward_pre_hook(self._on_forward_pre))
            add(module_mod.register_module_forward_hook(self._on_forward, always_call=True))
            if full and module_mod._global_is_full_backward_hook is not False:
                add(module_mod.register_module_full_backward_pre_hook(self._on_backward_pre))
                add(module_mod.register_module_full_backward_hook(self._on_backward))
        # Our own handles moved the hook clock: a module whose hooks were looked at when nothing
        # else had changed need not be looked at again.
        clock = self._hook_clock()
        hooks_seen = self._hooks_seen
        for key, value in hooks_seen.items():
            if value == seen:
                hooks_seen[key] = clock

    def _hook_clock(self) -> int:
        """Hook handles made so far by anyone but this trace's backward observer (torch's
        ``RemovableHandle.next_id`` counts them all): unchanged since a look at a module's hooks
        means nobody registered one since, so there is nothing new to wrap."""
        made = self._backward.handles if self._backward is not None else 0
        return self._backend.RemovableHandle.next_id - made

    def _path_of(self, module: Any) -> str | None:
        path = self._paths.get(id(module))
        if path is None and self.model is None:  # global mode: a new root model
            prefix = "" if not self._roots else f"{type(module).__name__}{len(self._roots) + 1}"
            self._add_root(module, prefix, called=True)
            path = self._paths[id(module)]
        if path is None or not self._traced(path):
            return None
        return path

    def _current_path(self) -> str | None:
        return self._fstack[-1][0] if self._fstack else None

    # --- module hooks -------------------------------------------------------------------------

    def _on_forward_pre(self, module: Any, args: tuple) -> None:
        try:
            path = self._paths.get(id(module))
            if path is None or self._filtering:
                path = self._path_of(module)
                if path is None:
                    return
            backend = self._backend
            if self._hooks_seen.get(id(module)) != self._hook_clock():
                self._wrap_user_hooks(module, path)
            call = self._calls.get(path, 0)
            self._calls[path] = call + 1
            inputs = backend.capture_all(args, stats=self.stats)
            t = time.monotonic_ns()  # the event's time and the start of the call's duration
            held = self._observer_ns  # a pause at this very event is not the call's time either
            self._record("forward_pre", path, call, inputs, None, t)
            # the first node the call will create (only the first step's graph is labelled), and
            # what the backward observer needs of the call's inputs (torch)
            self._fstack.append((path, call, t, held, self._graph_pending and backend.current_sequence_nr(),
                                 self._backward and self._backward.enter(args)))
        except Exception as exc:  # noqa: BLE001 - the tracer never breaks training
            self._emit_error(exc, where="forward_pre hook")

    def _on_forward(self, module: Any, args: tuple, output: Any) -> None:
        try:
            path = self._paths.get(id(module))
            if path is None or not self._fstack or self._fstack[-1][0] != path:
                return
            _, call, t0, held, start_seq, entered = self._fstack.pop()
            t = time.monotonic_ns()
            dur = t - t0 - (self._observer_ns - held)  # the model's time: the observer's pauses left out
            backend = self._backend
            outputs = backend.capture_all(output, stats=self.stats)
            self._record("forward", path, call, outputs, dur, t)
            if self.stats:
                self._check_finite(outputs, path, "forward output")
            label = (path, call) if self._graph_pending and backend.is_grad_enabled() else None
            root = None if label is None or self._fstack else next(
                (o for o in tensors_in(output) if o.grad_fn is not None), None)
            # One walk labels a call's nodes: the graph event's for a top-level call that returns
            # one tensor (torch: ``graph_labels``), else the backward observer's, else label_call's.
            in_graph = root is not None and root is output and getattr(backend, "graph_labels", False)
            labelled = in_graph
            if entered is not None:
                labelled = self._backward.leave(module, entered, args, output, None if in_graph else label) or in_graph
            if not self._fstack and backend.full_backward_hooks:
                # a top-level call: its graph is where tensor hooks will fire (engine)
                self._roots_of_step = [weakref.ref(o.grad_fn) for o in tensors_in(output) if o.grad_fn is not None]
            if label is not None:
                if not labelled:
                    label_call(path, start_seq, output, call)
                if root is not None:
                    self._graph_pending = False
                    self.record_graph(root, (path, call, start_seq) if in_graph else None)
        except Exception as exc:  # noqa: BLE001
            self._emit_error(exc, where="forward hook", module=self._paths.get(id(module)))

    def _on_backward_pre(self, module: Any, grad_output: tuple) -> None:
        try:
            path = self._paths.get(id(module))
            if path is None or (self._filtering and not self._traced(path)):
                return
            call = self._bcalls.get(path, 0)
            self._bcalls[path] = call + 1
            if self._roots_of_step:
                self._wrap_tensor_hooks()
            grads = self._backend.capture_all(grad_output, tid=False, stats=self.stats)
            t = time.monotonic_ns()
            held = self._observer_ns
            self._record("backward_pre", path, call, grads, None, t)
            self._bstart.setdefault(path, []).append((t, held))
        except Exception as exc:  # noqa: BLE001
            self._emit_error(exc, where="backward_pre hook")

    def _on_backward(self, module: Any, grad_input: tuple, grad_output: tuple) -> None:
        try:
            path = self._paths.get(id(module))
            if path is None or (self._filtering and not self._traced(path)):
                return
            starts = self._bstart.get(path)
            t = time.monotonic_ns()
            if starts:
                t0, held = starts.pop()
                dur = t - t0 - (self._observer_ns - held)  # the observer's pauses left out
            else:
                dur = 0
            call = max(self._bcalls.get(path, 1) - 1, 0)
            grads = self._backend.capture_all(grad_input, tid=False, stats=self.stats)
            self._record("backward", path, call, grads, dur, t)
            if self.stats:
                self._check_finite(grads, path, "gradient")
        except Exception as exc:  # noqa: BLE001
            self._emit_error(exc, where="backward hook")

    def _check_finite(self, captured: tuple, path: str, what: str) -> None:
        """The first NaN/Inf of each kind (forward output, gradient) becomes an error event
        naming the module where it appeared (inner modules report first). ``captured``: the
        ``capture_all`` tuples of the values, with statistics."""
        if what in self._reported_nonfinite:
            return
        for c in captured:
            stats = c[3:] if c is not None else ()
            if stats and (stats[_NAN] or stats[_INF]):
                self._reported_nonfinite.add(what)
                self._errors += 1
                self._emit("error", etype="NonFiniteValue", where=what, module=path, traceback="",
                           message=f"first NaN/Inf in a {what} of module {path!r}: "
                                   f"{stats[_NAN]} NaN, {stats[_INF]} Inf in a tensor of shape {list(c[0])}")
                return

    # --- user hooks ---------------------------------------------------------------------------

    def _wrap_user_hooks(self, module: Any, path: str) -> None:
        self._hooks_seen[id(module)] = self._hook_clock()
        for kind, hooks in (("forward_pre", module._forward_pre_hooks), ("forward", module._forward_hooks),
                            ("backward_pre", module._backward_pre_hooks), ("backward", module._backward_hooks)):
            if hooks:
                self._wrap_dict(hooks, kind, path)

    def _wrap_tensor_hooks(self) -> None:
        """Backward has reached a traced model: wrap the tensor hooks on its graph (and on its
        parameters) before they fire, so they become ``hook`` events. At most once per step, and
        only when some hook was registered since the last look (``RemovableHandle.next_id``)."""
        roots = [r() for r in self._roots_of_step]
        self._roots_of_step = []
        next_id = self._hook_clock()
        if self._tensor_hooks_seen == next_id:
            return
        self._tensor_hooks_seen = next_id
        names = {id(p): path for path, p in self._param_paths().items()}
        seen: set[int] = set()
        for root in roots:
            if root is None or id(root) in seen:
                continue
            for node in self._backend.walk(root):
                seen.add(id(node))
                if node._tensor_pre_hooks:
                    target = (node._metadata or {}).get("module") or node.name()
                    for hooks in node._tensor_pre_hooks.values():
                        self._wrap_dict(hooks, "tensor", target)
                elif hasattr(node, "variable") and node.variable._backward_hooks:  # AccumulateGrad
                    target = names.get(id(node.variable), "leaf tensor")
                    self._wrap_dict(node.variable._backward_hooks, "tensor", target)

    def _wrap_global_hooks(self) -> None:
        module_mod = self._backend.module_hooks
        for kind, hooks in (("global_forward_pre", module_mod._global_forward_pre_hooks),
                            ("global_forward", module_mod._global_forward_hooks),
                            ("global_backward_pre", module_mod._global_backward_pre_hooks),
                            ("global_backward", module_mod._global_backward_hooks)):
            self._wrap_dict(hooks, kind, "*")

    def _wrap_dict(self, hooks: dict, kind: str, target: str) -> None:
        for key, fn in list(hooks.items()):
            if isinstance(fn, UserHook) or _unwrap_bound(fn) in _OUR_HOOKS:
                continue
            hooks[key] = UserHook(fn, self, kind, target)
            self._wrapped.append((hooks, key, fn))

def _unwrap_bound(fn: Any) -> Any:
    return getattr(fn, "__func__", fn)


_OUR_HOOKS = frozenset(getattr(Recorder, name) for name in (
    "_on_forward_pre", "_on_forward", "_on_backward_pre", "_on_backward", "_on_optimizer_pre", "_on_optimizer_post"))


def _patterns(value: Iterable[str] | str | None) -> tuple[str, ...]:
    if value is None:
        return ()
    return (value,) if isinstance(value, str) else tuple(value)
