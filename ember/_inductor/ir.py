"""The loop IR the fuse pass produces and the code generators read.

A `Kernel` is one loop nest over an iteration ``space`` (a tuple of sizes, ints or
`sizes.Sym`); ``reduced[d]`` marks the dims its reductions run over (none for a pointwise
kernel).  Its ``stores`` write expression trees into contiguous buffers.  Every buffer
access is affine in the loop variables (`Affine`): movement ops (expand, permute, slice,
select, unsqueeze) only change coefficients, so they cost nothing in a fused loop.

Expressions are immutable and compared by value, so one subexpression reached twice (at
the same index) is computed once in the generated code.  Each keeps its hash once computed
(`_expr`): the passes use expressions as dict keys at every node of trees hundreds deep,
and a recomputed hash would walk the whole subtree each time (quadratic compile time).  ``dtype`` is the name of the
dtype an expression computes in (halves load as float32 and are rounded on store).

The wrapper runs a list of steps: `KernelStep` (a generated kernel), `EagerStep` (a node
whose op runs its eager kernel: extern library calls, ops the generator does not handle,
views of buffers) and the buffers they exchange (`Buffer`)."""
import dataclasses

from . import sizes as _sizes

__all__ = ["Affine", "Load", "Const", "SizeValue", "ScalarArg", "Iota", "Apply", "Cast", "Reduce", "Store",
           "Kernel", "Buffer", "KernelStep", "EagerStep", "Schedule", "depends_on", "walk"]


def _expr(cls):
    """A frozen dataclass whose hash is computed once per object (children keep theirs, so
    hashing a new node is O(its fields)), and whose equality tries identity and the hashes
    before comparing fields."""
    cls = dataclasses.dataclass(frozen=True)(cls)
    field_hash, field_eq = cls.__hash__, cls.__eq__

    def __hash__(self):
        h = self.__dict__.get("_hash")
        if h is None:
            h = field_hash(self)
            object.__setattr__(self, "_hash", h)
        return h

    def __eq__(self, other):
        if self is other:
            return True
        if other.__class__ is not self.__class__:
            return NotImplemented
        if hash(self) != hash(other):
            return False
        return field_eq(self, other)
    cls.__hash__, cls.__eq__ = __hash__, __eq__
    return cls


@_expr
class Affine:
    """``offset + sum(coeffs[d] * i_d)`` over the loop variables ``i_d`` of the space."""
    coeffs: tuple
    offset: object = 0

    @staticmethod
    def var(d, ndim):
        return Affine(tuple(1 if k == d else 0 for k in range(ndim)), 0)

    @staticmethod
    def const(c, ndim):
        return Affine((0,) * ndim, c)

    def scale(self, k):
        return Affine(tuple(_sizes.mul(c, k) for c in self.coeffs), _sizes.mul(self.offset, k))

    def __add__(self, other):
        return Affine(tuple(_sizes.add(a, b) for a, b in zip(self.coeffs, other.coeffs)),
                      _sizes.add(self.offset, other.offset))

    def uses(self):
        return {d for d, c in enumerate(self.coeffs) if c != 0}


@_expr
class Expr:
    pass


@_expr
class Load(Expr):
    buf: str
    index: Affine
    storage: str   # the buffer's dtype name
    dtype: str     # what the load computes in (halves: float32)


@_expr
class Const(Expr):
    value: object
    dtype: str


@_expr
class SizeValue(Expr):
    """A symbolic size used as a number (a mean's divisor): its C expression over the
    kernel's size arguments."""
    size: object   # a sizes.Sym
    dtype: str


@_expr
class ScalarArg(Expr):
    """A Python-scalar graph input, passed to the kernel per call."""
    name: str
    dtype: str


@_expr
class Iota(Expr):
    """The value of an affine form of the loop variables (arange)."""
    index: Affine
    start: float
    step: float
    dtype: str


@_expr
class Apply(Expr):
    fn: str        # a scalar-function table entry
    args: tuple
    dtype: str


@_expr
class Cast(Expr):
    x: Expr
    dtype: str
    round_to: str = None  # a half dtype the value is rounded through (an explicit cast)


@_expr
class Reduce(Expr):
    kind: str      # sum, prod, amax, amin, any, all
    x: Expr
    dtype: str


@_expr
class Store:
    buf: str
    index: Affine
    value: Expr
    storage: str


@dataclasses.dataclass
class Kernel:
    name: str
    space: tuple
    reduced: tuple
    stores: list
    nodes: list = dataclasses.field(default_factory=list)  # graph nodes it computes

    @property
    def inner_dims(self):
        """The dims of the inner loops: the reduced dims (plus the last dim when it is not
        reduced: a column reduction vectorises along it), or the last dim of a pointwise
        kernel."""
        r = tuple(d for d, f in enumerate(self.reduced) if f)
        if r:
            return r + ((len(self.space) - 1,) if self.column else ())
        return (len(self.space) - 1,) if self.space else ()

    @property
    def column(self):
        """A reduction along other dims than the last: accumulators are vectors over it."""
        return any(self.reduced) and not self.reduced[-1]

    def loads(self):
        return [e for s in self.stores for e in walk(s.value) if isinstance(e, Load)]

    def buffers_read(self):
        return sorted({e.buf for e in self.loads()})

    def scalar_args(self):
        return sorted({e.name for s in self.stores for e in walk(s.value)
                       if isinstance(e, ScalarArg)})


def walk(e, seen=None):
    """Every expression under ``e`` once, children first."""
    seen = set() if seen is None else seen
    out = []

    def go(x):
        if x in seen:
            return
        seen.add(x)
        for c in _children(x):
            go(c)
        out.append(x)
    go(e)
    return out


def _children(e):
    if isinstance(e, Apply):
        return e.args
    if isinstance(e, (Cast, Reduce)):
        return (e.x,)
    return ()


def depends_on(e, dims, memo):
    """Whether expression ``e`` varies with any loop variable in ``dims`` (a Reduce does
    not: its reduced variables are bound)."""
    r = memo.get(e)
    if r is None:
        if isinstance(e, (Load, Iota)):
            r = bool(e.index.uses() & dims)
        elif isinstance(e, Reduce):
            r = False
        else:
            r = any(depends_on(c, dims, memo) for c in _children(e))
        memo[e] = r
    return r


@dataclasses.dataclass
class Buffer:
    name: str
    shape: tuple     # ints or Syms
    dtype: object    # ember dtype
    node: object = None
    kind: str = "temp"   # input, constant, temp, output
    reuses: str = None   # the dead buffer whose memory this one takes (memory planning)
    contiguous: bool = False  # a kernel reads it: the wrapper makes it C-contiguous


@dataclasses.dataclass
class KernelStep:
    kernel: Kernel


@dataclasses.dataclass
class EagerStep:
    node: object        # the fx node whose op runs eagerly
    outputs: list       # buffer names it defines (one per output)


@dataclasses.dataclass
class Schedule:
    steps: list
    buffers: dict                 # name -> Buffer
    inputs: list                  # per placeholder: buffer name, or ("scalar", name)
    outputs: list                 # buffer name per graph output
    symbols: dict                 # symbol -> (input position, dim) that binds it
    constants: dict = dataclasses.field(default_factory=dict)  # buffer -> ndarray
