"""``torch._subclasses``: the tensor-subclass queries libraries import by this path."""
