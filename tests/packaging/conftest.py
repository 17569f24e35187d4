"""``smoke/`` tests the installed wheel and runs from its own folder (``make smoke``): the suite
over the clone must not collect it (its first test checks that modscope is not the clone's)."""

collect_ignore = ["smoke"]
