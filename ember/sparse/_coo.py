"""Sparse COO tensors (``layout=torch.sparse_coo``): indices, values and a size.

A `SparseCOOTensor` is a Tensor whose ``_data`` is a zero-strided array of its shape
and dtype (so shape/dtype/device metadata answer as for any tensor, with no memory)
and whose content is ``_sp_indices`` (int64, ``(sparse_dim, nnz)``) and ``_sp_values``
(``(nnz, *dense_shape)``), both ember tensors.  Its ``__ember_function__`` takes every
public function and Tensor method it meets: the operations sparse tensors support are
computed from indices and values with ember operators (so ``sparse @ dense`` is
differentiable in the dense operand and in the values), and every other one raises
NotImplementedError as torch does.  The override type is registered when the first
sparse tensor is made, so dense-only programs pay nothing for it.
"""
import numpy as np

from .._core import dtype as _dt
from .._core import layout as _layout
from .._core.dispatch import overridable, register_override_type
from .._core.tensor import Tensor, wrap
from ..ops.shape import cat, stack

__all__ = ["SparseCOOTensor", "sparse_coo_tensor", "to_sparse", "is_sparse_tensor"]


class SparseCOOTensor(Tensor):
    """A tensor in the sparse COO layout."""

    @property
    def layout(self):
        return _layout.sparse_coo

    @property
    def is_sparse(self):
        return True

    @property
    def requires_grad(self):
        return self._sp_values.requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        self._sp_values.requires_grad_(value)

    @property
    def grad_fn(self):
        return self._sp_values.grad_fn

    def requires_grad_(self, requires_grad=True):
        self._sp_values.requires_grad_(requires_grad)
        return self

    def sparse_dim(self):
        return self._sp_indices.shape[0]

    def dense_dim(self):
        return self._sp_values.dim() - 1

    def _nnz(self):
        return self._sp_indices.shape[1]

    def is_coalesced(self):
        return self._coalesced

    def _indices(self):
        return self._sp_indices

    def _values(self):
        return self._sp_values

    def indices(self):
        if not self._coalesced:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call "
                               ".coalesce() first")
        return self._sp_indices.detach()

    def values(self):
        if not self._coalesced:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call "
                               ".coalesce() first")
        return self._sp_values

    def coalesce(self):
        """Sums the values of duplicate indices and sorts the indices (row-major order)."""
        if self._coalesced:
            return self
        idx = self._sp_indices
        sizes = tuple(self.shape[:idx.shape[0]])
        if idx.shape[1] == 0:
            return _make(self._sp_indices, self._sp_values, self.shape, True)
        # in ember ops, so the indices stay on their device: row-major positions, their
        # distinct values (sorted) and each entry's place among them
        uniq, inverse = _flat_positions(idx, sizes).unique(sorted=True, return_inverse=True)
        new_idx = _unflatten_positions(uniq, sizes)
        vals = self._sp_values
        zeros = vals.new_zeros((uniq.shape[0],) + tuple(vals.shape[1:]))
        summed = zeros.index_add(0, inverse.reshape(-1), vals)
        return _make(new_idx, summed, self.shape, True)

    def to_dense(self, dtype=None, *, masked_grad=None):
        """The dense tensor with this tensor's values at its indices (duplicates summed)."""
        shape = self.shape
        sd = self.sparse_dim()
        vals = self._sp_values
        out = vals.new_zeros(shape)
        if self._nnz():
            flat_idx = _flat_positions(self._sp_indices, tuple(shape[:sd]))
            out = out.reshape((-1,) + tuple(shape[sd:])).index_add(
                0, flat_idx, vals).reshape(shape)
        return out if dtype is None else out.to(dtype)

    def to_sparse(self, *args, **kwargs):
        return self

    def detach(self):
        return _make(self._sp_indices, self._sp_values.detach(), self.shape,
                     self._coalesced)

    def clone(self, *, memory_format=None):
        return _make(self._sp_indices.clone(), self._sp_values.clone(), self.shape,
                     self._coalesced)

    def numpy(self, *, force=False):
        raise TypeError("can't convert sparse tensor to numpy; use Tensor.to_dense() first")

    def tolist(self):
        raise NotImplementedError("tolist() is not supported for sparse tensors; use "
                                  "Tensor.to_dense() first")

    def item(self):
        return self.to_dense().item()

    def is_contiguous(self, memory_format=None):
        raise RuntimeError("is_contiguous is not supported for sparse tensors")

    def data_ptr(self):
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")

    def __repr__(self, *, tensor_contents=None):
        ind = repr(self._sp_indices).replace("\n", "\n" + " " * 15)
        val = repr(self._sp_values).replace("\n", "\n" + " " * 14)
        pre = _dt.REPR_PREFIX[0]
        extra = "" if self.dtype is _dt.get_default_dtype() or \
            self.dtype in (_dt.int64, _dt.bool) else f", dtype={self.dtype}"
        return (f"tensor(indices={ind},\n       values={val},\n       size="
                f"{tuple(self.shape)}, nnz={self._nnz()}{extra}, "
                f"layout={pre}sparse_coo)")

    def __reduce_ex__(self, proto):
        return (_rebuild, (self._sp_indices, self._sp_values, tuple(self.shape),
                           self._coalesced))


