"""``torch.compile`` and tracing: compiled code runs none of the Python module hooks modscope
traces, so a model called through its compiled wrapper records no forward or backward at all
(only optimizer steps). This file tells the trace so, and offers the way to see the model: run
its compiled code eagerly (always, or on full steps only). A model compiled while modscope's hooks
are on is traced: dynamo skips modscope's code (``skip_in_dynamo``), so each hook is a graph break
that runs eagerly (without that, dynamo traced the hooks into its graphs and recompiled up to its
limit: seconds for a small model).

- ``compiled_note(root, name, wrapper_search)``: what of ``root`` is compiled (called through
  ``torch.compile``'s wrapper, compiled in place with ``model.compile()``, or compiled submodules),
  as one message for a ``CompiledModel`` error event and a warning; ``None`` when nothing is.
  Cheap unless dynamo has been imported (``import torch`` does not import it; ``torch.compile``
  and transformers do). Then a wrapper of ``root`` is looked for either among the objects the
  running frames hold (``"stack"``: the script's globals and locals, and the attributes of the
  objects there, a trainer's ``self.model``; microseconds) or among every object that refers to
  ``root`` (``"referrers"``: the garbage collector's, complete but 0.1-0.3 s in a process that
  imported transformers). ``trace(model)`` searches the stack at its start; a wrapper it missed
  (or made after the trace started) shows as a full step in which none of the model's hooks
  fired, and only then does the recorder ask the referrers (``Recorder._check_silent_roots``).
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
import importlib.abc
import importlib.machinery
import os
import sys
import types
import warnings
from collections.abc import Callable, MutableMapping
from types import FrameType
from typing import Any, Literal

ETYPE = "CompiledModel"  # the error event's etype
EAGER_ENVIRONMENT = {"TORCHDYNAMO_DISABLE": "1", "TORCH_COMPILE_DISABLE": "1"}
HOW_TO_SEE = ("To see it, run it uncompiled: --eager (modscope run/record) or modscope.trace(model, eager=True), "
              "at eager speed (bench/bench_compile.py); or on full-detail steps only, light steps compiled: "
              "--eager-full or eager='full'")
_DYNAMO = "torch._dynamo.eval_frame"


WrapperSearch = Literal["referrers", "stack", "none"]


def compiled_note(root: Any, name: str, wrapper_search: WrapperSearch = "referrers") -> str | None:
    """What of the module ``root`` (traced as ``name``) runs compiled, and what that means for
    the trace; ``None`` when nothing does (or for an engine module, which cannot be compiled).
    ``wrapper_search``: where to look for a ``torch.compile`` wrapper of ``root`` (see the module
    docstring): ``"referrers"`` (complete, up to a few hundred ms), ``"stack"`` (what the running
    frames hold: cheap, may miss one) or ``"none"``, where ``root`` is known to be called itself
    (a root found in global mode by its own first call: a wrapper would have been the root)."""
    if getattr(type(root), "_compiled_call_impl", False) is False:  # not a torch.nn.Module
        return None
    what = None
    if type(root).__name__ == "OptimizedModule" and hasattr(root, "_orig_mod"):
        what = f"{name} is torch.compile's wrapper of a {type(root._orig_mod).__name__}"
    elif root._compiled_call_impl is not None:
        what = f"{name} ({type(root).__name__}) was compiled in place (model.compile())"
    elif wrapper_search != "none" and _DYNAMO in sys.modules and (
            _wrapped(root) if wrapper_search == "referrers" else wrapped_in_stack(root)):
        what = f"{name} ({type(root).__name__}) is wrapped by torch.compile, and the program may call the wrapper"
    inner = _compiled_submodules(root, name) if _DYNAMO in sys.modules else []
    if what is None and not inner:
        return None
    if inner:
        more = f" (+{len(inner) - 3} more)" if len(inner) > 3 else ""
        part = "compiled submodules: " + ", ".join(inner[:3]) + more
        what = part if what is None else f"{what}; {part}"
    return (f"{what}: compiled code skips the module hooks modscope traces (its calls go unrecorded) or, "
            f"compiled while they are on, breaks its graphs at each of them. {HOW_TO_SEE}")


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


def wrapped_in_stack(module: Any, frame: FrameType | None = None) -> bool:
    """Is a ``torch.compile`` wrapper of ``module`` held by the running frames (from ``frame``,
    default the caller's, out to the first): a value of their locals or globals, an attribute
    of such a value (``self.model`` of a trainer), or an item of a list, tuple or dict there.
    Looks at a few hundred objects and reads no attribute through a property or ``__getattr__``
    (instance dictionaries only); modules, classes and functions are not looked into."""
    frame = frame if frame is not None else sys._getframe(1)
    seen: set[int] = set()
    while frame is not None:
        for scope in (frame.f_locals, frame.f_globals):
            if id(scope) in seen:
                continue
            seen.add(id(scope))
            for value in list(scope.values()):
                if _holds_wrapper(value, module, seen):
                    return True
        frame = frame.f_back
    return False


_OPAQUE = (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType, types.MethodType, str, bytes,
           int, float)
_LOOK_INTO = 1000  # items of a container, attributes of an object: larger ones are not looked into


def _is_wrapper_of(value: Any, module: Any) -> bool:
    if type(value).__name__ != "OptimizedModule":
        return False
    children = vars(value).get("_modules")
    return isinstance(children, dict) and children.get("_orig_mod") is module


def _holds_wrapper(value: Any, module: Any, seen: set[int]) -> bool:
    """``value`` is a wrapper of ``module``, or holds one one level down (see ``wrapped_in_stack``)."""
    if _is_wrapper_of(value, module):
        return True
    if isinstance(value, _OPAQUE) or id(value) in seen:
        return False
    seen.add(id(value))
    if isinstance(value, dict):
        items = value.values()
    elif isinstance(value, list | tuple):
        items = value
    else:
        try:
            items = object.__getattribute__(value, "__dict__").values()
        except (AttributeError, TypeError):
            return False
    if len(items) > _LOOK_INTO:
        return False
    return any(_is_wrapper_of(item, module) for item in list(items))


def _compiled_submodules(root: Any, name: str) -> list[str]:
    found = []
    for path, m in root.named_modules():
        if path and (type(m).__name__ == "OptimizedModule" or getattr(m, "_compiled_call_impl", None) is not None):
            found.append(f"{name}.{path}" if name else path)
    return found


def skip_in_dynamo() -> None:
    """Have dynamo never trace modscope's own code: a model compiled while modscope's hooks are on
    (``torch.compile`` called after the trace started; any compile under ``modscope run``/``record``
    without ``--eager``) had dynamo trace the hooks' bodies, recompile on the objects they touch
    and give up at its recompile limit (9.3 s for a 3-layer model in ``tests``' setting, against 2.9
    s with this). With modscope's files on dynamo's skip list (``trace_rules.add``, as for its own
    builtin skips) each hook is a graph break: it runs eagerly, so the compiled model's module
    calls are recorded, and compiling skips the tracer. Process-wide and kept (modscope's code is
    never worth compiling); once dynamo is imported, which ``watch_dynamo_import`` waits for.

    The directory goes into the set of module paths dynamo skips (``get_mod_skiplist()``, read per
    file it checks), not through ``trace_rules.add``, which recompiles dynamo's skip regex (24 ms:
    a third of a small GPT-2 step, paid by the first step of a trace); ``add`` where that set is
    not there."""
    if _SKIPPED[0] or _RULES not in sys.modules:
        return
    _SKIPPED[0] = True
    rules = sys.modules[_RULES]
    skiplist = getattr(rules, "get_mod_skiplist", None)
    skipped = skiplist() if callable(skiplist) else None
    if isinstance(skipped, set):
        skipped.add(os.path.dirname(os.path.dirname(os.path.abspath(__file__))).replace(os.sep, "/") + "/")
    else:
        rules.add(__name__.partition(".")[0])


_RULES = "torch._dynamo.trace_rules"
_SKIPPED = [False]


def watch_dynamo_import() -> None:
    """``skip_in_dynamo`` now if dynamo is loaded, else as soon as it is imported (a script under
    ``modscope run`` compiles after the trace started): a finder on ``sys.meta_path`` that runs it
    after dynamo's ``trace_rules`` module has run, then takes itself off."""
    if _SKIPPED[0]:
        return
    if _RULES in sys.modules:
        skip_in_dynamo()
    else:
        after_import(_RULES, skip_in_dynamo)


