"""The ``conv1d/2d/3d`` and ``conv_transpose1d/2d/3d`` operators, with ATen's argument lists.

Each is a thin op over ``convolution`` (`conv_ops`): its kernel is convolution's array
kernel after torch's argument handling (an unbatched input gains a batch of one; padding
'same' may pad one more element at the end than at the start), its derivative is
``convolution_backward``, its batching rule is convolution's, and its decomposition
(`as_convolution`) calls ``convolution``, as torch's core-ATen decomposition does.
"""
from ..._core.op import Op
from .._batching import _batched_front
from .._helpers import apply, cj
from .conv import PAD
from .conv_checks import (check_conv, check_dtypes, check_input_dim, conv_pads, ntuple)
from .conv_ops import (CONVOLUTION, _bdtype, _bshape, _conv_arrays, _convolution_batch,
                       _out_channels, bilinear_terms, convolution_backward)

__all__ = ["as_convolution", "CONV_OPS", "RULES"]


def _geometry(n, transposed, stride, padding, dilation, output_padding, ks):
    """(stride, (lo, hi) pads, dilation, output_padding) as tuples, torch's checks."""
    stride = ntuple(stride, n, "stride")
    dilation = ntuple(dilation, n, "dilation")
    if not isinstance(padding, str):
        padding = ntuple(padding, n, "padding")
    output_padding = ntuple(output_padding, n, "output_padding")
    if transposed and isinstance(padding, str):
        raise RuntimeError(f"conv_transpose{n}d(): argument 'padding' must be tuple of ints, "
                           f"not str")
    if not isinstance(padding, str) and any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if len(ks) != n:  # the weight's rank is checked with the input's below
        return stride, tuple((0, 0) for _ in range(n)), dilation, output_padding
    return stride, conv_pads(padding, ks, stride, dilation), dilation, output_padding


