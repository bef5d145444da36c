"""Every op-database record through ``ember.compile`` (issue 18): results equal eager.

For each record and each backend ("eager", "aot_eager"), ONE compiled function
``f(args, kwargs) = record(*args, **kwargs)`` runs a few of the record's samples (the first,
middle and last: plain cases and the edge cases records list last), each twice: the second
call must compile nothing (every graph a cache hit) and still be right.  After the first
sample that can grow come two grown copies of it (every size >= 2 one larger, then two
larger, where eager accepts them): the first recompiles with dynamic sizes, the second runs
that symbolic graph.  Other ranks and Python arguments of later samples recompile too.
Compared with eager:

* forward: output structure, dtypes, shapes, values, requires_grad, and the inputs
  afterwards (in-place records write them); an error sample raises eager's exception type;
* backward (differentiable records): the gradients of a fixed weighted sum of the floating
  outputs with respect to the differentiable inputs, ``autograd.grad`` run outside the
  compiled region.  The weights are fixed non-uniform numbers rather than ones, so the
  gradients of normalising ops (softmax, ...) are not trivially zero.

Values must be bit-identical for the "eager" backend (it runs the recorded ops one by one;
`NOT_EXACT` lists the records that cannot be, and why) and within torch's default
tolerance for the dtype for "aot_eager" (its backward is a separately built graph).
Random records start every call from the same generator state.  Records that cannot be
captured graph-break and must still equal eager.  Known core bugs are xfailed (strict) with
the reason, each reported with a minimal repro in /tmp/dynamo_bugs.md.
"""
import gc
import warnings

import numpy as np
import pytest

import ember
from opdb.all import OPS
from opdb.core import to_lib
from opdb_compile_cases import (MAX_SAMPLES, SEED, call_dtype, grad_dtype, grown, leaves,
                                rebuild)

BACKENDS = ("eager", "aot_eager")
# the seeded generator state (restoring it is much cheaper than seeding)
_RNG_STATE = ember.Generator().manual_seed(SEED).get_state()

# records the "eager" backend cannot match bit for bit, with the reason (compared with the
# dtype's tolerance instead)
NOT_EXACT = {}

# Known core bugs (none at present): strict, so a fix makes the test fail until its entry
# goes.  Records whose compiled forward (FORWARD_XFAIL) or backward (BACKWARD_XFAIL) differs from
# eager on both backends; *_BACKEND: (record, backend) pairs failing on one backend only
FORWARD_XFAIL = {}
FORWARD_XFAIL_BACKEND = {}
BACKWARD_XFAIL = {}
BACKWARD_XFAIL_BACKEND = {}


def _marks(name, backend, table, per_backend):
    reason = per_backend.get((name, backend)) or table.get(name)
    return [pytest.mark.xfail(reason=reason, strict=True)] if reason else []


def _params(table, per_backend, keep=lambda op: True):
    for backend in BACKENDS:
        for op in OPS:
            if keep(op):
                yield pytest.param(op, backend, id=f"{backend}-{op.name}",
                                   marks=_marks(op.name, backend, table, per_backend))


# ---- running and comparing ----------------------------------------------------------------

def _flatten(out):
    if isinstance(out, (tuple, list)):
        return [y for x in out for y in _flatten(x)]
    return [out]


def _structure(out):
    """The container types and lengths of an output (namedtuples and lists included)."""
    if isinstance(out, (tuple, list)):
        return (type(out).__name__, tuple(_structure(x) for x in out))
    return type(out).__name__ if not isinstance(out, ember.Tensor) else "Tensor"


def _tensors(arrays, grad_idx=()):
    ts = [to_lib(ember, a) for a in arrays]  # fresh copies: records may write their inputs
    for k in grad_idx:
        ts[k].requires_grad_(True)
    return ts


def _call(fn, template, tensors, seeded=True):
    args, kwargs = rebuild(template, iter(tensors))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if seeded:  # random records draw the same stream in every run
            ember.set_rng_state(_RNG_STATE)
        return fn(list(args), kwargs)


def _draws_random(op, cases):
    """Whether the record draws random numbers on its first sample (then every call starts
    from the same generator state; restoring it costs more than many records' calls)."""
    if not cases:
        return False
    _, template, arrays, _ = cases[0]
    before = ember.get_rng_state()
    try:
        _call(_eager(op), template, _tensors(arrays), seeded=False)
    except Exception:  # noqa: BLE001 - an error sample draws nothing we compare
        pass
    return not ember.equal(before, ember.get_rng_state())


# torch.testing.assert_close's default tolerances (rtol, atol) by dtype, for "aot_eager"
_TOLERANCES = {"float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5),
               "float64": (1e-7, 1e-7), "complex64": (1.3e-6, 1e-5),
               "complex128": (1e-7, 1e-7)}


