"""The lite runtime's C generator: one C entry point for a whole lite graph.

The C is generated here, at load time, from the graph the loader has validated; nothing
executable comes from the file (a file's C would be code from an untrusted source, and
loading never runs code from the file).  What the graph contributes is data this module
formats itself: operator names (looked up in its own tables), integer sizes and strides,
size expressions re-checked with ``ast`` (integers, symbols, ``+ - * // %``, max/min), float
literals, and the index tables of constant ``tensor`` nodes, which are passed as inputs at
run time (their values are checked against the indexed size here, never compiled in).

The subset: float32/float64 values (bool ones from comparisons, for ``where``; int64 ones
as indices, through views and copies, and in the elementwise ops that cannot trap); the
elementwise primitives of the scalar-function table (`ember_lite._ctable`, generated from
ember's table) with tensor or scalar operands and broadcasting, a chain of them fused into
one loop where each value has one elementwise reader; casts; ``sum``/``amax``/``amin`` over
any dims; ``matmul`` (batched, broadcast) through BLAS (`ember_lite._cblas`, NumPy's own
OpenBLAS) with a plain loop where a stride does not fit BLAS; views (``view``,
``permute``, ``expand``, ``slice``, ``select``, ``_stop_gradient``) as strides, copies where
a view needs contiguous data; ``_reshape_copy``, ``cat``, constant ``pad``, ``index`` with
one integer table (constant: the gathers of convolution and pooling; or an input, each
index checked per call: embeddings), ``full`` and float ``tensor`` constants.  Nodes no
output depends on are dropped first.  A graph with anything else gets None and a reason,
and runs on the NumPy kernels as before.

Symbolic sizes are arguments, so one library serves every batch size.  Intermediates live
in one arena per thread, kept between calls (freed when the thread ends), where a dead
value's buffer serves a later one of the same size; outputs are written into arrays the
caller allocates.  The entry is ``int lite_entry(void **in, void **out, const int64_t
*sym)``: ``in`` the used placeholders then the constant tables, in `CProgram.inputs` order,
``sym`` the symbols in `CProgram.symbols` order.  It returns 0; 1 when the arena cannot be had (or
its size overflows); 2 when the sizes of this call break what the graph's shapes imply (the
file's shapes decide no memory access unchecked: a hostile file must not make the C read
out of bounds), and the caller then runs the NumPy kernels, which raise their own error.
"""
import ast
import math

import numpy as np

from . import _cblas, _ctable
from ._format import _parse, eval_size, is_extremum
from ._graph import Ref, _Sym, decode

__all__ = ["generate", "CProgram", "ABI"]

ABI = 1
_CT = {"float32": ("float", "f32", "s"), "float64": ("double", "f64", "d"),
       "bool": ("_Bool", None, None), "int64": ("int64_t", None, None)}
_FLOAT = ("float32", "float64")


class Unsupported(Exception):
    """The graph is outside the subset this generator covers (the message says where)."""


class CProgram:
    """What `generate` made: ``source``; ``inputs``, the ``("placeholder", name)`` or
    ``("table", array)`` of each entry input; ``symbols``; ``outputs``, ``(shape, dtype
    name)`` per graph output (sizes as the file writes them); ``matmuls``, per product the
    sizes whose product is its multiply-adds (K, then the output's shape); ``placeholders``,
    the ``(dtype, static shape or None)`` the C assumes of each input."""

    def __init__(self, source, inputs, symbols, outputs, matmuls, uses_blas, placeholders):
        self.source, self.inputs, self.symbols = source, inputs, symbols
        self.placeholders = placeholders
        self.outputs, self.matmuls, self.uses_blas = outputs, matmuls, uses_blas


# ---- size expressions: Python ints where known, C text otherwise -------------------------
def _c_size(text):
    tree = _parse(text)
    if tree is None:
        raise Unsupported(f"size expression {text!r}")

    def c(n):
        if isinstance(n, ast.Constant) and type(n.value) is int:
            return str(n.value)
        if isinstance(n, ast.Name):
            return f"sym_{n.id}"
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
            return f"(-{c(n.operand)})"
        if isinstance(n, ast.BinOp):
            a, b = c(n.left), c(n.right)
            op = type(n.op)
            if op is ast.Add:
                return f"({a} + {b})"
            if op is ast.Sub:
                return f"({a} - {b})"
            if op is ast.Mult:
                return f"({a} * {b})"
            if op in (ast.FloorDiv, ast.Mod):
                # a divisor of 0 (or -1 of INT64_MIN) would trap: constants > 0 only
                if not (isinstance(n.right, ast.Constant) and type(n.right.value) is int
                        and n.right.value > 0):
                    raise Unsupported(f"size expression {text!r}: a divisor that is not a "
                                      f"positive constant")
                return f"lite_{'fdiv' if op is ast.FloorDiv else 'fmod'}({a}, {b})"
        if is_extremum(n):
            a, b = c(n.args[0]), c(n.args[1])
            return f"(({a}) {'>' if n.func.id == 'max' else '<'} ({b}) ? ({a}) : ({b}))"
        raise Unsupported(f"size expression {text!r}")
    return c(tree)


