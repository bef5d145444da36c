"""The op database on the meta device.

Every record's samples run three times: on CPU tensors, and on meta tensors with torch and
with ember (inside ``with device('meta')``, so factories in the call create on meta too).
Where ember's meta run succeeds, each output is a meta tensor with the CPU result's shape
and dtype.  Where it raises, torch's meta device must raise the same exception type: an
op whose result size depends on values (nonzero, unique, masked_select), a Python read of
a value (``item``, ``bool``), an optimizer step that reads its step count.  Ember computing
a shape where torch's meta kernels are missing (lstsq, histogram, cov) is allowed.
"""
import warnings

import numpy as np
import pytest
import torch

import ember
from opdb.all import OPS
from opdb.core import flatten, grad_leaves, to_lib


@pytest.fixture(autouse=True)
def _torch_validates():
    """torch.compile switches torch's distribution argument checks off for the whole process
    (Dynamo calls Distribution.set_default_validate_args(False)): another test in this worker
    may have compiled. The oracle validates here, as torch does by default and as ember
    does."""
    prev = torch.distributions.Distribution._validate_args
    torch.distributions.Distribution.set_default_validate_args(True)
    yield
    torch.distributions.Distribution.set_default_validate_args(prev)

SEED = 1234

_VALUES_IN_PYTHON = ("the composite reads the values in Python (ember raises item()'s "
                     "RuntimeError where torch's meta device names the missing aten::equal)")
KNOWN = {
    "equal": _VALUES_IN_PYTHON,
    "equal_mixed": _VALUES_IN_PYTHON,
    "istft": "ember's window check makes a CPU tensor (device error); torch's meta device "
             "fails on aten::equal (NotImplementedError)",
    "setitem": "a boolean-mask write with a tensor value probes the mask's values to check "
               "broadcasting; torch's meta kernel skips the check",
    "setitem_mask": "as setitem: the mask's values are probed",
    **{n: "fweights/aweights are checked by value (item()'s RuntimeError); torch's meta run "
          "stops before, at its missing aten::equal (NotImplementedError)"
       for n in ("cov", "Tensor.cov")},
    "optim.SparseAdam": "sparse gradients are coalesced by their index values (item()'s "
                        "RuntimeError); torch's SparseMeta backend lacks _coalesce "
                        "(NotImplementedError)",
    "tensor_split": "tensor indices on meta: ember reads their values (NotImplementedError), "
                    "torch refuses indices off the CPU (RuntimeError)",
}


def _dtype(op):
    for d in ("float64", "float32", "complex128", "int64"):
        if d in op.dtypes:
            return d
    return op.dtypes[0]


def _to_meta(x, lib):
    if isinstance(x, lib.Tensor):
        return x.to("meta")
    if isinstance(x, (list, tuple)):
        return type(x)(_to_meta(y, lib) for y in x)
    if isinstance(x, dict):
        return {k: _to_meta(v, lib) for k, v in x.items()}
    return x


def _on_meta(lib, op, s):
    args, kwargs = to_lib(lib, s.args), to_lib(lib, s.kwargs)
    with lib.device("meta"):
        return op.call(lib, _to_meta(args, lib), _to_meta(kwargs, lib))


def _cases(known, grad_only=False):
    for op in OPS:
        if grad_only and not op.grad:
            continue
        marks = [pytest.mark.xfail(reason=known[op.name], strict=True)] \
            if op.name in known else []
        yield pytest.param(op, id=op.name, marks=marks)


