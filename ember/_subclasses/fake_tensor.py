"""``torch._subclasses.fake_tensor``: ``is_fake``, which libraries ask before reading a
tensor's values (kornia's distance transform). ember has no FakeTensor subclass (its
compiler traces with stand-in arrays it materialises on a read, and meta tensors are not
fake in torch either), so nothing is fake."""

__all__ = ["is_fake"]


def is_fake(x):
    """Whether ``x`` is a FakeTensor (or a wrapper subclass over one): never in ember."""
    return False