def _size(v):
    if type(v) is int:
        return v
    if isinstance(v, _Sym):
        return _c_size(v.expr)
    if isinstance(v, str):
        return _c_size(v)
    raise Unsupported(f"size {v!r}")


def _mul(a, b):
    if type(a) is int and type(b) is int:
        return a * b
    if a == 0 or b == 0:
        return 0
    if a == 1:
        return b
    if b == 1:
        return a
    return f"({_atom(a)} * {_atom(b)})"


def _atom(x):
    return str(x) if type(x) is int or " " not in x or x[0] == "(" and _closes(x) else f"({x})"


def _closes(x):
    """Whether the parenthesis opening ``x`` closes at its end."""
    depth = 0
    for k, ch in enumerate(x):
        depth += (ch == "(") - (ch == ")")
        if depth == 0:
            return k == len(x) - 1
    return False


def _add(a, b):
    if type(a) is int and type(b) is int:
        return a + b
    if a == 0:
        return b
    if b == 0:
        return a
    return f"({a} + {b})"


def _prod(xs):
    p = 1
    for x in xs:
        p = _mul(p, x)
    return p


def _contiguous(shape):
    st, acc = [], 1
    for n in reversed(shape):
        st.append(acc)
        acc = _mul(acc, n)
    return st[::-1]


def _literal(x, dtype):
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise Unsupported(f"scalar operand {x!r}")
    if dtype == "int64":
        if type(x) is not int or not -2 ** 63 < x < 2 ** 63:
            raise Unsupported(f"scalar operand {x!r} of an int64 op")
        return f"INT64_C({x})"
    x = float(x)
    if math.isnan(x):
        return "NAN"
    if math.isinf(x):
        return "INFINITY" if x > 0 else "(-INFINITY)"
    return f"{x!r}f" if dtype == "float32" else repr(x)


class _T:
    """A tensor during generation: a typed base pointer (C text), sizes and strides."""
    __slots__ = ("ptr", "dtype", "shape", "strides", "buf")

    def __init__(self, ptr, dtype, shape, strides=None, buf=None):
        self.ptr, self.dtype, self.shape = ptr, dtype, list(shape)
        # the arena buffer it is (or views), None for an input
        self.buf = buf if buf is not None else ptr if ptr[0] == "b" and ptr[1:].isdigit() \
            else None
        self.strides = list(strides) if strides is not None else _contiguous(self.shape)

    @property
    def contiguous(self):
        return self.strides == _contiguous(self.shape)

    def at(self, idx):
        """C text of the element at loop indices ``idx`` (names, one per dim)."""
        terms = [f"{i} * {s}" if s != 1 else i for i, s in zip(idx, self.strides) if s != 0]
        return f"{self.ptr}[{' + '.join(terms) or 0}]"


class _Lazy:
    """A pointwise value that is not stored: its C expression at loop indices, inlined into
    its one pointwise reader of the same shape (vertical fusion: a chain of elementwise ops
    is one loop).  ``holds`` are the buffers the expression reads, kept alive until then."""
    __slots__ = ("dtype", "shape", "expr", "holds")

    def __init__(self, dtype, shape, expr, holds):
        self.dtype, self.shape, self.expr, self.holds = dtype, shape, expr, holds


_HELPERS = r"""
#include <stdlib.h>
static inline int64_t lite_fdiv(int64_t a, int64_t b) {
    int64_t q = a / b; return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q; }
static inline int64_t lite_fmod(int64_t a, int64_t b) {
    int64_t r = a % b; return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }
/* arena += the 64-byte-aligned bytes of an n-dim buffer; nonzero on a negative size or
   an overflow (sizes come from the file and the inputs: a lie fails here, not in memory) */
static int lite_grow(size_t *arena, size_t item, int n, const int64_t *dims) {
    size_t bytes = item;
    for (int d = 0; d < n; d++) {
        if (dims[d] < 0 || __builtin_mul_overflow(bytes, (size_t)dims[d], &bytes)) return 1;
    }
    if (__builtin_add_overflow(bytes, (size_t)63, &bytes)) return 1;
    bytes &= ~(size_t)63;
    return __builtin_add_overflow(*arena, bytes, arena);
}
/* the arena of this thread, kept between calls and grown as needed (a fresh allocation
   per call measured slower than the whole program at small batches: page faults); freed
   when the thread ends (a thread per request must not leak one each) */
#include <pthread.h>
static __thread char *lite_arena_ptr;
static __thread size_t lite_arena_cap;
static char lite_no_bytes[64];
static pthread_key_t lite_arena_key;
static pthread_once_t lite_arena_once = PTHREAD_ONCE_INIT;
static void lite_arena_key_make(void) { pthread_key_create(&lite_arena_key, free); }
static char *lite_arena(size_t size) {   /* size: a multiple of 64 (lite_grow) */
    if (size == 0) return lite_no_bytes;
    if (size > lite_arena_cap) {
        pthread_once(&lite_arena_once, lite_arena_key_make);
        free(lite_arena_ptr);
        lite_arena_ptr = (char *)aligned_alloc(64, size);
        lite_arena_cap = lite_arena_ptr ? size : 0;
        pthread_setspecific(lite_arena_key, lite_arena_ptr);
    }
    return lite_arena_ptr;
}
#define LITE_MM(S, T)                                                                      \
static void lite_mm_##S(int64_t M, int64_t N, int64_t K, const T *A, int64_t sam,          \
                        int64_t sak, const T *B, int64_t sbk, int64_t sbn, T *C) {          \
    for (int64_t i = 0; i < M; i++)                                                         \
        for (int64_t j = 0; j < N; j++) {                                                   \
            T acc = 0;                                                                      \
            for (int64_t k = 0; k < K; k++) acc += A[i * sam + k * sak] * B[k * sbk + j * sbn]; \
            C[i * N + j] = acc;                                                             \
        }                                                                                   \
}
LITE_MM(f32, float)
LITE_MM(f64, double)
"""


