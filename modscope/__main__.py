"""``python -m modscope``: the ``modscope`` command."""

from modscope.cli import main

raise SystemExit(main())
