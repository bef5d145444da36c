"""Pruning by masks (``torch.nn.utils.prune``).

Pruning parameter ``name`` of a module moves the parameter to ``name + "_orig"``, keeps
a buffer ``name + "_mask"`` of ones and zeros, and makes ``name`` a plain attribute
``mask * orig`` that a forward pre-hook (the pruning method itself) recomputes before
every call.  Pruning the same parameter again combines the masks in a
`PruningContainer`: a new method only sees the part the earlier ones kept (the
surviving entries for unstructured methods, the surviving channels for structured
ones).  `remove` makes the pruning permanent.  The random methods draw the same numbers
as torch's (``rand_like``/``rand`` of the same shapes, in the same order), so a seeded
program prunes the same entries.
"""
import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable

from ..._core.layout import contiguous_format
from ...ops import kthvalue, norm, ones_like, rand, rand_like, topk, zeros_like
from .convert_parameters import parameters_to_vector

__all__ = ["BasePruningMethod", "PruningContainer", "Identity", "RandomUnstructured",
           "L1Unstructured", "RandomStructured", "LnStructured", "CustomFromMask",
           "identity", "random_unstructured", "l1_unstructured", "random_structured",
           "ln_structured", "global_unstructured", "custom_from_mask", "remove",
           "is_pruned"]


def _pruning_hooks(module, name):
    """(key, hook) of the pruning hooks of ``module`` acting on ``name``."""
    return [(k, h) for k, h in module._forward_pre_hooks.items()
            if isinstance(h, BasePruningMethod) and h._tensor_name == name]


def _scores(scores, t, what):
    """The tensor a method ranks: ``scores`` (of ``t``'s shape), or ``t`` itself."""
    if scores is None:
        return t
    if scores.shape != t.shape:
        raise AssertionError(f"importance_scores should have the same shape as {what}, got "
                             f"{scores.shape} vs {t.shape}")
    return scores


class BasePruningMethod(ABC):
    """A way of pruning a tensor: subclasses give ``compute_mask`` and ``PRUNING_TYPE``
    ('unstructured', 'structured' with a ``dim`` attribute, or 'global')."""

    _tensor_name = None

    def __call__(self, module, inputs):
        # the forward pre-hook: refresh the pruned tensor from its original and mask
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t, default_mask):
        """The mask for ``t``, combining this method's pruning with ``default_mask``."""

    def apply_mask(self, module):
        """``mask * orig`` for the pruned parameter of ``module``."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned")
        orig = getattr(module, self._tensor_name + "_orig")
        mask = getattr(module, self._tensor_name + "_mask")
        return mask.to(dtype=orig.dtype) * orig

    @classmethod
    def apply(cls, module, name, *args, importance_scores=None, **kwargs):
        """Prunes parameter ``name`` of ``module`` with ``cls(*args, **kwargs)``, combined
        with any pruning already applied to it; returns the method (or the container)."""
        previous = _pruning_hooks(module, name)
        if len(previous) > 1:
            raise AssertionError(
                f"Avoid adding multiple pruning hooks to the same tensor {name} of module "
                f"{module}. Use a PruningContainer.")
        method = cls(*args, **kwargs)
        method._tensor_name = name
        if previous:
            key, old = previous[0]
            del module._forward_pre_hooks[key]
            if not isinstance(old, PruningContainer):
                old = PruningContainer(old)
            old.add_pruning_method(method)
            method = old
        orig = getattr(module, name)
        importance_scores = _scores(importance_scores, orig,
                                    f"parameter {name} of {module}")
        first = not isinstance(method, PruningContainer)
        if first:
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone(
                memory_format=contiguous_format)
        try:
            module.register_buffer(name + "_mask",
                                   method.compute_mask(importance_scores, default_mask))
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            if first:   # put the parameter back as it was
                module.register_parameter(name, module._parameters.pop(name + "_orig"))
            raise
        return method

    def prune(self, t, default_mask=None, importance_scores=None):
        """``t`` times this method's mask (computed on ``importance_scores`` if given)."""
        importance_scores = _scores(importance_scores, t, "tensor t")
        if default_mask is None:
            default_mask = ones_like(t)
        return t * self.compute_mask(importance_scores, default_mask=default_mask)

    def remove(self, module):
        """Makes the pruning permanent: ``name`` becomes a parameter again holding the
        pruned values, and ``name_orig``/``name_mask`` go."""
        if self._tensor_name is None:
            raise AssertionError(
                f"Module {module} has to be pruned before pruning can be removed")
        name = self._tensor_name
        pruned = self.apply_mask(module)
        if hasattr(module, name):
            delattr(module, name)
        orig = module._parameters.pop(name + "_orig")
        orig.data = pruned.data
        del module._buffers[name + "_mask"]
        setattr(module, name, orig)


