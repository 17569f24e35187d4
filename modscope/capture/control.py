"""The traced process's side of the control channel: pause, resume, single step, breakpoints.

The viewer sends JSON lines (``{"cmd": "pause"}``, ``"resume"``, ``"step"``, ``"stop"``,
``{"cmd": "break", "nan": true, "grad_norm": 10.0, "modules": ["fc1"]}``; ``{"cmd": "resume", "until": S}``
resumes and pauses again at the end of step S: a viewer of several ranks holds them all at the same
step boundary with it, see ``views.tui.ranks.RankHold``). ``handle`` runs on the
socket's receiver thread; ``observe`` runs in the training thread on every event and blocks
there while paused, which is what pausing training means.
"""

from __future__ import annotations

import json
import threading
from typing import Any

COMMANDS = ("pause", "resume", "step", "stop", "break", "full")


class ControlError(ValueError):
    """A control message that is not one of ``COMMANDS`` with the right fields."""


def parse_command(line: bytes | str) -> dict[str, Any]:
    try:
        msg = json.loads(line)
    except (ValueError, UnicodeDecodeError) as e:
        raise ControlError(f"control message is not JSON: {e}") from None
    if not isinstance(msg, dict) or msg.get("cmd") not in COMMANDS:
        raise ControlError(f"unknown control message {str(msg)[:80]!r} (commands: {', '.join(COMMANDS)})")
    until = msg.get("until")
    if until is not None and (msg["cmd"] != "resume" or not isinstance(until, int) or isinstance(until, bool)
                              or until < 0):
        raise ControlError("'until' is a step number >= 0, and only 'resume' takes it")
    if msg["cmd"] == "break":
        if not isinstance(msg.get("nan", False), bool):
            raise ControlError("break: 'nan' must be true or false")
        if msg.get("grad_norm") is not None and not isinstance(msg["grad_norm"], int | float):
            raise ControlError("break: 'grad_norm' must be a number or null")
        if not isinstance(msg.get("modules", []), list) or not all(isinstance(m, str) for m in msg.get("modules", [])):
            raise ControlError("break: 'modules' must be a list of module paths")
    return msg


