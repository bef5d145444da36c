"""Which registered operators each op-database record reaches.

`reached()` runs every record's samples (float64 or the record's first dtype; forward, and
backward where the record has ``grad``) under a dispatch mode that notes each operator
called, so a record names its operators without hand-listing them (``OpInfo.ops`` adds
the ones a run cannot see).  In-place variants count as their out-of-place operator.
"""
import functools
import warnings

import numpy as np

import ember
from ember import DispatchMode

from .core import to_lib

SEED = 1234

# registered operators no record can reach, and why
NO_RECORD = {
    "_rng_uniform": "primitive of the random decompositions only (tests/ops/"
                    "test_decompositions.py runs them); the sampling ops call their own kernels",
    "_stop_gradient": "primitive of decompositions only (ctc, nn); tests/ops/"
                      "test_decompositions.py checks those against the kernels",
    "_to_device": "copies between device backends: never dispatched with only cpu registered; "
                  "tests/_core/test_dispatch.py and tests/ops/test_backend_neutral.py register one",
    **dict.fromkeys(("_histogramdd_bin_edges", "_histogramdd_from_bin_cts",
                     "_histogramdd_from_bin_tensors"),
                    "histogramdd's operators: tests/ops/test_histogramdd_fn.py checks them against "
                    "torch (edges, counts, weights, density, errors, grad, meta); a record "
                    "needs an output count per call (the edges op returns one per dimension), "
                    "which capture and the vmap rules do not take yet"),
    **dict.fromkeys(("split", "split_with_sizes", "unbind"),
                    "split/chunk/unbind's one-node eager form: under a dispatch mode (this "
                    "collector's) they are slice/select views; the split records check them "
                    "without a mode, tests/ops/test_split_node.py against torch and "
                    "tests/ops/test_decompositions.py's direct drivers"),
    "native_layer_norm": "layer_norm's one-node eager form (with weight and bias): under a "
                         "dispatch mode (this collector's) layer_norm is normalize + addcmul; "
                         "tests/nn/test_layer_norm_fused.py checks it against torch and "
                         "tests/ops/test_decompositions.py's direct drivers",
    **dict.fromkeys(("cond", "while_loop", "map"),
                    "higher-order ops: recorded by ember.compile's capture, never called eagerly; "
                    "tests/_dynamo/test_higher_order.py runs them against torch"),
}


def ember_ops():
    """Registered operators whose kernels ember defines (tests register probes of their own)."""
    from ember._core.op import REGISTRY
    return {n for n, op in REGISTRY.items()
            if getattr(op.kernel, "__module__", "ember").startswith("ember")}


class _Record(DispatchMode):
    def __init__(self, seen):
        self.seen = seen

    def __ember_dispatch__(self, op, args, kwargs):
        self.seen.add(getattr(op, "base", op).name)
        return op(*args, **kwargs)


def _flat(out):
    if isinstance(out, (tuple, list)):
        return [y for x in out for y in _flat(x)]
    return [out]


def _grad_args(s):
    args, leaves = [], []
    for i, a in enumerate(s.args):
        want = s.grad_args is None or i in s.grad_args
        t = to_lib(ember, a)
        for x in (t if isinstance(t, list) else [t]):
            if want and isinstance(x, ember.Tensor) and (x.dtype.is_floating_point or
                                                         x.dtype.is_complex):
                x.requires_grad_(True)
                leaves.append(x)
        args.append(t)
    return args, leaves


def _run(op, seen):
    dtype = "float64" if "float64" in op.dtypes or "float32" in op.dtypes else op.dtypes[0]
    if dtype not in op.dtypes and "float64" not in op.dtypes:
        dtype = op.dtypes[0]
    rng = np.random.default_rng(SEED)
    for s in op.samples(dtype, rng):
        # without grad first: some functions pick another operator when a gradient is wanted
        # (linalg.eigvals computes eigenvectors for its backward)
        with _Record(seen):
            try:
                op.call(ember, list(to_lib(ember, s.args)), to_lib(ember, s.kwargs))
            except Exception:  # noqa: BLE001 - an error sample: what it reached still counts
                pass
        if not op.grad:
            continue
        args, leaves = _grad_args(s)
        if not leaves:
            continue
        with _Record(seen):
            try:
                out = op.call(ember, list(args), to_lib(ember, s.kwargs))
            except Exception:  # noqa: BLE001
                continue
            outs = [o for o in _flat(out) if isinstance(o, ember.Tensor) and o.requires_grad]
            if outs:
                loss = sum((o.abs() if o.dtype.is_complex else o).sum() for o in outs)
                try:
                    ember.autograd.grad(loss, leaves, allow_unused=True)
                except Exception:  # noqa: BLE001 - test_opdb reports broken backwards
                    pass
    for name in op.ops:
        seen.add(name)


@functools.lru_cache(maxsize=None)
def reached():
    """{record name: frozenset of operator names} over every record of the database."""
    from .all import OPS
    result = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for op in OPS:
            seen = set()
            _run(op, seen)
            result[op.name] = frozenset(seen)
    return result
