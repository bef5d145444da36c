"""``torch.utils.backend_registration``: naming the third-party ("PrivateUse1") device and
generating its convenience methods (``tensor.foo()``, ``tensor.is_foo``, ``module.foo()``).

In ember a third-party device is a backend registered with
``ember._core.device.register_backend(name, xp, array_type, ...)`` under its own name;
`rename_privateuse1_backend` records that name as the one the generated methods use.
"""
from .._core.device import device as _device
from .._core.tensor import Tensor

__all__ = ["rename_privateuse1_backend", "generate_methods_for_privateuse1_backend"]

_NAME = ["privateuse1"]


def rename_privateuse1_backend(backend_name):
    """Rename the privateuse1 backend device to ``backend_name`` (once per process)."""
    if _NAME[0] != "privateuse1" and _NAME[0] != backend_name:
        raise RuntimeError(f"torch.register_privateuse1_backend() has already been set! Current "
                           f"backend: {_NAME[0]}")
    _NAME[0] = backend_name


def _index(name, device):
    if device is None:
        return 0
    if isinstance(device, str):
        device = _device(device)
    if isinstance(device, _device):
        if device.type != name:
            raise RuntimeError(f"Invalid device, must be {name} device")
        return 0 if device.index is None else device.index
    return int(device)


def _check_once(owner, attr):
    if hasattr(owner, attr):
        raise RuntimeError(f"The custom device module of {owner} has already been registered "
                           f"with {attr}")


def _tensor_methods(name):
    def is_custom(self):
        return self.device.type == name

    def to_custom(self, device=None, non_blocking=False, **kwargs):
        """Perform Tensor device conversion to the custom device (a copy unless ``self``
        is already there)."""
        return self.to(device=_device(name, _index(name, device)), non_blocking=non_blocking,
                       **kwargs)
    _check_once(Tensor, f"is_{name}")
    setattr(Tensor, f"is_{name}", property(is_custom))
    _check_once(Tensor, name)
    to_custom.__name__ = name
    setattr(Tensor, name, to_custom)


def _module_methods(name):
    from ..nn.modules.module import Module

    def to_custom(self, device=None):
        """Move all model parameters and buffers to the custom device."""
        target = _device(name, _index(name, device))
        return self._apply(lambda t: t.to(target))
    _check_once(Module, name)
    to_custom.__name__ = name
    setattr(Module, name, to_custom)


def _packed_sequence_methods(name):
    from ..nn.utils.rnn import PackedSequence

    def is_custom(self):
        return self.data.device.type == name

    def to_custom(self, *args, **kwargs):
        """Move the packed sequence's data to the custom device."""
        return self.to(_device(name, _index(name, args[0] if args else kwargs.get("device"))))
    _check_once(PackedSequence, f"is_{name}")
    setattr(PackedSequence, f"is_{name}", property(is_custom))
    _check_once(PackedSequence, name)
    to_custom.__name__ = name
    setattr(PackedSequence, name, to_custom)


def _storage_methods(name, unsupported_dtype):
    from .._core.storage import TypedStorage, UntypedStorage
    refused = tuple(unsupported_dtype or ())

    def is_custom(self):
        return self.device.type == name

    def to_custom(self, device=None, non_blocking=False):
        """Copy the storage to the custom device (``self`` if it is there)."""
        dtype = getattr(self, "dtype", None)
        if dtype is not None and dtype in refused:
            raise RuntimeError(f"Cannot create {name} storage as {dtype} dtype is not supported "
                               f"by this backend")
        return self.to(device=_device(name, _index(name, device)), non_blocking=non_blocking)
    for cls in (UntypedStorage, TypedStorage):
        _check_once(cls, f"is_{name}")
        setattr(cls, f"is_{name}", property(is_custom))
        _check_once(cls, name)
        setattr(cls, name, to_custom)


def generate_methods_for_privateuse1_backend(for_tensor=True, for_module=True,
                                             for_packed_sequence=True, for_storage=False,
                                             unsupported_dtype=None):
    """Generate the methods of the renamed custom device: ``Tensor.is_foo`` and
    ``Tensor.foo()``, ``Module.foo()``, ``PackedSequence.is_foo``/``foo()``, and with
    ``for_storage`` the storages' ``is_foo``/``foo()`` (refusing ``unsupported_dtype``)."""
    name = _NAME[0]
    if for_tensor:
        _tensor_methods(name)
    if for_module:
        _module_methods(name)
    if for_storage:
        _storage_methods(name, unsupported_dtype)
    if for_packed_sequence:
        _packed_sequence_methods(name)
