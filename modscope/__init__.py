"""modscope: hook tracing, diagrams and a live TUI for engine's nn.Module.

The engine never imports modscope; modscope attaches through the engine's public hooks only.
"""

__version__ = "0.1.0"
