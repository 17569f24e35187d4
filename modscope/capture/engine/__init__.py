"""The engine backend: capture for models built on the bundled ``engine``.

The only place (with its modules) where modscope imports the engine. Module backward is seen
through the engine's full backward hooks, wired as torch wires them; the tracer's hooks are
marked ``transparent_hook``, so a traced program may still update module outputs in place.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import engine
from engine.autograd.graph import current_sequence_nr
from engine.nn.modules import module as module_hooks
from engine.optim import optimizer as optimizer_hooks
from engine.utils.hooks import RemovableHandle, transparent_hook

from ..attribution import walk
from ..param_stats import StatsPlan
from .graph import graph_event_fields
from .summaries import capture_all, forget_arrays, forget_gradients


def check_traceable(model: Any) -> None:
    """Every engine ``nn.Module`` can be traced."""


BACKEND = SimpleNamespace(
    name="engine", version=engine.__version__, Tensor=engine.Tensor, Module=engine.nn.Module,
    full_backward_hooks=True, module_hooks=module_hooks, optimizer_hooks=optimizer_hooks,
    RemovableHandle=RemovableHandle, transparent_hook=transparent_hook, is_grad_enabled=engine.is_grad_enabled,
    current_sequence_nr=current_sequence_nr, capture_all=capture_all, forget_arrays=forget_arrays,
    forget_gradients=forget_gradients, stats_plan=StatsPlan, graph_event_fields=graph_event_fields, walk=walk,
    check_traceable=check_traceable, resolve=None, backward_observer=None,
)
