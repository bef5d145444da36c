"""Convolution as operators: ATen's ``convolution`` and ``convolution_backward``, and the
thin ``conv1d/2d/3d`` and ``conv_transpose1d/2d/3d`` ops that programs call.

``convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
groups)`` is the one convolution (plain or transposed, 1-3 spatial dims, batched input).
Its kernel is `conv_kernels` (im2col into one buffer, BLAS GEMMs); its derivative is the
``convolution_backward`` op, which returns (grad_input, grad_weight, grad_bias) for an
``output_mask`` (an output not asked for is an empty tensor).  Both are bilinear, so the
derivative of ``convolution_backward`` is written with the two ops themselves and every
order of differentiation works.  The batching rule folds the vmap batch into the
convolution's batch, or, for per-example weights, into its groups (one grouped
convolution for the whole vmap batch).

``conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1)`` and its
siblings keep torch's argument lists (unbatched inputs, padding 'same'/'valid'), so a
captured or exported graph shows the call the program made; their kernels and
derivatives are convolution's, and their decompositions call ``convolution``
(`ember.ops.decompositions.nn_windows`), whose own decomposition is im2col, matmul and
col2im.
"""
from ..._core import layout as _layout
from ..._core.dispatch import overridable
from ..._core.op import Op
from .._batching import _batched_front, _move_to_front
from .._helpers import apply, cj
from . import conv_kernels as K
from .conv_checks import check_conv, check_dtypes, ntuple, transposed_out

__all__ = ["convolution", "convolution_backward"]


def _pairs(padding):
    return tuple((p, p) for p in padding)


def _bshape(b):
    return None if b is None else tuple(b.shape)


def _bdtype(b):
    return None if b is None else b.dtype


# ---- array level: shared by every convolution op ------------------------------------------

# dtypes whose 3-d convolutions torch runs on oneDNN, which keeps channels_last_3d (its
# slow 3-d kernels, float64/float16/integers, return contiguous results)
_CHANNELS_LAST_3D = ("float32", "bfloat16", "complex64")


