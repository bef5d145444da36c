"""LazyModuleMixin: modules whose parameter shapes are inferred from their first input
(``torch.nn.modules.lazy``)."""
from ...autograd import no_grad
from ..parameter import UninitializedParameter, is_lazy

__all__ = ["LazyModuleMixin"]


def uninitialized(dtype=None):
    """A fresh ``UninitializedParameter`` that will materialize as ``dtype``."""
    p = UninitializedParameter()  # its dtype= trips on Parameter.__init__'s signature
    p._lazy_dtype = dtype
    return p


class LazyModuleMixin:
    """A mixin for modules that lazily initialize parameters ("lazy modules").

    Their parameters start as ``UninitializedParameter``; a forward pre-hook calls
    ``initialize_parameters(*args, **kwargs)`` with the first input, then removes itself
    (and the state-dict load hook) and turns the module into ``cls_to_become``.  Loading a
    state dict into a lazy module materializes the parameters it provides.
    """

    cls_to_become = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._load_hook = self._register_load_state_dict_pre_hook(self._lazy_load_hook)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters,
                                                               with_kwargs=True)

    def _tensors(self):
        return list(self._parameters.items()) + list(self._buffers.items())

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        # uninitialized parameters are saved as they are (they have no data to detach)
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars or is_lazy(p) else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars or is_lazy(b) else b.detach()

    def _lazy_load_hook(self, state_dict, prefix, local_metadata, strict, missing_keys,
                        unexpected_keys, error_msgs):
        for name, t in self._tensors():
            key = prefix + name
            if t is not None and is_lazy(t) and key in state_dict and \
                    not is_lazy(state_dict[key]):
                with no_grad():
                    t.materialize(state_dict[key].shape)

    def initialize_parameters(self, *args, **kwargs):
        """Initialize parameters according to the input batch properties."""
        raise NotImplementedError(f"initialize_parameters is not implemented for "
                                  f"{self.__class__.__name__}")

    def has_uninitialized_params(self):
        """Whether the module still has uninitialized parameters or buffers."""
        return any(t is not None and is_lazy(t) for _, t in self._tensors())

    def _infer_parameters(self, module, args, kwargs=None):
        module.initialize_parameters(*args, **(kwargs or {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {self._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        module._load_hook.remove()
        delattr(module, "_initialize_hook")
        delattr(module, "_load_hook")
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become

    def _replicate_for_data_parallel(self):
        raise RuntimeError("Modules with uninitialized parameters can't be used with "
                           "`DataParallel`. Run a dummy forward pass to correctly initialize "
                           "the modules")
