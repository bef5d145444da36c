"""Spectral windows and the short-time Fourier transform (``stft``/``istft``).

Windows are creation functions (computed in float64, rounded once to ``dtype``).
``stft``/``istft`` are composites of ember operators and ``ember.fft``, so gradients
flow through them (to the signal and to the window).
"""
import math
import warnings

import numpy as np

from .._core import dtype as _dt
from ._helpers import Tensor, overridable, type_name
from .creation import _finish, arange, ones, zeros
from .shape import cat
from .views import view_as_real

__all__ = ["hann_window", "hamming_window", "blackman_window", "bartlett_window",
           "kaiser_window", "stft", "istft"]


# ---- windows ----------------------------------------------------------------------------
def _window(name, window_length, periodic, dtype, device, requires_grad, fn):
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got "
                           f"window_length={window_length}")
    dtype = _dt.get_default_dtype() if dtype is None else dtype
    if not dtype.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {dtype}")
    if window_length <= 1:
        arr = np.ones(window_length)
    else:
        # a periodic window is the symmetric one of length N + 1 without its last point
        n = window_length + 1 if periodic else window_length
        arr = fn(np.arange(n, dtype=np.float64), n)[:window_length]
    return _finish(np.asarray(arr).astype(dtype.np), device, requires_grad)


def _cosine_sum(*coefs):
    def fn(k, n):
        return sum(((-1) ** j) * c * np.cos(2 * math.pi * j * k / (n - 1))
                   for j, c in enumerate(coefs))
    return fn


@overridable
def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                pin_memory=False, requires_grad=False):
    """Hann window: ``0.5 - 0.5 cos(2 pi n / (N - 1))``."""
    return _window("hann_window", window_length, periodic, dtype, device, requires_grad,
                   _cosine_sum(0.5, 0.5))


@overridable
def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None,
                   layout=None, device=None, pin_memory=False, requires_grad=False):
    """Hamming window: ``alpha - beta cos(2 pi n / (N - 1))``."""
    return _window("hamming_window", window_length, periodic, dtype, device, requires_grad,
                   _cosine_sum(alpha, beta))


@overridable
def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    pin_memory=False, requires_grad=False):
    """Blackman window: ``0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))``."""
    return _window("blackman_window", window_length, periodic, dtype, device, requires_grad,
                   _cosine_sum(0.42, 0.5, 0.08))


@overridable
def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    pin_memory=False, requires_grad=False):
    """Bartlett (triangular) window: ``1 - |2n / (N - 1) - 1|``."""
    return _window("bartlett_window", window_length, periodic, dtype, device, requires_grad,
                   lambda k, n: 1 - np.abs(2 * k / (n - 1) - 1))


@overridable
def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None,
                  device=None, pin_memory=False, requires_grad=False):
    """Kaiser window: ``I0(beta sqrt(1 - ((n - N/2) / (N/2))^2)) / I0(beta)``."""
    def fn(k, n):
        a = (n - 1) / 2
        return np.i0(beta * np.sqrt(np.clip(1 - ((k - a) / a) ** 2, 0, None))) / np.i0(beta)
    return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad, fn)


# ---- padding (torch's F.pad modes on the last dim, as composites) -----------------------
def _pad_last(x, left, right, mode):
    n = x.shape[-1]
    if mode == "constant":
        z = [zeros(*x.shape[:-1], k, dtype=x.dtype) for k in (left, right)]
        return cat([z[0], x, z[1]], -1)
    if mode == "reflect":
        if left >= n or right >= n:
            raise RuntimeError(f"Argument #4: Padding size should be less than the "
                               f"corresponding input dimension, but got: padding ({left}, "
                               f"{right}) at dimension {x.dim() - 1} of input {list(x.shape)}")
        return cat([x[..., 1:left + 1].flip(-1), x, x[..., n - 1 - right:n - 1].flip(-1)], -1)
    if mode == "replicate":
        return cat([x[..., :1].expand(*x.shape[:-1], left), x,
                    x[..., n - 1:].expand(*x.shape[:-1], right)], -1)
    if mode == "circular":
        if left > n or right > n:
            raise RuntimeError("Padding value causes wrapping around more than once.")
        return cat([x[..., n - left:], x, x[..., :right]], -1)
    raise NotImplementedError(f"Unrecognised padding mode {mode}")


