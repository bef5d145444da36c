"""``ember.library``: define new operators from Python (``torch.library``).

``custom_op`` turns a function into an ember operator, recorded as one node by
``ember.compile`` and ``ember.export`` and reachable as ``ember.ops.<ns>.<name>``;
``register_fake`` gives its output shapes without data, ``register_autograd`` its
derivative, ``register_kernel`` per-device implementations.  ``Library(ns, "DEF")`` with
``define(schema)`` and ``impl(name, fn, dispatch_key)`` is the lower-level form of the same.

A program saved by ``ember.export`` names a custom op by its qualified name
(``"mylib::foo"``): before loading it in a new process, import the module that defines
the op, as with torch.

Beyond torch: defining an operator again under the same name replaces it (a re-run
notebook cell works) instead of raising.
"""
import warnings

from ..ops.op_namespaces import OpOverload
from ..ops.op_schema import parse_schema
from . import aten_table  # noqa: F401  (registers ember.ops.aten)
from .custom_ops import OPS, CustomOpDef, custom_op
from .fake_ctx import get_ctx
from .infer_schema import infer_schema, qualname_parts

__all__ = ["Library", "impl", "define", "fallthrough_kernel", "impl_abstract", "register_fake",
           "register_kernel", "register_autograd", "register_autocast", "register_vmap",
           "get_ctx", "custom_op", "infer_schema", "CustomOpDef"]

# dispatch keys that name a device type's kernel
_DEVICE_KEYS = {"CPU": "cpu", "CUDA": "cuda", "XPU": "xpu", "MPS": "mps", "Meta": "meta",
                "PrivateUse1": "privateuseone"}


def _lookup(op):
    """The `CustomOpDef` of ``op``: a qualified name (``"ns::foo"`` or ``"ns::foo.overload"``),
    a CustomOpDef, or an OpOverload of one."""
    if isinstance(op, CustomOpDef):
        return op
    if isinstance(op, OpOverload):
        name = op.ember_op.name if op.ember_op is not None else op.name()
    elif isinstance(op, str):
        name = op
    else:
        raise ValueError(f"expected an operator: a qualified name 'ns::name', a CustomOpDef "
                         f"or an OpOverload, got {type(op).__name__}")
    found = OPS.get(name) or OPS.get(name.removesuffix(".default"))
    if found is None:
        if op.__class__ is OpOverload or name.startswith("aten::"):
            raise NotImplementedError(f"{name} is an ember built-in operator; ember.library "
                                      f"registers implementations for operators it defines "
                                      f"(custom_op, Library.define) only")
        raise RuntimeError(f"operator {name} does not exist: define it first (custom_op, "
                           f"ember.library.define or Library.define)")
    return found


def fallthrough_kernel():
    """A dummy function to pass to ``Library.impl`` in order to register a fallthrough:
    the op keeps the implementation it has for that dispatch key."""
    raise NotImplementedError("fallthrough_kernel() should never be called.")


def _register_by_key(op_def, fn, key):
    if fn is fallthrough_kernel:
        return  # a fallthrough: nothing registered for this key
    if key in ("", "CompositeExplicitAutograd", "Default"):
        op_def.register_kernel(None, fn)
    elif key == "Meta":
        op_def.register_fake(fn)
    elif key == "CompositeImplicitAutograd":
        op_def._composite = fn  # the op is this function of other ops: traced through
    elif key in _DEVICE_KEYS:
        op_def.register_kernel(_DEVICE_KEYS[key], fn)
    else:
        raise NotImplementedError(
            f"ember.library: dispatch key {key!r} is not supported; use CPU/CUDA/Meta/"
            f"CompositeExplicitAutograd/CompositeImplicitAutograd (or register_autograd for "
            f"the derivative)")


