"""Run existing PyTorch code on ember: ``import torch`` resolves to ember.

``ember.compat.install()`` adds an import hook so that ``torch`` and every
``torch.<sub>`` module resolve to ``ember`` and ``ember.<sub>`` (``torch.nn`` ->
``ember.nn``, ``torch.utils.data`` -> ``ember.utils.data``, ...).  ``python -m
ember.compat script.py [args]`` installs the hook and runs the script as
``__main__``.  Opt-in only: importing ember never changes what ``import torch``
means.

Limits: modules ember does not provide raise ImportError naming the torch module;
CUDA-specific calls need a registered 'cuda' backend; C++ extensions, TorchScript
and ``torch._C`` internals are not available.
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


def install():
    """Make ``import torch`` (and ``torch.*``) resolve to ember in this process."""
    real = sys.modules.get("torch")
    if real is not None and not getattr(real, "__name__", "").startswith("ember"):
        raise RuntimeError("ember.compat.install(): the real torch is already imported in this "
                           "process; install the shim before anything imports torch")
    if not is_installed():
        sys.meta_path.insert(0, _FINDER)
        from .._core import dtype as _dtype
        _dtype.REPR_PREFIX[0] = "torch."
        from .._dynamo import logs as _logs
        _logs.read_torch_logs(True)


def uninstall():
    """Remove the import hook and the torch aliases it created."""
    if is_installed():
        sys.meta_path.remove(_FINDER)
        from .._core import dtype as _dtype
        _dtype.REPR_PREFIX[0] = "ember."
        from .._dynamo import logs as _logs
        _logs.read_torch_logs(False)
    for name in [n for n in sys.modules if n == "torch" or n.startswith("torch.")]:
        if getattr(sys.modules[name], "__name__", "").startswith("ember"):
            del sys.modules[name]
