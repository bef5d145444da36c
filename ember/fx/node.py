"""`Node`: one operation in a `Graph` (placeholder, get_attr, call_function,
call_method, call_module or output), plus `map_arg` / `map_aggregate` over the
nested argument structures nodes take."""
import builtins
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Optional, Union

from .._core.device import device as _device
from .._core.dtype import dtype as _dtype
from .._core.layout import layout as _layout, memory_format as _memory_format
from .._core.op import Op
from .._core.tensor import Tensor
from ..ops.op_namespaces import OpOverload, overload_of
from ._namespace import ember_namespace

__all__ = ["Node", "map_arg", "map_aggregate", "has_side_effect"]

# the annotations programs write for tracer overrides (`target: torch.fx.node.Target`)
base_types = (str, int, float, bool, complex, _dtype, Tensor, _device, _memory_format, _layout,
              OpOverload)
BaseArgumentTypes = Union[base_types]
Target = Union[Callable[..., Any], str]
Argument = Optional[Union[tuple["Argument", ...], Sequence["Argument"], Mapping[str, "Argument"],
                          slice, range, "Node", BaseArgumentTypes]]

_OPS = ("placeholder", "call_method", "call_module", "call_function", "get_attr", "output", "root")

# call_function targets that must survive dead-code elimination
_side_effectful_functions = {operator.setitem, operator.iadd, operator.isub, operator.imul,
                             operator.itruediv, operator.ifloordiv, operator.imod,
                             operator.ipow, operator.iand, operator.ior, operator.ixor,
                             operator.imatmul, operator.ilshift, operator.irshift,
                             builtins.print}


# the public functions that draw from a generator (torch's _RANDOM_FUNCTIONS)
_RANDOM_FUNCTION_NAMES = ("normal", "bernoulli", "randn_like", "rand", "poisson", "randperm",
                          "randint", "multinomial", "randint_like", "randn", "rand_like")


def _is_random_function(fn):
    import sys
    top = sys.modules.get(__name__.split(".")[0])
    return any(getattr(top, n, None) is fn for n in _RANDOM_FUNCTION_NAMES)


def _is_tensor(v):
    from .._core.tensor import Tensor
    return isinstance(v, Tensor)


def _shape_str(shape):
    return f"[{', '.join(str(x) for x in shape)}]"


def has_side_effect(fn):
    """Mark ``fn`` as side-effectful: its call_function nodes are never dead code."""
    _side_effectful_functions.add(fn)
    return fn


def map_aggregate(a, fn):
    """Apply ``fn`` to every leaf of the nested tuple/list/dict/slice ``a``."""
    if isinstance(a, tuple):
        t = tuple(map_aggregate(x, fn) for x in a)
        return type(a)(*t) if hasattr(a, "_fields") else t
    if isinstance(a, list):
        return [map_aggregate(x, fn) for x in a]
    if isinstance(a, dict):
        return {k: map_aggregate(v, fn) for k, v in a.items()}
    if isinstance(a, slice):
        return slice(map_aggregate(a.start, fn), map_aggregate(a.stop, fn),
                     map_aggregate(a.step, fn))
    return fn(a)


def map_arg(a, fn):
    """Apply ``fn`` to every Node in the nested argument structure ``a``."""
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)


def _qualified_name(fn):
    if type(fn) is Op:
        overload = overload_of(fn)   # an aten operator prints as torch's export graphs do
        return repr(fn) if overload is None else f"ember.ops.{overload}"
    if getattr(fn, "__module__", None) == "_operator" or fn in vars(operator).values():
        return f"operator.{fn.__name__}"
    if getattr(builtins, getattr(fn, "__name__", ""), None) is fn:
        return fn.__name__
    mod = getattr(fn, "__module__", None)
    name = getattr(fn, "__qualname__", getattr(fn, "__name__", repr(fn)))
    if mod and mod.startswith("ember"):
        ember = ember_namespace()
        short = getattr(fn, "__name__", "")
        # functions defined in nn.functional print as such even where ember re-exports them
        # at top level (ember.relu is ember.nn.functional.relu)
        if mod.startswith("ember.nn") and getattr(ember.nn.functional, short, None) is fn:
            return f"ember.nn.functional.{short}"
        if getattr(ember, short, None) is fn:
            return f"ember.{short}"
        if getattr(ember.nn.functional, short, None) is fn:
            return f"ember.nn.functional.{short}"
    return f"{mod}.{name}" if mod else name


