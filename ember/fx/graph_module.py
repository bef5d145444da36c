"""`GraphModule`: a Module whose forward is generated from a Graph.

It holds the submodules, parameters and buffers the graph references (copied
from the traced root), regenerates Python source on `recompile`, and pickles
as (state, graph): loading rebuilds the graph and regenerates the code, so a
GraphModule saved with ``ember.save`` loads back with ``weights_only=False``.
"""
import copy
import itertools
import linecache
import os

from .._core.tensor import Tensor
from ..nn import Module, Parameter
from ._namespace import ember_namespace
from .graph import Graph, _fetch_attr

__all__ = ["GraphModule", "reduce_graph_module"]

_eval_count = itertools.count()


def _exec_with_source(src, globals_):
    key = f"<eval_with_key>.{next(_eval_count)}"
    linecache.cache[key] = (len(src), None, src.splitlines(True), key)
    exec(compile(src, key, "exec"), globals_)


def _forward_from_src(src, globals_):
    g = dict(globals_)
    _exec_with_source(src, g)
    return g["forward"]


def _copy_attr(from_module, to_module, target):
    *prefix, field = target.split(".")
    for item in prefix:
        f = getattr(from_module, item)
        t = getattr(to_module, item, None)
        if f is t:
            return
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        from_module, to_module = f, t
    orig = getattr(from_module, field)
    if isinstance(orig, Tensor) and not isinstance(orig, Parameter) and \
            isinstance(from_module, Module) and field in from_module._buffers:
        to_module.register_buffer(field, orig,
                                  field not in from_module._non_persistent_buffers_set)
    else:
        setattr(to_module, field, orig)


def _assign_attr(obj, to_module, target):
    *prefix, field = target.split(".")
    for item in prefix:
        t = getattr(to_module, item, None)
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        to_module = t
    if isinstance(obj, Tensor) and not isinstance(obj, Parameter):
        to_module.register_buffer(field, obj)
    else:
        setattr(to_module, field, obj)


