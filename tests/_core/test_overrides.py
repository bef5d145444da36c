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

# Functions that must see the object itself or take nothing an override could stand for:
# predicates on the object's type, global settings and RNG state, file I/O, dtype
# utilities.  (Functions without parameters are left out by rule: see `_takes_args`.)
EXCLUDED = {
    "ember.sym_constrain_range": "a size and its bounds (torch's get_ignored_functions has it)",
    "ember.sym_constrain_range_for_size": "a size and its bounds (ignored by torch too)",
    "ember.sym_fresh_size": "a size expression (ignored by torch too)",
    "ember.from_file": "takes a file name and no tensor (torch's get_ignored_functions has it)",
    "ember.get_device_module": "takes a device (torch's get_ignored_functions has it)",
    "ember.is_tensor": "answers about the object's type (False for a tensor-like, as torch)",
    "ember.compile": "takes a function or module (torch.compile has no override either)",
    "ember.cond": "takes the branch functions; overrides act on the ops the branches run",
    "ember.map": "takes the mapped function first; overrides act on the ops it runs",
    "ember.while_loop": "takes the loop functions; overrides act on the ops they run",
    "ember.is_storage": "answers about the object's type",
    "ember.typename": "names the object's type",
    "ember.set_default_dtype": "global setting (takes a dtype)",
    "ember.set_printoptions": "global setting",
    "ember.set_num_threads": "global setting",
    "ember.set_default_device": "global setting (takes a device)",
    "ember.use_deterministic_algorithms": "global setting",
    "ember.set_float32_matmul_precision": "global setting",
    "ember.set_deterministic_debug_mode": "global setting",
    "ember.set_warn_always": "global setting",
    "ember.set_num_interop_threads": "global setting",
    "ember.set_flush_denormal": "global setting",
    "ember.set_autocast_cache_enabled": "global setting (autocast state)",
    "ember.set_autocast_cpu_dtype": "global setting (autocast state)",
    "ember.set_autocast_cpu_enabled": "global setting (autocast state)",
    "ember.set_autocast_gpu_dtype": "global setting (autocast state)",
    "ember.set_autocast_ipu_dtype": "global setting (autocast state)",
    "ember.set_autocast_ipu_enabled": "global setting (autocast state)",
    "ember.set_autocast_xla_dtype": "global setting (autocast state)",
    "ember.set_autocast_xla_enabled": "global setting (autocast state)",
    "ember.manual_seed": "global RNG state (takes an int)",
    "ember.set_rng_state": "global RNG state (a state snapshot, not an operand)",
    "ember.load": "file I/O of a path",
    "ember.save": "file I/O (pickles the object as it is)",
    "ember.promote_types": "dtype utility: takes dtypes",
    "ember.can_cast": "dtype utility: takes dtypes",
    "ember.vmap": "a function transform: takes a Python function, not an operand (as torch)",
    "ember.set_anomaly_enabled": "global setting",
    "ember.set_default_tensor_type": "global setting (takes a tensor type)",
    "ember.nn.functional.has_torch_function": "the override protocol's own helper",
    "ember.nn.functional.has_torch_function_unary": "the override protocol's own helper",
    "ember.nn.functional.has_torch_function_variadic": "the override protocol's own helper",
    "ember.nn.functional.handle_torch_function": "the override protocol's own helper",
    "ember.nn.functional.boolean_dispatch": "builds a function from two functions",
    "ember.nn.functional.assert_int_or_pair": "checks a size argument (ints)",
}


