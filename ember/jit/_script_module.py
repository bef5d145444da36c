"""ScriptModule, ScriptFunction and their methods: what ``trace``, ``script`` and ``load`` return.

A ScriptModule is an ``nn.Module`` holding the original module's parameters, buffers and
submodules (shared, not copied, as torch's are), plus one *method* per compiled method.
A method runs either its `Program` (traced and loaded modules: the recorded graph) or its
rewritten Python (scripted modules: eager meaning, see ``ember.jit._script``); either way
it has a program, shown by ``.graph`` and ``.code`` and written by ``save``.
"""
from ..autograd.grad_mode import no_grad
from ..nn.modules.module import Module
from ._printing import ProgramGraph, program_code

__all__ = ["ScriptModule", "RecursiveScriptModule", "TracedModule", "TopLevelTracedModule",
           "ScriptFunction", "ScriptMethod", "ProgramMethod", "ModuleState"]


class ModuleState:
    """A module's parameters and buffers by qualified name, as programs read and write them."""

    def __init__(self, module, write_buffers=True):
        self.module = module
        self.write_buffers = write_buffers

    def get(self, name):
        mod, _, leaf = name.rpartition(".")
        owner = self.module.get_submodule(mod) if mod else self.module
        if leaf in owner._parameters:
            return owner._parameters[leaf]
        if leaf in owner._buffers and owner._buffers[leaf] is not None:
            return owner._buffers[leaf]
        raise RuntimeError(f"jit: the module has no parameter or buffer {name!r} that its "
                           f"program reads")

    def set_buffer(self, name, value):
        if not self.write_buffers:
            return
        with no_grad():
            self.get(name).copy_(value)


class ProgramMethod:
    """A method that runs a fixed `Program` (traced or loaded)."""

    def __init__(self, name, program, arg_names=None, defaults=None):
        self.name = name
        self._program = program
        self.arg_names = arg_names
        self.defaults = dict(defaults or {})  # trailing arguments' defaults (scripted methods)

    def program(self):
        return self._program

    def run(self, owner, args):
        program = self._program if owner is None else self._program.for_mode(owner.training)
        return program(ModuleState(owner), args)


class ScriptMethod:
    """A compiled method bound to its module (``torch._C.ScriptMethod``): callable, with the
    method's ``graph`` and ``code``."""

    def __init__(self, owner, method):
        self.owner = owner
        self.method = method

    @property
    def name(self):
        return self.method.name

    def __call__(self, *args, **kwargs):
        return self.method.run(self.owner, _positional(self.method, args, kwargs))

    @property
    def graph(self):
        return ProgramGraph(_current(self.method, self.owner).graph_module)

    @property
    def inlined_graph(self):
        return self.graph

    @property
    def code(self):
        return _code(self.method, self.name, True, self.owner)

    def graph_for(self, *args, **kwargs):
        return self.graph

    def __repr__(self):
        return f"<ember.jit.ScriptMethod {self.name!r}>"


def _current(method, owner):
    """The method's program for the owner's training mode (programs keep both modes)."""
    program = method.program()
    return program if owner is None else program.for_mode(owner.training)


def _code(method, name, is_method, owner=None):
    """``.code``: the program's; before a scripted method has one, its scripted source."""
    source = getattr(method, "source_code", None)
    if source is not None and not method.has_program():
        return source()
    return program_code(_current(method, owner), name, is_method)


def _positional(method, args, kwargs):
    names = getattr(method, "arg_names", None) or []
    defaults = getattr(method, "defaults", None) or {}
    if not kwargs and (len(args) >= len(names) or not defaults):
        return args
    args = list(args)
    for n in names[len(args):]:
        if n in kwargs:
            args.append(kwargs.pop(n))
        elif n in defaults:
            args.append(defaults[n])
        else:
            raise RuntimeError(f"{method.name}() is missing value for argument {n!r}")
    if kwargs:
        raise RuntimeError(f"{method.name}() got unexpected keyword arguments {sorted(kwargs)}")
    return tuple(args)