def _rebuild(indices, values, size, coalesced):
    return _make(indices, values, size, coalesced)


_REGISTERED = [False]


def _make(indices, values, size, coalesced):
    if not _REGISTERED[0]:
        SparseCOOTensor.__ember_function__ = classmethod(_dispatch_sparse)
        register_override_type(SparseCOOTensor)
        _REGISTERED[0] = True
    t = object.__new__(SparseCOOTensor)
    t._data = np.broadcast_to(np.zeros((), dtype=values.dtype.np), tuple(size))
    t._sp_indices = indices
    t._sp_values = values
    t._coalesced = bool(coalesced)
    return t


def is_sparse_tensor(x):
    return type(x) is SparseCOOTensor


@overridable
def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None, pin_memory=False,
                      requires_grad=False, check_invariants=None, is_coalesced=None):
    """Constructs a sparse tensor in COO format with the given values at the given indices."""
    from .. import ops
    if not isinstance(indices, Tensor):
        indices = ops.tensor(indices, dtype=_dt.int64)
    if not isinstance(values, Tensor):
        values = ops.tensor(values, dtype=dtype)
    if indices.dtype is not _dt.int64:
        if indices.dtype.is_floating_point or indices.dtype.is_complex:
            raise RuntimeError(f"indices must be an int64 tensor, got {indices.dtype}")
        indices = indices.to(_dt.int64)
    if indices.dim() != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(indices.shape)}")
    if values.dim() < 1:
        raise RuntimeError("values must have at least one dimension (nnz), got a 0-dim tensor")
    if indices.shape[1] != values.shape[0]:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: "
                           f"{indices.shape[1]}, nnz from values: {values.shape[0]}")
    if dtype is not None and values.dtype is not dtype:
        values = values.to(dtype)
    sd = indices.shape[0]
    idx = indices._data
    if size is None:
        size = tuple(int(m) + 1 for m in idx.max(axis=1)) if idx.shape[1] else (0,) * sd
        size = size + tuple(values.shape[1:])
    size = tuple(int(s) for s in size)
    if len(size) != sd + values.dim() - 1:
        raise RuntimeError(f"number of dimensions must be sparse_dim ({sd}) + dense_dim "
                           f"({values.dim() - 1}), but got {len(size)}")
    if tuple(values.shape[1:]) != size[sd:]:
        raise RuntimeError(f"values has incorrect size, expected {[values.shape[0], *size[sd:]]},"
                           f" got {list(values.shape)}")
    if idx.shape[1]:
        if (idx < 0).any():
            raise RuntimeError(f"found negative index {int(idx.min())} for dim "
                               f"{int(np.argmin(idx.min(axis=1)))}")
        hi = idx.max(axis=1)
        for d in range(sd):
            if hi[d] >= size[d]:
                raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is "
                                   f"{size[d]} but found index {int(hi[d])}")
    if requires_grad:
        values = values.detach().requires_grad_(True)
    return _make(indices, values, size, bool(is_coalesced) if is_coalesced is not None else
                 idx.shape[1] <= 1)


