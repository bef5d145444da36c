"""ATen-level ``torch.*`` entry points of the nn operators (``torch.lstm``, ``torch.gru_cell``,
``torch.native_batch_norm``, ``torch.grid_sampler``, ...): the positional, flat-argument forms
that TorchScript-era code, exported graphs and ``nn`` internals call directly.  Each is a thin
adapter over the ``nn.functional`` implementation (one operator, one definition): only the
argument layout and the extra outputs ATen returns (masks, saved statistics) differ."""
import builtins

from . import ops
from ._core.dtype import bool as _bool
from ._core.dispatch import overridable
from .autograd.grad_mode import no_grad
from .nn import functional as F
from .nn.functional import rnn as _rnn
from .nn.functional.aten_forms import conv_tbc  # noqa: F401  (torch.conv_tbc)
from .nn.functional.embedding import _renorm_
from .nn.functional.normalization import batch_norm_with_stats
from .ops._helpers import apply
from .ops.nn.dropout import DROPOUT_MASK

__all__ = ["lstm", "gru", "rnn_tanh", "rnn_relu", "lstm_cell", "gru_cell", "rnn_tanh_cell",
           "rnn_relu_cell", "native_dropout", "native_batch_norm", "batch_norm_update_stats",
           "native_channel_shuffle", "max_pool1d_with_indices", "grid_sampler",
           "grid_sampler_2d", "grid_sampler_3d", "affine_grid_generator", "norm_except_dim",
           "embedding_renorm_",
           "conv_tbc"]


# ---- recurrent layers and cells --------------------------------------------------------------
def _cell(mode, name, input, states, w_ih, w_hh, b_ih, b_hh):
    if input.shape[-1] != w_ih.shape[1]:
        raise RuntimeError(f"input has inconsistent input_size: got {input.shape[-1]} expected "
                           f"{w_ih.shape[1]}")
    input.size(1)  # a 1-D input raises torch's IndexError (the cells take batched input only)
    for k, s in enumerate(states):
        if s.shape[0] != input.shape[0]:
            raise RuntimeError(f"Input batch size {input.shape[0]} doesn't match hidden{k} "
                               f"batch size {s.shape[0]}")
        if s.shape[1] != w_hh.shape[1]:
            raise RuntimeError(f"hidden{k} has inconsistent hidden_size: got {s.shape[1]}, "
                               f"expected {w_hh.shape[1]}")
    return _rnn.cell_forward(mode, input, states, w_ih, w_hh, b_ih, b_hh)


@overridable
def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One LSTM step: returns ``(h', c')``; ``hx`` is the pair ``(h, c)``."""
    if len(hx) != 2:
        raise RuntimeError("lstm_cell expects two hidden states")
    return tuple(_cell("LSTM", "lstm_cell", input, tuple(hx), w_ih, w_hh, b_ih, b_hh))


@overridable
def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    return _cell("GRU", "gru_cell", input, (hx,), w_ih, w_hh, b_ih, b_hh)[0]


@overridable
def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    return _cell("RNN_TANH", "rnn_tanh_cell", input, (hx,), w_ih, w_hh, b_ih, b_hh)[0]


@overridable
def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    return _cell("RNN_RELU", "rnn_relu_cell", input, (hx,), w_ih, w_hh, b_ih, b_hh)[0]


def _layer_weights(params, has_biases, num_layers, bidirectional, has_proj):
    """torch's flat weight list (per layer and direction: w_ih, w_hh[, b_ih, b_hh][, w_hr])
    as the per-direction dicts ``rnn_layers`` takes."""
    per = 2 + 2 * builtins.bool(has_biases) + builtins.bool(has_proj)
    D = 2 if bidirectional else 1
    params = list(params)
    if len(params) != per * num_layers * D:
        raise RuntimeError(f"expected {per * num_layers * D} weight tensors for {num_layers} "
                           f"layer(s) with {D} direction(s), got {len(params)}")
    out = []
    for i in range(num_layers * D):
        g = params[i * per:(i + 1) * per]
        b = g[2:4] if has_biases else (None, None)
        out.append({"w_ih": g[0], "w_hh": g[1], "b_ih": b[0], "b_hh": b[1],
                    "w_hr": g[-1] if has_proj else None})
    return out


def _recurrence(mode, args, n_states):
    """Both ATen overloads: (input, hx, params, has_biases, num_layers, dropout, train,
    bidirectional, batch_first) and the packed (data, batch_sizes, hx, params, has_biases,
    num_layers, dropout, train, bidirectional)."""
    # the packed form's second argument is batch_sizes (a Tensor), where the padded form has
    # hx: a (h, c) sequence for the LSTM, for the others a Tensor followed by the weight list
    packed = not isinstance(args[2] if n_states == 1 else args[1], (list, tuple))
    if packed:
        data, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidir = args
        batch_first = False
        bs = [builtins.int(b) for b in batch_sizes.tolist()]
    else:
        data, hx, params, has_biases, num_layers, dropout, train, bidir, batch_first = args
        if batch_first:
            data = data.transpose(0, 1)
        T, B = data.shape[0], data.shape[1]
        bs = [B] * T
    states = tuple(hx) if n_states == 2 else (hx,)
    has_proj = n_states == 2 and states[0].shape[-1] != states[1].shape[-1]
    weights = _layer_weights(params, has_biases, num_layers, bidir, has_proj)
    rows = data if packed else data.reshape((-1, data.shape[-1]))
    out, finals = _rnn.rnn_layers(mode, rows, bs, states, weights, num_layers, bidir,
                                  float(dropout), builtins.bool(train))
    if not packed:
        out = out.reshape((data.shape[0], data.shape[1], out.shape[-1]))
        if batch_first:
            out = out.transpose(0, 1)
    return (out,) + tuple(finals)


@overridable
def lstm(*args):
    """``torch.lstm``: the multi-layer LSTM over torch's flat weight list; returns
    ``(output, h_n, c_n)``.  Projections (``proj_size``) are read from ``h``'s size."""
    return _recurrence("LSTM", args, 2)


