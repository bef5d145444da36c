"""Picks the storage writer/reader for a ``checkpoint_id`` (a directory path)."""
import os

from .filesystem import FileSystemReader, FileSystemWriter


def storage_setup(storage, checkpoint_id, reader):
    if storage is not None:
        if checkpoint_id is not None:
            storage.reset(checkpoint_id)
        else:
            storage.reset()
        return storage
    if checkpoint_id is None:
        raise RuntimeError("`checkpoint_id` and `storage_{}` cannot both be None"
                           .format("reader" if reader else "writer"))
    if not isinstance(checkpoint_id, (str, os.PathLike)):
        raise RuntimeError(f"Cannot detect which StorageReader or StorageWriter to use for "
                           f"checkpoint_id {checkpoint_id!r}; pass a directory path or a "
                           "storage_reader/storage_writer")
    return FileSystemReader(checkpoint_id) if reader else FileSystemWriter(checkpoint_id)


def use_dist(process_group, no_dist):
    if no_dist:
        return False
    from ... import distributed as dist
    return dist.is_available() and dist.is_initialized()