def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
    """The sparse COO form of a dense tensor: its nonzero entries (coalesced)."""
    if layout is not None and layout is not _layout.sparse_coo:
        raise NotImplementedError(f"to_sparse: only the sparse_coo layout is supported, got "
                                  f"{layout}")
    nd = self.dim()
    sd = nd if sparse_dim is None else sparse_dim
    if not 0 <= sd <= nd:
        raise RuntimeError(f"dense_to_sparse: sparse_dim argument must be in [0,{nd}] range, "
                           f"but {sd} is given")
    if sd == 0 and nd:
        raise RuntimeError("dense_to_sparse: sparse_dim argument must be in >0 when "
                           "self.dim()>0")
    shape = tuple(self.shape)
    mask = self != 0
    if sd < nd:
        mask = mask.reshape(shape[:sd] + (-1,)).any(-1)
    if sd:
        idx = mask.nonzero().t().contiguous()
        values = self[tuple(idx)]
    else:
        nnz = int(mask.item())
        idx = self.new_zeros((0, nnz), dtype=_dt.int64)
        values = self.unsqueeze(0)[:nnz]
    return _make(idx, values, shape, True)


# ---- the operations sparse tensors support -----------------------------------------------

def _is_sp(x):
    return type(x) is SparseCOOTensor


def _mm(a, b):
    """sparse @ dense (2-D) -> dense; dense @ sparse -> dense; sparse @ sparse -> sparse."""
    if _is_sp(a) and _is_sp(b):
        return _mm(a, b.to_dense()).to_sparse()
    if not _is_sp(a):  # dense @ sparse = (sparse^T @ dense^T)^T
        return _mm(_transpose(b, 0, 1), a.t()).t()
    if a.dim() != 2 or b.dim() not in (1, 2) or a.dense_dim():
        raise RuntimeError(f"sparse matmul: expected a 2-D sparse matrix and a 1-D or 2-D dense "
                           f"operand, got sizes {list(a.shape)} and {list(b.shape)}")
    if a.shape[1] != b.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({a.shape[0]}x{a.shape[1]}"
                           f" and {'x'.join(str(s) for s in b.shape)})")
    rows, cols = wrap(a._sp_indices._data[0]), wrap(a._sp_indices._data[1])
    vals = a._sp_values
    if vals.dtype is not b.dtype:
        from .._core.dtype import promote_types
        dt = promote_types(vals.dtype, b.dtype)
        vals, b = vals.to(dt), b.to(dt)
    picked = b.index_select(0, cols)
    prod = picked * (vals.reshape((-1,) + (1,) * (b.dim() - 1)))
    out = b.new_zeros((a.shape[0],) + tuple(b.shape[1:]))
    return out.index_add(0, rows, prod)


def _transpose(s, d0, d1):
    nd = s.dim()
    d0, d1 = d0 % nd, d1 % nd
    if max(d0, d1) >= s.sparse_dim():
        raise NotImplementedError("transpose of a sparse tensor's dense dimensions")
    perm = list(range(s.sparse_dim()))
    perm[d0], perm[d1] = perm[d1], perm[d0]
    size = list(s.shape)
    size[d0], size[d1] = size[d1], size[d0]
    return _make(wrap(s._sp_indices._data[perm]), s._sp_values, size, False)


def _add(a, b, *, alpha=1, out=None):
    if out is not None:
        raise NotImplementedError("add(out=) with sparse operands")
    if _is_sp(a) and _is_sp(b):
        if tuple(a.shape) != tuple(b.shape):
            raise RuntimeError(f"add: expected sizes to match, got {list(a.shape)} and "
                               f"{list(b.shape)}")
        bv = b._sp_values * alpha if alpha != 1 else b._sp_values
        if bv.dtype is not a._sp_values.dtype:
            bv = bv.to(a._sp_values.dtype)
        return _merge(a, b, bv)
    if _is_sp(b):  # dense + sparse -> dense
        return a + (b.to_dense() * alpha if alpha != 1 else b.to_dense())
    if isinstance(b, Tensor):  # sparse + dense -> dense
        return a.to_dense() + b * alpha
    raise RuntimeError("add(sparse, scalar) is not supported: adding a scalar to a sparse "
                       "tensor would make it dense; use to_dense() first")


