"""`custom_op` and `CustomOpDef`: a Python function made an ember operator.

A custom op is an `ember._core.op.Op` registered as ``"ns::name"`` (its registry name, the
name graphs and saved programs use), so ``ember.compile`` and ``ember.export`` record one
node for it and never look inside:

* its kernel wraps the arrays as tensors (without grad, under no mode) and calls the
  user's function, or the kernel registered for the inputs' device type;
* its shape rule runs the registered fake (``register_fake``) on stand-in tensors of the
  inputs' shapes and dtypes (zeros that take no memory), or the real function when no
  fake is registered; output sizes equal to a symbolic input size keep that symbol;
* its derivative is the ``register_autograd`` formula; without one, backward raises
  torch's RuntimeError.

Arguments typed Tensor (or ``Tensor?``, ``Tensor[]``) are the op's inputs; the others are
its params, recorded in the graph.  An argument named in ``mutates_args`` is written in
place: the op computes on a copy, returns its new value as an extra output, and the call
copies that back into the argument (so captured graphs stay functional).

Saved programs name the op by its qualified name: a process that loads one must define
the op again (import the module that declares it) before loading.
"""
import numpy as np

from .._core.meta import TensorMeta
from .._core.op import JVP_FROM_VJP, REGISTRY, Op
from .._core.dispatch import overridable
from .._core.state import STATE
from .._core.tensor import Tensor, wrap
from ..ops.op_namespaces import define_overload
from ..ops.op_schema import parse_schema
from . import fake_ctx
from .infer_schema import infer_schema, qualname_parts

__all__ = ["custom_op", "CustomOpDef", "OPS", "plain_eager"]

OPS = {}  # qualified name -> CustomOpDef


class plain_eager:
    """Run ember ops for real inside a kernel or rule: no dispatch mode (capture, vmap,
    profiling) sees them and no autograd is recorded; restores the state on exit."""

    def __enter__(self):
        self.saved = (STATE.modes, STATE.intercept, STATE.grad_enabled)
        STATE.modes, STATE.intercept, STATE.grad_enabled = [], False, False

    def __exit__(self, *exc):
        STATE.modes, STATE.intercept, STATE.grad_enabled = self.saved


def _freeze(v):
    """Params must be hashable graph constants: lists become tuples."""
    if isinstance(v, list):
        return tuple(_freeze(x) for x in v)
    return v


