"""``nn.functional`` names that are ATen entry points in torch: ``conv_tbc`` (convolution in
(time, batch, channel) layout) and ``grouped_mm`` (the per-group matmul of mixture-of-experts
layers).  Both are arrangements of existing ember ops."""
from ..._core import dtype as _dt
from ..._core.dispatch import overridable
from ...ops import cat, stack, zeros
from ...ops._helpers import type_name
from .conv import conv1d

__all__ = ["conv_tbc", "grouped_mm"]


@overridable
def conv_tbc(input, weight, bias, pad=0):
    """1-D convolution in (time, batch, channel) layout: ``weight`` is
    (kernel_width, in_channels, out_channels), the output (time', batch, out_channels)."""
    if input.dim() != 3:
        raise RuntimeError(f"Input must have 3 dims: time, batch, in_channel (got "
                           f"{input.dim()})")
    if weight.dim() != 3:
        raise RuntimeError(f"Weight tensor must have 3 dims: kernel_width, in_channels, "
                           f"out_channels (got {weight.dim()}).")
    if bias.dim() != 1:
        raise RuntimeError(f"Bias must be 1-D (got {bias.dim()})")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError(f"Input dim 2 (input channels) is not == dim 1 in the weight tensor "
                           f"({input.shape[2]} vs {weight.shape[1]})")
    if weight.shape[2] != bias.shape[0]:
        raise RuntimeError(f"Bias size must equal dim 2 in the weight tensor "
                           f"({bias.shape[0]} vs {weight.shape[2]})")
    out = conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, padding=pad)
    return out.permute(2, 0, 1)


_GROUPED_DTYPES = (_dt.float32, _dt.bfloat16, _dt.float16)


def _check_grouped(mat_a, mat_b, offs, bias, out_dtype):
    for name, m in (("mat_a", mat_a), ("mat_b", mat_b)):
        if m.dim() not in (2, 3):
            raise RuntimeError(f"{name} has to be 2 or 3d")
        if m.dtype not in _GROUPED_DTYPES:
            raise RuntimeError(f"Expected {name} to be Float32, BFloat16 or Float16 matrix, "
                               f"got {type_name(m.dtype)}")
    if mat_a.dtype != mat_b.dtype:
        raise RuntimeError(f"Expected mat_a and mat_b to have the same dtype, got "
                           f"{mat_a.dtype} and {mat_b.dtype}")
    if (offs is None) != (mat_a.dim() == 3 and mat_b.dim() == 3):
        raise RuntimeError("Have to provide offsets if there is a 2d matrix, or no offset if "
                           "both matrices are 3d")
    if offs is not None and (offs.dim() != 1 or offs.dtype != _dt.int32):
        raise RuntimeError("Offsets have to be int32")
    if bias is not None:
        raise RuntimeError("Bias not supported yet")
    if out_dtype is not None and out_dtype != mat_a.dtype:
        raise RuntimeError("Grouped gemm output dtype must match `mat_a` dtype")
    if mat_a.shape[-1] != mat_b.shape[-2 if mat_b.dim() == 3 else 0]:
        raise RuntimeError("contraction dimension of mat_a and mat_b must match")


@overridable
def grouped_mm(mat_a, mat_b, *, offs=None, bias=None, out_dtype=None):
    """Per-group matrix products.  ``offs`` holds the cumulative end of each group along the
    dimension a 2-D operand is split in: rows of a 2-D ``mat_a`` against a 3-D ``mat_b``,
    columns of a 2-D ``mat_b`` against a 3-D ``mat_a``, the contraction dimension when both
    are 2-D (one (M, N) product per group, stacked).  Two 3-D operands are a batched matmul.
    Rows or columns past the last offset are zero."""
    _check_grouped(mat_a, mat_b, offs, bias, out_dtype)
    if offs is None:
        if mat_a.shape[0] != mat_b.shape[0]:
            raise RuntimeError("batched dimension has to match")
        return mat_a.matmul(mat_b)
    ends = [int(e) for e in offs.tolist()]
    starts = [0] + ends[:-1]
    spans = list(zip(starts, ends))
    if mat_a.dim() == 2 and mat_b.dim() == 2:
        return stack([mat_a[:, s:e].matmul(mat_b[s:e]) for s, e in spans], 0)
    if mat_a.dim() == 2:
        if len(spans) != mat_b.shape[0]:
            raise RuntimeError("matrix batch sizes have to match")
        parts = [mat_a[s:e].matmul(mat_b[g]) for g, (s, e) in enumerate(spans)]
        rest = mat_a.shape[0] - ends[-1]
        if rest > 0:
            parts.append(zeros((rest, mat_b.shape[-1]), dtype=mat_a.dtype))
        return cat(parts, 0)
    if len(spans) != mat_a.shape[0]:
        raise RuntimeError("matrix batch sizes have to match")
    parts = [mat_a[g].matmul(mat_b[:, s:e]) for g, (s, e) in enumerate(spans)]
    rest = mat_b.shape[1] - ends[-1]
    if rest > 0:
        parts.append(zeros((mat_a.shape[1], rest), dtype=mat_a.dtype))
    return cat(parts, 1)