class GraphModule(Module):
    """A Module generated from a Graph: ``root`` supplies the attributes the graph's
    get_attr/call_module nodes reference (a Module, or a dict from qualified name to
    object); ``forward`` is Python code generated from ``graph``."""

    def __new__(cls, *args, **kwargs):
        # every instance gets its own class, so that recompile can set forward on it
        for t in cls.__mro__:
            if t.__name__ != "GraphModuleImpl":
                cls = t
                break

        class GraphModuleImpl(cls):
            pass
        return super().__new__(GraphModuleImpl)

    def __init__(self, root, graph, class_name="GraphModule"):
        super().__init__()
        type(self).__name__ = class_name
        type(self).__qualname__ = class_name
        if isinstance(root, Module):
            self.training = root.training
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    _copy_attr(root, self, node.target)
        elif isinstance(root, dict):
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    if node.target not in root:
                        raise RuntimeError(f"Node {node} referenced target {node.target} but "
                                           f"that target was not provided in ``root``!")
                    _assign_attr(root[node.target], self, node.target)
        else:
            raise RuntimeError("Unsupported type " + str(root) + " passed for root!")
        self.meta = {}
        self._tracer_cls = graph._tracer_cls
        self.graph = graph

    # ---- graph and code ----------------------------------------------------------------
    @property
    def graph(self):
        return self._graph

    @graph.setter
    def graph(self, g):
        if not isinstance(g, Graph):
            raise TypeError(f"expected a Graph, got {type(g).__name__}")
        self._graph = g
        g.owning_module = self
        self.recompile()

    @property
    def code(self):
        """The Python source of the generated forward."""
        return self._code

    def recompile(self):
        """Regenerate forward from the current graph (call after editing the graph)."""
        python_code = self._graph.python_code(root_module="self")
        self._code = python_code.src
        self._lineno_map = python_code._lineno_map
        self._import_block = python_code.imports
        type(self).forward = _forward_from_src(self._code, python_code.globals)
        return python_code

    def print_readable(self, print_output=True, include_stride=False, include_device=False,
                       colored=False, *, fast_sympy_print=False, expanded_def=False,
                       additional_meta=None):
        """The generated module as readable Python (class header, a verbose forward: values
        annotated with dtype and shape, runs of nodes headed by their source line)."""
        code = self._graph.python_code(root_module="self", verbose=True,
                                       include_stride=include_stride,
                                       include_device=include_device, colored=colored,
                                       expanded_def=expanded_def,
                                       additional_meta=additional_meta).src
        body = "\n".join("    " + ln if ln.strip() else ""
                         for ln in code.strip("\n").rstrip().splitlines())
        s = f"class {type(self).__name__}(ember.nn.Module):\n{body}\n"
        if print_output:
            print(s)
        return s

    def __str__(self):
        return "\n".join([super().__repr__(), "", "", self._code.strip("\n"), "",
                          "# To see more debug info, please use `graph_module.print_readable()`"])

    # ---- submodules -------------------------------------------------------------------
    def add_submodule(self, target, m):
        """Install module ``m`` at qualified name ``target`` (creating empty parents)."""
        *prefix, field = target.split(".")
        mod = self
        for item in prefix:
            sub = getattr(mod, item, None)
            if sub is None:
                sub = Module()
                mod.add_module(item, sub)
            if not isinstance(sub, Module):
                return False
            mod = sub
        mod.add_module(field, m)
        return True

    def delete_submodule(self, target):
        """Remove the submodule at ``target``; False if there is none."""
        *prefix, field = target.split(".")
        mod = self
        for item in prefix:
            mod = getattr(mod, item, None)
            if not isinstance(mod, Module):
                return False
        if not isinstance(getattr(mod, field, None), Module):
            return False
        delattr(mod, field)
        return True

    def delete_all_unused_submodules(self):
        """Delete submodules no call_module/get_attr node of the graph references."""
        used = set()
        for node in self.graph.nodes:
            if node.op not in ("call_module", "get_attr"):
                continue
            parts = node.target.split(".")
            for i in range(1, len(parts) + 1):
                used.add(".".join(parts[:i]))
            try:
                obj = _fetch_attr(self, node.target)
            except AttributeError:
                continue
            if isinstance(obj, Module):
                for name, _ in obj.named_modules():
                    if name:
                        used.add(f"{node.target}.{name}")
        for name in [n for n, _ in self.named_modules() if n and n not in used]:
            self.delete_submodule(name)

    # ---- copying, pickling, exporting ----------------------------------------------------
    def __deepcopy__(self, memo):
        res = type(self).__new__(type(self))
        memo[id(self)] = res
        fake = Module()
        fake.__dict__.update(copy.deepcopy(self.__dict__, memo))
        GraphModule.__init__(res, fake, fake.__dict__["_graph"], type(self).__name__)
        res.meta = fake.__dict__.get("meta", {})
        for k in ("_forward_hooks", "_forward_pre_hooks", "_state_dict_hooks",
                  "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks"):
            res.__dict__[k] = fake.__dict__[k]
        return res

    def __copy__(self):
        res = GraphModule(self, self.graph, type(self).__name__)
        res.meta = getattr(self, "meta", {})
        return res

    def __reduce__(self):
        body = {k: v for k, v in self.__dict__.items()
                if k not in ("_code", "_lineno_map", "_import_block")}
        return (_reduce_graph_module, (body, type(self).__name__))

    def to_folder(self, folder, module_name="FxModule"):
        """Write this module as importable Python: ``folder/module.py`` (the class),
        ``state_dict.pt`` and a ``.pt`` for each submodule without a constructor repr."""
        from ..serialization import save
        os.makedirs(folder, exist_ok=True)
        save(self.state_dict(), os.path.join(folder, "state_dict.pt"))
        code = self.recompile()
        if any(line.startswith("#") for line in code.imports.splitlines()):
            raise RuntimeError(f"cannot write {module_name}: the code uses globals that cannot "
                               f"be imported by name:\n{code.imports}")
        tab = " " * 4
        lines = ["import os", "import ember", code.imports, "", "",
                 f"_HERE = os.path.dirname(os.path.abspath(__file__))", "", "",
                 f"class {module_name}(ember.nn.Module):", f"{tab}def __init__(self):",
                 f"{tab * 2}super().__init__()"]
        for name, mod in self.named_children():
            lines.append(f"{tab * 2}self.{name} = {_module_expr(name, mod, folder)}")
        for name, buf in self._buffers.items():
            if buf is not None:
                lines.append(f"{tab * 2}self.register_buffer({name!r}, ember.empty("
                             f"{list(buf.shape)}, dtype={buf.dtype!r}))")
        for name, p in self._parameters.items():
            if p is not None:
                lines.append(f"{tab * 2}self.{name} = ember.nn.Parameter(ember.empty("
                             f"{list(p.shape)}, dtype={p.dtype!r}))")
        consts = {k: v for k, v in self.__dict__.items() if isinstance(v, Tensor)}
        if consts:
            save(consts, os.path.join(folder, "constants.pt"))
            lines.append(f"{tab * 2}for k, v in ember.load(os.path.join(_HERE, 'constants.pt'))"
                         f".items():")
            lines.append(f"{tab * 3}setattr(self, k, v)")
        lines.append(f"{tab * 2}self.load_state_dict(ember.load(os.path.join(_HERE, "
                     f"'state_dict.pt')))")
        if not self.training:
            lines.append(f"{tab * 2}self.eval()")
        lines.append("")
        lines.extend(tab + ln if ln.strip() else "" for ln in
                     self._code.strip("\n").rstrip().splitlines())
        with open(os.path.join(folder, "module.py"), "w") as f:
            f.write("\n".join(lines) + "\n")
        with open(os.path.join(folder, "__init__.py"), "w") as f:
            f.write(f"from .module import {module_name}\n")


