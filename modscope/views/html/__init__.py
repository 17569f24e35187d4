"""HTML from events: what the notebook views (``views.notebook``) and the one-file report
(``views.html.page``, ``modscope report``) are made of.

``digest`` reads a trace once and keeps what a page draws (bounded, with notes on what it
sampled); ``fragments`` writes the module tree, the summary table, rich reports and diagrams as
HTML; ``plots`` draws line charts as inline SVG. Nothing here fetches anything or references a
file: every page works offline.
"""
