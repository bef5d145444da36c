"""``torch.storage``: the storage classes (see ``ember._core.storage``)."""
from ._core.storage import TypedStorage, UntypedStorage  # noqa: F401

__all__ = ["TypedStorage", "UntypedStorage"]
