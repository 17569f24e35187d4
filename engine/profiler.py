"""``torch.profiler`` on the CPU: ``profile`` times every call into the engine's public API that
runs inside it (the ``engine.*`` and ``engine.nn.functional.*`` functions and Tensor's methods and
operators), nested as they call each other, and every ``record_function`` range; ``key_averages``
groups them by name with torch's columns (self and total CPU time, calls) and ``table`` prints
them as torch does; ``export_chrome_trace`` writes the events for chrome://tracing / Perfetto.

The names are the engine's calls (``matmul``, ``relu``, ``add``), not ATen's (``aten::mm``): the
engine's ops are NumPy calls inside those functions, not separate kernels. Timing wraps the
public API only while a profile is open (nothing is wrapped otherwise, so unprofiled code pays
nothing).

Not built (``NotImplementedError`` naming the argument): ``schedule``/``on_trace_ready`` (and
``tensorboard_trace_handler``), ``record_shapes``, ``profile_memory``, ``with_stack``, ``with_flops``,
``with_modules``, and any activity but ``ProfilerActivity.CPU``.
"""

from __future__ import annotations

import enum
import functools
import json
import sys
import time
import types
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ._tensor import Tensor

__all__ = ["ProfilerActivity", "profile", "record_function", "schedule", "supported_activities",
           "tensorboard_trace_handler"]


class ProfilerActivity(enum.Enum):
    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5


def supported_activities() -> set[ProfilerActivity]:
    return {ProfilerActivity.CPU}


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0) -> Callable:
    raise NotImplementedError("torch.profiler.schedule: engine's profile records one window (the whole with-block); "
                              "it has no schedule")


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None, use_gzip: bool = False,
                              use_python_export: bool = False) -> Callable:
    raise NotImplementedError("torch.profiler.tensorboard_trace_handler: engine's profile has no on_trace_ready; "
                              "call prof.export_chrome_trace(path) after the with-block")


@dataclass
class _Event:
    name: str
    start_ns: int
    end_ns: int = 0
    children_ns: int = 0
    depth: int = 0


@dataclass
class FunctionEventAvg:
    """One row of ``key_averages()``: times in microseconds, as torch's."""
    key: str
    count: int = 0
    cpu_time_total: float = 0.0
    self_cpu_time_total: float = 0.0

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total / self.count if self.count else 0.0


def _fmt_us(us: float) -> str:
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


_SORT_KEYS = {"cpu_time_total": "cpu_time_total", "self_cpu_time_total": "self_cpu_time_total",
              "cpu_time": "cpu_time", "count": "count"}