def _equal(g, w, exact, name):
    """Fast check; the NumPy assertions below only run to describe a mismatch."""
    if exact or name not in _TOLERANCES:
        return np.array_equal(g, w, equal_nan=w.dtype.kind in "fc")
    rtol, atol = _TOLERANCES[name]
    return np.allclose(g, w, rtol=rtol, atol=atol, equal_nan=True)


def _assert_same(got, want, where, exact):
    if isinstance(want, ember.Tensor):
        assert isinstance(got, ember.Tensor), f"{where}: {type(got).__name__}, eager a Tensor"
        assert got.dtype == want.dtype, f"{where}: dtype {got.dtype}, eager {want.dtype}"
        assert tuple(got.shape) == tuple(want.shape), \
            f"{where}: shape {tuple(got.shape)}, eager {tuple(want.shape)}"
        g, w = got.detach().numpy(), want.detach().numpy()
        name = str(want.dtype).split(".")[-1]
        if name in ("float16", "bfloat16"):
            g, w = g.astype(np.float32), w.astype(np.float32)
        if _equal(g, w, exact, name):
            return
        if exact or name not in _TOLERANCES:
            np.testing.assert_array_equal(g, w, err_msg=where)
        else:
            rtol, atol = _TOLERANCES[name]
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True,
                                       err_msg=where)
    elif isinstance(want, float) and want != want:
        assert got != got, f"{where}: {got!r}, eager nan"
    else:
        assert type(got) is type(want) and got == want, f"{where}: {got!r}, eager {want!r}"


def _compare_outputs(got, want, where, exact):
    assert _structure(got) == _structure(want), \
        f"{where}: output structure {_structure(got)}, eager {_structure(want)}"
    for j, (g, w) in enumerate(zip(_flatten(got), _flatten(want))):
        _assert_same(g, w, f"{where} output {j}", exact)
        if isinstance(w, ember.Tensor):
            assert g.requires_grad == w.requires_grad, \
                f"{where} output {j}: requires_grad {g.requires_grad}, eager {w.requires_grad}"


def _eager_or_error(op, template, arrays, seeded):
    """Eager's result (tensors, output) or the exception it raises."""
    tensors = _tensors(arrays)
    try:
        return tensors, _call(_eager(op), template, tensors, seeded), None
    except Exception as exc:  # noqa: BLE001 - an error sample: compiled must raise it too
        return tensors, None, exc


def _compiled(op, backend):
    record = _eager(op)
    record.__qualname__ = f"opdb[{op.name}]"
    return ember.compile(record, backend=backend)


def _eager(op):
    def record(args, kwargs):
        return op.call(ember, args, kwargs)
    return record


