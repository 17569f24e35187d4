"""The torch backend: capture for ``torch.nn.Module`` models, through torch's public hooks.

The only place (with its modules) where modscope imports torch, and only when a torch model or
tensor is traced (``capture.backends``). Forward is seen through torch's global or per-module
forward hooks, optimizer steps through its optimizer step hooks, exactly as for the engine.
Backward is seen through tensor and node hooks (``capture/backward.py``), not through torch's full
backward hooks, which would forbid the traced program to update module outputs in place.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Callable
from functools import partial
from types import SimpleNamespace
from typing import Any

import torch
from torch._C import _has_torch_function_unary
from torch._C._autograd import _get_sequence_nr
from torch.autograd.graph import get_gradient_edge
from torch.nn.modules import module as module_hooks
from torch.optim import optimizer as optimizer_hooks
from torch.utils.hooks import RemovableHandle

from ..attribution import walk
from ..backends import UntraceableError
from ..backward import Autograd, BackwardObserver
from .graph import graph_event_fields
from .param_stats import grad_norm, stats_plan
from .summaries import capture_all, forget_arrays, forget_gradients, resolve


def check_traceable(model: Any) -> None:
    """A clear error for the torch models whose module hooks never fire: TorchScript modules
    and ``torch.compile``'d ones (trace the module before compiling it)."""
    if isinstance(model, torch.jit.ScriptModule):
        raise UntraceableError(f"modscope cannot trace the TorchScript module {type(model).__name__}: "
                               "TorchScript runs no Python hooks; trace the nn.Module before torch.jit.script/trace")
    if type(model).__name__ != "OptimizedModule":  # first: a missing attribute costs a module an exception
        return
    original = getattr(model, "_orig_mod", None)
    if isinstance(original, torch.nn.Module):
        raise UntraceableError(f"modscope cannot trace a torch.compile'd model ({type(original).__name__}): "
                               "compiled code skips the hooks it traces; trace the original module "
                               "(model._orig_mod, or the model before torch.compile) instead")


_hook_keys = itertools.count(-1, -1)  # below every RemovableHandle id (those count up from 0)


def add_hook(t: torch.Tensor, fn: Callable[[torch.Tensor], None]) -> int:
    """What ``t.register_hook(fn)`` does (``torch/_tensor.py``), minus the ``RemovableHandle``,
    which the backward observer never uses (its hooks stay on the graph, silent once its trace
    ends) and which cost it two thirds of the registration (more under tools that wrap torch's
    methods). Only for a plain tensor made by an op, outside any ``__torch_function__`` override
    or mode; anything else goes through ``register_hook``. Returns the handles made (0 or 1)."""
    node = t.grad_fn
    if node is None or type(t) is not _Tensor or _has_torch_function_unary(t):
        t.register_hook(fn)
        return 1
    hooks = t._backward_hooks
    if hooks is None:
        hooks = t._backward_hooks = OrderedDict()
        node._register_hook_dict(t)
    hooks[next(_hook_keys)] = fn
    return 0


_Tensor = torch.Tensor
AUTOGRAD = Autograd(
    Tensor=torch.Tensor, is_grad_enabled=torch.is_grad_enabled, sequence_nr=_get_sequence_nr,
    gradient_edge=get_gradient_edge, queue_callback=torch.autograd.Variable._execution_engine.queue_callback,
    current_node=torch._C._current_autograd_node, will_run=torch._C._will_engine_execute_node, add_hook=add_hook,
)


def _same(fn: Any) -> Any:
    return fn


BACKEND = SimpleNamespace(
    name="torch", version=torch.__version__, Tensor=torch.Tensor, Module=torch.nn.Module,
    full_backward_hooks=False, backward_observer=partial(BackwardObserver, autograd=AUTOGRAD),
    module_hooks=module_hooks,
    optimizer_hooks=optimizer_hooks, RemovableHandle=RemovableHandle, transparent_hook=_same,
    is_grad_enabled=torch.is_grad_enabled, current_sequence_nr=_get_sequence_nr, capture_all=capture_all,
    forget_arrays=forget_arrays, forget_gradients=forget_gradients, resolve=resolve, stats_plan=stats_plan,
    graph_event_fields=graph_event_fields, walk=walk, check_traceable=check_traceable,
    graph_labels=True,  # graph_event_fields(..., label=) labels the call's nodes in its own walk
    grad_norm=grad_norm, autograd=torch.autograd,
)
