"""``torch.accelerator`` (pytorch/examples pick their device with it): none is available."""


def is_available() -> bool:
    return False


def current_accelerator(check_available: bool = False) -> None:
    return None


def device_count() -> int:
    return 0
