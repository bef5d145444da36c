"""vmap of every operator in the op database against a Python loop over the batch.

For each OpInfo (float64, or its first dtype) and each sample: three examples (the
sample plus two perturbed copies; integer/bool arguments are permuted when the op
accepts that, else repeated, so indices stay valid) are stacked, and
``vmap(op)(*stacked)`` must equal the per-example results stacked (values and
dtype), with every tensor batched at dim 0 and with mixed in_dims (one argument
unbatched, one batched at its last dim).  Operators that reach the looping
fallback must be listed in `FALLBACK_OK` with the reason a rule is impossible.
Random records must be refused under ``randomness="error"``, as torch refuses them.
"""
import warnings

import numpy as np
import pytest

import ember
from ember.ops import _batching as batching
from opdb import db_random
from opdb.all import OPS
from opdb.core import to_lib

SEED = 4321
MAX_SAMPLES = 6

# operators that may loop, and why a batching rule is impossible
FALLBACK_OK = {}

# per-example outputs whose shape depends on the data: vmap raises, as torch's does
DYNAMIC = {
    "masked_select", "nonzero", "nonzero_tuple", "argwhere", "unique", "Tensor.unique",
    "unique_consecutive", "bincount", "repeat_interleave_counts", "where_cond_only",
    ("setitem_mask", "row-mask"),  # one value per selected element
}

# integer arguments read as Python sizes: unbatched here; batching them raises, as in torch
STATIC_INTS = {"tensor_split": "split indices given as a tensor become Python ints",
               "repeat_interleave": "a repeats tensor decides the output size"}

# records that call Tensor.requires_grad_ in the vmapped function (the optimizers' parameters):
# torch's vmap refuses the call, so does ember's
REQUIRES_GRAD_ = {o.name for o in OPS if o.name.startswith("optim.")}

# random records (those compared by distribution): vmap's default randomness="error" refuses them, as torch's does (the
# distributions' parameter checks call .item(), which vmap refuses too)
RANDOM = {o.name for o in db_random.OPS if o.compare is not None}

# records that draw random numbers which do not reach their result: vmap them with
# randomness="same" (the RNN modules' initial weights, replaced through functional_call)
RANDOMNESS_SAME = {"nn.LSTM", "nn.LSTM-2layer-bidirectional-batch_first", "nn.GRU",
                   "nn.GRU-2layer-bidirectional", "nn.LSTMCell", "nn.GRUCell"}

# operators that return Python values, not tensors: nothing to stack
NON_TENSOR = {
    "allclose": "returns a Python bool",
    "equal": "returns a Python bool",
    "equal_mixed": "returns a Python bool",
    "equal_shape": "returns a Python bool",
}

# samples that write batched values into their unbatched arguments in place (batch_norm's
# running statistics) when the arguments' in_dims are mixed: torch's vmap raises too
WRITES_ARGUMENTS = {("nn.functional.batch_norm", "train-running")}

# out= into a fresh unbatched tensor from a batched result: torch's vmap raises too
OUT_VARIANTS = {o.name for o in OPS if o.name.endswith("_out") or o.name.endswith("-out")}


def _leaves(x, acc):
    if isinstance(x, np.ndarray):
        acc.append(x)
    elif isinstance(x, (list, tuple)):
        for y in x:
            _leaves(y, acc)
    elif isinstance(x, dict):
        for y in x.values():
            _leaves(y, acc)
    return acc


def _rebuild(x, it):
    if isinstance(x, np.ndarray):
        return next(it)
    if isinstance(x, list):
        return [_rebuild(y, it) for y in x]
    if isinstance(x, tuple):
        return tuple(_rebuild(y, it) for y in x)
    if isinstance(x, dict):
        return {k: _rebuild(v, it) for k, v in x.items()}
    return x


def _perturb(a, k, permute_ints):
    if k == 0:
        return a
    if a.dtype.kind in "fc":
        return (a * (1 + 0.1 * k) + (0.05 * k if a.dtype.kind == "f" else 0)).astype(a.dtype)
    if permute_ints and a.size > 1:
        flat = np.ascontiguousarray(a).reshape(-1)
        return np.roll(flat, k).reshape(a.shape)
    return a.copy()


def _call(op, template, arrays):
    args, kwargs = _rebuild(template, iter(arrays))
    return op.call(ember, list(args), kwargs)


def _flat_out(out):
    if isinstance(out, (list, tuple)):
        r = []
        for o in out:
            r.extend(_flat_out(o))
        return r
    return [out]


def _examples(op, template, leaves):
    """Per-example argument arrays and outputs; perturbed unless the op rejects that."""
    for mode in ("perturb", "ints-fixed", "repeat"):
        exs = []
        for k in range(3):
            if mode == "repeat":
                exs.append([a.copy() for a in leaves])
            else:
                exs.append([_perturb(a, k, mode == "perturb") for a in leaves])
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                outs = [_call(op, template, [ember.from_numpy(np.array(a)) for a in ex])
                        for ex in exs]
            shapes = {tuple(tuple(o.shape) for o in _flat_out(r) if isinstance(o, ember.Tensor))
                      for r in outs}
            if len(shapes) == 1 or op.name in DYNAMIC:
                return exs, outs
        except Exception:  # noqa: BLE001 - the perturbation left the op's domain
            if mode == "repeat":
                raise
    return exs, outs