class _Gen:
    def __init__(self, nodes, ctx):
        self.nodes, self.ctx = nodes, ctx
        self.lines, self.buffers = [], []   # buffers: (name, C type, numel)
        self.inputs, self.matmuls = [], []
        self.uses_blas = False
        self.symbols = set()
        self.env, self.meta = {}, {}
        self.placeholders = {}   # name -> (dtype, static shape or None)
        self.checks = []   # C conditions the sizes must meet (else the entry returns 2)
        self.owners = {}   # buffer -> the live values that are it, view it or read it
        self.holds = {}    # value -> the buffers it keeps alive
        self.pool = {}     # (C type, element count) -> free buffers
        self.users = {}    # value -> the targets of the live nodes that read it

    # -- emission helpers --------------------------------------------------------------
    def fresh(self, dtype, shape):
        key = (_CT[dtype][0], str(_prod(shape)))
        if self.pool.get(key):
            return _T(self.pool[key].pop(), dtype, shape)
        name = f"b{len(self.buffers)}"
        self.buffers.append((name, _CT[dtype][0], list(shape)))
        return _T(name, dtype, shape)

    def hold(self, value, bufs):
        self.holds.setdefault(value, set()).update(bufs)
        for b in bufs:
            self.owners.setdefault(b, set()).add(value)

    def release(self, value):
        """``value`` has no later reader: a buffer is free once no value holds it."""
        for b in sorted(self.holds.pop(value, ())):
            self.owners[b].discard(value)
            if not self.owners[b]:
                _, ctype, shape = next(e for e in self.buffers if e[0] == b)
                self.pool.setdefault((ctype, str(_prod(shape))), []).append(b)

    def same(self, a, b, what):
        """Sizes ``a`` and ``b`` must be equal: known now, or checked on every call (the
        file's shapes are never trusted for memory: a lie must not read out of bounds)."""
        if a == b:
            return
        if type(a) is int and type(b) is int:
            raise Unsupported(f"{what}: size {a} is not {b}")
        self.checks.append(f"({a}) == ({b})")

    def same_shape(self, a, b, what):
        if len(a) != len(b):
            raise Unsupported(f"{what}: {len(a)} dims, not {len(b)}")
        for x, y in zip(a, b):
            self.same(x, y, what)

    def loop(self, shape, body, simd=True, indent="    ", var="i"):
        """Lines of a loop nest over ``shape`` (indices ``{var}0``...); ``body(idx)`` gives
        the innermost lines."""
        idx = [f"{var}{d}" for d in range(len(shape))]
        out, pad = [], indent
        for d, n in enumerate(shape):
            if simd and d == len(shape) - 1:
                out.append(pad + "#pragma omp simd")
            out.append(f"{pad}for (int64_t {idx[d]} = 0; {idx[d]} < {n}; {idx[d]}++) {{")
            pad += "    "
        out += [pad + ln for ln in body(idx)]
        for d in range(len(shape)):
            pad = pad[:-4]
            out.append(pad + "}")
        if not shape:
            out = [indent + "{"] + [indent + "    " + ln for ln in body([])] + [indent + "}"]
        return out

    def copy(self, x):
        out = self.fresh(x.dtype, x.shape)
        self.lines += self.loop(x.shape, lambda i: [f"{out.at(i)} = {x.at(i)};"])
        return out

    def tensor(self, v, what):
        if isinstance(v, Ref):
            t = self.env.get(v.name)
            if isinstance(t, _Lazy):  # a reader that cannot inline it: store it
                out = self.fresh(t.dtype, t.shape)
                self.lines += self.loop(t.shape, lambda i: [f"{out.at(i)} = {t.expr(i)};"])
                self.env[v.name] = t = out
                self.hold(v.name, {out.buf})
            if isinstance(t, tuple) and t[1].dtype.name in _CT:  # an int/bool constant
                slot = len(self.inputs)
                self.inputs.append(t)
                self.env[v.name] = t = _T(f"(({_CT[t[1].dtype.name][0]} *)in[{slot}])",
                                          t[1].dtype.name, list(t[1].shape))
            if isinstance(t, _T):
                return t
        raise Unsupported(f"{what}: operand {getattr(v, 'name', v)!r} is not a tensor the C "
                          f"can read")

    # -- the graph ---------------------------------------------------------------------
    def run(self):
        live = self.live()
        # the step after which each value is dead: its buffer returns to the pool then
        dies = {}
        for i, n in enumerate(self.nodes):
            if n["name"] not in live and n.get("op") != "output":
                continue   # a dead reader is never generated: it frees nothing
            refs = set()
            _refs(n.get("args"), refs)
            _refs(n.get("kwargs"), refs)
            for r in refs:
                dies[r] = i if n.get("op") != "output" else None
                self.users.setdefault(r, []).append(
                    n.get("target") if n.get("op") == "call_function" else "output")
                self.users[r] += ["again"] * (_count(n.get("args"), r) +
                                              _count(n.get("kwargs"), r) - 1)
        dying = {}
        for r, i in sorted(dies.items()):  # sorted: the source must not vary by process
            if i is not None:
                dying.setdefault(i, []).append(r)
        names = set()
        for i, n in enumerate(self.nodes):
            name, kind = n["name"], n["op"]
            at = f"node {name}"
            self.meta[name] = n.get("meta")
            if kind == "placeholder":
                if name in live:
                    meta = n.get("meta") or {}
                    dt = meta.get("dtype")
                    if dt not in _CT or not isinstance(meta.get("shape"), list):
                        raise Unsupported(f"input {name} of dtype {dt}")
                    shape = [self.sym(s) for s in meta["shape"]]
                    slot = len(self.inputs)
                    self.inputs.append(("placeholder", name))
                    self.placeholders[name] = (np.dtype(dt), tuple(shape) if all(
                        type(v) is int for v in shape) else None)
                    self.env[name] = _T(f"(({_CT[dt][0]} *)in[{slot}])", dt, shape)
            elif kind == "call_function":
                if name in live:
                    args = [decode(a, names, at, self.ctx) for a in n.get("args", [])]
                    kwargs = {k: decode(v, names, at, self.ctx)
                              for k, v in (n.get("kwargs") or {}).items()}
                    self.node(name, n.get("target"), args, kwargs, n.get("meta"))
                    t = self.env.get(name)
                    if isinstance(t, _Lazy):
                        self.hold(name, t.holds)
                    elif isinstance(t, _T) and t.buf is not None:
                        self.hold(name, {t.buf})
                    for r in dying.get(i, ()):
                        self.release(r)
            elif kind == "output":
                outs = [decode(a, names, at, self.ctx) for a in n["args"]][0]
                outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
                return self.finish(outs)
            names.add(name)
        raise Unsupported("no output node")

    def live(self):
        users = {}
        out = None
        for n in self.nodes:
            refs = set()
            _refs(n.get("args"), refs)
            _refs(n.get("kwargs"), refs)
            users[n["name"]] = refs
            if n.get("op") == "output":
                out = refs
        live, todo = set(), list(out or ())
        while todo:
            k = todo.pop()
            if k not in live:
                live.add(k)
                todo += users.get(k, ())
        return live

    def sym(self, s):
        v = _size(s)
        if isinstance(s, (str, _Sym)):
            tree = _parse(s if isinstance(s, str) else s.expr)
            calls = {id(x.func) for x in ast.walk(tree) if is_extremum(x)}
            self.symbols |= {x.id for x in ast.walk(tree)
                             if isinstance(x, ast.Name) and id(x) not in calls}
        return v

    def shape_of(self, meta, what):
        if not isinstance(meta, dict) or not isinstance(meta.get("shape"), list):
            raise Unsupported(f"{what}: no shape recorded")
        if meta.get("dtype") not in _CT:
            raise Unsupported(f"{what}: dtype {meta.get('dtype')}")
        return [self.sym(s) for s in meta["shape"]], meta["dtype"]

    def node(self, name, target, args, kwargs, meta):
        at = f"node {name} ({target})"
        if target == "tensor":
            data = kwargs.get("data")
            if not isinstance(data, np.ndarray):
                raise Unsupported(f"{at}: literal data")
            dt = np.dtype(kwargs.get("dtype") or data.dtype)
            self.env[name] = ("table", np.ascontiguousarray(data, dt))
            if dt.name in _FLOAT:  # a float constant is an input like a weight
                slot = len(self.inputs)
                self.inputs.append(("table", self.env[name][1]))
                self.env[name] = _T(f"(({_CT[dt.name][0]} *)in[{slot}])", dt.name,
                                    list(data.shape))
            return
        shape, dtype = self.shape_of(meta, at)
        self.meta_shape_of_out = meta["shape"]
        if dtype not in _CT:
            raise Unsupported(f"{at}: dtype {dtype}")
        if target in _ctable.EXPR:
            self.env[name] = self.pointwise(at, target, args, kwargs, shape, dtype,
                                            self.users.get(name, ()))
        elif target == "_to_copy":
            x = self.tensor(args[0], at)
            if dtype == "int64" and x.dtype not in ("int64", "bool"):
                raise Unsupported(f"{at}: float to integer")  # C leaves NaN's undefined
            out = self.fresh(dtype, shape)
            self.same_shape(x.shape, shape, at)
            ctype = _CT[dtype][0]
            self.lines += self.loop(shape, lambda i: [f"{out.at(i)} = ({ctype}){x.at(i)};"])
            self.env[name] = out
        elif target == "cat":
            self.env[name] = self.cat(at, args, kwargs, shape, dtype)
        elif target in ("sum", "amax", "amin"):
            self.env[name] = self.reduce(at, target, args, kwargs, shape, dtype)
        elif target == "matmul":
            self.env[name] = self.matmul(at, args, shape, dtype)
        elif target in ("slice", "select"):
            t = self.slice(at, self.tensor(args[0], at), kwargs.get("key"))
            if t.dtype != dtype:
                raise Unsupported(f"{at}: dtype")
            self.same_shape(t.shape, shape, at)
            self.env[name] = t
        elif target in ("_stop_gradient", "permute", "view", "_reshape_copy", "expand"):
            x = self.tensor(args[0], at)
            if x.dtype != dtype:
                raise Unsupported(f"{at}: dtype")
            if target == "permute":
                dims = [d % len(x.shape) if type(d) is int else None for d in kwargs["dims"]]
                if sorted(dims, key=str) != list(range(len(x.shape))):
                    raise Unsupported(f"{at}: dims {kwargs['dims']}")
                t = _T(x.ptr, dtype, [x.shape[d] for d in dims], [x.strides[d] for d in dims],
                       x.buf)
            elif target == "expand":
                t = self.broadcast(x, shape, at)
            elif target == "_stop_gradient":
                t = x
            else:
                self.same(_prod(shape), _prod(x.shape), at)
                if target == "_reshape_copy" or not x.contiguous:
                    x = self.copy(x)
                t = _T(x.ptr, dtype, shape, None, x.buf)
            self.same_shape(t.shape, shape, at)
            self.env[name] = t
        elif target == "pad":
            self.env[name] = self.pad(at, args, kwargs, shape, dtype)
        elif target == "index":
            self.env[name] = self.index(at, args, shape, dtype)
        elif target == "full":
            if dtype not in _FLOAT:
                raise Unsupported(f"{at}: dtype")
            out = self.fresh(dtype, shape)
            v = _literal(kwargs.get("fill_value"), dtype)
            self.lines += self.loop([_prod(shape)], lambda i: [f"{out.ptr}[{i[0]}] = {v};"])
            self.env[name] = out
        else:
            raise Unsupported(f"{at}: no C form")

    def pointwise(self, at, target, args, kwargs, shape, dtype, users):
        arity, rule, forms = _ctable.EXPR[target]
        if len(args) != arity or (kwargs and kwargs != {"alpha": 1}):
            raise Unsupported(f"{at}: arguments")
        # the dtype the formula computes in: the operands' for a bool result, else the
        # result's (where's condition is the bool operand 0)
        compute = dtype
        if rule in ("compare", "predicate"):
            kinds = {getattr(self.env.get(a.name), "dtype", None) for a in args
                     if isinstance(a, Ref)}
            compute = kinds.pop() if len(kinds) == 1 and dtype == "bool" else None
        if compute not in forms:
            raise Unsupported(f"{at}: dtypes")
        ops, holds = [], set()
        for k, a in enumerate(args):
            want = "bool" if target == "where" and k == 0 else compute
            if isinstance(a, Ref):
                v = self.env.get(a.name)
                if isinstance(v, _Lazy) and v.dtype == want and v.shape == shape:
                    ops.append(v)
                    holds |= v.holds
                    continue
                t = self.tensor(a, at)
                if t.dtype != want:
                    raise Unsupported(f"{at}: mixed dtypes")
                ops.append(self.broadcast(t, shape, at))
                holds |= {t.buf} - {None}
            elif want == "bool":
                raise Unsupported(f"{at}: a constant condition")
            else:
                ops.append(_literal(a, compute))
        form = forms[compute]

        def expr(i):
            return "(" + _subst(form, {str(k): o.expr(i) if isinstance(o, _Lazy) else
                                       o.at(i) if isinstance(o, _T) else o
                                       for k, o in enumerate(ops)}) + ")"
        if len(users) == 1 and users[0] in _ctable.EXPR:
            return _Lazy(dtype, shape, expr, holds)
        out = self.fresh(dtype, shape)
        self.lines += self.loop(shape, lambda i: [f"{out.at(i)} = {expr(i)};"])
        return out

    def broadcast(self, t, shape, at):
        lead = len(shape) - len(t.shape)
        if lead < 0:
            raise Unsupported(f"{at}: broadcast")
        st = [0] * lead
        for n, s, want in zip(t.shape, t.strides, shape[lead:]):
            if n == 1 and want != 1:
                st.append(0)
            else:
                self.same(n, want, at)
                st.append(s)
        return _T(t.ptr, t.dtype, shape, st, t.buf)

    def reduce(self, at, target, args, kwargs, shape, dtype):
        x = self.tensor(args[0], at)
        if x.dtype != dtype or dtype not in _FLOAT or \
                kwargs.get("dtype") not in (None, np.dtype(dtype)):
            raise Unsupported(f"{at}: dtype")
        dims = kwargs.get("dims", args[1] if len(args) > 1 else None)
        nd = len(x.shape)
        dims = range(nd) if dims is None else dims if isinstance(dims, (list, tuple)) \
            else [dims]
        if not all(type(d) is int and -max(nd, 1) <= d < max(nd, 1) for d in dims):
            raise Unsupported(f"{at}: dims")
        dims = [d % max(nd, 1) for d in dims]
        dims = sorted(set(dims))
        kept = [d for d in range(nd) if d not in dims]
        out = self.fresh(dtype, shape)
        ctype, s, _ = _CT[dtype]
        # float32 sums accumulate in double: closer to NumPy's pairwise sum than float
        acc_t = "double" if target == "sum" else ctype
        init = {"sum": "0", "amax": "-INFINITY", "amin": "INFINITY"}[target]
        step = {"sum": "acc += v;", "amax": f"acc = sf_max_{s}(acc, v);",
                "amin": f"acc = sf_min_{s}(acc, v);"}[target]
        kept_shape = [x.shape[d] for d in kept]
        self.same(_prod(shape), _prod(kept_shape), at)
        flat = _T(out.ptr, dtype, kept_shape)  # keepdim's dims are 1: same layout

        def body(i):
            def inner(r):
                idx = [None] * nd
                for d, v in zip(kept, i):
                    idx[d] = v
                for d, v in zip(dims, r):
                    idx[d] = v
                return [f"{ctype} v = {x.at(idx)};", step]
            return [f"{acc_t} acc = {init};"] + \
                self.loop([x.shape[d] for d in dims], inner, False, "", "r") + \
                [f"{flat.at(i)} = ({ctype})acc;"]
        self.lines += self.loop(kept_shape, body, simd=False)
        return out

    def matmul(self, at, args, shape, dtype):
        a, b = (self.tensor(v, at) for v in args[:2])
        if dtype not in _FLOAT or a.dtype != dtype or b.dtype != dtype or \
                len(a.shape) < 2 or len(b.shape) < 2:
            raise Unsupported(f"{at}: operands")
        M, K, N = a.shape[-2], a.shape[-1], b.shape[-1]
        self.same(b.shape[-2], K, at)
        self.same_shape(shape[-2:], [M, N], at)
        a, ta, lda = self.blas_operand(a)
        b, tb, ldb = self.blas_operand(b)
        batch = shape[:-2]
        ab = self.broadcast(_T(a.ptr, dtype, a.shape[:-2], a.strides[:-2]), batch, at)
        bb = self.broadcast(_T(b.ptr, dtype, b.shape[:-2], b.strides[:-2]), batch, at)
        out = self.fresh(dtype, shape)
        _, s, p = _CT[dtype]
        self.uses_blas = True
        # the product's multiply-adds, as size expressions of the file (for Python)
        self.matmuls.append(tuple(self.meta[args[0].name]["shape"][-1:]) +
                            tuple(self.meta_shape_of_out))
        mn = _mul(M, N)

        def body(i):
            pa = f"{a.ptr} + {_offset(ab, i)}"
            pb = f"{b.ptr} + {_offset(bb, i)}"
            pc = f"{out.ptr} + {_mul(_offset(_T(out.ptr, dtype, batch), i), mn)}"
            sa = (1, lda) if ta else (lda, 1)
            sb = (1, ldb) if tb else (ldb, 1)
            return [f"if (ember_gemm_{s}({ta}, {tb}, {M}, {N}, {K}, 1, {pa}, {lda}, {pb}, "
                    f"{ldb}, 0, {pc}, {N}, ember_blas.{p}gemm))",
                    f"    lite_mm_{s}({M}, {N}, {K}, {pa}, {sa[0]}, {sa[1]}, {pb}, {sb[0]}, "
                    f"{sb[1]}, {pc});"]
        self.lines += self.loop(batch, body, simd=False)
        return out

    def blas_operand(self, x):
        """``(x, transposed, leading dimension)`` for a matrix operand: its last two dims
        as they are when one of them has unit stride, else a contiguous copy."""
        sr, sc = x.strides[-2:]
        if sc == 1:
            return x, 0, sr
        if sr == 1:
            return x, 1, sc
        x = self.copy(x)
        return x, 0, x.strides[-2]

    def cat(self, at, args, kwargs, shape, dtype):
        """Each part copied into its place along ``dim``; parts must agree elsewhere."""
        parts = [self.tensor(a, at) for a in args]
        if not parts or any(p.dtype != dtype or len(p.shape) != len(shape) for p in parts):
            raise Unsupported(f"{at}: parts")
        dim = kwargs.get("dim", 0)
        if type(dim) is not int or not -len(shape) <= dim < len(shape):
            raise Unsupported(f"{at}: dim")
        dim %= len(shape)
        out = self.fresh(dtype, shape)
        start = 0
        for p in parts:
            for d, (n, want) in enumerate(zip(p.shape, shape)):
                if d != dim:
                    self.same(n, want, at)
            dst = _T(out.ptr if start == 0 else f"({out.ptr} + {_mul(start, out.strides[dim])})",
                     dtype, p.shape, out.strides)
            self.lines += self.loop(p.shape, lambda i, p=p, dst=dst: [f"{dst.at(i)} = {p.at(i)};"])
            start = _add(start, p.shape[dim])
        self.same(start, shape[dim], at)
        return out

    def slice(self, at, x, key):
        """A basic-indexing view: per leading dim a ``(start, stop, step)`` or an int."""
        if not isinstance(key, (list, tuple)) or len(key) > len(x.shape):
            raise Unsupported(f"{at}: key")
        off, shape, strides = 0, [], []
        for d, k in enumerate(key):
            n, st = x.shape[d], x.strides[d]
            if isinstance(k, tuple) and len(k) == 3 and k == (None, None, None):
                shape.append(n)
                strides.append(st)
                continue
            if type(n) is not int:
                raise Unsupported(f"{at}: a slice of a dynamic dim")
            if type(k) is int:
                if not -n <= k < n:
                    raise Unsupported(f"{at}: index {k} of a dim of {n}")
                off = _add(off, _mul(k % n, st))
            elif isinstance(k, tuple) and len(k) == 3 and \
                    all(v is None or type(v) is int for v in k) and k[2] != 0:
                r = range(*slice(*k).indices(n))
                off = _add(off, _mul(r.start, st) if len(r) else 0)
                shape.append(len(r))
                strides.append(_mul(r.step, st))
            else:
                raise Unsupported(f"{at}: key {k!r}")
        ptr = x.ptr if off == 0 else f"({x.ptr} + {off})"
        return _T(ptr, x.dtype, shape + x.shape[len(key):], strides + x.strides[len(key):],
                  x.buf)

    def pad(self, at, args, kwargs, shape, dtype):
        x = self.tensor(args[0], at)
        pads = kwargs.get("pads", args[1] if len(args) > 1 else None)
        if kwargs.get("mode", "constant") != "constant" or not isinstance(pads, (list, tuple)):
            raise Unsupported(f"{at}: mode")
        lo = [0] * len(x.shape)
        for p in pads:
            d, a, b = p
            if not all(type(v) is int and v >= 0 for v in (d, a, b)) or d >= len(x.shape):
                raise Unsupported(f"{at}: pads")
            lo[d] = a
        for d, (n, want) in enumerate(zip(x.shape, shape)):
            if lo[d] == 0 and not any(p[0] == d for p in pads):
                self.same(n, want, at)
        if len(shape) != len(x.shape):
            raise Unsupported(f"{at}: shape")
        out = self.fresh(dtype, shape)
        if dtype not in _FLOAT:
            raise Unsupported(f"{at}: dtype")
        fill = _literal(kwargs.get("value", 0.0) or 0.0, dtype)

        def body(i):
            src = [f"({v} - {p})" if p else v for v, p in zip(i, lo)]
            cond = " && ".join(f"{v} >= {p} && {v} < {_add(p, n)}"
                               for v, p, n in zip(i, lo, x.shape) if p)
            return [f"{out.at(i)} = ({cond or 1}) ? {x.at(src)} : {fill};"]
        self.lines += self.loop(shape, body)
        return out

    def index(self, at, args, shape, dtype):
        """``x[..., table, ...]`` with one integer table: a constant one (the gathers of
        convolution and pooling) checked against the indexed size now, or an input (an
        embedding's indices) checked element by element on every call."""
        x = self.tensor(args[0], at)
        idx = args[1:]
        tensors = [(d, v) for d, v in enumerate(idx) if v is not None]
        if len(tensors) != 1 or not isinstance(tensors[0][1], Ref):
            raise Unsupported(f"{at}: indices")
        d, ref = tensors[0]
        table, n = self.env.get(ref.name), x.shape[d]
        if isinstance(table, tuple) and table[1].dtype.kind == "i" and type(n) is int:
            tbl = table[1].astype(np.int64)
            if tbl.size and (tbl.min() < -n or tbl.max() >= n):
                raise Unsupported(f"{at}: index out of range")
            slot = len(self.inputs)
            self.inputs.append(("table", np.ascontiguousarray(np.where(tbl < 0, tbl + n, tbl))))
            table = _T(f"((const int64_t *)in[{slot}])", "int64", list(tbl.shape))
            checked = False
        elif isinstance(table, _T) and table.dtype == "int64":
            checked = True
        else:
            raise Unsupported(f"{at}: the index")
        k = len(table.shape)
        self.same_shape(shape, x.shape[:d] + table.shape + x.shape[d + 1:], at)
        out = self.fresh(dtype, shape)

        def body(i):
            terms = [f"{v} * {s}" for v, s in zip(i[:d], x.strides[:d]) if s != 0]
            terms.append(f"t * {x.strides[d]}")
            terms += [f"{v} * {s}" for v, s in zip(i[d + k:], x.strides[d + 1:]) if s != 0]
            get = [f"int64_t t = {table.at(i[d:d + k])};"]
            if checked:   # torch's negative indices; out of range: NumPy runs and raises
                get += [f"if (t < 0) t += {n};", f"if (t < 0 || t >= {n}) {{ bad = 1; t = 0; }}"]
            return get + [f"{out.at(i)} = {x.ptr}[{' + '.join(terms)}];"]
        self.lines += self.loop(shape, body, simd=not checked)
        if checked:
            self.lines.append("    if (bad) return 2;")
        return out

    # -- the entry point ---------------------------------------------------------------
    def finish(self, outs):
        results = []
        body = []
        for k, o in enumerate(outs):
            t = self.tensor(o, "output")
            self.same_shape(t.shape, [self.sym(v) for v in self.meta[o.name]["shape"]],
                            "output")
            ctype = _CT[t.dtype][0]
            dst = _T(f"(({ctype} *)out[{k}])", t.dtype, t.shape)
            body += self.loop(t.shape, lambda i: [f"{dst.at(i)} = {t.at(i)};"])
            results.append((tuple(self.meta[o.name]["shape"]), t.dtype))
        symbols = sorted(self.symbols)
        head = [f"    const int64_t sym_{s} = sym[{k}];" for k, s in enumerate(symbols)]
        head += [f"    if (!({c})) return 2;" for c in dict.fromkeys(self.checks)]
        head.append("    size_t arena_size = 0;")
        for name, ctype, shape in self.buffers:
            dims = ", ".join(str(d) for d in shape) or "1"
            head.append(f"    size_t off_{name} = arena_size; if (lite_grow(&arena_size, "
                        f"sizeof({ctype}), {len(shape) or 1}, (const int64_t[]){{{dims}}})) "
                        f"return 1;")
        head.append("    char *arena = lite_arena(arena_size);")
        head.append("    if (!arena) return 1;")
        for name, ctype, _ in self.buffers:
            head.append(f"    {ctype} *{name} = ({ctype} *)(arena + off_{name});")
        src = "\n".join([
            _ctable.PRELUDE, _cblas.declarations(_cblas.ILP64), _HELPERS,
            f"int lite_abi(void) {{ return {ABI}; }}",
            "int lite_entry(void **in, void **out, const int64_t *sym) {",
            "    (void)sym;", "    int bad = 0; (void)bad;", *head, *self.lines, *body,
            "    return 0;", "}", ""])
        return CProgram(src, self.inputs, symbols, results, self.matmuls, self.uses_blas,
                        self.placeholders)


