"""The differential harness: run one call in ember and in torch, classify the outcome.

A *case* is a function ``case(lib)`` building its inputs with ``lib`` and calling the
operator; both libraries see the same values, dtypes, shapes and layouts.  The outcome
is one of the classes below; every class but ``ok`` is a mismatch, which is either
documented in `fuzz_deviations.DEVIATIONS` (with a reason) or a failure.

* ``ok``: same values (NaN-aware, dtype-appropriate tolerances), dtypes and shapes, or both
  raised exceptions of the same kind;
* ``value`` / ``dtype`` / ``shape`` / ``structure``: both returned, results differ;
* ``accepted``: torch raised, ember returned (ember accepts input torch rejects);
* ``rejected``: ember raised, torch returned;
* ``exc_type``: both raised, with exceptions of different kinds;
* ``numpy_exc``: ember let a NumPy exception (or ZeroDivisionError/MemoryError) escape.
  Never documented: no NumPy exception may reach the user.
"""
import collections
import math
import numbers
import warnings

import numpy as np
import torch

import ember
from opdb.core import to_lib as _opdb_to_lib

CLASSES = ("ok", "value", "dtype", "shape", "structure", "accepted", "rejected", "exc_type",
           "numpy_exc")

DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
          "float32", "float64", "complex64", "complex128")
HALVES = ("float16", "bfloat16")


# ---- exception kinds ----------------------------------------------------------------------

def exc_kind(e):
    """The torch-level kind of exception ``e``: what a user's ``except`` clause would name."""
    mod = type(e).__module__ or ""
    if isinstance(e, (ZeroDivisionError, MemoryError)) or mod.startswith("numpy"):
        return "numpy"
    for k in (IndexError, TypeError, ValueError, NotImplementedError, RuntimeError):
        if isinstance(e, k):
            return "RuntimeError" if k is NotImplementedError else k.__name__
    return type(e).__name__


# ---- conversion -------------------------------------------------------------------------

