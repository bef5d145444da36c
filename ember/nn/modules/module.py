"""``nn.Module``: the base class of all neural-network modules, with PyTorch's behaviour.

Attributes assigned to a Module are sorted into parameters, buffers and
submodules (``__setattr__``), found again by ``__getattr__``, and walked by the
``named_*`` iterators, ``state_dict``/``load_state_dict``, ``to``/``apply``.
``__call__`` runs forward pre-hooks, ``forward``, forward hooks, and wires full
backward hooks through two identity autograd Functions around the call.
"""
import functools
import itertools
import warnings
from collections import OrderedDict, namedtuple
from typing import Any, Dict, TypeVar

from ..._core import dtype as _dt
from ..._core.state import STATE
from ..._core.tensor import Tensor, real_array, storage_changing
from ..parameter import Parameter, is_lazy

__all__ = ["Module", "register_module_forward_hook", "register_module_forward_pre_hook",
           "register_module_backward_hook", "register_module_full_backward_hook",
           "register_module_full_backward_pre_hook", "register_module_buffer_registration_hook",
           "register_module_module_registration_hook",
           "register_module_parameter_registration_hook"]

_EXTRA_STATE_KEY_SUFFIX = "_extra_state"
T_destination = TypeVar("T_destination", bound=Dict[str, Any])
_global_forward_hooks = OrderedDict()
_global_forward_pre_hooks = OrderedDict()
_global_backward_hooks = OrderedDict()
_global_backward_pre_hooks = OrderedDict()
_global_buffer_registration_hooks = OrderedDict()
_global_module_registration_hooks = OrderedDict()
_global_parameter_registration_hooks = OrderedDict()
_hook_ids = itertools.count()


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


class _HookHandle:
    """Removable handle for a hook stored in one or more ordered dicts."""

    def __init__(self, *dicts, extra=None):
        self.id = next(_hook_ids)
        self._dicts = dicts
        self._extra = extra

    def remove(self):
        for d in self._dicts:
            d.pop(self.id, None)
        if self._extra is not None:
            self._extra.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def register_module_forward_pre_hook(hook):
    """Registers a forward pre-hook common to all modules."""
    h = _HookHandle(_global_forward_pre_hooks)
    _global_forward_pre_hooks[h.id] = hook
    return h


# ids of the global forward hooks registered with_kwargs / always_call
_global_forward_hooks_with_kwargs = {}
_global_forward_hooks_always_called = {}


def register_module_forward_hook(hook, *, with_kwargs=False, always_call=False):
    """Registers a forward hook common to all modules: ``hook(module, args, output)`` (with
    ``with_kwargs``: ``hook(module, args, kwargs, output)``) runs after every forward, before
    the module's own hooks; with ``always_call`` it also runs when forward raises."""
    h = _HookHandle(_global_forward_hooks, _global_forward_hooks_always_called,
                    extra=_global_forward_hooks_with_kwargs)
    _global_forward_hooks[h.id] = hook
    if with_kwargs:
        _global_forward_hooks_with_kwargs[h.id] = True
    if always_call:
        _global_forward_hooks_always_called[h.id] = True
    return h


def _add_global(hooks, hook):
    h = _HookHandle(hooks)
    hooks[h.id] = hook
    return h


# whether the global backward hooks are full ones; torch fixes it at the first registration
# and refuses the other kind from then on
_global_is_full_backward_hook = [None]


def _global_backward_kind(full):
    if _global_is_full_backward_hook[0] is not None and \
            _global_is_full_backward_hook[0] != full:
        raise RuntimeError("Cannot use both regular backward hooks and full backward hooks as "
                           "a global Module hook. Please use only one of them.")
    _global_is_full_backward_hook[0] = full


def register_module_full_backward_pre_hook(hook):
    """Registers a backward pre-hook common to all modules: ``hook(module, grad_output)``
    runs before each module's own full backward pre-hooks and may return new
    grad_output."""
    return _add_global(_global_backward_pre_hooks, hook)


def register_module_full_backward_hook(hook):
    """Registers a backward hook common to all modules: ``hook(module, grad_input,
    grad_output)`` runs before each module's own full backward hooks and may return new
    grad_input."""
    _global_backward_kind(True)
    return _add_global(_global_backward_hooks, hook)


