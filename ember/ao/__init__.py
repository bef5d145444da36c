"""Architecture optimization (``torch.ao``): quantization (``ember.ao.quantization``) and the
quantized modules it swaps in (``ember.ao.nn.quantized``)."""
from . import nn, quantization  # noqa: F401
from ._qscheme import (per_channel_affine, per_channel_affine_float_qparams,  # noqa: F401
                       per_channel_symmetric, per_tensor_affine, per_tensor_symmetric, qscheme)
