"""``ember.random``: seeding and RNG state of the default generator (torch.random)."""
from ._core.random import (Generator, default_generator, fork_rng, get_rng_state,  # noqa: F401
                           initial_seed, manual_seed, seed, set_rng_state)

__all__ = ["Generator", "default_generator", "fork_rng", "get_rng_state", "initial_seed",
           "manual_seed", "seed", "set_rng_state", "thread_safe_generator"]


def thread_safe_generator():
    """Returns a thread-safe random number generator for use in DataLoader workers: the
    worker's thread-local ``Generator`` in a thread worker, None in the main process and in
    process workers (functions then use the default generator)."""
    from .utils.data import get_worker_info
    info = get_worker_info()
    if info is not None and getattr(info, "worker_method", None) == "thread" and \
            getattr(info, "rng", None) is not None:
        return info.rng.torch_generator
    return None
