"""Random number generators: ``Generator`` (torch.Generator's API) and the global default.

A Generator is torch's CPU generator: a 32-bit Mersenne Twister (mt19937) seeded the
classic way from the low 32 bits of the seed, 64-bit draws made of two consecutive
32-bit words (first one high), plus the cached second Box-Muller sample for float and
double.  The twisting itself runs in NumPy's MT19937 bit generator (same recurrence),
so after ``manual_seed(s)`` the raw stream is torch's word for word, and the samplers
in ``ember.ops.random`` turn it into torch's values.  `get_state`/`set_state` use
torch's 5056-byte CPUGeneratorImplState layout, so states move between the two.
"""
import contextlib
import os
import struct
import threading

import numpy as np

__all__ = ["Generator", "default_generator", "manual_seed", "seed", "initial_seed",
           "get_rng_state", "set_rng_state", "fork_rng", "DEFAULT_SEED", "ACCESS_HOOKS"]

# called with the generator before its stream is drawn from, read or reset: a compiled
# region whose pending graph holds draws runs it first, so draws keep eager's order
ACCESS_HOOKS = []

DEFAULT_SEED = 67280421310721  # torch's default seed
_U64 = 1 << 64
_N = 624
# torch's CPUGeneratorImplState: legacy pod (seed, left, seeded, next, 624 64-bit words,
# normal_x, normal_y, normal_rho, normal_is_valid) then the float normal cache
_HEAD = struct.Struct("<QiiQ")
_TAIL = struct.Struct("<dddi4xf?3x")
STATE_SIZE = _HEAD.size + 8 * _N + _TAIL.size  # 5056


def _check_seed(seed):
    seed = int(seed)
    if not -(1 << 63) <= seed < _U64:
        raise ValueError("Overflow when unpacking long long")
    return seed % _U64


def _seed_key_loop(seed):
    """The mt19937 state words for ``seed``: init_genrand's recurrence, one word a step."""
    key = [seed & 0xFFFFFFFF]
    for j in range(1, _N):
        prev = key[-1]
        key.append((1812433253 * (prev ^ (prev >> 30)) + j) & 0xFFFFFFFF)
    return np.array(key, dtype=np.uint32)


def _seed_words(bits, seed):
    """Seeds bit generator ``bits`` with init_genrand(low 32 bits of ``seed``), position
    624 (the next draw twists), as torch seeds; NumPy's own legacy seeding runs that
    recurrence in C (1.7 us; the Python loop takes 180 us)."""
    seed &= 0xFFFFFFFF
    legacy = getattr(bits, "_legacy_seeding", None)
    if legacy is not None:
        legacy(seed)
    else:   # a NumPy without it
        bits.state = {"bit_generator": "MT19937",
                      "state": {"key": _seed_key_loop(seed), "pos": _N}}


_SCRATCH = []           # one MT19937 for _seed_key, made on first use, under its lock
_SCRATCH_LOCK = threading.Lock()


def _seed_key(seed):
    """The mt19937 state words for ``seed`` (only its low 32 bits count, as in torch)."""
    with _SCRATCH_LOCK:
        if not _SCRATCH:
            _SCRATCH.append(np.random.MT19937(0))
        _seed_words(_SCRATCH[0], seed)
        return _SCRATCH[0].state["state"]["key"]


