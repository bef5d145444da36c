"""``torch.backends.cudnn``: ember has no cuDNN; the flags are stored and change nothing."""
__all__ = ["is_available", "version", "enabled", "deterministic", "benchmark", "allow_tf32"]

enabled = True
deterministic = False
benchmark = False
benchmark_limit = 10
allow_tf32 = True


def is_available():
    """False: ember does not use cuDNN."""
    return False


def version():
    """None: no cuDNN library is loaded."""
    return None
