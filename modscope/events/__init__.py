"""Events: the one contract between the process that trains and everything that shows or stores
what happened. ``schema`` defines the records, ``records`` the compact module record the tracer
keeps until a step ends, ``log`` and ``sinks`` where events go, ``files`` trace files, ``trace``
the read side every trace shares. Nothing here imports a framework or ``capture``.
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
