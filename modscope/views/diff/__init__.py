"""``modscope.diff``: compare two traces module by module, from their events alone.

``compute`` holds the comparison and its semantics (read its docstring: how steps, modules and
calls are matched, the relative difference and the threshold, what is ignored as framework
noise), ``model`` the plain data it returns (``TraceDiff``, JSON-able with ``to_dict()``), and
``render`` the rich report (``TraceDiff`` renders itself through it).
"""

from __future__ import annotations

from .compute import DEFAULT_RTOL, DiffInputError, diff, rel_diff
from .model import (
                    Divergence,
                    GraphChange,
                    ModuleInfo,
                    ModuleStep,
                    Number,
                    OrderSplit,
                    StepDiff,
                    StructureChange,
                    TraceDiff,
)

__all__ = ["DEFAULT_RTOL", "DiffInputError", "Divergence", "GraphChange", "ModuleInfo", "ModuleStep", "Number",
           "OrderSplit", "StepDiff", "StructureChange", "TraceDiff", "diff", "rel_diff"]