class Library:
    """A class to create libraries that can be used to register new operators or override
    operators in existing libraries from Python (torch.library.Library).

    Args:
        ns: library name
        kind: "DEF", "IMPL" (default: "IMPL"), "FRAGMENT"
        dispatch_key: PyTorch dispatch key (default: "")
    """

    def __init__(self, ns, kind, dispatch_key=""):
        if kind not in ("IMPL", "DEF", "FRAGMENT"):
            raise ValueError("Unsupported kind: ", kind)
        if ns == "aten" and kind == "DEF":
            raise ValueError(f"Library(ns='aten', kind='DEF'): the aten namespace is ember's "
                             f"own; use kind='FRAGMENT' or another namespace")
        self.ns = ns
        self.kind = kind
        self.dispatch_key = dispatch_key
        self._op_defs = set()

    def __repr__(self):
        return f"Library(kind={self.kind}, ns={self.ns}, dispatch_key={self.dispatch_key})>"

    def define(self, schema, alias_analysis="", *, tags=()):
        """Defines a new operator and its semantics in the ns namespace; ``schema`` is
        ``"name(Type arg, ...) -> Type"``.  Returns the name of the operator."""
        if self.kind == "IMPL":
            raise RuntimeError("define() is not allowed in a Library of kind 'IMPL'; use "
                               "kind='DEF' or 'FRAGMENT'")
        parsed = parse_schema(schema if "::" in schema.split("(")[0] else f"{self.ns}::{schema}")
        ns, name = qualname_parts(parsed.name)
        op = CustomOpDef(ns, name, parsed, None)
        self._op_defs.add(op._op_name)
        return name if not parsed.overload_name else f"{name}.{parsed.overload_name}"

    def impl(self, op_name, fn, dispatch_key="", *, with_keyset=False, allow_override=False):
        """Registers ``fn`` as the implementation of ``op_name`` (a name in this library's
        namespace, or an OpOverload) for ``dispatch_key`` (this library's by default)."""
        if with_keyset:
            raise NotImplementedError("Library.impl(with_keyset=True): ember has no dispatch "
                                      "key sets to pass")
        if isinstance(op_name, str) and "::" not in op_name:
            op_name = f"{self.ns}::{op_name}"
        _register_by_key(_lookup(op_name), fn, dispatch_key or self.dispatch_key)

    def _destroy(self):
        self._op_defs.clear()


def define(qualname, schema, *, lib=None, tags=()):
    r"""Defines a new operator: ``qualname`` is ``"namespace::name"``, ``schema`` the
    operator's schema without the name, e.g. ``"(Tensor x, int y) -> (Tensor, Tensor)"``."""
    ns, name = qualname_parts(qualname)
    base, _, overload = name.partition(".")
    parsed = parse_schema(schema, f"{ns}::{base}" + (f".{overload}" if overload else ""))
    CustomOpDef(ns, base, parsed, None)


def impl(qualname, types, func=None, *, lib=None):
    """Register an implementation for a device type (or dispatch key) of this operator;
    ``types`` is a device type ("cpu", "cuda"), a dispatch key, or a sequence of them.
    Usable as a decorator when ``func`` is None."""
    keys = [types] if isinstance(types, str) else list(types)

    def register(f):
        op_def = _lookup(qualname)
        for k in keys:
            if k in _DEVICE_KEYS.values() and k != "meta":
                op_def.register_kernel(k, f)
            else:
                _register_by_key(op_def, f, {"meta": "Meta"}.get(k, k))
        return f
    return register(func) if func is not None else register


def register_fake(op, func=None, /, *, lib=None, _stacklevel=1, allow_override=True):
    r"""Register a FakeTensor implementation ("fake impl") for this operator: given
    inputs of the right shapes and dtypes (without meaningful data), it returns outputs of
    the shapes and dtypes the real kernel would.  Usable as a decorator."""
    def register(f):
        _lookup(op).register_fake(f)
        return f
    return register(func) if func is not None else register


def impl_abstract(qualname, func=None, *, lib=None, _stacklevel=1):
    r"""This API was renamed to :func:`register_fake`; it warns and registers the fake."""
    warnings.warn("`torch.library.impl_abstract` was renamed to `torch.library.register_fake`. "
                  "Please use that instead; we will remove `torch.library.impl_abstract` in a "
                  "future version of PyTorch.", FutureWarning, stacklevel=2)
    return register_fake(qualname, func, lib=lib)


def register_kernel(op, device_types, func=None, /, *, lib=None):
    """Register an implementation for a device type for this operator (a decorator when
    ``func`` is None)."""
    def register(f):
        _lookup(op).register_kernel(device_types, f)
        return f
    return register(func) if func is not None else register


def register_vmap(op, func=None, /, *, lib=None):
    """Register a vmap implementation to support ``ember.vmap`` for this custom op:
    ``func(info, in_dims, *args) -> (output, out_dims)``.  Usable as a decorator."""
    def register(f):
        _lookup(op).register_vmap(f)
        return f
    return register(func) if func is not None else register


def register_autocast(op, device_type, cast_inputs, /, *, lib=None):
    """Register an autocast dispatch rule for this custom op: under autocast on
    ``device_type`` its floating Tensor inputs are cast to ``cast_inputs`` and it runs
    with autocast off."""
    _lookup(op).register_autocast(device_type, cast_inputs)


def register_autograd(op, backward, /, *, setup_context=None, lib=None):
    r"""Register a backward formula for this custom op: ``backward(ctx, *grads)`` returns
    one gradient per input (None for non-Tensor inputs); ``setup_context(ctx, inputs,
    output)`` saves what backward needs on ``ctx``."""
    _lookup(op).register_autograd(backward, setup_context=setup_context)
