"""Random number generators: ``Generator`` (torch.Generator's API) and the global default.

A Generator wraps a NumPy ``PCG64`` bit generator.  Its state (seed, 128-bit state
and increment, cached half-word) is exported as a uint8 tensor by `get_state` and
restored bit-exactly by `set_state`, so a stream resumes where it was saved.
ember does not reproduce torch's Mersenne-Twister streams, only its API.
"""
import contextlib
import os

import numpy as np

__all__ = ["Generator", "default_generator", "manual_seed", "seed", "initial_seed",
           "get_rng_state", "set_rng_state", "fork_rng", "DEFAULT_SEED"]

DEFAULT_SEED = 67280421310721  # torch's default seed
_U64 = 1 << 64
_LAYOUT = (("seed", 8), ("state", 16), ("inc", 16), ("has_uint32", 1), ("uinteger", 4))
STATE_SIZE = sum(n for _, n in _LAYOUT)


def _check_seed(seed):
    seed = int(seed)
    if not -(1 << 63) <= seed < _U64:
        raise ValueError("Overflow when unpacking long long")
    return seed % _U64


class Generator:
    """A pseudo-random number generator: ``ember.Generator(device='cpu')``."""

    def __init__(self, device="cpu"):
        from .device import device as _device
        self.device = device if isinstance(device, _device) else _device(device)
        self.manual_seed(DEFAULT_SEED)

    def manual_seed(self, seed):
        """Seeds the generator (any int in [-2**63, 2**64)); returns the generator."""
        self._seed = _check_seed(seed)
        self._gen = np.random.Generator(np.random.PCG64(self._seed))
        return self

    def seed(self):
        """Seeds from a non-deterministic source and returns that seed."""
        s = int.from_bytes(os.urandom(8), "little") >> 1
        self.manual_seed(s)
        return s

    def initial_seed(self):
        """The seed this generator was last seeded with."""
        return self._seed

    def get_state(self):
        """The generator state as a uint8 tensor (pass it to `set_state` to resume)."""
        st = self._gen.bit_generator.state
        vals = {"seed": self._seed, "state": st["state"]["state"], "inc": st["state"]["inc"],
                "has_uint32": st["has_uint32"], "uinteger": st["uinteger"]}
        raw = b"".join(int(vals[k]).to_bytes(n, "little") for k, n in _LAYOUT)
        from .tensor import wrap
        return wrap(np.frombuffer(raw, dtype=np.uint8).copy())

    def set_state(self, new_state):
        """Restores a state returned by `get_state`; returns the generator."""
        from .tensor import Tensor
        if not isinstance(new_state, Tensor) or new_state._data.dtype != np.uint8:
            raise TypeError("RNG state must be a ember.ByteTensor")
        raw = np.ascontiguousarray(new_state._data).tobytes()
        if len(raw) != STATE_SIZE:
            raise RuntimeError(f"Expected a CPUGeneratorImplState of size {STATE_SIZE} but found "
                               f"the input RNG state size to be {len(raw)}")
        vals, off = {}, 0
        for k, n in _LAYOUT:
            vals[k] = int.from_bytes(raw[off:off + n], "little")
            off += n
        gen = np.random.Generator(np.random.PCG64(0))
        gen.bit_generator.state = {"bit_generator": "PCG64",
                                   "state": {"state": vals["state"], "inc": vals["inc"]},
                                   "has_uint32": vals["has_uint32"], "uinteger": vals["uinteger"]}
        self._seed, self._gen = vals["seed"], gen
        return self

    def clone_state(self):
        """A new Generator in this one's exact state."""
        return Generator(self.device).set_state(self.get_state())

    def __reduce__(self):
        return (_rebuild, (str(self.device), self.get_state()._data.tobytes()))

    def __repr__(self):
        return f"<ember.Generator object at {hex(id(self))}>"


def _rebuild(device, raw):
    from .tensor import wrap
    return Generator(device).set_state(wrap(np.frombuffer(raw, dtype=np.uint8).copy()))


default_generator = Generator()


def manual_seed(seed):
    """Seeds the default generator; returns it."""
    return default_generator.manual_seed(seed)


def seed():
    """Seeds the default generator non-deterministically; returns the seed."""
    return default_generator.seed()


def initial_seed():
    """The default generator's initial seed."""
    return default_generator.initial_seed()


def get_rng_state():
    """The default generator's state as a uint8 tensor."""
    return default_generator.get_state()


def set_rng_state(new_state):
    """Restores the default generator's state."""
    default_generator.set_state(new_state)


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices",
             device_type="cuda"):
    """Restores the default generator's state on exit, so the block's draws leave no trace."""
    if not enabled:
        yield
        return
    state = default_generator.get_state()
    try:
        yield
    finally:
        default_generator.set_state(state)
