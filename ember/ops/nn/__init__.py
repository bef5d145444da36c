"""The nn operators (``torch.nn.functional``'s primitives), each defined once with its
kernel, derivative, shape rule and batching rule.

``ember.nn.functional`` holds the public functions: argument checks and composites over
these operators.  Nothing here imports ``ember.nn`` or any layer above ``ember.ops``.
"""
from . import (activation, attention, batch_norm, conv, conv_nd, conv_ops, dropout,  # noqa: F401
               embedding, linear, loss, normalization, pooling, rnn)