class CustomOpDef:
    """A custom operator made by `custom_op` (torch's ``CustomOpDef``): call it like the
    function; ``register_fake``, ``register_kernel``, ``register_autograd`` add to it."""

    def __init__(self, namespace, name, schema, fn):
        self._namespace, self._name = namespace, name
        self._qualname = f"{namespace}::{name}"
        self._schema = schema if not isinstance(schema, str) else \
            parse_schema(schema, self._qualname)
        overload = self._schema.overload_name
        # the registry name: one ember Op per overload
        self._op_name = self._qualname + (f".{overload}" if overload else "")
        self._init_fn = fn
        self._kernels = {}        # device type (None: every device) -> function
        self._fake_fn = None
        self._backward_fn = None
        self._setup_context_fn = None
        self._composite = None    # Library.impl(..., "CompositeImplicitAutograd")
        self._autocast = {}       # device type -> dtype floating inputs are cast to
        self._vmap_fn = None
        self._check_schema()
        self._op = self._make_op()
        self._public = overridable(self._call, name=None)
        self._public.__name__ = self._public.__qualname__ = name
        OPS[self._op_name] = self
        define_overload(self._qualname, self._schema.overload_name or "default", self._schema,
                        self._public, ember_op=self._op)

    # ---- the schema: which arguments are inputs, which params, which are written ----
    def _check_schema(self):
        s = self._schema
        self._mutated = [a.name for a in s.arguments if a.is_write]
        for a in s.arguments:
            if a.is_write and not a.is_tensor:
                raise NotImplementedError(
                    f"custom op {self._qualname}: argument {a.name!r} of type {a.type} is "
                    f"mutated; ember custom ops write only Tensor arguments in place")
        rets = [r.type for r in s.returns]
        if any(t not in ("Tensor", "Tensor[]") for t in rets) or \
                ("Tensor[]" in rets and (len(rets) > 1 or self._mutated)):
            raise NotImplementedError(
                f"custom op {self._qualname}: returns {s.returns and str(s).split('->')[1]!s}; "
                f"ember custom ops return a Tensor, a tuple of Tensors, a list of Tensors, "
                f"or nothing (when they mutate arguments)")
        if not rets and not self._mutated:
            raise NotImplementedError(
                f"custom op {self._qualname}: returns nothing and mutates no argument; an "
                f"ember operator needs an output (return a Tensor)")
        self._n_ret = len(rets)
        self._list_return = rets == ["Tensor[]"]

    def _bind(self, args, kwargs):
        """The value of every schema argument, in schema order (defaults filled in)."""
        s = self._schema
        values = {}
        positional = [a for a in s.arguments if not a.kwarg_only]
        if len(args) > len(positional):
            raise TypeError(f"{self._qualname}() takes {len(positional)} positional arguments "
                            f"but {len(args)} were given")
        for a, v in zip(positional, args):
            values[a.name] = v
        for k, v in kwargs.items():
            if k in values or all(a.name != k for a in s.arguments):
                raise TypeError(f"{self._qualname}() got an unexpected or repeated keyword "
                                f"argument '{k}'")
            values[k] = v
        for a in s.arguments:
            if a.name not in values:
                if not a.has_default_value():
                    raise TypeError(f"{self._qualname}() missing required argument "
                                    f"'{a.name}' (schema: {s})")
                values[a.name] = a.default_value
        return [values[a.name] for a in s.arguments]

    def _split(self, values):
        """(op inputs, op params) of bound argument values."""
        inputs, params = [], {}
        for a, v in zip(self._schema.arguments, values):
            if a.is_tensor:
                if v is not None and not isinstance(v, Tensor):
                    raise TypeError(f"{self._qualname}(): argument '{a.name}' must be Tensor, "
                                    f"not {type(v).__name__}")
                inputs.append(v)
            elif a.is_tensor_list:
                inputs.extend(v)
                params[a.name] = len(v)
            else:
                params[a.name] = _freeze(v)
        return inputs, params

    def _join(self, inputs, params):
        """Bound argument values (as a list) from op inputs and params: ``_split`` undone."""
        it = iter(inputs)
        values = []
        for a in self._schema.arguments:
            if a.is_tensor:
                values.append(next(it))
            elif a.is_tensor_list:
                values.append([next(it) for _ in range(params[a.name])])
            else:
                v = params[a.name]
                values.append(list(v) if isinstance(v, tuple) and a.type.endswith("]") else v)
        return values

    def _call_user(self, fn, values):
        args, kwargs = [], {}
        for a, v in zip(self._schema.arguments, values):
            if a.kwarg_only:
                kwargs[a.name] = v
            else:
                args.append(v)
        return fn(*args, **kwargs)

    # ---- calling ------------------------------------------------------------------------
    def _call(self, *args, **kwargs):
        if self._composite is not None:
            return self._composite(*args, **kwargs)
        if self._autocast:
            cast = self._autocast_call(args, kwargs)
            if cast is not None:
                return cast
        values = self._bind(args, kwargs)
        inputs, params = self._split(values)
        out = self._op(*inputs, **params)
        if not self._mutated:
            return out
        outs = out if isinstance(out, tuple) else (out,)
        by_name = dict(zip((a.name for a in self._schema.arguments), values))
        for name, new in zip(self._mutated, outs[self._n_ret:]):
            if by_name[name] is not None:
                by_name[name].copy_(new)
        user = outs[:self._n_ret]
        return None if not user else user[0] if len(user) == 1 else tuple(user)

    def __call__(self, *args, **kwargs):
        return self._public(*args, **kwargs)

    def _autocast_call(self, args, kwargs):
        """Under autocast for a registered device type: floating Tensor arguments cast to
        the registered dtype, the op run with autocast off (torch's register_autocast)."""
        from ..amp import autocast, is_autocast_enabled
        for device_type, dtype in self._autocast.items():
            if is_autocast_enabled(device_type):
                def cast(v):
                    if isinstance(v, Tensor) and v.is_floating_point():
                        return v.to(dtype)
                    if isinstance(v, (list, tuple)):
                        return type(v)(cast(x) for x in v)
                    return v
                with autocast(device_type, enabled=False):
                    return self._call(*[cast(a) for a in args],
                                      **{k: cast(v) for k, v in kwargs.items()})
        return None

    def _batch(self, op, args, bdims, params, batch_size):
        """The vmap rule of the op from ``register_vmap``: the user's function gets
        ``(info, in_dims, *args)`` with one in_dim per argument (None for non-Tensors)."""
        from ..ops._batching import current_mode
        values = self._join(list(args), params)
        it = iter(bdims)
        in_dims = []
        for a in self._schema.arguments:
            if a.is_tensor:
                in_dims.append(next(it))
            elif a.is_tensor_list:
                in_dims.append(tuple(next(it) for _ in range(params[a.name])))
            else:
                in_dims.append(None)
        info = _VmapInfo(batch_size, getattr(current_mode(), "randomness", "error"))
        pos = [v for a, v in zip(self._schema.arguments, values) if not a.kwarg_only]
        kw = {a.name: v for a, v in zip(self._schema.arguments, values) if a.kwarg_only}
        out, out_dims = self._vmap_fn(info, tuple(in_dims), *pos, **kw)
        if self._mutated:
            raise NotImplementedError(f"{self._qualname}: register_vmap on an op that mutates "
                                      f"its arguments is not supported")
        return out, out_dims

    def _kernel_fn(self, inputs):
        if not self._kernels:
            return self._init_fn
        dev = next((t.device.type for t in inputs if isinstance(t, Tensor)), None)
        fn = self._kernels.get(dev) or self._kernels.get(None)
        if fn is None and self._init_fn is not None:
            return self._init_fn
        if fn is None:
            raise NotImplementedError(f"{self._qualname}: no kernel registered for device "
                                      f"type {dev!r} (registered: "
                                      f"{sorted(map(str, self._kernels))})")
        return fn

    def _run(self, fn, inputs, params, copy_mutated):
        values = self._join(inputs, params)
        if copy_mutated and self._mutated:  # the op computes on copies of what it writes
            names = [a.name for a in self._schema.arguments]
            for name in self._mutated:
                i = names.index(name)
                values[i] = values[i].clone() if values[i] is not None else None
        out = self._call_user(fn, values)
        if self._list_return:
            outs = list(out)
        elif self._n_ret == 0:
            outs = []
        elif self._n_ret == 1:
            outs = [out]
        else:
            outs = list(out)
        for o in outs:
            if not isinstance(o, Tensor):
                raise RuntimeError(f"{self._qualname}: the function returned "
                                   f"{type(o).__name__} where the schema says Tensor "
                                   f"({self._schema})")
        names = [a.name for a in self._schema.arguments]
        outs += [values[names.index(n)] for n in self._mutated]
        return outs

    def _kernel(self, xp, *arrays, **params):
        inputs = [wrap(a) if a is not None and not isinstance(a, (int, float, bool, complex))
                  else a for a in arrays]
        if self._init_fn is None and not self._kernels:
            raise NotImplementedError(f"Could not run '{self._qualname}': no implementation "
                                      f"is registered (Library.impl or register_kernel)")
        with plain_eager():
            outs = self._run(self._kernel_fn(inputs), inputs, params, True)
        result = []
        for o in outs:
            a = o._data
            if any(a is x or isinstance(x, np.ndarray) and isinstance(a, np.ndarray) and
                   np.may_share_memory(a, x) for x in arrays):
                a = a.copy()  # an output never aliases an input (torch forbids it too)
            result.append(a)
        return result if self._list_return else tuple(result) if len(result) > 1 else result[0]

    def _shape(self, *metas, **params):
        syms = {}
        stand_ins = []
        for m in metas:
            if isinstance(m, TensorMeta):
                for s in m.shape:
                    if type(s) is not int:
                        syms.setdefault(int(s), s)
                shape = tuple(int(s) for s in m.shape)
                stand_ins.append(wrap(np.broadcast_to(np.zeros((), m.dtype.np), shape)))
            else:
                stand_ins.append(m)
        fn = self._fake_fn or self._kernel_fn(stand_ins)
        with plain_eager(), fake_ctx.active():
            outs = self._run(fn, stand_ins, params, True)
        res = tuple((tuple(syms.get(d, d) for d in o.shape), o.dtype)
                    for o in outs)
        return res if (self._list_return or len(res) > 1) else res[0]

    def _vjp(self, ctx, grad, *inputs, **params):
        if self._backward_fn is None:
            raise RuntimeError(f"Trying to backward through {self._namespace}.{self._name}."
                               f"default but no autograd formula was registered. Please use "
                               f"register_autograd to add one.")
        values = self._join(inputs, params)
        n = self._n_ret
        out = ctx.out
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        grads = list(grad) if isinstance(grad, (tuple, list)) else [grad]
        grads = [g if g is not None else o.new_zeros(o.shape) for g, o in zip(grads, outs)][:n]
        user_out = outs[:n] if (self._list_return or n > 1) else outs[0]
        actx = _AutogradCtx(self._needs_input_grad(ctx, params))
        if self._setup_context_fn is not None:
            self._setup_context_fn(actx, tuple(values), user_out)
        gs = self._backward_fn(actx, *grads)
        if len(self._schema.arguments) == 1 and not isinstance(gs, (tuple, list)):
            gs = (gs,)
        if not isinstance(gs, (tuple, list)) or len(gs) != len(self._schema.arguments):
            raise RuntimeError(f"{self._qualname}: the backward function must return a tuple "
                               f"with one gradient (or None) per argument of {self._schema}")
        flat = []
        for a, g in zip(self._schema.arguments, gs):
            if a.is_tensor:
                flat.append(g)
            elif a.is_tensor_list:
                flat.extend(g if g is not None else [None] * params[a.name])
        return tuple(flat)

    def _needs_input_grad(self, ctx, params):
        flags = iter(ctx.needs_input_grad)
        out = []
        for a in self._schema.arguments:
            if a.is_tensor:
                out.append(next(flags, False))
            elif a.is_tensor_list:
                out.append(any([next(flags, False) for _ in range(params[a.name])]))
            else:
                out.append(False)
        return tuple(out)

    def _make_op(self):
        if self._op_name in REGISTRY:
            # redefined (a re-run notebook cell, a reloaded module): the new one replaces it
            REGISTRY.pop(self._op_name)
            OPS.pop(self._op_name, None)
        n_out = None if self._list_return else self._n_ret + len(self._mutated)

        def kernel(xp, *arrays, **params):
            return self._kernel(xp, *arrays, **params)
        # the kernel is the user's code: it carries their module, so ember's registry
        # checks (every ember op has a record, a decomposition...) do not count it
        kernel.__module__ = getattr(self._init_fn, "__module__", None) or \
            f"<custom operator {self._op_name}>"
        kernel.__qualname__ = kernel.__name__ = self._name
        return Op(self._op_name, kernel, self._vjp, shape=self._shape, n_out=n_out,
                  save_output=True, category=None,
                  doc=f"custom operator {self._qualname}{str(self._schema)[len(self._qualname):]}",
                  unsupported={
                      "jvp": JVP_FROM_VJP,
                      "batch": "loop fallback: a user's custom operator (ember.library)",
                      "decomp": "custom operator: an opaque user function, kept as one node",
                  })

    # ---- registration -------------------------------------------------------------------
    def register_fake(self, fn, /):
        """Register a FakeTensor implementation ("fake impl") for this custom op: what
        shapes and dtypes it returns, computed without the data (returns ``fn``)."""
        self._fake_fn = fn
        return fn

    def register_kernel(self, device_types, fn=None, /):
        """Register an implementation for ``device_types`` ("cpu", "cuda", ... or None for
        all); usable as a decorator."""
        def register(f):
            types = [device_types] if device_types is None or isinstance(device_types, str) \
                else list(device_types)
            for t in types:
                self._kernels[t] = f
            return f
        return register(fn) if fn is not None else register

    def register_vmap(self, func=None, /):
        """Register a vmap rule: ``func(info, in_dims, *args) -> (output, out_dims)``, with
        ``info.batch_size`` and ``info.randomness``; usable as a decorator."""
        def register(f):
            self._vmap_fn = f
            self._op.unsupported.pop("batch", None)
            self._op.batch = self._batch
            return f
        return register(func) if func is not None else register

    def register_autocast(self, device_type, cast_inputs):
        """Under autocast on ``device_type``, cast floating Tensor inputs to
        ``cast_inputs`` and run the op with autocast off."""
        self._autocast[device_type] = cast_inputs

    def register_autograd(self, backward, /, *, setup_context=None):
        """Register ``backward(ctx, *grads)`` (one gradient per argument, None for
        non-Tensor ones) and optional ``setup_context(ctx, inputs, output)``, which saves
        what backward needs on ``ctx`` (``ctx.save_for_backward``)."""
        self._backward_fn = backward
        self._setup_context_fn = setup_context

    @property
    def _opoverload(self):
        """The `OpOverload` of this op (``ember.ops.<ns>.<name>.default``)."""
        from ..ops.op_namespaces import find_overload
        return find_overload(self._namespace, self._name, self._schema.overload_name or "default")

    def __repr__(self):
        return f"<CustomOpDef({self._qualname})>"


