"""Decompositions: every operator that is not a primitive, written in primitives.

``@decomposes("softmax")`` registers ``decomp(*inputs, **params)``: it takes the op's
positional inputs and its params exactly as the op's kernel does, returns what the op
returns (a tensor, or a tuple for several outputs), and calls only primitive operators
(`ember.ops.primitives`), through the `prim` namespace of `._util` (``prim.add(a, b)`` is
``REGISTRY["add"](a, b)``).  Constants built from shapes alone (iota, masks, index
tables) are graph constants, not operator calls.

Ops declared outside ``ember/ops`` register later than this package is imported, so
registration is by name: `install()` sets ``op.decomp`` on every registered op that has
one (it runs when ``ember.ops`` finishes importing, and again, idempotently, from
`decomposition_of` and the tests after ``import ember``).

Ops that cannot sensibly decompose are listed in `NO_DECOMP` with the reason: the
rejection samplers (Poisson, Gamma, Binomial), whose number of draws depends on the values
drawn.  Recurrences over time (RNN layers, CTC) are unrolled: a traced sequence length is
static.
"""
from ..._core.op import ON_REGISTER, REGISTRY, mark_unsupported

__all__ = ["DECOMPOSITIONS", "NO_DECOMP", "FUNCTIONALIZED", "decomposes", "install",
           "decomposition_of"]

DECOMPOSITIONS = {}
NO_DECOMP = {}
# ops that write their inputs in place and return nothing (the fused optimizer updates):
# their decompositions are functional, returning one entry per input, its new value or
# None for an input only read
FUNCTIONALIZED = set()


def decomposes(*names):
    """Register the decorated function as the decomposition of the ops ``names``."""
    def deco(fn):
        for n in names:
            if n in DECOMPOSITIONS:
                raise RuntimeError(f"decomposition of {n!r} registered twice")
            DECOMPOSITIONS[n] = fn
        return fn
    return deco


def no_decomposition(name, reason):
    NO_DECOMP[name] = reason


_PRIMITIVE_MARK = "primitive: lowered directly, never decomposed (ember.ops.primitives)"


def install():
    """Set ``op.decomp`` for every registered op with a registered decomposition, and mark
    the ``decomp`` rule of primitives and of `NO_DECOMP` ops in ``op.unsupported``."""
    for op in list(REGISTRY.values()):
        _install_one(op)


def _install_one(op):
    from ..primitives import PRIMITIVES
    name = op.name
    if op.decomp is not None:
        return
    fn = DECOMPOSITIONS.get(name)
    if fn is not None:
        op.decomp = fn
        return
    reason = _PRIMITIVE_MARK if name in PRIMITIVES else (
        "no decomposition, reason: " + NO_DECOMP[name] if name in NO_DECOMP else None)
    if reason is not None and "decomp" not in op.unsupported:
        mark_unsupported("decomp", reason, op)


def decomposition_of(op):
    """The decomposition of ``op`` (an Op or a name), or None."""
    name = op if isinstance(op, str) else op.name
    fn = DECOMPOSITIONS.get(name)
    if fn is not None and name in REGISTRY and REGISTRY[name].decomp is None:
        install()
    return fn


from . import (pointwise, reduction, shape, indexing, random, nn,  # noqa: E402,F401
               nn_windows, rnn, ctc, linalg, creation, optim)

install()
ON_REGISTER.append(_install_one)  # ops declared later (on first use) get theirs
