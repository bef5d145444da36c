"""What rewritten scripted functions call at their ``if`` and ``while`` statements.

See ``ember.jit._rewrite``: a statement whose condition is *symbolic* (a tensor of a
capture in progress, its value unknown) runs as ``ember.cond`` / ``ember.while_loop`` on
nested functions over the variables it assigns.  Those higher-order ops take and return
tensors (and, for the loop, ints); the helpers here pass the other values (modules,
Python constants, not-yet-defined variables) around them, and fail with the statement's
``File ..., line N`` when a branch or loop would make a non-tensor value depend on a tensor.
"""
import warnings

from .._core.tensor import Tensor
from ._state import current_recorder, is_tracing
from .frontend import NotSupportedError

__all__ = ["UNDEFINED", "values", "first", "is_symbolic", "unsupported", "cond", "while_loop"]


class _Undefined:
    """A variable not assigned yet when a branch or loop starts."""

    def __repr__(self):
        return "<undefined>"


UNDEFINED = _Undefined()


def values(local_vars, names):
    return tuple(local_vars.get(n, UNDEFINED) for n in names)


def first(flag):
    """True the first time (the loop's condition was computed before the loop)."""
    if flag[0]:
        flag[0] = False
        return True
    return False


def is_symbolic(x, where=None, kind="if"):
    """Whether ``x`` is a tensor whose value a capture in progress does not know, or an
    ``if`` condition on a tensor while ``jit.trace`` records (both branches are then kept,
    see ``ember.jit._trace_cond``).  A ``while`` on a tensor under ``jit.trace`` runs as
    Python: the iterations of this example are baked in, with a TracerWarning."""
    if not isinstance(x, Tensor):
        return False
    if "_lazy" in x.__dict__:
        return True
    if where is not None and is_tracing() and current_recorder() is not None:
        if kind == "if":
            return True
        from ._trace import TracerWarning
        warnings.warn(f"jit.trace: the condition of the scripted while loop at {where} is a "
                      f"tensor; the trace records the iterations this example runs, so the "
                      f"trace might not generalize to other inputs", TracerWarning,
                      stacklevel=2)
    return False


def unsupported(where, what):
    raise NotSupportedError(None, f"{what} cannot be compiled with a condition on a tensor "
                                  f"({where}); rewrite it so each branch ends in one place, or "
                                  f"trace the module with ember.jit.trace")


def _error(where, msg):
    return RuntimeError(f"jit.script: {msg} ({where})")


def _split(vals, kinds):
    """Indices of the tensor values (the higher-order op's operands) among ``vals``."""
    return [i for i, v in enumerate(vals) if isinstance(v, kinds)]


def _branch(fn, vals, idx, names, where, returns, record):
    def branch(*operands):
        full = list(vals)
        for i, t in zip(idx, operands):
            full[i] = t
        r = fn(*full)
        if returns:
            return r
        outs = []
        kinds = []
        for name, before, after in zip(names, vals, r):
            if isinstance(after, Tensor):
                outs.append(after)
                kinds.append("T")
            elif after is before or (type(after) is type(before) and after == before):
                kinds.append(None)
            else:
                raise _error(where, f"the branches of an if on a tensor assign {name!r} a "
                                    f"{type(after).__name__} value; only tensors can depend "
                                    f"on a tensor condition")
        record.append(kinds)
        return tuple(outs)
    return branch


def cond(pred, true_fn, false_fn, vals, where, names, returns):
    """``if pred`` as ``ember.cond`` (see the module docstring)."""
    from .._dynamo.control_flow import cond as hop_cond
    idx = _split(vals, Tensor)
    operands = tuple(vals[i] for i in idx)
    rec_t, rec_f = [], []
    bt = _branch(true_fn, vals, idx, names, where, returns, rec_t)
    bf = _branch(false_fn, vals, idx, names, where, returns, rec_f)
    recorder = current_recorder() if is_tracing() and "_lazy" not in pred.__dict__ else None
    if recorder is not None:  # jit.trace through a scripted if: keep both branches
        from ._trace_cond import Impure, record_cond, warn_baked
        taken = bool(pred)
        try:
            out = record_cond(recorder, pred, taken, (bt, bf), operands, where)
        except Impure as e:
            warn_baked(where, str(e))
            out = (bt if taken else bf)(*operands)
            rec_t, rec_f = (rec_t, rec_t) if taken else (rec_f, rec_f)
    else:
        out = hop_cond(pred, bt, bf, operands)
    if returns:
        return out
    kinds_t, kinds_f = rec_t[-1], rec_f[-1]
    if kinds_t != kinds_f:
        bad = [n for n, a, b in zip(names, kinds_t, kinds_f) if a != b][0]
        raise _error(where, f"{bad!r} is a tensor after one branch of an if on a tensor and "
                            f"not after the other; define it before the if or in both "
                            f"branches")
    it = iter(out if isinstance(out, (tuple, list)) else (out,))
    return tuple(next(it) if k == "T" else v for k, v in zip(kinds_t, vals))


def while_loop(cond_fn, body_fn, vals, where, names):
    """``while cond`` as ``ember.while_loop`` over the loop's tensor and int variables."""
    from .._dynamo.control_flow import while_loop as hop_while
    idx = [i for i, v in enumerate(vals) if isinstance(v, Tensor) or isinstance(v, int) and
           not isinstance(v, bool)]
    carried = tuple(vals[i] for i in idx)

    def full(operands):
        f = list(vals)
        for i, t in zip(idx, operands):
            f[i] = t
        return f

    def c(*operands):
        return cond_fn(*full(operands))

    def body(*operands):
        r = body_fn(*full(operands))
        for i, (name, before, after) in enumerate(zip(names, vals, r)):
            if i not in idx and after is not before and before is not UNDEFINED:
                raise _error(where, f"the body of a while loop on a tensor assigns {name!r} a "
                                    f"{type(after).__name__} value; only tensors and ints can "
                                    f"be carried by the loop")
        return tuple(r[i] for i in idx)

    out = hop_while(c, body, carried)
    it = iter(out)
    result = list(vals)
    for i in idx:
        result[i] = next(it)
    return tuple(result)
