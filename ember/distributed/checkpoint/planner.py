"""Save and load plans: the items each rank writes or reads, and the planner interfaces."""
import abc
import enum
from dataclasses import dataclass
from typing import Any, List, Optional

from .metadata import ChunkStorageMetadata, Metadata, MetadataIndex, TensorProperties

__all__ = ["WriteItemType", "LoadItemType", "TensorWriteData", "WriteItem", "ReadItem",
           "SavePlan", "LoadPlan", "SavePlanner", "LoadPlanner", "BytesIOWriteData"]


class WriteItemType(enum.Enum):
    TENSOR = enum.auto()
    SHARD = enum.auto()
    BYTE_IO = enum.auto()


class LoadItemType(enum.Enum):
    TENSOR = enum.auto()
    BYTE_IO = enum.auto()


@dataclass(frozen=True)
class BytesIOWriteData:
    nbytes: int


@dataclass(frozen=True)
class TensorWriteData:
    chunk: ChunkStorageMetadata
    properties: TensorProperties
    size: tuple


@dataclass(frozen=True)
class WriteItem:
    """One thing a rank writes: a whole tensor, a shard of one, or a non-tensor value."""
    index: MetadataIndex
    type: WriteItemType
    bytes_io_data: Optional[BytesIOWriteData] = None
    tensor_data: Optional[TensorWriteData] = None

    def tensor_storage_size(self):
        """Bytes of the tensor chunk this item writes (None for a non-tensor value)."""
        if self.tensor_data is None:
            return None
        n = 1
        for s in self.tensor_data.chunk.sizes:
            n *= int(s)
        return n * self.tensor_data.properties.dtype.itemsize


@dataclass(frozen=True)
class ReadItem:
    """Copy the box of ``lengths`` at ``storage_offsets`` of stored chunk ``storage_index``
    to ``dest_offsets`` of the destination ``dest_index``."""
    type: LoadItemType
    dest_index: MetadataIndex
    dest_offsets: tuple
    storage_index: MetadataIndex
    storage_offsets: tuple
    lengths: tuple


@dataclass(frozen=True)
class SavePlan:
    items: List[WriteItem]
    storage_data: Any = None
    planner_data: Any = None
    usable: bool = True


@dataclass
class LoadPlan:
    items: List[ReadItem]
    storage_data: Any = None
    planner_data: Any = None


class SavePlanner(abc.ABC):
    """Decides what each rank writes.  ``save`` calls, in order: `set_up_planner` on every
    rank, `create_local_plan`, `create_global_plan` on the coordinator (with every rank's
    plan), `finish_plan` with this rank's final plan, and `resolve_data` per item."""

    @abc.abstractmethod
    def set_up_planner(self, state_dict, storage_meta=None, is_coordinator=False):
        ...

    @abc.abstractmethod
    def create_local_plan(self) -> SavePlan:
        ...

    @abc.abstractmethod
    def create_global_plan(self, all_plans: List[SavePlan]):
        ...

    @abc.abstractmethod
    def finish_plan(self, new_plan: SavePlan) -> SavePlan:
        ...

    @abc.abstractmethod
    def resolve_data(self, write_item: WriteItem):
        ...


class LoadPlanner(abc.ABC):
    """Decides what each rank reads and where it goes: `set_up_planner`, `create_local_plan`,
    `create_global_plan`, `finish_plan`, then `load_bytes` or `resolve_tensor` +
    `commit_tensor` per item."""

    @abc.abstractmethod
    def set_up_planner(self, state_dict, metadata: Optional[Metadata] = None,
                       is_coordinator=False):
        ...

    @abc.abstractmethod
    def create_local_plan(self) -> LoadPlan:
        ...

    @abc.abstractmethod
    def create_global_plan(self, global_plan: List[LoadPlan]) -> List[LoadPlan]:
        ...

    @abc.abstractmethod
    def finish_plan(self, central_plan: LoadPlan) -> LoadPlan:
        ...

    @abc.abstractmethod
    def load_bytes(self, read_item: ReadItem, value):
        ...

    @abc.abstractmethod
    def resolve_tensor(self, read_item: ReadItem):
        ...

    @abc.abstractmethod
    def commit_tensor(self, read_item: ReadItem, tensor):
        ...
