"""``torch.utils._foreach_utils``: grouping tensor lists by device and dtype before a
``foreach`` update, as optimizers written against torch's private helper do
(pytorch-optimizer imports `_group_tensors_by_device_and_dtype` by this path)."""
from .._core.tensor import Tensor
from ..autograd import no_grad

__all__ = []


def _get_foreach_kernels_supported_devices():
    """The device types torch has foreach kernels for (CPU runs the per-tensor loop)."""
    return ["cuda", "xpu", "mtia", "privateuseone"]


def _get_fused_kernels_supported_devices():
    """The device types torch's fused optimizer steps run on."""
    return ["mps", "cuda", "xpu", "hpu", "cpu", "mtia", "privateuseone"]


_foreach_supported_types = [Tensor]


@no_grad()
def _group_tensors_by_device_and_dtype(tensorlistlist, with_indices=False):
    """``{(device, dtype): (lists, indices)}``: the i-th tensors of every list go to the group
    of the first list's i-th tensor (the other lists may hold None there, or be empty);
    ``indices`` are the positions taken, recorded only when ``with_indices``."""
    if not tensorlistlist:
        raise RuntimeError("expected at least one tensor list to group, got none")
    n = len(tensorlistlist[0])
    if any(len(lst) not in (n, 0) for lst in tensorlistlist):
        raise RuntimeError(f"every tensor list must hold {n} tensors (the first list's "
                           f"length) or none, got lengths "
                           f"{[len(lst) for lst in tensorlistlist]}")
    groups = {}
    for i, t in enumerate(tensorlistlist[0]):
        if t is None:
            raise RuntimeError(f"Tensors of the first list of nested Tensor lists are supposed "
                               f"to be defined but the {i}-th Tensor is not.")
        key = (t.device, t.dtype)
        group = groups.get(key)
        if group is None:
            group = groups[key] = ([[] for _ in tensorlistlist], [])
        for lists, lst in zip(group[0], tensorlistlist):
            if lst:
                lists.append(lst[i])
        if with_indices:
            group[1].append(i)
    return groups


def _device_has_foreach_support(device):
    from ..jit import is_scripting
    return device.type in _get_foreach_kernels_supported_devices() + ["cpu"] and \
        not is_scripting()


def _has_foreach_support(tensors, device):
    return _device_has_foreach_support(device) and all(
        t is None or type(t) in _foreach_supported_types for t in tensors)