class Controller:
    """Pauses the traced program where the viewer asks. ``trace`` must be set before use.

    The tracer delivers a step's module events at the step's end (``Trace._record``), so a pause
    asked for from the viewer takes effect there, at the step's last event; breakpoints on a module
    or on NaN/Inf switch the tracer to delivering every event as it happens, and stop right where
    they fire. Every message names steps by the ``step`` field of the events (0-based, the
    iteration of the training loop), as the viewer's panels do: ``stepped: step 3 done`` is paused
    in step 3, with step 3 on the timeline."""

    def __init__(self) -> None:
        self._trace: Any = None
        self._go = threading.Event()
        self._go.set()
        self.pause_requested = False
        self.step_mode = False
        self.until_step: int | None = None  # resume ... until: pause again at the end of this step
        self.stop_requested = False
        self._interrupted = False
        self.break_nan = False
        self.break_grad_norm: float | None = None
        self.break_modules: frozenset[str] = frozenset()
        self.rejected: list[str] = []

    def handle(self, line: bytes) -> None:
        """Apply one control message (receiver thread). Bad messages are recorded, not raised."""
        try:
            msg = parse_command(line)
        except ControlError as e:
            self.rejected.append(str(e))
            return
        cmd = msg["cmd"]
        if cmd == "pause":
            self.pause_requested = True
        elif cmd == "resume":
            self.pause_requested = self.step_mode = False
            self.until_step = msg.get("until")
            self._go.set()
        elif cmd == "step":
            self.pause_requested, self.step_mode = False, True
            self._full_detail("a single step from the viewer")  # a step looked at one at a time: in full
            self._go.set()
        elif cmd == "full":
            self._full_detail("asked for from the viewer")
        elif cmd == "stop":
            self.stop_requested = True
            self._go.set()
        else:
            self.break_nan = msg.get("nan", False)
            self.break_grad_norm = msg.get("grad_norm")
            self.break_modules = frozenset(msg.get("modules", []))
            self._sync_delivery()

    def _full_detail(self, why: str) -> None:
        """Have the trace watch its next step in full detail (``capture.sampling``)."""
        if self._trace is not None and hasattr(self._trace, "full_detail"):
            self._trace.full_detail(why)

    @property
    def trace(self) -> Any:
        return self._trace

    @trace.setter
    def trace(self, trace: Any) -> None:
        self._trace = trace
        self._sync_delivery()

    def _sync_delivery(self) -> None:
        # A breakpoint on a module, or on the first NaN/Inf, must stop right there, so the tracer
        # then delivers every event as it happens instead of at the step's end.
        if self._trace is not None:
            self._trace.immediate = bool(self.break_modules) or self.break_nan

    @property
    def idle(self) -> bool:
        """Nothing asked for (no pause, step, stop or breakpoint): no event could make ``observe``
        act, so the tracer need not call it (``Trace`` checks this before each delivery)."""
        return not (self.pause_requested or self.step_mode or self.stop_requested or self.break_nan
                    or self.break_modules or self.break_grad_norm is not None or self.until_step is not None)

    def __call__(self, event: dict[str, Any]) -> None:
        self.observe(event)

    def observe(self, event: dict[str, Any]) -> None:
        """Called on every event in the training thread; blocks while paused."""
        if self.stop_requested:
            self._interrupt()
        reason = self._reason(event)
        if reason:
            self._pause(reason)

    def _reason(self, event: dict[str, Any]) -> str:
        kind = event["kind"]
        # A light step (``capture.sampling``) has no module events and no ``params`` event: its
        # ``step`` event is its last, where a pause or a single step stops, and where a
        # breakpoint's condition seen in the step's figures turns full detail on for the next.
        light = kind == "step" and event.get("detail") == "light"
        if light:
            self._light_step(event)
        if self.pause_requested and not getattr(self.trace, "_batch_rest", 0) and kind != "step":
            # Module events reach the observer at their step's end (unless ``immediate``): that
            # step has run already, so the pause waits for the last event of the batch. The
            # paused step is then complete on screen, and a single step runs the next one. Not
            # on an optimizer's ``step`` event: its ``params`` event follows at once, and the
            # step boundary is after it (ranks are held there, and ``n`` runs the next step).
            return "paused from the viewer"
        if kind == "forward_pre" and event["path"] in self.break_modules:
            return f"breakpoint: forward of module {event['path'] or '(root)'}"
        if kind == "error" and event["etype"] == "NonFiniteValue" and self.break_nan:
            return f"breakpoint: {event['message']}"
        # (a rank of several sends a light step's params event too, its fingerprints: it ends there)
        if light and not getattr(self.trace, "_fingerprints", False):
            if self.pause_requested:
                return "paused from the viewer"
            if self.step_mode:
                return f"stepped: step {event['step']} done"
            if self.until_step is not None and event["step"] >= self.until_step:
                return f"held at the end of step {event['step']} with the other ranks"
        if kind == "params":
            if self.break_grad_norm is not None:
                limit = self.break_grad_norm
                over = [i for i in event["items"] if i["grad_norm"] is not None and i["grad_norm"] > limit]
                if over:
                    return f"breakpoint: grad norm {over[0]['grad_norm']:.3g} of {over[0]['path']} > {limit:g}"
            if self.step_mode:
                return f"stepped: step {event['step']} done"
            if self.until_step is not None and event["step"] >= self.until_step:
                return f"held at the end of step {event['step']} with the other ranks"
        return ""

    def _light_step(self, event: dict[str, Any]) -> None:
        """A light step's gradient norm over the breakpoint's threshold: full detail from the next
        step, said in the status line; its ``params`` event then names the parameter. (NaN/Inf:
        the trace itself turns full detail on, with an error event the NaN breakpoint stops at.)"""
        limit, norm = self.break_grad_norm, event.get("grad_norm")
        if limit is not None and norm is not None and norm > limit:
            self._full_detail(f"breakpoint: grad norm {norm:.3g} > {limit:g} in step {event['step']}")
            self.trace._emit("status", state="running",
                             reason=f"global grad norm {norm:.3g} > {limit:g} in light step {event['step']}: "
                                    f"watching step {event['step'] + 1} in full to find the parameter")

    def _pause(self, reason: str) -> None:
        self.pause_requested = self.step_mode = False
        self.until_step = None
        self._go.clear()
        self.trace._emit("status", state="paused", reason=reason)
        self._go.wait()
        if self.stop_requested:
            self._interrupt()
        self.trace._emit("status", state="running", reason="")

    def _interrupt(self) -> None:
        """Stop the training thread once: the interrupt unwinds the script to the runner,
        which closes the trace (later events must not raise again)."""
        if not self._interrupted:
            self._interrupted = True
            raise KeyboardInterrupt("stopped from the modscope viewer")
