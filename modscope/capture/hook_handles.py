"""The hooks a trace registered, kept so that it can remove them all, in as few objects as possible.

A trace of a 10,000-module model registers 20,000-40,000 hooks. Kept as ``RemovableHandle``s,
each is about five objects (the handle, its ``__dict__``, weak references, a tuple) that live as
long as the trace and that Python's garbage collector walks on every full collection; on the
engine, where a big model's step already spends about half its time in full collections, that
is the tracer's largest cost. So the handles are dropped at once and only what ``remove`` needs is
kept: each hook dict (and each extra dict or set sharing the key) and the key, in two flat
lists, which adds no object per hook.
"""

from __future__ import annotations

from typing import Any


class HookHandles:
    """``add(handle)`` for each hook registered; ``remove_all()`` does what each handle's
    ``remove()`` would (``torch.utils.hooks.RemovableHandle`` or the engine's: same attributes).

    Example::

        >>> handles = HookHandles()
        >>> handles.add(model.register_forward_hook(hook))
        >>> handles.remove_all()  # the hook is gone
    """

    __slots__ = ("_containers", "_keys")

    def __init__(self) -> None:
        self._containers: list[Any] = []
        self._keys: list[int] = []

    def add(self, handle: Any) -> None:
        key = handle.id
        hooks = handle.hooks_dict_ref()
        if hooks is not None:
            self._containers.append(hooks)
            self._keys.append(key)
        for ref in handle.extra_dict_ref:  # e.g. the ``always_call`` or ``with_kwargs`` marks
            extra = ref()
            if extra is not None:
                self._containers.append(extra)
                self._keys.append(key)

    def remove_all(self) -> None:
        for container, key in zip(self._containers, self._keys, strict=True):
            if isinstance(container, set):
                container.discard(key)
            else:
                container.pop(key, None)
        self._containers.clear()
        self._keys.clear()

    def __len__(self) -> int:
        return len(self._containers)