def _takes_args(fn):
    try:
        return bool(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return True


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


@pytest.mark.parametrize("qual", sorted(q for q in set(PUBLIC) - set(EXCLUDED)
                                         if _takes_args(PUBLIC[q])))
def test_public_function_routes_override(qual):
    fn = PUBLIC[qual]
    Recorder.seen.clear()
    out = _call_public(qual, fn, Recorder())
    assert out is SENTINEL and Recorder.seen == [fn]


def test_exclusions_are_public_names():
    assert set(EXCLUDED) <= set(PUBLIC)
    no_args = {q for q, f in PUBLIC.items() if not _takes_args(f)}
    assert {"ember.get_default_dtype", "ember.seed", "ember.is_grad_enabled"} <= no_args
    assert len(PUBLIC) - len(EXCLUDED) - len(no_args) > 550


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


# ---- routing details ---------------------------------------------------------------------

def _calls(fn):
    Recorder.seen.clear()
    out = fn(Recorder())
    return out is SENTINEL, list(Recorder.seen)


@pytest.mark.parametrize("call,func", [
    (lambda r: ember.cat([ember.ones(2), r]), lambda: ember.cat),
    (lambda r: ember.stack((ember.ones(2), r), dim=0), lambda: ember.stack),
    (lambda r: ember.einsum("i,i->", ember.ones(2), r), lambda: ember.einsum),
    (lambda r: ember.broadcast_tensors(ember.ones(2), r), lambda: ember.broadcast_tensors),
    (lambda r: F.linear(ember.ones(2, 3), weight=r), lambda: F.linear),
    (lambda r: ember.linalg.multi_dot([ember.ones(2, 2), r]), lambda: ember.linalg.multi_dot),
    (lambda r: ember.zeros(r, 3), lambda: ember.zeros),
    (lambda r: ember.ones(2, 3).add(r), lambda: ember.Tensor.add),
    (lambda r: ember.ones(2, 3).matmul(r), lambda: ember.Tensor.matmul),
    (lambda r: ember.ones(2, 3).masked_fill(r, 0.0), lambda: ember.Tensor.masked_fill),
    (lambda r: ember.ones(2, 3).expand_as(r), lambda: ember.Tensor.expand_as),
    (lambda r: ember.ones(2, 3).view(r, 3), lambda: ember.Tensor.view),
    (lambda r: ember.ones(2, 3)[r], lambda: ember.Tensor.__getitem__),
    (lambda r: ember.ones(2, 3)[:, :r], lambda: ember.Tensor.__getitem__),
    (lambda r: ember.ones(2, 3).add_(r), lambda: ember.Tensor.add_),
])
def test_override_found_anywhere_in_the_arguments(call, func):
    """Second operands, sequences, keywords, sizes and slices all reach the override, with
    the function or Tensor method the user called."""
    assert _calls(call) == (True, [func()])


def test_tensor_methods_have_their_own_identity():
    assert ember.Tensor.matmul is not ember.matmul
    assert ember.Tensor.greater.__name__ == "greater" and ember.Tensor.gt.__name__ == "gt"
    t = ember.arange(6.0).reshape(2, 3)
    assert (t.matmul(t.t()) == ember.matmul(t, t.t())).all()


def test_no_scan_while_no_override_is_possible():
    """The flag stays down after import: eager calls do one attribute test."""
    import subprocess
    import sys
    code = ("import ember, ember.fx; from ember._core.state import STATE; "
            "ember.cat([ember.ones(2)]); print(STATE.overrides)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "0", out.stderr


def test_unregistered_tensor_like_still_routes_where_the_dispatcher_meets_it():
    class Loose:
        @classmethod
        def __ember_function__(cls, func, types, args=(), kwargs=None):
            return func.__name__
    assert type(Loose) is type and Loose not in dispatch.OVERRIDE_TYPES
    assert ember.exp(Loose()) == "exp"
    assert ember.ones(2).mul(Loose()) == "mul"
    assert ember.where(ember.ones(2) > 0, Loose(), 0.0) == "where"


def test_register_rejects_types_without_override():
    with pytest.raises(TypeError, match="does not define __ember_function__"):
        dispatch.register_override_type(int)


def test_operators_on_a_subclass_route_and_defer_to_other_operands(rec_tensor_cls):
    s = _rec_tensor(rec_tensor_cls)
    rec_tensor_cls.seen.clear()
    assert (s + 1) is SENTINEL and (2 * s) is SENTINEL and (s @ s) is SENTINEL
    # torch's funcs: the named method for a + b, and for the commutative 2 * a
    assert rec_tensor_cls.seen == [ember.Tensor.add, ember.Tensor.mul, ember.Tensor.__matmul__]
    # a plain tensor defers to the other operand's reflected method (Proxy.__radd__ ...)
    assert ember.Tensor.__add__(ember.ones(2), Recorder()) is NotImplemented


def test_subclass_override_is_asked_before_its_parents():
    order = []

    class Base(ember.Tensor):
        @classmethod
        def __ember_function__(cls, func, types, args=(), kwargs=None):
            order.append(types)
            return NotImplemented

    class Child(Base):
        @classmethod
        def __ember_function__(cls, func, types, args=(), kwargs=None):
            return "child"
    try:
        b, c = ember.Tensor.__new__(Base), ember.Tensor.__new__(Child)
        b._data = c._data = np.ones(2, dtype=np.float32)
        assert ember.add(b, c) == "child" and order == []
        assert ember.cat([b, c]) == "child"
    finally:
        dispatch.unregister_override_type(Base)
        dispatch.unregister_override_type(Child)


# ---- fx relies on the protocol -----------------------------------------------------------

def test_fx_needs_no_patching_and_follows_stored_references():
    from ember.fx import symbolic_trace
    from ember.fx.proxy import Proxy
    relu, cat, stored = ember.relu, ember.cat, {"softsign": F.softsign}
    seen = {}

    def f(x):
        seen["ids"] = (ember.relu is relu, ember.cat is cat, type(x) is Proxy,
                       STATE.overrides > before)
        n = x.size(1)
        y = stored["softsign"](x)               # reference taken before tracing
        z = ember.cat([y, ember.zeros(x.size(0), n)], dim=1)
        return z[:, :n].transpose(0, 1)
    before = STATE.overrides
    gm = symbolic_trace(f)
    assert seen["ids"] == (True, True, True, True)
    assert STATE.overrides == before  # no Proxy outlives the trace
    nodes = [(n.op, n.target if isinstance(n.target, str) else n.target.__name__)
             for n in gm.graph.nodes]
    assert ("call_function", "softsign") in nodes and ("call_function", "zeros") in nodes
    assert ("call_function", "cat") in nodes and ("call_method", "transpose") in nodes
    assert ("call_function", "getitem") in nodes
    x = ember.randn(3, 4)
    assert ember.allclose(gm(x), f(x))


def test_fx_module_bodies_trace_to_one_functional_node():
    """Modules whose forward reads shapes or stored functions trace through their body to
    the one functional call, as torch.fx records it."""
    import ember.nn as nn
    from ember.fx import symbolic_trace
    for mod, fn in ((nn.Conv1d(2, 3, 3), F.conv1d), (nn.AdaptiveAvgPool2d(2),
                                                     F.adaptive_avg_pool2d),
                    (nn.Dropout(0.5).eval(), F.dropout), (nn.Softmax(dim=1), F.softmax)):
        gm = symbolic_trace(mod)
        calls = [n.target for n in gm.graph.nodes if n.op == "call_function"]
        assert calls == [fn], (mod, calls)
