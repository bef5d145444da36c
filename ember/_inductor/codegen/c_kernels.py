"""Generate C for the kernels of a schedule, from the scalar-function table.

One function per `ir.Kernel`: ``void kernelN(<stored buffers>, <read buffers>, <sizes>,
<scalar inputs>, int nt)``.  The outer (non-reduced) loops are split over ``nt`` OpenMP
threads (``parallel for collapse``) when the kernel's work is at least
``config.parallel_min_work``; the inner loops (the reduced dims, or the last dim of a
pointwise kernel) carry ``omp simd``, reductions with vector accumulators
(``reduction(+:acc)``).  A kernel with no outer loop splits its inner loops over threads
instead; a column reduction with none (``x.sum(0)``) splits its kept last dim, each thread
reducing whole rows of its columns.  With ``nt == 1`` no OpenMP runtime call is made
(forked workers).

Values that do not vary along the inner loops are computed once per outer iteration
(hoisted), and a reduction's loop runs before the values that read it: softmax is a max
loop, a sum-of-exp loop and a store loop inside one parallel row loop; an expensive value
two loops of a row need (softmax's exp) is kept in a row buffer, which is the row of the
output the last loop stores when one fits.  float16/bfloat16 load to float32, compute, and
round on store."""
import math

import numpy as np

from ..._core import scalar_functions as _sf
from .. import ir
from .. import sizes as _sizes
from .welford import BLOCK, welford_parts

__all__ = ["kernel_source", "kernel_args", "pointer_ctype", "PRELUDE_EXTRA"]

_CT = dict(_sf._CTYPES, float16="_Float16", bfloat16="uint16_t")

PRELUDE_EXTRA = r"""
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
static inline float ek_bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16; float f; memcpy(&f, &u, 4); return f;
}
static inline uint16_t ek_f32_to_bf16(float f) {
    uint32_t u; memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
#if defined(_OPENMP)
#define EK_PRAGMA(x) _Pragma(#x)
#else
#define EK_PRAGMA(x)
#endif
"""


def _ctype(dt):
    return _CT[dt]


def pointer_ctype(dt):
    """The element type of a buffer pointer: bool buffers are ``uint8_t`` (NumPy's bools
    are the bytes 0 and 1): GCC 12 does not vectorise a loop storing a float compare to
    a ``_Bool *`` next to a NaN-propagating max (relu's value and mask, 40x slower)."""
    return "uint8_t" if dt == "bool" else _CT[dt]


def _literal(v, dt):
    if dt == "bool":
        return "1" if v else "0"
    if dt.startswith(("int", "uint")):
        v = int(v)
        if dt == "int64" and v == -2 ** 63:
            return "INT64_MIN"
        return f"(({_ctype(dt)}){v}LL)" if not dt.startswith("uint") else \
            f"(({_ctype(dt)}){v}ULL)"
    v = float(v)
    if math.isnan(v):
        text = "NAN"
    elif math.isinf(v):
        text = "INFINITY" if v > 0 else "(-INFINITY)"
    else:
        text = repr(v)
    return f"(({_ctype(dt)}){text})"


def _affine(a):
    parts = []
    for d, c in enumerate(a.coeffs):
        if c == 0:
            continue
        parts.append(f"i{d}" if c == 1 else f"i{d}*{_sizes.c_text(c)}")
    if a.offset != 0:
        parts.append(_sizes.c_text(a.offset))
    return " + ".join(parts) if parts else "0"


def kernel_args(kernel, symbols):
    """``[(name, kind)]`` in call order: kind is "out", "in", "sym", "scalar" or "nt"."""
    stored = []
    for s in kernel.stores:
        if s.buf not in stored:
            stored.append(s.buf)
    args = [(b, "out") for b in stored]
    args += [(b, "in") for b in kernel.buffers_read() if b not in stored]
    args += [(s, "sym") for s in sorted(symbols)]
    args += [(a, "scalar") for a in kernel.scalar_args()]
    args.append(("nt", "nt"))
    return args


_INIT = {"sum": 0, "prod": 1, "any": 0, "all": 1}
_CLAUSE = {"sum": "+", "prod": "*", "any": "|", "all": "&", "amax": "max", "amin": "min"}