def after_import(name: str, then: Callable[[], None]) -> None:
    """Run ``then()`` once, right after the module ``name`` (not imported yet) has been executed
    (after the callbacks given for it before)."""
    for finder in sys.meta_path:
        if isinstance(finder, _AfterImport) and finder.name == name:
            if then not in finder.callbacks:
                finder.callbacks.append(then)
            return
    sys.meta_path.insert(0, _AfterImport(name, [then]))


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs its ``callbacks`` right after the module ``name`` is executed (its loader's
    ``exec_module``), once; every other import passes through untouched."""

    def __init__(self, name: str, callbacks: list[Callable[[], None]]) -> None:
        self.name, self.callbacks = name, callbacks

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != self.name:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run = spec.loader.exec_module

        def exec_module(module: types.ModuleType) -> None:
            run(module)
            # (taken off only once the module ran: ``importlib.util.find_spec`` alone, which some
            # libraries call to see whether a module exists, executes nothing)
            if self in sys.meta_path:
                sys.meta_path.remove(self)
            for then in self.callbacks:
                try:
                    then()
                except Exception as exc:  # noqa: BLE001 - never break the program's import of dynamo
                    warnings.warn(f"modscope, after {fullname} was imported: {exc!r}", RuntimeWarning, stacklevel=2)

        spec.loader.exec_module = exec_module
        return spec


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
    uncompiled) and ``switchable`` is false.

    ``wait_for_dynamo`` (``eager="full"``, ``--eager-full``): before dynamo is loaded nothing is
    compiled, so nothing is set; the switch remembers what was asked and applies it by
    ``set_stance`` as soon as dynamo has been imported (a script under ``modscope run``/``record``
    that calls ``torch.compile``), and is switchable from then on."""

    def __init__(self, wait_for_dynamo: bool = False) -> None:
        self._frames = sys.modules.get(_DYNAMO)
        self.switchable = self._frames is not None
        self._before = self._frames._stance if self._frames is not None else os.environ.get("TORCHDYNAMO_DISABLE")
        self._eager = False
        self._wanted = False
        self._waiting = wait_for_dynamo and not self.switchable
        if self._waiting:
            after_import(_PACKAGE, self._dynamo_loaded)

    def set(self, eager: bool) -> None:
        self._wanted = eager
        if eager == self._eager or self._waiting:
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
        self._waiting = False  # (dynamo imported later: nothing to apply)

    def _dynamo_loaded(self) -> None:
        if not self._waiting:
            return
        self._waiting = False
        self._frames = sys.modules[_DYNAMO]
        self.switchable = True
        self._before = self._frames._stance
        self.set(self._wanted)

    def _restore_stance(self) -> None:
        b = self._before
        _torch().compiler.set_stance(b.stance, skip_guard_eval_unsafe=b.skip_guard_eval_unsafe, force_backend=b.backend)

    def _restore_environment(self) -> None:
        if self._before is None:
            os.environ.pop("TORCHDYNAMO_DISABLE", None)
        else:
            os.environ["TORCHDYNAMO_DISABLE"] = self._before


