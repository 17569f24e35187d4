"""torch.utils.hooks: ``RemovableHandle`` (what every ``register_*_hook`` returns) and
``BackwardHook`` (a module's full backward hooks), each in its own private module, and the hook
markers (``unserializable_hook``, ``transparent_hook``) here."""

from __future__ import annotations

import warnings
from collections import OrderedDict
from typing import Any

from ._backward_hook import BackwardHook  # noqa: F401 - torch.utils.hooks' names
from ._removable_handle import RemovableHandle  # noqa: F401


def new_hook_dict() -> OrderedDict:
    """Hook dicts must be weak-referenceable (plain dicts are not); OrderedDict is."""
    return OrderedDict()


def unserializable_hook(f: Any) -> Any:
    """Mark a function as a hook that is not expected to survive serialisation (torch's marker)."""
    f.__torch_unserializable__ = True
    return f


def warn_if_has_hooks(tensor: Any) -> None:
    """Warn for every tensor backward hook that would be lost when ``tensor`` is serialised."""
    for hook in (tensor._backward_hooks or {}).values():
        if not hasattr(hook, "__torch_unserializable__"):
            warnings.warn(
                f"backward hook {hook!r} on tensor will not be serialized.  If this is expected, "
                "you can decorate the function with @engine.utils.hooks.unserializable_hook to "
                "suppress this warning",
                stacklevel=2,
            )


def transparent_hook(f: Any) -> Any:
    """Mark a module backward hook as an observer that never changes gradients.

    torch forbids in-place updates of a module's outputs once full backward hooks are on it
    (they pass through an identity Function). That rule protects hooks that rewrite gradients;
    an observer is unaffected, because the identity passes the gradient of the value the module
    produced. When *every* backward hook and pre-hook on a module is transparent, the engine
    lets the module's outputs be updated in place, so a tracing tool attaching such hooks never
    changes what the traced program may do. Such a module also skips torch's warning that its
    backward hooks fire without grad_input (an observer does not need it). (An engine extension:
    torch has no such marker.)
    """
    f._engine_transparent_hook = True
    return f
