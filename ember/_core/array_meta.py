"""`ArrayMeta`: an array's metadata without its data.

Stand-ins that take the place of a Tensor's ``_data`` while the values are not there
(vmap's per-example logical tensors, ember.compile's pending results) answer what an
array answers about itself from ``shape`` and ``dtype`` alone, so Tensor's metadata
properties read them unchanged.
"""

__all__ = ["ArrayMeta"]


class ArrayMeta:
    """``shape`` (ints or symbolic sizes) and NumPy ``dtype``; ``ndim``, ``size``,
    ``itemsize`` and ``nbytes`` follow from them."""
    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape = shape
        self.dtype = dtype

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        n = 1
        for s in self.shape:
            n = n * s
        return n

    @property
    def itemsize(self):
        return self.dtype.itemsize

    @property
    def nbytes(self):
        return self.size * self.dtype.itemsize
