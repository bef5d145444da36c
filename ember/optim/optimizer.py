"""The Optimizer base class (``torch.optim.Optimizer``).

Parameter groups, per-parameter state, state_dict/load_state_dict in torch's
format (parameters replaced by integer ids, counted across groups), step and
state-dict hooks (per optimizer and global).  The built-in optimizers update
the raw arrays in place (see ``_functional``), so a step costs a few NumPy
ufunc calls per parameter rather than many dispatched ember operations.
"""
import functools
import warnings
from collections.abc import Callable
from typing import Any, Optional
from collections import OrderedDict, defaultdict
from collections.abc import Iterable
from copy import deepcopy
from itertools import chain

from .._core.state import STATE
from .._core.tensor import Tensor
from ..autograd import profiler as _profiler

__all__ = ["Optimizer", "required", "register_optimizer_step_pre_hook",
           "register_optimizer_step_post_hook"]


class _RequiredParameter:
    """Singleton class representing a required parameter for an Optimizer."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()

_global_optimizer_pre_hooks = OrderedDict()
_global_optimizer_post_hooks = OrderedDict()


class RemovableHandle:
    """A handle that removes a hook from the dict(s) it was registered in."""
    _next_id = 0

    def __init__(self, *dicts):
        self._dicts = dicts
        self.id = RemovableHandle._next_id
        RemovableHandle._next_id += 1

    def remove(self):
        for d in self._dicts:
            d.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _add_hook(d, hook, prepend=False):
    h = RemovableHandle(d)
    d[h.id] = hook
    if prepend:
        d.move_to_end(h.id, last=False)
    return h


def register_optimizer_step_pre_hook(hook):
    """Register a pre hook common to all optimizers: ``hook(optimizer, args, kwargs)``."""
    return _add_hook(_global_optimizer_pre_hooks, hook)


def register_optimizer_step_post_hook(hook):
    """Register a post hook common to all optimizers: ``hook(optimizer, args, kwargs)``."""
    return _add_hook(_global_optimizer_post_hooks, hook)


def _typename(obj):
    if isinstance(obj, Tensor):
        return obj.type() if hasattr(obj, "type") else "Tensor"
    return type(obj).__module__ + "." + type(obj).__qualname__ \
        if type(obj).__module__ != "builtins" else type(obj).__qualname__


def _hook_step(func):
    """Wrap a class's ``step`` so that the step pre/post hooks run around it (inside an
    ``Optimizer.step#<class>.step`` range while a profiler runs, as torch names it)."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        if _profiler._ACTIVE is not None:
            with _profiler.record_function(f"Optimizer.step#{type(args[0]).__name__}.step"):
                return _run_hooked(func, args, kwargs)
        return _run_hooked(func, args, kwargs)
    wrapper.hooked = True
    return wrapper


def _run_hooked(func, args, kwargs):
    self = args[0]
    for pre in chain(_global_optimizer_pre_hooks.values(),
                     self._optimizer_step_pre_hooks.values()):
        result = pre(self, args, kwargs)
        if result is not None:
            if isinstance(result, tuple) and len(result) == 2:
                args, kwargs = result
            else:
                raise RuntimeError(f"{func} must return None or a tuple of (new_args, "
                                   f"new_kwargs), but got {result}.")
    out = func(*args, **kwargs)
    for post in chain(self._optimizer_step_post_hooks.values(),
                      _global_optimizer_post_hooks.values()):
        post(self, args, kwargs)
    return out


