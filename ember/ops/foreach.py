"""``torch._foreach_*``: an operator applied to each tensor of a list (optimizers written
against torch's multi-tensor API call them: pytorch-optimizer, timm, hand-written steps).

Each is a loop over the Tensor method of the same name, so autograd, overrides and dtype
promotion are those of the single-tensor operator. Out-of-place forms return a tuple; in-place
forms (``_foreach_add_``) update the tensors and return the list given, as torch's do.
The second operand may be a tensor list, a Python scalar, a list of scalars (one per tensor) or,
where torch's has the overload, a single 0-dim tensor.
"""
import numbers

from .._core.tensor import Tensor

_UNARY = ("abs acos asin atan ceil cos cosh erf erfc exp expm1 floor frac lgamma log log10 "
          "log1p log2 neg reciprocal round rsqrt sigmoid sign sin sinh sqrt tan tanh "
          "trunc").split()
# binary operators: (name, accepts alpha, accepts a single 0-dim tensor, method for scalars)
_BINARY = (("add", True, True, "add"), ("sub", True, False, "sub"), ("mul", False, True, "mul"),
           ("div", False, True, "div"), ("clamp_min", False, False, "clamp_min"),
           ("clamp_max", False, False, "clamp_max"), ("maximum", False, False, "clamp_min"),
           ("minimum", False, False, "clamp_max"), ("pow", False, False, "pow"))

__all__ = ["_foreach_zero_", "_foreach_clone", "_foreach_copy_", "_foreach_addcmul",
           "_foreach_addcmul_", "_foreach_addcdiv", "_foreach_addcdiv_", "_foreach_lerp",
           "_foreach_lerp_", "_foreach_norm", "_foreach_max"]


def _check(self, *others):
    if not isinstance(self, (list, tuple)) or not self:
        raise RuntimeError("Tensor list must have at least one tensor.")
    for t in self:
        if not isinstance(t, Tensor):
            raise TypeError(f"expected a list of Tensors, got an element of type "
                            f"{type(t).__name__}")
    for o in others:
        if isinstance(o, (list, tuple)) and o and isinstance(o[0], Tensor) and len(o) != len(self):
            raise RuntimeError(f"Tensor lists must have the same number of tensors, got "
                               f"{len(self)} and {len(o)}")


def _per_tensor(other, n, scalar_tensor, scalars_tensor=False):
    """``other`` as one operand per tensor: (operands, whether they are tensors). A tensor is
    the one operand of every tensor where torch's operator has that overload
    (``scalar_tensor``), a 1-D tensor of scalars where it takes one (``scalars_tensor``), and
    otherwise a 0-dim tensor is a scalar, as torch's argument parser reads it."""
    if isinstance(other, Tensor):
        if scalars_tensor:
            if other.dim() != 1 or other.numel() != n:
                raise RuntimeError(f"Expected length of scalars to match input of length {n} "
                                   f"but got {other.numel()} instead.")
            return other.tolist(), False
        if other.dim() != 0:
            raise RuntimeError(f"scalar tensor expected to be 0 dim but it has "
                               f"{other.dim()} dimensions and {other.numel()} elements.")
        return ([other] * n, True) if scalar_tensor else ([other.item()] * n, False)
    if isinstance(other, (list, tuple)):
        if any(isinstance(o, Tensor) for o in other):
            if not all(isinstance(o, Tensor) for o in other):
                raise TypeError("expected a list of Tensors or a list of scalars, got a mix")
            return list(other), True
        if len(other) != n:
            raise RuntimeError("Tensor list must have same number of elements as scalar list.")
        return list(other), False
    if isinstance(other, numbers.Number):
        return [other] * n, False
    raise TypeError(f"expected a Tensor list, a scalar or a scalar list, got "
                    f"{type(other).__name__}")


def _def_unary(name):
    def out_of_place(self):
        _check(self)
        return tuple(getattr(t, name)() for t in self)

    def in_place(self):
        _check(self)
        for t in self:
            getattr(t, name + "_")()
        return self

    out_of_place.__name__ = f"_foreach_{name}"
    in_place.__name__ = f"_foreach_{name}_"
    return out_of_place, in_place


