"""ember's layering, checked on the source: no module imports a layer above its own.

Every module under ``ember/`` is parsed with ``ast`` and every import statement is read --
at module level or inside a function, absolute or relative (resolved against the module's
package), ``from pkg import name`` counting as an import of ``pkg.name`` when that is a
module and of ``pkg`` otherwise.  A module may import its own layer and the layers below;
an import of a higher layer fails, naming the file and line.  There is no exceptions list:
fix the import (move the code down, or let the higher layer register itself below).

Ranks, bottom up (DESIGN.md, "Layers"); a dotted name's rank is that of its longest listed
prefix, and every top-level entry of ``ember/`` must be listed:

  0  _core         dtypes, devices, Tensor, dispatch, RNG
  1  ops           every operator, defined once (including linalg/fft/special/nn kernels)
  2  autograd      engine, Function, grad modes, forward AD, functional, its profiler
  3  the libraries on autograd: nn, optim, utils.data, utils.checkpoint,
     utils.safetensors, amp, cuda (device queries and cuda.amp), cpu, random, fft, linalg,
     special, sparse, distributions, serialization (save/load: knows nn.Parameter),
     storage, types, futures, backends, accelerator, testing, profiler, version, torch_version,
     functional, quasirandom, _lowrank, library (custom operators and ember.ops.aten's table, on
     nn.functional), overrides
     (torch.overrides: function modes, listings of nn.functional/linalg/fft/special),
     _subclasses (torch._subclasses.fake_tensor.is_fake), _tensor_str (torch._tensor_str)
  4  func          vmap, grad, jacrev, jacfwd, functional_call
  5  fx            tracing, Graph, GraphModule, passes
  6  the programs on top: _dynamo, _inductor, export, ao, distributed, utils.benchmark
     (times whole programs), compat, hub, multiprocessing (spawns DDP workers), _logging
     (set_logs over _dynamo's logs), and ``ember.utils`` itself (its ``__init__`` gathers
     utils.benchmark)
  7  ``ember`` (ember/__init__.py, with ``_toplevel_extras``, ``_aten_nn``, ``_sym`` and ``__config__``, the top-level
     switches, aliases and ATen entry points it re-exports): the public namespace; no module inside the package
     imports it -- each imports the lower module that defines what it needs.
"""
import ast
import os

import pytest

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "ember")

RANKS = {
    "_core": 0,
    "ops": 1,
    "autograd": 2,
    "nn": 3, "optim": 3, "utils.data": 3, "utils.checkpoint": 3, "utils.safetensors": 3,
    "amp": 3, "cuda": 3, "cpu": 3, "random": 3, "fft": 3, "linalg": 3, "special": 3,
    "sparse": 3,
    "distributions": 3, "serialization": 3, "storage": 3, "types": 3, "futures": 3,
    "backends": 3, "accelerator": 3, "testing": 3, "profiler": 3, "version": 3,
    "torch_version": 3, "functional": 3, "quasirandom": 3, "_lowrank": 3, "library": 3,
    "overrides": 3, "utils._selective_checkpoint": 3, "_subclasses": 3, "_tensor_str": 3,
    "func": 4,
    "fx": 5,
    "_higher_order_ops": 6,
    "_dynamo": 6, "_inductor": 6, "compiler": 6, "export": 6, "onnx": 6, "ao": 6, "distributed": 6,
    "utils.benchmark": 6, "compat": 6, "hub": 6, "multiprocessing": 6, "utils": 6, "jit": 6, "_logging": 6,
    "": 7, "_toplevel_extras": 7, "__config__": 7, "_aten_nn": 7, "_sym": 7, "_default_tensor_type": 7,
}


def rank(module):
    """The layer of dotted module name ``module`` (``ember.x.y``)."""
    parts = module.split(".")[1:]
    for n in range(len(parts), -1, -1):
        key = ".".join(parts[:n])
        if key in RANKS:
            return RANKS[key], key
    raise KeyError(module)


def _modules():
    """(dotted name, is a package, path) of every module under ember/."""
    for dirpath, dirnames, filenames in os.walk(ROOT):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for f in sorted(filenames):
            if f.endswith(".py"):
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, os.path.dirname(ROOT))[:-3].replace(os.sep, ".")
                package = f == "__init__.py"
                yield (rel[:-len(".__init__")] if package else rel), package, path


def _is_module(name):
    path = os.path.join(os.path.dirname(ROOT), *name.split("."))
    return os.path.isdir(path) or os.path.isfile(path + ".py")


def imports(module, package, source):
    """(line, imported module) of every ember import in ``source``, relative ones resolved."""
    here = module if package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = here.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1])
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                yield node.lineno, sub if alias.name != "*" and _is_module(sub) else base


def violations(top):
    """'file:line: a (rank) imports b (rank)' for every upward import of ``ember.<top>``."""
    found = set()
    for module, package, path in _modules():
        if module.split(".")[:2] != ["ember", top] and not (top == "" and module == "ember"):
            continue
        mine, _ = rank(module)
        with open(path, encoding="utf-8") as f:
            source = f.read()
        for line, target in imports(module, package, source):
            if target != "ember" and not target.startswith("ember."):
                continue
            theirs, key = rank(target)
            if theirs > mine:
                found.add(f"{os.path.relpath(path, os.path.dirname(ROOT))}:{line}: "
                             f"{module} (layer {mine}) imports {target} (layer {theirs}, "
                             f"{key or 'ember'})")
    return sorted(found)


def _top_level():
    names = []
    for entry in sorted(os.listdir(ROOT)):
        if entry == "__pycache__" or entry.startswith("."):
            continue
        if entry.endswith(".py"):
            names.append(entry[:-3])
        elif os.path.isfile(os.path.join(ROOT, entry, "__init__.py")):
            names.append(entry)
    return names


def test_every_top_level_entry_has_a_layer():
    missing = [n for n in _top_level() if n != "__init__" and n not in RANKS]
    assert not missing, f"give these a layer in RANKS (and the docstring): {missing}"


@pytest.mark.parametrize("top", [n if n != "__init__" else "" for n in _top_level()])
def test_no_upward_imports(top):
    found = violations(top)
    assert not found, "imports of a higher layer:\n" + "\n".join(found)


def test_checker_sees_lazy_relative_and_from_imports():
    # the checker itself: a lazy relative import of a higher layer, a from-import of a
    # module and of a plain name, and an absolute import are all resolved and ranked
    src = ("def f():\n"
           "    from ..nn import functional\n"
           "    from .. import full\n"
           "import ember.func\n")
    got = sorted(imports("ember.ops.pointwise", False, src))
    assert got == [(2, "ember.nn.functional"), (3, "ember"), (4, "ember.func")]
    assert [rank(t)[0] for _, t in got] == [3, 7, 4]
    assert rank("ember.utils.data.dataloader") == (3, "utils.data")
    assert rank("ember.utils.benchmark.timer") == (6, "utils.benchmark")
