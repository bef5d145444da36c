"""Spectral normalisation by a forward pre-hook (the legacy ``nn.utils.spectral_norm``):
w = w_orig / sigma, sigma estimated by power iteration on the buffers ``u`` and ``v``."""
from ...autograd.grad_mode import no_grad
from ...ops import mv
from ..parameter import Parameter

__all__ = ["SpectralNorm", "spectral_norm", "remove_spectral_norm"]


def _normalize(x, eps):
    return x / (x * x).sum().sqrt().clamp_min(eps)


def _to_matrix(weight, dim):
    if dim != 0:
        weight = weight.permute(dim, *[d for d in range(weight.dim()) if d != dim])
    return weight.reshape((weight.shape[0], -1))


def _conv_transpose_dim(module):
    from ..modules import conv
    kinds = tuple(getattr(conv, n) for n in ("ConvTranspose1d", "ConvTranspose2d",
                                             "ConvTranspose3d") if hasattr(conv, n))
    return 1 if kinds and isinstance(module, kinds) else 0


class SpectralNorm:
    """The forward pre-hook that recomputes ``name`` from ``name_orig``, ``name_u`` and
    ``name_v`` (one power-iteration round per call in training mode)."""
    _version = 1

    def __init__(self, name="weight", n_power_iterations=1, dim=0, eps=1e-12):
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.name = name
        self.dim = dim
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def compute_weight(self, module, do_power_iteration):
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        mat = _to_matrix(weight, self.dim)
        if do_power_iteration:
            with no_grad():
                for _ in range(self.n_power_iterations):
                    v.copy_(_normalize(mv(mat.t(), u), self.eps))
                    u.copy_(_normalize(mv(mat, v), self.eps))
                u, v = u.clone(), v.clone()
        sigma = u.dot(mv(mat, v))
        return weight / sigma

    def remove(self, module):
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module, module.training))

    @staticmethod
    def apply(module, name, n_power_iterations, dim, eps):
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two spectral_norm hooks on the same "
                                   f"parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        with no_grad():
            mat = _to_matrix(weight, dim)
            h, w = mat.shape
            u = _normalize(weight.new_empty((h,)).normal_(0, 1), eps)
            v = _normalize(weight.new_empty((w,)).normal_(0, 1), eps)
        delattr(module, name)
        module.register_parameter(name + "_orig", weight)
        setattr(module, name, weight.detach())
        module.register_buffer(name + "_u", u)
        module.register_buffer(name + "_v", v)
        module.register_forward_pre_hook(fn)
        return fn


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Apply spectral normalization to a parameter in the given module."""
    if dim is None:
        dim = _conv_transpose_dim(module)
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module, name="weight"):
    """Remove the spectral normalization reparameterization from a module."""
    for k, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, SpectralNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"spectral_norm of '{name}' not found in {module}")
