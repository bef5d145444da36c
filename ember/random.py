"""``ember.random``: seeding and RNG state of the default generator (torch.random)."""
from ._core.random import (Generator, default_generator, fork_rng, get_rng_state,  # noqa: F401
                           initial_seed, manual_seed, seed, set_rng_state)

__all__ = ["Generator", "default_generator", "fork_rng", "get_rng_state", "initial_seed",
           "manual_seed", "seed", "set_rng_state"]