def _merge(a, b, bv):
    """torch's sparse + sparse (``bv``: b's values times alpha).  With contiguous values,
    one pass over both entry lists, each read in its stored order, taking the entry whose
    index is smaller (row-major) and summing the two when the indices are equal: coalesced
    operands give the coalesced sum, others a sum marked uncoalesced.  With non-contiguous
    values (an embedding's gradient of a sum is an expanded one) torch concatenates the
    entries instead, as its accumulated sparse gradients show.  An operand without entries
    leaves the other one as it is."""
    if b._nnz() == 0:
        return _make(a._sp_indices.clone(), a._sp_values.clone(), a.shape, a._coalesced)
    if a._nnz() == 0:
        return _make(b._sp_indices.clone(), bv if bv is not b._sp_values else bv.clone(),
                     a.shape, b._coalesced)
    if not (a._sp_values.is_contiguous() and b._sp_values.is_contiguous()):
        return _make(cat([a._sp_indices, b._sp_indices], 1), cat([a._sp_values, bv]),
                     a.shape, False)
    sizes = tuple(a.shape[:a.sparse_dim()])
    ka = _flat_positions(a._sp_indices, sizes).numpy(force=True)
    kb = _flat_positions(b._sp_indices, sizes).numpy(force=True)
    slot_a, slot_b, first = _merge_slots(ka, kb)
    va = a._sp_values
    n = int(first.shape[0])
    idx = a._sp_indices.new_tensor(first)
    indices = cat([a._sp_indices, b._sp_indices], 1).index_select(1, idx)
    values = va.new_zeros((n,) + tuple(va.shape[1:])).index_add(
        0, idx.new_tensor(slot_a), va).index_add(0, idx.new_tensor(slot_b), bv)
    return _make(indices, values, a.shape, a._coalesced and b._coalesced)


_MERGE_LEVELS = 32   # tie levels merged as arrays; entries tied deeper go one by one


def _merge_slots(ka, kb):
    """torch's merge of key sequences ``ka`` and ``kb`` (each in its stored order, sorted or
    not): take the smaller current key, both when equal.  Returns each entry's output slot
    and, for each slot, the entry (of ``ka`` then ``kb``, concatenated) whose index it
    takes.

    Done with arrays, not a loop: the merge takes the keys in the order of their running
    maxima (a key below the running maximum of its own list waits behind it), so sorting
    by the running maximum orders everything except the entries tied with the other
    list's at the same maximum.  There the two records meet and merge into one slot, and
    the entries after them, up to the next maximum, are a merge of their own: the next
    level, with running maxima restarted (``seg`` numbers these sub-merges).  Each level
    adds its (running maximum, merged record or not) columns to one final lexsort."""
    na, nb = ka.shape[0], kb.shape[0]
    n = na + nb
    keys = np.concatenate([ka, kb])
    side = np.zeros(n, dtype=np.int64)
    side[na:] = 1
    cols = []                          # per level: running maximum, 0 for a merged record
    paired = np.zeros(n, dtype=bool)   # b's entry of a merged pair (its slot is a's)

    def settle(act, top, rec, both, group):
        """Record a level's columns; the entries left for the next one and their seg."""
        col_top, col_rec = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
        col_top[act] = top
        col_rec[act] = ~(both & rec)
        cols.extend((col_top, col_rec))
        paired[act[both & rec & (side[act] == 1)]] = True
        deeper = both & ~rec
        seg[act[deeper]] = np.unique(group[deeper], return_inverse=True)[1].reshape(-1)
        return act[deeper]

    # the first level: one sub-merge of the two whole lists, whose running maxima are sorted
    ta, tb = np.maximum.accumulate(ka), np.maximum.accumulate(kb)
    top = np.concatenate([ta, tb])
    rec = np.ones(n, dtype=bool)
    rec[1:na] = ta[1:] != ta[:-1]
    rec[na + 1:] = tb[1:] != tb[:-1]
    both = np.empty(n, dtype=bool)   # the other list reaches the same maximum
    first_b = np.minimum(np.searchsorted(tb, ta), max(nb - 1, 0))   # its first entry there
    both[:na] = tb[first_b] == ta if nb else False
    group_b = np.cumsum(rec[na:]) - 1   # b's maxima numbered
    hit = np.zeros(nb, dtype=bool)
    hit[group_b[first_b[both[:na]]]] = True
    both[na:] = hit[group_b]
    seg = np.zeros(n, dtype=np.int64)
    act = settle(np.arange(n), top, rec, both, top)
    for _ in range(_MERGE_LEVELS - 1):   # the entries tied below a shared maximum
        if not act.size:
            break
        r = np.unique(keys[act], return_inverse=True)[1].reshape(-1)
        s, sd = seg[act], side[act]
        big = act.size + 1
        rec = np.ones(act.size, dtype=bool)   # runs: one list's part of one sub-merge
        rec[1:] = (s[1:] != s[:-1]) | (sd[1:] != sd[:-1])
        run = np.cumsum(rec) - 1
        top = np.maximum.accumulate(run * big + r) - run * big
        rec[1:] |= top[1:] != top[:-1]
        group = s * big + top
        on_a = sd == 0
        both = np.empty(act.size, dtype=bool)
        both[on_a] = np.isin(group[on_a], group[~on_a])
        both[~on_a] = np.isin(group[~on_a], group[on_a])
        act = settle(act, top, rec, both, group)
    if act.size:
        cols.append(_merge_loop_columns(ka, kb, act, seg, side, paired))
    if len(cols) == 2 and n and top.max() < 1 << 61:
        # one level (no ties below a shared maximum): a stable sort keeps the stored order
        order = np.argsort(cols[0] * 2 + cols[1], kind="stable")
    else:
        pos = np.concatenate([np.arange(na), np.arange(nb)])
        order = np.lexsort([pos, side] + cols[::-1])
    new = ~paired[order]
    slots = np.empty(n, dtype=np.int64)
    slots[order] = np.cumsum(new) - 1
    return slots[:na], slots[na:], order[new]


