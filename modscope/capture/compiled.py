"""``torch.compile`` and tracing: compiled code runs none of the Python module hooks modscope
traces, so a model called through its compiled wrapper records no forward or backward at all
(only optimizer steps), and one compiled while modscope's hooks are on has dynamo trace them
into its graphs (graph breaks, recompiles: slow). This file tells the trace so, and offers the
way to see the model: run its compiled code eagerly.

- ``compiled_note(root, name)``: what of ``root`` is compiled (called through ``torch.compile``'s
  wrapper, compiled in place with ``model.compile()``, or compiled submodules), as one message for
  a ``CompiledModel`` error event and a warning; ``None`` when nothing is. Cheap unless dynamo
  has been imported (``import torch`` does not import it; ``torch.compile`` does), where finding
  a wrapper of a module asks the garbage collector for its referrers once (tens to a few
  hundred ms on a large program, once per traced model).
- ``force_eager()`` / ``EagerSwitch``: compiled code runs eagerly (hooks fire) until the undo:
  ``torch.compiler.set_stance("force_eager")`` once dynamo is loaded (torch 2.6+: compiled code is
  kept, and runs compiled again after the undo), else ``TORCHDYNAMO_DISABLE=1`` so a
  ``torch.compile`` called meanwhile returns the module itself (it stays uncompiled).
- ``EAGER_ENVIRONMENT``: what ``modscope run``/``record --eager`` give the script, read by torch
  2.13: ``TORCHDYNAMO_DISABLE=1`` (``torch.compile`` returns its argument: ``torch._dynamo.optimize``
  reads it at each call) and ``TORCH_COMPILE_DISABLE=1`` (``torch._dynamo.config.disable``, read
  when dynamo is imported: any other compiled function runs eagerly too).

Framework-free at import: torch is touched only through the objects handed in and the modules
the program has already imported.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from collections.abc import Callable
from typing import Any

ETYPE = "CompiledModel"  # the error event's etype
EAGER_ENVIRONMENT = {"TORCHDYNAMO_DISABLE": "1", "TORCH_COMPILE_DISABLE": "1"}
HOW_TO_SEE = ("To see it, run it uncompiled: --eager (modscope run/record) or modscope.trace(model, eager=True), "
              "at eager speed (bench/bench_compile.py)")
_DYNAMO = "torch._dynamo.eval_frame"


def compiled_note(root: Any, name: str, look_for_wrapper: bool = True) -> str | None:
    """What of the module ``root`` (traced as ``name``) runs compiled, and what that means for
    the trace; ``None`` when nothing does (or for an engine module, which cannot be compiled).
    ``look_for_wrapper=False`` skips the search for a ``torch.compile`` wrapper of ``root`` (the
    garbage collector's referrers: up to a few hundred ms in a large program) where ``root`` is
    known to be called itself: a root found in global mode by its own first call, inside the
    training loop, where that search once cost 5 % of a 60-step GPT-2 run under ``record``."""
    if getattr(type(root), "_compiled_call_impl", False) is False:  # not a torch.nn.Module
        return None
    what = None
    if type(root).__name__ == "OptimizedModule" and hasattr(root, "_orig_mod"):
        what = f"{name} is torch.compile's wrapper of a {type(root._orig_mod).__name__}"
    elif root._compiled_call_impl is not None:
        what = f"{name} ({type(root).__name__}) was compiled in place (model.compile())"
    elif look_for_wrapper and _DYNAMO in sys.modules and _wrapped(root):
        what = f"{name} ({type(root).__name__}) is wrapped by torch.compile, and the program may call the wrapper"
    inner = _compiled_submodules(root, name) if _DYNAMO in sys.modules else []
    if what is None and not inner:
        return None
    if inner:
        more = f" (+{len(inner) - 3} more)" if len(inner) > 3 else ""
        part = "compiled submodules: " + ", ".join(inner[:3]) + more
        what = part if what is None else f"{what}; {part}"
    return (f"{what}: compiled code skips the module hooks modscope traces (its calls go unrecorded) or, "
            f"compiled while they are on, stops at each of them (graph breaks, recompiles: slow). {HOW_TO_SEE}")


def user_stacklevel() -> int:
    """The ``stacklevel`` for a warning issued by the caller of this function that points at the
    first frame outside modscope and torch (the script's line that started the trace or called
    the model)."""
    skip = (os.path.dirname(os.path.dirname(__file__)), os.path.dirname(getattr(sys.modules.get("torch"), "__file__",
                                                                                  None) or "/nonexistent/x"))
    frame, level = sys._getframe(2), 2
    while frame is not None and frame.f_code.co_filename.startswith(skip):
        frame, level = frame.f_back, level + 1
    return level


def _wrapped(module: Any) -> bool:
    """Is ``module`` the ``_orig_mod`` of a ``torch.compile`` wrapper (an ``OptimizedModule``
    registers the module it wraps as its only child, under that name)?"""
    return any(isinstance(ref, dict) and ref.get("_orig_mod") is module for ref in gc.get_referrers(module))


def _compiled_submodules(root: Any, name: str) -> list[str]:
    found = []
    for path, m in root.named_modules():
        if path and (type(m).__name__ == "OptimizedModule" or getattr(m, "_compiled_call_impl", None) is not None):
            found.append(f"{name}.{path}" if name else path)
    return found


def force_eager() -> Callable[[], None]:
    """Make ``torch.compile``'d code run eagerly (see the module docstring); returns the undo."""
    switch = EagerSwitch()
    switch.set(True)
    return switch.close


def _torch() -> Any:
    """torch, loaded already: dynamo is (this file never imports a framework; ``capture/torch``
    is where torch is imported)."""
    return sys.modules["torch"]


class EagerSwitch:
    """Compiled code run eagerly or compiled, switched at will (``set``), as it was before on
    ``close``. Once dynamo is loaded each switch is ``torch.compiler.set_stance`` (compiled code
    is kept: switching back runs it compiled again, no recompilation); before, eager is
    ``TORCHDYNAMO_DISABLE=1`` (a ``torch.compile`` meanwhile returns the module itself, which stays
    uncompiled) and ``switchable`` is false."""

    def __init__(self) -> None:
        self._frames = sys.modules.get(_DYNAMO)
        self.switchable = self._frames is not None
        self._before = self._frames._stance if self._frames is not None else os.environ.get("TORCHDYNAMO_DISABLE")
        self._eager = False

    def set(self, eager: bool) -> None:
        if eager == self._eager:
            return
        self._eager = eager
        if self._frames is not None:
            if eager:
                _torch().compiler.set_stance("force_eager")
            else:
                self._restore_stance()
        elif eager:
            os.environ["TORCHDYNAMO_DISABLE"] = "1"
        else:
            self._restore_environment()

    def close(self) -> None:
        self.set(False)

    def _restore_stance(self) -> None:
        b = self._before
        _torch().compiler.set_stance(b.stance, skip_guard_eval_unsafe=b.skip_guard_eval_unsafe, force_backend=b.backend)

    def _restore_environment(self) -> None:
        if self._before is None:
            os.environ.pop("TORCHDYNAMO_DISABLE", None)
        else:
            os.environ["TORCHDYNAMO_DISABLE"] = self._before


def add_eager_flag(parser: argparse.ArgumentParser) -> None:
    """``--eager`` for ``modscope run`` and ``record``."""
    parser.add_argument("--eager", action="store_true",
                        help="run torch.compile'd code uncompiled (TORCHDYNAMO_DISABLE=1, TORCH_COMPILE_DISABLE=1), "
                             "so its modules' hooks fire and it is traced; it runs at eager speed")


def apply_eager_flag(args: argparse.Namespace, environ: dict[str, str] | None = None) -> None:
    """With ``--eager``, put ``EAGER_ENVIRONMENT`` in ``environ`` (default: this process's, which
    the script inherits: the child of ``run``, the ranks of ``--nproc-per-node``, or the script
    ``record`` runs in this very process, before it imports dynamo)."""
    if getattr(args, "eager", False):
        (os.environ if environ is None else environ).update(EAGER_ENVIRONMENT)
