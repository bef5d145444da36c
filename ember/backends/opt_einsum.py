"""``torch.backends.opt_einsum``: einsum contraction-order flags (stored)."""
import importlib.util

__all__ = ["is_available", "get_opt_einsum", "enabled", "strategy"]

enabled = True
strategy = "auto"


def is_available():
    """Whether the ``opt_einsum`` package is installed."""
    return importlib.util.find_spec("opt_einsum") is not None


def get_opt_einsum():
    """The ``opt_einsum`` module if installed, else None."""
    if not is_available():
        return None
    import opt_einsum
    return opt_einsum
