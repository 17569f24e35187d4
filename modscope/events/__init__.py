"""Events: the one contract between the process that trains and everything that shows or stores
what happened. ``schema`` defines the records (and ``make``, the one place an event is built,
with the rank fields of a rank of several), ``records`` the compact module record the tracer
keeps until a step ends, ``log`` and ``sinks`` where events go, ``files`` trace files,
``trace_paths`` where a run's files are (one per rank), ``trace`` the read side every trace
shares, ``serve`` the live stream viewers attach to. Nothing here imports a framework,
``capture`` or ``views``.
"""

from __future__ import annotations

from .schema import (
                     FIELDS,
                     KINDS,
                     MODULE_EVENTS,
                     ORIGIN_FIELDS,
                     SCHEMA_VERSION,
                     EventError,
                     dumps,
                     dumps_bytes,
                     finite_or_none,
                     loads,
                     make,
                     rank_of,
                     validate,
)

__all__ = ["FIELDS", "KINDS", "MODULE_EVENTS", "ORIGIN_FIELDS", "SCHEMA_VERSION", "EventError", "dumps",
           "dumps_bytes", "finite_or_none", "loads", "make", "rank_of", "validate"]
