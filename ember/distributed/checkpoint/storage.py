"""The storage-layer interfaces: `StorageWriter`, `StorageReader` and `WriteResult`."""
import abc
from dataclasses import dataclass
from typing import Any

from .metadata import MetadataIndex

__all__ = ["StorageWriter", "StorageReader", "WriteResult"]


@dataclass(frozen=True)
class WriteResult:
    index: MetadataIndex
    size_in_bytes: int
    storage_data: Any


class StorageWriter(abc.ABC):
    """Writes a checkpoint: ``reset``, ``set_up_storage_writer``, ``prepare_local_plan``,
    ``prepare_global_plan`` (coordinator), ``write_data`` per rank, ``finish``
    (coordinator, with every rank's results)."""

    def reset(self, checkpoint_id=None):
        ...

    @abc.abstractmethod
    def set_up_storage_writer(self, is_coordinator, *args, **kwargs):
        ...

    @abc.abstractmethod
    def prepare_local_plan(self, plan):
        ...

    @abc.abstractmethod
    def prepare_global_plan(self, plans):
        ...

    @abc.abstractmethod
    def write_data(self, plan, planner):
        ...

    @abc.abstractmethod
    def finish(self, metadata, results):
        ...

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id):
        return False

    def storage_meta(self):
        return None


class StorageReader(abc.ABC):
    """Reads a checkpoint: ``reset``, ``read_metadata``, ``set_up_storage_reader``,
    ``prepare_local_plan``, ``prepare_global_plan``, ``read_data``."""

    def reset(self, checkpoint_id=None):
        ...

    @abc.abstractmethod
    def read_metadata(self):
        ...

    @abc.abstractmethod
    def set_up_storage_reader(self, metadata, is_coordinator, *args, **kwargs):
        ...

    @abc.abstractmethod
    def prepare_local_plan(self, plan):
        ...

    @abc.abstractmethod
    def prepare_global_plan(self, plans):
        ...

    @abc.abstractmethod
    def read_data(self, plan, planner):
        ...

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id):
        return False
