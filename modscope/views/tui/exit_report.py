"""What ``modscope run`` prints in the shell once the TUI is gone: the script's last lines of
output and, if it raised, its traceback as ``python script.py`` would show it.

The TUI takes the whole screen while the script runs, so its output and its traceback were
only in the ``l`` and ``x`` panels, and lost with them. The traceback the child records starts
in modscope's own runner (``runpy``, ``modscope/capture/...``) and may pass through its hooks:
``own_frames`` drops those frames, leaving the script's and its libraries'.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

MODSCOPE_DIR = str(Path(__file__).resolve().parents[2])  # the modscope package
RUNNER_FILES = ("<frozen runpy>", "runpy.py")  # the child runs the script through runpy
FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line \d+')
LAST_LINES = 12  # lines of output printed on exit


def is_runner_frame(filename: str) -> bool:
    """A frame of modscope itself or of the runpy machinery that starts the script."""
    return filename.startswith(MODSCOPE_DIR + "/") or filename == RUNNER_FILES[0] or \
        filename.endswith("/" + RUNNER_FILES[1])


def own_frames(traceback_text: str) -> str:
    """``traceback_text`` without the frames of modscope and runpy (each frame's ``File`` line
    and the source and ``^^^`` lines under it); headers, chained-exception notes and the
    exception line stay."""
    out: list[str] = []
    dropping = False
    for line in traceback_text.splitlines():
        frame = FRAME.match(line)
        if frame is not None:
            dropping = is_runner_frame(frame.group("file"))
            if not dropping:
                out.append(line)
            continue
        if dropping and line.startswith("    "):
            continue  # the dropped frame's source line and its markers
        dropping = False
        out.append(line)
    return "\n".join(out)


def script_error(errors: Iterable[dict[str, Any]]) -> dict[str, Any] | None:
    """The error that ended the script (the last one raised by the script itself), if any."""
    return next((e for e in reversed(list(errors)) if e.get("where") == "user script"), None)


def _without(lines: list[str], block: list[str]) -> list[str]:
    """``lines`` with the first run of lines equal to ``block`` taken out (the traceback the
    child printed into its output)."""
    n = len(block)
    if n:
        for i in range(len(lines) - n, -1, -1):
            if lines[i:i + n] == block:
                return lines[:i] + lines[i + n:]
    return lines


def exit_report(script: str, log: Sequence[str], errors: Iterable[dict[str, Any]],
                last: int = LAST_LINES) -> tuple[str, str]:
    """(output, traceback) to print when the TUI exits: the last ``last`` lines the script
    printed, under a line saying how many there were, and its traceback (its own frames: see
    ``own_frames``), both "" when there is nothing to say."""
    name = Path(script).name
    lines = list(log)
    error = script_error(errors)
    traceback = ""
    if error is not None and error.get("traceback"):
        full = error["traceback"].rstrip("\n")
        lines = _without(lines, full.splitlines())
        traceback = own_frames(full)
    while lines and not lines[-1].strip():
        lines.pop()
    output = ""
    if lines:
        shown = lines[-last:]
        more = f"the last {len(shown)} of {len(lines)} lines" if len(lines) > len(shown) else "its output"
        output = "\n".join([f"── {name}: {more} ──", *shown])
    if traceback:
        traceback = f"── {name} raised {error['etype']} ──\n{traceback}"
    return output, traceback


def print_exit_report(script: str, log: Sequence[str], errors: Iterable[dict[str, Any]]) -> None:
    """Print ``exit_report``: the output on stdout and the traceback on stderr, where the script
    would have put them (nothing if the terminal is gone)."""
    output, traceback = exit_report(script, log, errors)
    try:
        if output:
            print(output, flush=True)
        if traceback:
            print(traceback, file=sys.stderr, flush=True)
    except OSError:
        pass
