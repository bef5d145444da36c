"""Run existing PyTorch code on ember: ``import torch`` resolves to ember.

``ember.compat.install()`` adds an import hook so that ``torch`` and every
``torch.<sub>`` module resolve to ``ember`` and ``ember.<sub>`` (``torch.nn`` ->
``ember.nn``, ``torch.utils.data`` -> ``ember.utils.data``, ...).  ``python -m
ember.compat script.py [args]`` installs the hook and runs the script as
``__main__``.  Opt-in only: importing ember never changes what ``import torch``
means.

While installed, the module reports ``torch.__name__ == "torch"``, as libraries that check
their framework by name expect (Pyro's patches assert it); its submodules keep their
names (``torch.nn.__name__`` is "ember.nn"), and uninstall() restores the name.  ``torch._C`` is ``ember.compat._C``: the few
``torch._C`` functions such libraries call as plain Python.

Limits: modules ember does not provide raise ImportError naming the torch module;
CUDA-specific calls need a registered 'cuda' backend; C++ extensions, TorchScript
and the rest of ``torch._C`` are not available.
"""
import importlib
import importlib.abc
import importlib.util
import sys

__all__ = ["install", "uninstall", "is_installed"]

_ALIASES = {
    "torch.nn.modules": "ember.nn.modules",
    "torch.utils.data.dataloader": "ember.utils.data.dataloader",
    "torch.utils.data.dataset": "ember.utils.data.dataset",
    "torch.utils.data.sampler": "ember.utils.data.sampler",
    "torch.random": "ember.random",
    "torch._C": "ember.compat._C",
}


# functorch (installed beside torch, importing torch internals): its public names are
# ember's function transforms and higher-order control flow
_FUNCTORCH = {
    "functorch": "ember.func",
    "functorch.experimental": "ember._higher_order_ops",
    "functorch.experimental.control_flow": "ember._higher_order_ops",
}


def _target(fullname):
    if fullname in _ALIASES:
        return _ALIASES[fullname]
    if fullname in _FUNCTORCH:
        return _FUNCTORCH[fullname]
    return "ember" + fullname[len("torch"):]


class _Loader(importlib.abc.Loader):
    def __init__(self, module):
        self.module = module

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        pass


class _TorchToEmber(importlib.abc.MetaPathFinder):
    """Resolves ``torch`` and ``torch.*`` imports to the matching ember modules."""

    def find_spec(self, fullname, path, target=None):
        if fullname != "torch" and not fullname.startswith("torch.") and \
                fullname not in _FUNCTORCH:
            return None
        name = _target(fullname)
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name is not None and name.startswith(e.name):
                raise ModuleNotFoundError(
                    f"ember.compat: '{fullname}' has no ember equivalent ({name} does not "
                    f"exist)", name=fullname) from None
            raise
        return importlib.util.spec_from_loader(fullname, _Loader(module))


_FINDER = _TorchToEmber()


def is_installed():
    return _FINDER in sys.meta_path


def _is_ember(module):
    """Whether ``module`` is one of ember's (the top module is named torch while the shim
    is installed; an import as ``torch.*`` gives a module the alias's ``__spec__``)."""
    return module is sys.modules.get("ember") or \
        getattr(module, "__name__", "").startswith("ember")


def install():
    """Make ``import torch`` (and ``torch.*``) resolve to ember in this process."""
    real = sys.modules.get("torch")
    if real is not None and not _is_ember(real):
        raise RuntimeError("ember.compat.install(): the real torch is already imported in this "
                           "process; install the shim before anything imports torch")
    if not is_installed():
        sys.meta_path.insert(0, _FINDER)
        from .._core import dtype as _dtype
        _dtype.REPR_PREFIX[0] = "torch."
        from .._dynamo import logs as _logs
        _logs.read_torch_logs(True)
        from . import _C
        top = sys.modules["ember"]
        top.__name__ = "torch"
        top._C = _C


def uninstall():
    """Remove the import hook and the torch aliases it created."""
    if is_installed():
        sys.meta_path.remove(_FINDER)
        from .._core import dtype as _dtype
        _dtype.REPR_PREFIX[0] = "ember."
        from .._dynamo import logs as _logs
        _logs.read_torch_logs(False)
        top = sys.modules["ember"]
        top.__name__ = "ember"
        top.__dict__.pop("_C", None)
    for name in [n for n in sys.modules if n == "torch" or n.startswith("torch.")]:
        if _is_ember(sys.modules[name]):
            del sys.modules[name]
