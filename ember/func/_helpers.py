"""``torch.func.debug_unwrap`` and ``torch.func.replace_all_batch_norm_modules_``."""
from ..nn.modules.normalization import _BatchNorm
from ._vmap_mode import BatchedTensor

__all__ = ["debug_unwrap", "replace_all_batch_norm_modules_"]


def debug_unwrap(tensor, *, recurse=True):
    """Unwrap a tensor seen inside ``vmap`` to the physical tensor carrying the batch
    dimension(s), for debugging (printing the whole batch).  ``recurse=False`` peels one
    vmap level only; a tensor that is not batched is returned as it is."""
    while isinstance(tensor, BatchedTensor):
        tensor = tensor._value
        if not recurse:
            break
    return tensor


def replace_all_batch_norm_modules_(root):
    """Make every BatchNorm in ``root`` (in place) stop tracking running statistics, so it
    always normalizes with batch statistics -- what vmap over a model with BatchNorm
    needs, since updating one shared running mean from many examples is not defined.
    Returns ``root``."""
    for module in root.modules():
        if isinstance(module, _BatchNorm) and module.track_running_stats:
            module.running_mean = None
            module.running_var = None
            module.num_batches_tracked = None
            module.track_running_stats = False
    return root
