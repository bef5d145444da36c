"""The table's record type and its registry (see the package docstring)."""
import string

__all__ = ["ScalarFunction", "TABLE", "define", "RULES", "CTemplate"]

TABLE = {}

# compute-dtype rules (see the package docstring)
RULES = ("float", "same", "promote", "promote_float", "compare", "predicate", "integral")
_SAVES = ("none", "inputs", "output", "both")


class CTemplate(string.Template):
    """``$0 $1 $2`` operands, ``$T`` the C type, ``$S`` its suffix, ``$exp``... functions."""
    idpattern = r"(?a:[_a-z0-9]+)"


class ScalarFunction:
    """One elementwise function (see the package docstring for each field's use)."""
    __slots__ = ("name", "arity", "numpy", "c", "c_int", "c_grad", "c_helper", "rule",
                 "kinds", "derivative", "saves", "reads", "doc")

    def __init__(self, name, arity, numpy, c, *, c_int, c_grad, c_helper, rule, kinds,
                 derivative, saves, doc, reads=None):
        if rule not in RULES:
            raise ValueError(f"{name}: unknown dtype rule {rule!r}")
        if saves not in _SAVES:
            raise ValueError(f"{name}: saves must be one of {_SAVES}, not {saves!r}")
        if derivative is not None and len(derivative) != arity:
            raise ValueError(f"{name}: one derivative per input ({arity}), got "
                             f"{len(derivative)}")
        self.name = name
        self.arity = arity
        self.numpy = numpy
        self.c = c
        self.c_int = c_int
        self.c_grad = c_grad
        self.c_helper = c_helper
        self.rule = rule
        self.kinds = kinds
        self.derivative = derivative
        self.saves = saves
        # per input, the inputs its derivative reads (None: all); only those of the wanted
        # gradients are saved (`ember._core.op.Op`'s ``grad_reads``)
        self.reads = reads
        self.doc = doc

    @property
    def save_inputs(self):
        return self.saves in ("inputs", "both")

    @property
    def save_output(self):
        return self.saves in ("output", "both")

    def __repr__(self):
        return f"<scalar function {self.name}/{self.arity} ({self.rule})>"


def define(name, arity, numpy, c=None, *, c_int=None, c_grad=None, c_helper="", rule,
           kinds="fc", d=None, saves="inputs", reads=None, doc=""):
    """Register one entry; ``d`` is the derivative (one function per input, a bare function
    for unary entries), None for a function without gradient; ``reads``, per input, the
    indices of the inputs its derivative reads (None: every input ``saves`` names)."""
    if name in TABLE:
        raise RuntimeError(f"scalar function {name!r} is defined twice")
    if d is not None and not isinstance(d, tuple):
        d = (d,)
    TABLE[name] = sf = ScalarFunction(name, arity, numpy, c, c_int=c_int, c_grad=c_grad,
                                      c_helper=c_helper, rule=rule, kinds=kinds, derivative=d,
                                      saves=saves if d is not None else "none", doc=doc,
                                      reads=reads if d is not None else None)
    return sf