def _run_vmap(op, template, exs, in_dims, randomness="error"):
    phys = []
    for i, d in enumerate(in_dims):
        if d is None:
            phys.append(ember.from_numpy(np.array(exs[0][i])))
        else:
            phys.append(ember.from_numpy(np.stack([ex[i] for ex in exs], axis=d)))
    batching._WARNED.clear()
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        out = ember.func.vmap(lambda *a: _call(op, template, a), in_dims=tuple(in_dims),
                              randomness=randomness)(*phys)
    used = {str(w.message).split("ember.ops.")[1].split(".")[0] for w in rec
            if "batching rule for ember.ops." in str(w.message)}
    return out, used


def _check(op, out, outs, where):
    got = _flat_out(out)
    want = [_flat_out(r) for r in outs]
    assert len(got) == len(want[0]), f"{where}: {len(got)} outputs vs {len(want[0])}"
    for j, g in enumerate(got):
        ref = np.stack([np.asarray(w[j]._data) for w in want])
        assert g.dtype == want[0][j].dtype, f"{where}: output {j} dtype {g.dtype} vs " \
                                            f"{want[0][j].dtype}"
        assert tuple(g.shape) == ref.shape, f"{where}: output {j} shape {tuple(g.shape)} vs " \
                                            f"{ref.shape}"
        if ref.dtype.kind in "fc":
            np.testing.assert_allclose(np.asarray(g._data, dtype=ref.dtype), ref, rtol=1e-6,
                                       atol=1e-7, equal_nan=True, err_msg=where)
        else:
            np.testing.assert_array_equal(np.asarray(g._data), ref, err_msg=where)


def _dtype(op):
    return "float64" if "float64" in op.dtypes else op.dtypes[0]


def _samples(op):
    rng = np.random.default_rng(SEED)
    for n, s in enumerate(op.samples(_dtype(op), rng)):
        if n >= MAX_SAMPLES:
            return
        template = (tuple(s.args), dict(s.kwargs))
        leaves = _leaves(template, [])
        if leaves:
            yield s, template, leaves


def _mixed_dims(leaves):
    dims = [0] * len(leaves)
    dims[0] = leaves[0].ndim  # batch last in the first tensor
    if len(leaves) > 1:
        dims[1] = None
    return dims


def _params():
    for o in OPS:
        if o.name in NON_TENSOR:
            continue
        yield pytest.param(o, id=o.name)


def _static(leaves, dims):
    return [None if a.dtype.kind in "biu" else d for a, d in zip(leaves, dims)]


@pytest.mark.parametrize("op", list(_params()))
def test_vmap_matches_loop(op):
    fallbacks = set()
    for s, template, leaves in _samples(op):
        where = f"{op.name} sample {s.name}"
        if op.name in REQUIRES_GRAD_:
            exs = [[_perturb(a, k, False) for a in leaves] for k in range(3)]
            with pytest.raises(RuntimeError, match=r"call Tensor\.requires_grad_\(\)"):
                _run_vmap(op, template, exs, [0] * len(leaves))
            continue
        if op.name in RANDOM:
            exs = [[_perturb(a, k, False) for a in leaves] for k in range(3)]
            with pytest.raises(RuntimeError, match="vmap"):
                _run_vmap(op, template, exs, [0] * len(leaves))
            continue
        if op.name in DYNAMIC or (op.name, s.name) in DYNAMIC or op.name in OUT_VARIANTS:
            exs = [[_perturb(a, k, False) for a in leaves] for k in range(3)]
            try:
                _call(op, template, [ember.from_numpy(np.array(a)) for a in exs[0]])
            except Exception:  # noqa: BLE001 - an error case of the op itself
                continue
            with pytest.raises(RuntimeError, match="vmap|[Bb]atch"):
                _run_vmap(op, template, exs, [0] * len(leaves))
            continue
        try:
            exs, outs = _examples(op, template, leaves)
        except Exception:  # noqa: BLE001 - torch rejects this sample too (an error case)
            continue
        for dims in ([0] * len(leaves), _mixed_dims(leaves)):
            if op.name in STATIC_INTS:
                dims = _static(leaves, dims)
                if all(d is None for d in dims):
                    continue
            if None in dims and (op.name, s.name) in WRITES_ARGUMENTS:
                with pytest.raises(RuntimeError, match="vmap"):
                    _run_vmap(op, template, exs, dims)
                continue
            if None in dims:
                exs_d = [[ex[i] if d is not None else exs[0][i] for i, d in enumerate(dims)]
                         for ex in exs]
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    outs_d = [_call(op, template, [ember.from_numpy(np.array(a)) for a in ex])
                              for ex in exs_d]
            else:
                exs_d, outs_d = exs, outs
            out, used = _run_vmap(op, template, exs_d, dims,
                                  "same" if op.name in RANDOMNESS_SAME else "error")
            fallbacks |= used
            _check(op, out, outs_d, f"{where} in_dims={dims}")
    bad = {f for f in fallbacks if f not in FALLBACK_OK}
    assert not bad, f"{op.name}: the looping fallback ran for {sorted(bad)}"


@pytest.mark.parametrize("name", sorted(NON_TENSOR))
def test_non_tensor_ops_are_really_non_tensor(name):
    op = next(o for o in OPS if o.name == name)
    s = next(iter(op.samples(_dtype(op), np.random.default_rng(SEED))))
    out = op.call(ember, to_lib(ember, s.args), to_lib(ember, s.kwargs))
    assert not isinstance(out, ember.Tensor)
