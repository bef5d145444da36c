"""``ember.distributed.checkpoint`` (torch.distributed.checkpoint): checkpoints written by
every rank in parallel and loaded at any number of ranks.

`save` writes each rank's own shards (DTensor pieces, ZeRO optimizer state) into one file
per rank of a directory, each replicated value once, and the ``.metadata`` index last and
atomically.  `load` fills the caller's state dict in place, resharding to its layout: each
rank reads only the byte ranges it needs, and a plain process without a process group can
load everything.  Beyond torch, files are read as untrusted (weights-only metadata,
bounds-checked offsets, CRC32 per block), and errors name the ranks and keys involved.

Example::
    >>> import ember.distributed.checkpoint as dcp
    >>> dcp.save({"model": model, "optim": optim}, checkpoint_id="ckpt/100")
    >>> dcp.load({"model": model, "optim": optim}, checkpoint_id="ckpt/100")
"""
from . import state_dict  # noqa: F401
from .api import CheckpointException
from .default_planner import DefaultLoadPlanner, DefaultSavePlanner
from .filesystem import FileSystemReader, FileSystemWriter
from .metadata import (BytesStorageMetadata, ChunkStorageMetadata, Metadata, MetadataIndex,
                       StorageMeta, TensorProperties, TensorStorageMetadata)
from .planner import LoadPlan, LoadPlanner, ReadItem, SavePlan, SavePlanner, WriteItem
from .state_dict_loader import load, load_state_dict
from .state_dict_saver import async_save, save, save_state_dict
from .stateful import Stateful
from .storage import StorageReader, StorageWriter

__all__ = ["CheckpointException", "DefaultLoadPlanner", "DefaultSavePlanner",
           "FileSystemReader", "FileSystemWriter", "BytesStorageMetadata",
           "ChunkStorageMetadata", "Metadata", "MetadataIndex", "StorageMeta",
           "TensorProperties", "TensorStorageMetadata", "LoadPlan", "LoadPlanner", "ReadItem",
           "SavePlan", "SavePlanner", "WriteItem", "load", "load_state_dict", "async_save",
           "save", "save_state_dict", "Stateful", "StorageReader", "StorageWriter"]
