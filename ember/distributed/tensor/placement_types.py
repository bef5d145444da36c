"""How a DTensor's data lies on one mesh dimension: `Shard`, `Replicate` or `Partial`."""

__all__ = ["Placement", "Shard", "Replicate", "Partial"]


class Placement:
    """Base of the placements; ``is_shard``/``is_replicate``/``is_partial`` test the kind."""

    def is_shard(self, dim=None):
        return False

    def is_replicate(self):
        return False

    def is_partial(self, reduce_op=None):
        return False


class Shard(Placement):
    """The tensor is split along tensor dimension ``dim`` over the mesh dimension, in
    ``torch.chunk``'s way: pieces of ceil(n / k) elements, the last ones shorter or empty."""

    def __init__(self, dim):
        self.dim = int(dim)

    def is_shard(self, dim=None):
        return dim is None or int(dim) == self.dim

    def __eq__(self, other):
        return isinstance(other, Shard) and other.dim == self.dim

    def __hash__(self):
        return hash(("Shard", self.dim))

    def __repr__(self):
        return f"Shard(dim={self.dim})"

    def __str__(self):
        return f"S({self.dim})"


class Replicate(Placement):
    """Every rank of the mesh dimension holds the whole tensor."""

    def is_replicate(self):
        return True

    def __eq__(self, other):
        return isinstance(other, Replicate)

    def __hash__(self):
        return hash("Replicate")

    def __repr__(self):
        return "Replicate()"

    def __str__(self):
        return "R"


class Partial(Placement):
    """Every rank holds a partial value; the tensor is their reduction (``"sum"``,
    ``"avg"``, ``"max"`` or ``"min"``) over the mesh dimension."""

    def __init__(self, reduce_op="sum"):
        if reduce_op not in ("sum", "avg", "max", "min"):
            raise ValueError(f"Partial: unsupported reduce_op {reduce_op!r}")
        self.reduce_op = reduce_op

    def is_partial(self, reduce_op=None):
        return reduce_op is None or reduce_op == self.reduce_op

    def __eq__(self, other):
        return isinstance(other, Partial) and other.reduce_op == self.reduce_op

    def __hash__(self):
        return hash(("Partial", self.reduce_op))

    def __repr__(self):
        return f"Partial({self.reduce_op})"

    def __str__(self):
        return "P"