class _ConvNd:
    """The rules of one conv op: ``n`` spatial dims, plain or transposed."""

    def __init__(self, n, transposed):
        self.n, self.transposed = n, transposed
        self.name = f"conv_transpose{n}d" if transposed else f"conv{n}d"

    def params(self, args, kw, ks=None):
        """(x, w, b, stride, pads, dilation, output_padding, groups) from an op call
        (``ks``: the kernel size, when ``w`` carries a vmap batch)."""
        x, w = args[0], args[1]
        b = args[2] if len(args) > 2 else None
        get = kw.get
        op = get("output_padding", 0) if self.transposed else 0
        geo = _geometry(self.n, self.transposed, get("stride", 1), get("padding", 0),
                        get("dilation", 1), op, tuple(w.shape[2:]) if ks is None else ks)
        return (x, w, b) + geo + (int(get("groups", 1)),)

    def kernel(self, xp, *args, **kw):
        x, w, b, stride, pads, dilation, opad, groups = self.params(args, kw)
        unbatched = check_input_dim(x.ndim, x.shape, self.n, self.name)
        if unbatched:
            x = x[None]
        y = _conv_arrays(xp, x, w, b, stride, pads, dilation, self.transposed, opad, groups)
        return y[0] if unbatched else y

    def shape(self, *args, **kw):
        x, w, b, stride, pads, dilation, opad, groups = self.params(args, kw)
        unbatched = check_input_dim(x.ndim, x.shape, self.n, self.name)
        check_dtypes(x.dtype, w.dtype, _bdtype(b), self.n, self.transposed, dilation)
        xs = ((1,) if unbatched else ()) + tuple(x.shape)
        out = check_conv(xs, tuple(w.shape), _bshape(b), stride, pads, dilation, groups,
                         self.transposed, opad)
        return (out[1:] if unbatched else out), x.dtype

    def conv_params(self, stride, pads, dilation, opad, groups):
        return {"stride": stride, "padding": tuple(p0 for p0, _ in pads), "dilation": dilation,
                "transposed": self.transposed, "output_padding": opad, "groups": groups}

    def vjp(self, ctx, g, *args, **kw):
        x, w, b, stride, pads, dilation, opad, groups = self.params(args, kw)
        need = ctx.needs_input_grad
        mask = (bool(need[0]), bool(need[1]), len(need) > 2 and bool(need[2]))
        unbatched = x.dim() == self.n + 1
        if unbatched:
            x, g = x.unsqueeze(0), g.unsqueeze(0)
        xb = _pad_extra(x, pads)
        p = self.conv_params(stride, pads, dilation, opad, groups)
        # complex: conjugate Wirtinger, as torch
        gx, gw, gb = convolution_backward(
            g, cj(xb), cj(w), (_out_channels(w, self.transposed, groups),), p["stride"],
            p["padding"], p["dilation"], p["transposed"], p["output_padding"], p["groups"], mask)
        if mask[0]:
            if xb is not x:
                gx = gx[(slice(None), slice(None)) + tuple(slice(0, L) for L in x.shape[2:])]
            gx = gx.squeeze(0) if unbatched else gx
        return tuple(o if m else None for o, m in zip((gx, gw, gb), mask))

    def jvp(self, out, ts, *args, **kw):
        return bilinear_terms(OPS[self.name], kw, args[0], args[1], ts[0], ts[1],
                              ts[2] if len(ts) > 2 else None, self.n + 2)

    def batch(self, op, args, bdims, params, batch_size):
        args = list(args) + [None] * (3 - len(args))
        bdims = list(bdims) + [None] * (3 - len(bdims))
        wshape = list(args[1].shape)
        if bdims[1] is not None:
            del wshape[bdims[1]]
        ks = tuple(wshape[2:])
        x, w, b, stride, pads, dilation, opad, groups = self.params(args, params, ks)
        xf = _batched_front(args[0], bdims[0], batch_size)
        unbatched = xf.dim() == self.n + 2
        if unbatched:
            xf = xf.unsqueeze(1)
        xf = _pad_extra(xf, pads)
        out, bd = _convolution_batch(CONVOLUTION, [xf, w, b], [0, bdims[1], bdims[2]],
                                     self.conv_params(stride, pads, dilation, opad, groups),
                                     batch_size)
        if unbatched:  # bd 0: (V, 1, O, *L); bd 1: (1, V, O, *L)
            out = out.squeeze(1 - bd)
            bd = 0
        return out, bd

    def decomp(self, *args, **kw):
        x, w, b, stride, pads, dilation, opad, groups = self.params(args, kw)
        return as_convolution(x, w, b, self.n, self.conv_params(stride, pads, dilation, opad,
                                                                groups), pads)


def _pad_extra(x, pads):
    """``x`` padded at the end of each spatial dim where 'same' padding is asymmetric, so
    that the rest is convolution's symmetric padding."""
    extra = tuple((x.dim() - len(pads) + i, 0, hi - lo) for i, (lo, hi) in enumerate(pads)
                  if hi != lo)
    return apply(PAD, (x,), {"pads": extra, "mode": "constant"}) if extra else x


def as_convolution(x, w, b, n, conv_params, pads):
    """A conv op's call as ``convolution``: batched, with symmetric padding."""
    unbatched = x.dim() == n + 1
    if unbatched:
        x = x.unsqueeze(0)
    y = apply(CONVOLUTION, (_pad_extra(x, pads), w, b), conv_params)
    return y.squeeze(0) if unbatched else y


def _declare(n, transposed):
    r = _ConvNd(n, transposed)
    kind = "transposed convolution" if transposed else "convolution"
    RULES[r.name] = r
    return Op(r.name, r.kernel, r.vjp, save_inputs=(0, 1), category="nn", shape=r.shape,
              jvp=r.jvp, batch=r.batch,
              doc=f"torch's {r.name}: a {n}-d {kind} (unbatched input allowed).")


RULES = {}  # name -> _ConvNd: the decompositions (ember.ops.decompositions) call .decomp
OPS = {op.name: op for op in (_declare(n, t) for t in (False, True) for n in (1, 2, 3))}
CONV_OPS = OPS