def _channels_last(x, w):
    """Whether a convolution's results (output, input and weight gradients) are laid out
    channels-last, as torch's: when its input or weight reads so (``suggest_memory_format``:
    4-d channels_last; 5-d channels_last_3d, for `_CHANNELS_LAST_3D` dtypes; the operands'
    strides, before the kernels take contiguous copies).  The kernels compute in the
    contiguous order either way (values equal); `_laid_out` then copies the result."""
    if x.ndim == 5 and x.dtype.name not in _CHANNELS_LAST_3D:
        return False
    for a in (x, w):
        if a.ndim in (4, 5) and a.itemsize and _layout.suggest_memory_format(
                a.shape, tuple(s // a.itemsize for s in a.strides)) is not \
                _layout.contiguous_format:
            return True
    return False


def _laid_out(xp, a, channels_last):
    """``a`` (N, C, *S), or its channels-last copy (same shape and values, channels
    innermost in memory)."""
    if not channels_last or a.ndim < 3:
        return a
    return xp.moveaxis(xp.ascontiguousarray(xp.moveaxis(a, 1, -1)), -1, 1)


def _conv_arrays(xp, x, w, b, stride, pads, dilation, transposed, output_padding, groups):
    """Checked convolution of arrays; ``pads`` as (lo, hi) pairs."""
    check_dtypes(x.dtype, w.dtype, _bdtype(b), x.ndim - 2, transposed, dilation)
    check_conv(x.shape, w.shape, _bshape(b), stride, pads, dilation, groups, transposed,
               output_padding)
    ct, back = K.compute_dtype(x.dtype)
    cl = _channels_last(x, w)
    # contiguous operands: BLAS and the C window kernels need them (a gradient of ones may
    # arrive broadcast, with zero strides, which NumPy's matmul would loop over in Python)
    x, w = xp.ascontiguousarray(x, dtype=ct), xp.ascontiguousarray(w, dtype=ct)
    b = None if b is None else b.astype(ct, copy=False)
    ks = tuple(w.shape[2:])
    if transposed:
        out_sp = transposed_out(x.shape[2:], ks, stride, pads, dilation, output_padding)
        y = K.input_grad(xp, x, w, out_sp, ks, stride, pads, dilation, groups)
        if b is not None:
            y += b.reshape((-1,) + (1,) * len(ks))
    else:
        y = K.forward(xp, x, w, b, ks, stride, pads, dilation, groups)
    y = _laid_out(xp, y, cl)
    return y if back is None else y.astype(back)


def _fit_spatial(xp, a, spatial):
    """``a`` (B, C, *S) cut or zero-extended at the end to (B, C, *spatial): a transposed
    convolution whose output_padding reaches past a stride covers more positions than
    its input has."""
    if tuple(a.shape[2:]) == tuple(spatial):
        return a
    out = xp.zeros(tuple(a.shape[:2]) + tuple(spatial), dtype=a.dtype)
    common = tuple(slice(0, min(s, t)) for s, t in zip(a.shape[2:], spatial))
    out[(slice(None), slice(None)) + common] = a[(slice(None), slice(None)) + common]
    return out


def _backward_arrays(xp, gy, x, w, stride, pads, dilation, transposed, groups, mask):
    ct, back = K.compute_dtype(x.dtype)
    cl = _channels_last(x, w)
    # x is read only for the weight gradient and w only for the input gradient; otherwise
    # each is just a shape (torch.nn.grad passes a broadcast scalar), left unmaterialised
    gy = xp.ascontiguousarray(gy, dtype=ct)
    x = xp.ascontiguousarray(x, dtype=ct) if mask[1] else x
    w = xp.ascontiguousarray(w, dtype=ct) if mask[0] else w
    ks = tuple(w.shape[2:])
    empty = xp.zeros((0,), dtype=ct)
    gx = gw = gb = empty
    if not transposed:
        if mask[0]:
            gx = K.input_grad(xp, gy, w, tuple(x.shape[2:]), ks, stride, pads, dilation, groups)
        if mask[1]:
            gw = K.weight_grad(xp, x, gy, ks, stride, pads, dilation, groups)
    else:  # y = input_grad(x, w): its adjoints are the plain forward and weight gradient
        if mask[0]:
            gx = _fit_spatial(xp, K.forward(xp, gy, w, None, ks, stride, pads, dilation, groups),
                              x.shape[2:])
        if mask[1]:
            lo = K.out_spatial(gy.shape[2:], ks, stride, pads, dilation)
            gw = K.weight_grad(xp, gy, _fit_spatial(xp, x, lo), ks, stride, pads, dilation,
                               groups)
    if mask[2]:
        gb = gy.sum(axis=(0,) + tuple(range(2, gy.ndim)))
    gx, gw = _laid_out(xp, gx, cl and mask[0]), _laid_out(xp, gw, cl and mask[1])
    if back is not None:
        gx, gw, gb = (a.astype(back) for a in (gx, gw, gb))
    return gx, gw, gb


# ---- convolution ---------------------------------------------------------------------------

def _convolution_kernel(xp, x, w, b, stride, padding, dilation, transposed, output_padding,
                        groups):
    if x.ndim != w.ndim:
        check_conv(x.shape, w.shape, _bshape(b), stride, _pairs(padding), dilation, groups,
                   transposed, output_padding)
    return _conv_arrays(xp, x, w, b, stride, _pairs(padding), dilation, transposed,
                        output_padding, groups)


def _convolution_shape(x, w, b, stride, padding, dilation, transposed, output_padding,
                       groups):
    check_dtypes(x.dtype, w.dtype, _bdtype(b), len(x.shape) - 2, transposed, dilation)
    return check_conv(tuple(x.shape), tuple(w.shape), _bshape(b), stride, _pairs(padding),
                      dilation, groups, transposed, output_padding), x.dtype


def _out_channels(w, transposed, groups):
    return w.shape[1] * groups if transposed else w.shape[0]


def _convolution_vjp(ctx, g, x, w, b, stride, padding, dilation, transposed, output_padding,
                     groups):
    need = ctx.needs_input_grad
    mask = (bool(need[0]), bool(need[1]), len(need) > 2 and bool(need[2]))
    # complex: conjugate Wirtinger, as torch (the input gradient reads conj(w), the weight
    # gradient conj(x))
    outs = convolution_backward(g, cj(x), cj(w), (_out_channels(w, transposed, groups),),
                                stride,
                                padding, dilation, transposed, output_padding, groups, mask)
    return tuple(o if m else None for o, m in zip(outs, mask))


def _bias_tangent(tb, ndim):
    """A bias tangent (O,) shaped to broadcast against the (B, O, *L) output."""
    return tb.reshape((tb.shape[0],) + (1,) * (ndim - 2))


def bilinear_terms(op, params, x, w, dx, dw, db, ndim):
    """``op(dx, w) + op(x, dw) + db`` (a convolution op is bilinear in input and weight,
    plus its bias); None terms are left out, None if all are."""
    r = None
    if dx is not None:
        r = apply(op, (dx, w, None), params)
    if dw is not None:
        t = apply(op, (x, dw, None), params)
        r = t if r is None else r + t
    if db is not None:
        t = _bias_tangent(db, ndim)
        r = t if r is None else r + t
    return r


def _convolution_jvp(out, ts, x, w, b, **params):
    return bilinear_terms(CONVOLUTION, params, x, w, ts[0], ts[1],
                          ts[2] if len(ts) > 2 else None, x.dim())


def _convolution_batch(op, args, bdims, params, batch_size):
    """Shared weights: the vmap batch joins the convolution batch.  Per-example weights:
    the vmap batch joins the channels, as V times the groups (one grouped convolution)."""
    x, w, b = args
    bx, bw, bb = bdims
    V = batch_size
    if bw is None:
        shared_b = b if bb is None else None
        if bx is None:
            out, bd = op(x, w, shared_b, **params), None
        else:
            xf = _move_to_front(x, bx)
            out = op(xf.reshape((V * xf.shape[1],) + tuple(xf.shape[2:])), w, shared_b,
                     **params)
            out, bd = out.reshape((V, xf.shape[1]) + tuple(out.shape[1:])), 0
        if bb is not None:  # a per-example bias (V, O): added to (V, B, O, *L) or (B, O, *L)
            bv = _move_to_front(b, bb)
            out = out + bv.reshape((V, 1, bv.shape[1]) + (1,) * (w.dim() - 2))
            bd = 0
        return out, bd
    xf = _batched_front(x, bx, V)                        # (V, B, C, *L)
    B, C = xf.shape[1], xf.shape[2]
    xv = xf.movedim(0, 1).reshape((B, V * C) + tuple(xf.shape[3:]))
    wf = _move_to_front(w, bw)
    wv = wf.reshape((V * wf.shape[1],) + tuple(wf.shape[2:]))
    bv = None if b is None else _batched_front(b, bb, V).reshape(-1)
    out = op(xv, wv, bv, **dict(params, groups=V * params["groups"]))
    return out.reshape((B, V, out.shape[1] // V) + tuple(out.shape[2:])), 1


CONVOLUTION = Op("convolution", _convolution_kernel, _convolution_vjp, save_inputs=(0, 1),
                 category="nn", shape=_convolution_shape, jvp=_convolution_jvp,
                 batch=_convolution_batch,
                 doc="ATen's convolution: plain or transposed, 1-3 spatial dims.")


@overridable
def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
                groups):
    """ATen's ``convolution`` (``torch.convolution``): the convolution every ``conv*``
    function computes, plain or transposed (``weight`` (C_in, C_out/groups, *k)), over a
    batched input.

    Example::

        >>> x, w = ember.randn(1, 2, 5, 5), ember.randn(3, 2, 3, 3)
        >>> ember.convolution(x, w, None, (1, 1), (1, 1), (1, 1), False, (0, 0), 1).shape
        ember.Size([1, 3, 5, 5])
    """
    n = weight.dim() - 2
    return apply(CONVOLUTION, (input, weight, bias), {
        "stride": ntuple(stride, n, "stride"), "padding": ntuple(padding, n, "padding"),
        "dilation": ntuple(dilation, n, "dilation"), "transposed": bool(transposed),
        "output_padding": ntuple(output_padding, n, "output_padding"), "groups": int(groups)})


# ---- convolution_backward ------------------------------------------------------------------

def _cb_kernel(xp, gy, x, w, bias_sizes, stride, padding, dilation, transposed,
               output_padding, groups, output_mask):
    return _backward_arrays(xp, gy, x, w, stride, _pairs(padding), dilation, transposed, groups,
                            output_mask)


def _cb_shape(gy, x, w, bias_sizes, stride, padding, dilation, transposed, output_padding,
              groups, output_mask):
    dt = x.dtype
    shapes = (tuple(x.shape), tuple(w.shape), tuple(bias_sizes or (_out_channels(
        w, transposed, groups),)))
    return tuple((s if m else (0,), dt) for s, m in zip(shapes, output_mask))


def _cb_vjp(ctx, grads, gy, x, w, bias_sizes, stride, padding, dilation, transposed,
            output_padding, groups, output_mask):
    """convolution_backward is bilinear: with C(x, w) the convolution, gx = C_x^T(w) gy,
    gw = C_w^T(x) gy and gb = sum(gy), each cotangent's terms are convolutions again."""
    Ggx, Ggw, Ggb = (g if m else None for g, m in zip(grads, output_mask))
    need = ctx.needs_input_grad
    geo = (stride, padding, dilation, transposed, output_padding, groups)
    conv = {"stride": stride, "padding": padding, "dilation": dilation,
            "transposed": transposed, "output_padding": output_padding, "groups": groups}
    ggy = gx = gw = None
    if need[0]:
        ggy = bilinear_terms(CONVOLUTION, conv, x, w, Ggx, Ggw, Ggb, gy.dim())
        if ggy is not None and Ggx is None and Ggw is None:
            ggy = ggy.expand(gy.shape)
    if need[1] and Ggw is not None:
        gx = convolution_backward(gy, x, Ggw, bias_sizes, *geo, (True, False, False))[0]
    if need[2] and Ggx is not None:
        gw = convolution_backward(gy, Ggx, w, bias_sizes, *geo, (False, True, False))[1]
    return ggy, gx, gw


def _cb_jvp(out, ts, gy, x, w, bias_sizes, stride, padding, dilation, transposed,
            output_padding, groups, output_mask):
    tgy, tx, tw = ts
    geo = (bias_sizes, stride, padding, dilation, transposed, output_padding, groups)
    res = [None, None, None]

    def add(i, t):
        res[i] = t if res[i] is None else res[i] + t
    if tgy is not None:
        for i, t in enumerate(convolution_backward(tgy, x, w, *geo, output_mask)):
            if output_mask[i]:
                add(i, t)
    if tx is not None and output_mask[1]:
        add(1, convolution_backward(gy, tx, w, *geo, (False, True, False))[1])
    if tw is not None and output_mask[0]:
        add(0, convolution_backward(gy, x, tw, *geo, (True, False, False))[0])
    return tuple(res)


def _cb_batch(op, args, bdims, params, batch_size):
    """As `_convolution_batch`: shared weights without a weight gradient fold the vmap batch
    into the convolution batch; otherwise it joins the channels (V times the groups)."""
    gy, x, w = args
    bgy, bx, bw = bdims
    V = batch_size
    mask = params["output_mask"]
    gyf = _batched_front(gy, bgy, V)
    if bw is None and not mask[1]:
        outs = [None, None, None]
        bds = [None, None, None]
        if mask[0]:
            xf = _batched_front(x, bx, V)
            fold = (lambda t: t.reshape((V * t.shape[1],) + tuple(t.shape[2:])))
            gx = op(fold(gyf), fold(xf), w, **dict(params, output_mask=(True, False, False)))[0]
            outs[0], bds[0] = gx.reshape(tuple(xf.shape)), 0
        if mask[2]:
            outs[2], bds[2] = gyf.sum((1,) + tuple(range(3, gyf.dim()))), 0
        empty = gyf.new_zeros((0,))
        return tuple(o if o is not None else empty for o in outs), bds
    xf = _batched_front(x, bx, V)
    wf = _batched_front(w, bw, V)
    B = xf.shape[1]

    def chans(t):  # (V, B, C, *L) -> (B, V*C, *L)
        return t.movedim(0, 1).reshape((B, V * t.shape[2]) + tuple(t.shape[3:]))
    bias = params["bias_sizes"]
    gx, gw, gb = op(chans(gyf), chans(xf), wf.reshape((V * wf.shape[1],) + tuple(wf.shape[2:])),
                    **dict(params, groups=V * params["groups"],
                           bias_sizes=None if bias is None else (V * bias[0],)))
    res, bds = [gx, gw, gb], [None, None, None]
    if mask[0]:
        res[0], bds[0] = gx.reshape((B, V) + tuple(xf.shape[2:])), 1
    if mask[1]:
        res[1], bds[1] = gw.reshape(tuple(wf.shape)), 0
    if mask[2]:
        res[2], bds[2] = gb.reshape((V, gb.shape[0] // V)), 0
    return tuple(res), bds


CONVOLUTION_BACKWARD = Op(
    "convolution_backward", _cb_kernel, _cb_vjp, n_out=3, category="nn", shape=_cb_shape,
    jvp=_cb_jvp, batch=_cb_batch,
    doc="(grad_input, grad_weight, grad_bias) of convolution for output_mask; an output not "
        "asked for is an empty tensor.")


def convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
                         transposed, output_padding, groups, output_mask):
    """ATen's ``convolution_backward``: (grad_input, grad_weight, grad_bias)."""
    return apply(CONVOLUTION_BACKWARD, (grad_output, input, weight), {
        "bias_sizes": None if bias_sizes is None else tuple(bias_sizes),
        "stride": tuple(stride), "padding": tuple(padding), "dilation": tuple(dilation),
        "transposed": bool(transposed), "output_padding": tuple(output_padding),
        "groups": int(groups), "output_mask": tuple(bool(m) for m in output_mask)})