class ScriptModule(Module):
    """A module whose methods have programs (``torch.jit.ScriptModule``): ``graph`` and
    ``code`` are those of ``forward``; ``save`` writes the programs and the parameters and
    buffers to a file ``ember.jit.load`` reads without the module's Python class."""

    def __init__(self):
        super().__init__()
        self.__dict__["_jit_methods"] = {}
        self.__dict__["_jit_original_name"] = type(self).__name__

    @classmethod
    def _from_module(cls, module, methods):
        """A ScriptModule sharing ``module``'s parameters, buffers, submodules and mode."""
        self = cls()
        d = self.__dict__
        d["_parameters"] = dict(module._parameters)
        d["_buffers"] = dict(module._buffers)
        d["_non_persistent_buffers_set"] = set(module._non_persistent_buffers_set)
        d["_modules"] = dict(module._modules)
        d["training"] = module.training
        for k, v in module.__dict__.items():  # the hooks the module had, in dicts of its own
            if k.endswith(("_hooks", "_hooks_with_kwargs", "_hooks_always_called")):
                d[k] = type(v)(v)
        d["_jit_original_name"] = type(module).__name__
        for m in methods:
            d["_jit_methods"][m.name] = m
        return self

    def _jit_method(self, name):
        return self.__dict__["_jit_methods"].get(name)

    def __getattr__(self, name):
        methods = self.__dict__.get("_jit_methods", {})
        if name in methods:
            return ScriptMethod(self, methods[name])
        return super().__getattr__(name)

    @property
    def forward(self):
        """The compiled ``forward`` as a `ScriptMethod` (``m.forward.graph``, ``m.forward(x)``)."""
        m = self._jit_method("forward")
        if m is None:
            raise RuntimeError(f"{self.original_name} has no compiled forward method")
        return ScriptMethod(self, m)

    @property
    def original_name(self):
        return self.__dict__["_jit_original_name"]

    @property
    def graph(self):
        return self.forward.graph

    @property
    def inlined_graph(self):
        return self.graph

    @property
    def code(self):
        return self.forward.code

    @property
    def code_with_constants(self):
        p = _current(self._jit_method("forward"), self)
        return program_code(p), dict(p.constants)

    def save(self, f, **kwargs):
        """Save the module (its programs, parameters and buffers) to ``f`` (``jit.save``)."""
        from ._serialization import save
        save(self, f, **kwargs)

    def _save_for_lite_interpreter(self, f, **kwargs):
        """Save for the lite interpreter (``ember.jit.mobile._load_for_lite_interpreter``)."""
        from ._serialization import save_for_lite_interpreter
        save_for_lite_interpreter(self, f, **kwargs)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self.__dict__.get("_jit_methods", {})))

    def extra_repr(self):
        return f"original_name={self.original_name}"

    def _get_name(self):
        return self.original_name


class RecursiveScriptModule(ScriptModule):
    """What ``jit.script`` of a module and ``jit.load`` return (torch's name)."""


class TracedModule(ScriptModule):
    """A module made by ``jit.trace`` (torch's name)."""


class TopLevelTracedModule(TracedModule):
    """The module ``jit.trace`` returns for the module it was given (torch's name)."""


class ScriptFunction:
    """A compiled function (``torch.jit.ScriptFunction``): callable like the original, with
    ``graph``, ``code``, ``save``."""

    def __init__(self, method, qualified_name):
        self._method = method
        self.name = method.name
        self.qualified_name = qualified_name
        self.__name__ = method.name
        self.__qualname__ = qualified_name

    def __call__(self, *args, **kwargs):
        return self._method.run(None, _positional(self._method, args, kwargs))

    @property
    def graph(self):
        return ProgramGraph(self._method.program().graph_module)

    @property
    def inlined_graph(self):
        return self.graph

    @property
    def code(self):
        return _code(self._method, self.name, False)

    @property
    def schema(self):
        names = self._method.arg_names or []
        return f"{self.name}({', '.join(names)})"

    def graph_for(self, *args, **kwargs):
        return self.graph

    def save(self, f, **kwargs):
        from ._serialization import save
        save(self, f, **kwargs)

    def __repr__(self):
        return f"<ember.jit.ScriptFunction {self.qualified_name!r}>"