class Generator:
    """A pseudo-random number generator: ``ember.Generator(device='cpu')``."""

    def __init__(self, device="cpu"):
        from .device import device as _device
        self.device = device if isinstance(device, _device) else _device(device)
        self._bits = np.random.MT19937()
        self.manual_seed(DEFAULT_SEED)

    def _load(self, key, pos, next_):
        self._bits.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": pos}}
        # torch keeps `next` at 0 after seeding though its next twist is due, like pos 624;
        # remember it so a state read before any draw round-trips byte for byte
        self._pending = (key.copy(), next_) if pos == _N else None

    def manual_seed(self, seed):
        """Seeds the generator (any int in [-2**63, 2**64)); returns the generator."""
        if ACCESS_HOOKS:
            _accessed(self)
        self._seed = _check_seed(seed)
        _seed_words(self._bits, self._seed)
        self._pending = (None, 0)   # the key is the seed's (computed if get_state asks)
        self._normal_f = None  # cached second Box-Muller samples (float / double)
        self._normal_d = None
        return self

    def seed(self):
        """Seeds from a non-deterministic source and returns that seed."""
        # 53 bits, as torch: the seed survives a round trip through a Python float
        s = int.from_bytes(os.urandom(8), "little") & ((1 << 53) - 1)
        self.manual_seed(s)
        return s

    def initial_seed(self):
        """The seed this generator was last seeded with."""
        return self._seed

    # ---- raw draws (torch's random() and random64()) -----------------------------------
    def _u32(self, n):
        """``n`` consecutive 32-bit words, as uint64."""
        if ACCESS_HOOKS:
            _accessed(self)
        return self._bits.random_raw(n)

    def _u64(self, n):
        """``n`` 64-bit draws, each two consecutive words with the first one high."""
        if ACCESS_HOOKS:
            _accessed(self)
        w = self._bits.random_raw(2 * n)
        return (w[0::2] << np.uint64(32)) | w[1::2]

    def _one32(self):
        if ACCESS_HOOKS:
            _accessed(self)
        return int(self._bits.random_raw())

    def _one64(self):
        if ACCESS_HOOKS:
            _accessed(self)
        hi, lo = self._bits.random_raw(2).tolist()
        return (hi << 32) | lo

    @property
    def _gen(self):
        """A NumPy Generator seeded from this stream, for the samplers that have no
        torch-exact form yet: deterministic under ``manual_seed`` and advancing the stream."""
        return np.random.Generator(np.random.PCG64(self._one64()))

    # ---- state ---------------------------------------------------------------------------
    def get_state(self):
        """The generator state as a uint8 tensor in torch's CPU layout (5056 bytes)."""
        if ACCESS_HOOKS:
            _accessed(self)
        st = self._bits.state["state"]
        key, pos = st["key"], int(st["pos"])
        next_ = pos
        if pos == _N and self._pending is not None:
            if self._pending[0] is None:
                self._pending = (_seed_key(self._seed), self._pending[1])
            if np.array_equal(self._pending[0], key):
                next_ = self._pending[1]
        nd, nf = self._normal_d, self._normal_f
        raw = (_HEAD.pack(self._seed, _N + 1 - pos, 1, next_)
               + key.astype("<u8").tobytes()
               + _TAIL.pack(0.0, 0.0 if nd is None else nd, 0.0, nd is not None,
                            0.0 if nf is None else nf, nf is not None))
        from .tensor import wrap
        return wrap(np.frombuffer(raw, dtype=np.uint8).copy())

    def set_state(self, new_state):
        """Restores a state from `get_state` (or torch's ``get_rng_state()``)."""
        if ACCESS_HOOKS:
            _accessed(self)
        from .tensor import Tensor
        if not isinstance(new_state, Tensor) or new_state._data.dtype != np.uint8:
            raise TypeError("RNG state must be a ember.ByteTensor")
        raw = np.ascontiguousarray(new_state._data).tobytes()
        if len(raw) != STATE_SIZE:
            raise RuntimeError(f"Expected a CPUGeneratorImplState of size {STATE_SIZE} but found "
                               f"the input RNG state size to be {len(raw)}")
        seed, left, seeded, next_ = _HEAD.unpack_from(raw, 0)
        if not (seeded and 0 < left <= _N and next_ <= _N):
            raise RuntimeError("Invalid mt19937 state")
        words = np.frombuffer(raw, dtype="<u8", count=_N, offset=_HEAD.size)
        _, nd, _, nd_ok, nf, nf_ok = _TAIL.unpack_from(raw, _HEAD.size + 8 * _N)
        self._seed = seed
        self._load(words.astype(np.uint32), _N + 1 - left, next_)
        self._normal_d = nd if nd_ok else None
        self._normal_f = float(np.float32(nf)) if nf_ok else None
        return self

    def clone_state(self):
        """A new Generator in this one's exact state."""
        return Generator(self.device).set_state(self.get_state())

    def __reduce__(self):
        return (_rebuild, (str(self.device), self.get_state()._data.tobytes()))

    def __repr__(self):
        return f"<ember.Generator object at {hex(id(self))}>"

    # Philox (counter-based) generators have an offset; a CPU mt19937 has none, and torch's
    # CPU generator raises exactly this
    def get_offset(self):
        raise RuntimeError("CPU Generator does not use offset")

    def set_offset(self, offset):
        raise RuntimeError("CPU Generator does not use offset")


def _accessed(gen):
    for hook in ACCESS_HOOKS:
        hook(gen)


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
             device_type=None):
    """Restores the default generator's state on exit, so the block's draws leave no trace.
    ember's generators are all host-side, so the one default generator covers every device
    (``devices``/``device_type`` name nothing further to fork)."""
    if not enabled:
        yield
        return
    state = default_generator.get_state()
    try:
        yield
    finally:
        default_generator.set_state(state)