def _format_arg(a):
    if isinstance(a, Node):
        return "%" + a.name
    if isinstance(a, tuple):
        inner = ", ".join(_format_arg(x) for x in a)
        return f"({inner},)" if len(a) == 1 else f"({inner})"
    if isinstance(a, list):
        return "[" + ", ".join(_format_arg(x) for x in a) + "]"
    if isinstance(a, dict):
        return "{" + ", ".join(f"{k}: {_format_arg(v)}" for k, v in a.items()) + "}"
    return repr(a)


class Node:
    """One operation in a Graph.

    ``op`` is one of placeholder (an input), get_attr (a parameter/buffer/attribute of
    the owning module), call_function, call_method, call_module and output; ``target``
    is what is called or fetched; ``args``/``kwargs`` may contain other Nodes, whose
    ``users`` then include this node.
    """

    type = None  # the annotated return type, if any (set per node from ``return_type``)

    def __init__(self, graph, name, op, target, args, kwargs, return_type=None):
        if op not in _OPS:
            raise ValueError(f"unknown node op {op!r}")
        if op == "call_function" and not callable(target):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has "
                             f"type {type(target).__name__} but a Callable is expected")
        if op in ("get_attr", "call_module", "call_method") and not isinstance(target, str):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has "
                             f"type {type(target).__name__} but a str is expected")
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self._input_nodes = {}
        self._args = ()
        self._kwargs = {}
        self.__update_args_kwargs(args, kwargs)
        self.users = {}
        self.type = return_type
        self._prev = self
        self._next = self
        self._erased = False
        self.meta = {}

    # ---- the node list ---------------------------------------------------------------
    @property
    def next(self):
        return self._next

    @property
    def prev(self):
        return self._prev

    def prepend(self, x):
        """Move node ``x`` to just before this node."""
        if x is self:
            return
        x._remove_from_list()
        p = self._prev
        p._next, x._prev = x, p
        x._next, self._prev = self, x

    def append(self, x):
        """Move node ``x`` to just after this node."""
        self._next.prepend(x)

    def _remove_from_list(self):
        p, n = self._prev, self._next
        p._next, n._prev = n, p

    # ---- arguments ---------------------------------------------------------------------
    @property
    def args(self):
        return self._args

    @args.setter
    def args(self, a):
        self.__update_args_kwargs(a, self._kwargs)

    @property
    def kwargs(self):
        return self._kwargs

    @kwargs.setter
    def kwargs(self, k):
        self.__update_args_kwargs(self._args, k)

    @property
    def all_input_nodes(self):
        """The Nodes this node reads, in order of first appearance in args then kwargs."""
        return list(self._input_nodes)

    def update_arg(self, idx, arg):
        a = list(self._args)
        a[idx] = arg
        self.args = tuple(a)

    def insert_arg(self, idx, arg):
        """Insert ``arg`` into ``args`` before index ``idx`` (0 <= idx <= len(args))."""
        if not 0 <= idx <= len(self._args):
            raise AssertionError(f"insert_args index must be between 0 and len(self.args), "
                                 f"got {idx}")
        self.args = self._args[:idx] + (arg,) + self._args[idx:]

    def update_kwarg(self, key, arg):
        k = dict(self._kwargs)
        k[key] = arg
        self.kwargs = k

    def __update_args_kwargs(self, new_args, new_kwargs):
        for old in self._input_nodes:
            old.users.pop(self, None)
        self._input_nodes = {}
        self._args = map_arg(tuple(new_args), self._collect)
        self._kwargs = map_arg(dict(new_kwargs), self._collect)
        for n in self._input_nodes:
            n.users.setdefault(self, None)

    def _collect(self, n):
        if n.graph is not self.graph:
            raise RuntimeError(f"Argument '{n}' of Node '{self}' was used before it has been "
                               f"defined in this graph (it belongs to another Graph)")
        self._input_nodes.setdefault(n, None)
        return n

    def replace_all_uses_with(self, replace_with, delete_user_cb=None, *, propagate_meta=False):
        """Make every user of this node (those ``delete_user_cb`` accepts, if given) read
        ``replace_with`` instead; returns those users."""
        if propagate_meta:
            for k, v in self.meta.items():
                replace_with.meta.setdefault(k, v)
        changed = []
        for user in list(self.users):
            if delete_user_cb is not None and not delete_user_cb(user):
                continue
            user.replace_input_with(self, replace_with)
            changed.append(user)
        return changed

    def replace_input_with(self, old_input, new_input):
        """Replace every use of ``old_input`` in this node's args and kwargs."""
        def sub(n):
            return new_input if n is old_input else n
        self.__update_args_kwargs(map_arg(self._args, sub), map_arg(self._kwargs, sub))

    # ---- properties ----------------------------------------------------------------------
    @property
    def stack_trace(self):
        return self.meta.get("stack_trace")

    @stack_trace.setter
    def stack_trace(self, trace):
        self.meta["stack_trace"] = trace

    def is_impure(self, impure_random=True):
        """Whether removing this node could change the program (inputs, outputs, side effects).
        A call of a public random function (``ember.rand``, ...) advances the generator, so it
        is impure; an operator-level random op (in captured graphs) is impure only with
        ``impure_random``, as torch treats its seeded ATen ops."""
        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_function":
            t = self.target
            if t in _side_effectful_functions or _is_random_function(t):
                return True
            return impure_random and isinstance(t, Op) and t.category == "random"
        if self.op == "call_method":
            # in-place Tensor methods (add_, copy_, ...) mutate their input
            t = self.target
            return t.endswith("_") and not t.startswith("__")
        if self.op == "call_module":
            mod = self.graph.owning_module
            target = mod.get_submodule(self.target) if mod is not None else None
            return bool(getattr(target, "_is_impure", False))
        return False

    def normalized_arguments(self, root, arg_types=None, kwarg_types=None,
                             normalize_to_only_use_kwargs=False):
        """This call's arguments matched to its target's signature (defaults filled in) as an
        ``ArgsKwargsPair``, or None where that is not possible (other node kinds, targets
        without a readable signature, modules that are not ember.nn's own)."""
        from .operator_schemas import normalize_function, normalize_module
        if self.op == "call_function":
            return normalize_function(self.target, self.args, self.kwargs, arg_types,
                                      kwarg_types, normalize_to_only_use_kwargs)
        if self.op == "call_module":
            return normalize_module(root, self.target, self.args, self.kwargs,
                                    normalize_to_only_use_kwargs)
        return None

    def format_node(self, placeholder_names=None, maybe_return_typename=None, *,
                    include_tensor_metadata=False):
        """This node as one readable line (``%name : [num_users=N] = op[target=...](...)``)."""
        if self.op == "placeholder":
            if placeholder_names is not None:
                placeholder_names.append(self.target)
                return None
            default = f" = {self._args[0]!r}" if self._args else ""
            return f"%{self.name} : [num_users={len(self.users)}] = placeholder[target=" \
                   f"{self.target}]{default}"
        if self.op == "output":
            if maybe_return_typename is not None and self.type is not None:
                maybe_return_typename[0] = f" -> {self.type}"
            return f"return {_format_arg(self._args[0]) if self._args else None}"
        target = self.target if isinstance(self.target, str) else _qualified_name(self.target)
        annotation = ""
        val = self.meta.get("val", self.meta.get("tensor_meta", self.meta.get("example_value")))
        if include_tensor_metadata and _is_tensor(val):
            annotation = f'Tensor "{val.dtype.abbr}{_shape_str(val.shape)}' \
                         f'{_shape_str(val.stride())}{val.device}"'
        return (f"%{self.name} : {annotation}[num_users={len(self.users)}] = {self.op}"
                f"[target={target}]("
                f"args = {_format_arg(self._args)}, kwargs = {_format_arg(self._kwargs)})")

    def __repr__(self):
        return self.name

    def _pretty_target(self):
        return self.target if isinstance(self.target, str) else _qualified_name(self.target)
