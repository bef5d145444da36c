"""What a distributed checkpoint holds: `Metadata` and the storage records it indexes."""
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

__all__ = ["ChunkStorageMetadata", "TensorStorageMetadata", "BytesStorageMetadata",
           "Metadata", "MetadataIndex", "TensorProperties", "StorageMeta"]


@dataclass
class ChunkStorageMetadata:
    """One stored piece of a tensor: where it starts (``offsets``) and its ``sizes``."""
    offsets: tuple
    sizes: tuple


@dataclass
class TensorProperties:
    dtype: Any = None
    layout: Any = None
    requires_grad: bool = False
    memory_format: Any = None
    pin_memory: bool = False

    @staticmethod
    def create_from_tensor(tensor):
        return TensorProperties(dtype=tensor.dtype, requires_grad=bool(tensor.requires_grad))


@dataclass
class TensorStorageMetadata:
    """A saved tensor: its properties, global ``size`` and the ``chunks`` that cover it."""
    properties: TensorProperties
    size: tuple
    chunks: List[ChunkStorageMetadata]


@dataclass
class BytesStorageMetadata:
    """A saved non-tensor value (stored as a weights-only ``ember.save`` payload)."""


@dataclass(frozen=True)
class MetadataIndex:
    """Names one stored item: the key ``fqn`` and, for a tensor chunk, its ``offset``.
    ``index`` is only a lookup hint and takes no part in equality."""
    fqn: str
    offset: Optional[tuple] = None
    index: Optional[int] = field(hash=False, compare=False, default=None)

    def __post_init__(self):
        if self.offset is not None:
            object.__setattr__(self, "offset", tuple(int(o) for o in self.offset))


@dataclass
class StorageMeta:
    checkpoint_id: Any = None
    save_id: Optional[str] = None
    load_id: Optional[str] = None
    modules: List[str] = field(default_factory=list)


@dataclass
class Metadata:
    """The index of a checkpoint: each key's storage metadata, the planner's data (how to
    rebuild nested dicts) and the storage layer's data (which bytes of which file)."""
    state_dict_metadata: Dict[str, Any]
    planner_data: Any = None
    storage_data: Any = None
    storage_meta: Optional[StorageMeta] = None
    version: Optional[str] = None
