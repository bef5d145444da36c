"""CTC loss and its gradient: the alpha/beta recursions unrolled over time.

Each time step is a handful of pointwise ops on the (batch, 2 * max_target + 1) lattice,
with the per-sample lengths (static params) as constant masks; the extended labels are
gathered from the targets.  Log-space sums shift by the finite maximum, as the kernel's.
"""
import math

import numpy as np

from ..._core import dtype as _dt
from . import decomposes, no_decomposition
from ._util import cast, const, full, prim, reshape, slice_dim

NINF = -math.inf


def _lse(*xs):
    m = xs[0]
    for x in xs[1:]:
        m = prim.maximum(m, x)
    ms = prim.where(prim.eq(prim.sub(m, m), 0), m, 0)  # finite maxima only
    s = prim.exp(prim.sub(xs[0], ms))
    for x in xs[1:]:
        s = prim.add(s, prim.exp(prim.sub(x, ms)))
    return prim.add(prim.log(s), ms)


def _setup(lp, targets, tgt_lens, blank):
    """Extended labels, lattice validity, skip transitions, and the log-probabilities of
    the extended labels (T, N, S)."""
    T, N, C = lp.shape
    L = max(tgt_lens) if tgt_lens else 0
    S = 2 * L + 1
    pos = np.zeros((N, S), dtype=np.int64)
    is_label = np.zeros((N, S), dtype=bool)
    off = 0
    for n, tl in enumerate(tgt_lens):
        start = n * targets.shape[1] if targets.ndim == 2 else off
        pos[n, 1:2 * tl:2] = start + np.arange(tl)
        is_label[n, 1:2 * tl:2] = True
        off += tl
    flat = reshape(targets, (int(np.prod(targets.shape, dtype=np.int64)),))
    picked = prim.index(flat, const(pos)) if flat.shape[0] else full((N, S), blank, np.int64)
    ext = prim.where(const(is_label), cast(picked, np.int64), blank)
    valid = const(np.arange(S)[None, :] < (2 * np.asarray(tgt_lens)[:, None] + 1))
    if S > 2:
        two_back = slice_dim(ext, 1, 0, S - 2)
        here = slice_dim(ext, 1, 2, S)
        ok = prim.logical_and(prim.ne(here, blank), prim.ne(here, two_back))
        skip = prim.cat(full((N, 2), False, np.bool_), ok, dim=1, sizes=(2, S - 2))
    else:
        skip = full((N, S), False, np.bool_)
    lpe = prim.gather(lp, prim.expand(reshape(ext, (1, N, S)), shape=(T, N, S)), dim=2)
    return ext, valid, skip, lpe, S


def _shift(a, k):
    """a shifted along the lattice by k (>0: from the left, <0: from the right)."""
    N, S = a.shape
    if abs(k) >= S:
        return full((N, S), NINF, a.dtype)
    pad = full((N, abs(k)), NINF, a.dtype)
    if k > 0:
        return prim.cat(pad, slice_dim(a, 1, 0, S - k), dim=1, sizes=(k, S - k))
    return prim.cat(slice_dim(a, 1, -k, S), pad, dim=1, sizes=(S + k, -k))


def _alpha(lpe, valid, skip, in_lens, S):
    T = lpe.shape[0]
    first = prim.select(lpe, key=(0,))
    a = prim.where(const(np.arange(S)[None, :] < 2), first, NINF)
    a = prim.where(valid, a, NINF)
    a = prim.where(const((np.asarray(in_lens) > 0)[:, None]), a, NINF)
    alphas = [a]
    for t in range(1, T):
        prev2 = prim.where(skip, _shift(a, 2), NINF)
        new = prim.where(valid, prim.add(prim.select(lpe, key=(t,)),
                                         _lse(a, _shift(a, 1), prev2)), NINF)
        a = prim.where(const((t < np.asarray(in_lens))[:, None]), new, a)
        alphas.append(new)
    return alphas, a


def _nll(final, tgt_lens):
    N = final.shape[0]
    last = 2 * np.asarray(tgt_lens, dtype=np.int64)
    ar = np.arange(N)
    a1 = prim.index(final, const(ar), const(last))
    a2 = prim.where(const(last > 0), prim.index(final, const(ar), const(np.maximum(last - 1, 0))),
                    NINF)
    return prim.neg(_lse(a1, a2))


def _work(lp):
    return cast(lp, _dt.float32) if lp.dtype.name in ("float16", "bfloat16") else lp


