"""Which rank this process is, from the environment torch's launchers set.

torchrun (``torch.distributed.run``), ``elastic_launch`` and schedulers that follow torch's
conventions start each rank with ``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE`` and
``TORCHELASTIC_RESTART_COUNT`` (``torch.distributed`` reads the same variables for its
``env://`` rendezvous). Without ``RANK`` the process is a single one: its events carry no rank
fields (``events.schema``: rank 0 of 1).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from ..events import schema

RANK_VARIABLES = {"rank": "RANK", "local_rank": "LOCAL_RANK", "world_size": "WORLD_SIZE",
                  "restart": "TORCHELASTIC_RESTART_COUNT"}


class RankEnvironmentError(ValueError):
    """A launcher's variable that is not what torch's launchers set: the message names it."""


def rank_from_env(environ: Mapping[str, str] = os.environ) -> dict[str, int] | None:
    """``{"rank", "local_rank", "world_size", "restart"}`` from torch's variables, or ``None``
    when ``RANK`` is not set (a single process). ``LOCAL_RANK`` defaults to ``RANK``,
    ``WORLD_SIZE`` to ``RANK + 1`` and the restart count to 0 (a scheduler may set ``RANK``
    only); ``RankEnvironmentError`` for a value that is not an integer >= 0 or a rank outside
    the world."""
    if not environ.get("RANK", "").strip():
        return None
    values: dict[str, int] = {}
    for key, variable in RANK_VARIABLES.items():
        text = environ.get(variable, "").strip()
        if not text:
            continue
        try:
            values[key] = int(text)
        except ValueError:
            raise RankEnvironmentError(f"${variable} must be an integer >= 0, got {text!r}") from None
        if values[key] < 0:
            raise RankEnvironmentError(f"${variable} must be an integer >= 0, got {text!r}")
    values.setdefault("local_rank", values["rank"])
    values.setdefault("world_size", values["rank"] + 1)
    values.setdefault("restart", 0)
    if values["rank"] >= values["world_size"]:
        raise RankEnvironmentError(f"$RANK ({values['rank']}) must be below $WORLD_SIZE ({values['world_size']})")
    return values


def stamp_rank(environ: Mapping[str, str] = os.environ) -> dict[str, int] | None:
    """Make every event this process builds carry its rank (``schema.set_origin``); returns the
    rank fields, ``None`` for a single process."""
    origin = rank_from_env(environ)
    schema.set_origin(origin)
    return origin
