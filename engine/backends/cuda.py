"""``torch.backends.cuda``: ``matmul.allow_tf32`` (nanoGPT sets it) is kept as set; no CUDA."""


class _MatmulFlags:
    allow_tf32 = False
    allow_fp16_reduced_precision_reduction = True
    allow_bf16_reduced_precision_reduction = True


matmul = _MatmulFlags()


def is_built() -> bool:
    return False