_PACKAGE = "torch._dynamo"
EAGER_VARIABLE = "MODSCOPE_EAGER"  # `--eager-full` to the script's trace (run's child, record, the ranks): "full"


def add_eager_flag(parser: argparse.ArgumentParser) -> None:
    """``--eager`` and ``--eager-full`` (one or the other) for ``modscope run`` and ``record``."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--eager", action="store_true",
                       help="run torch.compile'd code uncompiled (TORCHDYNAMO_DISABLE=1, TORCH_COMPILE_DISABLE=1), "
                            "so its modules' hooks fire and it is traced; it runs at eager speed")
    group.add_argument("--eager-full", action="store_true",
                       help="run torch.compile'd code uncompiled on full-detail steps only (traced, at eager speed); "
                            "light steps run compiled, compiled while no module hook is on "
                            "(torch.compiler.set_stance, as modscope.trace(eager='full'))")


def apply_eager_flag(args: argparse.Namespace, environ: dict[str, str] | None = None) -> None:
    """With ``--eager``, put ``EAGER_ENVIRONMENT`` in ``environ`` (default: this process's, which
    the script inherits: the child of ``run``, the ranks of ``--nproc-per-node``, or the script
    ``record`` runs in this very process, before it imports dynamo); with ``--eager-full``,
    ``EAGER_VARIABLE=full``, which the trace takes (``eager_from_env``)."""
    environ = os.environ if environ is None else environ
    if getattr(args, "eager", False):
        environ.update(EAGER_ENVIRONMENT)
    elif getattr(args, "eager_full", False):
        environ[EAGER_VARIABLE] = "full"


def eager_from_env(environ: MutableMapping[str, str] | None = None) -> bool | Literal["full"]:
    """The trace's ``eager`` from ``EAGER_VARIABLE`` (taken out of ``environ``, default this
    process's, so the script does not see it): ``"full"``, or ``False`` when unset (``--eager``
    works through dynamo's own variables). ``ValueError`` naming the variable for anything else."""
    value = (os.environ if environ is None else environ).pop(EAGER_VARIABLE, None)
    if not value:
        return False
    if value != "full":
        raise ValueError(f"${EAGER_VARIABLE}={value!r}: expected 'full' (set by --eager-full)")
    return "full"