def _minmax_init(kind, dt):
    big = kind == "amin"
    if dt.startswith("float"):
        return _literal(math.inf if big else -math.inf, dt)
    if dt == "bool":
        return "1" if big else "0"
    info = np.iinfo(np.dtype(dt))
    return _literal(info.max if big else info.min, dt)


class _Scope:
    def __init__(self, parent=None):
        self.parent, self.lines, self.cache = parent, [], {}
        self.computed, self.fills = set(), set()

    def find(self, e):
        s = self
        while s is not None:
            if e in s.cache:
                return s.cache[e]
            s = s.parent
        return None


# elementwise functions cheap enough to recompute in every loop that needs them; any
# other (exp, log, erf, div, ...) computed in one inner loop and needed in a later one of
# the same row is kept in a row buffer instead (softmax: exp once per element)
_CHEAP = {"add", "sub", "mul", "neg", "abs", "maximum", "minimum", "where", "eq", "ne", "lt",
          "le", "gt", "ge", "logical_and", "logical_or", "logical_xor", "logical_not",
          "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "sign", "signbit",
          "floor", "ceil", "trunc", "round"}


def _expensive(e):
    return isinstance(e, ir.Apply) and e.fn not in _CHEAP


class _Emitter:
    def __init__(self, kernel, parallel_inner, row_cache=None, column_range=False):
        self.k = kernel
        # a column kernel split over threads by its last dim: loops run over [clo, chi)
        self.column_range = column_range
        self.inner = set(kernel.inner_dims)
        self.memo = {}
        self.n = 0
        self.parallel_inner = parallel_inner
        self.root = _Scope()
        self.row_cache = row_cache or {}   # expr -> row buffer name
        self.filled = set()                # row buffers written by an earlier loop
        self.computed = []                 # per inner scope: the expensive exprs it computed
        self.frees = []                    # accumulator vectors of a column reduction
        self.aliased = {}                  # row buffer -> the output row it lives in

    def dep(self, e):
        """Whether ``e`` varies inside the inner loops (then it is computed there)."""
        if not self.k.column:
            return ir.depends_on(e, self.inner, self.memo)
        r = self.memo.get(e)
        if r is None:
            if isinstance(e, ir.Reduce):
                r = True  # a vector of accumulators, read element by element
            elif isinstance(e, (ir.Load, ir.Iota)):
                r = bool(e.index.uses() & self.inner)
            elif isinstance(e, (ir.Apply, ir.Cast)):
                r = any(self.dep(c) for c in (e.args if isinstance(e, ir.Apply) else (e.x,)))
            else:
                r = False
            self.memo[e] = r
        return r

    def var(self, prefix="t"):
        self.n += 1
        return f"{prefix}{self.n}"

    def val(self, e, scope):
        if isinstance(e, ir.Const):
            return _literal(e.value, e.dtype)
        hit = scope.find(e)
        if hit is not None:
            return hit
        if isinstance(e, ir.Reduce):
            return self.reduce_column(e) if self.k.column else self.reduce(e)
        target = scope if self.dep(e) else self.root
        hit = target.find(e)
        if hit is not None:
            return hit
        rc = self.row_cache.get(e) if target is not self.root else None
        iv = f"i{min(self.inner)}" if self.inner else "0"
        if rc is not None and rc in self.filled:
            text = f"{rc}[{iv}]"
        else:
            text = self.text(e, target)
        v = self.var()
        target.lines.append(f"{_ctype(e.dtype)} {v} = {text};")
        target.cache[e] = v
        if target is not self.root and _expensive(e):
            target.computed.add(e)
        if rc is not None and rc not in self.filled:
            target.lines.append(f"{rc}[{iv}] = {v};")
            target.fills.add(rc)
        return v

    def text(self, e, scope):
        if isinstance(e, ir.Load):
            ref = f"{e.buf}[{_affine(e.index)}]"
            if e.storage == "bfloat16":
                return f"ek_bf16_to_f32({ref})"
            if e.storage != e.dtype:
                return f"({_ctype(e.dtype)}){ref}"
            return ref
        if isinstance(e, ir.SizeValue):
            return f"({_ctype(e.dtype)})({e.size})"
        if isinstance(e, ir.ScalarArg):
            return f"({_ctype(e.dtype)}){e.name}"
        if isinstance(e, ir.Iota):
            if e.dtype.startswith("float"):
                return (f"({_ctype(e.dtype)})({e.start!r} + {e.step!r} * "
                        f"(double)({_affine(e.index)}))")
            return f"({_ctype(e.dtype)})({int(e.start)}LL + {int(e.step)}LL * ({_affine(e.index)}))"
        if isinstance(e, ir.Cast):
            x = self.val(e.x, scope)
            if e.round_to == "bfloat16":
                return f"ek_bf16_to_f32(ek_f32_to_bf16((float)({x})))"
            if e.round_to == "float16":
                return f"(float)(_Float16)({x})"
            if e.dtype == "bool":
                return f"(_Bool)(({x}) != 0)"
            return f"({_ctype(e.dtype)})({x})"
        if isinstance(e, ir.Apply):
            if e.fn == "div" and e.dtype.startswith("float") and scope is not self.root \
                    and not self.dep(e.args[1]) and self.dep(e.args[0]):
                # a row's divisor (softmax's sum): one reciprocal per row, a multiply per
                # element (as torch's inductor does; within an ulp of the division)
                a = self.val(e.args[0], scope)
                b = self.val(e.args[1], self.root)
                r = self.root.find(("rcp", e.args[1]))
                if r is None:
                    r = self.var("rcp")
                    self.root.lines.append(f"{_ctype(e.dtype)} {r} = ({_ctype(e.dtype)})1 / {b};")
                    self.root.cache[("rcp", e.args[1])] = r
                return f"(({a}) * {r})"
            ops = [self.val(a, scope) for a in e.args]
            opdt = e.args[1].dtype if e.fn == "where" else e.args[0].dtype
            return _sf.c_expr(e.fn, opdt, *ops)
        raise TypeError(f"internal error: no C form for IR node {type(e).__name__}")

    def loops(self, body, pragma):
        """The inner loop nest over the kernel's inner dims around ``body`` lines."""
        dims = sorted(self.inner)
        lines = [pragma] if pragma else []
        for d in dims:
            lines.append(f"for (int64_t i{d} = 0; i{d} < {_sizes.c_text(self.k.space[d])}; "
                         f"i{d}++) {{")
        lines += ["    " + ln for ln in body]
        lines += ["}"] * len(dims)
        return lines

    def _pragma(self, clauses=""):
        r = len(self.inner)
        col = f" collapse({r})" if r > 1 else ""
        if self.parallel_inner:
            return f"EK_PRAGMA(omp parallel for simd{col}{clauses} num_threads(nt) " \
                   f"schedule(static))"
        return f"EK_PRAGMA(omp simd{col}{clauses})"

    def welford(self, e):
        """``(x, s)`` when reduction ``e`` runs as one Welford pass (`welford`): a row
        kernel with one inner dim and outer loops (a whole-tensor reduction keeps its
        thread-parallel two passes), rows of at least ``config.welford_min_row``
        elements, neither statistic computed yet."""
        if self.parallel_inner or self.k.column or len(self.inner) != 1 or \
                len(self.inner) == len(self.k.space):
            return None
        length = self.k.space[min(self.inner)]
        from .. import config
        if config.welford_min_row and not (isinstance(length, int) and
                                           length >= config.welford_min_row):
            return None
        parts = welford_parts(e, length)
        if parts is None or self.root.find(parts[1]) is not None:
            return None
        return parts

    def reduce_welford(self, e, x, s):
        """The row's sum(x) and sum((x - mean)**2) in one blocked pass (see `welford`)."""
        d = min(self.inner)
        n = _sizes.c_text(self.k.space[d])
        ct = _ctype(e.dtype)
        self._reductions_first(x)
        tot, mean, m2, blk, cnt = (self.var(p) for p in ("wsum", "wmean", "wm2", "wb", "wn"))
        bs, bm, bq, delta, frac = (self.var(p) for p in ("bsum", "bmean", "bm2", "dlt", "frc"))
        # the merge runs once a block: in double, so float32 rows lose nothing to it
        L = [f"{ct} {tot} = 0;", f"double {mean} = 0, {m2} = 0;",
             f"for (int64_t {blk} = 0; {blk} < {n}; {blk} += {BLOCK}) {{",
             f"    int64_t {cnt} = {n} - {blk} < {BLOCK} ? {n} - {blk} : {BLOCK};",
             f"    {ct} {bs} = 0;"]
        head = f"for (int64_t i{d} = {blk}; i{d} < {blk} + {cnt}; i{d}++) {{"
        first = _Scope(self.root)
        v = self.val(x, first)
        first.lines.append(f"{bs} += {v};")
        self._close(first)
        L += ["    " + ln for ln in
              [f"EK_PRAGMA(omp simd reduction(+:{bs}))", head]
              + ["    " + ln for ln in first.lines] + ["}"]]
        bd = self.var("bdev")
        L += [f"    {ct} {bm} = {bs} / ({ct}){cnt};", f"    {ct} {bq} = 0, {bd} = 0;"]
        second = _Scope(self.root)
        v = self.val(x, second)
        dev = self.var("dev")
        second.lines += [f"{ct} {dev} = {v} - {bm};", f"{bq} += {dev} * {dev};",
                         f"{bd} += {dev};"]
        self._close(second)
        L += ["    " + ln for ln in
              [f"EK_PRAGMA(omp simd reduction(+:{bq}, {bd}))", head]
              + ["    " + ln for ln in second.lines] + ["}"]]
        # Chan's merge of the block (count cnt) into the rows so far (count blk)
        # bm is the block mean to a rounding of the block sum: the deviations' own sum
        # corrects it and the block's M2 (the corrected two-pass form)
        L += [f"    double {delta} = (double){bm} + (double){bd} / (double){cnt} - {mean};",
              f"    double {frac} = (double){cnt} / (double)({blk} + {cnt});",
              f"    {tot} += {bs};",
              f"    {mean} += {delta} * {frac};",
              f"    {m2} += (double){bq} - (double){bd} * (double){bd} / (double){cnt}"
              f" + {delta} * {delta} * (double){blk} * {frac};",
              "}"]
        self.root.lines += L
        self.root.cache[s] = tot
        v = self.var()
        self.root.lines.append(f"{ct} {v} = ({ct}){m2};")
        self.root.cache[e] = v
        return v

    def reduce(self, e):
        parts = self.welford(e)
        if parts is not None:
            return self.reduce_welford(e, *parts)
        acc = self.var("acc")
        kind, dt = e.kind, e.dtype
        self._reductions_first(e.x)
        inner = _Scope(self.root)
        x = self.val(e.x, inner)
        clause = f" reduction({_CLAUSE[kind]}:{acc})"
        post = []
        if kind in ("any", "all"):
            self.root.lines.append(f"int {acc} = {_INIT[kind]};")
            op = "|=" if kind == "any" else "&="
            inner.lines.append(f"{acc} {op} (({x}) != 0);")
        elif kind in ("sum", "prod"):
            self.root.lines.append(f"{_ctype(dt)} {acc} = {_literal(_INIT[kind], dt)};")
            inner.lines.append(f"{acc} {'+=' if kind == 'sum' else '*='} {x};")
        else:
            cmp = ">" if kind == "amax" else "<"
            self.root.lines.append(f"{_ctype(dt)} {acc} = {_minmax_init(kind, dt)};")
            inner.lines.append(f"{acc} = ({x}) {cmp} {acc} ? ({x}) : {acc};")
            if dt.startswith("float"):
                nan = self.var("nan")
                self.root.lines.append(f"int {nan} = 0;")
                inner.lines.append(f"{nan} |= ({x}) != ({x});")
                clause += f" reduction(|:{nan})"
                post.append(f"if ({nan}) {acc} = NAN;")
        self.root.lines += self.loops(inner.lines, self._pragma(clause))
        self._close(inner)
        self.root.lines += post
        res = acc if kind not in ("any", "all") else f"(_Bool){acc}"
        v = self.var()
        self.root.lines.append(f"{_ctype(dt)} {v} = {res};")
        self.root.cache[e] = v
        return v

    def column_loops(self, body, with_reduced, clause=""):
        """Column mode: the reduced dims (sequential) around the last dim (vectorised)."""
        last = len(self.k.space) - 1
        dims = sorted(d for d in self.inner if d != last) if with_reduced else []
        lines = []
        for d in dims:
            lines.append(f"for (int64_t i{d} = 0; i{d} < {_sizes.c_text(self.k.space[d])}; "
                         f"i{d}++) {{")
        lo, hi = ("clo", "chi") if self.column_range else \
            ("0", _sizes.c_text(self.k.space[last]))
        lines.append(f"EK_PRAGMA(omp simd{clause})")
        lines.append(f"for (int64_t i{last} = {lo}; i{last} < {hi}; i{last}++) {{")
        lines += ["    " + ln for ln in body]
        lines += ["}"] * (len(dims) + 1)
        return lines

    def reduce_column(self, e):
        """A reduction into a vector of accumulators along the last dim: each reduced
        iteration adds a contiguous row into it (NumPy's order for sum(axis=0))."""
        acc = self.var("acc")
        kind, dt = e.kind, e.dtype
        last = len(self.k.space) - 1
        n = "chi - clo" if self.column_range else _sizes.c_text(self.k.space[last])
        at = "int" if kind in ("any", "all") else _ctype(dt)
        init = str(_INIT[kind]) if kind in ("any", "all") else (
            _literal(_INIT[kind], dt) if kind in ("sum", "prod") else _minmax_init(kind, dt))
        self.root.lines.append(f"{at} *{acc} = ({at} *)malloc(sizeof({at}) * ({n} + 1));")
        self.frees.append(acc)
        self.root.lines += self.column_loops([f"{acc}[i{last}{' - clo' if self.column_range else ''}]"
                                              f" = {init};"], False)
        self._reductions_first(e.x)
        inner = _Scope(self.root)
        x = self.val(e.x, inner)
        a = f"{acc}[i{last} - clo]" if self.column_range else f"{acc}[i{last}]"
        if kind in ("any", "all"):
            inner.lines.append(f"{a} {'|=' if kind == 'any' else '&='} (({x}) != 0);")
        elif kind in ("sum", "prod"):
            inner.lines.append(f"{a} {'+=' if kind == 'sum' else '*='} {x};")
        else:
            cmp = ">" if kind == "amax" else "<"
            nan = f" || ({x}) != ({x})" if dt.startswith("float") else ""
            inner.lines.append(f"{a} = (({x}) {cmp} {a}{nan}) ? ({x}) : {a};")
        self.root.lines += self.column_loops(inner.lines, True)
        self._close(inner)
        text = a if kind not in ("any", "all") else f"((_Bool){a})"
        self.root.cache[e] = text
        return text

    def store_text(self, s, v, dt):
        ref = f"{s.buf}[{_affine(s.index)}]"
        if s.storage == "bfloat16":
            return f"{ref} = ek_f32_to_bf16({v});"
        return f"{ref} = ({pointer_ctype(s.storage)})({v});"

    def body(self):
        if self.k.column:
            return self.column_body()
        finals = []
        for s in self.k.stores:  # variances first: the mean a store reads comes with one
            self._variances_first(s.value)
        for s in self.k.stores:
            inner_store = bool(s.index.uses() & self.inner) or \
                ir.depends_on(s.value, self.inner, self.memo)
            if inner_store:
                finals.append(s)
                continue
            v = self.val(s.value, self.root)
            self.root.lines.append(self.store_text(s, v, s.value.dtype))
        if finals:
            for s in finals:
                self._reductions_first(s.value)
            sc = _Scope(self.root)
            for s in finals:
                v = self.val(s.value, sc)
                sc.lines.append(self.store_text(s, v, s.value.dtype))
            self.root.lines += self.loops(sc.lines, self._pragma())
            self._close(sc)
        aliased = self.aliased = _row_aliases(self.k, self.row_cache, finals)
        if aliased:
            self.root.lines = [f"{_ctype(e.dtype)} *{rc} = {aliased[rc]};"
                               for e, rc in self.row_cache.items() if rc in aliased] + \
                self.root.lines
        return self.root.lines

    def column_body(self):
        reduced = {d for d, f in enumerate(self.k.reduced) if f}
        memo = {}
        rows, full = [], []
        for s in self.k.stores:
            if (s.index.uses() & reduced) or ir.depends_on(s.value, reduced, memo):
                full.append(s)
            else:
                rows.append(s)
        for group, with_reduced in ((rows, False), (full, True)):
            if not group:
                continue
            for s in group:
                self._reductions_first(s.value)
            sc = _Scope(self.root)
            for s in group:
                v = self.val(s.value, sc)
                sc.lines.append(self.store_text(s, v, s.value.dtype))
            self.root.lines += self.column_loops(sc.lines, with_reduced)
            self._close(sc)
        self.root.lines += [f"free({a});" for a in self.frees]
        return self.root.lines

    def _reductions_first(self, e):
        """Emit the loops of the reductions ``e`` reads before the loop that computes
        ``e``, so values they leave in row buffers count as computed there.  Variances
        go first: their Welford pass computes the sum their mean reads as well."""
        self._variances_first(e)
        for r in ir.walk(e):
            if isinstance(r, ir.Reduce) and self.root.find(r) is None:
                self.val(r, self.root)

    def _variances_first(self, e):
        for r in ir.walk(e):
            if isinstance(r, ir.Reduce) and self.root.find(r) is None and \
                    self.welford(r) is not None:
                self.val(r, self.root)

    def _close(self, scope):
        self.filled |= scope.fills
        self.computed.append(scope.computed)