@decomposes("_ctc_loss")
def _ctc_loss(lp, targets, *, in_lens, tgt_lens, blank, zero_inf):
    # torch's derivative of CTC in log_probs is its own formula (exp(lp) - occupancy: the
    # gradient for log_softmax outputs), not the derivative of the recursion; the value
    # comes from stopped-gradient inputs and the derivative from the formula, added as
    # (lp - stop_gradient(lp)) * formula, which is zero in value.  An impossible alignment
    # (infinite loss) gets a zero derivative here where torch's is NaN.
    a = _work(lp)
    frozen = prim._stop_gradient(a)
    nll, grad = _ctc(frozen, targets, in_lens, tgt_lens, blank, zero_inf)
    grad = prim.where(prim.isnan(grad), 0, grad)
    tie = prim.sum(prim.mul(prim.sub(a, frozen), grad), dims=(0, 2), keepdim=False)
    return cast(prim.add(nll, tie), lp.dtype)


@decomposes("_ctc_loss_backward")
def _ctc_loss_backward(lp, targets, *, in_lens, tgt_lens, blank, zero_inf):
    return cast(_ctc(_work(lp), targets, in_lens, tgt_lens, blank, zero_inf)[1], lp.dtype)


def _ctc(a, targets, in_lens, tgt_lens, blank, zero_inf):
    """(nll, d nll / d log_probs by torch's formula) in a's dtype."""
    T, N, C = a.shape
    ext, valid, skip, lpe, S = _setup(a, targets, tgt_lens, blank)
    alphas, final = _alpha(lpe, valid, skip, in_lens, S)
    nll = _nll(final, tgt_lens)
    in_arr = np.asarray(in_lens)
    last = 2 * np.asarray(tgt_lens, dtype=np.int64)
    ends = np.zeros((N, S), dtype=bool)
    ends[np.arange(N), last] = True
    ends[np.arange(N)[last > 0], last[last > 0] - 1] = True
    skip_next = prim.cat(slice_dim(skip, 1, 2, S), full((N, 2), False, np.bool_), dim=1,
                         sizes=(S - 2, 2)) if S > 2 else full((N, S), False, np.bool_)
    b = full((N, S), NINF, a.dtype)
    betas = [None] * T
    for t in range(T - 1, -1, -1):
        lt = prim.select(lpe, key=(t,))
        nxt2 = prim.where(skip_next, _shift(b, -2), NINF)
        rec = prim.where(valid, prim.add(lt, _lse(b, _shift(b, -1), nxt2)), NINF)
        init = prim.where(const(ends), lt, NINF)
        b = prim.where(const((t == in_arr - 1)[:, None]), init,
                       prim.where(const((t < in_arr - 1)[:, None]), rec, NINF))
        betas[t] = b
    alpha = prim.cat(*[reshape(x, (1, N, S)) for x in alphas], dim=0, sizes=(1,) * T)
    beta = prim.cat(*[reshape(x, (1, N, S)) for x in betas], dim=0, sizes=(1,) * T)
    occ = prim.exp(prim.sub(prim.add(prim.add(alpha, beta), reshape(nll, (1, N, 1))), lpe))
    occ = prim.where(prim.eq(prim.sub(occ, occ), 0), occ, 0)
    # gamma[t, n, c]: occupancy summed over the lattice states labelled c
    onehot = cast(prim.eq(reshape(ext, (N, S, 1)), const(np.arange(C).reshape(1, 1, C))),
                  a.dtype)
    gamma = prim.permute(prim.matmul(prim.permute(occ, dims=(1, 0, 2)), onehot),
                         dims=(1, 0, 2))
    grad = prim.sub(prim.exp(a), gamma)
    infinite = reshape(prim.eq(prim.abs(nll), math.inf), (1, N, 1))
    grad = prim.where(infinite, math.nan, grad)
    grad = prim.where(const((np.arange(T)[:, None] < in_arr[None, :])[:, :, None]), grad, 0)
    if zero_inf:
        grad = prim.where(infinite, 0, grad)
        nll = prim.where(prim.eq(prim.abs(nll), math.inf), 0, nll)
    return nll, grad


# the lengths-as-tensors forms exist for vmap only: their batching rule calls _ctc_loss and
# _ctc_loss_backward (decomposed above) with host lengths
for _name in ("_ctc_loss_tensor", "_ctc_loss_tensor_backward"):
    no_decomposition(_name, "lengths are tensor data here (vmap with per-example lengths); "
                            "the batching rule lowers it to the host-length form")
