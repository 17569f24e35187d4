"""Where a trace's files are: the default name of a recording, and the files of a run's ranks.

A run of several ranks (torchrun, ``modscope record --nproc-per-node N``) is one trace kept as one
file per rank, side by side: rank 0 writes the file the user named (``run.jsonl.gz``), rank R
writes it with ``.rankR`` before the trace suffix (``run.rank1.jsonl.gz``). Every command that
reads a trace opens the name the user gave and finds the ranks beside it; ``F#R`` picks rank R
(``run.jsonl.gz#1``), as ``F@S`` picks a step (``run.jsonl.gz#1@12``: both).
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

TRACE_SUFFIXES = (".jsonl.gz", ".jsonl", ".json.gz", ".json", ".gz")


class RankNotFoundError(FileNotFoundError):
    """``F#R`` names a rank that has no file beside ``F``: the message says which ranks do."""


def default_trace_path(script: str | os.PathLike, tag: str = "") -> Path:
    """``modscope-traces/SCRIPT[-TAG]-TIME.jsonl.gz`` under the current directory (created)."""
    folder = Path.cwd() / "modscope-traces"
    folder.mkdir(exist_ok=True)
    stem = Path(script).stem + (f"-{tag}" if tag else "")
    return folder / f"{stem}-{time.strftime('%Y%m%d-%H%M%S')}.jsonl.gz"


def _split_suffix(name: str) -> tuple[str, str]:
    for suffix in TRACE_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)], suffix
    return name, ""


def rank_path(path: str | os.PathLike, rank: int) -> Path:
    """The file rank ``rank`` of the run recorded as ``path`` writes (rank 0: ``path`` itself)."""
    path = Path(path)
    if rank == 0:
        return path
    stem, suffix = _split_suffix(path.name)
    return path.with_name(f"{stem}.rank{rank}{suffix}")


def rank_paths(path: str | os.PathLike) -> dict[int, Path]:
    """``{rank: file}`` of every rank recorded beside ``path`` (rank 0 when ``path`` exists), in
    rank order; ``{0: path}`` for a single process's trace."""
    path = Path(path)
    stem, suffix = _split_suffix(path.name)
    pattern = re.compile(re.escape(stem) + r"\.rank([1-9][0-9]*)" + re.escape(suffix) + "$")
    found = {0: path} if path.exists() else {}
    try:
        names = os.listdir(path.parent if str(path.parent) else ".")
    except OSError:
        names = []
    for name in names:
        match = pattern.match(name)
        if match:
            found[int(match[1])] = path.with_name(name)
    return dict(sorted(found.items()))


def split_selector(arg: str) -> tuple[str, int | None, int | None]:
    """``"run.jsonl#1@12"`` -> ``("run.jsonl", 1, 12)``; ``#R`` and ``@S`` are each optional. A
    name that is itself a file, or whose ``#``/``@`` part is not an integer, is a file name."""
    if os.path.exists(arg):
        return arg, None, None
    step = None
    name, at, text = arg.rpartition("@")
    if at and text.isdigit():
        arg, step = name, int(text)
    rank = None
    name, hash_, text = arg.rpartition("#")
    if hash_ and text.isdigit() and not os.path.exists(arg):
        arg, rank = name, int(text)
    return arg, rank, step


def resolve_rank(arg: str | os.PathLike) -> Path:
    """The file of ``F`` or ``F#R`` (rank R's, beside F). ``RankNotFoundError`` naming the ranks
    recorded beside F when rank R has none."""
    path, rank, _ = split_selector(os.fspath(arg))
    if rank is None:
        return Path(path)
    found = rank_path(path, rank)
    if found.exists():
        return found
    ranks = rank_paths(path)
    has = f"ranks {', '.join(map(str, ranks))} are" if ranks else "no rank is"
    raise RankNotFoundError(f"{found}: no file for rank {rank} of {path} ({has} recorded beside it)")


def rank_path_base(path: str | os.PathLike) -> Path:
    """The name a run's ranks were recorded under, from any rank's file (``run.rank1.jsonl.gz``
    -> ``run.jsonl.gz``; rank 0's file or a single process's is its own)."""
    path = Path(path)
    stem, suffix = _split_suffix(path.name)
    match = re.fullmatch(r"(.+)\.rank[1-9][0-9]*", stem)
    return path.with_name(match[1] + suffix) if match else path
