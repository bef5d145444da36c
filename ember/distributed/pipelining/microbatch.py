"""Splitting a batch into microbatches and merging the outputs back."""

__all__ = ["TensorChunkSpec", "split_args_kwargs_into_chunks", "merge_chunks"]


class TensorChunkSpec:
    """Split (or merge) a tensor along ``split_dim``."""

    def __init__(self, split_dim):
        self.split_dim = int(split_dim)

    def __repr__(self):
        return f"TensorChunkSpec({self.split_dim})"


def _is_tensor(x):
    from ..._core.tensor import Tensor
    return isinstance(x, Tensor)


def _split(value, n, spec):
    if not _is_tensor(value):
        return [value] * n
    dim = spec.split_dim if isinstance(spec, TensorChunkSpec) else 0
    if value.shape[dim] < n:
        raise ValueError(f"cannot split a batch of {value.shape[dim]} into {n} microbatches")
    return list(value.tensor_split(n, dim))


def split_args_kwargs_into_chunks(args, kwargs, chunks, args_chunk_spec=None,
                                  kwargs_chunk_spec=None):
    """Lists of ``chunks`` (args, kwargs) microbatches: tensors split along dim 0 (or their
    `TensorChunkSpec`), other values repeated."""
    args = tuple(args)
    kwargs = dict(kwargs or {})
    specs = list(args_chunk_spec) if args_chunk_spec is not None else [None] * len(args)
    split_args = [_split(a, chunks, sp) for a, sp in zip(args, specs)]
    split_kwargs = {k: _split(v, chunks, (kwargs_chunk_spec or {}).get(k))
                    for k, v in kwargs.items()}
    return ([tuple(a[i] for a in split_args) for i in range(chunks)],
            [{k: v[i] for k, v in split_kwargs.items()} for i in range(chunks)])


def merge_chunks(chunks, chunk_spec=None):
    """The microbatch outputs joined back along the batch dimension."""
    from .._ember import cat
    first = chunks[0]
    dim = chunk_spec.split_dim if isinstance(chunk_spec, TensorChunkSpec) else 0
    if _is_tensor(first):
        return cat(chunks, dim)
    if isinstance(first, tuple):
        return tuple(merge_chunks([c[i] for c in chunks], chunk_spec)
                     for i in range(len(first)))
    return chunks
