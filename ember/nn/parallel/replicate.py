"""replicate: copies of a module for data-parallel application (``torch.nn.parallel``)."""
import copy

__all__ = ["replicate"]


def replicate(network, devices, detach=False):
    """Returns one replica of ``network`` per device.

    On CPU the replicas are new module objects that share ``network``'s parameters and
    buffers, so gradients computed through any replica accumulate into the original
    parameters, as they do through torch's broadcast copies.  With ``detach=True`` the
    replicas' parameters are detached from autograd."""
    modules = list(network.modules())
    replicas = []
    for _ in devices:
        memo = {}
        for m in modules:
            r = copy.copy(m)
            r.__dict__ = dict(m.__dict__)
            r._parameters = dict(m._parameters)
            r._buffers = dict(m._buffers)
            r._modules = dict(m._modules)
            if detach:
                r._parameters = {k: (None if p is None else p.detach())
                                 for k, p in m._parameters.items()}
            memo[id(m)] = r
        for r in memo.values():
            r._modules = {k: (None if c is None else memo[id(c)]) for k, c in r._modules.items()}
        replicas.append(memo[id(network)])
    return replicas