def _merge_loop_columns(ka, kb, act, seg, side, paired):
    """The last sort column for the entries of sub-merges still open after
    ``_MERGE_LEVELS`` levels: their slots in a one-by-one merge of each."""
    na = ka.shape[0]
    col = np.zeros(side.shape[0], dtype=np.int64)
    s, on_a = seg[act], side[act] == 0
    for g in np.unique(s):
        ia, ib = act[(s == g) & on_a], act[(s == g) & ~on_a]
        la, lb = ka[ia].tolist(), kb[ib - na].tolist()
        i = j = k = 0
        while i < len(la) or j < len(lb):
            take_a = j >= len(lb) or (i < len(la) and la[i] <= lb[j])
            take_b = i >= len(la) or (j < len(lb) and lb[j] <= la[i])
            if take_a:
                col[ia[i]] = k
                i += 1
            if take_b:
                col[ib[j]] = k
                paired[ib[j]] = take_a
                j += 1
            k += 1
    return col


def _scale(s, other, op):
    if isinstance(other, Tensor) and (_is_sp(other) or other.dim() > 0):
        if _is_sp(other):
            return (op(s.to_dense(), other.to_dense())).to_sparse()
        raise NotImplementedError("elementwise product of a sparse and a dense tensor")
    return _make(s._sp_indices, op(s._sp_values, other), s.shape, s._coalesced)


def _sum(s, dim=None, keepdim=False, *, dtype=None):
    d = s.to_dense()
    if dim is None:
        return d.sum(dtype=dtype)
    r = d.sum(dim, keepdim=keepdim, dtype=dtype)
    return r.to_sparse() if r.dim() else r


def _to(s, *args, **kwargs):
    from .._core.dtype import dtype as _dtype_cls
    dt = kwargs.get("dtype")
    for a in args:
        if isinstance(a, _dtype_cls):
            dt = a
        elif isinstance(a, Tensor):
            dt = a.dtype
    dev = kwargs.get("device")
    for a in args:
        if not isinstance(a, (_dtype_cls, Tensor)):
            dev = a
    if dev is not None and str(dev).split(":")[0] != "cpu":
        raise RuntimeError(f"sparse tensors live on the CPU in ember; cannot move to {dev}")
    if dt is None or dt is s.dtype:
        return s
    return _make(s._sp_indices, s._sp_values.to(dt), s.shape, s._coalesced)


def _size_of(s, *a, **k):
    return Tensor.size(s, *a, **k)


import operator  # noqa: E402