def _def_binary(name, alpha_ok, scalar_tensor_ok, scalar_method):
    def _each(self, other, alpha, suffix):
        _check(self, other)
        ops, tensors = _per_tensor(other, len(self), scalar_tensor_ok)
        if alpha is not None and not tensors:
            raise TypeError(f"_foreach_{name}{suffix}(): alpha is only accepted with tensor "
                            f"operands, got {type(other).__name__}")
        method = name if tensors else scalar_method
        kw = {} if alpha is None else {"alpha": alpha}
        if suffix and not hasattr(Tensor, method + suffix):  # maximum_/minimum_: no method
            return [t.copy_(getattr(t, method)(o, **kw)) for t, o in zip(self, ops)]
        return [getattr(t, method + suffix)(o, **kw) for t, o in zip(self, ops)]

    if alpha_ok:
        def out_of_place(self, other, *, alpha=None):
            return tuple(_each(self, other, alpha, ""))

        def in_place(self, other, *, alpha=None):
            _each(self, other, alpha, "_")
            return self
    else:
        def out_of_place(self, other):
            if name == "pow" and isinstance(self, numbers.Number):  # pow(Scalar, Tensor[])
                _check(other)
                return tuple(self ** t for t in other)
            return tuple(_each(self, other, None, ""))

        def in_place(self, other):
            _each(self, other, None, "_")
            return self
    out_of_place.__name__ = f"_foreach_{name}"
    in_place.__name__ = f"_foreach_{name}_"
    return out_of_place, in_place


for _n in _UNARY:
    _f, _fi = _def_unary(_n)
    globals()[_f.__name__], globals()[_fi.__name__] = _f, _fi
    __all__ += [_f.__name__, _fi.__name__]
for _spec in _BINARY:
    _f, _fi = _def_binary(*_spec)
    globals()[_f.__name__], globals()[_fi.__name__] = _f, _fi
    __all__ += [_f.__name__, _fi.__name__]
del _n, _f, _fi, _spec


def _foreach_zero_(self):
    _check(self)
    for t in self:
        t.zero_()
    return self


def _foreach_clone(self, *, memory_format=None):
    _check(self)
    kw = {} if memory_format is None else {"memory_format": memory_format}
    return tuple(t.clone(**kw) for t in self)


def _foreach_copy_(self, src, non_blocking=False):
    _check(self, src)
    for t, s in zip(self, src):
        t.copy_(s, non_blocking=non_blocking)
    return self


def _pointwise3(name, self, tensor1, tensor2, value, suffix):
    _check(self, tensor1, tensor2)
    vals, tensors = _per_tensor(value, len(self), False, scalars_tensor=True)
    if tensors:
        raise TypeError(f"_foreach_{name}{suffix}(): value must be a scalar, a list of scalars "
                        f"or a 1-D tensor of scalars")
    return [getattr(t, name + suffix)(a, b, value=v)
            for t, a, b, v in zip(self, tensor1, tensor2, vals)]


def _foreach_addcmul(self, tensor1, tensor2, value=1):
    return tuple(_pointwise3("addcmul", self, tensor1, tensor2, value, ""))


def _foreach_addcmul_(self, tensor1, tensor2, value=1):
    _pointwise3("addcmul", self, tensor1, tensor2, value, "_")
    return self


def _foreach_addcdiv(self, tensor1, tensor2, value=1):
    return tuple(_pointwise3("addcdiv", self, tensor1, tensor2, value, ""))


def _foreach_addcdiv_(self, tensor1, tensor2, value=1):
    _pointwise3("addcdiv", self, tensor1, tensor2, value, "_")
    return self


def _lerp(self, tensors1, weight, suffix):
    _check(self, tensors1, weight)
    ws, _ = _per_tensor(weight, len(self), True)
    return [getattr(t, "lerp" + suffix)(e, w) for t, e, w in zip(self, tensors1, ws)]


def _foreach_lerp(self, tensors1, weight):
    return tuple(_lerp(self, tensors1, weight, ""))


def _foreach_lerp_(self, tensors1, weight):
    _lerp(self, tensors1, weight, "_")
    return self


def _foreach_norm(self, ord=2, dtype=None):
    """Each tensor's vector norm (of all its elements), as a 0-dim tensor."""
    _check(self)
    return tuple((t if dtype is None else t.to(dtype)).norm(ord) for t in self)


def _foreach_max(self):
    _check(self)
    return tuple(t.max() for t in self)