def _keep_slice(method, t, mask):
    """The index of ``t`` that ``method`` prunes within, given the mask so far."""
    kind = method.PRUNING_TYPE
    if kind == "unstructured":
        return mask == 1
    if kind == "global":
        return (slice(None),) * t.dim()
    if kind != "structured":
        raise ValueError(f"Unrecognized PRUNING_TYPE {kind}")
    if not hasattr(method, "dim"):
        raise AttributeError('Pruning methods of PRUNING_TYPE "structured" need to have the '
                             'attribute `dim` defined.')
    nd = t.dim()
    dim = method.dim + nd if method.dim < 0 else method.dim
    if dim < 0:
        raise IndexError(f"Index is out of bounds for tensor with dimensions {nd}")
    alive = mask.sum(dim=[d for d in range(nd) if d != dim]) != 0
    return (slice(None),) * dim + (alive,)


class PruningContainer(BasePruningMethod):
    """The successive pruning methods applied to one parameter; its mask is the last
    method's pruning of what the earlier masks kept."""

    def __init__(self, *args):
        self._pruning_methods = ()
        if len(args) == 1 and isinstance(args[0], BasePruningMethod):
            self._tensor_name = args[0]._tensor_name
        for method in args:
            self.add_pruning_method(method)

    def add_pruning_method(self, method):
        """Appends ``method`` (which must act on the same parameter)."""
        if method is not None and not isinstance(method, BasePruningMethod):
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and method._tensor_name != self._tensor_name:
            raise ValueError(
                f"Can only add pruning methods acting on the parameter named "
                f"'{self._tensor_name}' to PruningContainer {self}. Found "
                f"'{method._tensor_name}'")
        self._pruning_methods += (method,)

    def __len__(self):
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t, default_mask):
        method = self._pruning_methods[-1]
        where = _keep_slice(method, t, default_mask)
        new_mask = default_mask.to(dtype=t.dtype)
        part = method.compute_mask(t[where], default_mask=default_mask[where])
        new_mask[where] = part.to(dtype=new_mask.dtype)
        return new_mask


def _check_amount(amount):
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if amount < 0 if isinstance(amount, numbers.Integral) else not 0.0 <= float(amount) <= 1.0:
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or "
                         f"a non-negative integer")


def _count(amount, size):
    """How many of ``size`` entries (or channels) ``amount`` prunes."""
    n = amount if isinstance(amount, numbers.Integral) else round(amount * size)
    if n > size:
        raise ValueError(f"amount={amount} should be smaller than the number of parameters "
                         f"to prune={size}")
    return n


def _check_structured(t, dim):
    if t.dim() <= 1:
        raise ValueError(f"Structured pruning can only be applied to multidimensional "
                         f"tensors. Found tensor of shape {t.shape} with {t.dim()} dims")
    if dim >= t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size {t.shape}")


def _channel_mask(t, dim, channels):
    """Ones on the ``channels`` of ``t`` along ``dim`` (an index tensor or a bool mask)."""
    mask = zeros_like(t)
    mask[(slice(None),) * (dim % t.dim()) + (channels,)] = 1
    return mask


class Identity(BasePruningMethod):
    """Prunes nothing: the mask is all ones."""
    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        return default_mask

    @classmethod
    def apply(cls, module, name):
        return super().apply(module, name)


class _Unstructured(BasePruningMethod):
    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        _check_amount(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        n = _count(self.amount, t.nelement())
        mask = default_mask.clone(memory_format=contiguous_format)
        if n:
            mask.view(-1)[self._lowest(t, n)] = 0
        return mask


class RandomUnstructured(_Unstructured):
    """Prunes ``amount`` (a fraction or a count) of the entries, chosen at random."""

    @staticmethod
    def _lowest(t, n):
        return topk(rand_like(t).view(-1), k=n).indices

    @classmethod
    def apply(cls, module, name, amount):
        return super().apply(module, name, amount=amount)


class L1Unstructured(_Unstructured):
    """Prunes the ``amount`` entries of smallest magnitude."""

    @staticmethod
    def _lowest(t, n):
        return topk(t.abs().view(-1), k=n, largest=False).indices

    @classmethod
    def apply(cls, module, name, amount, importance_scores=None):
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class _Structured(BasePruningMethod):
    """Prunes ``amount`` whole channels along ``dim``; subclasses pick the kept ones."""
    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim=-1):
        _check_amount(amount)
        self.amount = amount
        self.dim = dim

    def compute_mask(self, t, default_mask):
        _check_structured(t, self.dim)
        size = t.shape[self.dim]
        n = _count(self.amount, size)
        kept = self._kept(t, size, n)
        if n == 0:
            return default_mask
        mask = _channel_mask(t, self.dim, kept)
        mask *= default_mask.to(dtype=mask.dtype)
        return mask