def _module_expr(name, mod, folder):
    """Constructor text for an ember.nn module whose repr is a valid call, else a load."""
    ember = ember_namespace()
    cls = type(mod)
    r = repr(mod)
    if getattr(ember.nn, cls.__name__, None) is cls and "\n" not in r:
        try:
            eval(f"ember.nn.{r}", {"ember": ember})
            return f"ember.nn.{r}"
        except Exception:  # noqa: BLE001 - not a constructor call: pickle it instead
            pass
    from ..serialization import save
    save(mod, os.path.join(folder, f"{name}.pt"))
    return f"ember.load(os.path.join(_HERE, '{name}.pt'), weights_only=False)"


def _reduce_graph_module(body, class_name):
    fake = Module()
    fake.__dict__.update(body)
    gm = GraphModule(fake, body["_graph"], class_name)
    for k, v in body.items():
        if k not in gm.__dict__:
            gm.__dict__[k] = v
    gm.meta = body.get("meta", {})
    return gm


def reduce_graph_module(body, import_block):
    """Rebuild a pickled GraphModule from its ``__dict__`` ``body`` and generated code (the
    form torch pickles: ``body['_code']`` or ``body['code']``, run after ``import_block``):
    the code is traced again with every submodule kept as a call, so the graph is the one
    the code spells."""
    from .tracer import Tracer
    src = body.get("_code") or body["code"]
    forward = _forward_from_src(import_block + src, {})

    class CodeOnlyModule(Module):
        def __init__(self, body):
            super().__init__()
            self.__dict__ = body

    CodeOnlyModule.forward = forward

    class KeepModules(Tracer):
        def is_leaf_module(self, m, module_qualified_name):
            return True

    com = CodeOnlyModule(body)
    graph = KeepModules().trace(com, **body.get("_tracer_extras", {}))
    gm = GraphModule(com, graph, body.get("_graphmodule_cls_name", "GraphModule"))
    for k, v in body.items():
        if not hasattr(gm, k):
            setattr(gm, k, v)
    return gm
