"""``torch.backends.cudnn``: the flags scripts set (read back as set) and the queries (no cuDNN)."""

enabled = True
benchmark = False
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    return False


def version() -> None:
    return None
