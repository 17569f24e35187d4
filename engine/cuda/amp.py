"""``torch.cuda.amp``: the deprecated spellings of ``engine.amp.GradScaler``/``autocast``, with
torch's FutureWarning."""

from __future__ import annotations

from ..amp import cuda_amp

GradScaler = cuda_amp.GradScaler
autocast = cuda_amp.autocast

__all__ = ["GradScaler", "autocast"]
