"""The default DDP communication hooks: all-reduce and its fp16/bf16 compressed forms."""
from ...._core.dtype import bfloat16, float16

__all__ = ["allreduce_hook", "fp16_compress_hook", "bf16_compress_hook",
           "fp16_compress_wrapper", "bf16_compress_wrapper"]


def _dist():
    from .... import distributed as dist
    return dist


def _group(process_group):
    return process_group if process_group is not None else _dist().group.WORLD


def _first(value):
    # a collective's Future holds the list of its output tensors, as torch's does
    return value[0] if isinstance(value, (list, tuple)) else value


def _async_allreduce(tensor, group):
    """Starts an all-reduce (sum) of ``tensor`` in place; a Future holding ``tensor``."""
    work = _dist().all_reduce(tensor, group=group, async_op=True)
    fut = work.get_future().then(lambda fut: _first(fut.value()))
    # MPI advances a nonblocking collective only inside MPI calls: DDP polls this during
    # backward so that the all-reduce makes progress while gradients are computed
    fut._progress = work.is_completed
    return fut


def _allreduce_fut(process_group, tensor):
    """Averages ``tensor`` across ``process_group`` asynchronously; a Future of it."""
    group = _group(process_group)
    tensor.div_(_dist().get_world_size(group))
    return _async_allreduce(tensor, group)


def _sum_then_average(process_group, tensor):
    """Sums ``tensor`` across the group, then divides by its size (DDP mixed precision's
    order: in a low-precision dtype, dividing first would lose the small values)."""
    group = _group(process_group)
    n = _dist().get_world_size(group)
    fut = _async_allreduce(tensor, group)
    out = fut.then(lambda f: _first(f.value()).div_(n))
    out._progress = fut._progress
    return out


def allreduce_hook(process_group, bucket):
    """Call ``all_reduce`` on the bucket's flat gradient tensor and average it.

    This is what DDP does without a registered hook: the result equals the gradients
    of the whole (concatenated) batch.

    Example::
        >>> ddp_model.register_comm_hook(process_group, allreduce_hook)
    """
    return _allreduce_fut(process_group, bucket.buffer())


def _compress_hook(dtype, process_group, bucket):
    group = _group(process_group)
    world_size = _dist().get_world_size(group)
    buffer = bucket.buffer()
    compressed = buffer.to(dtype).div_(world_size)
    fut = _async_allreduce(compressed, group)

    def decompress(fut):
        # decompress in place into the bucket, so no full-precision copy is kept
        buffer.copy_(fut.value())
        return buffer

    out = fut.then(decompress)
    out._progress = fut._progress
    return out


def fp16_compress_hook(process_group, bucket):
    """Casts the bucket to ``float16``, all-reduces and averages it, and casts back.

    Halves the bytes communicated, at the cost of fp16 rounding of the gradients.

    Example::
        >>> ddp_model.register_comm_hook(process_group, fp16_compress_hook)
    """
    return _compress_hook(float16, process_group, bucket)


def bf16_compress_hook(process_group, bucket):
    """Casts the bucket to ``bfloat16``, all-reduces and averages it, and casts back.

    bfloat16 keeps float32's range (no overflow of large gradients) with less precision.

    Example::
        >>> ddp_model.register_comm_hook(process_group, bf16_compress_hook)
    """
    return _compress_hook(bfloat16, process_group, bucket)


def _compress_wrapper(dtype, hook):
    def wrapper_hook(hook_state, bucket):
        bucket.set_buffer(bucket.buffer().to(dtype))
        fut = hook(hook_state, bucket)

        def decompress(fut):
            # the reducer casts the low-precision result back into its own buffer
            out = bucket.buffer()
            out.copy_(fut.value())
            return out

        out = fut.then(decompress)
        out._progress = getattr(fut, "_progress", None)
        return out

    wrapper_hook.__name__ = wrapper_hook.__qualname__ = (
        f"{'fp16' if dtype is float16 else 'bf16'}_compress_wrapper_hook")
    return wrapper_hook


def fp16_compress_wrapper(hook):
    """Casts the bucket given to ``hook`` to ``float16`` and the hook's result back to
    the bucket's dtype: ``fp16_compress_wrapper(allreduce_hook)`` equals
    ``fp16_compress_hook``.

    Example::
        >>> state = PowerSGDState(process_group=None, matrix_approximation_rank=1,
        ...                       start_powerSGD_iter=10)
        >>> ddp_model.register_comm_hook(state, fp16_compress_wrapper(powerSGD_hook))
    """
    return _compress_wrapper(float16, hook)


def bf16_compress_wrapper(hook):
    """Casts the bucket given to ``hook`` to ``bfloat16`` and the hook's result back to
    the bucket's dtype: ``bf16_compress_wrapper(allreduce_hook)`` equals
    ``bf16_compress_hook``."""
    return _compress_wrapper(bfloat16, hook)
