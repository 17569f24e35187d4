"""``torch.version``: the engine's version; it is built for no accelerator (``cuda`` is None)."""

__version__ = "0.1.0"
cuda = None
hip = None
rocm = None
xpu = None
debug = False
git_version = None