_HANDLERS = {
    "mm": _mm, "matmul": _mm, "__matmul__": _mm, "spmm": _mm,
    "smm": lambda a, b: _mm(a, b).to_sparse(),
    "__rmatmul__": lambda a, b: _mm(b, a), "_matmul_magic": _mm,
    "_rmatmul_magic": lambda a, b: _mm(b, a),
    "add": _add, "__add__": _add, "__radd__": lambda a, b: _add(b, a),
    "mul": lambda a, b: _scale(a, b, operator.mul) if _is_sp(a) else _scale(b, a, operator.mul),
    "__mul__": lambda a, b: _scale(a, b, operator.mul),
    "__rmul__": lambda a, b: _scale(a, b, operator.mul),
    "div": lambda a, b: _scale(a, b, operator.truediv),
    "__truediv__": lambda a, b: _scale(a, b, operator.truediv),
    "neg": lambda a: _make(a._sp_indices, -a._sp_values, a.shape, a._coalesced),
    "__neg__": lambda a: _make(a._sp_indices, -a._sp_values, a.shape, a._coalesced),
    "sum": _sum, "to": _to,
    "cpu": lambda s, memory_format=None: s,
    "t": lambda s: _transpose(s, 0, 1) if s.dim() == 2 else s,
    "transpose": lambda s, dim0, dim1: _transpose(s, dim0, dim1),
    "float": lambda s, memory_format=None: _to(s, _dt.float32),
    "double": lambda s, memory_format=None: _to(s, _dt.float64),
    "long": lambda s, memory_format=None: _to(s, _dt.int64),
    "relu": lambda s: _make(s._sp_indices, s._sp_values.relu(), s.shape, s._coalesced),
    "is_floating_point": lambda s: s.dtype.is_floating_point,
    "size": _size_of,
}


# functions torch runs on sparse operands through products only: the same values densified
_DENSIFIED = frozenset(("lobpcg",))
# functions whose implementation takes sparse operands as they are (products, sums)
_SPARSE_AWARE = frozenset(("pca_lowrank", "svd_lowrank"))


def _dispatch_sparse(cls, func, types, args=(), kwargs=None):
    kwargs = kwargs or {}
    name = getattr(func, "__name__", "")
    if name in _DENSIFIED:
        def dense(v):
            return v.to_dense() if _is_sp(v) else v
        return getattr(func, "__wrapped_impl__", func)(
            *[dense(a) for a in args], **{k: dense(v) for k, v in kwargs.items()})
    if name in _SPARSE_AWARE:
        return getattr(func, "__wrapped_impl__", func)(*args, **kwargs)
    h = _HANDLERS.get(name)
    if h is None:
        raise NotImplementedError(f"Could not run '{name}' with arguments from the sparse COO "
                                  f"layout: ember's sparse tensors support "
                                  f"{', '.join(sorted(n for n in _HANDLERS if n[0] != '_'))}; "
                                  f"use Tensor.to_dense() first")
    return h(*args, **kwargs)


def _dense_to_dense(self, dtype=None, *, masked_grad=None):
    return self if dtype is None else self.to(dtype)


Tensor.to_sparse = to_sparse
Tensor.to_sparse_coo = lambda self: to_sparse(self)
Tensor.to_dense = _dense_to_dense
Tensor.sparse_dim = lambda self: 0
Tensor.dense_dim = lambda self: self.dim()


# the COO accessors on a strided tensor raise torch's layout errors (SparseCOOTensor defines
# the working ones)
def _coo_only(name, expected="sparse coordinate tensor"):
    def method(self):
        raise RuntimeError(f"{name} expected {expected} layout but got Strided")
    method.__name__ = method.__qualname__ = name
    return method


Tensor.coalesce = _coo_only("coalesce")
Tensor.is_coalesced = _coo_only("is_coalesced")
Tensor.indices = _coo_only("indices")
Tensor.values = _coo_only("values", "sparse tensor")


def _smm(self, mat):
    """``torch.smm(self, mat)``: sparse ``self`` times dense ``mat``, as a sparse tensor."""
    if not isinstance(self, SparseCOOTensor):
        raise RuntimeError("tensor.sspaddmm(...) can only be called on sparse tensors")
    from . import smm
    return smm(self, mat)


Tensor.smm = _smm


def _flat_positions(indices, sizes):
    """Row-major positions (int64) of the columns of ``indices`` in an array of ``sizes``."""
    flat = indices.new_zeros((indices.shape[1],))
    for d, n in enumerate(sizes):
        flat = flat * n + indices[d]
    return flat


def _unflatten_positions(flat, sizes):
    """The ``(len(sizes), n)`` indices of row-major positions ``flat``."""
    rows, rest = [], flat
    for n in reversed(sizes):
        rows.append(rest % n)
        rest = rest // n
    if not rows:
        return flat.new_zeros((0, flat.shape[0]))
    return stack(rows[::-1])
