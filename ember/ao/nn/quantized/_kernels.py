"""NumPy kernels of dynamic quantization: choosing quantization parameters, quantizing, and
the int8 x uint8 matrix product with int32 accumulation that quantized Linear and the
quantized recurrent cells share.

They follow the arithmetic of PyTorch's x86 (FBGEMM) kernels so that results agree with
torch's quantized modules up to float rounding: activations are quantized per call to
quint8 from their own min/max (range halved to 0..127 with ``reduce_range``, which keeps
FBGEMM's 16-bit pairwise sums from saturating), products are exact integer sums, and the
dequantized result is ``acc * act_scale * w_scale + bias`` in float32.  Quantized modules are
inference-only, so these work on arrays, not on autograd-tracked tensors.
"""
import numpy as np

# torch clamps tiny activation scales to this (ATen's SMALL_SCALE_THRESHOLD)
SMALL_SCALE_THRESHOLD = 6.1e-5

QRANGES = {"qint8": (-128, 127), "quint8": (0, 255), "qint32": (-2 ** 31, 2 ** 31 - 1)}


def choose_qparams(xmin, xmax, qmin, qmax, reduce_range=False):
    """Affine (scale, zero_point) mapping [xmin, xmax] (widened to hold 0) onto [qmin, qmax];
    the scale is a float32 value, computed in double precision as torch does."""
    if reduce_range:
        qmin, qmax = int(qmin / 2), int(qmax / 2)  # C integer division, towards zero
    xmin = min(float(np.float32(xmin)), 0.0)
    xmax = max(float(np.float32(xmax)), 0.0)
    scale = (xmax - xmin) / (qmax - qmin)
    if np.float32(scale) == 0 or np.isinf(np.float32(1.0) / np.float32(scale)):
        scale = 0.1
    if scale < SMALL_SCALE_THRESHOLD:
        original, scale = scale, SMALL_SCALE_THRESHOLD
        if xmin == 0.0:
            xmax = SMALL_SCALE_THRESHOLD * (qmax - qmin)
        elif xmax == 0.0:
            xmin = -SMALL_SCALE_THRESHOLD * (qmax - qmin)
        else:
            amplifier = float(np.float32(SMALL_SCALE_THRESHOLD / original))
            xmin, xmax = xmin * amplifier, xmax * amplifier
    from_min, from_max = qmin - xmin / scale, qmax - xmax / scale
    err_min = abs(qmin) - abs(xmin / scale)
    err_max = abs(qmax) - abs(xmax / scale)
    initial = from_min if err_min < err_max else from_max
    zero_point = qmin if initial < qmin else qmax if initial > qmax else int(np.rint(initial))
    return float(np.float32(scale)), zero_point


def quantize(x, scale, zero_point, qmin, qmax, np_dtype):
    """``clamp(round(x / scale) + zero_point)``, the reciprocal taken in float32 first."""
    inv = np.float32(1.0) / np.float32(scale)
    q = np.rint(np.asarray(x, dtype=np.float32) * inv).astype(np.int64) + zero_point
    return np.clip(q, qmin, qmax).astype(np_dtype)


def linear_dynamic(x, w_int, w_scale, w_zero_point, bias, reduce_range=True):
    """``x @ dequant(w).T + bias`` with ``x`` quantized to quint8 from its own range.

    ``x``: float array (..., K); ``w_int``: int8 array (N, K); ``bias``: float array (N,) or
    None.  Returns float32 (..., N)."""
    x = np.asarray(x, dtype=np.float32)
    lead, k = x.shape[:-1], x.shape[-1]
    x2 = x.reshape(-1, k)
    if x2.size:
        xmin, xmax = float(x2.min()), float(x2.max())
    else:
        xmin = xmax = 0.0
    a_scale, a_zp = choose_qparams(xmin, xmax, 0, 255, reduce_range)
    a_int = quantize(x2, a_scale, a_zp, 0, 255, np.uint8)
    # exact integer products: int32 accumulation cannot overflow for these ranges
    acc = (a_int.astype(np.int32) - a_zp) @ (w_int.astype(np.int32) - w_zero_point).T
    out = acc.astype(np.float32) * np.float32(a_scale) * np.float32(w_scale)
    if bias is not None:
        out = out + np.asarray(bias, dtype=np.float32)
    return out.reshape(lead + (w_int.shape[0],))


def linear_fp16(x, w_half, bias):
    """``x @ w.T + bias`` with float16-stored weights, computed in float32 (the fp16 dynamic
    qconfig: weights rounded to half precision, activations left in float)."""
    x = np.asarray(x, dtype=np.float32)
    out = x @ w_half.astype(np.float32).T
    if bias is not None:
        out = out + np.asarray(bias, dtype=np.float32)
    return out
