"""How every ``modscope`` command reports a user error: one line on stderr naming the command, and
exit status 2, as argparse reports a bad argument. Status 1 is kept for a command's own "no"
(``diff``: the runs differ) and a script's own failure passes through as the script's status."""

from __future__ import annotations

import sys

BAD_INPUT = 2


def fail(command: str, message: str) -> int:
    """Print ``modscope COMMAND: error: MESSAGE`` on stderr and return :data:`BAD_INPUT`."""
    print(f"modscope {command}: error: {message}", file=sys.stderr)
    return BAD_INPUT