def _refs(v, acc):
    if isinstance(v, dict):
        if set(v) == {"node"}:
            acc.add(v["node"])
        elif set(v) == {"subgraph"}:
            acc.add(None)   # a sub-graph's nodes are not this generator's
        else:
            for x in v.values():
                _refs(x, acc)
    elif isinstance(v, list):
        for x in v:
            _refs(x, acc)


def _count(v, name):
    """How many times ``v`` (JSON arguments) refers to node ``name``."""
    if isinstance(v, dict):
        return 1 if v == {"node": name} else sum(_count(x, name) for x in v.values())
    if isinstance(v, list):
        return sum(_count(x, name) for x in v)
    return 0


def _subst(expr, vals):
    out, i = [], 0
    while i < len(expr):
        if expr[i] == "$" and i + 1 < len(expr) and expr[i + 1].isdigit():
            out.append(vals[expr[i + 1]])
            i += 2
        else:
            out.append(expr[i])
            i += 1
    return "".join(out)


def _offset(t, i):
    return " + ".join(f"{v} * {s}" for v, s in zip(i, t.strides) if s != 0) or "0"


def generate(nodes, ctx):
    """A `CProgram` for the lite graph ``nodes`` (the validated JSON list; ``ctx`` reads
    its array literals), or ``(None, reason)`` when it is outside the subset."""
    try:
        gen = _Gen(nodes, ctx)
        if None in gen.live():
            raise Unsupported("a sub-graph (cond/while_loop/map)")
        return gen.run(), None
    except Unsupported as e:
        return None, str(e)
    except (KeyError, TypeError, ValueError, IndexError) as e:
        return None, f"{type(e).__name__}: {e}"


def eval_sizes(exprs, syms):
    """`eval_size` over a shape whose entries are ints or size expressions."""
    return tuple(s if type(s) is int else eval_size(s, syms) for s in exprs)