class RandomStructured(_Structured):
    """Prunes ``amount`` of the channels along ``dim``, chosen at random."""

    def _kept(self, t, size, n):
        if n == 0:      # torch draws nothing then
            return None
        prob = rand(size)
        return prob > kthvalue(prob, k=n).values

    @classmethod
    def apply(cls, module, name, amount, dim=-1):
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(_Structured):
    """Prunes the ``amount`` channels along ``dim`` of smallest ``n``-norm."""

    def __init__(self, amount, n, dim=-1):
        super().__init__(amount, dim)
        self.n = n

    def _kept(self, t, size, n):
        d = self.dim % t.dim()
        norms = norm(t, p=self.n, dim=[i for i in range(t.dim()) if i != d])
        return topk(norms, k=size - n, largest=True).indices

    @classmethod
    def apply(cls, module, name, amount, n, dim, importance_scores=None):
        return super().apply(module, name, amount=amount, n=n, dim=dim,
                             importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prunes where a given mask is zero."""
    PRUNING_TYPE = "global"

    def __init__(self, mask):
        self.mask = mask

    def compute_mask(self, t, default_mask):
        if default_mask.shape != self.mask.shape:
            raise AssertionError(f"default_mask shape {default_mask.shape} must match "
                                 f"self.mask shape {self.mask.shape}")
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module, name, mask):
        return super().apply(module, name, mask=mask)


def identity(module, name):
    """Applies a mask of ones to parameter ``name`` of ``module`` (the pruning
    reparametrization without pruning anything); returns the module."""
    Identity.apply(module, name)
    return module


def random_unstructured(module, name, amount):
    """Prunes ``amount`` random entries of parameter ``name``; returns the module."""
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module, name, amount, importance_scores=None):
    """Prunes the ``amount`` smallest-magnitude entries (of ``importance_scores`` if
    given) of parameter ``name``; returns the module."""
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module, name, amount, dim):
    """Prunes ``amount`` random channels along ``dim``; returns the module."""
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module, name, amount, n, dim, importance_scores=None):
    """Prunes the ``amount`` channels along ``dim`` of smallest ``n``-norm; returns the
    module."""
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def custom_from_mask(module, name, mask):
    """Prunes parameter ``name`` where ``mask`` is zero; returns the module."""
    CustomFromMask.apply(module, name, mask)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs):
    """Prunes the ``(module, name)`` parameters together: an unstructured
    ``pruning_method(**kwargs)`` ranks all their entries (or their
    ``importance_scores[(module, name)]``) at once, and each gets its share of the mask."""
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    if importance_scores is None:
        importance_scores = {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    parameters = list(parameters)
    scores = parameters_to_vector([importance_scores.get((m, n), getattr(m, n))
                                   for m, n in parameters])
    masks = parameters_to_vector([getattr(m, n + "_mask") if hasattr(m, n + "_mask")
                                  else ones_like(getattr(m, n)) for m, n in parameters])
    method = pruning_method(**kwargs)
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError(f'Only "unstructured" PRUNING_TYPE supported for the '
                        f'`pruning_method`. Found method {pruning_method} of type '
                        f'{method.PRUNING_TYPE}')
    method._tensor_name = "temp"
    container = PruningContainer()
    container._tensor_name = "temp"
    container.add_pruning_method(method)
    final = container.compute_mask(scores, masks)
    start = 0
    for module, name in parameters:
        p = getattr(module, name)
        custom_from_mask(module, name, mask=final[start:start + p.numel()].view_as(p))
        start += p.numel()


def remove(module, name):
    """Makes the pruning of parameter ``name`` permanent (see
    `BasePruningMethod.remove`); returns the module."""
    for key, hook in _pruning_hooks(module, name):
        hook.remove(module)
        del module._forward_pre_hooks[key]
        return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before "
                     f"pruning can be removed")


def is_pruned(module):
    """Whether any submodule of ``module`` carries a pruning hook."""
    return any(isinstance(h, BasePruningMethod)
               for _, m in module.named_modules() for h in m._forward_pre_hooks.values())