def _cases(op, dtype):
    """(name, template, arrays, grad_args): up to MAX_SAMPLES of the record's samples, spread
    over its list (first, last, middle: records list plain cases first and edge cases such
    as empty or non-contiguous inputs last), then two grown copies of the first of them that
    can grow and that eager runs."""
    rng = np.random.default_rng(SEED)
    samples = list(op.samples(dtype, rng))
    picked = sorted({0, len(samples) - 1, len(samples) // 2})[:MAX_SAMPLES] if samples else []
    out = []
    for i in picked:
        s = samples[i]
        template = (tuple(s.args), dict(s.kwargs))
        out.append((s.name or str(i), template, leaves(template), s.grad_args))
    for k, (name, template, _, grad_args) in enumerate(out):
        copies = [g for g in (grown(template, 1), grown(template, 2)) if g is not None]
        if len(copies) == 2 and _eager_runs(op, copies):
            out[k + 1:k + 1] = [(f"{name}+{step}", g, leaves(g), grad_args)
                                for step, g in ((1, copies[0]), (2, copies[1]))]
            break
    return out


def _eager_runs(op, templates):
    for t in templates:
        try:
            _call(_eager(op), t, _tensors(leaves(t)), seeded=False)
        except Exception:  # noqa: BLE001 - this record's sizes are tied to its arguments
            return False
    return True


def _check_cache(compiled, call, compiles, where):
    """After call 1: the compile count; after call 2 (the same inputs again): asserts that
    it compiled nothing, every graph a cache hit."""
    if call == 2:
        assert compiled.cache.compiles == compiles, \
            f"{where}: the second call compiled again " \
            f"({compiled.cache.compiles - compiles} graphs)"
    return compiled.cache.compiles


@pytest.fixture(autouse=True)
def _fresh_caches_no_cyclic_gc():
    """Fresh caches; the cyclic GC off while a test runs: which lazy tensors are alive at a
    flush decides a graph's outputs, and garbage in reference cycles (records define classes
    and build modules inside the compiled function) lives until the GC runs, so with it on
    the "second call compiles nothing" check could fail at random (core bug reported:
    graphs depend on cyclic-GC timing)."""
    ember._dynamo.reset()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        ember._dynamo.reset()


# ---- forward --------------------------------------------------------------------------------

@pytest.mark.parametrize("op,backend", list(_params(FORWARD_XFAIL, FORWARD_XFAIL_BACKEND)))
def test_compiled_forward_matches_eager(op, backend):
    dtype = call_dtype(op)
    compiled = _compiled(op, backend)
    exact = backend == "eager" and op.name not in NOT_EXACT
    cases = _cases(op, dtype)
    seeded = _draws_random(op, cases)
    for name, template, arrays, _ in cases:
        where = f"{op.name}[{dtype}] sample {name}"
        want_inputs, want, exc = _eager_or_error(op, template, arrays, seeded)
        compiles = None
        for call in (1, 2):
            tensors = _tensors(arrays)
            if exc is not None:
                with pytest.raises(type(exc)):
                    _call(compiled, template, tensors, seeded)
                continue
            got = _call(compiled, template, tensors, seeded)
            _compare_outputs(got, want, f"{where} call {call}", exact)
            for k, (g, w) in enumerate(zip(tensors, want_inputs)):
                _assert_same(g, w, f"{where} call {call} input {k} afterwards", exact)
            compiles = _check_cache(compiled, call, compiles, where)


# ---- backward -------------------------------------------------------------------------------

def _weighted_sum(out):
    total = None
    for o in _flatten(out):
        if isinstance(o, ember.Tensor) and o.requires_grad and \
                (o.dtype.is_floating_point or o.dtype.is_complex):
            n = max(o.numel(), 1)
            w = ember.from_numpy((0.5 + np.arange(n) % 7 / 7.0)[:o.numel()]
                                 .reshape(tuple(o.shape))).to(o.dtype)
            term = (o * w).sum()
            if o.dtype.is_complex:
                term = term.real + term.imag
            total = term if total is None else total + term
    return total


def _grad_idx(template, arrays, grad_args):
    """Indices (into ``arrays``) of the differentiable inputs: the non-empty floating arrays
    among the sample's ``grad_args`` (default: every positional argument)."""
    wanted = set()
    for i, a in enumerate(template[0]):
        if grad_args is None or i in grad_args:
            wanted |= {id(x) for x in leaves(a)}
    return [k for k, a in enumerate(arrays) if id(a) in wanted and a.dtype.kind in "fc"
            and a.size]


def _grads(fn, template, tensors, grad_idx, seeded):
    out = _call(fn, template, tensors, seeded)
    loss = _weighted_sum(out)
    if loss is None:
        return out, None
    inputs = [tensors[k] for k in grad_idx]
    return out, ember.autograd.grad(loss, inputs, allow_unused=True)


def _compare_grads(got, want, where, exact):
    if want is None:
        assert got is None, f"{where}: compiled outputs need grad, eager's do not"
        return
    assert got is not None, f"{where}: compiled outputs have no grad"
    for k, (g, w) in enumerate(zip(got, want)):
        if w is None:
            assert g is None, f"{where} grad {k}: eager has none"
        else:
            assert g is not None, f"{where} grad {k}: missing"
            _assert_same(g, w, f"{where} grad {k}", exact)


@pytest.mark.parametrize("op,backend", list(_params(
    BACKWARD_XFAIL, BACKWARD_XFAIL_BACKEND, keep=lambda op: op.grad and grad_dtype(op))))
def test_compiled_backward_matches_eager(op, backend):
    dtype = grad_dtype(op)
    compiled = _compiled(op, backend)
    exact = backend == "eager" and op.name not in NOT_EXACT
    cases = _cases(op, dtype)
    seeded = _draws_random(op, cases)
    for name, template, arrays, grad_args in cases:
        idx = _grad_idx(template, arrays, grad_args)
        if not idx:
            continue
        where = f"{op.name}[{dtype}] sample {name}"
        try:
            want_out, want = _grads(_eager(op), template, _tensors(arrays, idx), idx, seeded)
        except Exception as exc:  # noqa: BLE001 - eager rejects it: compiled must too
            with pytest.raises(type(exc)):
                _grads(compiled, template, _tensors(arrays, idx), idx, seeded)
            continue
        compiles = None
        for call in (1, 2):
            got_out, got = _grads(compiled, template, _tensors(arrays, idx), idx, seeded)
            _compare_outputs(got_out, want_out, f"{where} call {call}", exact)
            _compare_grads(got, want, f"{where} call {call}", exact)
            compiles = _check_cache(compiled, call, compiles, where)
