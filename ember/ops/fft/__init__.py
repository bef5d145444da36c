"""The FFT operators: the primitives (complex-to-complex, real-to-complex, complex-to-real
transforms over exact sizes and the zero-pad/trim), each with kernel, derivative, shape and
batching rule, and the n-dimensional transforms over them.  The public ``ember.fft``
functions are built on these in ember/fft."""
from . import primitives, transforms  # noqa: F401  (registers the operators)
