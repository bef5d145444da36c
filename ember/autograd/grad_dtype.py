"""``Tensor.grad_dtype``: the dtype a leaf's ``.grad`` must have (torch 2.9+).

By default it is the tensor's dtype, as it always was; a leaf may set another dtype (the
engine casts incoming gradients to it) or None (any gradient dtype is kept).  Assigning
``.grad`` checks it with torch's message."""
from .._core import dtype as _dt
from .._core.tensor import Tensor
from ..ops._helpers import cpp_name, type_name

__all__ = ["leaf_grad_dtype"]

_DEFAULT = object()  # not set: the tensor's own dtype


def leaf_grad_dtype(t):
    """The dtype gradients accumulated into leaf ``t`` take (None: their own)."""
    d = t.__dict__.get("_grad_dtype", _DEFAULT)
    return t.dtype if d is _DEFAULT else d


def _get(self):
    if self.grad_fn is not None:
        raise RuntimeError("grad_dtype can only be accessed on leaf tensors.")
    return leaf_grad_dtype(self)


def _set(self, value):
    if self.grad_fn is not None:
        raise RuntimeError("grad_dtype can only be set on leaf tensors.")
    if value is not None and not isinstance(value, _dt.dtype):
        raise RuntimeError(f"grad_dtype must be a torch.dtype or None, but got "
                           f"{type(value).__name__}")
    self.__dict__["_grad_dtype"] = value


_PLAIN_GRAD = Tensor.grad


def _set_grad(self, value):
    explicit = "_grad_dtype" in self.__dict__
    if isinstance(value, Tensor) and value.shape == self.shape:
        want = leaf_grad_dtype(self)
        if want is not None and value.dtype != want:
            raise RuntimeError(
                f"attempting to assign a gradient with dtype '{cpp_name(value.dtype)}' to a "
                f"tensor with grad_dtype '{type_name(want)}'. The gradient must match the "
                f"tensor's grad_dtype (defaults to the tensor's dtype). You can set the tensor's "
                f"grad_dtype attribute with a specific dtype, or None to allow any dtype. Set "
                f"grad_dtype with caution. Diverging the dtypes of a tensor and its gradient may "
                f"break downstream systems that assume they match.")
        if explicit:  # the plain setter refuses a dtype other than the tensor's
            self._grad = value
            return
    _PLAIN_GRAD.fset(self, value)


Tensor.grad_dtype = property(_get, _set, doc=__doc__)
Tensor.grad = property(_PLAIN_GRAD.fget, _set_grad, doc=_PLAIN_GRAD.__doc__)