class Optimizer:
    """Base class for all optimizers.

    Args:
        params (iterable): an iterable of Tensors, of ``(name, Tensor)`` pairs, or of
            dicts (parameter groups) specifying what should be optimized.
        defaults (dict): a dict containing default values of optimization options
            (used when a parameter group doesn't specify them).
    """

    # hook signatures: ``hook(optimizer, args, kwargs) -> None or (args, kwargs)``, and
    # ``hook(optimizer, args, kwargs) -> None``
    OptimizerPreHook = Callable[[Any, tuple, dict], Optional[tuple]]
    OptimizerPostHook = Callable[[Any, tuple, dict], None]

    @staticmethod
    def profile_hook_step(func):
        """Wrap ``step`` so the step hooks run around it, inside an
        ``Optimizer.step#<class>.step`` profiler range."""
        return _hook_step(func)

    def __init__(self, params, defaults):
        self.defaults = defaults
        self._init_hook_dicts()
        self._patch_step_function()
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors or dicts, but got " + _typename(params))
        self.state = defaultdict(dict)
        self.param_groups = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    def _init_hook_dicts(self):
        for name in ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks",
                     "_optimizer_state_dict_pre_hooks", "_optimizer_state_dict_post_hooks",
                     "_optimizer_load_state_dict_pre_hooks",
                     "_optimizer_load_state_dict_post_hooks"):
            if name not in self.__dict__:
                setattr(self, name, OrderedDict())

    def _patch_step_function(self):
        cls = self.__class__
        if not getattr(cls.step, "hooked", False):
            cls.step = _hook_step(cls.step)

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state,
                "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._init_hook_dicts()
        self._patch_step_function()
        self.defaults.setdefault("differentiable", False)

    def __repr__(self):
        s = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            s += f"\nParameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    s += f"    {key}: {group[key]}\n"
        return s + ")"

    # ---- hooks ------------------------------------------------------------------------
    def register_step_pre_hook(self, hook):
        """Register a hook ``hook(optimizer, args, kwargs) -> None or (args, kwargs)``
        called before ``step``."""
        return _add_hook(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook):
        """Register a hook ``hook(optimizer, args, kwargs) -> None`` called after ``step``."""
        return _add_hook(self._optimizer_step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook, prepend=False):
        """Register ``hook(optimizer) -> None`` called before ``state_dict``."""
        return _add_hook(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend=False):
        """Register ``hook(optimizer, state_dict) -> state_dict or None`` called after
        ``state_dict``."""
        return _add_hook(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend=False):
        """Register ``hook(optimizer, state_dict) -> state_dict or None`` called before
        ``load_state_dict``."""
        return _add_hook(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend=False):
        """Register ``hook(optimizer) -> None`` called after ``load_state_dict``."""
        return _add_hook(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    # ---- state dict -------------------------------------------------------------------
    def state_dict(self):
        """Return the state of the optimizer as a :class:`dict` (``state`` and
        ``param_groups``, parameters replaced by integer ids)."""
        for pre in self._optimizer_state_dict_pre_hooks.values():
            pre(self)
        mapping = {}
        start = 0

        def pack(group):
            nonlocal start
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], start):
                mapping.setdefault(id(p), i)
            packed["params"] = [mapping[id(p)] for p in group["params"]]
            start += len(packed["params"])
            return packed

        groups = [pack(g) for g in self.param_groups]
        packed_state = {(mapping[id(k)] if isinstance(k, Tensor) else k): v
                        for k, v in self.state.items()}
        sd = {"state": packed_state, "param_groups": groups}
        for post in self._optimizer_state_dict_post_hooks.values():
            r = post(self, sd)
            if r is not None:
                sd = r
        return sd

    @staticmethod
    def _cast_state_value(param, value, key):
        # 'step' counters keep their dtype; other floating state follows the parameter's.
        if key == "step" or not param.is_floating_point():
            return value
        if value.dtype is not param.dtype:
            return value.to(dtype=param.dtype)
        return value

    def load_state_dict(self, state_dict):
        """Load the optimizer state from a dict returned by :meth:`state_dict`."""
        state_dict = state_dict.copy()
        for pre in self._optimizer_load_state_dict_pre_hooks.values():
            r = pre(self, state_dict)
            if r is not None:
                state_dict = r
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match "
                             "the size of optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))

        def cast(param, value, key=None):
            if isinstance(value, Tensor):
                return self._cast_state_value(param, value, key)
            if isinstance(value, dict):
                return {k: cast(param, v, k) for k, v in value.items()}
            if isinstance(value, Iterable) and not isinstance(value, (str, bytes)):
                return type(value)(cast(param, v) for v in value)
            return value

        state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                state[id_map[k]] = cast(id_map[k], v)
            else:
                state[k] = v

        def update_group(group, new_group):
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            return new_group

        self.__setstate__({"state": state, "param_groups": [
            update_group(g, ng) for g, ng in zip(groups, saved_groups)]})
        for post in self._optimizer_load_state_dict_post_hooks.values():
            post(self)

    # ---- gradients, steps, groups ---------------------------------------------------
    def zero_grad(self, set_to_none=True):
        """Reset the gradients of all optimized tensors (to None by default)."""
        for group in self.param_groups:
            for p in group["params"]:
                g = p._grad
                if g is None:
                    continue
                if set_to_none:
                    p._grad = None
                else:
                    if g.grad_fn is not None:
                        g.detach_()
                    else:
                        g.requires_grad_(False)
                    g.zero_()

    def step(self, closure=None):
        """Perform a single optimization step (to be overridden by subclasses)."""
        raise NotImplementedError

    def add_param_group(self, param_group):
        """Add a param group to the optimizer's ``param_groups``."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs. "
                            "Please use a list instead.")
        else:
            param_group["params"] = list(params)
        tensors, names = [], []
        for p in param_group["params"]:
            if isinstance(p, tuple):
                names.append(p[0])
                tensors.append(p[1])
            else:
                tensors.append(p)
        param_group["params"] = tensors
        if names:
            if len(names) != len(tensors):
                raise ValueError("all optimizer params should be with/without names. Some param "
                                 "names are missing")
            param_group["param_names"] = names
        for p in tensors:
            if not isinstance(p, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + _typename(p))
            if not self.defaults.get("differentiable", None) and \
                    not (p.grad_fn is None or p._retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError("parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            param_group.setdefault(name, default)
        ids = [id(p) for p in tensors]
        if len(ids) != len(set(ids)):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; "
                          "in future, this will cause an error; see "
                          "github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=3)
        seen = set()
        for group in self.param_groups:
            seen.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                txt = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {txt} to the optimizer")
        if not seen.isdisjoint(ids):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)


def _use_grad_for_differentiable(func):
    """Decorate an optimizer's ``step``: run it with grad mode set to the optimizer's
    ``differentiable`` default (on: the update is recorded; off: it is not), the caller's
    mode restored after (torch's decorator of the same name, which custom optimizers
    written after torch's own import)."""
    @functools.wraps(func)
    def _use_grad(*args, **kwargs):
        return _in_grad_mode(bool(args[0].defaults["differentiable"]), func, *args, **kwargs)
    return _use_grad


def _in_grad_mode(enabled, func, *args, **kwargs):
    """``func(*args, **kwargs)`` with grad mode ``enabled``, the caller's mode restored."""
    prev = STATE.grad_enabled
    STATE.grad_enabled = enabled
    try:
        return func(*args, **kwargs)
    finally:
        STATE.grad_enabled = prev


def _get_value(x):
    """A Python number from a tensor (``x.item()``), anything else as it is."""
    return x.item() if isinstance(x, Tensor) else x


def _run_closure(closure):
    """Evaluate ``closure`` with grad mode enabled, as torch's optimizers do."""
    if closure is None:
        return None
    return _in_grad_mode(True, closure)