def _row_aliases(kernel, row_cache, finals):
    """``{row buffer: C pointer}`` for the row buffers that can live in the row of an
    output the last loop stores (softmax's exp(x - max) in its output row, scaled in place
    there): a store of the row buffer's dtype whose value reads the row buffer, contiguous
    along the inner dim, to a buffer the kernel does not read; each output row serves one
    row buffer.  The last loop reads a row buffer's element (once, for every store) before
    that store writes the same element, so nothing is overwritten early."""
    if not row_cache or not finals:
        return {}
    d = min(kernel.inner_dims)
    read = set(kernel.buffers_read())
    taken, out = set(), {}
    for e, rc in row_cache.items():
        for s in finals:
            if s.buf in taken or s.buf in read or s.storage != e.dtype or \
                    e.dtype == "bool" or s.index.coeffs[d] != 1 or e not in ir.walk(s.value):
                continue
            base = ir.Affine(tuple(0 if k == d else c for k, c in enumerate(s.index.coeffs)),
                             s.index.offset)
            out[rc] = f"{s.buf} + ({_affine(base)})"
            taken.add(s.buf)
            break
    return out


def _row_buffers(kernel, plan):
    """Declarations and frees of the row buffers of ``plan`` not aliased to an output row
    (one allocation per thread, not per row)."""
    if not plan:
        return [], []
    em = _Emitter(kernel, False, plan)
    em.body()
    n = _sizes.c_text(kernel.space[min(kernel.inner_dims)])
    own = [(e, rc) for e, rc in plan.items() if rc not in em.aliased]
    decl = [f"{_ctype(e.dtype)} *{rc} = ({_ctype(e.dtype)} *)malloc(sizeof({_ctype(e.dtype)})"
            f" * ({n} + 1));" for e, rc in own]
    return decl, [f"free({rc});" for _, rc in own]