def register_module_backward_hook(hook):
    """Deprecated non-full global backward hook; ember runs it with the full hooks'
    semantics (grad_input/grad_output of the module's inputs and outputs)."""
    _global_backward_kind(False)
    return _add_global(_global_backward_hooks, hook)


def register_module_buffer_registration_hook(hook):
    """Registers a hook ``hook(module, name, buffer)`` run whenever any module registers a
    buffer; a non-None return value is registered instead."""
    return _add_global(_global_buffer_registration_hooks, hook)


def register_module_module_registration_hook(hook):
    """Registers a hook ``hook(module, name, submodule)`` run whenever any module registers
    a submodule; a non-None return value is registered instead."""
    return _add_global(_global_module_registration_hooks, hook)


def register_module_parameter_registration_hook(hook):
    """Registers a hook ``hook(module, name, param)`` run whenever any module registers a
    parameter; a non-None return value is registered instead."""
    return _add_global(_global_parameter_registration_hooks, hook)


def _registered(hooks, module, name, value):
    for hook in hooks.values():
        out = hook(module, name, value)
        if out is not None:
            value = out
    return value


def _addindent(s, n):
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    return lines[0] + "\n" + "\n".join(" " * n + line for line in lines[1:])


def _builds_on_its_device(init):
    """ember's modules take torch's ``device=`` constructor argument: the constructor runs
    inside ``with ember.device(device):``, so every parameter and buffer it creates (through
    factories or nn.init) is made there -- on the meta device, without memory."""
    import inspect
    try:
        params = inspect.signature(init).parameters
    except (TypeError, ValueError):
        return init
    if "device" not in params:
        return init
    p = params["device"]
    pos = list(params).index("device") if p.kind is p.POSITIONAL_OR_KEYWORD else None

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        dev = kwargs.get("device")
        if dev is None and pos is not None and len(args) >= pos:
            dev = args[pos - 1]
        if dev is None:
            return init(self, *args, **kwargs)
        from ..._core.device import device
        with device(dev):
            return init(self, *args, **kwargs)
    return __init__


