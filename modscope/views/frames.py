"""A trace's tables as pandas DataFrames, for analysis in a notebook (``EventTrace.to_pandas``).

Three tables, each built from the events alone in one pass:

- ``"events"``: one row per event: ``seq, step, kind, path`` (module path, or a hook's target),
  ``call``, ``t`` (ns), ``dur_ns``, ``rank`` (when the events carry one) and ``detail`` (what the
  event says besides: an optimizer's name, a hook's function, an error's message);
- ``"modules"``: one row per step and module that ran: ``calls``, forward and backward
  milliseconds, the output's shape and (traced with ``stats=True``) mean, std, absmax and NaN/Inf
  counts of its last call's first output, the largest absolute gradient that reached it
  (``grad_absmax``) and the gradient norm of its own parameters (``grad_norm``, from the
  ``params`` event of that step);
- ``"params"``: one row per step and parameter: its module, shape, numel and the ``params``
  event's statistics (``norm, grad_norm, update_ratio, mean, std, nan, inf``), and
  ``update_sampled``: how many values the update ratio was measured on when it is an estimate
  (a tensor of more than 65,536 values has it taken on an evenly strided sample, within ~1%;
  the TUI shows it ``≈``), missing (``<NA>``, a nullable integer column) where it is exact;
  ``stats_sampled`` likewise for ``norm, mean, std, nan, inf`` (estimates from that sample, the
  norm scaled to the whole tensor, the NaN/Inf counts the sample's; exact with
  ``exact_stats=True``).

A loaded run of several ranks gives every rank's rows, with a ``rank`` column (``concat_ranks``).

pandas is optional: without it ``to_pandas`` raises ``ImportError`` saying how to install it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

TABLES = ("events", "modules", "params")
PANDAS_MISSING = "to_pandas() needs pandas, which is not installed: pip install pandas"


def _pandas() -> Any:
    try:
        import pandas
    except ImportError:
        raise ImportError(PANDAS_MISSING) from None
    return pandas


def to_pandas(events: Iterable[dict[str, Any]], table: str = "events") -> Any:
    """The ``table`` (one of ``TABLES``) of ``events`` as a ``pandas.DataFrame``."""
    if table not in TABLES:
        raise ValueError(f"unknown table {table!r}: choose one of {', '.join(TABLES)}")
    pd = _pandas()
    columns = {"events": _events, "modules": _modules, "params": _params}[table](events)
    if table == "params":  # a count or missing: not a float column of NaN
        for key in ("update_sampled", "stats_sampled"):
            columns[key] = pd.array(columns[key], dtype="Int64")
    return pd.DataFrame(columns)


def _detail(e: dict[str, Any]) -> str:
    kind = e["kind"]
    if kind == "hook":
        return f"{e['qualname']} ({e['hook_kind']})"
    if kind == "error":
        return f"{e['etype']}: {e['message']}"
    if kind == "step":
        return f"{e['optimizer']} lrs={e['lrs']}"
    if kind == "metric":
        return ", ".join(f"{k}={v}" for k, v in e["values"].items())
    if kind == "status":
        return f"{e['state']}: {e['reason']}"
    if kind == "end":
        return e["status"]
    if kind == "model":
        return e["model"]
    return ""


def _events(events: Iterable[dict[str, Any]]) -> dict[str, list]:
    cols: dict[str, list] = {k: [] for k in ("seq", "step", "kind", "path", "call", "t", "dur_ns", "detail")}
    ranks: list = []
    for e in events:
        cols["seq"].append(e["seq"])
        cols["step"].append(e["step"])
        cols["kind"].append(e["kind"])
        cols["path"].append(e.get("path", e.get("target")))
        cols["call"].append(e.get("call"))
        cols["t"].append(e["t"])
        cols["dur_ns"].append(e.get("dur_ns"))
        cols["detail"].append(_detail(e))
        ranks.append(e.get("rank"))
    if any(r is not None for r in ranks):
        cols["rank"] = ranks
    return cols


def concat_ranks(tables: dict[int, Any]) -> Any:
    """One table of a run's ranks (``{rank: DataFrame}``), rank by rank, each row with its
    ``rank`` (the events table has it from the events; the others get it first)."""
    pd = _pandas()
    for rank, df in tables.items():
        if "rank" not in df.columns:
            df.insert(0, "rank", rank)
    return pd.concat(list(tables.values()), ignore_index=True)


def _first(summaries: list) -> dict | None:
    return next((s for s in summaries if s is not None), None)


def _modules(events: Iterable[dict[str, Any]]) -> dict[str, list]:
    rows: dict[tuple[int, str], dict[str, Any]] = {}
    classes: dict[str, str] = {}
    grad_norms: dict[tuple[int, str], float] = {}
    for e in events:
        kind = e["kind"]
        if kind == "model":
            classes = {m["path"]: m["cls"] for m in e["modules"]}
            continue
        if kind == "params":
            for item in e["items"]:
                if item["grad_norm"] is not None:
                    key = (e["step"], item["path"].rpartition(".")[0])
                    grad_norms[key] = grad_norms.get(key, 0.0) + item["grad_norm"] ** 2
            continue
        if kind not in ("forward", "backward_pre", "backward"):
            continue
        key = (e["step"], e["path"])
        row = rows.get(key)
        if row is None:
            row = rows[key] = {"calls": 0, "fwd_ns": 0, "bwd_ns": 0, "output_shape": None, "out_mean": None,
                               "out_std": None, "out_absmax": None, "out_nan": 0, "out_inf": 0, "grad_absmax": None}
        if kind == "forward":
            row["calls"] += 1
            row["fwd_ns"] += e["dur_ns"]
            out = _first(e["outputs"])
            if out is not None:
                if row["output_shape"] is None:
                    row["output_shape"] = tuple(out["shape"])
                row["out_mean"], row["out_std"], row["out_absmax"] = out.get("mean"), out.get("std"), out.get("absmax")
            for s in e["outputs"]:
                if s is not None:
                    row["out_nan"] += s.get("nan", 0)
                    row["out_inf"] += s.get("inf", 0)
        elif kind == "backward":
            row["bwd_ns"] += e["dur_ns"]
        else:
            values = [s.get("absmax") for s in e["grad_outputs"] if s is not None and s.get("absmax") is not None]
            if values:
                row["grad_absmax"] = max([*values, row["grad_absmax"] or 0.0])
    names = ("step", "module", "cls", "calls", "fwd_ms", "bwd_ms", "output_shape", "out_mean", "out_std",
             "out_absmax", "out_nan", "out_inf", "grad_absmax", "grad_norm")
    cols: dict[str, list] = {k: [] for k in names}
    for (step, path), row in rows.items():
        cols["step"].append(step)
        cols["module"].append(path)
        cols["cls"].append(classes.get(path))
        cols["fwd_ms"].append(row.pop("fwd_ns") / 1e6)
        cols["bwd_ms"].append(row.pop("bwd_ns") / 1e6)
        g = grad_norms.get((step, path))
        cols["grad_norm"].append(math.sqrt(g) if g is not None else None)
        for k, v in row.items():
            cols[k].append(v)
    return cols


def _params(events: Iterable[dict[str, Any]]) -> dict[str, list]:
    names = ("step", "param", "module", "shape", "numel", "norm", "grad_norm", "update_ratio", "update_sampled",
             "mean", "std", "nan", "inf", "stats_sampled")
    cols: dict[str, list] = {k: [] for k in names}
    shapes: dict[str, tuple[tuple, int]] = {}
    for e in events:
        if e["kind"] == "model":
            shapes = {p["path"]: (tuple(p["shape"]), p["numel"]) for p in e["params"]}
        elif e["kind"] == "params":
            for item in e["items"]:
                shape, numel = shapes.get(item["path"], (None, None))
                cols["step"].append(e["step"])
                cols["param"].append(item["path"])
                cols["module"].append(item["path"].rpartition(".")[0])
                cols["shape"].append(shape)
                cols["numel"].append(numel)
                for k in ("norm", "grad_norm", "update_ratio", "mean", "std", "nan", "inf"):
                    cols[k].append(item[k])
                cols["update_sampled"].append(item.get("update_sampled"))  # absent: exact (or an older trace)
                cols["stats_sampled"].append(item.get("stats_sampled"))  # likewise
    return cols