def _row_cache_plan(kernel, outer):
    """Expensive values that more than one inner loop of a row computes (a dry run tells),
    each with a row buffer; only for kernels with outer loops and one inner dim."""
    if not outer or len(kernel.inner_dims) != 1:
        return {}
    em = _Emitter(kernel, False)
    em.body()
    seen, again = set(), []
    for comp in em.computed:
        for e in comp:
            if e in seen and e not in again:
                again.append(e)
        seen |= comp
    return {e: f"row{k}" for k, e in enumerate(again)}


def _column_split(kernel):
    """Whether a column reduction with no outer loop splits its last (kept) dim over the
    threads: every store is indexed by that dim, so threads write disjoint elements."""
    last = len(kernel.space) - 1
    return kernel.column and all(s.index.coeffs[last] != 0 for s in kernel.stores)


def _column_chunks(kernel, body):
    """A column kernel's body run per chunk of its last dim, a chunk per thread: each
    thread sums whole rows of its columns (vectorised) into its own accumulators; chunks
    start at multiples of 16 elements (a cache line of float32), so threads never share
    a line of the output or the input rows."""
    n = _sizes.c_text(kernel.space[-1])
    return [f"int64_t nch = ({n} + 15) / 16 < nt ? ({n} + 15) / 16 : nt;",
            "EK_PRAGMA(omp parallel for num_threads(nt) schedule(static))",
            "for (int64_t ch = 0; ch < nch; ch++) {",
            f"    int64_t clo = ((({n}) * ch / nch) / 16) * 16;",
            f"    int64_t chi = ch == nch - 1 ? ({n}) : ((({n}) * (ch + 1) / nch) / 16) * 16;"] + \
        ["    " + ln for ln in body] + ["}"]


