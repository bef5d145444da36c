"""``torch.backends.mps``: ember has no Metal backend."""
__all__ = ["is_available", "is_built", "is_macos_or_newer", "is_macos13_or_newer"]


def is_available():
    return False


def is_built():
    return False


def is_macos_or_newer(major, minor):
    return False


def is_macos13_or_newer(minor=0):
    return False
