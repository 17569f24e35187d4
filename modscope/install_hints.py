"""How to install modscope's optional parts, said the same way by every message that needs one.

PyPI's default torch wheel for Linux is a CUDA build of several GB; PyTorch's CPU-only index gives
the CPU build, which is all modscope's torch backend needs on a machine without a GPU."""

TORCH_INSTALL = ("pip install torch (a CPU-only build: "
                 "pip install torch --index-url https://download.pytorch.org/whl/cpu)")