def _full_window(window, win_length, n_fft, dtype):
    if window is None:
        w = ones(win_length, dtype=dtype)
    else:
        w = window
    if win_length < n_fft:
        left = (n_fft - win_length) // 2
        w = cat([zeros(left, dtype=w.dtype), w, zeros(n_fft - win_length - left, dtype=w.dtype)])
    return w


def _real_dtype(x):
    return x.dtype.to_real() if x.is_complex() else x.dtype


# ---- stft -------------------------------------------------------------------------------
@overridable
def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,
         pad_mode="reflect", normalized=False, onesided=None, return_complex=None,
         align_to_window=None):
    """Short-time Fourier transform: the DFT of windowed, overlapping frames of ``input``.

    Returns ``(*, n_fft // 2 + 1, n_frames)`` (onesided) or ``(*, n_fft, n_frames)``."""
    from .fft.transforms import fftn_impl, r2c_impl  # loaded after this module
    if center and align_to_window is not None:
        raise RuntimeError("stft align_to_window should only be set when center = false")
    if window is None:
        warnings.warn("A window was not provided. A rectangular window will be applied,which is "
                      "known to cause spectral leakage. Other windows such as "
                      "torch.hann_window or torch.hamming_window are recommended to reduce "
                      "spectral leakage.To suppress this warning and use a rectangular window, "
                      "explicitly set `window=torch.ones(n_fft, device=<device>)`.",
                      UserWarning, stacklevel=3)
    complex_in = input.is_complex() or (window is not None and window.is_complex())
    if return_complex is None:
        if not complex_in:
            raise RuntimeError("stft requires the return_complex parameter be given for real "
                               "inputs, and will further require that return_complex=True in "
                               "a future PyTorch release.")
        return_complex = True
    x = input
    if center:
        if x.dim() not in (1, 2):
            raise RuntimeError(f"stft: expected a 1D or 2D tensor, but got {x.dim()}D tensor")
        x = _pad_last(x, n_fft // 2, n_fft // 2, pad_mode)
    hop_length = n_fft // 4 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    if x.dim() not in (1, 2):
        raise RuntimeError(f"stft: expected a 1D or 2D tensor, but got {x.dim()}D tensor")
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        raise RuntimeError(f"stft: expected a tensor of floating point or complex values, got "
                           f"{type_name(x.dtype)}")
    if align_to_window and win_length < n_fft:
        pad = (n_fft - win_length) // 2
        x = _pad_last(x, pad, pad, "constant")
    length = x.shape[-1]
    if n_fft <= 0 or n_fft > length:
        raise RuntimeError(f"stft: expected 0 < n_fft < {length}, but got n_fft={n_fft}")
    if hop_length <= 0:
        raise RuntimeError(f"stft: expected hop_length > 0, but got hop_length={hop_length}")
    if win_length <= 0 or win_length > n_fft:
        raise RuntimeError(f"stft: expected 0 < win_length <= n_fft, but got "
                           f"win_length={win_length}")
    if window is not None and (window.dim() != 1 or window.shape[0] != win_length):
        raise RuntimeError(f"stft: expected a 1D window tensor of size equal to "
                           f"win_length={win_length}, but got window with size "
                           f"{list(window.shape)}")
    if onesided is None:
        onesided = not complex_in
    elif onesided and complex_in:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    frames = x.unfold(-1, n_fft, hop_length)  # (*, n_frames, n_fft)
    w = _full_window(window, win_length, n_fft, _real_dtype(x))
    if window is not None or win_length < n_fft:
        frames = frames * w
    norm = "ortho" if normalized else "backward"
    spec = r2c_impl("rfft", frames, None, (-1,), norm, False) if onesided else \
        fftn_impl("fft", frames, None, (-1,), norm, True)
    spec = spec.transpose(-1, -2)
    if not return_complex:
        warnings.warn("stft with return_complex=False is deprecated. In a future pytorch "
                      "release, stft will return complex tensors for all inputs, and "
                      "return_complex=False will raise an error.\nNote: you can still call "
                      "torch.view_as_real on the complex output to recover the old return "
                      "format.", UserWarning, stacklevel=3)
        return view_as_real(spec.resolve_conj().contiguous())
    return spec


# ---- istft ------------------------------------------------------------------------------
@overridable
def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,
          normalized=False, onesided=None, length=None, return_complex=False):
    """Inverse short-time Fourier transform: overlap-adds the inverse DFTs of the frames,
    dividing by the summed squared window (``window`` must be the one ``stft`` used)."""
    from .fft.transforms import c2r_impl, fftn_impl  # loaded after this module
    if not input.is_complex():
        raise RuntimeError("istft requires a complex-valued input tensor matching the output "
                           "from stft with return_complex=True.")
    hop_length = n_fft // 4 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    if window is None:
        warnings.warn("A window was not provided. A rectangular window will be applied.Please "
                      "provide the same window used by stft to make the inversion lossless.To "
                      "suppress this warning and use a rectangular window, explicitly set "
                      "`window=torch.ones(n_fft, device=<device>)`.", UserWarning, stacklevel=3)
    if input.dim() not in (2, 3):
        raise RuntimeError(f"istft: expected a tensor with 2 or 3 dimensions of complex "
                           f"values, but got {input.dim()}D tensor")
    batched = input.dim() == 3
    spec = input if batched else input.unsqueeze(0)
    fft_size, n_frames = spec.shape[-2], spec.shape[-1]
    if onesided is None:
        onesided = fft_size != n_fft
    if onesided and fft_size != n_fft // 2 + 1:
        raise RuntimeError(f"istft: expected the frequency dimension (3rd to the last) of the "
                           f"input tensor to match n_fft / 2 + 1 when onesided=True, but got "
                           f"{fft_size}")
    if not onesided and fft_size != n_fft:
        raise RuntimeError(f"istft: expected the frequency dimension (3rd to the last) of the "
                           f"input tensor to match n_fft when onesided=False, but got {fft_size}")
    if hop_length <= 0 or hop_length > win_length:
        raise RuntimeError("istft: expected 0 < hop_length <= win_length")
    if win_length <= 0 or win_length > n_fft:
        raise RuntimeError("istft: expected 0 < win_length <= n_fft")
    if window is not None and (window.dim() != 1 or window.shape[0] != win_length):
        raise RuntimeError("istft: expected a 1D window tensor of size equal to win_length")
    norm = "ortho" if normalized else "backward"
    frames = spec.transpose(-1, -2)  # (B, n_frames, fft_size)
    if return_complex:
        if onesided:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        frames = fftn_impl("ifft", frames, (n_fft,), (-1,), norm, False)
    else:
        if window is not None and window.is_complex():
            raise RuntimeError("Complex windows are incompatible with return_complex=False")
        if not onesided:
            frames = frames[..., :n_fft // 2 + 1]
        frames = c2r_impl("irfft", frames, (n_fft,), (-1,), norm, False)
    w = _full_window(window, win_length, n_fft, _real_dtype(frames))
    frames = frames * w
    total = n_fft + hop_length * (n_frames - 1)
    pos = (arange(n_frames).unsqueeze(1) * hop_length + arange(n_fft).unsqueeze(0)).reshape(-1)
    b = frames.shape[0]
    y = zeros(b, total, dtype=frames.dtype).index_add(-1, pos, frames.reshape(b, -1))
    env = zeros(total, dtype=w.dtype).index_add(0, pos, (w * w).expand(n_frames, n_fft)
                                                .reshape(-1))
    start = n_fft // 2 if center else 0
    if length is not None:
        end = start + length
    elif center:
        end = total - n_fft // 2
    else:
        end = total
    end_c = min(end, total)
    y = y[:, start:end_c]
    env = env[start:end_c]
    # the check reads data: only for a concrete envelope (not under vmap or tracing)
    concrete = getattr(env, "_level", None) is None
    lowest = env.abs().min() if env.numel() and concrete else None
    if lowest is not None and bool(lowest._data < 1e-11):
        raise RuntimeError(f"istft(n_fft={n_fft}, hop_length={hop_length}, win_length="
                           f"{win_length}, center={int(bool(center))}) window overlap add min: "
                           f"{float(lowest._data):g}")
    y = y / env
    if length is not None and end > total:
        warnings.warn("The length of signal is shorter than the length parameter. Result is "
                      "being padded with zeros in the tail. Please check your center and "
                      "hop_length settings.", UserWarning, stacklevel=3)
        y = cat([y, zeros(b, end - total, dtype=y.dtype)], -1)
    return y if batched else y.squeeze(0)


Tensor.stft = stft
Tensor.istft = istft