@overridable
def gru(*args):
    """``torch.gru``: returns ``(output, h_n)``."""
    return _recurrence("GRU", args, 1)


@overridable
def rnn_tanh(*args):
    return _recurrence("RNN_TANH", args, 1)


@overridable
def rnn_relu(*args):
    return _recurrence("RNN_RELU", args, 1)


# ---- dropout, normalization, pooling, sampling ---------------------------------------------
@overridable
def native_dropout(input, p, train):
    """Dropout that also returns its boolean keep-mask: ``(input * mask / (1 - p), mask)``;
    with ``train`` False the input comes back unchanged with an all-True mask."""
    if not train or p == 0:
        return input.clone(), ops.ones_like(input, dtype=_bool)
    if p < 0 or p > 1:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")
    keep = apply(DROPOUT_MASK, (input,), {"p": float(p), "shape": tuple(input.shape)})
    scale = 0.0 if p == 1 else 1.0 / (1.0 - p)
    return input * (keep * scale), keep.bool()


def _reduce_dims(input):
    return [d for d in range(input.dim()) if d != 1]


@overridable
def batch_norm_update_stats(input, running_mean, running_var, momentum):
    """The per-channel batch mean and biased variance of ``input``; the running statistics
    (where given) move toward the mean and the unbiased variance by ``momentum``."""
    dims = _reduce_dims(input)
    with no_grad():
        mean = input.mean(dims)
        var = input.var(dims, unbiased=False)
        n = input.numel() // input.shape[1]
        if running_mean is not None:
            running_mean.mul_(1 - momentum).add_(mean.to(running_mean.dtype) * momentum)
        if running_var is not None:
            unbiased = var * (n / builtins.max(n - 1, 1))
            running_var.mul_(1 - momentum).add_(unbiased.to(running_var.dtype) * momentum)
    return mean, var


@overridable
def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
    """Batch norm that also returns what its backward saves: in training the batch mean and
    inverse standard deviation (per channel), in evaluation two empty tensors."""
    out, mean, invstd = batch_norm_with_stats(input, running_mean, running_var, weight, bias,
                                              training, momentum, eps)
    if mean is None:
        return out, ops.empty((0,), dtype=input.dtype), ops.empty((0,), dtype=input.dtype)
    return out, mean.reshape((-1,)), invstd.reshape((-1,))


@overridable
def native_channel_shuffle(input, groups):
    return F.channel_shuffle(input, groups)


@overridable
def max_pool1d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1,
                            ceil_mode=False):
    """``F.max_pool1d(..., return_indices=True)``; an empty ``stride`` means the kernel size."""
    return F.max_pool1d_with_indices(input, kernel_size, stride or None, padding, dilation,
                                      ceil_mode)


_INTERPOLATION = ("bilinear", "nearest", "bicubic")
_PADDING = ("zeros", "border", "reflection")


def _grid_mode(table, value, what):
    if not isinstance(value, builtins.int) or not 0 <= value < len(table):
        raise RuntimeError(f"grid_sampler(): expected {what} to be an int in "
                           f"[0, {len(table) - 1}] ({', '.join(table)}), but got {value!r}")
    return table[value]


def _grid_sampler(nd, input, grid, interpolation_mode, padding_mode, align_corners):
    if input.dim() != nd + 2 or grid.dim() != nd + 2:
        raise RuntimeError(f"grid_sampler(): expected {nd + 2}D input and grid with same number "
                           f"of dimensions, but got input with sizes {list(input.shape)} and "
                           f"grid with sizes {list(grid.shape)}")
    return F.grid_sample(input, grid, _grid_mode(_INTERPOLATION, interpolation_mode,
                                                 "interpolation_mode"),
                         _grid_mode(_PADDING, padding_mode, "padding_mode"),
                         builtins.bool(align_corners))


@overridable
def grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners):
    """``F.grid_sample`` of 4-D input with ATen's integer modes (0/1/2: bilinear/nearest/
    bicubic; zeros/border/reflection)."""
    return _grid_sampler(2, input, grid, interpolation_mode, padding_mode, align_corners)


@overridable
def grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners):
    """``F.grid_sample`` of 5-D input with ATen's integer modes."""
    return _grid_sampler(3, input, grid, interpolation_mode, padding_mode, align_corners)


@overridable
def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    nd = 3 if input.dim() == 5 else 2
    return _grid_sampler(nd, input, grid, interpolation_mode, padding_mode, align_corners)


@overridable
def affine_grid_generator(theta, size, align_corners):
    return F.affine_grid(theta, list(size), builtins.bool(align_corners))


@overridable
def norm_except_dim(v, pow=2, dim=0):
    from .nn.utils.weight_norm import norm_except_dim as impl
    return impl(v, pow, dim)


@overridable
def embedding_renorm_(input, indices, max_norm, norm_type):
    """Rescales, in place, the rows of ``input`` that ``indices`` names whose ``norm_type``-norm
    exceeds ``max_norm``; returns ``input``."""
    _renorm_(input, indices, float(max_norm), float(norm_type))
    return input