def to_lib(lib, x):
    """NumPy data (arrays, nested lists/tuples, dicts) as ``lib`` tensors."""
    if isinstance(x, np.ndarray):
        return _opdb_to_lib(lib, np.ascontiguousarray(x))
    if isinstance(x, dict):
        return {k: to_lib(lib, v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(to_lib(lib, v) for v in x)
    return x


def with_layout(lib, arr, layout):
    """A ``lib`` tensor holding ``arr``'s values in memory layout ``layout``.

    'contig'; 'T' (a permuted view of a tensor stored with reversed dims); 'step' (every
    other element of a buffer twice as long in the last dim); 'offset' (a view starting
    one element into a larger buffer).  Views are made with ``lib``'s own view ops, so
    both libraries see the same strides."""
    if layout == "contig" or arr.ndim == 0:
        return to_lib(lib, arr)
    if layout == "T" and arr.ndim >= 2:
        perm = tuple(reversed(range(arr.ndim)))
        return to_lib(lib, np.ascontiguousarray(arr.transpose(perm))).permute(perm)
    if layout == "step":
        big = np.zeros(arr.shape[:-1] + (2 * arr.shape[-1],), dtype=arr.dtype)
        big[..., ::2] = arr
        return to_lib(lib, big)[..., ::2]
    if layout == "offset":
        flat = np.zeros(arr.size + 1, dtype=arr.dtype)
        flat[1:] = arr.reshape(-1)
        return to_lib(lib, flat)[1:].view(arr.shape)
    return to_lib(lib, arr)


# ---- comparison -------------------------------------------------------------------------

def _flatten(out, acc):
    if isinstance(out, (tuple, list)) and not isinstance(out, (torch.Size, ember.Size)):
        acc.append(("seq", len(out)))
        for o in out:
            _flatten(o, acc)
    else:
        acc.append(out)
    return acc


def _as_np(t):
    if isinstance(t, torch.Tensor):
        t = t.detach()
        if t.dtype in (torch.bfloat16, torch.float16):
            return t.float().numpy(), str(t.dtype).split(".")[-1]
        t = t.resolve_conj().resolve_neg()
        return t.numpy(), str(t.dtype).split(".")[-1]
    d = t.dtype.name
    a = np.asarray(t.detach()._data)
    if d in HALVES:
        a = a.astype(np.float32)
    return a, d


def _tolerances(dtype, atol, rtol):
    if dtype in HALVES:
        return max(atol, 1e-2), max(rtol, 1.6e-2)
    if dtype in ("float32", "complex64"):
        return max(atol, 1e-5), max(rtol, 1.3e-6)
    return atol, rtol


def _values_differ(ea, ta, dtype, atol, rtol):
    if ea.dtype.kind in "fc" or ta.dtype.kind in "fc":
        ea, ta = ea.astype(np.complex128), ta.astype(np.complex128)
        with np.errstate(all="ignore"):
            for part in (np.real, np.imag):
                e, t = part(ea), part(ta)
                en, tn = np.isnan(e), np.isnan(t)
                if (en != tn).any():
                    return "NaN positions differ"
                fin = np.isfinite(t) & np.isfinite(e)
                if (e[~fin & ~tn] != t[~fin & ~tn]).any():
                    return "infinities differ"
                a, r = _tolerances(dtype, atol, rtol)
                bad = np.abs(e[fin] - t[fin]) > a + r * np.abs(t[fin])
                if bad.any():
                    i = np.flatnonzero(bad)[0]
                    return f"value {e[fin][i]!r} vs torch {t[fin][i]!r}"
        return None
    if not np.array_equal(ea, ta):
        return "integer/bool values differ"
    return None


def compare(e_out, t_out, atol=0.0, rtol=0.0):
    """(class, detail) of ember's result ``e_out`` against torch's ``t_out``."""
    ef, tf = _flatten(e_out, []), _flatten(t_out, [])
    if len(ef) != len(tf):
        return "structure", f"{len(ef)} outputs vs torch's {len(tf)}"
    for e, t in zip(ef, tf):
        if isinstance(t, tuple) and t and t[0] == "seq":
            if e != t:
                return "structure", f"sequence {e} vs torch {t}"
            continue
        if isinstance(t, torch.Tensor):
            if not isinstance(e, ember.Tensor):
                return "structure", f"{type(e).__name__} vs torch Tensor"
            ea, ed = _as_np(e)
            ta, td = _as_np(t)
            if ed != td:
                return "dtype", f"{ed} vs torch {td}"
            if ea.shape != ta.shape:
                return "shape", f"{list(ea.shape)} vs torch {list(ta.shape)}"
            why = _values_differ(ea, ta, td, atol, rtol)
            if why:
                return "value", why
            continue
        if isinstance(t, (torch.Size, tuple)) or isinstance(e, ember.Size):
            if tuple(e) != tuple(t):
                return "value", f"{e} vs torch {t}"
            continue
        if isinstance(t, numbers.Number) and isinstance(e, numbers.Number):
            if type(t) is bool and type(e) is not bool or type(t) is not bool and type(e) is bool:
                return "dtype", f"{type(e).__name__} vs torch {type(t).__name__}"
            if isinstance(t, float) and math.isnan(t):
                if not (isinstance(e, float) and math.isnan(e)):
                    return "value", f"{e!r} vs torch nan"
                continue
            if e != t and not (abs(complex(e) - complex(t)) <= atol + rtol * abs(complex(t)) + 1e-6 * abs(complex(t))):
                return "value", f"{e!r} vs torch {t!r}"
            continue
        if isinstance(t, torch.dtype):
            if str(e).split(".")[-1] != str(t).split(".")[-1]:
                return "value", f"{e} vs torch {t}"
            continue
        if (t is None) != (e is None):
            return "structure", f"{e!r} vs torch {t!r}"
    return "ok", ""


def _fresh_global_state():
    # a case's outcome must not depend on what earlier tests left behind: the default
    # dtype, and the global generators (ember's streams are torch's, so random ops agree)
    for lib in (torch, ember):
        lib.set_default_dtype(lib.float32)
    # the CPU generator is the only one a case draws from: torch.manual_seed also queues a
    # seeding of each lazily initialised device module (CUDA, XPU, MTIA), formatting the stack
    # for each, ~0.6 ms a call (a fuzz case's own work is ~8 ms)
    torch.default_generator.manual_seed(0)
    ember.manual_seed(0)


def run_both(case, atol=0.0, rtol=0.0):
    """Run ``case`` with torch and with ember; return (class, detail)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _fresh_global_state()
        try:
            t_out = case(torch)
            t_exc = None
        except Exception as e:  # noqa: BLE001 - any exception is an outcome
            t_out, t_exc = None, e
        try:
            ember.manual_seed(0)
            e_out = case(ember)
            e_exc = None
        except Exception as e:  # noqa: BLE001
            e_out, e_exc = None, e
    if e_exc is not None and exc_kind(e_exc) == "numpy":
        return "numpy_exc", f"{type(e_exc).__module__}.{type(e_exc).__name__}: {e_exc}"[:300]
    if t_exc is not None and e_exc is not None:
        tk, ek = exc_kind(t_exc), exc_kind(e_exc)
        if tk == ek:
            return "ok", ""
        return "exc_type", (f"ember {type(e_exc).__name__}({str(e_exc)[:120]!r}) vs torch "
                            f"{type(t_exc).__name__}({str(t_exc)[:120]!r})")
    if t_exc is not None:
        return "accepted", f"torch raised {type(t_exc).__name__}: {str(t_exc)[:160]}"
    if e_exc is not None:
        return "rejected", f"ember raised {type(e_exc).__name__}: {str(e_exc)[:160]}"
    try:
        return compare(e_out, t_out, atol, rtol)
    except Exception as e:  # noqa: BLE001 - an output the harness cannot read
        return "structure", f"cannot compare: {type(e).__name__}: {e}"


# ---- statistics -------------------------------------------------------------------------

class Stats:
    """Outcome counts for one fuzz family, split into documented and undocumented."""

    ALL = {}

    def __init__(self, family):
        self.family = family
        self.cases = 0
        self.counts = collections.Counter()
        self.documented = collections.Counter()
        self.undocumented = collections.defaultdict(list)
        Stats.ALL[family] = self

    def record(self, op, cls, detail, desc):
        from fuzz_deviations import find_deviation
        self.cases += 1
        self.counts[cls] += 1
        if cls == "ok":
            return
        dev = None if cls == "numpy_exc" else find_deviation(self.family, op, cls, detail, desc)
        if dev is not None:
            self.documented[(cls, dev)] += 1
            return
        lst = self.undocumented[cls]
        if len(lst) < 400:
            lst.append(f"{op}: {detail} | {desc}")

    def summary(self):
        mism = {c: n for c, n in self.counts.items() if c != "ok"}
        und = {c: len(v) for c, v in self.undocumented.items()}
        lines = [f"fuzz[{self.family}]: {self.cases} cases, mismatches by class {mism or '{}'}, "
                 f"undocumented {und or '{}'}"]
        for (cls, dev), n in sorted(self.documented.items()):
            lines.append(f"    documented {cls} x{n}: {dev}")
        return "\n".join(lines)

    def by_op(self):
        """Undocumented mismatches counted by (class, op), most frequent first."""
        c = collections.Counter()
        for cls, items in self.undocumented.items():
            for it in items:
                c[(cls, it.split(":")[0])] += 1
        return c.most_common()

    def failure_message(self):
        out = [self.summary(), "  by (class, op): " + ", ".join(
            f"{cls}/{op} x{n}" for (cls, op), n in self.by_op()[:40])]
        for cls, items in self.undocumented.items():
            out.append(f"  {cls}:")
            seen = set()
            for it in items:
                key = it.split(":")[0] + it.split("|")[0][-60:]
                if key in seen:
                    continue
                seen.add(key)
                out.append(f"    {it[:400]}")
                if len(seen) >= 25:
                    break
        return "\n".join(out)
