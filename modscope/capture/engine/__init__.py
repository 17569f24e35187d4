"""The engine backend: capture for models built on the bundled ``engine``.

The only place (with its modules) where modscope imports the engine.

Module backward is seen through the engine's full backward hooks, wired as torch wires them,
marked ``transparent_hook`` so that a traced program may still update module outputs in place.
The tensor-and-node-hook observer torch's backend needs (``capture/backward.py``) runs on the
engine too (``AUTOGRAD``: the engine has torch's autograd API), and gives the same firing order
as on torch (``tests/capture/engine/test_backward_observer.py``), but it is not used here: on
the engine it costs more than the hooks it would replace (the seed Net's traced step x1.097
against x1.079 with ``stats=False``, x1.230 against x1.202 with ``stats=True``, in one run of
``bench/bench_tracing.py``; the 10,001-module model 625 against 566 ms a step with the garbage
collector off), and the full hooks give torch's order exactly, branches behind a ``detach``
included."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import engine
from engine.autograd import Variable
from engine.autograd.executor import current_node, will_engine_execute_node
from engine.autograd.graph import current_sequence_nr, get_gradient_edge
from engine.nn.modules import module as module_hooks
from engine.optim import optimizer as optimizer_hooks
from engine.utils.hooks import RemovableHandle, transparent_hook

from ..attribution import walk
from ..backward import Autograd
from ..param_stats import StatsPlan, grad_norm
from .graph import graph_event_fields
from .summaries import capture_all, forget_arrays, forget_gradients

AUTOGRAD = Autograd(
    Tensor=engine.Tensor, is_grad_enabled=engine.is_grad_enabled, sequence_nr=current_sequence_nr,
    gradient_edge=get_gradient_edge, queue_callback=Variable._execution_engine.queue_callback,
    current_node=current_node, will_run=will_engine_execute_node,
)


def check_traceable(model: Any) -> None:
    """Every engine ``nn.Module`` can be traced."""


BACKEND = SimpleNamespace(
    name="engine", version=engine.__version__, Tensor=engine.Tensor, Module=engine.nn.Module,
    full_backward_hooks=True, module_hooks=module_hooks, optimizer_hooks=optimizer_hooks,
    RemovableHandle=RemovableHandle, transparent_hook=transparent_hook, is_grad_enabled=engine.is_grad_enabled,
    current_sequence_nr=current_sequence_nr, capture_all=capture_all, forget_arrays=forget_arrays,
    forget_gradients=forget_gradients, stats_plan=StatsPlan, graph_event_fields=graph_event_fields, walk=walk,
    check_traceable=check_traceable, resolve=None, backward_observer=None,
    grad_norm=grad_norm, autograd=engine.autograd,
)
