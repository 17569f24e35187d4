"""``RemovableHandle``: what every ``register_*_hook`` returns (torch.utils.hooks.RemovableHandle)."""

from __future__ import annotations

import weakref
from collections import OrderedDict
from typing import Any


class RemovableHandle:
    """A handle which provides the capability to remove a hook.

    Holds only weak references to the dicts it was registered in, so a handle kept around
    never keeps a module (or tensor, or graph node) alive.

    Args:
        hooks_dict: the dict the hook was stored in, keyed by ``handle.id``.
        extra_dict: further dicts that use the same key (e.g. the ``with_kwargs`` set), removed
            together with the hook.

    Example::

        >>> handle = model.register_forward_hook(hook)
        >>> handle.remove()          # or: with model.register_forward_hook(hook): ...
    """

    id: int
    next_id: int = 0

    def __init__(self, hooks_dict: Any, *, extra_dict: Any = None) -> None:
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = RemovableHandle.next_id
        RemovableHandle.next_id += 1
        extras = extra_dict if isinstance(extra_dict, list | tuple) else [extra_dict]
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extras if d is not None)

    def remove(self) -> None:
        """Remove the hook; calling it again is a no-op."""
        hooks_dict = self.hooks_dict_ref()
        if hooks_dict is not None and self.id in hooks_dict:
            del hooks_dict[self.id]
        for ref in self.extra_dict_ref:
            extra = ref()
            if extra is not None and self.id in extra:
                extra.discard(self.id) if isinstance(extra, set) else extra.pop(self.id)

    def __getstate__(self) -> tuple:
        return (self.hooks_dict_ref(), self.id, tuple(ref() for ref in self.extra_dict_ref))

    def __setstate__(self, state: tuple) -> None:
        # A handle whose dict died (or a copied handle) stays valid and removes nothing.
        self.hooks_dict_ref = weakref.ref(state[0] if state[0] is not None else OrderedDict())
        self.id = state[1]
        RemovableHandle.next_id = max(RemovableHandle.next_id, self.id + 1)
        self.extra_dict_ref = tuple(weakref.ref(d) for d in (state[2] if len(state) > 2 else ()) if d is not None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()

    def __repr__(self) -> str:
        return f"<RemovableHandle id={self.id}>"