class _VmapInfo:
    """``info`` of a vmap rule: the batch size and vmap's randomness setting."""

    def __init__(self, batch_size, randomness):
        self.batch_size = batch_size
        self.randomness = randomness


class _AutogradCtx:
    """The ``ctx`` of a custom op's setup_context/backward (like autograd.Function's)."""

    def __init__(self, needs_input_grad):
        self.needs_input_grad = needs_input_grad
        self.saved_tensors = ()

    def save_for_backward(self, *tensors):
        self.saved_tensors = tensors

    def mark_non_differentiable(self, *tensors):
        pass  # the op's outputs get gradients only through backward's result

    def set_materialize_grads(self, value):
        pass  # output gradients are always materialized (zeros) for custom ops


def custom_op(name, fn=None, /, *, mutates_args, device_types=None, schema=None, tags=None):
    """Wraps a function into custom operator (torch.library.custom_op).

    ``name`` is ``"namespace::op_name"``; ``mutates_args`` the names of arguments the
    function writes in place (``{}`` for none); ``device_types`` the device types ``fn``
    serves (None: all); ``schema`` the schema text (``"(Tensor x) -> Tensor"``), inferred
    from ``fn``'s annotations when None.  Usable as a decorator."""
    def inner(f):
        ns, op_name = qualname_parts(name)
        text = schema if schema is not None else infer_schema(f, mutates_args=mutates_args)
        op = CustomOpDef(ns, op_name, text, None if device_types is not None else f)
        if device_types is not None:
            op.register_kernel(device_types, f)
        return op
    return inner(fn) if fn is not None else inner
