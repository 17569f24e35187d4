"""The terminal UI: a Textual app over an event stream (live, replayed or in-process).

This package never imports ``engine``: it sees only events (``modscope.events``).
"""
