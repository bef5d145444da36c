"""The ``__ember_function__`` protocol reaches every public function and Tensor method.

Registry self-test: every public callable of ``ember``, ``ember.nn.functional``,
``ember.linalg``, ``ember.fft`` and ``ember.special`` and every public Tensor method
is called with an override-capable argument in its first tensor position (inside a
list for functions taking a sequence of tensors) and must hand the call to the
override with itself as ``func`` -- before reading any attribute of the argument.
"""
import inspect
import operator
import types

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember._core import dispatch
from ember._core.state import STATE

NAMESPACES = {"ember": ember, "ember.nn.functional": F, "ember.linalg": ember.linalg,
              "ember.fft": ember.fft, "ember.special": ember.special}

# Functions that must see the object itself or take no argument an override could
# stand for: predicates on the object's type, global settings and RNG state, file I/O.
EXCLUDED = {
    "ember.is_tensor": "answers about the object's type (False for a tensor-like, as torch)",
    "ember.typename": "names the object's type",
    "ember.is_grad_enabled": "reads global grad mode, takes no argument",
    "ember.is_inference_mode_enabled": "reads global state, takes no argument",
    "ember.get_default_dtype": "global setting",
    "ember.set_default_dtype": "global setting (takes a dtype)",
    "ember.set_printoptions": "global setting",
    "ember.get_num_threads": "global setting",
    "ember.set_num_threads": "global setting",
    "ember.manual_seed": "global RNG state (takes an int)",
    "ember.seed": "global RNG state",
    "ember.initial_seed": "global RNG state",
    "ember.get_rng_state": "global RNG state",
    "ember.set_rng_state": "global RNG state (a state snapshot, not an operand)",
    "ember.load": "file I/O of a path",
    "ember.save": "file I/O (pickles the object as it is)",
    "ember.promote_types": "dtype utility: takes dtypes",
    "ember.can_cast": "dtype utility: takes dtypes",
}

# functions whose tensors come as a sequence (first parameter) or after a non-tensor one
LIST_FIRST = {"cat", "concat", "concatenate", "stack", "hstack", "vstack", "dstack",
              "column_stack", "row_stack", "multi_dot", "block_diag_list"}
SPECIAL_CALLS = {
    "ember.einsum": lambda f, r: f("ij->ji", r),
    "ember.nn.functional.embedding": lambda f, r: f(r, 1),
}

SENTINEL = object()


class Recorder:
    """A tensor-like (not a Tensor) that records the function its override receives."""
    seen = []

    @classmethod
    def __ember_function__(cls, func, types, args=(), kwargs=None):
        cls.seen.append(func)
        return SENTINEL


@pytest.fixture(scope="module", autouse=True)
def _registered():
    before = STATE.overrides
    dispatch.register_override_type(Recorder)
    yield
    dispatch.unregister_override_type(Recorder)
    assert STATE.overrides == before


def public_functions():
    out = {}
    for ns, mod in NAMESPACES.items():
        for name in sorted(vars(mod)):
            v = vars(mod)[name]
            if name.startswith("_") or isinstance(v, (type, types.ModuleType)) or \
                    not callable(v) or not (getattr(v, "__module__", "") or "").startswith("ember"):
                continue
            out[f"{ns}.{name}"] = v
    return out


# parameters that take tensors (torch rejects a Python number for some of them before it
# looks for overrides); any other required parameter gets 1
TENSOR_PARAMS = {"other", "end", "weight", "tensor1", "tensor2", "mat1", "mat2", "mat", "vec",
                 "vec1", "vec2", "batch1", "batch2", "exponent", "input2", "target", "x2"}


def _dummy(name):
    return ember.ones(()) if name in TENSOR_PARAMS else 1


def _fill(fn, first, skip_self=False):
    """Arguments for ``fn``: ``first`` in the first position, a 0-dim tensor or 1 for the
    other required ones (the override must take over before they are looked at)."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return (first,), {}
    if skip_self:
        params = params[1:]
    args, kwargs, placed = [], {}, first is None
    for p in params:
        if p.kind is p.VAR_POSITIONAL:
            if not placed:
                args.append(first)
                placed = True
            continue
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            if not placed:
                args.append(first)
                placed = True
            elif p.default is p.empty:
                args.append(_dummy(p.name))
        elif p.kind is p.KEYWORD_ONLY and p.default is p.empty:
            kwargs[p.name] = _dummy(p.name)
    return tuple(args), kwargs


def _call_public(qual, fn, rec):
    if qual in SPECIAL_CALLS:
        return SPECIAL_CALLS[qual](fn, rec)
    first = [rec] if qual.rsplit(".", 1)[1] in LIST_FIRST else rec
    args, kwargs = _fill(fn, first)
    return fn(*args, **kwargs)


PUBLIC = public_functions()


@pytest.mark.parametrize("qual", sorted(set(PUBLIC) - set(EXCLUDED)))
def test_public_function_routes_override(qual):
    fn = PUBLIC[qual]
    Recorder.seen.clear()
    out = _call_public(qual, fn, Recorder())
    assert out is SENTINEL and Recorder.seen == [fn]


def test_exclusions_are_public_names():
    assert set(EXCLUDED) <= set(PUBLIC)


# ---- Tensor methods ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def rec_tensor_cls():
    class RecTensor(ember.Tensor):
        """A Tensor subclass whose override records ``func``."""
        seen = []

        @classmethod
        def __ember_function__(cls, func, types, args=(), kwargs=None):
            cls.seen.append(func)
            return SENTINEL
    assert RecTensor in dispatch.SUBCLASS_OVERRIDES
    yield RecTensor
    dispatch.unregister_override_type(RecTensor)


def _rec_tensor(cls):
    t = ember.Tensor.__new__(cls)
    t._data = np.ones((2, 2), dtype=np.float32)
    return t


def tensor_methods():
    out = {}
    for name, v in sorted(vars(ember.Tensor).items()):
        if (name[0] == "_" and name not in dispatch._ROUTED_DUNDERS) or \
                name in dispatch._UNROUTED_METHODS or not callable(v) or \
                isinstance(v, (type, staticmethod, classmethod, property)):
            continue
        out[name] = v
    return out


METHODS = tensor_methods()


def test_unrouted_methods_are_tensor_methods():
    """The exclusion list names real methods (metadata of the tensor's own storage)."""
    assert {m for m in dispatch._UNROUTED_METHODS if m in vars(ember.Tensor)} >= \
        {"size", "dim", "numel", "stride", "item", "tolist", "numpy"}
    assert len(METHODS) > 400


@pytest.mark.parametrize("name", sorted(METHODS))
def test_tensor_method_routes_override(name, rec_tensor_cls):
    """``subclass_instance.method(...)`` reaches the override with the Tensor method."""
    meth = METHODS[name]
    rec_tensor_cls.seen.clear()
    args, kwargs = _fill(meth, None, skip_self=True)
    out = meth(_rec_tensor(rec_tensor_cls), *args, **kwargs)
    assert out is SENTINEL and rec_tensor_cls.seen == [meth]
