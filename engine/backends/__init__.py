"""torch.backends as CPU-only training scripts touch it: ``torch.backends.cudnn.benchmark = True``,
``torch.backends.mps.is_available()``, ``torch.backends.cuda.matmul.allow_tf32 = True``. The engine
has no accelerator backend: the queries say so and the switches are accepted and change nothing, as
on a CPU-only build of torch."""

import engine.backends.cuda as cuda
import engine.backends.cudnn as cudnn
import engine.backends.mps as mps

__all__ = ["cuda", "cudnn", "mps"]
