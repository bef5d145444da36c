"""Variance in one pass over the row (Welford statistics, as Chan et al. combine them).

The decomposition of var/std/var_mean (and of layer_norm's statistics) is
``sum((x - sum(x) / n) ** 2)``: two loops over the row, the second waiting on the first.
`welford_parts` recognises that pattern in a row kernel's IR; the C emitter then reads
the row once, in blocks that stay in L1: per block a sum and the sum of squared
deviations from the block's own mean (both ``omp simd`` loops), and Chan's update merges
each block into the running mean and M2 (exact in exact arithmetic, and at least as
accurate as the two-pass form in floating point: each block's mean is corrected by the
sum of its deviations, and the merge runs in double).  The row's plain ``sum(x)`` comes
out of the same loop, so the mean everything else reads is the same expression as before.

Only rows of at least ``config.welford_min_row`` elements take this form: shorter rows stay
in cache between the two passes, which then cost less than the blocks' bookkeeping."""
from .. import ir
from .. import sizes as _sizes

__all__ = ["welford_parts", "BLOCK"]

BLOCK = 1024  # elements per block: a few vectors, re-read from L1 by the second loop


def _is_count(n, length):
    """Whether expression ``n`` is the row length ``length`` as a number."""
    if isinstance(n, ir.Cast):
        n = n.x
    if isinstance(n, ir.Const):
        return isinstance(length, int) and not isinstance(n.value, bool) and n.value == length
    if isinstance(n, ir.SizeValue):
        return _sizes.key(n.size) == _sizes.key(length)
    return False


def welford_parts(e, length):
    """``(x, s)`` when ``e`` is ``Reduce(sum, d * d)`` with ``d = x - s / length`` and
    ``s = Reduce(sum, x)`` (``length`` the reduced row's length), else None."""
    if not isinstance(e, ir.Reduce) or e.kind != "sum" or not e.dtype.startswith("float"):
        return None
    sq = e.x
    if not (isinstance(sq, ir.Apply) and sq.fn == "mul" and len(sq.args) == 2 and
            sq.args[0] == sq.args[1]):
        return None
    d = sq.args[0]
    if not (isinstance(d, ir.Apply) and d.fn == "sub" and len(d.args) == 2):
        return None
    x, mean = d.args
    if not (isinstance(mean, ir.Apply) and mean.fn == "div" and len(mean.args) == 2):
        return None
    s, n = mean.args
    if not (isinstance(s, ir.Reduce) and s.kind == "sum" and s.x == x and
            s.dtype == e.dtype == x.dtype == d.dtype and _is_count(n, length)):
        return None
    return x, s