@pytest.mark.parametrize("op", list(_cases(KNOWN)))
def test_op_on_meta_tensors(op):
    dtype = _dtype(op)
    rng = np.random.default_rng(SEED)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for s in op.samples(dtype, rng):
            where = f"{op.name}[{dtype}] sample {s.name}"
            ember.manual_seed(SEED)
            try:
                cpu = op.call(ember, to_lib(ember, s.args), to_lib(ember, s.kwargs))
            except Exception:
                continue  # bad input: its errors are the op database's business
            try:
                _on_meta(torch, op, s)
                torch_error = None
            except Exception as e:
                torch_error = e
            try:
                meta = _on_meta(ember, op, s)
            except Exception as e:
                assert torch_error is not None, \
                    f"{where}: ember raised {type(e).__name__}: {e} on meta; torch computes"
                assert type(e) is type(torch_error), \
                    f"{where}: ember raised {type(e).__name__}: {e}, torch " \
                    f"{type(torch_error).__name__}: {torch_error}"
                continue
            c, m = flatten(cpu), flatten(meta)
            assert len(c) == len(m), f"{where}: {len(m)} outputs on meta, {len(c)} on cpu"
            for i, (a, b) in enumerate(zip(c, m)):
                if not isinstance(a, ember.Tensor):
                    continue
                assert isinstance(b, ember.Tensor) and b.is_meta, \
                    f"{where}: output {i} is {b!r}, not a meta tensor"
                assert tuple(b.shape) == tuple(a.shape) and b.dtype == a.dtype, \
                    f"{where}: output {i} {b.dtype}{tuple(b.shape)} vs cpu " \
                    f"{a.dtype}{tuple(a.shape)}"


# backward on meta: the vjps that read values in Python (not through operators)
KNOWN_GRAD = dict(
    {"linalg.eig": "the vjp's gauge check (torch's error when a loss depends on the phase of "
                   "complex eigenvectors) reads values, which meta arrays do not have; torch's "
                   "meta backward skips it"},
    **{n: "the vjp gathers the used source elements with masked_select (a size that depends "
          "on the mask's values)" for n in ("masked_scatter", "masked_scatter_")},
    **{"nn.functional.embedding": "scale_grad_by_freq counts indices with bincount (its size "
                                  "depends on the values)",
       "tensor_split": KNOWN["tensor_split"]},
)


def _grads(lib, op, s, meta):
    """The gradients of the sum of ``op``'s outputs with respect to its float arguments."""
    args, kwargs = to_lib(lib, s.args), to_lib(lib, s.kwargs)
    if meta:
        args, kwargs = _to_meta(args, lib), _to_meta(kwargs, lib)
    leaves = grad_leaves(args, lib)
    if not leaves:
        return None
    with lib.device("meta" if meta else "cpu"):
        total = None
        for o in flatten(op.call(lib, args, kwargs)):
            if isinstance(o, lib.Tensor) and o.requires_grad:
                t = o.sum()
                if o.dtype.is_complex:
                    t = t.real + t.imag
                total = t if total is None else total + t
        if total is None:
            return None
        total.backward()
    return [x.grad for x in leaves]


@pytest.mark.parametrize("op", list(_cases(KNOWN_GRAD, grad_only=True)))
def test_backward_on_meta_tensors(op):
    """backward() on meta outputs gives meta gradients of the inputs' shapes and dtypes,
    for the same inputs the CPU run gives gradients to."""
    dtype = "float64" if "float64" in op.dtypes else op.dtypes[0]
    rng = np.random.default_rng(SEED)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for s in op.samples(dtype, rng):
            where = f"{op.name}[{dtype}] sample {s.name}"
            ember.manual_seed(SEED)
            try:
                cpu = _grads(ember, op, s, False)
            except Exception:
                continue
            if cpu is None:
                continue
            try:
                meta = _grads(ember, op, s, True)
            except Exception as e:
                with pytest.raises(type(e)):
                    _grads(torch, op, s, True)
                continue
            assert meta is not None, f"{where}: no output requires grad on meta"
            for i, (a, b) in enumerate(zip(cpu, meta)):
                assert (a is None) == (b is None), f"{where}: grad {i} cpu {a!r} meta {b!r}"
                if a is not None:
                    assert b.is_meta and tuple(b.shape) == tuple(a.shape) and \
                        b.dtype == a.dtype, f"{where}: grad {i} {b!r} vs cpu " \
                        f"{a.dtype}{tuple(a.shape)}"
