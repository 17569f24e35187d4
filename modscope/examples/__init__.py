"""The bundled examples: small training scripts written for torch against the engine (``import
engine as torch``), and 5,000 MNIST digits in ``data/``. ``modscope demo`` runs them; each also runs
on its own (``python -m modscope.examples.mnist_net`` or ``python path/to/mnist_net.py``, add
``--backend torch``). They ship inside the package so an installed modscope has them.

Importing this package imports no framework: it only says where the files are.
"""

from pathlib import Path

EXAMPLES_DIR = Path(__file__).resolve().parent
