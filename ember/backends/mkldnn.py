"""``torch.backends.mkldnn``: ember has no oneDNN kernels; the flags are stored."""
__all__ = ["is_available", "enabled", "deterministic", "allow_tf32"]

enabled = True
deterministic = False
allow_tf32 = True


def is_available():
    return False
