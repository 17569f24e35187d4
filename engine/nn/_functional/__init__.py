"""The implementations behind ``engine.nn.functional``, one file per kind of op.

Each op computes on NumPy arrays and records one graph node with its own backward closure
(``engine._ops._core.result``), named as torch names it (``ConvolutionBackward0``, ...). Where
torch itself composes an op from smaller ones (``l1_loss``, label smoothing, dropout), the same
small ops are recorded so a graph walked from the loss reads like torch's.
"""

from ._allocator import tune_malloc

tune_malloc()