def _work(kernel):
    return " * ".join(_sizes.c_text(d) for d in kernel.space) or "1"


def kernel_source(kernel, symbols, parallel_min_work):
    """The C text of one kernel."""
    args = []
    bufdt = {}
    for s in kernel.stores:
        bufdt[s.buf] = s.storage
    for ld in kernel.loads():
        bufdt[ld.buf] = ld.storage
    scal = {e.name: e.dtype for s in kernel.stores for e in ir.walk(s.value)
            if isinstance(e, ir.ScalarArg)}
    for name, kind in kernel_args(kernel, symbols):
        if kind == "out":
            args.append(f"{pointer_ctype(bufdt[name])} *restrict {name}")
        elif kind == "in":
            args.append(f"const {pointer_ctype(bufdt[name])} *restrict {name}")
        elif kind == "sym":
            args.append(f"int64_t {name}")
        elif kind == "scalar":
            args.append(f"{'double' if scal[name].startswith('float') else 'int64_t'} {name}")
        else:
            args.append("int nt")
    outer = [d for d in range(len(kernel.space)) if d not in set(kernel.inner_dims)]
    lines = [f"void {kernel.name}({', '.join(args)}) {{",
             f"    int par = nt > 1 && ({_work(kernel)}) >= {int(parallel_min_work)};"]
    plan = _row_cache_plan(kernel, outer)
    alloc, free = _row_buffers(kernel, plan)
    for parallel in (True, False):
        split_columns = parallel and not outer and _column_split(kernel)
        em = _Emitter(kernel, parallel and not outer and not kernel.column, plan,
                      column_range=split_columns)
        body = em.body()
        block = []
        if split_columns:
            block = _column_chunks(kernel, body)
        elif outer:
            loops = []
            for d in outer:
                loops.append(f"for (int64_t i{d} = 0; i{d} < "
                             f"{_sizes.c_text(kernel.space[d])}; i{d}++) {{")
            loops += ["    " + ln for ln in body]
            loops += ["}"] * len(outer)
            col = f" collapse({len(outer)})" if len(outer) > 1 else ""
            if parallel and alloc:  # each thread allocates its row buffers once
                block = [f"EK_PRAGMA(omp parallel num_threads(nt))", "{"] + \
                    ["    " + ln for ln in alloc +
                     [f"EK_PRAGMA(omp for{col} schedule(static))"] + loops + free] + ["}"]
            elif parallel:
                block = [f"EK_PRAGMA(omp parallel for{col} num_threads(nt) "
                         f"schedule(static))"] + loops
            else:
                block = alloc + loops + free
        else:
            block = ["{"] + ["    " + ln for ln in body] + ["}"]
        lines.append("    if (par) {" if parallel else "    } else {")
        lines += ["        " + ln for ln in block]
    lines += ["    }", "}"]
    return "\n".join(lines) + "\n"


def source(kernels, symbols, parallel_min_work):
    """The translation unit of a schedule's kernels."""
    parts = [PRELUDE_EXTRA, _sizes.C_PRELUDE, _sf.c_prelude()]
    for k in kernels:
        parts.append(kernel_source(k, symbols, parallel_min_work))
    parts.append("int ek_graph_abi(void) { return 1; }\n")
    return "\n".join(parts)
