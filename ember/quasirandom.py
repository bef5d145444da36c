"""``torch.quasirandom``: `SobolEngine`, Sobol' low-discrepancy sequences.

The direction numbers are Joe and Kuo's (new-joe-kuo-6.21201, up to 21201 dimensions),
the table torch and SciPy both use; ember takes them from SciPy's Sobol engine, whose
30-bit state is torch's ``sobolstate`` entry for entry.  Points follow the Gray-code
order, the first point being the shift (0 unscrambled).  Scrambling draws its random
bits with ``randint`` exactly as torch does (a random digital shift, then a random lower
triangular binary matrix per dimension, linear matrix scrambling), so a seeded engine
gives torch's points.
"""
import numpy as np

from ._core import dtype as _dt
from ._core.tensor import wrap
from .ops import randint
from .random import Generator

__all__ = ["SobolEngine"]


def _direction_numbers(dimension, bits):
    from scipy.stats import qmc
    v = getattr(qmc.Sobol(dimension, scramble=False, bits=bits), "_sv", None)
    if v is None or v.shape != (dimension, bits):     # SciPy keeps the table privately
        raise RuntimeError("SobolEngine: this SciPy version does not expose the Sobol "
                           "direction numbers (scipy.stats.qmc.Sobol._sv)")
    return v.astype(np.int64)


def _parity(x):
    """Parity of the set bits of each (non-negative) int64 of ``x``."""
    return np.bitwise_count(x) & 1


def _gray_steps(state, quasi, start, n):
    """The ``n`` points after point index ``start`` (whose state is ``quasi``, int64 per
    dimension) and the last one: point k is the XOR of the direction numbers at the set
    bits of gray(k) = k ^ (k >> 1) (and the shift), so each is ``quasi`` XOR the numbers
    where gray(k) and gray(start) differ."""
    k = np.arange(start + 1, start + n + 1, dtype=np.int64)
    diff = (k ^ (k >> 1)) ^ (start ^ (start >> 1))
    out = np.broadcast_to(quasi, (n, quasi.shape[0])).copy()
    for b in range(state.shape[1]):
        out ^= ((diff >> b) & 1)[:, None] * state[:, b]
    return out, (out[-1].copy() if n else quasi.copy())


class SobolEngine:
    """Draws Sobol' points in ``[0, 1)^dimension``; ``scramble=True`` randomizes them
    (reproducibly with ``seed``)."""

    MAXBIT = 30
    MAXDIM = 21201

    def __init__(self, dimension, scramble=False, seed=None):
        if dimension > self.MAXDIM or dimension < 1:
            raise ValueError(f"Supported range of dimensionality for SobolEngine is "
                             f"[1, {self.MAXDIM}]")
        self.seed = seed
        self.scramble = scramble
        self.dimension = dimension
        state = _direction_numbers(dimension, self.MAXBIT)
        if scramble:
            state, shift = self._scrambled(state)
        else:
            shift = np.zeros(dimension, np.int64)
        self.sobolstate = wrap(state)
        self.shift = wrap(shift)
        self.quasi = self.shift.clone()
        self._first_point = (self.quasi / 2 ** self.MAXBIT).reshape(1, -1)
        self.num_generated = 0

    def _scrambled(self, state):
        g = None
        if self.seed is not None:
            g = Generator()
            g.manual_seed(self.seed)
        d, bits = self.dimension, self.MAXBIT
        shift_bits = randint(2, (d, bits), generator=g).numpy()
        shift = shift_bits @ (np.int64(1) << np.arange(bits, dtype=np.int64))
        ltm = np.tril(randint(2, (d, bits, bits), generator=g).numpy())
        ltm[:, np.arange(bits), np.arange(bits)] = 1
        # row p of each matrix as a bit pattern, column k weighing 2^(bits-1-k)
        rows = ltm @ (np.int64(1) << np.arange(bits - 1, -1, -1, dtype=np.int64))
        # bit (bits-1-p) of the new entry: parity of row p masked by the old entry
        par = _parity(rows[:, None, :] & state[:, :, None])          # (d, j, p)
        weights = np.int64(1) << np.arange(bits - 1, -1, -1, dtype=np.int64)
        return (par * weights).sum(-1), shift

    def _advance(self, n, start):
        points, q = _gray_steps(self.sobolstate.numpy(), self.quasi.numpy(), start, n)
        self.quasi = wrap(q)
        return points

    def draw(self, n=1, out=None, dtype=None):
        """The next ``n`` points, an ``(n, dimension)`` tensor of ``dtype`` (the default
        dtype when None)."""
        dtype = _dt.get_default_dtype() if dtype is None else dtype
        if self.num_generated == 0:
            rest = self._advance(n - 1, 0) if n > 1 else np.zeros((0, self.dimension),
                                                                   np.int64)
            first = self._first_point.to(dtype).numpy()
            pts = np.concatenate([first, self._scale(rest, dtype)], axis=0)
        else:
            pts = self._scale(self._advance(n, self.num_generated - 1), dtype)
        self.num_generated += n
        result = wrap(pts)
        if out is not None:
            out.resize_as_(result).copy_(result)
            return out
        return result

    @staticmethod
    def _scale(ints, dtype):
        np_dtype = dtype.np
        return ints.astype(np_dtype) * np_dtype.type(2.0 ** -SobolEngine.MAXBIT)

    def draw_base2(self, m, out=None, dtype=None):
        """The next ``2 ** m`` points; the total drawn must stay a power of 2."""
        n = 2 ** m
        total = self.num_generated + n
        if total & (total - 1):
            raise ValueError(
                f"The balance properties of Sobol' points require n to be a power of 2. "
                f"{self.num_generated} points have been previously generated, then: "
                f"n={self.num_generated}+2**{m}={total}. If you still want to do this, "
                f"please use 'SobolEngine.draw()' instead.")
        return self.draw(n=n, out=out, dtype=dtype)

    def reset(self):
        """Back to the first point."""
        self.quasi = self.shift.clone()
        self.num_generated = 0
        return self

    def fast_forward(self, n):
        """Skips the next ``n`` points."""
        if self.num_generated == 0:
            self._advance(n - 1, 0) if n > 1 else None
        else:
            self._advance(n, self.num_generated - 1)
        self.num_generated += n
        return self

    def __repr__(self):
        parts = [f"dimension={self.dimension}"]
        if self.scramble:
            parts.append("scramble=True")
        if self.seed is not None:
            parts.append(f"seed={self.seed}")
        return f"{type(self).__name__}({', '.join(parts)})"
