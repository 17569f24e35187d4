"""``modscope.trace`` and ``modscope.Trace``: the live recorder joined to the reports.

The recorder (``capture.recorder.Recorder``) turns hook firings into events and reads nothing
from views; the reports a trace offers (``summary``, ``tree``, ``timeline``) are a view's
(``views.trace.EventTrace``). This module, like ``graph.py`` and ``cli/``, is where the two
layers meet: the class users get from ``modscope.trace`` is both.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any, Literal

from .capture import session
from .capture.recorder import AUTO, DEFAULT_KEEP_STEPS, Recorder
from .capture.sampling import DEFAULT_FIRST
from .events.sinks import Sink
from .views.trace import EventTrace


class Trace(Recorder, EventTrace):
    """Records what a model does while it runs (``Recorder``), with the reports of a trace
    (``EventTrace``: ``summary``, ``tree``, ``timeline``).

    Example::

        >>> with modscope.trace(model) as tr:
        ...     loss = loss_fn(model(x), y)
        ...     loss.backward()
        >>> tr.firing_order()[:2]
        [('forward_pre', ''), ('forward_pre', 'conv1')]
    """


def trace(model: Any = None, *, stats: bool = False,
          include: Iterable[str] | str | None = None, exclude: Iterable[str] | str | None = None,
          sink: Sink | None = None, max_events: int | Literal["auto"] | None = AUTO, graph: bool = True,
          observer: Callable[[dict[str, Any]], None] | None = None, backend: str | None = None,
          keep_steps: int | None = DEFAULT_KEEP_STEPS, spill: str | os.PathLike | None = None,
          every: int | None = None, first: int = DEFAULT_FIRST, eager: bool | Literal["full"] = False,
          exact_stats: bool = False) -> Trace:
    """Trace ``model`` (or, with ``model=None``, every module that runs) — see ``Trace``.

    ``stats`` adds statistics to every tensor summary (and reports the first NaN/Inf);
    ``include``/``exclude`` are glob patterns on module paths; ``sink`` receives every event
    (``JsonlSink``, ``SocketSink``).

    Memory is bounded by default: the trace keeps the last ``keep_steps`` training steps (64;
    the step in progress is one of them) and at most ``max_events`` events (``"auto"``: 200,000,
    or 10,000 beside a ``sink``), evicting the oldest step whole first; ``tr.dropped`` and
    ``tr.dropped_steps`` count what went, and ``tr.save`` writes them into the file's ``end``
    event. ``None`` lifts a bound (both None: everything is kept). ``spill``: a
    path (``.gz`` compresses) that receives every event as it happens, a complete trace file for
    ``load_trace``, so nothing evicted from memory is lost.

    ``graph``
    records the autograd graph of the first forward; ``observer(event)`` sees every event in the
    traced thread (the TUI's pause and breakpoints block there), except while the observer has a
    true ``idle`` attribute (it says no event could make it act: a step's worth of calls saved).
    ``model`` is an ``nn.Module`` of the bundled engine or of PyTorch; without one, the trace
    follows every module of the framework the program imported (``backend="engine"|"torch"``
    chooses when it imported both).

    ``every``: watch one training step in ``every`` in full detail (and the ``first`` ones, and
    any ``tr.full_detail(why)`` asks for), with the per-module hooks removed in between; the other
    steps are *light*: their ``step`` event says ``"detail": "light"`` and carries the loss (the
    scalar ``backward`` was called on), the step's time (``dur_ns``), the global gradient norm and
    whether a gradient holds a NaN/Inf (``capture.sampling``). ``None`` (the default here) watches
    every step in full; ``modscope run``/``record`` default to ``every=50, first=2``.

    The ``params`` event of a full step gives each parameter's norm, mean, std and NaN/Inf
    counts; for a floating-point tensor of more than 65,536 values in one block they are
    estimated from the sample its update ratio is measured on (at most 65,536 values, runs of 16
    evenly spread: ``capture.param_stats``), the item saying so (``stats_sampled``, shown ``≈``),
    and a NaN/Inf outside the sample is not counted there (the step's gradient check, exact,
    still sees one in a gradient). ``exact_stats=True`` (``--exact-stats``) measures every value:
    one more pass over the weights per full step (~50 ms on ViT-B/16, one thread). Gradient
    norms are exact either way.

    ``torch.compile``'d code runs none of the module hooks tracing relies on: a model called
    through its compiled wrapper (or compiled in place) records no forward or backward, which
    the trace says at once (a ``CompiledModel`` error event and a ``UserWarning``). ``eager=True``
    runs compiled code uncompiled while tracing (``torch.compiler.set_stance("force_eager")``;
    restored on stop), so it is traced, at eager speed (``capture.compiled``); ``eager="full"``
    does so on full-detail steps only and lets light steps (``every``) run compiled (a model first
    compiled during the trace is compiled on its first light step, while no module hook is on;
    ``--eager-full`` on the command line). A model compiled while the hooks are on (without
    ``eager``) is traced too: dynamo skips modscope's code, so each hook is a graph break that
    runs eagerly.

    In a process that is one rank of several (torchrun, DDP), every event carries the rank
    (``rank``, ``local_rank``, ``world_size``, ``restart``: ``events.schema``)."""
    return Trace(model, stats=stats, include=include, exclude=exclude, sink=sink, max_events=max_events,
                 graph=graph, observer=observer, backend=backend, keep_steps=keep_steps, spill=spill,
                 every=every, first=first, eager=eager, exact_stats=exact_stats)


def watch(model: Any, **trace_kwargs: Any) -> Any:
    """Trace exactly ``model``.

    Under ``modscope run`` / ``modscope record`` this narrows the running session (which
    otherwise traces every module that runs) to ``model`` and returns it (``every``/``first``, if
    given, choose which of its steps are watched in full: see ``trace``); elsewhere it starts an
    in-memory trace of ``model`` with ``trace_kwargs`` and returns it (stop it with ``.stop()``)."""
    if session.active is not None:
        sampling = {k: trace_kwargs[k] for k in ("every", "first") if k in trace_kwargs}
        if sampling:
            session.active.set_detail_policy(**sampling)
        return session.active.watch(model)
    return trace(model, **trace_kwargs).start()
