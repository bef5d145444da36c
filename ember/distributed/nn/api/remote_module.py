"""`RemoteModule`: an nn.Module created on a remote RPC worker and called through RPC."""
from ... import rpc
from ....nn.modules.module import Module

__all__ = ["RemoteModule"]

_UNSUPPORTED = ("parameters", "named_parameters", "buffers", "named_buffers", "children",
                "named_children", "modules", "named_modules", "register_buffer",
                "register_parameter", "add_module", "apply", "cuda", "cpu", "type", "float",
                "double", "half", "bfloat16", "to", "state_dict", "load_state_dict",
                "zero_grad", "requires_grad_", "share_memory", "register_forward_pre_hook",
                "register_forward_hook", "register_backward_hook",
                "register_full_backward_hook", "extra_repr")


def _parse(remote_device):
    parts = remote_device.split("/") if isinstance(remote_device, str) else []
    if len(parts) not in (1, 2) or not parts[0]:
        raise ValueError(f"Could not parse remote_device: {remote_device}. The valid format is "
                         f"'<workername>/<device>'")
    worker = parts[0]
    if worker.startswith("rank:"):
        worker = int(worker[5:])
    device = parts[1] if len(parts) == 2 else "cpu"
    return worker, device


def _create(module_cls, args, kwargs, device):
    return module_cls(*args, **kwargs).to(device)


def _forward(module_rref, args, kwargs):
    return module_rref.local_value()(*args, **kwargs)


def _param_rrefs(module_rref, recurse):
    return [rpc.RRef(p) for p in module_rref.local_value().parameters(recurse)]


class RemoteModule(Module):
    """A RemoteModule instance can only be created after RPC initialization.

    It creates a user-specified module on a specified remote node.  It behaves like a
    regular ``nn.Module`` except that the ``forward`` method is executed on the remote
    node; ``forward_async`` returns a Future instead.  Gradients flow back to the remote
    parameters through distributed autograd (train with `remote_parameters` and a
    ``DistributedOptimizer``).

    Args:
        remote_device (str): device on the destination worker, as
            ``"<workername>/<device>"`` (e.g. ``"trainer0/cpu"``) or ``"rank:<n>/<device>"``.
        module_cls (nn.Module): class of the module to be created remotely.
        args (Sequence, optional): args to be passed to ``module_cls``.
        kwargs (Dict, optional): kwargs to be passed to ``module_cls``.
    """

    def __init__(self, remote_device, module_cls, args=None, kwargs=None,
                 _module_interface_cls=None):
        super().__init__()
        worker, device = _parse(remote_device)
        self.on = rpc.get_worker_info(worker)
        self.device = device
        self.module_rref = rpc.remote(self.on, _create,
                                      args=(module_cls, tuple(args or ()), dict(kwargs or {}),
                                            device))
        self.module_rref._get_future().wait()

    def forward(self, *args, **kwargs):
        return rpc.rpc_sync(self.on, _forward, args=(self.module_rref, args, kwargs))

    def forward_async(self, *args, **kwargs):
        """Runs ``forward`` on the remote module and returns a Future of its output."""
        return rpc.rpc_async(self.on, _forward, args=(self.module_rref, args, kwargs))

    def remote_parameters(self, recurse=True):
        """Returns a list of RRefs to the remote module's parameters."""
        return rpc.rpc_sync(self.on, _param_rrefs, args=(self.module_rref, recurse))

    def get_module_rref(self):
        """Returns an RRef to the remote module."""
        return self.module_rref

    def __getstate__(self):
        raise RuntimeError("Cannot pickle RemoteModule in python pickler. RemoteModule can "
                           "only be pickled when using RPC")

    def __repr__(self):
        return f"RemoteModule(on={self.on.name}, device={self.device})"


def _unsupported(name):
    def method(self, *args, **kwargs):
        raise ValueError(f"Method ``{name}`` not supported for RemoteModule")
    method.__name__ = name
    return method


for _name in _UNSUPPORTED:
    setattr(RemoteModule, _name, _unsupported(_name))
del _name
