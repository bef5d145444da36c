"""Samples of the op database for tests/_dynamo/test_opdb_compile.py: which dtype a record
runs in, its samples as (template, arrays), and grown copies of a sample (other sizes)."""
import numpy as np

SEED = 1234
# samples per record: with the grown copies and two calls each, enough to see cache hits,
# recompiles and the symbolic graph, while the whole file stays fast
MAX_SAMPLES = 3

_FORWARD_ORDER = ("float32", "float64", "complex64", "complex128", "int64", "bool")


def call_dtype(op):
    """The dtype a record's forward runs in: float32 where it has it (the common case)."""
    for d in _FORWARD_ORDER:
        if d in op.dtypes:
            return d
    return op.dtypes[0]


def grad_dtype(op):
    """The dtype a record's backward runs in (None: the record has no floating dtype)."""
    for d in ("float32", "float64", "complex64", "complex128"):
        if d in op.dtypes:
            return d
    return None


def leaves(x, acc=None):
    """The NumPy arrays of a sample template (nested in tuples, lists and dicts), in order."""
    acc = [] if acc is None else acc
    if isinstance(x, np.ndarray):
        acc.append(x)
    elif isinstance(x, (list, tuple)):
        for y in x:
            leaves(y, acc)
    elif isinstance(x, dict):
        for y in x.values():
            leaves(y, acc)
    return acc


def rebuild(x, it):
    """The template ``x`` with its arrays replaced, in order, by the items of ``it``."""
    if isinstance(x, np.ndarray):
        return next(it)
    if isinstance(x, list):
        return [rebuild(y, it) for y in x]
    if isinstance(x, tuple):
        return tuple(rebuild(y, it) for y in x)
    if isinstance(x, dict):
        return {k: rebuild(v, it) for k, v in x.items()}
    return x


def _grow_array(a, step):
    if not any(n >= 2 for n in a.shape):
        return a.copy()
    pad = [(0, step if n >= 2 else 0) for n in a.shape]
    b = np.pad(a, pad, mode="wrap")
    if a.dtype.kind in "fc":
        # new entries: shifted copies, so grown matrices are not singular by repetition
        new = np.pad(np.zeros(a.shape, bool), pad, constant_values=True)
        b[new] = (b[new] * 0.75 + 0.125).astype(a.dtype)
    return b


def grown(template, step):
    """``template`` with every array dim of size >= 2 made ``step`` larger (None when no dim
    can grow).  Equal sizes stay equal, so broadcasting and matmul shapes keep matching;
    Python arguments (dims, sizes) are unchanged, so records whose sizes are tied to them
    fail in eager and are not grown."""
    arrays = leaves(template)
    if not any(n >= 2 for a in arrays for n in a.shape):
        return None
    return rebuild(template, iter([_grow_array(a, step) for a in arrays]))