class Module:
    """Base class for all neural network modules.

    Subclasses define ``forward`` and assign submodules, Parameters and buffers
    as attributes in ``__init__`` (after calling ``super().__init__()``)."""

    dump_patches = False
    T_destination = T_destination
    training: bool
    _version = 1
    call_super_init = False

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got unexpected arguments")
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = {}
        d["_buffers"] = {}
        d["_non_persistent_buffers_set"] = set()
        d["_modules"] = {}
        d["_forward_pre_hooks"] = OrderedDict()
        d["_forward_pre_hooks_with_kwargs"] = {}
        d["_forward_hooks"] = OrderedDict()
        d["_forward_hooks_with_kwargs"] = {}
        d["_forward_hooks_always_called"] = {}
        d["_backward_hooks"] = OrderedDict()
        d["_backward_pre_hooks"] = OrderedDict()
        d["_state_dict_hooks"] = OrderedDict()
        d["_state_dict_pre_hooks"] = OrderedDict()
        d["_load_state_dict_pre_hooks"] = OrderedDict()
        d["_load_state_dict_post_hooks"] = OrderedDict()

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if cls.__module__.startswith("ember.") and "__init__" in cls.__dict__:
            cls.__init__ = _builds_on_its_device(cls.__dict__["__init__"])

    def forward(self, *input):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required '
                                  f'"forward" function')

    # ---- registration ---------------------------------------------------------------
    def _check_name(self, name, kind):
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"cannot assign {kind} before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain "."')
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')

    def register_buffer(self, name, tensor, persistent=True):
        """Adds a buffer (state that is not a parameter, e.g. running statistics)."""
        self._check_name(name, "buffer")
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' "
                            f"(torch Tensor or None required)")
        if _global_buffer_registration_hooks:
            tensor = _registered(_global_buffer_registration_hooks, self, name, tensor)
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name, param):
        """Adds a parameter to the module."""
        self._check_name(name, "parameter")
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is None:
            self._parameters[name] = None
            return
        if not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter "
                            f"'{name}' (torch.nn.Parameter or None required)")
        if param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model "
                             f"parameters must be created explicitly. To express '{name}' as a "
                             f"function of another Tensor, compute the value in the forward() "
                             f"method.")
        if _global_parameter_registration_hooks:
            param = _registered(_global_parameter_registration_hooks, self, name, param)
        self._parameters[name] = param

    def add_module(self, name, module):
        """Adds a child module, accessible as an attribute of the given name."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {type(name).__name__}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        if _global_module_registration_hooks:
            module = _registered(_global_module_registration_hooks, self, name, module)
        self._modules[name] = module

    register_module = add_module

    def __setattr__(self, name, value):
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._remove_from(name, d, params, keep="_parameters")
            self.register_parameter(name, value)
            return
        if params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                                f"(torch.nn.Parameter or None expected)")
            self.register_parameter(name, value)
            return
        modules = d.get("_modules")
        if isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._remove_from(name, d, params, keep="_modules")
            if _global_module_registration_hooks:
                value = _registered(_global_module_registration_hooks, self, name, value)
            modules[name] = value
            return
        if modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module "
                                f"'{name}' (torch.nn.Module or None expected)")
            if _global_module_registration_hooks:
                value = _registered(_global_module_registration_hooks, self, name, value)
            modules[name] = value
            return
        buffers = d.get("_buffers")
        if isinstance(value, Tensor) and getattr(value, "_is_buffer_marker", False):
            persistent = value.__dict__.pop("persistent", True)
            value.__dict__.pop("_is_buffer_marker", None)
            self._remove_from(name, d, params)
            self.register_buffer(name, value, persistent)
            return
        if buffers is not None and name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                                f"(torch.Tensor or None expected)")
            if _global_buffer_registration_hooks:
                value = _registered(_global_buffer_registration_hooks, self, name, value)
            buffers[name] = value
            return
        object.__setattr__(self, name, value)

    def _remove_from(self, name, d, params, keep=None):
        # the dict ``keep`` is about to be assigned again: the name keeps its place in it
        # (torch: re-assigning ``m.conv1`` leaves it where it was in ``children()``)
        d.pop(name, None)
        for key in ("_parameters", "_buffers", "_modules"):
            if key == keep:
                continue
            dd = d.get(key)
            if dd is not None:
                dd.pop(name, None)
        d.get("_non_persistent_buffers_set", set()).discard(name)

    def __getattr__(self, name):
        d = self.__dict__
        for key in ("_parameters", "_buffers", "_modules"):
            dd = d.get(key)
            if dd is not None and name in dd:
                return dd[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        for key in ("_parameters", "_buffers", "_modules"):
            dd = self.__dict__.get(key)
            if dd is not None and name in dd:
                del dd[name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        keys = set(object.__dir__(self))
        keys.update(self._parameters, self._buffers, self._modules)
        return sorted(k for k in keys if not k[0].isdigit())

    # ---- traversal --------------------------------------------------------------------
    def _named_members(self, get_members, prefix="", recurse=True, remove_duplicate=True):
        memo = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) \
            if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for k, v in get_members(module):
                if v is None or (remove_duplicate and id(v) in memo):
                    continue
                if remove_duplicate:
                    memo.add(id(v))
                yield (module_prefix + ("." if module_prefix else "") + k, v)

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        """Iterator over (name, parameter) pairs."""
        return self._named_members(lambda m: m._parameters.items(), prefix, recurse,
                                   remove_duplicate)

    def parameters(self, recurse=True):
        """Iterator over module parameters."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        """Iterator over (name, buffer) pairs."""
        return self._named_members(lambda m: m._buffers.items(), prefix, recurse,
                                   remove_duplicate)

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def named_children(self):
        memo = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in memo:
                memo.add(id(m))
                yield name, m

    def children(self):
        for _, m in self.named_children():
            yield m

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """Iterator over all modules in the network, yielding (name, module) pairs."""
        if memo is None:
            memo = set()
        if id(self) in memo and remove_duplicate:
            return
        if remove_duplicate:
            memo.add(id(self))
        yield prefix, self
        for name, m in self._modules.items():
            if m is None:
                continue
            sub = prefix + ("." if prefix else "") + name
            yield from m.named_modules(memo, sub, remove_duplicate)

    def modules(self, remove_duplicate=True):
        """Iterator over all modules in the network (each once unless
        ``remove_duplicate=False``)."""
        for _, m in self.named_modules(remove_duplicate=remove_duplicate):
            yield m

    def get_extra_state(self):
        """The extra state to include in ``state_dict`` (override it, with
        `set_extra_state`, to save state that is not a parameter or buffer)."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never "
                           "be called.")

    def set_extra_state(self, state):
        """Restores the extra state returned by `get_extra_state` (override both)."""
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never "
                           "be called.")

    def get_submodule(self, target):
        """The submodule given by the dotted path ``target``."""
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(f"{mod._get_name()} has no attribute `{item}`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return mod

    def set_submodule(self, target, module, strict=False):
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        *path, last = target.split(".")
        parent = self.get_submodule(".".join(path))
        if strict and not hasattr(parent, last):
            raise AttributeError(f"{parent._get_name()} has no attribute `{last}`")
        setattr(parent, last, module)

    def get_parameter(self, target):
        """The parameter given by the dotted path ``target``."""
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if not hasattr(mod, name):
            raise AttributeError(f"{mod._get_name()} has no attribute `{name}`")
        p = getattr(mod, name)
        if not isinstance(p, Parameter):
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return p

    def get_buffer(self, target):
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if name not in mod._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return mod._buffers[name]

    # ---- state --------------------------------------------------------------------------
    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else b.detach()
        if type(self).get_extra_state is not Module.get_extra_state:
            destination[prefix + _EXTRA_STATE_KEY_SUFFIX] = self.get_extra_state()

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """A dictionary with references to the whole state of the module."""
        if args:
            destination = args[0] if len(args) > 0 else destination
            prefix = args[1] if len(args) > 1 else prefix
            keep_vars = args[2] if len(args) > 2 else keep_vars
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        meta = getattr(destination, "_metadata", None)
        if meta is not None:
            meta[prefix[:-1]] = {"version": self._version}
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(destination=destination, prefix=prefix + name + ".",
                             keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            r = hook(self, destination, prefix, {})
            if r is not None:
                destination = r
        return destination

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        for hook in self._load_state_dict_pre_hooks.values():
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                 error_msgs)
        persistent = {k: v for k, v in self._buffers.items()
                      if k not in self._non_persistent_buffers_set}
        local = {k: v for k, v in itertools.chain(self._parameters.items(), persistent.items())
                 if v is not None}
        assign = local_metadata.get("assign_to_params_buffers", False)
        for name, param in local.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            value = state_dict[key]
            if not isinstance(value, Tensor):
                error_msgs.append(f'While copying the parameter named "{key}", expected '
                                  f'torch.Tensor or Tensor-like object from checkpoint but '
                                  f'received {type(value)}')
                continue
            if is_lazy(param):
                param.materialize(value.shape, dtype=value.dtype)
            if value.shape != param.shape:
                error_msgs.append(f"size mismatch for {key}: copying a param with shape "
                                  f"{_size_str(value.shape)} from checkpoint, the shape in "
                                  f"current model is {_size_str(param.shape)}.")
                continue
            try:
                if assign:
                    if isinstance(param, Parameter):
                        new = value if isinstance(value, Parameter) else \
                            Parameter(value, requires_grad=param.requires_grad)
                        setattr(self, name, new)
                    else:
                        setattr(self, name, value)
                else:
                    if param.is_meta and not value.is_meta:
                        warnings.warn(f"for {key}: copying from a non-meta parameter in the "
                                      f"checkpoint to a meta parameter in the current model, "
                                      f"which is a no-op. (Did you mean to pass `assign=True` to "
                                      f"assign items in the state dictionary to their "
                                      f"corresponding key in the module instead of copying them "
                                      f"in place?)", UserWarning, stacklevel=2)
                    from ...autograd.grad_mode import no_grad
                    with no_grad():
                        param.copy_(value)
            except Exception as ex:  # noqa: BLE001 - reported like torch, with the key
                error_msgs.append(f'While copying the parameter named "{key}", whose dimensions '
                                  f'in the model are {param.shape} and whose dimensions in the '
                                  f'checkpoint are {value.shape}, an exception occurred : '
                                  f'{ex.args}.')
        extra = prefix + _EXTRA_STATE_KEY_SUFFIX
        has_extra = type(self).set_extra_state is not Module.set_extra_state
        if has_extra:
            if extra in state_dict:
                self.set_extra_state(state_dict[extra])
            elif strict:
                missing_keys.append(extra)
        if strict:
            for key in state_dict:
                if key.startswith(prefix):
                    rest = key[len(prefix):]
                    name = rest.split(".", 1)[0]
                    if has_extra and key == extra:
                        continue
                    if name not in self._modules and name not in local and "." not in rest:
                        unexpected_keys.append(key)
                    elif "." in rest and name not in self._modules:
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copies parameters and buffers from ``state_dict`` into this module and its
        descendants; with ``strict``, keys must match exactly.  Returns the missing and
        unexpected keys."""
        if not isinstance(state_dict, dict):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing, unexpected, errors = [], [], []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)
        if metadata is not None:
            state_dict._metadata = metadata

        def load(module, prefix=""):
            local_metadata = {} if metadata is None else dict(metadata.get(prefix[:-1], {}))
            if assign:
                local_metadata["assign_to_params_buffers"] = assign
            module._load_from_state_dict(state_dict, prefix, local_metadata, True, missing,
                                         unexpected, errors)
            for name, child in module._modules.items():
                if child is not None:
                    load(child, prefix + name + ".")
            incompatible = _IncompatibleKeys(missing, unexpected)
            for hook in module._load_state_dict_post_hooks.values():
                hook(module, incompatible)
        load(self)
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected)))
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing)))
        if errors:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                self._get_name(), "\n\t".join(errors)))
        return _IncompatibleKeys(missing, unexpected)

    def register_load_state_dict_post_hook(self, hook):
        """``hook(module, incompatible_keys)`` runs after ``load_state_dict`` on this module."""
        h = _HookHandle(self._load_state_dict_post_hooks)
        self._load_state_dict_post_hooks[h.id] = hook
        return h

    def register_load_state_dict_pre_hook(self, hook):
        h = _HookHandle(self._load_state_dict_pre_hooks)
        self._load_state_dict_pre_hooks[h.id] = functools.partial(_pre_hook_adapter, hook, self)
        return h

    def _register_load_state_dict_pre_hook(self, hook, with_module=False):
        h = _HookHandle(self._load_state_dict_pre_hooks)
        self._load_state_dict_pre_hooks[h.id] = functools.partial(hook, self) if with_module \
            else hook
        return h

    def register_state_dict_pre_hook(self, hook):
        h = _HookHandle(self._state_dict_pre_hooks)
        self._state_dict_pre_hooks[h.id] = hook
        return h

    def register_state_dict_post_hook(self, hook):
        h = _HookHandle(self._state_dict_hooks)
        self._state_dict_hooks[h.id] = lambda m, sd, prefix, meta: hook(m, sd, prefix, meta)
        return h

    _register_state_dict_hook = register_state_dict_post_hook

    # ---- modes and conversion ---------------------------------------------------------
    def train(self, mode=True):
        """Sets the module (and descendants) in training mode."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for m in self.children():
            m.train(mode)
        return self

    def eval(self):
        """Sets the module in evaluation mode (``train(False)``)."""
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        """Resets gradients of all parameters (to None by default)."""
        for p in self.parameters():
            if p._grad is not None:
                if set_to_none:
                    p._grad = None
                else:  # as torch: detached in place, zeroed by the operator (version bump)
                    g = p._grad
                    if g.grad_fn is not None:
                        g.detach_()
                    else:
                        g.requires_grad_(False)
                    g.zero_()

    def apply(self, fn):
        """Applies ``fn`` recursively to every submodule (children first) and to self."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def _apply(self, fn, recurse=True):
        if recurse:
            for m in self.children():
                m._apply(fn)
        from ...autograd.grad_mode import no_grad
        for key, p in self._parameters.items():
            if p is None:
                continue
            with no_grad():
                new = fn(p)
            if new is not p:
                storage_changing(p)
                p._data = real_array(new._data)
                p._vc = None
                p._base = None
            if p._grad is not None:
                with no_grad():
                    g = fn(p._grad)
                p._grad = g if g is not p._grad else p._grad
        for key, b in self._buffers.items():
            if b is not None:
                self._buffers[key] = fn(b)
        return self

    def to(self, *args, **kwargs):
        """Moves and/or casts the parameters and buffers (floating ones only for dtypes);
        ``memory_format`` lays out the 4-d and 5-d ones."""
        dtype = kwargs.get("dtype")
        device = kwargs.get("device")
        for a in args:
            if isinstance(a, _dt.dtype):
                dtype = a
            elif isinstance(a, Tensor):
                dtype, device = a.dtype, a.device
            else:
                device = a
        if dtype is not None and not (dtype.is_floating_point or dtype.is_complex):
            raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but "
                            f"got desired dtype={dtype}")

        memory_format = kwargs.get("memory_format")

        def convert(t):
            r = t
            if device is not None:
                r = r.to(device)
            if dtype is not None and (t.is_floating_point() or t.is_complex()):
                r = r.to(dtype)
            if memory_format is not None and t.dim() in (4, 5):  # as torch: weights, not biases
                r = r.to(memory_format=memory_format)
            return r
        return self._apply(convert)

    def _cast_floating(self, dtype):
        return self._apply(lambda t: t.to(dtype) if t.is_floating_point() else t)

    def float(self):
        return self._cast_floating(_dt.float32)

    def double(self):
        return self._cast_floating(_dt.float64)

    def half(self):
        return self._cast_floating(_dt.float16)

    def bfloat16(self):
        return self._cast_floating(_dt.bfloat16)

    def type(self, dst_type):
        return self._apply(lambda t: t.type(dst_type))

    def cpu(self):
        return self._apply(lambda t: t.cpu())

    def cuda(self, device=None):
        return self._apply(lambda t: t.cuda(device))

    def xpu(self, device=None):
        return self._apply(lambda t: t.xpu(device))

    def ipu(self, device=None):
        return self._apply(lambda t: t.ipu(device))

    def mtia(self, device=None):
        return self._apply(lambda t: t.mtia(device))

    def share_memory(self):
        """Moves the parameters and buffers to shared memory (see ``Tensor.share_memory_``)."""
        for t in list(self.parameters()) + list(self.buffers()):
            t.share_memory_()
        return self

    def to_empty(self, *, device, recurse=True):
        """Moves the parameters and buffers to ``device`` without copying their values (their
        new storage is uninitialised): how a model built on the meta device gets memory."""
        from ...ops.creation import empty_like
        return self._apply(lambda t: empty_like(t, device=device), recurse=recurse)

    # ---- hooks and calling ------------------------------------------------------------
    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """``hook(module, args)`` (or ``hook(module, args, kwargs)`` with ``with_kwargs``) runs
        before forward; it may return modified args (and kwargs)."""
        h = _HookHandle(self._forward_pre_hooks, extra=self._forward_pre_hooks_with_kwargs)
        self._forward_pre_hooks[h.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[h.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(h.id, last=False)
        return h

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False,
                              always_call=False):
        """``hook(module, args, output)`` (or with kwargs) runs after forward; it may return a
        modified output."""
        h = _HookHandle(self._forward_hooks, self._forward_hooks_always_called,
                        extra=self._forward_hooks_with_kwargs)
        self._forward_hooks[h.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs[h.id] = True
        if always_call:
            self._forward_hooks_always_called[h.id] = True
        if prepend:
            self._forward_hooks.move_to_end(h.id, last=False)
        return h

    def register_full_backward_hook(self, hook, prepend=False):
        """``hook(module, grad_input, grad_output)`` runs when the gradients w.r.t. the
        module's inputs are computed; it may return a new grad_input."""
        h = _HookHandle(self._backward_hooks)
        self._backward_hooks[h.id] = hook
        if prepend:
            self._backward_hooks.move_to_end(h.id, last=False)
        return h

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """``hook(module, grad_output)`` runs before the module's gradients are computed; it
        may return a new grad_output."""
        h = _HookHandle(self._backward_pre_hooks)
        self._backward_pre_hooks[h.id] = hook
        if prepend:
            self._backward_pre_hooks.move_to_end(h.id, last=False)
        return h

    def register_backward_hook(self, hook):
        warnings.warn("Using a non-full backward hook when the forward contains multiple "
                      "autograd Nodes is deprecated; use register_full_backward_hook.",
                      FutureWarning, stacklevel=2)
        return self.register_full_backward_hook(hook)

    # set by ``Module.compile()`` (ember.compile, registered from above this layer)
    _compiled_call_impl = None

    def __call__(self, *args, **kwargs):
        if self._compiled_call_impl is not None:
            return self._compiled_call_impl(*args, **kwargs)
        if not (self._forward_pre_hooks or self._forward_hooks or self._backward_hooks or
                self._backward_pre_hooks or _global_forward_hooks or
                _global_forward_pre_hooks or _global_backward_hooks or
                _global_backward_pre_hooks):
            return self.forward(*args, **kwargs)
        return self._call_with_hooks(args, kwargs)

    def _call_impl(self, *args, **kwargs):
        """The call without compilation: hooks and forward."""
        if not (self._forward_pre_hooks or self._forward_hooks or self._backward_hooks or
                self._backward_pre_hooks or _global_forward_hooks or
                _global_forward_pre_hooks or _global_backward_hooks or
                _global_backward_pre_hooks):
            return self.forward(*args, **kwargs)
        return self._call_with_hooks(args, kwargs)

    def _call_with_hooks(self, args, kwargs):
        for hid, hook in itertools.chain(_global_forward_pre_hooks.items(),
                                         self._forward_pre_hooks.items()):
            if self._forward_pre_hooks_with_kwargs.get(hid):
                r = hook(self, args, kwargs)
                if r is not None:
                    if not (isinstance(r, tuple) and len(r) == 2):
                        raise RuntimeError("forward pre-hook must return None or a tuple of "
                                           f"(new_args, new_kwargs), but got {r}.")
                    args, kwargs = r
            else:
                r = hook(self, args)
                if r is not None:
                    args = r if isinstance(r, tuple) else (r,)
        bw = None
        if (self._backward_hooks or self._backward_pre_hooks or _global_backward_hooks or
                _global_backward_pre_hooks) and STATE.grad_enabled:
            from .._backward_hooks import BackwardHook
            bw = BackwardHook(self)
            args = bw.setup_input_hook(args)
        try:
            result = self.forward(*args, **kwargs)
        except Exception:
            for hid, hook in itertools.chain(_global_forward_hooks.items(),
                                             self._forward_hooks.items()):
                if self._forward_hooks_always_called.get(hid) or \
                        _global_forward_hooks_always_called.get(hid):
                    try:
                        if self._forward_hooks_with_kwargs.get(hid) or \
                                _global_forward_hooks_with_kwargs.get(hid):
                            hook(self, args, kwargs, None)
                        else:
                            hook(self, args, None)
                    except Exception:  # noqa: BLE001 - the forward error is the one to see
                        pass
            raise
        for hid, hook in itertools.chain(_global_forward_hooks.items(),
                                         self._forward_hooks.items()):
            if self._forward_hooks_with_kwargs.get(hid) or \
                    _global_forward_hooks_with_kwargs.get(hid):
                r = hook(self, args, kwargs, result)
            else:
                r = hook(self, args, result)
            if r is not None:
                result = r
        if bw is not None:
            result = bw.setup_output_hook(result)
        return result

    # ---- printing and copying -----------------------------------------------------------
    def extra_repr(self):
        """Extra information shown in this module's repr (override in subclasses)."""
        return ""

    def _get_name(self):
        return type(self).__name__

    def __repr__(self):
        extra = self.extra_repr()
        lines = extra.split("\n") if extra else []
        child_lines = []
        for key, m in self._modules.items():
            child_lines.append(f"({key}): " + _addindent(repr(m), 2))
        lines = lines + child_lines
        s = self._get_name() + "("
        if lines:
            if len(extra.split("\n")) == 1 and not child_lines:
                s += extra
            else:
                s += "\n  " + "\n  ".join(lines) + "\n"
        return s + ")"

    def __getstate__(self):
        return self.__dict__.copy()

    def __setstate__(self, state):
        self.__dict__.update(state)

    def _replicate_for_data_parallel(self):
        import copy
        return copy.copy(self)


def _size_str(shape):
    return "ember.Size([" + ", ".join(str(s) for s in shape) + "])"


def _pre_hook_adapter(hook, module, state_dict, prefix, local_metadata, strict, missing,
                      unexpected, errors):
    hook(module, state_dict, prefix, local_metadata, strict, missing, unexpected, errors)


