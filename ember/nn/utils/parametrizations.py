"""Parametrization-based weight_norm, spectral_norm and orthogonal
(``nn.utils.parametrizations``)."""
from ...autograd.grad_mode import no_grad
from ...ops import mv
from ..modules.module import Module
from . import parametrize
from ._orthogonal import orthogonal  # noqa: F401
from .spectral_norm import _conv_transpose_dim, _normalize
from .weight_norm import _weight_norm, norm_except_dim

__all__ = ["weight_norm", "spectral_norm", "orthogonal"]


class _WeightNorm(Module):
    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module, name="weight", dim=0):
    """Apply weight normalization to a parameter in the given module (as a parametrization
    with originals ``original0`` = g and ``original1`` = v)."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def _load_legacy(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                     error_msgs):
        g, v = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g in state_dict and v in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v)
    module._register_load_state_dict_pre_hook(_load_legacy)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.dim()
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, "
                             f"{ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            mat = self._reshape_weight_to_matrix(weight)
            h, w = mat.shape
            with no_grad():
                u = _normalize(mat.new_empty((h,)).normal_(0, 1), eps)
                v = _normalize(mat.new_empty((w,)).normal_(0, 1), eps)
            self.register_buffer("_u", u)
            self.register_buffer("_v", v)
            self._power_method(mat, 15)

    def _reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            weight = weight.movedim(self.dim, 0)
        return weight.flatten(1)

    @no_grad()
    def _power_method(self, mat, n):
        for _ in range(n):
            self._u.copy_(_normalize(mv(mat, self._v), self.eps))
            self._v.copy_(_normalize(mv(mat.t(), self._u), self.eps))

    def forward(self, weight):
        if weight.dim() == 1:
            return weight / (weight * weight).sum().sqrt().clamp_min(self.eps)
        mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(mat, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = u.dot(mv(mat, v))
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Apply spectral normalization to a parameter in the given module (as a parametrization)."""
    weight = getattr(module, name, None)
    if weight is None:
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = _conv_transpose_dim(module)
    parametrize.register_parametrization(module, name,
                                         _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
