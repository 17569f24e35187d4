"""``torch.hub`` without the network: the engine never downloads.

- ``load_state_dict_from_url`` reads torch's own cache (``get_dir()/checkpoints/<file name>``,
  the file torch downloaded, checked against the hash in its name when ``check_hash``) with
  ``engine.load``; a file not in the cache raises ``RuntimeError`` naming the URL and the path to
  put it at (``torch.hub.load_state_dict_from_url(url)`` run once under torch fills it).
- ``load(dir, model, source="local")`` runs the directory's ``hubconf.py`` and calls its entry
  point, as torch does; ``source="github"``, ``list``, ``help`` and ``download_url_to_file``
  fetch from the network and raise ``NotImplementedError`` naming the call.
- ``get_dir``/``set_dir``: torch's cache directory (``$TORCH_HOME/hub``, ``TORCH_HOME`` defaulting
  to ``$XDG_CACHE_HOME/torch``, that to ``~/.cache/torch``).
"""

from __future__ import annotations

import hashlib
import os
import re
import runpy
import sys
from typing import Any
from urllib.parse import urlparse

from .serialization import load as _load

__all__ = ["download_url_to_file", "get_dir", "help", "list", "load", "load_state_dict_from_url", "set_dir"]

HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")  # torch's: the sha256 prefix in a checkpoint's file name
_hub_dir: list[str | None] = [None]


def get_dir() -> str:
    """The hub cache directory: the one ``set_dir`` gave, else ``$TORCH_HOME/hub``."""
    if _hub_dir[0] is not None:
        return _hub_dir[0]
    cache = os.getenv("XDG_CACHE_HOME", os.path.join("~", ".cache"))
    return os.path.join(os.path.expanduser(os.getenv("TORCH_HOME", os.path.join(cache, "torch"))), "hub")


def set_dir(d: str | os.PathLike) -> None:
    _hub_dir[0] = os.path.expanduser(d)


def _no_network(call: str) -> NotImplementedError:
    return NotImplementedError(f"torch.hub.{call} downloads from the network, which engine does not do; load a "
                               "local copy (engine.hub.load(dir, model, source='local'), engine.load(path))")


def load_state_dict_from_url(url: str, model_dir: str | None = None, map_location: Any = None, progress: bool = True,
                             check_hash: bool = False, file_name: str | None = None,
                             weights_only: bool = False) -> dict[str, Any]:
    """The checkpoint at ``url`` from torch's hub cache, loaded with ``engine.load``. Nothing is
    downloaded: a file missing from the cache raises ``RuntimeError`` with the path to put it at."""
    model_dir = os.path.join(get_dir(), "checkpoints") if model_dir is None else model_dir
    filename = file_name or os.path.basename(urlparse(url).path)
    cached = os.path.join(model_dir, filename)
    if not os.path.exists(cached):
        raise RuntimeError(f"engine.hub.load_state_dict_from_url: {url} is not in the hub cache ({cached}) and "
                           "engine does not download; run torch.hub.load_state_dict_from_url once under torch, or "
                           "put the file there")
    if check_hash:
        match = HASH_REGEX.search(filename)
        prefix = match.group(1) if match else None
        if prefix:
            with open(cached, "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()
            if digest[:len(prefix)] != prefix:
                raise RuntimeError(f'invalid hash value (expected "{prefix}", got "{digest}")')
    return _load(cached, map_location=map_location, weights_only=weights_only)


def load(repo_or_dir: str, model: str, *args: Any, source: str = "github", trust_repo: Any = "check",
         force_reload: bool = False, verbose: bool = True, skip_validation: bool = False, **kwargs: Any) -> Any:
    """``source="local"``: run ``repo_or_dir/hubconf.py`` (its directory on ``sys.path`` meanwhile,
    as torch puts it) and return ``hubconf.<model>(*args, **kwargs)``."""
    source = source.lower()
    if source not in ("github", "local"):
        raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    if source == "github":
        raise _no_network("load(source='github')")
    if not isinstance(model, str):
        raise ValueError("Invalid input: model should be a string of function name")
    sys.path.insert(0, repo_or_dir)
    try:
        hubconf = runpy.run_path(os.path.join(repo_or_dir, "hubconf.py"))
        entry = hubconf.get(model)
        if entry is None or not callable(entry):
            raise RuntimeError(f"Cannot find callable {model} in hubconf")
        return entry(*args, **kwargs)
    finally:
        sys.path.remove(repo_or_dir)


def list(github: str, force_reload: bool = False, skip_validation: bool = False,  # noqa: A001 - torch's name
         trust_repo: Any = "check", verbose: bool = True) -> Any:
    raise _no_network("list")


def help(github: str, model: str, force_reload: bool = False, skip_validation: bool = False,  # noqa: A001
         trust_repo: Any = "check") -> Any:
    raise _no_network("help")


def download_url_to_file(url: str, dst: str, hash_prefix: str | None = None, progress: bool = True) -> None:
    raise _no_network("download_url_to_file")