@dataclass
class EventList:
    rows: list[FunctionEventAvg] = field(default_factory=list)

    def __iter__(self):
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int) -> FunctionEventAvg:
        return self.rows[i]

    def table(self, sort_by: str | None = None, row_limit: int = 100, max_name_column_width: int = 55,
              **kwargs: Any) -> str:
        """torch's table: Name, Self CPU %, Self CPU, CPU total %, CPU total, CPU time avg, # of Calls."""
        rows = list(self.rows)
        if sort_by is not None:
            if sort_by not in _SORT_KEYS:
                raise NotImplementedError(f"table(sort_by={sort_by!r}): engine's profile has "
                                          f"{sorted(_SORT_KEYS)} (CPU times and counts only)")
            rows.sort(key=lambda r: getattr(r, _SORT_KEYS[sort_by]), reverse=True)
        if row_limit and row_limit > 0:
            rows = rows[:row_limit]
        total = sum(r.self_cpu_time_total for r in self.rows) or 1.0
        width = max([len("Name")] + [min(len(r.key), max_name_column_width) for r in rows])
        heads = ["Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "# of Calls"]
        line = "-" * width + "  " + "  ".join("-" * 12 for _ in heads) + "  "
        out = [line, "Name".rjust(width) + "  " + "  ".join(h.rjust(12) for h in heads) + "  ", line]
        for r in rows:
            cells = [f"{100 * r.self_cpu_time_total / total:.2f}%", _fmt_us(r.self_cpu_time_total),
                     f"{100 * r.cpu_time_total / total:.2f}%", _fmt_us(r.cpu_time_total), _fmt_us(r.cpu_time),
                     str(r.count)]
            out.append(r.key[:width].rjust(width) + "  " + "  ".join(c.rjust(12) for c in cells) + "  ")
        out += [line, f"Self CPU time total: {_fmt_us(sum(r.self_cpu_time_total for r in self.rows))}", ""]
        return "\n".join(out)


_active: list[profile] = []  # the open profiles (innermost last)


def _push(name: str) -> _Event | None:
    if not _active:
        return None
    prof = _active[-1]
    event = _Event(name, time.perf_counter_ns(), depth=len(prof._stack))
    prof._stack.append(event)
    return event


def _pop(event: _Event | None) -> None:
    if event is None or not _active:
        return
    prof = _active[-1]
    event.end_ns = time.perf_counter_ns()
    if prof._stack and prof._stack[-1] is event:
        prof._stack.pop()
    if prof._stack:
        prof._stack[-1].children_ns += event.end_ns - event.start_ns
    prof._events.append(event)


def _timed(name: str, fn: Callable) -> Callable:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        event = _push(name)
        try:
            return fn(*args, **kwargs)
        finally:
            _pop(event)
    return wrapper


def _event_name(attr: str) -> str:
    return attr.strip("_") if attr.startswith("__") else attr


_NAMESPACES = ("engine", "engine.nn.functional")
# Tensor's operators that run ops (not __repr__, __setattr__, __len__, ...)
_OPERATORS = {f"__{op}__" for op in (
    "add radd iadd sub rsub isub mul rmul imul truediv rtruediv itruediv floordiv rfloordiv ifloordiv mod rmod "
    "pow rpow ipow matmul rmatmul neg pos abs invert and rand iand or ror ior xor rxor ixor lshift rlshift "
    "rshift rrshift eq ne lt le gt ge getitem setitem").split()}


class profile:  # noqa: N801 - torch's name
    """``with profile(activities=[ProfilerActivity.CPU]) as prof: ...`` then
    ``print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=10))``."""

    def __init__(self, *, activities: Iterable[Any] | None = None, schedule: Callable | None = None,
                 on_trace_ready: Callable | None = None, record_shapes: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_flops: bool = False, with_modules: bool = False,
                 experimental_config: Any = None, execution_trace_observer: Any = None, acc_events: bool = False,
                 use_cuda: bool | None = None, custom_trace_id_callback: Callable | None = None,
                 post_processing_timeout_s: float | None = None) -> None:
        wanted = {"schedule": schedule, "on_trace_ready": on_trace_ready, "record_shapes": record_shapes,
                  "profile_memory": profile_memory, "with_stack": with_stack, "with_flops": with_flops,
                  "with_modules": with_modules, "execution_trace_observer": execution_trace_observer,
                  "use_cuda": use_cuda}
        for name, value in wanted.items():
            if value:
                raise NotImplementedError(f"torch.profiler.profile({name}=...): engine's profiler records CPU "
                                          "times of calls only")
        for activity in activities or [ProfilerActivity.CPU]:
            if activity is not ProfilerActivity.CPU:
                raise NotImplementedError(f"torch.profiler.profile(activities=[{activity}]): engine runs on the "
                                          "CPU only; use ProfilerActivity.CPU")
        self._events: list[_Event] = []
        self._stack: list[_Event] = []
        self._patched: list[tuple[Any, str, Any]] = []
        self.step_num = 0

    def _patch(self) -> None:
        """Wrap the public API in timers for the profile's duration (restored by ``_unpatch``)."""
        for attr, value in list(vars(Tensor).items()):
            if isinstance(value, types.FunctionType) and (not attr.startswith("_") or attr in _OPERATORS):
                self._patched.append((Tensor, attr, value))
                setattr(Tensor, attr, _timed(_event_name(attr), value))
        for module_name in _NAMESPACES:
            namespace = sys.modules[module_name]
            for attr, value in list(vars(namespace).items()):
                if isinstance(value, types.FunctionType) and not attr.startswith("_"):
                    self._patched.append((namespace, attr, value))
                    setattr(namespace, attr, _timed(attr, value))

    def _unpatch(self) -> None:
        for owner, attr, value in reversed(self._patched):
            setattr(owner, attr, value)
        self._patched.clear()

    def start(self) -> None:
        if not _active:
            self._patch()
        _active.append(self)

    def stop(self) -> None:
        if self in _active:
            _active.remove(self)
        self._unpatch()

    def __enter__(self) -> profile:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def step(self) -> None:
        """The step counter torch's schedules read (no schedule here: nothing else happens)."""
        self.step_num += 1

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0) -> EventList:
        if group_by_input_shape or group_by_stack_n:
            raise NotImplementedError("key_averages: engine's profile does not record input shapes or stacks")
        rows: dict[str, FunctionEventAvg] = {}
        for e in self._events:
            row = rows.setdefault(e.name, FunctionEventAvg(e.name))
            row.count += 1
            row.cpu_time_total += (e.end_ns - e.start_ns) / 1e3
            row.self_cpu_time_total += (e.end_ns - e.start_ns - e.children_ns) / 1e3
        return EventList(list(rows.values()))

    def events(self) -> list[_Event]:
        return sorted(self._events, key=lambda e: e.start_ns)

    def export_chrome_trace(self, path: str) -> None:
        """The events as Chrome trace JSON (complete events, microseconds)."""
        origin = min((e.start_ns for e in self._events), default=0)
        trace = {"traceEvents": [{"name": e.name, "ph": "X", "cat": "cpu_op", "pid": 0, "tid": 0,
                                  "ts": (e.start_ns - origin) / 1e3, "dur": (e.end_ns - e.start_ns) / 1e3}
                                 for e in self.events()]}
        with open(path, "w") as f:
            json.dump(trace, f)


class record_function:  # noqa: N801 - torch's name
    """A named range in the open profile (``with record_function("forward"): ...`` or as a
    decorator); outside a profile it records nothing, as torch's."""

    def __init__(self, name: str, args: str | None = None) -> None:
        self.name = name
        self._event: _Event | None = None

    def __enter__(self) -> record_function:
        self._event = _push(self.name)
        return self

    def __exit__(self, *exc: Any) -> None:
        _pop(self._event)
        self._event = None

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with record_function(self.name):
                return fn(*args, **kwargs)
        return wrapper
